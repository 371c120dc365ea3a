//! # ubernetes-apimachinery
//!
//! Kind-independent Kubernetes API machinery, like Go's `k8s.io/apimachinery`:
//! the [`error::ApiError`] that becomes a `metav1.Status`, label and field
//! selectors, object-metadata helpers over JSON, and the patch engines
//! (JSON patch, JSON merge patch, strategic merge patch).
//!
//! What it is not: it knows no particular kind and does no I/O. Per-kind
//! knowledge (e.g. strategic-merge keys) comes in through traits
//! ([`patch::PatchMeta`]) implemented by the registry.
//!
//! Start with `error.rs`, then `labels.rs`.
#![forbid(unsafe_code)]

pub mod duration;
pub mod error;
pub mod fields;
pub mod labels;
pub mod meta;
pub mod patch;
pub mod quantity;
pub mod quote;
pub mod resource;
pub mod user;

pub use error::{ApiError, Cause};
pub use resource::{ResourceInfo, SubresourceInfo};
