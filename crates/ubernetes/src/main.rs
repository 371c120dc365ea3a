//! # ubernetes
//!
//! The one binary: `ubernetes serve` runs the federation API server.
#![forbid(unsafe_code)]

fn main() {}
