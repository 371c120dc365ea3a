//! # ubernetes-audit
//!
//! kube-apiserver's audit log without the HTTP parts: the `audit.k8s.io/v1`
//! policy and how it picks a request's level ([`policy`]), the `Event` and
//! its JSON / legacy lines ([`event`]), and the log backend with
//! lumberjack-style rotation ([`log`]). The filter that fills events from
//! requests lives in the apiserver crate (`ubernetes_apiserver::audit`).
#![forbid(unsafe_code)]

pub mod event;
pub mod log;
pub mod policy;

pub use event::{Event, ObjectReference, UserInfo, micro_time, new_audit_id};
pub use log::{Format, LogBackend, Rotation};
pub use policy::{Level, Policy, RequestAuditConfig, Stage};
