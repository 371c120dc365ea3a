//! The audit filters (kube-apiserver's `WithAuditInit` and `WithAudit` in
//! `k8s.io/apiserver/pkg/endpoints/filters`), over the policy, events and
//! log of the [`ubernetes_audit`] crate.
//!
//! - [`audit_id`] (outside everything but tracing): every response carries
//!   an `Audit-Id` header: the request's own `Audit-ID` header when it sent
//!   one, else a new UUID.
//! - [`audit`] (right after authentication, before impersonation and
//!   authorization): evaluates `--audit-policy-file` for the authenticated
//!   user and the request's attributes (the rbac crate's `RequestInfo`, the
//!   same parse authorization uses) and writes the events of the request:
//!   `RequestReceived`, `ResponseStarted` (long-running requests: watches,
//!   proxies), `ResponseComplete`, or `Panic`, minus the policy's
//!   `omitStages`. Authorization adds its decision to the event through the
//!   [`AuditContext`] request extension (`authorization.k8s.io/decision`
//!   and `/reason` annotations, and the impersonated user).
//!
//! Bodies: at `Request` level the request body (as JSON, as kube logs it:
//! YAML apply patches and protobuf bodies are converted), at
//! `RequestResponse` also the response body of requests that are not
//! long-running.
//!
//! Stricter than kube: Secrets, TokenRequests (`serviceaccounts/token`),
//! TokenReviews and the cluster proxy (whose answers may hold a member's
//! Secrets) are never logged above `Metadata`, whatever the policy says: a
//! federation holds every member's credentials in Secrets.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use bytes::Bytes;
use clap::Args;
use futures::{FutureExt as _, StreamExt as _};
use http::HeaderValue;
use http::header::{CONTENT_TYPE, USER_AGENT};
use parking_lot::Mutex;
use serde_json::{Value, json};
use ubernetes_audit::{
    Event, Format, Level, LogBackend, ObjectReference, Policy, RequestAuditConfig, Rotation, Stage,
    micro_time, new_audit_id,
};
use ubernetes_rbac::request_info::{Attributes, RequestInfo};

use crate::authn;

/// The audit header kube reads and writes (`Audit-ID`).
pub const HEADER_AUDIT_ID: &str = "audit-id";
/// The annotation authorization adds: `allow` or `forbid`.
pub const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
/// The annotation with the authorizer's reason.
pub const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";
/// kube's cap on the logged User-Agent.
const MAX_USER_AGENT: usize = 1024;

/// kube-apiserver's audit log flags.
#[derive(Debug, Clone, Args)]
pub struct AuditOptions {
    /// Path to the file that defines the audit policy configuration
    /// (audit.k8s.io/v1 Policy, YAML or JSON). Without it no events are
    /// recorded.
    #[arg(long = "audit-policy-file", value_name = "FILE")]
    pub audit_policy_file: Option<PathBuf>,

    /// If set, all requests coming to the apiserver will be logged to this
    /// file (JSON lines of audit.k8s.io/v1 Event). '-' means standard out.
    #[arg(long = "audit-log-path", value_name = "PATH")]
    pub audit_log_path: Option<PathBuf>,

    /// The maximum number of days to retain old audit log files based on the
    /// timestamp encoded in their filename (0: no limit).
    #[arg(long = "audit-log-maxage", value_name = "DAYS", default_value_t = 0)]
    pub audit_log_maxage: u64,

    /// The maximum number of old audit log files to retain. Setting a value
    /// of 0 will mean there's no restriction on the number of files.
    #[arg(long = "audit-log-maxbackup", value_name = "N", default_value_t = 0)]
    pub audit_log_maxbackup: usize,

    /// The maximum size in megabytes of the audit log file before it gets
    /// rotated (0: 100).
    #[arg(long = "audit-log-maxsize", value_name = "MB", default_value_t = 0)]
    pub audit_log_maxsize: u64,

    /// Format of saved audits. "legacy" indicates 1-line text format for
    /// each event. "json" indicates structured json format.
    #[arg(
        long = "audit-log-format",
        value_name = "FORMAT",
        default_value = "json",
        value_parser = ["json", "legacy"]
    )]
    pub audit_log_format: String,

    /// If set, the rotated log files will be compressed using gzip.
    #[arg(long = "audit-log-compress")]
    pub audit_log_compress: bool,
}

impl Default for AuditOptions {
    fn default() -> Self {
        AuditOptions {
            audit_policy_file: None,
            audit_log_path: None,
            audit_log_maxage: 0,
            audit_log_maxbackup: 0,
            audit_log_maxsize: 0,
            audit_log_format: "json".to_string(),
            audit_log_compress: false,
        }
    }
}

/// The policy and where its events go.
#[derive(Debug)]
pub struct Auditor {
    policy: Policy,
    backend: LogBackend,
    secret_bodies: SecretBodies,
}

/// The resources and subresources whose bodies carry secrets, as their
/// kinds declare them (`Strategy::secret_bodies`, and the review APIs'):
/// logged at `Metadata` at most, whatever the policy.
#[derive(Debug, Clone, Default)]
pub struct SecretBodies(std::collections::BTreeSet<(String, String, String)>);

impl SecretBodies {
    /// `group`'s `resource`'s `subresource` (`""`: the resource and all of
    /// its subresources) carries secrets.
    pub fn insert(&mut self, group: &str, resource: &str, subresource: &str) {
        self.0
            .insert((group.into(), resource.into(), subresource.into()));
    }

    fn contains(&self, info: &RequestInfo) -> bool {
        let key = |sub: &str| {
            (
                info.api_group.clone(),
                info.resource.clone(),
                sub.to_string(),
            )
        };
        self.0.contains(&key("")) || self.0.contains(&key(&info.subresource))
    }
}

impl Auditor {
    /// The auditor the flags ask for: `None` without a log path or without a
    /// policy (kube records nothing then). A bad policy file or a log file
    /// that cannot be opened fails the start.
    pub fn from_options(
        o: &AuditOptions,
        secret_bodies: SecretBodies,
    ) -> anyhow::Result<Option<Arc<Auditor>>> {
        let policy = match &o.audit_policy_file {
            Some(path) => Some(Policy::load(path)?),
            None => None,
        };
        let (Some(policy), Some(path)) = (policy, &o.audit_log_path) else {
            if o.audit_log_path.is_some() {
                tracing::info!(
                    "no audit policy file provided (--audit-policy-file), no events will be recorded for the log backend"
                );
            }
            return Ok(None);
        };
        let format = if o.audit_log_format == "legacy" {
            Format::Legacy
        } else {
            Format::Json
        };
        let rotation = Rotation {
            max_size_mb: o.audit_log_maxsize,
            max_backups: o.audit_log_maxbackup,
            max_age_days: o.audit_log_maxage,
            compress: o.audit_log_compress,
        };
        let backend = LogBackend::start(path, format, rotation)
            .with_context(|| format!("cannot open --audit-log-path {}", path.display()))?;
        tracing::info!(
            policy = %o.audit_policy_file.as_deref().unwrap_or(std::path::Path::new("")).display(),
            log = %path.display(),
            rules = policy.rules.len(),
            "audit log enabled"
        );
        Ok(Some(Arc::new(Auditor {
            policy,
            backend,
            secret_bodies,
        })))
    }
}

/// The request's audit ID (set by [`audit_id`]).
#[derive(Clone, Debug)]
pub struct AuditId(pub String);

/// What later filters add to the request's event (`audit.AuditContext`):
/// annotations and the impersonated user.
#[derive(Clone, Debug, Default)]
pub struct AuditContext(Arc<Mutex<Recorded>>);

#[derive(Debug, Default)]
struct Recorded {
    annotations: BTreeMap<String, String>,
    impersonated: Option<ubernetes_audit::UserInfo>,
}

impl AuditContext {
    /// Add an annotation (the first value of a key stays, as kube).
    pub fn add_annotation(&self, key: &str, value: &str) {
        self.0
            .lock()
            .annotations
            .entry(key.to_string())
            .or_insert_with(|| value.to_string());
    }

    /// Record authorization's decision (`allow` or `forbid`) and reason.
    pub fn authorization(&self, allowed: bool, reason: &str) {
        self.add_annotation(
            DECISION_ANNOTATION,
            if allowed { "allow" } else { "forbid" },
        );
        self.add_annotation(REASON_ANNOTATION, reason);
    }

    /// Record the user the request acts as.
    pub fn impersonated_user(&self, user: &ubernetes_rbac::user::UserInfo) {
        self.0.lock().impersonated = Some(user.into());
    }

    fn fill(&self, ev: &mut Event) {
        let r = self.0.lock();
        for (k, v) in &r.annotations {
            ev.annotations.entry(k.clone()).or_insert_with(|| v.clone());
        }
        if ev.impersonated_user.is_none() {
            ev.impersonated_user = r.impersonated.clone();
        }
    }
}

/// `WithAuditInit`: the request's audit ID, answered in `Audit-Id`.
pub async fn audit_id(request: Request, next: Next) -> Response {
    audit_id_run(request, |request| next.run(request)).await
}

/// [`audit_id`] with the rest of the chain given as `run`.
pub(crate) async fn audit_id_run<F, Fut>(mut request: Request, run: F) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let id = request
        .headers()
        .get(HEADER_AUDIT_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .unwrap_or_else(fresh_audit_id);
    let header = HeaderValue::from_str(&id).ok();
    request.extensions_mut().insert(AuditId(id));
    let mut response = run(request).await;
    if let Some(v) = header {
        response.headers_mut().insert(HEADER_AUDIT_ID, v);
    }
    response
}

/// A new audit ID: a random (version 4) UUID, as
/// [`ubernetes_audit::new_audit_id`] makes, from the thread's random
/// generator (not a `getrandom` system call per request), written by the
/// uuid crate's encoder (not a formatter call per byte).
fn fresh_audit_id() -> String {
    let bytes: [u8; 16] = rand::random();
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .hyphenated()
        .encode_lower(&mut uuid::Uuid::encode_buffer())
        .to_owned()
}

/// Where a request's events go, minus the omitted stages.
#[derive(Clone)]
struct Emitter {
    backend: LogBackend,
    omit: std::collections::BTreeSet<Stage>,
}

impl Emitter {
    fn stamp(ev: &mut Event, stage: Stage) -> bool {
        ev.stage = stage;
        ev.stage_timestamp = if stage == Stage::RequestReceived {
            ev.request_received_timestamp.clone()
        } else {
            micro_time(jiff::Timestamp::now())
        };
        true
    }

    async fn emit(&self, ev: &mut Event, stage: Stage) {
        Self::stamp(ev, stage);
        if !self.omit.contains(&stage) {
            self.backend.process(ev.clone()).await;
        }
    }

    fn emit_now(&self, mut ev: Event, stage: Stage) {
        Self::stamp(&mut ev, stage);
        if !self.omit.contains(&stage) {
            self.backend.process_now(ev);
        }
    }
}

/// Writes the `ResponseComplete` event when dropped: at the end of a
/// long-running response's body, or when a request is cancelled before it
/// completed (kube's "Connection closed early").
struct CompleteOnDrop {
    ev: Option<Event>,
    emitter: Emitter,
    context: AuditContext,
}

impl Drop for CompleteOnDrop {
    fn drop(&mut self) {
        if let Some(mut ev) = self.ev.take() {
            self.context.fill(&mut ev);
            if ev.response_status.is_none() {
                ev.response_status = Some(
                    json!({"metadata": {}, "status": "Success", "message": "Connection closed early", "code": 200}),
                );
            }
            self.emitter.emit_now(ev, Stage::ResponseComplete);
        }
    }
}

/// The highest level a request may be logged at, whatever the policy:
/// `Metadata` for requests whose bodies carry secrets (as the kinds declare
/// them) and for proxied requests.
pub fn max_level(info: &RequestInfo, secret_bodies: &SecretBodies) -> Level {
    let sensitive = info.is_resource_request
        && (secret_bodies.contains(info) || info.subresource == "proxy" || info.verb == "proxy");
    if sensitive {
        Level::Metadata
    } else {
        Level::RequestResponse
    }
}

/// kube's `BasicLongRunningRequestCheck({watch, proxy}, {attach, exec,
/// proxy, log, portforward})`, plus the cluster proxy's paths.
fn is_long_running(info: &RequestInfo, path: &str) -> bool {
    matches!(info.verb.as_str(), "watch" | "proxy")
        || matches!(
            info.subresource.as_str(),
            "attach" | "exec" | "proxy" | "log" | "portforward"
        )
        || crate::cluster_proxy::is_proxy_path(path)
        || crate::cluster_proxy::is_tunnel_path(path)
}

/// `utilnet.SourceIPs`: `X-Forwarded-For`, then `X-Real-Ip`, then the
/// connection's address unless it is already last.
fn source_ips(request: &Request) -> Vec<String> {
    let mut ips: Vec<IpAddr> = Vec::new();
    let header = |name: &str| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    for part in header("x-forwarded-for").split(',') {
        if let Ok(ip) = part.trim().parse::<IpAddr>() {
            ips.push(ip);
        }
    }
    if let Ok(ip) = header("x-real-ip").trim().parse::<IpAddr>()
        && !ips.contains(&ip)
    {
        ips.push(ip);
    }
    if let Some(ConnectInfo(addr)) = request.extensions().get::<ConnectInfo<SocketAddr>>() {
        let ip = addr.ip();
        if ips.last() != Some(&ip) {
            ips.push(ip);
        }
    }
    ips.iter().map(IpAddr::to_string).collect()
}

/// A body as JSON (kube logs bodies as JSON whatever the wire format):
/// JSON as is, YAML (apply patches) and Kubernetes protobuf converted;
/// `None` for anything unreadable.
fn body_json(content_type: &str, bytes: &[u8]) -> Option<Value> {
    if bytes.is_empty() {
        return None;
    }
    if crate::protobuf::is_protobuf(content_type) {
        return crate::protobuf::decode(bytes).ok();
    }
    if content_type.contains("yaml") {
        // The handlers' decoder, with its bound on alias expansion.
        return crate::yaml::decode_yaml(bytes).ok();
    }
    serde_json::from_slice(bytes).ok()
}

/// `omitManagedFields`: drop `metadata.managedFields` of an object, of a
/// list's items and of a Table's row objects.
fn drop_managed_fields(v: &mut Value) {
    fn one(o: &mut Value) {
        if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("managedFields");
        }
    }
    one(v);
    if let Some(items) = v.get_mut("items").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(one);
    }
    if let Some(rows) = v.get_mut("rows").and_then(Value::as_array_mut) {
        for row in rows {
            if let Some(o) = row.get_mut("object") {
                one(o);
            }
        }
    }
}

/// The `responseStatus` of a response: the Status body's bounded fields
/// when the answer is a Status, else just the code.
fn response_status(code: u16, body: Option<&Value>) -> Value {
    match body.filter(|b| b.get("kind").and_then(Value::as_str) == Some("Status")) {
        Some(status) => {
            let mut s = serde_json::Map::new();
            s.insert("metadata".into(), json!({}));
            for key in ["status", "message", "reason", "details"] {
                if let Some(v) = status.get(key).filter(|v| !v.is_null()) {
                    s.insert(key.into(), v.clone());
                }
            }
            s.insert(
                "code".into(),
                status.get("code").cloned().unwrap_or(json!(code)),
            );
            Value::Object(s)
        }
        None => json!({"metadata": {}, "code": code}),
    }
}

/// `WithAudit`; use with `from_fn_with_state(Option<Arc<Auditor>>, audit)`
/// inside authentication.
pub async fn audit(
    State(auditor): State<Option<Arc<Auditor>>>,
    request: Request,
    next: Next,
) -> Response {
    match auditor {
        Some(auditor) => audit_run(&auditor, request, |request| next.run(request)).await,
        None => next.run(request).await,
    }
}

/// [`audit`] with the rest of the chain given as `run`, for the server's
/// single filter ([`crate::serve::build_router`]); called only when an
/// audit log is configured (audit off costs nothing).
pub(crate) async fn audit_run<F, Fut>(auditor: &Auditor, mut request: Request, run: F) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let Some(user) = request.extensions().get::<authn::UserInfo>().cloned() else {
        return run(request).await;
    };
    let received = jiff::Timestamp::now();
    let method = request.method().as_str().to_string();
    let path = request.uri().path().to_string();
    let info = RequestInfo::parse_lenient(&method, &path, request.uri().query().unwrap_or(""));
    let rbac_user = crate::authn::to_rbac_user(&user);
    let attrs = Attributes::from_request(&rbac_user, &info);
    let RequestAuditConfig {
        level,
        omit_stages,
        omit_managed_fields,
    } = auditor.policy.evaluate(&attrs);
    if level == Level::None {
        return run(request).await;
    }
    let level = level.min(max_level(&info, &auditor.secret_bodies));
    let audit_id = request
        .extensions()
        .get::<AuditId>()
        .map(|a| a.0.clone())
        .unwrap_or_else(new_audit_id);
    let mut ev = Event::new(level, audit_id, received);
    ev.request_uri = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or(path.clone());
    ev.verb = info.verb.clone();
    ev.user = (&rbac_user).into();
    ev.source_ips = source_ips(&request);
    let mut agent = request
        .headers()
        .get(USER_AGENT)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    if agent.len() > MAX_USER_AGENT {
        let mut cut = MAX_USER_AGENT;
        while !agent.is_char_boundary(cut) {
            cut -= 1;
        }
        agent.truncate(cut);
        agent.push_str("...TRUNCATED");
    }
    ev.user_agent = agent;
    if info.is_resource_request {
        ev.object_ref = Some(ObjectReference {
            resource: info.resource.clone(),
            namespace: info.namespace.clone(),
            name: info.name.clone(),
            api_group: info.api_group.clone(),
            api_version: info.api_version.clone(),
            subresource: info.subresource.clone(),
            ..ObjectReference::default()
        });
    }
    let emitter = Emitter {
        backend: auditor.backend.clone(),
        omit: omit_stages,
    };
    emitter.emit(&mut ev, Stage::RequestReceived).await;

    let context = AuditContext::default();
    request.extensions_mut().insert(context.clone());
    // Keep a copy of the body as the handler reads it (not buffered here:
    // the body-size limit further in still applies).
    let request_type = request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let captured: Arc<Mutex<Vec<u8>>> = Arc::default();
    if matches!(method.as_str(), "POST" | "PUT" | "PATCH" | "DELETE") {
        let (parts, body) = request.into_parts();
        let sink = captured.clone();
        let stream = body.into_data_stream().map(move |chunk| {
            if let Ok(c) = &chunk {
                sink.lock().extend_from_slice(c);
            }
            chunk
        });
        request = Request::from_parts(parts, Body::from_stream(stream));
    }
    let long_running = is_long_running(&info, &path);

    // Until the response is complete, a cancelled request still ends with
    // its ResponseComplete event.
    let mut pending = CompleteOnDrop {
        ev: Some(ev),
        emitter: emitter.clone(),
        context: context.clone(),
    };
    let result = AssertUnwindSafe(run(request)).catch_unwind().await;
    let Some(mut ev) = pending.ev.take() else {
        return Response::default();
    };
    drop(pending);
    context.fill(&mut ev);
    let response = match result {
        Ok(response) => response,
        Err(panic) => {
            let detail = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".to_string());
            ev.response_status = Some(json!({"metadata": {}, "status": "Failure",
                "message": format!("APIServer panic'd: {detail}"), "reason": "InternalError", "code": 500}));
            emitter.emit(&mut ev, Stage::Panic).await;
            // The panic catcher outside answers the 500.
            std::panic::resume_unwind(panic);
        }
    };

    // What the request body says about the object (kube's LogRequestObject
    // fills the reference at Metadata level too), and the body itself at
    // Request level.
    let body = std::mem::take(&mut *captured.lock());
    if let Some(mut object) = body_json(&request_type, &body) {
        if let Some(r) = ev.object_ref.as_mut()
            && let Some(meta) = object.get("metadata")
        {
            let field = |k: &str| {
                meta.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            for (slot, key) in [
                (&mut r.namespace, "namespace"),
                (&mut r.name, "name"),
                (&mut r.uid, "uid"),
                (&mut r.resource_version, "resourceVersion"),
            ] {
                if slot.is_empty() {
                    *slot = field(key);
                }
            }
        }
        if level >= Level::Request {
            if omit_managed_fields {
                drop_managed_fields(&mut object);
            }
            ev.request_object = Some(object);
        }
    }

    let code = response.status().as_u16();
    if long_running {
        ev.response_status = Some(json!({"metadata": {}, "code": code}));
        emitter.emit(&mut ev, Stage::ResponseStarted).await;
        let (parts, body) = response.into_parts();
        let guard = CompleteOnDrop {
            ev: Some(ev),
            emitter,
            context,
        };
        let stream = body.into_data_stream().map(move |chunk| {
            let _keep = &guard;
            chunk
        });
        return Response::from_parts(parts, Body::from_stream(stream));
    }

    let response_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let failed = !(200..300).contains(&code);
    let readable = response_type.contains("json") || crate::protobuf::is_protobuf(&response_type);
    let read_body = readable && (level == Level::RequestResponse || failed);
    let response = if read_body {
        let (parts, body) = response.into_parts();
        let bytes = match axum::body::to_bytes(body, usize::MAX).await {
            Ok(b) => b,
            Err(err) => {
                tracing::warn!(error = %err, "cannot read a response body for the audit log");
                Bytes::new()
            }
        };
        let mut object = body_json(&response_type, &bytes);
        ev.response_status = Some(response_status(code, object.as_ref()));
        if level == Level::RequestResponse
            && let Some(mut o) = object.take()
        {
            if omit_managed_fields {
                drop_managed_fields(&mut o);
            }
            ev.response_object = Some(o);
        }
        Response::from_parts(parts, Body::from(bytes))
    } else {
        ev.response_status = Some(response_status(code, None));
        response
    };
    emitter.emit(&mut ev, Stage::ResponseComplete).await;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_audit_ids_are_distinct_version_4_uuids() {
        let a = fresh_audit_id();
        let b = fresh_audit_id();
        assert_ne!(a, b);
        for id in [&a, &b] {
            let parsed = uuid::Uuid::parse_str(id).expect("a UUID");
            assert_eq!(parsed.get_version_num(), 4, "{id}");
            assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122, "{id}");
            assert_eq!(parsed.hyphenated().to_string(), *id);
        }
    }

    #[test]
    fn secrets_tokens_and_proxies_are_capped_at_metadata() {
        let parse = |m: &str, p: &str| RequestInfo::parse_lenient(m, p, "");
        let secret = crate::serve::secret_bodies();
        let max_level = |info: &RequestInfo| max_level(info, &secret);
        for (m, p) in [
            ("GET", "/api/v1/namespaces/a/secrets/s"),
            ("GET", "/api/v1/secrets"),
            ("GET", "/api/v1/watch/namespaces/a/secrets"),
            ("POST", "/api/v1/namespaces/a/serviceaccounts/default/token"),
            ("POST", "/apis/authentication.k8s.io/v1/tokenreviews"),
            (
                "GET",
                "/apis/federation/v1beta1/clusters/m1/proxy/api/v1/secrets",
            ),
        ] {
            assert_eq!(max_level(&parse(m, p)), Level::Metadata, "{m} {p}");
        }
        for (m, p) in [
            ("GET", "/api/v1/namespaces/a/configmaps/c"),
            ("GET", "/api/v1/namespaces/a/serviceaccounts/default"),
            ("GET", "/apis/example.com/v1/secrets"),
        ] {
            assert_eq!(max_level(&parse(m, p)), Level::RequestResponse, "{m} {p}");
        }
    }

    #[test]
    fn response_status_copies_a_status_bodys_bounded_fields() {
        let forbidden = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "no", "reason": "Forbidden", "details": {"kind": "pods"}, "code": 403});
        assert_eq!(
            response_status(403, Some(&forbidden)),
            json!({"metadata": {}, "status": "Failure", "message": "no", "reason": "Forbidden",
                "details": {"kind": "pods"}, "code": 403})
        );
        let pod = json!({"kind": "Pod"});
        assert_eq!(
            response_status(200, Some(&pod)),
            json!({"metadata": {}, "code": 200})
        );
    }

    #[test]
    fn managed_fields_are_dropped_from_objects_lists_and_tables() {
        let mut v = json!({"metadata": {"name": "a", "managedFields": [1]},
            "items": [{"metadata": {"managedFields": [2], "name": "b"}}],
            "rows": [{"object": {"metadata": {"managedFields": [3]}}}]});
        drop_managed_fields(&mut v);
        assert_eq!(
            v,
            json!({"metadata": {"name": "a"}, "items": [{"metadata": {"name": "b"}}],
                "rows": [{"object": {"metadata": {}}}]})
        );
    }

    #[test]
    fn yaml_apply_bodies_become_json_and_unreadable_ones_are_skipped() {
        assert_eq!(
            body_json(
                "application/apply-patch+yaml",
                b"kind: ConfigMap\ndata:\n  a: b\n"
            ),
            Some(json!({"kind": "ConfigMap", "data": {"a": "b"}}))
        );
        assert_eq!(
            body_json("application/vnd.kubernetes.protobuf", b"k8s\0"),
            None
        );
        assert_eq!(body_json("application/json", b"{not json"), None);
        assert_eq!(body_json("application/json", b""), None);
    }
}
