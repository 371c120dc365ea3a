//! # ubernetes-openapi
//!
//! The OpenAPI side of the API server: the schema of every served kind
//! ([`definitions`]), the vendor-extension facts `k8s-openapi` lacks
//! ([`facts`]), strategic-merge-patch metadata over those schemas
//! ([`patch_meta()`]), unknown/duplicate field detection for
//! `fieldValidation` ([`unknown`]), and the documents kubectl reads:
//! `/openapi/v3` and its group-version documents ([`v3`]), `/openapi/v2` as
//! JSON and as gnostic protobuf ([`v2`], [`gnostic`]).
//!
//! Not here: HTTP. The apiserver's handler calls the `*_bytes` functions
//! (cached, with their ETag) and serves them.
//!
//! Start reading at [`definitions`], then [`paths`] (the operations every
//! resource gets), then [`v3`].
#![forbid(unsafe_code)]

pub mod definitions;
pub mod facts;
pub mod gnostic;
pub mod patch_meta;
pub mod paths;
mod served;
pub mod unknown;
pub mod v2;
pub mod v3;

pub use definitions::{Definitions, Gvk, KindSchema, Snapshot, definitions};
pub use patch_meta::patch_meta;
pub use served::Served;
pub use unknown::{
    StrictFieldError, prune_unknown_fields, strict_decoding_error, strict_field_errors,
    strict_warnings, unknown_fields,
};
pub use v2::{v2_json, v2_json_bytes, v2_protobuf, v2_protobuf_bytes};
pub use v3::{v3_document_bytes, v3_group_version, v3_root, v3_root_bytes};
