//! # ubernetes-fieldmanager
//!
//! Server-side apply. TO BE WRITTEN (issue 3).
#![forbid(unsafe_code)]
