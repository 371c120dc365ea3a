//! # ubernetes-registry
//!
//! TO BE WRITTEN.
#![forbid(unsafe_code)]
