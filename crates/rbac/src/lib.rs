//! # ubernetes-rbac
//!
//! RBAC authorization. TO BE WRITTEN (issue 3).
#![forbid(unsafe_code)]
