//! Two core `v1` resources that are not stored objects:
//!
//! - **`bindings`** (create only): the Pod kind's own `BindingREST`
//!   (`ubernetes_registry::kinds::pod_binding`, which also serves the
//!   `pods/binding` subresource through the generic handler), given the
//!   Pod the Binding names.
//! - **`componentstatuses`** (get, list; deprecated in kube since 1.19, with
//!   its warning): kube-apiserver probes `scheduler` and `controller-manager`
//!   on their loopback health ports and each etcd server. Here, decided: the
//!   `scheduler` is probed exactly as kube probes it
//!   (`https://127.0.0.1:10259/healthz`, certificate not verified), so a
//!   kube-scheduler running beside this server shows up Healthy and its
//!   absence reads as kube's `connection refused` answer; the
//!   `controller-manager` is this server's own controllers (they run in
//!   process, on the leader replica), so it reads `Healthy`/`ok`; `etcd-0`
//!   is the store this server writes to, `ok` when it answers within 2s.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use serde_json::{Value, json};
use ubernetes_apimachinery::ApiError;
use ubernetes_registry::kinds::pod_binding;

use crate::handlers::negotiate::{self, Output, Query};
use crate::handlers::{HandlerResult, bytes_response};
use crate::state::AppState;

/// kube's warning on every ComponentStatus read.
const CS_DEPRECATED: &str = "v1 ComponentStatus is deprecated in v1.19+";

/// The routes (merged before the generic `/api/v1/{*rest}` route).
pub fn router() -> Router<Arc<AppState>> {
    Router::new()
        .route(
            "/api/v1/namespaces/{namespace}/bindings",
            post(create_binding),
        )
        .route("/api/v1/componentstatuses", get(list_component_statuses))
        .route(
            "/api/v1/componentstatuses/{name}",
            get(get_component_status),
        )
}

/// `POST /api/v1/namespaces/{namespace}/bindings`: the body decoded as a
/// `Binding`, then the Pod kind's binding REST; the answer as it makes it.
async fn create_binding(
    State(state): State<Arc<AppState>>,
    Path(namespace): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> HandlerResult {
    let info = pod_binding::bindings_info();
    let binding = negotiate::decode_body(&headers, &body, &info.kind)?;
    let opts = crate::handlers::resource::write_options(&Query::parse(query.as_deref()), &headers)?;
    let created = pod_binding::create_binding(&state.registry, &namespace, &binding, &opts).await?;
    crate::handlers::resource::render_value(
        &info,
        &created.object,
        negotiate::output(&headers)?,
        StatusCode::CREATED,
        &created.warnings,
    )
}

/// The component names, in kube's order.
const COMPONENTS: [&str; 3] = ["scheduler", "controller-manager", "etcd-0"];

async fn probe(state: &AppState, component: &str) -> Option<Value> {
    let (healthy, message, error) = match component {
        "scheduler" => probe_loopback_healthz(10259).await,
        "controller-manager" => (true, "ok".to_string(), String::new()),
        "etcd-0" => {
            let storage = state.registry.storage().clone();
            match tokio::time::timeout(Duration::from_secs(2), storage.current_revision()).await {
                Ok(Ok(_)) => (true, "ok".to_string(), String::new()),
                Ok(Err(e)) => (false, String::new(), e.to_string()),
                Err(_) => (
                    false,
                    String::new(),
                    "the store did not answer within 2s".into(),
                ),
            }
        }
        _ => return None,
    };
    let mut condition =
        json!({"type": "Healthy", "status": if healthy { "True" } else { "False" }});
    if !message.is_empty() {
        condition["message"] = json!(message);
    }
    if !error.is_empty() {
        condition["error"] = json!(error);
    }
    Some(json!({
        "kind": "ComponentStatus", "apiVersion": "v1",
        "metadata": {"name": component},
        "conditions": [condition],
    }))
}

/// kube's `HttpProber` on a component's secure loopback port: healthy on a
/// 2xx answer to `GET /healthz`; the message is the body, or kube's
/// `Get "<url>": <error>` sentence.
async fn probe_loopback_healthz(port: u16) -> (bool, String, String) {
    let url = format!("https://127.0.0.1:{port}/healthz");
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    match tokio::time::timeout(Duration::from_secs(2), tokio::net::TcpStream::connect(addr)).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            return (
                false,
                format!("Get \"{url}\": dial tcp 127.0.0.1:{port}: connect: connection refused"),
                String::new(),
            );
        }
        Ok(Err(e)) => return (false, format!("Get \"{url}\": {e}"), String::new()),
        Err(_) => {
            return (
                false,
                format!("Get \"{url}\": context deadline exceeded"),
                String::new(),
            );
        }
    }
    // Something listens: ask it over TLS as kube does (no certificate check).
    let answer = async {
        let mut config = kube::Config::new(url.parse().map_err(|e| format!("{e}"))?);
        config.accept_invalid_certs = true;
        config.read_timeout = Some(Duration::from_secs(2));
        let client = kube::Client::try_from(config).map_err(|e| e.to_string())?;
        let req = http::Request::get("/healthz")
            .body(Vec::new())
            .map_err(|e| e.to_string())?;
        client.request_text(req).await.map_err(|e| e.to_string())
    };
    match tokio::time::timeout(Duration::from_secs(3), answer).await {
        Ok(Ok(body)) => (true, body, String::new()),
        Ok(Err(e)) => (false, format!("Get \"{url}\": {e}"), String::new()),
        Err(_) => (
            false,
            format!("Get \"{url}\": context deadline exceeded"),
            String::new(),
        ),
    }
}

fn render(headers: &HeaderMap, v: &Value, list: bool) -> HandlerResult {
    let warnings = [CS_DEPRECATED.to_string()];
    let info = crate::unstored::component_statuses();
    let kind = if list {
        "ComponentStatusList"
    } else {
        "ComponentStatus"
    };
    let output = negotiate::for_kind(negotiate::output(headers)?, "v1", kind)?;
    if output == Output::Table {
        let items: Vec<Value> = if list {
            v["items"].as_array().cloned().unwrap_or_default()
        } else {
            vec![v.clone()]
        };
        let table = crate::table::table(&info, &items, Some(json!({})), true);
        let body = crate::response::json_bytes(&table)?;
        return Ok(bytes_response(
            StatusCode::OK,
            "application/json",
            body,
            &warnings,
        ));
    }
    let output = if output == Output::PartialMetadata {
        Output::Json
    } else {
        output
    };
    Ok(bytes_response(
        StatusCode::OK,
        negotiate::content_type(output),
        negotiate::encode(v, output)?,
        &warnings,
    ))
}

async fn list_component_statuses(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
) -> HandlerResult {
    let mut items = Vec::new();
    for c in COMPONENTS {
        if let Some(v) = probe(&state, c).await {
            items.push(v);
        }
    }
    let list =
        json!({"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": items});
    render(&headers, &list, true)
}

async fn get_component_status(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> HandlerResult {
    match probe(&state, &name).await {
        Some(v) => render(&headers, &v, false),
        None => Err(ApiError::not_found("", "componentstatus", &name).into()),
    }
}
