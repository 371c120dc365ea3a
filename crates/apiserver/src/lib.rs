//! # ubernetes-apiserver
//!
//! The HTTP layer of the API server (kube-apiserver's `pkg/endpoints` and
//! `pkg/server`): TLS serving, authentication, discovery, OpenAPI, and one
//! generic handler per verb that turns requests into registry calls. Handlers
//! do HTTP only: every kind-specific rule lives in the registry's strategies.
//!
//! Modules:
//! - `options`: the server's flags (kube-apiserver's names where one exists).
//! - `serve`: the rustls listener, HTTP/1.1 + HTTP/2, graceful shutdown.
//! - `audit`: the audit log filters (`--audit-policy-file`, `--audit-log-path`).
//! - `authn`: x509 client certificates, bearer tokens, in-process identity.
//! - `health`: `/version`, `/healthz`, `/livez`, `/readyz`.
//! - `in_process`: the `kube::Client` over the router for embedded controllers.
//! - `metrics`: `/metrics` and kube-apiserver's request and storage metrics.
//! - `state` + `handlers`: the API itself (`api_router`).
//! - `proxy`: the cluster proxy (`clusters/<name>/proxy/...` to a member).
//!
//! Start with `serve.rs` (how a request arrives), then `handlers/`.
#![forbid(unsafe_code)]

pub mod audit;
pub mod authn;
pub mod authz;
pub mod core_extras;
pub mod discovery;
pub mod field_manager;
pub mod handlers;
pub mod health;
pub mod hooks;
pub mod in_process;
pub mod leader_election;
pub mod metrics;
pub mod openapi_routes;
pub mod options;
pub mod protobuf;
pub mod proxy;
pub mod reviews;
pub mod serve;
pub mod service_accounts;
pub mod state;
pub mod table;

pub use state::{AppState, api_router, build_state};
