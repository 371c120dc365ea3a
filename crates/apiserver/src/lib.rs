//! # ubernetes-apiserver
//!
//! TO BE WRITTEN.
#![forbid(unsafe_code)]
