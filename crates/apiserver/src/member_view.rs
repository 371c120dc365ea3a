//! `federation@all` (SPEC §3.13, issue 25 item 3): the cluster proxy's
//! `clusters/-/proxy/<member path>` reads every member at once. No cache
//! of member objects: each request fans out to the members, the answers
//! are merged and (for a watch) streamed.
//!
//! - **Which members**: every Cluster the caller may `get clusters/proxy`
//!   on (the same gate as `clusters/NAME/proxy`, checked per cluster; a
//!   cluster the caller may not proxy to is not asked, silently). Each is
//!   asked as the caller, with the single-cluster proxy's impersonation.
//!   The authorization filter lets a request for `-` through even when the
//!   caller may not proxy to `-` itself ([`defer_gate`]); when the caller
//!   may read no member at all the answer is that refusal (403).
//! - **Reads fan out** (`GET` of a collection, any group, version and
//!   resource, CRDs included): every member in parallel, each bounded by
//!   [`MEMBER_BOUND`]. JSON lists (and `PartialObjectMetadataList`) get
//!   the items concatenated by cluster name, then in the member's order,
//!   each annotated [`CLUSTER_ANNOTATION`]; a Table gets a first column
//!   `CLUSTER` and each row's object annotated. `metadata.resourceVersion`
//!   is composite: every member's resourceVersion, base64url JSON; given
//!   back (a list or a watch from it) each member gets its own part.
//!   Selectors, `timeoutSeconds` and every other parameter go to each
//!   member as given.
//! - **Paging** (`limit`, `continue`): every member not done yet is asked
//!   at once for its share of the page ([`page_shares`]: `limit` split
//!   evenly, the first members in cluster order taking the remainder, so a
//!   page holds at most `limit` items; kube lets a page hold fewer), and
//!   the answers are merged in cluster order. `continue` is composite
//!   (base64url JSON: each member not done yet and its own continue token,
//!   `null` before its first page); one that does not decode is kube's
//!   400. A member that fails a page (the bound, 5xx, 403) is left out
//!   with the warning and is done for this walk: the later pages do not
//!   wait for it again, so a walk costs one bound, not one per page.
//! - **One object by name**: there is one per member, so a get by name is
//!   a list of that name (`fieldSelector=metadata.name=NAME`), merged as
//!   above (kubectl prints one row per cluster; a JSON client gets a
//!   `…List`), and 404 when no member has it. Subresources (`logs`,
//!   `status`, `exec`, …) are one member's: 400 naming `federation@NAME`.
//! - **A slow or failing member never blocks**: one that does not answer
//!   within the bound, cannot be reached, answers 5xx or refuses the
//!   caller (403) is left out and the answer carries `Warning: 299 -
//!   "cluster NAME: <why>"`. When every member fails the answer is still
//!   a 200 empty list with the warnings.
//! - **Watch** (`watch=true`): opened on every member (each within the
//!   bound, from its part of a composite resourceVersion), the events
//!   merged into one stream as they come, each object annotated. Event
//!   objects keep their member's resourceVersion; a bookmark carries the
//!   composite one (resume from a list's or a bookmark's version). A
//!   member whose watch ends mid-stream is logged (headers are sent), the
//!   others stay open; the stream ends when every member's has.
//! - **Content types**: the members are asked in JSON (the caller's JSON
//!   alternatives: Table, PartialObjectMetadata…); a caller that accepts
//!   only protobuf or YAML gets kube's 406.
//! - **Discovery and other paths** (`/api`, `/apis`, `/openapi/v3`,
//!   `/version`): the answer of the first member (by name) that gives
//!   one (a 5xx or no answer within the bound: the next).
//! - **Writes are refused**: any other method, and upgrades, get 405
//!   naming `federation@NAME`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use base64::Engine as _;
use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, StatusCode, Uri};
use http_body_util::BodyExt as _;
use parking_lot::Mutex;
use serde_json::{Value, json};
pub use ubernetes_api::CLUSTER_ANNOTATION;
use ubernetes_apimachinery::ApiError;
use ubernetes_apimachinery::user::UserInfo;
use ubernetes_rbac::Attributes;

use crate::cluster_proxy::split_path;
pub use crate::cluster_proxy::{ALL, DeferredGate, defer_gate, is_all_members_path};
use crate::state::AppState;

/// How long one member may take to answer (a list's whole body, a
/// watch's headers) before it is left out with a warning. Five seconds:
/// a healthy member lists thousands of objects well within it, and it is
/// client-go's own default TLS handshake timeout, the time a client waits
/// for a server before calling it unreachable.
pub const MEMBER_BOUND: Duration = Duration::from_secs(5);

/// The routes of `clusters/-/proxy` (before the cluster proxy's
/// `clusters/{name}/proxy`, which they take precedence over).
pub fn router() -> axum::Router<Arc<AppState>> {
    use axum::routing::any;
    const BASE: &str = "/apis/federation/v1beta1/clusters/-/proxy";
    axum::Router::new()
        .route(BASE, any(handle))
        .route(&format!("{BASE}/"), any(handle))
        .route(&format!("{BASE}/{{*path}}"), any(handle))
}

async fn handle(
    axum::extract::State(state): axum::extract::State<Arc<AppState>>,
    request: Request,
) -> Response {
    match serve(&state, request).await {
        Ok(response) => response,
        Err(e) => crate::response::status_response(&e),
    }
}

/// Serve a `clusters/-/proxy/...` request.
pub(crate) async fn serve(state: &AppState, request: Request) -> Result<Response, ApiError> {
    let user = request
        .extensions()
        .get::<UserInfo>()
        .cloned()
        .ok_or_else(|| ApiError::internal("no user found for request"))?;
    let members = readable_members(state, &user).await?;
    if members.is_empty()
        && let Some(DeferredGate(refusal)) = request.extensions().get::<DeferredGate>()
    {
        return Err(refusal.clone());
    }
    let upgrade = request.headers().contains_key(header::UPGRADE);
    if request.method() != Method::GET || upgrade {
        let what = if upgrade {
            "an upgrade (exec, attach, port-forward)".to_string()
        } else {
            request.method().to_string()
        };
        return Err(ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            format!(
                "federation@all only reads (clusters/-/proxy does not allow {what}): \
                 to write in a member, use its own context: kubectl --context federation@NAME ..."
            ),
        ));
    }
    let path = request.uri().path().to_string();
    let (_, member_path) = split_path(&path).ok_or_else(ApiError::no_route)?;
    let query: Vec<(String, String)> = request
        .uri()
        .query()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    let base = base_headers(request.headers(), &user)?;
    let target = Target::parse(member_path);
    tracing::debug!(user = %user.name, path = %member_path, members = members.len(), "member view");
    match target {
        Target::Other => {
            let accept = request.headers().get(header::ACCEPT).cloned();
            first_answer(&members, member_path, &query, base, accept).await
        }
        Target::Subresource => Err(ApiError::bad_request(format!(
            "federation@all reads collections only: {member_path} is a request to one member; \
             use its own context: kubectl --context federation@NAME ..."
        ))),
        Target::Collection {
            path,
            watch: legacy,
        } => {
            let mut req = ListRequest::new(path, query, request.headers(), base)?;
            if legacy || req.flag("watch") {
                req.set("watch", "true");
                return merged_watch(&members, req).await;
            }
            list(&members, req, None).await
        }
        Target::Object {
            collection,
            group,
            resource,
            name,
        } => {
            let mut req = ListRequest::new(collection, query, request.headers(), base)?;
            let selector = match req.get("fieldSelector") {
                Some(s) if !s.is_empty() => format!("{s},metadata.name={name}"),
                _ => format!("metadata.name={name}"),
            };
            req.set("fieldSelector", &selector);
            if req.flag("watch") {
                return merged_watch(&members, req).await;
            }
            list(&members, req, Some((group, resource, name))).await
        }
    }
}

/// A member the caller may read: its name and the federation's client
/// for it (`None`: the federation has none yet).
struct Member {
    name: String,
    client: Option<kube::Client>,
}

/// Every Cluster the caller may `get clusters/proxy` on, by name.
async fn readable_members(state: &AppState, user: &UserInfo) -> Result<Vec<Member>, ApiError> {
    let clusters = state
        .registry
        .get(ubernetes_api::GROUP, ubernetes_api::VERSION, "clusters")
        .ok_or_else(ApiError::no_route)?;
    let listed = clusters
        .list(
            None,
            None,
            0,
            None,
            ubernetes_registry::store::ReadAt::Latest,
        )
        .await?;
    let mut names: Vec<String> = listed
        .items
        .iter()
        .filter_map(|raw| {
            let v: Value = serde_json::from_slice(raw).ok()?;
            v["metadata"]["name"].as_str().map(str::to_string)
        })
        .collect();
    names.sort();
    let authorizer = state.authz.authorizer();
    let rbac_user = crate::authn::to_rbac_user(user);
    Ok(names
        .into_iter()
        .filter(|name| {
            let attrs = Attributes::resource(
                &rbac_user,
                "get",
                ubernetes_api::GROUP,
                "clusters/proxy",
                "",
                name,
            );
            authorizer.authorize(&attrs).is_allowed()
        })
        .map(|name| Member {
            client: state.cluster_proxy.client(&name),
            name,
        })
        .collect())
}

/// What a member path asks for.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    /// A collection (`/api/v1/namespaces/x/configmaps`, `/apis/g/v/r`):
    /// its path (a legacy `/watch/` segment removed) and whether that
    /// segment was there.
    Collection { path: String, watch: bool },
    /// One object by name: its collection's path, group, resource, name.
    Object {
        collection: String,
        group: String,
        resource: String,
        name: String,
    },
    /// A subresource of one object.
    Subresource,
    /// Anything else: discovery, `/openapi`, `/version`, …
    Other,
}

impl Target {
    fn parse(path: &str) -> Target {
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let (prefix, group, rest) = match segments.as_slice() {
            ["api", v, rest @ ..] => (format!("/api/{v}"), String::new(), rest),
            ["apis", g, v, rest @ ..] => (format!("/apis/{g}/{v}"), (*g).to_string(), rest),
            _ => return Target::Other,
        };
        let (watch, rest) = match rest {
            ["watch", rest @ ..] => (true, rest),
            _ => (false, rest),
        };
        let (ns, rest) = match rest {
            ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(*ns), rest),
            _ => (None, rest),
        };
        let collection = |r: &str| match ns {
            Some(ns) => format!("{prefix}/namespaces/{ns}/{r}"),
            None => format!("{prefix}/{r}"),
        };
        match rest {
            [] | [""] => Target::Other,
            [r] => Target::Collection {
                path: collection(r),
                watch,
            },
            [r, name] => Target::Object {
                collection: collection(r),
                group,
                resource: (*r).to_string(),
                name: (*name).to_string(),
            },
            _ => Target::Subresource,
        }
    }
}

/// The caller's headers as they go to every member: end to end only,
/// without the caller's credentials, `Accept`, `Accept-Encoding` (the
/// answers are read here) and any impersonation of the caller's own; with
/// the proxy's impersonation of the caller.
fn base_headers(headers: &HeaderMap, user: &UserInfo) -> Result<HeaderMap, ApiError> {
    let mut out = crate::proxy::end_to_end(
        headers,
        &[
            header::AUTHORIZATION,
            header::HOST,
            header::CONTENT_LENGTH,
            header::EXPECT,
            header::ACCEPT,
            header::ACCEPT_ENCODING,
        ],
    );
    ubernetes_rbac::impersonation::strip_impersonation_headers(&mut out);
    let impersonate = crate::proxy::impersonation_headers(user).map_err(|e| {
        ApiError::bad_request(format!(
            "federation@all cannot act as the caller in the members: {e}"
        ))
    })?;
    for (name, value) in &impersonate {
        out.append(name.clone(), value.clone());
    }
    Ok(out)
}

/// The `Accept` the members get: the caller's JSON alternatives (Table,
/// PartialObjectMetadata, plain), in the caller's order; 406 as kube's
/// when the caller accepts none (protobuf or YAML only).
fn member_accept(accept: Option<&str>) -> Result<String, ApiError> {
    let Some(accept) = accept.map(str::trim).filter(|a| !a.is_empty()) else {
        return Ok("application/json".to_string());
    };
    let kept: Vec<&str> = accept
        .split(',')
        .map(str::trim)
        .filter(|range| {
            let media = range.split(';').next().unwrap_or("").trim();
            ["application/json", "application/*", "*/*"]
                .iter()
                .any(|m| media.eq_ignore_ascii_case(m))
        })
        .collect();
    if kept.is_empty() {
        return Err(ApiError::not_acceptable(
            "only the following media types are accepted: application/json",
        ));
    }
    Ok(kept.join(","))
}

/// A list or watch request going to every member: the collection path,
/// the query and the headers.
struct ListRequest {
    path: String,
    query: Vec<(String, String)>,
    headers: HeaderMap,
}

impl ListRequest {
    fn new(
        path: String,
        query: Vec<(String, String)>,
        caller: &HeaderMap,
        mut headers: HeaderMap,
    ) -> Result<Self, ApiError> {
        let accept = member_accept(caller.get(header::ACCEPT).and_then(|v| v.to_str().ok()))?;
        let accept = HeaderValue::from_str(&accept)
            .map_err(|_| ApiError::bad_request("invalid Accept header"))?;
        headers.insert(header::ACCEPT, accept);
        Ok(Self {
            path,
            query,
            headers,
        })
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1"))
    }

    fn set(&mut self, key: &str, value: &str) {
        self.query.retain(|(k, _)| k != key);
        self.query.push((key.to_string(), value.to_string()));
    }

    /// The request one member gets: its own `resourceVersion` (its part
    /// of a composite one), `limit` and `continue` as given.
    fn for_member(
        &self,
        member: &str,
        versions: Option<&BTreeMap<String, String>>,
        limit: Option<usize>,
        continue_token: Option<&str>,
    ) -> Result<(Uri, HeaderMap), String> {
        let mut query = self.query.clone();
        if let Some(versions) = versions {
            query.retain(|(k, _)| k != "resourceVersion" && k != "resourceVersionMatch");
            if let Some(rv) = versions.get(member) {
                query.push(("resourceVersion".into(), rv.clone()));
            }
        }
        query.retain(|(k, _)| k != "limit" && k != "continue");
        if let Some(limit) = limit {
            query.push(("limit".into(), limit.to_string()));
        }
        if let Some(token) = continue_token {
            query.push(("continue".into(), token.to_string()));
        }
        let target = with_query(&self.path, &query);
        let uri = target
            .parse()
            .map_err(|e| format!("invalid path {target:?}: {e}"))?;
        Ok((uri, self.headers.clone()))
    }
}

/// `path?query`, the query encoded again.
fn with_query(path: &str, query: &[(String, String)]) -> String {
    if query.is_empty() {
        return path.to_string();
    }
    let query = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(query)
        .finish();
    format!("{path}?{query}")
}

/// `cluster NAME: why`, the warning of a member left out.
fn warning(name: &str, why: &str) -> String {
    format!("cluster {name}: {why}")
}

/// A member's whole answer.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

/// An error and its causes, `a: b: c`.
fn error_text(e: &(dyn std::error::Error + 'static)) -> String {
    crate::proxy::error_chain(e)
}

/// Send `uri` with `headers` to `member` and read the whole answer,
/// within [`MEMBER_BOUND`].
async fn ask(member: &Member, uri: Uri, headers: HeaderMap) -> Result<Answer, String> {
    let client = member.client.clone().ok_or_else(|| {
        "the federation has no client for it (see the Cluster's Ready condition)".to_string()
    })?;
    let mut request = http::Request::new(kube::client::Body::empty());
    *request.uri_mut() = uri;
    *request.headers_mut() = headers;
    let call = async move {
        let response = client.send(request).await.map_err(|e| error_text(&e))?;
        let (parts, body) = response.into_parts();
        let body = body
            .collect()
            .await
            .map_err(|e| format!("reading its answer: {}", error_text(&e)))?
            .to_bytes();
        Ok(Answer {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    };
    tokio::time::timeout(MEMBER_BOUND, call)
        .await
        .map_err(|_| format!("no answer within {}s", MEMBER_BOUND.as_secs()))?
}

/// Why a member's non-2xx answer leaves it out: its status and message.
fn refusal_text(answer: &Answer) -> String {
    let message = serde_json::from_slice::<Value>(&answer.body)
        .ok()
        .and_then(|v| v["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(&answer.body).trim().to_string());
    format!("{}: {message}", answer.status)
}

/// A member's JSON list (or Table), or why it is left out.
async fn ask_list(
    member: &Member,
    request: Result<(Uri, HeaderMap), String>,
) -> Result<(Value, HeaderValue), String> {
    let (uri, headers) = request?;
    let answer = ask(member, uri, headers).await?;
    if !answer.status.is_success() {
        return Err(refusal_text(&answer));
    }
    let content_type = answer
        .headers
        .get(header::CONTENT_TYPE)
        .cloned()
        .unwrap_or_else(|| HeaderValue::from_static("application/json"));
    let value: Value =
        serde_json::from_slice(&answer.body).map_err(|e| format!("its answer is not JSON: {e}"))?;
    Ok((value, content_type))
}

/// Put `cluster` in `object.metadata.annotations`.
fn annotate(object: &mut Value, cluster: &str) {
    let Some(object) = object.as_object_mut() else {
        return;
    };
    let metadata = object.entry("metadata").or_insert_with(|| json!({}));
    let Some(metadata) = metadata.as_object_mut() else {
        return;
    };
    let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations[CLUSTER_ANNOTATION] = json!(cluster);
}

/// The `CLUSTER` column of a merged Table.
fn cluster_column() -> Value {
    json!({
        "name": "CLUSTER",
        "type": "string",
        "format": "",
        "description": "The member cluster this row is from (federation@all).",
        "priority": 0
    })
}

/// Annotate a Table row's object and put `cluster` first in its cells.
fn cluster_row(row: &mut Value, cluster: &str) {
    if let Some(cells) = row.get_mut("cells").and_then(Value::as_array_mut) {
        cells.insert(0, json!(cluster));
    }
    if let Some(object) = row.get_mut("object")
        && object.is_object()
    {
        annotate(object, cluster);
    }
}

fn is_table(v: &Value) -> bool {
    v["kind"] == "Table"
}

/// The items (or Table rows) of a member's answer, annotated.
fn entries(mut answer: Value, cluster: &str) -> Vec<Value> {
    let key = if is_table(&answer) { "rows" } else { "items" };
    let mut out = match answer.get_mut(key).map(Value::take) {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    for entry in &mut out {
        if key == "rows" {
            cluster_row(entry, cluster);
        } else {
            annotate(entry, cluster);
        }
    }
    out
}

/// Encode a composite value (resourceVersion, continue) as base64url JSON.
fn encode(v: &impl serde::Serialize) -> String {
    let json = serde_json::to_vec(v).unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
}

fn decode<T: serde::de::DeserializeOwned>(s: &str) -> Option<T> {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&raw).ok()
}

/// A composite resourceVersion: each member's own.
fn composite_versions(rv: Option<&str>) -> Option<BTreeMap<String, String>> {
    rv.filter(|rv| !rv.is_empty()).and_then(decode)
}

/// The composite continue token: the merged list's versions so far and
/// the members still to list, in cluster order, each with its own
/// continue token (`None`: not asked yet).
#[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq, Eq)]
struct Continue {
    v: String,
    rv: BTreeMap<String, String>,
    pending: Vec<(String, Option<String>)>,
}

/// The version tag of our continue tokens.
const CONTINUE_VERSION: &str = "federation@all/v1";

fn decode_continue(token: &str) -> Result<Continue, ApiError> {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| bad_continue())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad_continue())?;
    if v.get("v").and_then(Value::as_str) != Some(CONTINUE_VERSION) {
        return Err(ApiError::bad_request(
            "continue key is not valid: server does not recognize this encoded key",
        ));
    }
    serde_json::from_value(v).map_err(|_| bad_continue())
}

/// Each unfinished member's share of a page of `limit` items, in cluster
/// order: `limit` split as evenly as it goes, the first members taking
/// the remainder, so a page never holds more than `limit`. A share of 0
/// (fewer items than members) is not asked for this page. No limit: every
/// member is asked for all it has.
fn page_shares(limit: Option<usize>, members: usize) -> Vec<Option<usize>> {
    (0..members)
        .map(|i| limit.map(|l| l / members + usize::from(i < l % members)))
        .collect()
}

/// kube's 400 for a continue token that does not decode.
fn bad_continue() -> ApiError {
    ApiError::bad_request(
        "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
    )
}

/// The merged answer being built.
#[derive(Default)]
struct Merged {
    /// The first member answer, the shape of the merged one.
    head: Option<Value>,
    content_type: Option<HeaderValue>,
    entries: Vec<Value>,
    versions: BTreeMap<String, String>,
    warnings: Vec<String>,
}

impl Merged {
    fn add(&mut self, cluster: &str, mut answer: Value, content_type: HeaderValue) {
        if let Some(rv) = answer["metadata"]["resourceVersion"].as_str()
            && !rv.is_empty()
        {
            self.versions.insert(cluster.to_string(), rv.to_string());
        }
        if self.head.is_none()
            || self.head.as_ref().is_some_and(|h| {
                is_table(h) && h["columnDefinitions"].as_array().is_none_or(Vec::is_empty)
            })
        {
            let mut head = answer.clone();
            if let Some(o) = head.as_object_mut() {
                o.remove("items");
                o.remove("rows");
            }
            self.head = Some(head);
            self.content_type = Some(content_type);
        }
        let entries = entries(std::mem::take(&mut answer), cluster);
        self.entries.extend(entries);
    }

    /// The merged body; `table` when the caller asked for a Table (the
    /// shape of an answer from no member at all).
    fn finish(
        self,
        table: bool,
        continue_token: Option<String>,
    ) -> (Value, HeaderValue, Vec<String>) {
        let mut body = self.head.unwrap_or_else(|| {
            if table {
                json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {}, "columnDefinitions": []})
            } else {
                json!({"kind": "List", "apiVersion": "v1", "metadata": {}})
            }
        });
        let key = if is_table(&body) { "rows" } else { "items" };
        if key == "rows" {
            let mut columns = vec![cluster_column()];
            if let Some(Value::Array(defs)) = body.get_mut("columnDefinitions").map(Value::take) {
                columns.extend(defs);
            }
            body["columnDefinitions"] = Value::Array(columns);
        }
        body[key] = Value::Array(self.entries);
        if !body["metadata"].is_object() {
            body["metadata"] = json!({});
        }
        let metadata = &mut body["metadata"];
        metadata["resourceVersion"] = json!(encode(&self.versions));
        if let Some(o) = metadata.as_object_mut() {
            o.remove("remainingItemCount");
            o.remove("continue");
        }
        if let Some(token) = continue_token {
            metadata["continue"] = json!(token);
        }
        let content_type = self
            .content_type
            .unwrap_or_else(|| HeaderValue::from_static("application/json"));
        (body, content_type, self.warnings)
    }
}

/// A member's answer to a page: its list (and content type), or why it
/// is left out.
type PageAnswer = Result<(Value, HeaderValue), String>;

/// Merge one page's answers in cluster order and return the members
/// still unfinished (with their own continue tokens). A member that
/// failed is left out with a warning and is done for this walk, so the
/// next page does not wait for it again; one not asked (its share was 0)
/// stays as it was.
fn settle_page(
    pending: Vec<(String, Option<String>)>,
    mut answers: BTreeMap<String, PageAnswer>,
    merged: &mut Merged,
) -> Vec<(String, Option<String>)> {
    let mut still = Vec::with_capacity(pending.len());
    for (name, token) in pending {
        match answers.remove(&name) {
            None => still.push((name, token)),
            Some(Ok((value, ct))) => {
                let more = value["metadata"]["continue"]
                    .as_str()
                    .filter(|c| !c.is_empty())
                    .map(str::to_string);
                merged.add(&name, value, ct);
                if let Some(more) = more {
                    still.push((name, Some(more)));
                }
            }
            Some(Err(why)) => merged.warnings.push(warning(&name, &why)),
        }
    }
    still
}

/// A merged list: every member at once, or a page of them.
async fn list(
    members: &[Member],
    req: ListRequest,
    object: Option<(String, String, String)>,
) -> Result<Response, ApiError> {
    let table = req
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("as=Table"));
    let limit = req
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0);
    let continue_token = req
        .get("continue")
        .filter(|c| !c.is_empty())
        .map(str::to_string);
    let versions = composite_versions(req.get("resourceVersion"));
    let mut merged = Merged::default();
    let mut next = None;
    if limit.is_none() && continue_token.is_none() {
        // Everyone at once.
        let asked = members.iter().map(|m| {
            let request = req.for_member(&m.name, versions.as_ref(), None, None);
            ask_list(m, request)
        });
        let answers = futures::future::join_all(asked).await;
        for (member, answer) in members.iter().zip(answers) {
            match answer {
                Ok((value, ct)) => merged.add(&member.name, value, ct),
                Err(why) => merged.warnings.push(warning(&member.name, &why)),
            }
        }
    } else {
        let mut state = match &continue_token {
            Some(token) => decode_continue(token)?,
            None => Continue {
                v: CONTINUE_VERSION.to_string(),
                rv: BTreeMap::new(),
                pending: members.iter().map(|m| (m.name.clone(), None)).collect(),
            },
        };
        // A member the caller may no longer read is not asked.
        state
            .pending
            .retain(|(name, _)| members.iter().any(|m| &m.name == name));
        merged.versions = std::mem::take(&mut state.rv);
        // Every unfinished member at once, each for its share of the page.
        let shares = page_shares(limit, state.pending.len());
        let asked = state
            .pending
            .iter()
            .zip(shares)
            .filter(|(_, share)| *share != Some(0))
            .filter_map(|((name, token), share)| {
                let member = members.iter().find(|m| &m.name == name)?;
                let request = req.for_member(name, versions.as_ref(), share, token.as_deref());
                Some(async move { (name.clone(), ask_list(member, request).await) })
            });
        let answers: BTreeMap<String, _> =
            futures::future::join_all(asked).await.into_iter().collect();
        state.pending = settle_page(std::mem::take(&mut state.pending), answers, &mut merged);
        if !state.pending.is_empty() {
            state.rv = merged.versions.clone();
            next = Some(encode(&state));
        }
    }
    let (body, content_type, warnings) = merged.finish(table, next);
    let empty = body["items"].as_array().is_some_and(Vec::is_empty)
        || body["rows"].as_array().is_some_and(Vec::is_empty);
    if let Some((group, resource, name)) = object
        && empty
    {
        let mut response =
            crate::response::status_response(&ApiError::not_found(&group, &resource, &name));
        add_warnings(response.headers_mut(), &warnings);
        return Ok(response);
    }
    let bytes = serde_json::to_vec(&body).map_err(|e| ApiError::internal(e.to_string()))?;
    let mut response = Response::new(Body::from(bytes));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, content_type);
    add_warnings(response.headers_mut(), &warnings);
    Ok(response)
}

/// `Warning: 299 - "…"` for each of `warnings`, as kube writes them.
fn add_warnings(headers: &mut HeaderMap, warnings: &[String]) {
    for w in warnings {
        tracing::info!(warning = %w, "federation@all left a member out");
        let text = format!("299 - \"{}\"", w.replace('\\', "\\\\").replace('"', "\\\""));
        let text: String = text.chars().filter(|c| !c.is_control()).collect();
        if let Ok(v) = HeaderValue::from_str(&text) {
            headers.append(header::WARNING, v);
        }
    }
}

/// Discovery and other paths: the first member's answer that is not a
/// 5xx, passed on as it is.
async fn first_answer(
    members: &[Member],
    member_path: &str,
    query: &[(String, String)],
    mut headers: HeaderMap,
    caller_accept: Option<HeaderValue>,
) -> Result<Response, ApiError> {
    if let Some(accept) = caller_accept {
        headers.insert(header::ACCEPT, accept);
    }
    let target = with_query(member_path, query);
    let uri: Uri = target
        .parse()
        .map_err(|e| ApiError::bad_request(format!("invalid proxy path {target:?}: {e}")))?;
    let mut warnings = Vec::new();
    for member in members {
        match ask(member, uri.clone(), headers.clone()).await {
            Ok(answer) if !answer.status.is_server_error() => {
                let mut response = Response::new(Body::from(answer.body));
                *response.status_mut() = answer.status;
                *response.headers_mut() = crate::proxy::end_to_end(&answer.headers, &[]);
                add_warnings(response.headers_mut(), &warnings);
                return Ok(response);
            }
            Ok(answer) => warnings.push(warning(&member.name, &refusal_text(&answer))),
            Err(why) => warnings.push(warning(&member.name, &why)),
        }
    }
    let why = if warnings.is_empty() {
        "the caller may read no member cluster (clusters/proxy)".to_string()
    } else {
        warnings.join("; ")
    };
    Err(ApiError::service_unavailable(format!(
        "federation@all: no member answered {member_path}: {why}"
    )))
}

/// What every member's watch stream shares.
struct WatchShared {
    /// Each member's latest resourceVersion (for merged bookmarks).
    versions: Mutex<BTreeMap<String, String>>,
    /// Whether a Table event with the column definitions went out.
    columns_sent: AtomicBool,
}

/// A merged watch: every member's opened within the bound, the events
/// streamed as they come.
async fn merged_watch(members: &[Member], req: ListRequest) -> Result<Response, ApiError> {
    let versions = composite_versions(req.get("resourceVersion"));
    let opened = members.iter().map(|m| {
        let request = req.for_member(&m.name, versions.as_ref(), None, None);
        open_watch(m, request)
    });
    let opened = futures::future::join_all(opened).await;
    let shared = Arc::new(WatchShared {
        versions: Mutex::new(versions.clone().unwrap_or_default()),
        columns_sent: AtomicBool::new(false),
    });
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(64);
    let mut warnings = Vec::new();
    let mut content_type = None;
    for (member, result) in members.iter().zip(opened) {
        match result {
            Ok((body, ct)) => {
                content_type.get_or_insert(ct);
                let (name, tx, shared) = (member.name.clone(), tx.clone(), shared.clone());
                tokio::spawn(async move { pump(name, body, tx, shared).await });
            }
            Err(why) => warnings.push(warning(&member.name, &why)),
        }
    }
    drop(tx);
    let stream =
        tokio_stream::wrappers::ReceiverStream::new(rx).map(Ok::<Bytes, std::convert::Infallible>);
    let mut response = Response::new(Body::from_stream(stream));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        content_type.unwrap_or_else(|| HeaderValue::from_static("application/json")),
    );
    add_warnings(response.headers_mut(), &warnings);
    Ok(response)
}

use tokio_stream::StreamExt as _;

/// Open one member's watch within the bound: its body and content type.
async fn open_watch(
    member: &Member,
    request: Result<(Uri, HeaderMap), String>,
) -> Result<(kube::client::Body, HeaderValue), String> {
    let (uri, headers) = request?;
    let client = member.client.clone().ok_or_else(|| {
        "the federation has no client for it (see the Cluster's Ready condition)".to_string()
    })?;
    let mut out = http::Request::new(kube::client::Body::empty());
    *out.uri_mut() = uri;
    *out.headers_mut() = headers;
    let response = tokio::time::timeout(MEMBER_BOUND, client.send(out))
        .await
        .map_err(|_| format!("no answer within {}s", MEMBER_BOUND.as_secs()))?
        .map_err(|e| error_text(&e))?;
    let (parts, body) = response.into_parts();
    if !parts.status.is_success() {
        let body = tokio::time::timeout(MEMBER_BOUND, body.collect())
            .await
            .ok()
            .and_then(Result::ok)
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        return Err(refusal_text(&Answer {
            status: parts.status,
            headers: parts.headers,
            body,
        }));
    }
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .cloned()
        .unwrap_or_else(|| HeaderValue::from_static("application/json"));
    Ok((body, content_type))
}

/// Copy one member's watch events into the merged stream, each object
/// annotated, until the member's stream or the caller goes away.
async fn pump(
    cluster: String,
    mut body: kube::client::Body,
    tx: tokio::sync::mpsc::Sender<Bytes>,
    shared: Arc<WatchShared>,
) {
    let mut buffer: Vec<u8> = Vec::new();
    loop {
        let frame = tokio::select! {
            frame = body.frame() => frame,
            () = tx.closed() => return,
        };
        let data = match frame {
            None => break,
            Some(Err(e)) => {
                tracing::info!(%cluster, error = %error_text(&e), "federation@all: a member's watch broke off");
                return;
            }
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue,
            },
        };
        buffer.extend_from_slice(&data);
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            let Some(event) = merge_event(&cluster, &line, &shared) else {
                continue;
            };
            if tx.send(event).await.is_err() {
                return;
            }
        }
    }
    if let Some(event) = merge_event(&cluster, &buffer, &shared) {
        let _ = tx.send(event).await;
    }
    tracing::info!(%cluster, "federation@all: a member's watch ended");
}

/// One member event as the merged stream carries it (a line), or `None`
/// for a blank or unreadable line.
fn merge_event(cluster: &str, line: &[u8], shared: &WatchShared) -> Option<Bytes> {
    let line = line.trim_ascii();
    if line.is_empty() {
        return None;
    }
    let mut event: Value = serde_json::from_slice(line)
        .inspect_err(
            |e| tracing::info!(%cluster, error = %e, "federation@all: an unreadable watch event"),
        )
        .ok()?;
    let kind = event["type"].as_str().unwrap_or("").to_string();
    let object = &mut event["object"];
    match kind.as_str() {
        "ERROR" => {
            if let Some(message) = object["message"].as_str() {
                object["message"] = json!(warning(cluster, message));
            }
        }
        "BOOKMARK" => {
            let rv = object["metadata"]["resourceVersion"].as_str()?.to_string();
            let mut versions = shared.versions.lock();
            versions.insert(cluster.to_string(), rv);
            object["metadata"]["resourceVersion"] = json!(encode(&*versions));
        }
        _ => {
            if is_table(object) {
                let had_columns = object["columnDefinitions"]
                    .as_array()
                    .is_some_and(|c| !c.is_empty());
                if had_columns && !shared.columns_sent.swap(true, Ordering::SeqCst) {
                    let mut columns = vec![cluster_column()];
                    if let Some(Value::Array(defs)) =
                        object.get_mut("columnDefinitions").map(Value::take)
                    {
                        columns.extend(defs);
                    }
                    object["columnDefinitions"] = Value::Array(columns);
                } else if had_columns {
                    object["columnDefinitions"] = json!([]);
                }
                if let Some(rows) = object.get_mut("rows").and_then(Value::as_array_mut) {
                    for row in rows.iter_mut() {
                        if let Some(rv) = row["object"]["metadata"]["resourceVersion"].as_str() {
                            shared
                                .versions
                                .lock()
                                .insert(cluster.to_string(), rv.to_string());
                        }
                        cluster_row(row, cluster);
                    }
                }
            } else {
                if let Some(rv) = object["metadata"]["resourceVersion"].as_str() {
                    shared
                        .versions
                        .lock()
                        .insert(cluster.to_string(), rv.to_string());
                }
                annotate(object, cluster);
            }
        }
    }
    let mut out = serde_json::to_vec(&event).ok()?;
    out.push(b'\n');
    Some(Bytes::from(out))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    #[test]
    fn member_paths_are_collections_objects_or_other() {
        let collection = |path: &str, watch| Target::Collection {
            path: path.into(),
            watch,
        };
        let object = |collection: &str, group: &str, resource: &str, name: &str| Target::Object {
            collection: collection.into(),
            group: group.into(),
            resource: resource.into(),
            name: name.into(),
        };
        let cm = "/api/v1/namespaces/x/configmaps";
        let cases = [
            (cm, collection(cm, false)),
            (
                "/api/v1/watch/namespaces/x/configmaps",
                collection(cm, true),
            ),
            (
                "/apis/apps/v1/deployments",
                collection("/apis/apps/v1/deployments", false),
            ),
            (
                "/api/v1/namespaces",
                collection("/api/v1/namespaces", false),
            ),
            (
                "/api/v1/namespaces/x",
                object("/api/v1/namespaces", "", "namespaces", "x"),
            ),
            (
                "/apis/apps/v1/namespaces/x/deployments/web",
                object(
                    "/apis/apps/v1/namespaces/x/deployments",
                    "apps",
                    "deployments",
                    "web",
                ),
            ),
            ("/api/v1/namespaces/x/pods/p/log", Target::Subresource),
        ];
        for (path, want) in cases {
            assert_eq!(Target::parse(path), want, "{path}");
        }
        for other in [
            "/api",
            "/apis",
            "/api/v1",
            "/apis/apps/v1",
            "/openapi/v3",
            "/version",
            "/",
        ] {
            assert_eq!(Target::parse(other), Target::Other, "{other}");
        }
    }

    #[test]
    fn members_are_asked_in_json_and_protobuf_only_is_406() {
        assert_eq!(member_accept(None).unwrap(), "application/json");
        assert_eq!(
            member_accept(Some(
                "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
            ))
            .unwrap(),
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        );
        let e = member_accept(Some("application/vnd.kubernetes.protobuf")).unwrap_err();
        assert_eq!(e.code, 406);
        assert_eq!(
            member_accept(Some("application/yaml")).unwrap_err().code,
            406
        );
    }

    #[test]
    fn continue_tokens_round_trip_and_bad_ones_are_kubes_400() {
        let c = Continue {
            v: CONTINUE_VERSION.into(),
            rv: BTreeMap::from([("m1".into(), "12".into())]),
            pending: vec![("m1".into(), Some("tok".into())), ("m2".into(), None)],
        };
        assert_eq!(decode_continue(&encode(&c)).unwrap(), c);
        let bad = decode_continue("not base64!").unwrap_err();
        assert_eq!(bad.code, 400);
        assert!(
            bad.message.starts_with("continue key is not valid"),
            "{}",
            bad.message
        );
        let foreign = decode_continue(&encode(&json!({"v": "meta.k8s.io/v1"}))).unwrap_err();
        assert_eq!(
            foreign.message,
            "continue key is not valid: server does not recognize this encoded key"
        );
        assert_eq!(composite_versions(Some(&encode(&c.rv))).unwrap(), c.rv);
        assert_eq!(composite_versions(Some("123")), None);
    }

    #[test]
    fn a_page_is_shared_between_the_unfinished_members() {
        assert_eq!(page_shares(Some(500), 10), vec![Some(50); 10]);
        assert_eq!(page_shares(Some(7), 3), [Some(3), Some(2), Some(2)]);
        // Fewer items than members: the first ones, one each.
        assert_eq!(page_shares(Some(1), 2), [Some(1), Some(0)]);
        assert_eq!(page_shares(Some(2), 3), [Some(1), Some(1), Some(0)]);
        assert_eq!(page_shares(None, 2), [None, None]);
        assert!(page_shares(Some(5), 0).is_empty());
        for (limit, n) in [(500, 7), (3, 5), (1, 1), (1000, 3)] {
            let total: usize = page_shares(Some(limit), n).into_iter().flatten().sum();
            assert_eq!(total, limit, "{limit} over {n}");
        }
    }

    #[test]
    fn a_page_merges_in_cluster_order_and_a_failed_member_is_done_for_the_walk() {
        let ct = HeaderValue::from_static("application/json");
        let page = |names: &[&str], more: Option<&str>| {
            let items: Vec<Value> = names
                .iter()
                .map(|n| json!({"metadata": {"name": n}}))
                .collect();
            json!({"kind": "ConfigMapList", "apiVersion": "v1",
                   "metadata": {"resourceVersion": "3", "continue": more}, "items": items})
        };
        let pending = vec![
            ("m1".to_string(), Some("t1".to_string())),
            ("m2".to_string(), None),
            ("m3".to_string(), None),
            ("m4".to_string(), Some("t4".to_string())),
        ];
        // m3 was not asked (share 0); answers arrive in any order.
        let answers = BTreeMap::from([
            ("m4".to_string(), Ok((page(&["d"], None), ct.clone()))),
            ("m2".to_string(), Err("no answer within 5s".to_string())),
            ("m1".to_string(), Ok((page(&["a", "b"], Some("t1b")), ct))),
        ]);
        let mut merged = Merged::default();
        let still = settle_page(pending, answers, &mut merged);
        assert_eq!(
            still,
            [
                ("m1".to_string(), Some("t1b".to_string())),
                ("m3".to_string(), None)
            ]
        );
        assert_eq!(merged.warnings, ["cluster m2: no answer within 5s"]);
        let (body, _, _) = merged.finish(false, None);
        let got: Vec<(&str, &str)> = body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                (
                    i["metadata"]["annotations"][CLUSTER_ANNOTATION]
                        .as_str()
                        .unwrap(),
                    i["metadata"]["name"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(got, [("m1", "a"), ("m1", "b"), ("m4", "d")]);
    }

    #[test]
    fn tables_get_a_cluster_column_and_lists_annotated_items() {
        let table = |rows: Value| {
            json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": "5"},
                   "columnDefinitions": [{"name": "Name", "type": "string"}], "rows": rows})
        };
        let ct = HeaderValue::from_static("application/json");
        let mut m = Merged::default();
        m.add(
            "m1",
            table(json!([{"cells": ["a"], "object": {"metadata": {"name": "a"}}}])),
            ct.clone(),
        );
        m.add(
            "m2",
            table(json!([{"cells": ["b"], "object": {"metadata": {"name": "b"}}}])),
            ct.clone(),
        );
        let (body, _, warnings) = m.finish(true, None);
        assert!(warnings.is_empty());
        let columns: Vec<&str> = body["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(columns, ["CLUSTER", "Name"]);
        assert_eq!(body["rows"][0]["cells"], json!(["m1", "a"]));
        assert_eq!(body["rows"][1]["cells"], json!(["m2", "b"]));
        assert_eq!(
            body["rows"][1]["object"]["metadata"]["annotations"][CLUSTER_ANNOTATION],
            "m2"
        );
        let rv = composite_versions(body["metadata"]["resourceVersion"].as_str()).unwrap();
        assert_eq!(
            rv,
            BTreeMap::from([("m1".into(), "5".into()), ("m2".into(), "5".into())])
        );

        let mut m = Merged::default();
        m.add("m2", json!({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "9", "continue": "x"},
                           "items": [{"metadata": {"name": "c", "annotations": {"a": "b"}}}]}), ct);
        let (body, _, _) = m.finish(false, Some("next".into()));
        assert_eq!(body["kind"], "ConfigMapList");
        assert_eq!(body["metadata"]["continue"], "next");
        assert_eq!(
            body["items"][0]["metadata"]["annotations"],
            json!({"a": "b", CLUSTER_ANNOTATION: "m2"})
        );
        // No member answered: an empty list of the asked shape.
        let (body, _, _) = Merged::default().finish(true, None);
        assert_eq!(body["kind"], "Table");
        assert_eq!(body["rows"], json!([]));
    }

    #[test]
    fn watch_events_are_annotated_and_bookmarks_carry_the_composite_version() {
        let shared = WatchShared {
            versions: Mutex::new(BTreeMap::from([("m1".into(), "3".into())])),
            columns_sent: AtomicBool::new(false),
        };
        let event = |line: &str, cluster| -> Value {
            serde_json::from_slice(&merge_event(cluster, line.as_bytes(), &shared).unwrap())
                .unwrap()
        };
        let e = event(
            r#"{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"7"}}}"#,
            "m2",
        );
        assert_eq!(
            e["object"]["metadata"]["annotations"][CLUSTER_ANNOTATION],
            "m2"
        );
        assert_eq!(e["object"]["metadata"]["resourceVersion"], "7");
        let b = event(
            r#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"4"}}}"#,
            "m1",
        );
        let rv = composite_versions(b["object"]["metadata"]["resourceVersion"].as_str()).unwrap();
        assert_eq!(
            rv,
            BTreeMap::from([("m1".into(), "4".into()), ("m2".into(), "7".into())])
        );
        let t = r#"{"type":"MODIFIED","object":{"kind":"Table","columnDefinitions":[{"name":"Name"}],"rows":[{"cells":["a"],"object":{"metadata":{"name":"a"}}}]}}"#;
        let first = event(t, "m1");
        assert_eq!(first["object"]["columnDefinitions"][0]["name"], "CLUSTER");
        assert_eq!(first["object"]["rows"][0]["cells"], json!(["m1", "a"]));
        let second = event(t, "m2");
        assert_eq!(second["object"]["columnDefinitions"], json!([]));
        assert_eq!(second["object"]["rows"][0]["cells"], json!(["m2", "a"]));
        assert!(merge_event("m1", b"  ", &shared).is_none());
    }
}
