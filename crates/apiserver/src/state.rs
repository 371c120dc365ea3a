//! The shared server state and the API router. TO BE IMPLEMENTED (lead).

use std::sync::Arc;

use axum::Router;

use crate::options::ServerOptions;

/// Everything a handler needs: the registry, the resource table, options.
pub struct AppState {
    pub options: ServerOptions,
}

/// Open the store under `options.data_dir`, build the registry, start the
/// watch caches and the in-server controllers (GC, namespace lifecycle …).
pub async fn build_state(options: &ServerOptions) -> anyhow::Result<Arc<AppState>> {
    Ok(Arc::new(AppState {
        options: options.clone(),
    }))
}

/// Every API route (`/api`, `/apis`, `/openapi`, resources). Health and
/// version routes are added by `serve`; authentication wraps it all.
pub fn api_router(_state: Arc<AppState>) -> Router {
    Router::new()
}
