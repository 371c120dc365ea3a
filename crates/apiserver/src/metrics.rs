//! `/metrics` in the Prometheus text format, and kube-apiserver's request
//! and storage metrics (`k8s.io/apiserver/pkg/endpoints/metrics`,
//! `pkg/storage/etcd3/metrics`), under kube's names, labels and buckets so
//! kube's dashboards and alerts work unchanged.
//!
//! One registry serves the whole process: the `prometheus` crate's default
//! registry ([`prometheus::default_registry`]), as client_golang's
//! `legacyregistry` is kube-apiserver's. Every crate registers its metrics
//! there (this module, `ubernetes_federation::metrics`,
//! `ubernetes_dns::metrics`); [`router`] serves everything it holds,
//! including the process collector (`process_cpu_seconds_total`,
//! `process_resident_memory_bytes`, … on Linux).
//!
//! Who may read it: authorization runs first, as for every path, so RBAC
//! decides (a nonResourceURL `get` on `/metrics`: the bootstrap ClusterRole
//! `system:monitoring`, bound to the group `system:monitoring`, grants it,
//! as in kube-apiserver).
//!
//! The request metrics ([`instrument`], a layer right inside authorization,
//! so it sees the request info authorization parsed and only requests that
//! got through, as kube's route instrumentation does):
//! - `apiserver_request_total` {verb, dry_run, group, version, resource,
//!   subresource, scope, component, code} and
//!   `apiserver_request_duration_seconds` (same labels but code; kube's
//!   buckets). Verbs as kube reports them: GET, LIST, WATCH, POST, PUT,
//!   PATCH, APPLY (a server-side apply patch), DELETE, CONNECT (proxy, log,
//!   exec, attach, portforward subresources), anything else `other`. A
//!   long-running request (a watch, a proxy) is counted and timed when it
//!   ends, as kube does (its duration is the stream's lifetime: kube's SLO
//!   dashboards filter `verb!~"WATCH|CONNECT"`). Paths that name no
//!   resource are not counted (kube only instruments routes), except the
//!   health endpoints (`subresource="/healthz"` etc., empty component).
//! - `apiserver_longrunning_requests` {verb, group, version, resource,
//!   subresource, scope, component}: open watches and proxies.
//! - `apiserver_current_inflight_requests` {request_kind = readOnly |
//!   mutating}: the most requests (not long-running) in flight during the
//!   last second, as kube's max-in-flight filter reports it.
//! - `apiserver_storage_objects` {resource}: objects stored per resource
//!   (`pods`, `deployments.apps`), counted from the watch caches at scrape
//!   time.

use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, LazyLock, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::header::CONTENT_TYPE;
use http::{Method, StatusCode};
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use parking_lot::Mutex;
use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{
    Encoder as _, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    TextEncoder,
};
use tokio_util::sync::CancellationToken;
use ubernetes_apimachinery::ApiError;
use ubernetes_rbac::RequestInfo;
use ubernetes_registry::Registry;

/// kube's `component` label of the API's own requests.
pub const APISERVER_COMPONENT: &str = "apiserver";

/// kube's `apiserver_request_duration_seconds` buckets (chosen there for the
/// API call latency SLOs).
const REQUEST_DURATION_BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// kube's `validRequestMethods`: other verbs are reported as `other`.
const VALID_VERBS: [&str; 14] = [
    "APPLY",
    "CONNECT",
    "CREATE",
    "DELETE",
    "DELETECOLLECTION",
    "GET",
    "LIST",
    "PATCH",
    "POST",
    "PROXY",
    "PUT",
    "UPDATE",
    "WATCH",
    "WATCHLIST",
];

/// kube's `validConnectRequests`: these subresources report `CONNECT`.
const CONNECT_SUBRESOURCES: [&str; 5] = ["log", "exec", "portforward", "attach", "proxy"];

/// kube's long-running request check (`BasicLongRunningRequestCheck`):
/// these verbs, and these subresources of a resource.
const LONG_RUNNING_VERBS: [&str; 2] = ["watch", "proxy"];
const LONG_RUNNING_SUBRESOURCES: [&str; 5] = ["attach", "exec", "proxy", "log", "portforward"];

/// The non-resource paths kube instruments (its health handlers).
const INSTRUMENTED_PATHS: [&str; 3] = ["/healthz", "/livez", "/readyz"];

/// Register `collector` in the process registry and hand it back. A second
/// registration (another server in the same test process) keeps the first.
fn register<C: Collector + Clone + 'static>(collector: C) -> C {
    if let Err(err) = prometheus::register(Box::new(collector.clone())) {
        tracing::debug!(error = %err, "metric already registered");
    }
    collector
}

struct RequestMetrics {
    total: IntCounterVec,
    duration: HistogramVec,
    longrunning: IntGaugeVec,
    inflight: IntGaugeVec,
}

static REQUESTS: LazyLock<RequestMetrics> = LazyLock::new(|| {
    let labels = [
        "verb",
        "dry_run",
        "group",
        "version",
        "resource",
        "subresource",
        "scope",
        "component",
    ];
    let mut with_code = labels.to_vec();
    with_code.push("code");
    let metrics = RequestMetrics {
        total: register(
            IntCounterVec::new(
                Opts::new(
                    "apiserver_request_total",
                    "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
                ),
                &with_code,
            )
            .expect("a valid static metric definition"),
        ),
        duration: register(
            HistogramVec::new(
                HistogramOpts::new(
                    "apiserver_request_duration_seconds",
                    "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
                )
                .buckets(REQUEST_DURATION_BUCKETS.to_vec()),
                &labels,
            )
            .expect("a valid static metric definition"),
        ),
        longrunning: register(
            IntGaugeVec::new(
                Opts::new(
                    "apiserver_longrunning_requests",
                    "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.",
                ),
                &[
                    "verb",
                    "group",
                    "version",
                    "resource",
                    "subresource",
                    "scope",
                    "component",
                ],
            )
            .expect("a valid static metric definition"),
        ),
        inflight: register(
            IntGaugeVec::new(
                Opts::new(
                    "apiserver_current_inflight_requests",
                    "Maximal number of currently used inflight request limit of this apiserver per request kind in last second.",
                ),
                &["request_kind"],
            )
            .expect("a valid static metric definition"),
        ),
    };
    for kind in [READ_ONLY, MUTATING] {
        metrics.inflight.with_label_values(&[kind]).set(0);
    }
    metrics
});

/// kube's request kinds of `apiserver_current_inflight_requests`.
pub const READ_ONLY: &str = "readOnly";
pub const MUTATING: &str = "mutating";

/// The labels of one request in `apiserver_request_total` (without `code`)
/// and `apiserver_request_duration_seconds`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestLabels {
    pub verb: &'static str,
    pub dry_run: String,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    pub scope: &'static str,
    pub component: &'static str,
}

impl RequestLabels {
    /// The labels kube gives `info` (the request info authorization
    /// parsed), or `None` for a request kube does not instrument (a path
    /// that names no resource, other than the health endpoints).
    pub fn of(
        method: &Method,
        query: &str,
        content_type: Option<&str>,
        info: &RequestInfo,
    ) -> Option<Self> {
        if !info.is_resource_request {
            let path = INSTRUMENTED_PATHS
                .iter()
                .find(|p| **p == info.path.as_str())?;
            return Some(Self {
                verb: reported_verb(method, "", content_type, info),
                dry_run: dry_run(query),
                group: String::new(),
                version: String::new(),
                resource: String::new(),
                subresource: (*path).to_string(),
                scope: "",
                component: "",
            });
        }
        let scope = scope(method, info);
        Some(Self {
            verb: reported_verb(method, scope, content_type, info),
            dry_run: dry_run(query),
            group: info.api_group.clone(),
            version: info.api_version.clone(),
            resource: info.resource.clone(),
            subresource: info.subresource.clone(),
            scope,
            component: APISERVER_COMPONENT,
        })
    }

    fn values(&self) -> [&str; 8] {
        [
            self.verb,
            &self.dry_run,
            &self.group,
            &self.version,
            &self.resource,
            &self.subresource,
            self.scope,
            self.component,
        ]
    }

    fn longrunning_values(&self) -> [&str; 7] {
        [
            self.verb,
            &self.group,
            &self.version,
            &self.resource,
            &self.subresource,
            self.scope,
            self.component,
        ]
    }
}

/// The scope kube's installer gives a route: `resource` for a named object
/// or a create, `namespace` inside a namespace, else `cluster`; empty for a
/// non-resource path. (A list whose field selector names one object stays a
/// list: the name comes from the path only, as the installer's routes.)
fn scope(method: &Method, info: &RequestInfo) -> &'static str {
    if !info.is_resource_request {
        ""
    } else if info.parts.len() >= 2 || method == Method::POST {
        "resource"
    } else if !info.namespace.is_empty() {
        "namespace"
    } else {
        "cluster"
    }
}

/// kube's `cleanVerb(CanonicalVerb(method, scope), …)`: one of
/// [`VALID_VERBS`] or `other` (static: no string per request).
fn reported_verb(
    method: &Method,
    scope: &str,
    content_type: Option<&str>,
    info: &RequestInfo,
) -> &'static str {
    // kube upper-cases the method; the comparisons ignore case instead.
    let method = method.as_str();
    let mut verb = if method.eq_ignore_ascii_case("GET") || method.eq_ignore_ascii_case("HEAD") {
        if scope != "resource" && !scope.is_empty() {
            "LIST"
        } else {
            "GET"
        }
    } else {
        method
    };
    if info.verb == "watch" {
        verb = "WATCH";
    }
    if verb.eq_ignore_ascii_case("PATCH") && content_type == Some("application/apply-patch+yaml") {
        verb = "APPLY";
    }
    if info.is_resource_request && CONNECT_SUBRESOURCES.contains(&info.subresource.as_str()) {
        verb = "CONNECT";
    }
    VALID_VERBS
        .iter()
        .find(|valid| valid.eq_ignore_ascii_case(verb))
        .copied()
        .unwrap_or("other")
}

/// kube's `cleanDryRun`: the sorted, de-duplicated `dryRun` values, or
/// `invalid` when one is not `All`.
fn dry_run(query: &str) -> String {
    if !query.contains("dryRun") {
        return String::new();
    }
    let mut values: Vec<String> = form_urlencoded::parse(query.as_bytes())
        .filter(|(k, _)| k == "dryRun")
        .map(|(_, v)| v.into_owned())
        .collect();
    if values.iter().any(|v| v != "All") {
        return "invalid".to_string();
    }
    values.sort();
    values.dedup();
    values.join(",")
}

/// kube's long-running check on the request info.
fn is_long_running(info: &RequestInfo) -> bool {
    LONG_RUNNING_VERBS.contains(&info.verb.as_str())
        || (info.is_resource_request
            && LONG_RUNNING_SUBRESOURCES.contains(&info.subresource.as_str()))
}

pub use crate::response::NoRoute;

fn record(labels: &RequestLabels, code: StatusCode, elapsed: Duration) {
    let m = &*REQUESTS;
    let values = labels.values();
    let [a, b, c, d, e, f, g, h] = values;
    // `as_str`: the code's digits, static (no string per request).
    m.total
        .with_label_values(&[a, b, c, d, e, f, g, h, code.as_str()])
        .inc();
    m.duration
        .with_label_values(&values)
        .observe(elapsed.as_secs_f64());
}

// ---------------------------------------------------------------------------
// in-flight requests

struct Inflight {
    current: [AtomicI64; 2],
    /// The most in flight since the last publication.
    high: [AtomicI64; 2],
}

static INFLIGHT: Inflight = Inflight {
    current: [AtomicI64::new(0), AtomicI64::new(0)],
    high: [AtomicI64::new(0), AtomicI64::new(0)],
};

/// One request in flight; counted until dropped.
struct InflightGuard(usize);

impl InflightGuard {
    fn enter(mutating: bool) -> Self {
        let i = usize::from(mutating);
        let now = INFLIGHT.current[i].fetch_add(1, Ordering::AcqRel) + 1;
        INFLIGHT.high[i].fetch_max(now, Ordering::AcqRel);
        Self(i)
    }
}

impl Drop for InflightGuard {
    fn drop(&mut self) {
        INFLIGHT.current[self.0].fetch_sub(1, Ordering::AcqRel);
    }
}

/// Set `apiserver_current_inflight_requests` to the most requests in flight
/// since the last call, and start a new window.
fn publish_inflight() {
    for (i, kind) in [READ_ONLY, MUTATING].into_iter().enumerate() {
        let current = INFLIGHT.current[i].load(Ordering::Acquire);
        let high = INFLIGHT.high[i].swap(current, Ordering::AcqRel);
        REQUESTS
            .inflight
            .with_label_values(&[kind])
            .set(high.max(current));
    }
}

/// Publish the in-flight high-water mark once a second until `stop` (kube's
/// max-in-flight filter does the same, hence "in last second").
pub async fn publish_inflight_every_second(stop: CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => publish_inflight(),
        }
    }
}

// ---------------------------------------------------------------------------
// the layer

/// Counted and timed when the stream of a long-running request ends: the
/// `apiserver_longrunning_requests` gauge goes down, and the request is
/// recorded as kube records it when its handler returns.
struct StreamEnd {
    labels: RequestLabels,
    code: StatusCode,
    start: Instant,
    gauge: IntGauge,
}

impl Drop for StreamEnd {
    fn drop(&mut self) {
        self.gauge.dec();
        record(&self.labels, self.code, self.start.elapsed());
    }
}

/// A response body that records its [`StreamEnd`] when dropped (ended or
/// abandoned by the client), passing frames, end and size hints through.
struct Tracked {
    inner: Body,
    _end: StreamEnd,
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The request metrics layer (see the module documentation); use with
/// `axum::middleware::from_fn(instrument)` right inside authorization.
pub async fn instrument(request: Request, next: Next) -> Response {
    instrument_run(request, |request| next.run(request)).await
}

/// [`instrument`] around `run` (the rest of the chain): the server's folded
/// filter calls it so that the metrics, the body limit and the Status for
/// axum's empty errors are one layer (one boxed future per request, not
/// three).
pub(crate) async fn instrument_run<F, Fut>(request: Request, run: F) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let start = Instant::now();
    // Read from the request in place (no copy of its query, request info
    // or content type): the labels are all that outlives this block.
    let (labels, long_running, mutating) = {
        let query = request.uri().query().unwrap_or("");
        // Authorization leaves the request info it parsed; the fallback
        // (the same parser) is for chains without it.
        let parsed;
        let info = match request.extensions().get::<RequestInfo>() {
            Some(info) => info,
            None => {
                parsed = RequestInfo::parse_lenient(
                    request.method().as_str(),
                    request.uri().path(),
                    query,
                );
                &parsed
            }
        };
        let content_type = request
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or(v).trim());
        (
            RequestLabels::of(request.method(), query, content_type, info),
            is_long_running(info),
            !matches!(info.verb.as_str(), "get" | "list" | "watch"),
        )
    };

    if !long_running {
        let _inflight = InflightGuard::enter(mutating);
        let response = run(request).await;
        if let Some(labels) = labels
            && response.extensions().get::<NoRoute>().is_none()
        {
            record(&labels, response.status(), start.elapsed());
        }
        return response;
    }

    let Some(labels) = labels else {
        return run(request).await;
    };
    let gauge = REQUESTS
        .longrunning
        .with_label_values(&labels.longrunning_values());
    gauge.inc();
    let response = run(request).await;
    if response.extensions().get::<NoRoute>().is_some() {
        gauge.dec();
        return response;
    }
    let (parts, body) = response.into_parts();
    let end = StreamEnd {
        labels,
        code: parts.status,
        start,
        gauge,
    };
    Response::from_parts(
        parts,
        Body::new(Tracked {
            inner: body,
            _end: end,
        }),
    )
}

// ---------------------------------------------------------------------------
// storage objects

/// `apiserver_storage_objects`, counted from the watch caches of the
/// registry last given to [`watch_storage`] when scraped.
struct StorageObjects {
    gauge: IntGaugeVec,
    /// Held while filling and collecting, so two scrapes do not interleave.
    lock: Mutex<()>,
}

static STORAGE_SOURCE: LazyLock<Mutex<Weak<Registry>>> = LazyLock::new(|| Mutex::new(Weak::new()));

impl Collector for StorageObjects {
    fn desc(&self) -> Vec<&Desc> {
        self.gauge.desc()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let _one = self.lock.lock();
        self.gauge.reset();
        let registry = STORAGE_SOURCE.lock().upgrade();
        if let Some(registry) = registry {
            // Versions of one resource may share a storage prefix (count it
            // once) or have prefixes of their own (add them up).
            let mut seen = std::collections::BTreeSet::new();
            let mut counts = std::collections::BTreeMap::<String, i64>::new();
            for store in registry.stores() {
                let prefix = store.list_prefix(None);
                if !seen.insert(prefix.clone()) {
                    continue;
                }
                let info = store.info();
                let resource = if info.group.is_empty() {
                    info.resource.clone()
                } else {
                    format!("{}.{}", info.resource, info.group)
                };
                let (items, _, more) = store.cache().list(&prefix, None, None, 1);
                let n = i64::try_from(items.len() as u64 + more).unwrap_or(i64::MAX);
                *counts.entry(resource).or_default() += n;
            }
            for (resource, n) in counts {
                self.gauge.with_label_values(&[&resource]).set(n);
            }
        }
        self.gauge.collect()
    }
}

static STORAGE_OBJECTS: LazyLock<()> = LazyLock::new(|| {
    let collector = StorageObjects {
        gauge: IntGaugeVec::new(
            Opts::new(
                "apiserver_storage_objects",
                "Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
            ),
            &["resource"],
        )
        .expect("a valid static metric definition"),
        lock: Mutex::new(()),
    };
    if let Err(err) = prometheus::register(Box::new(collector)) {
        tracing::warn!(error = %err, "cannot register apiserver_storage_objects");
    }
});

/// Count `apiserver_storage_objects` from `registry`'s stores (the latest
/// server started in this process).
pub fn watch_storage(registry: &Arc<Registry>) {
    LazyLock::force(&STORAGE_OBJECTS);
    *STORAGE_SOURCE.lock() = Arc::downgrade(registry);
}

// ---------------------------------------------------------------------------
// the endpoint

/// `GET /metrics`: every metric of the process registry, in the Prometheus
/// text format (version 0.0.4).
pub fn router() -> Router {
    Router::new().route("/metrics", get(serve_metrics))
}

async fn serve_metrics() -> Response {
    LazyLock::force(&REQUESTS);
    let encoder = TextEncoder::new();
    let mut text = Vec::new();
    if let Err(err) = encoder.encode(&prometheus::gather(), &mut text) {
        return crate::response::status_response(&ApiError::internal(format!(
            "encoding the metrics: {err}"
        )));
    }
    (
        StatusCode::OK,
        [(CONTENT_TYPE, encoder.format_type().to_string())],
        text,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(method: Method, uri: &str, content_type: Option<&str>) -> Option<RequestLabels> {
        let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
        let info = RequestInfo::parse_lenient(method.as_str(), path, query);
        RequestLabels::of(&method, query, content_type, &info)
    }

    /// (verb, group, version, resource, subresource, scope, component).
    fn short(l: &RequestLabels) -> (&str, &str, &str, &str, &str, &str, &str) {
        (
            l.verb,
            &l.group,
            &l.version,
            &l.resource,
            &l.subresource,
            l.scope,
            l.component,
        )
    }

    #[test]
    fn reads_get_the_verbs_and_scopes_kube_reports() {
        let l = labels(Method::GET, "/api/v1/namespaces/a/pods", None).expect("instrumented");
        assert_eq!(
            short(&l),
            ("LIST", "", "v1", "pods", "", "namespace", "apiserver")
        );
        let l = labels(Method::GET, "/api/v1/namespaces/a/pods/p", None).expect("instrumented");
        assert_eq!(short(&l).0, "GET");
        assert_eq!(short(&l).5, "resource");
        let l = labels(Method::GET, "/apis/apps/v1/deployments", None).expect("instrumented");
        assert_eq!(
            short(&l),
            (
                "LIST",
                "apps",
                "v1",
                "deployments",
                "",
                "cluster",
                "apiserver"
            )
        );
        let l = labels(Method::GET, "/api/v1/namespaces", None).expect("instrumented");
        assert_eq!((short(&l).0, short(&l).5), ("LIST", "cluster"));
        let l = labels(Method::GET, "/api/v1/namespaces/a", None).expect("instrumented");
        assert_eq!((short(&l).0, short(&l).5), ("GET", "resource"));
        // A list whose field selector names one object is still a list.
        let l = labels(
            Method::GET,
            "/api/v1/namespaces/a/pods?fieldSelector=metadata.name%3Dp",
            None,
        )
        .expect("instrumented");
        assert_eq!((short(&l).0, short(&l).5), ("LIST", "namespace"));
    }

    #[test]
    fn watches_by_query_or_path_are_watch() {
        for uri in [
            "/api/v1/namespaces/a/configmaps?watch=true",
            "/api/v1/namespaces/a/configmaps?watch=1&resourceVersion=5",
            "/api/v1/watch/namespaces/a/configmaps",
        ] {
            let l = labels(Method::GET, uri, None).expect("instrumented");
            assert_eq!(
                (short(&l).0, short(&l).3, short(&l).5),
                ("WATCH", "configmaps", "namespace"),
                "{uri}"
            );
        }
        let l = labels(Method::GET, "/api/v1/configmaps?watch=false", None).expect("instrumented");
        assert_eq!(short(&l).0, "LIST");
    }

    #[test]
    fn writes_keep_the_method_and_apply_and_connect_are_told_apart() {
        let l = labels(Method::POST, "/api/v1/namespaces/a/configmaps", None).expect("x");
        assert_eq!((short(&l).0, short(&l).5), ("POST", "resource"));
        let l = labels(Method::PUT, "/api/v1/namespaces/a/configmaps/c", None).expect("x");
        assert_eq!(short(&l).0, "PUT");
        let l = labels(
            Method::PATCH,
            "/apis/apps/v1/namespaces/a/deployments/d/status",
            Some("application/merge-patch+json"),
        )
        .expect("x");
        assert_eq!(
            (short(&l).0, short(&l).4, short(&l).5),
            ("PATCH", "status", "resource")
        );
        let l = labels(
            Method::PATCH,
            "/api/v1/namespaces/a/configmaps/c",
            Some("application/apply-patch+yaml"),
        )
        .expect("x");
        assert_eq!(short(&l).0, "APPLY");
        // deletecollection is reported as DELETE, as kube does.
        let l = labels(Method::DELETE, "/api/v1/namespaces/a/configmaps", None).expect("x");
        assert_eq!((short(&l).0, short(&l).5), ("DELETE", "namespace"));
        let l = labels(
            Method::GET,
            "/apis/federation.ubernetes.io/v1beta1/clusters/east/proxy/api/v1/pods",
            None,
        )
        .expect("x");
        assert_eq!(
            (short(&l).0, short(&l).3, short(&l).4),
            ("CONNECT", "clusters", "proxy")
        );
        let l = labels(Method::OPTIONS, "/api/v1/pods", None).expect("x");
        assert_eq!(short(&l).0, "other");
    }

    #[test]
    fn dry_run_is_all_or_invalid() {
        assert_eq!(dry_run(""), "");
        assert_eq!(dry_run("dryRun=All"), "All");
        assert_eq!(dry_run("dryRun=All&dryRun=All"), "All");
        assert_eq!(dry_run("dryRun=Some"), "invalid");
        let l = labels(
            Method::POST,
            "/api/v1/namespaces/a/configmaps?dryRun=All",
            None,
        )
        .expect("x");
        assert_eq!(l.dry_run, "All");
    }

    #[test]
    fn only_the_health_endpoints_count_among_non_resource_paths() {
        let l = labels(Method::GET, "/readyz", None).expect("instrumented");
        assert_eq!(short(&l), ("GET", "", "", "", "/readyz", "", ""));
        assert!(labels(Method::GET, "/metrics", None).is_none());
        assert!(labels(Method::GET, "/apis", None).is_none());
        assert!(labels(Method::GET, "/openapi/v2", None).is_none());
        assert!(labels(Method::GET, "/readyz/etcd", None).is_none());
    }

    #[test]
    fn watches_and_proxies_are_long_running() {
        let info = |m: &str, uri: &str| {
            let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
            RequestInfo::parse_lenient(m, path, query)
        };
        assert!(is_long_running(&info("GET", "/api/v1/pods?watch=true")));
        assert!(is_long_running(&info(
            "GET",
            "/apis/federation.ubernetes.io/v1beta1/clusters/a/proxy/x"
        )));
        assert!(!is_long_running(&info("GET", "/api/v1/pods")));
        assert!(!is_long_running(&info("POST", "/api/v1/namespaces/a/pods")));
    }

    async fn scrape() -> String {
        let resp = serve_metrics().await;
        assert_eq!(resp.status(), StatusCode::OK);
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .expect("body");
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn sample(text: &str, prefix: &str) -> Option<f64> {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    }

    #[tokio::test]
    async fn the_layer_counts_a_request_with_its_labels_and_times_it() {
        use tower::ServiceExt as _;
        let app = Router::new()
            .route(
                "/apis/metricstest.example/v1/namespaces/a/widgets",
                get(|| async { (StatusCode::ACCEPTED, "ok") }),
            )
            .layer(axum::middleware::from_fn(instrument));
        let series = r#"apiserver_request_total{code="202",component="apiserver",dry_run="",group="metricstest.example",resource="widgets",scope="namespace",subresource="",verb="LIST",version="v1"}"#;
        let before = sample(&scrape().await, series).unwrap_or(0.0);
        for _ in 0..2 {
            let req = http::Request::get("/apis/metricstest.example/v1/namespaces/a/widgets")
                .body(Body::empty())
                .expect("request");
            let resp = app.clone().oneshot(req).await.expect("infallible");
            assert_eq!(resp.status(), StatusCode::ACCEPTED);
        }
        let text = scrape().await;
        assert_eq!(sample(&text, series), Some(before + 2.0), "{text}");
        let count = r#"apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="metricstest.example",resource="widgets",scope="namespace",subresource="",verb="LIST",version="v1"}"#;
        assert!(sample(&text, count).is_some_and(|n| n >= 2.0), "{text}");
        // kube's first bucket.
        assert!(
            text.contains(r#"apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="metricstest.example",resource="widgets",scope="namespace",subresource="",verb="LIST",version="v1",le="0.005"}"#),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_watch_is_open_in_the_long_running_gauge_until_its_stream_ends() {
        use futures::StreamExt as _;
        use tower::ServiceExt as _;
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(1);
        let rx = Arc::new(Mutex::new(Some(rx)));
        let app = Router::new()
            .route(
                "/apis/metricstest.example/v1/gadgets",
                get(move || {
                    let rx = rx.lock().take();
                    async move {
                        match rx {
                            Some(rx) => {
                                Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx))
                            }
                            None => Body::empty(),
                        }
                    }
                }),
            )
            .layer(axum::middleware::from_fn(instrument));
        let gauge = r#"apiserver_longrunning_requests{component="apiserver",group="metricstest.example",resource="gadgets",scope="cluster",subresource="",verb="WATCH",version="v1"}"#;
        let total = r#"apiserver_request_total{code="200",component="apiserver",dry_run="",group="metricstest.example",resource="gadgets",scope="cluster",subresource="",verb="WATCH",version="v1"}"#;
        let req = http::Request::get("/apis/metricstest.example/v1/gadgets?watch=true")
            .body(Body::empty())
            .expect("request");
        let resp = app.oneshot(req).await.expect("infallible");
        tx.send(Ok(Bytes::from_static(b"{}\n")))
            .await
            .expect("send");
        let mut body = resp.into_body().into_data_stream();
        assert!(body.next().await.is_some());
        let open = scrape().await;
        assert_eq!(sample(&open, gauge), Some(1.0), "{open}");
        assert_eq!(sample(&open, total), None, "counted when it ends");
        drop(tx);
        assert!(body.next().await.is_none());
        drop(body);
        let ended = scrape().await;
        assert_eq!(sample(&ended, gauge), Some(0.0), "{ended}");
        assert_eq!(sample(&ended, total), Some(1.0), "{ended}");
    }

    #[tokio::test]
    async fn an_unrouted_path_is_not_counted() {
        use tower::ServiceExt as _;
        let app = Router::new()
            .fallback(|| async {
                let mut r = (StatusCode::NOT_FOUND, "").into_response();
                r.extensions_mut().insert(NoRoute);
                r
            })
            .layer(axum::middleware::from_fn(instrument));
        let req = http::Request::get("/apis/metricstest.example/v1/nosuchthings")
            .body(Body::empty())
            .expect("request");
        let resp = app.oneshot(req).await.expect("infallible");
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        assert!(!scrape().await.contains("nosuchthings"));
    }

    #[test]
    fn in_flight_requests_publish_their_high_water_mark() {
        let a = InflightGuard::enter(true);
        let b = InflightGuard::enter(true);
        drop(a);
        drop(b);
        publish_inflight();
        assert!(REQUESTS.inflight.with_label_values(&[MUTATING]).get() >= 2);
    }
}
