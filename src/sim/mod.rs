//! The OpenStack simulator: Keystone, Nova, Octavia and Neutron over HTTP.
