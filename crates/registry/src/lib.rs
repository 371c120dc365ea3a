//! # ubernetes-registry
//!
//! The registry layer: what kube-apiserver calls `pkg/registry`. A
//! [`strategy::Strategy`] per kind holds only that kind's policy; the
//! generic store (`store.rs`) owns every kind-independent rule (uid,
//! timestamps, resourceVersion preconditions, generation, finalizers,
//! deletion, dry-run) and talks to `ubernetes-storage`.
//!
//! Wiring a new built-in kind: add its `ResourceInfo` and strategy in
//! `kinds/` (about 30 lines), nothing else.
//!
//! Start with `strategy.rs`, then `kinds/mod.rs`, then `store.rs`.
#![forbid(unsafe_code)]

pub mod admission;
pub mod apiservices;
pub mod controllers;
pub mod conversion;
pub mod csr_signer;
pub mod event_ttl;
pub mod ipalloc;
pub mod jwt;
pub mod kinds;
pub mod leader_election;
pub mod lifecycle;
pub mod limitranger;
pub mod managed_fields;
pub mod mutating_policy;
pub mod policy;
pub mod printers;
pub mod priority;
pub mod quota;
pub mod rbac_sync;
pub mod registry;
pub mod runtime_class;
pub mod service_account;
pub mod stamp;
pub mod store;
pub mod strategy;
pub mod tokens;
pub mod validation;

pub use registry::{Registry, RegistryOptions};
pub use store::Store;
pub use strategy::Strategy;
