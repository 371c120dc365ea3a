//! # ubernetes-apiextensions
//!
//! CustomResourceDefinitions. TO BE WRITTEN (issue 3).
#![forbid(unsafe_code)]
