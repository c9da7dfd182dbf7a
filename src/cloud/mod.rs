//! The OpenStack port: one trait per service and the real client behind them.
