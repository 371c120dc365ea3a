//! The API handlers: one generic handler per verb over any resource, as
//! kube-apiserver's `endpoints/handlers`. They parse the URL, query and body,
//! call the registry, and render the answer; they hold no per-kind rule.
//!
//! URL layout (kube-apiserver's):
//! `/api/v1/[namespaces/<ns>/]<resource>[/<name>[/<subresource>]]` and
//! `/apis/<group>/<version>/...` likewise.

pub mod negotiate;
pub mod resource;
pub mod watch;

use std::sync::Arc;

pub use crate::response::{ErrorResponse, HandlerResult, bytes_response, status_response};

/// Shared state for the handlers.
pub type State = Arc<crate::state::AppState>;
