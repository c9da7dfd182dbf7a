//! Patch formats: JSON merge patch (RFC 7386), JSON patch (RFC 6902, with `test`), and server-side apply
//! field ownership (`fields`, `managed`).

pub mod fields;
pub mod json;
pub mod managed;
pub mod merge;
