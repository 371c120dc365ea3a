//! Two core `v1` resources that are not stored objects:
//!
//! - **`bindings`** and the **`pods/binding`** subresource (kube's
//!   `BindingREST`, create only): a `Binding` assigns a Pod to a node, the
//!   scheduler's last step. The Pod gets `spec.nodeName` and the Binding's
//!   annotations, then its `PodScheduled` condition turns `True`. A Pod that
//!   already has a node, or is being deleted, is a 409 Conflict, as in kube;
//!   the answer is kube's `Status{status: Success, code: 201}`.
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
use ubernetes_apimachinery::error::field;
use ubernetes_apimachinery::{ApiError, ResourceInfo};

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
        .route(
            "/api/v1/namespaces/{namespace}/pods/{name}/binding",
            post(create_pod_binding),
        )
        .route("/api/v1/componentstatuses", get(list_component_statuses))
        .route(
            "/api/v1/componentstatuses/{name}",
            get(get_component_status),
        )
}

async fn create_binding(
    State(state): State<Arc<AppState>>,
    Path(namespace): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> HandlerResult {
    bind(&state, &namespace, None, query.as_deref(), &headers, &body).await
}

async fn create_pod_binding(
    State(state): State<Arc<AppState>>,
    Path((namespace, name)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> HandlerResult {
    bind(
        &state,
        &namespace,
        Some(&name),
        query.as_deref(),
        &headers,
        &body,
    )
    .await
}

/// kube's `BindingREST.Create` + `assignPod`: validate the Binding, then
/// set the node, the annotations and the `PodScheduled` condition.
async fn bind(
    state: &AppState,
    namespace: &str,
    url_name: Option<&str>,
    query: Option<&str>,
    headers: &HeaderMap,
    body: &[u8],
) -> HandlerResult {
    let binding = negotiate::decode_body(headers, body, "Binding")?;
    if let Some(k) = binding.get("kind").and_then(Value::as_str)
        && !k.is_empty()
        && k != "Binding"
    {
        return Err(ApiError::bad_request(format!(
            "{k} in version \"v1\" cannot be handled as a Binding: no kind \"{k}\" is registered for version \"v1\""
        ))
        .into());
    }
    let name = binding
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if let Some(url_name) = url_name
        && url_name != name
    {
        return Err(
            ApiError::bad_request("name in URL does not match name in Binding object").into(),
        );
    }
    if let Some(ns) = binding
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        && !ns.is_empty()
        && ns != namespace
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )
        .into());
    }
    // ValidatePodBinding.
    let target_kind = binding
        .pointer("/target/kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let node = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut causes = Vec::new();
    if !target_kind.is_empty() && target_kind != "Node" {
        causes.push(field::not_supported(
            "target.kind",
            &json!(target_kind),
            &["Node", "<empty>"],
        ));
    }
    if node.is_empty() {
        causes.push(field::required("target.name", ""));
    }
    if !causes.is_empty() {
        // kube returns the field errors' aggregate as a plain error: a 500
        // without a reason, `[a, b]` (one error: itself).
        let texts: Vec<String> = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        let message = match texts.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        return Err(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "", message).into());
    }
    let q = Query::parse(query);
    let mut opts = crate::handlers::resource::write_options(&q, headers)?;
    opts.field_manager
        .get_or_insert_with(|| "kube-scheduler".into());
    let pods = state
        .registry
        .get("", "v1", "pods")
        .ok_or_else(|| ApiError::internal("pods are not served"))?;
    let uid = binding
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let annotations = binding
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let pod_name = name.clone();
    let target = node.clone();
    pods.patch(Some(namespace), &name, None, &opts, move |cur| {
        if cur
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|v| !v.is_null())
        {
            return Err(ApiError::conflict(
                "",
                "pods/binding",
                &pod_name,
                &format!("pod {pod_name} is being deleted, cannot be assigned to a host"),
            ));
        }
        let current_node = cur
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !current_node.is_empty() {
            return Err(ApiError::conflict(
                "",
                "pods/binding",
                &pod_name,
                &format!("pod {pod_name} is already assigned to node \"{current_node}\""),
            ));
        }
        if !uid.is_empty()
            && cur.pointer("/metadata/uid").and_then(Value::as_str) != Some(uid.as_str())
        {
            return Err(ApiError::conflict(
                "",
                "pods/binding",
                &pod_name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    cur.pointer("/metadata/uid")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                ),
            ));
        }
        let mut next = cur.clone();
        next["spec"]["nodeName"] = json!(target);
        if !annotations.is_empty() {
            let meta = &mut next["metadata"];
            if !meta["annotations"].is_object() {
                meta["annotations"] = json!({});
            }
            for (k, v) in &annotations {
                meta["annotations"][k] = v.clone();
            }
        }
        Ok(next)
    })
    .await?;
    if !opts.dry_run {
        let now = jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        pods.patch(Some(namespace), &name, Some("status"), &opts, move |cur| {
            let mut next = cur.clone();
            if !next["status"].is_object() {
                next["status"] = json!({});
            }
            let mut conditions: Vec<Value> = next["status"]["conditions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            conditions.retain(|c| c["type"] != "PodScheduled");
            conditions.push(json!({
                "type": "PodScheduled", "status": "True",
                "lastProbeTime": null, "lastTransitionTime": now,
            }));
            next["status"]["conditions"] = json!(conditions);
            Ok(next)
        })
        .await?;
    }
    tracing::info!(namespace, pod = %name, node = %node, "bound pod to node");
    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201});
    let output = match negotiate::output(headers)? {
        Output::Table | Output::PartialMetadata => Output::Json,
        o => o,
    };
    let output = negotiate::for_kind(output, "v1", "Status")?;
    Ok(bytes_response(
        StatusCode::CREATED,
        negotiate::content_type(output),
        negotiate::encode(&status, output)?,
        &[],
    ))
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

fn cs_info() -> ResourceInfo {
    crate::discovery::core_extra_resources().remove(1)
}

fn render(headers: &HeaderMap, v: &Value, list: bool) -> HandlerResult {
    let warnings = [CS_DEPRECATED.to_string()];
    let info = cs_info();
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
