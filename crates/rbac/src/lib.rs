//! # ubernetes-rbac
//!
//! RBAC authorization as kube-apiserver does it, as pure functions (no I/O):
//! - [`RequestInfo`] from method, path and query, and the [`Attributes`]
//!   authorized (`request_info`);
//! - the [`Authorizer`] over an [`RbacSource`] of roles and bindings, with
//!   kube's rule matching, subjects and reasons (`authorizer`, `rules`);
//! - ClusterRole aggregation (`aggregation`) and the bootstrap policy
//!   (`bootstrap`, with the federation controller's role);
//! - the authorization reviews: SelfSubjectAccessReview, SubjectAccessReview,
//!   LocalSubjectAccessReview, SelfSubjectRulesReview and SelfSubjectReview
//!   (`reviews`);
//! - escalation prevention on writes of roles and bindings (`escalation`);
//! - the signer permissions of certificate requests (`signers`);
//! - impersonation headers (`impersonation`);
//! - the 403 Status (`forbidden`).
//!
//! Start with [`Authorizer::authorize`]; the HTTP layer calls
//! [`authorize_request`] (`filter`), which runs [`RequestInfo::parse`],
//! [`impersonation::impersonate`], then `authorize`, and gives the
//! [`forbidden_error`] when the request is not allowed.
#![forbid(unsafe_code)]

pub mod aggregation;
pub mod authorizer;
pub mod bootstrap;
pub mod escalation;
pub mod filter;
pub mod forbidden;
pub mod impersonation;
pub mod request_info;
pub mod reviews;
pub mod rules;
pub mod signers;
pub mod user;

pub use aggregation::{aggregate_cluster_roles, aggregated_rules};
pub use authorizer::{Authorizer, Decision, Mode, RbacSource, StaticRbac};
pub use bootstrap::{
    bootstrap_cluster_role_bindings, bootstrap_cluster_roles, bootstrap_role_bindings,
    bootstrap_roles,
};
pub use escalation::{check_binding_write, check_role_write, confirm_no_escalation};
pub use filter::{Authorized, RequestRefused, authorize_request};
pub use forbidden::{forbidden_error, forbidden_message};
pub use request_info::{Attributes, RequestInfo};
pub use signers::authorized_for_signer;
pub use user::UserInfo;
