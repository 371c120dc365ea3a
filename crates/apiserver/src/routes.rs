//! The API's routes ([`api_router`]): the generic resource handlers, the
//! review, token, proxy and OpenAPI routes, and discovery. The top of the
//! API server's modules: it imports the handlers, which import the state
//! and the response helpers, which import neither.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{any, get};
use ubernetes_apimachinery::ApiError;

use crate::handlers;
use crate::response::{ErrorResponse, HandlerResult, bytes_response};
use crate::state::AppState;

/// Every API route (`/api`, `/apis`, `/openapi`, resources). Health and
/// version routes are added by `serve`; authentication wraps it all.
pub fn api_router(state: Arc<AppState>) -> Router {
    Router::new()
        .merge(crate::reviews::router())
        .merge(crate::core_extras::router())
        .merge(crate::service_accounts::router())
        .merge(crate::member_view::router())
        .merge(crate::proxy::router())
        .merge(crate::tunnel::router())
        .route("/api", get(api_root))
        // kube answers `/api/` as `/api` (kubectl proxy asks for it).
        .route("/api/", get(api_root))
        .route("/api/v1", get(core_resources))
        .route("/api/v1/", get(core_resources))
        .route("/api/v1/{*rest}", any(handlers::resource::core))
        .route("/apis", get(apis_root))
        .route("/apis/", get(apis_root))
        .route("/apis/{group}", get(group_root))
        .route("/apis/{group}/", get(group_root))
        .route("/apis/{group}/{version}", get(group_resources))
        .route("/apis/{group}/{version}/", get(group_resources))
        .route(
            "/apis/{group}/{version}/{*rest}",
            any(handlers::resource::grouped),
        )
        .route("/openapi/v2", get(crate::openapi_routes::v2))
        .route("/openapi/v3", get(crate::openapi_routes::v3_root))
        .route("/openapi/v3/{*path}", get(crate::openapi_routes::v3_doc))
        .fallback(not_found)
        .with_state(state)
}

async fn not_found() -> ErrorResponse {
    ErrorResponse(ApiError::no_route())
}

fn accept(headers: &HeaderMap) -> &str {
    headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

fn json_response(v: &serde_json::Value, content_type: &str) -> HandlerResult {
    let body = serde_json::to_vec(v).map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(bytes_response(StatusCode::OK, content_type, body, &[]))
}

async fn api_root(State(state): State<Arc<AppState>>, headers: HeaderMap) -> HandlerResult {
    let resources = state.resources();
    if crate::discovery::wants_aggregated(accept(&headers)) {
        return json_response(
            &crate::discovery::aggregated(&resources, true),
            crate::discovery::AGGREGATED_CONTENT_TYPE,
        );
    }
    let addr = format!(
        "{}:{}",
        state.options.bind_address, state.options.secure_port
    );
    json_response(&crate::discovery::api_versions(&addr), "application/json")
}

async fn apis_root(State(state): State<Arc<AppState>>, headers: HeaderMap) -> HandlerResult {
    let resources = state.resources();
    if crate::discovery::wants_aggregated(accept(&headers)) {
        return json_response(
            &crate::discovery::aggregated(&resources, false),
            crate::discovery::AGGREGATED_CONTENT_TYPE,
        );
    }
    json_response(
        &crate::discovery::api_group_list(&resources),
        "application/json",
    )
}

async fn core_resources(State(state): State<Arc<AppState>>) -> HandlerResult {
    let resources = state.resources();
    let list =
        crate::discovery::api_resource_list(&resources, "", "v1").ok_or_else(ApiError::no_route)?;
    json_response(&list, "application/json")
}

async fn group_root(
    State(state): State<Arc<AppState>>,
    Path(group): Path<String>,
) -> HandlerResult {
    let resources = state.resources();
    let g = crate::discovery::api_group(&resources, &group).ok_or_else(ApiError::no_route)?;
    json_response(&g, "application/json")
}

async fn group_resources(
    State(state): State<Arc<AppState>>,
    Path((group, version)): Path<(String, String)>,
) -> HandlerResult {
    let resources = state.resources();
    let list = crate::discovery::api_resource_list(&resources, &group, &version)
        .ok_or_else(ApiError::no_route)?;
    json_response(&list, "application/json")
}
