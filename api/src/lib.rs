//! # ubernetes-api
//!
//! TO BE WRITTEN.
#![forbid(unsafe_code)]
