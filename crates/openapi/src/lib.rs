//! # ubernetes-openapi
//!
//! TO BE WRITTEN (openapi helper).
#![forbid(unsafe_code)]
