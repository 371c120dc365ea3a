//! # ubernetes-certs
//!
//! TO BE WRITTEN.
#![forbid(unsafe_code)]
