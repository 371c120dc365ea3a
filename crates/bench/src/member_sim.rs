//! A member simulator for `bench federation --simulated-members M` (issue 21
//! item 5), as kwok simulates nodes: M **simulated** member Kubernetes APIs
//! served by tasks of the bench process, each on its own `127.0.0.1` port
//! with TLS (a serving certificate of a dev PKI, `ubernetes-certs`), so the
//! host joins each exactly as a real member (Secret with a kubeconfig +
//! Cluster). Used only by the bench; every figure measured against it says
//! "simulated".
//!
//! Each member keeps per object only its JSON as served (the applied
//! fields plus `uid`, `resourceVersion`, `creationTimestamp`, one
//! `managedFields` entry), its labels (for selectors) and a hash of the
//! applied fields (a server-side apply that changes nothing is no write,
//! as in kube). It answers what the host sends a member:
//!
//! - server-side apply (`PATCH` `application/apply-patch+yaml`): create or
//!   update, `resourceVersion` bumped on a change only, never a 409; into a
//!   namespace that does not exist: 404, as kube (the host creates the
//!   namespace first and applies again);
//! - `GET`, `LIST` (label selector; `metadata.name`/`metadata.namespace`
//!   field selectors; `limit`/`continue`), `WATCH` from a resourceVersion
//!   (a history of the member's last writes; older: 410 Gone as an `ERROR`
//!   event, as kube's watch cache), `BOOKMARK`s when asked, the watch ends
//!   after `timeoutSeconds`;
//! - `POST` (create; `*reviews` are answered allowed), `PUT`, merge patch,
//!   `DELETE` (with a uid precondition);
//! - `/version`, `/readyz`, `/healthz`, `/livez`, `/api`, `/apis`,
//!   `/api/v1`, `/apis/G/V`; anything else: a 404 `Status` (counted per
//!   path, see [`Sim::unknown_paths`]).
//!
//! Each member counts its writes (its revision) itself, so the restart
//! scenario reads "0 member writes" from the simulator, and an
//! [`Observer`] learns of every write (the bench's tracker: when a copy
//! arrived).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::convert::Infallible;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use futures::StreamExt;
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use serde_json::{Map, Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;

/// Writes kept per member for watches that start from an older revision.
const HISTORY: usize = 4096;
/// How often a watch that asked for bookmarks gets one.
const BOOKMARK_EVERY: Duration = Duration::from_secs(30);
/// The namespace resource (namespaced writes need their namespace).
const NAMESPACES: &str = "api/v1/namespaces";

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// What kind of write a member saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    /// The object did not exist.
    Created,
    /// The object existed and changed.
    Modified,
    /// The object was deleted.
    Deleted,
}

/// Learns of every write of every simulated member (called under the
/// member's lock: keep it short).
pub trait Observer: Send + Sync {
    /// Member `member` wrote `ns/name` of `resource` (`api/v1/configmaps`).
    fn wrote(
        &self,
        member: usize,
        kind: WriteKind,
        resource: &str,
        ns: &str,
        name: &str,
        labels: &Labels,
    );
}

/// An object's labels.
pub type Labels = Vec<(String, String)>;

/// One stored object.
struct Obj {
    /// The JSON as served.
    bytes: Bytes,
    rv: u64,
    uid: String,
    labels: Labels,
    /// Hash of the applied fields (0: not written by an apply).
    applied: u64,
}

/// One resource (`api/v1/configmaps`) of one member.
#[derive(Default)]
struct Resource {
    /// Keyed by (namespace, name); "" for cluster-scoped.
    objects: BTreeMap<(String, String), Arc<Obj>>,
    watchers: Vec<Watcher>,
    /// The kind and apiVersion its objects were written with (bookmarks).
    kind: Option<(String, String)>,
}

/// A watch: its filter and where its events go.
struct Watcher {
    ns: Option<String>,
    filter: Filter,
    tx: mpsc::UnboundedSender<Bytes>,
}

/// One write in the member's history.
struct Event {
    rv: u64,
    kind: WriteKind,
    resource: Arc<str>,
    ns: String,
    name: String,
    obj: Arc<Obj>,
}

#[derive(Default)]
struct State {
    rev: u64,
    resources: HashMap<Arc<str>, Resource>,
    history: VecDeque<Event>,
}

/// One simulated member.
struct Member {
    index: usize,
    state: parking_lot::Mutex<State>,
    rev: AtomicU64,
    unknown: parking_lot::Mutex<BTreeMap<String, u64>>,
    /// Requests by shape (see [`shape`]).
    requests: parking_lot::Mutex<BTreeMap<String, u64>>,
    observer: Option<Arc<dyn Observer>>,
}

/// M simulated members serving on 127.0.0.1; stops serving when dropped.
pub struct Sim {
    members: Vec<Arc<Member>>,
    urls: Vec<String>,
    kubeconfigs: Vec<String>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    _pki: tempfile::TempDir,
}

impl Drop for Sim {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Sim {
    /// Start `count` simulated members, each on its own port with TLS.
    pub async fn start(count: usize, observer: Option<Arc<dyn Observer>>) -> Result<Self> {
        let pki_dir = tempfile::Builder::new()
            .prefix("ubernetes-member-sim-")
            .tempdir()
            .context("a temporary dir for the simulator's certificates")?;
        let pki = ubernetes_certs::ensure_dev_pki(pki_dir.path(), &[])
            .context("the simulator's certificates")?;
        let acceptor = tls_acceptor(&pki.serving.cert_pem, &pki.serving.key_pem)?;
        let mut sim = Sim {
            members: Vec::with_capacity(count),
            urls: Vec::with_capacity(count),
            kubeconfigs: Vec::with_capacity(count),
            tasks: Vec::with_capacity(count),
            _pki: pki_dir,
        };
        for index in 0..count {
            let listener = TcpListener::bind("127.0.0.1:0")
                .await
                .context("binding a simulated member's port")?;
            let url = format!("https://{}", listener.local_addr()?);
            let member = Arc::new(Member {
                index,
                state: parking_lot::Mutex::new(State::default()),
                rev: AtomicU64::new(0),
                unknown: parking_lot::Mutex::new(BTreeMap::new()),
                requests: parking_lot::Mutex::new(BTreeMap::new()),
                observer: observer.clone(),
            });
            sim.kubeconfigs.push(ubernetes_certs::kubeconfig_yaml(
                &url,
                &pki.ca.cert_pem,
                &pki.admin.cert_pem,
                &pki.admin.key_pem,
                &format!("sim-{index}"),
            ));
            sim.urls.push(url);
            sim.tasks.push(tokio::spawn(serve(
                listener,
                acceptor.clone(),
                member.clone(),
            )));
            sim.members.push(member);
        }
        Ok(sim)
    }

    /// How many members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Member `i`'s URL (`https://127.0.0.1:PORT`).
    pub fn url(&self, i: usize) -> &str {
        &self.urls[i]
    }

    /// Member `i`'s admin kubeconfig (text).
    pub fn kubeconfig(&self, i: usize) -> &str {
        &self.kubeconfigs[i]
    }

    /// Each member's revision (its writes so far).
    pub fn revisions(&self) -> Vec<u64> {
        self.members
            .iter()
            .map(|m| m.rev.load(Ordering::Relaxed))
            .collect()
    }

    /// Member `i`'s writes after revision `rev` (from its history), as
    /// `KIND resource ns/name`.
    pub fn writes_since(&self, i: usize, rev: u64) -> Vec<String> {
        let Some(m) = self.members.get(i) else {
            return Vec::new();
        };
        let st = m.state.lock();
        st.history
            .iter()
            .filter(|e| e.rv > rev)
            .map(|e| format!("{:?} {} {}/{}", e.kind, e.resource, e.ns, e.name))
            .collect()
    }

    /// Whether member `i` holds `ns/name` of `resource` (`api/v1/namespaces`, "" for cluster-scoped).
    pub fn has(&self, i: usize, resource: &str, ns: &str, name: &str) -> bool {
        self.members.get(i).is_some_and(|m| {
            m.state
                .lock()
                .resources
                .get(resource)
                .is_some_and(|r| r.objects.contains_key(&(ns.to_owned(), name.to_owned())))
        })
    }

    /// Objects stored over all members.
    pub fn objects(&self) -> usize {
        self.members
            .iter()
            .map(|m| {
                m.state
                    .lock()
                    .resources
                    .values()
                    .map(|r| r.objects.len())
                    .sum::<usize>()
            })
            .sum()
    }

    /// Every request the members answered, by shape (`PATCH
    /// api/v1/configmaps/{ns}/{name} application/apply-patch+yaml
    /// ?fieldManager&force` → count, over all members).
    pub fn requests(&self) -> BTreeMap<String, u64> {
        let mut all = BTreeMap::new();
        for m in &self.members {
            for (k, v) in m.requests.lock().iter() {
                *all.entry(k.clone()).or_insert(0) += v;
            }
        }
        all
    }

    /// Requests answered 404 because the simulator does not serve the
    /// path (`METHOD path` → count, over all members).
    pub fn unknown_paths(&self) -> BTreeMap<String, u64> {
        let mut all = BTreeMap::new();
        for m in &self.members {
            for (k, v) in m.unknown.lock().iter() {
                *all.entry(k.clone()).or_insert(0) += v;
            }
        }
        all
    }
}

fn tls_acceptor(cert_pem: &str, key_pem: &str) -> Result<TlsAcceptor> {
    let certs = rustls_pemfile::certs(&mut cert_pem.as_bytes())
        .collect::<std::result::Result<Vec<_>, _>>()
        .context("the serving certificate")?;
    let key = rustls_pemfile::private_key(&mut key_pem.as_bytes())
        .context("the serving key")?
        .context("no serving key")?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .context("TLS versions")?
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .context("the serving certificate and key")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Accept connections of one member until aborted.
async fn serve(listener: TcpListener, acceptor: TlsAcceptor, member: Arc<Member>) {
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let member = member.clone();
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let service = hyper::service::service_fn(move |req| {
                let member = member.clone();
                async move { Ok::<_, Infallible>(handle(&member, req).await) }
            });
            let _ =
                hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new())
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
        });
    }
}

fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).boxed_unsync());
    *r.status_mut() = status;
    if let Ok(v) = http::HeaderValue::from_str(content_type) {
        r.headers_mut().insert(http::header::CONTENT_TYPE, v);
    }
    r
}

fn json_response(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    full(status, "application/json", body)
}

/// A `Status` failure, as kube answers one.
fn status(code: StatusCode, reason: &str, message: &str) -> Response<Body> {
    let v = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": message, "reason": reason, "code": code.as_u16()});
    json_response(code, v.to_string())
}

/// The path of a request, split: `(resource key, namespace, name, subresource)`.
#[derive(Debug, PartialEq, Eq)]
struct Target {
    /// `api/v1/configmaps`, `apis/apps/v1/deployments`.
    resource: String,
    /// `Some` for a namespaced path.
    ns: Option<String>,
    name: Option<String>,
    sub: Option<String>,
}

/// Split an API path into its [`Target`]; `None` for what is not a
/// resource path.
fn target(path: &str) -> Option<Target> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (prefix, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => (format!("api/{v}"), rest),
        ["apis", g, v, rest @ ..] => (format!("apis/{g}/{v}"), rest),
        _ => return None,
    };
    let own = |s: &&str| Some((*s).to_owned());
    let t = |res: &str, ns: Option<&&str>, name: Option<&&str>, sub: Option<&&str>| Target {
        resource: format!("{prefix}/{res}"),
        ns: ns.and_then(own),
        name: name.and_then(own),
        sub: sub.and_then(own),
    };
    Some(match rest {
        [res] => t(res, None, None, None),
        ["namespaces", ns, sub @ ("status" | "finalize")] => {
            t("namespaces", None, Some(ns), Some(sub))
        }
        ["namespaces", ns, res] => t(res, Some(ns), None, None),
        ["namespaces", ns, res, name] => t(res, Some(ns), Some(name), None),
        ["namespaces", ns, res, name, sub] => t(res, Some(ns), Some(name), Some(sub)),
        [res, name] => t(res, None, Some(name), None),
        [res, name, sub] => t(res, None, Some(name), Some(sub)),
        _ => return None,
    })
}

/// Percent-decoding of a query value (`+` is a space).
fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                match std::str::from_utf8(&b[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(v) => {
                        out.push(v);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn query(uri: &http::Uri) -> HashMap<String, String> {
    uri.query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(p), String::new()),
        })
        .collect()
}

/// One term of a label selector.
#[derive(Debug, Clone, PartialEq)]
enum Term {
    Eq(String, String),
    Ne(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    Absent(String),
}

/// A label selector and the name/namespace field selectors.
#[derive(Debug, Clone, Default, PartialEq)]
struct Filter {
    terms: Vec<Term>,
    name: Option<String>,
    namespace: Option<String>,
}

/// Split at commas outside parentheses.
fn split_terms(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[start..].trim());
    out.into_iter().filter(|t| !t.is_empty()).collect()
}

impl Filter {
    fn parse(labels: Option<&String>, fields: Option<&String>) -> Self {
        let mut f = Filter::default();
        for t in labels.map(|s| split_terms(s)).unwrap_or_default() {
            let set = |v: &str| -> Vec<String> {
                v.trim()
                    .trim_start_matches('(')
                    .trim_end_matches(')')
                    .split(',')
                    .map(|s| s.trim().to_owned())
                    .collect()
            };
            let term = if let Some((k, v)) = t.split_once(" notin ") {
                Term::NotIn(k.trim().to_owned(), set(v))
            } else if let Some((k, v)) = t.split_once(" in ") {
                Term::In(k.trim().to_owned(), set(v))
            } else if let Some((k, v)) = t.split_once("!=") {
                Term::Ne(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some((k, v)) = t.split_once("==").or_else(|| t.split_once('=')) {
                Term::Eq(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some(k) = t.strip_prefix('!') {
                Term::Absent(k.trim().to_owned())
            } else {
                Term::Exists(t.to_owned())
            };
            f.terms.push(term);
        }
        for t in fields.map(|s| split_terms(s)).unwrap_or_default() {
            if let Some((k, v)) = t.split_once("==").or_else(|| t.split_once('=')) {
                match k.trim() {
                    "metadata.name" => f.name = Some(v.trim().to_owned()),
                    "metadata.namespace" => f.namespace = Some(v.trim().to_owned()),
                    other => {
                        tracing::debug!(field = other, "simulated member ignores a field selector")
                    }
                }
            }
        }
        f
    }

    fn matches(&self, ns: &str, name: &str, labels: &Labels) -> bool {
        let get = |k: &str| labels.iter().find(|(l, _)| l == k).map(|(_, v)| v.as_str());
        self.name.as_deref().is_none_or(|n| n == name)
            && self.namespace.as_deref().is_none_or(|n| n == ns)
            && self.terms.iter().all(|t| match t {
                Term::Eq(k, v) => get(k) == Some(v),
                Term::Ne(k, v) => get(k) != Some(v),
                Term::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
                Term::NotIn(k, vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
                Term::Exists(k) => get(k).is_some(),
                Term::Absent(k) => get(k).is_none(),
            })
    }
}

/// Hash of a JSON value with object keys in sorted order (equal values,
/// equal hashes, whatever the key order).
fn value_hash(v: &Value, h: &mut std::collections::hash_map::DefaultHasher) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => (2u8, n.to_string()).hash(h),
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(a) => {
            (4u8, a.len()).hash(h);
            for x in a {
                value_hash(x, h);
            }
        }
        Value::Object(m) => {
            (5u8, m.len()).hash(h);
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for k in keys {
                k.hash(h);
                value_hash(&m[k], h);
            }
        }
    }
}

fn applied_hash(v: &Value) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    value_hash(v, &mut h);
    h.finish().max(1)
}

fn labels_of(v: &Value) -> Labels {
    v.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// A watch event line.
fn event_line(kind: &str, obj: &[u8]) -> Bytes {
    let mut b = Vec::with_capacity(obj.len() + 32);
    b.extend_from_slice(b"{\"type\":\"");
    b.extend_from_slice(kind.as_bytes());
    b.extend_from_slice(b"\",\"object\":");
    b.extend_from_slice(obj);
    b.extend_from_slice(b"}\n");
    Bytes::from(b)
}

fn kind_word(k: WriteKind) -> &'static str {
    match k {
        WriteKind::Created => "ADDED",
        WriteKind::Modified => "MODIFIED",
        WriteKind::Deleted => "DELETED",
    }
}

impl Member {
    fn unknown(&self, method: &Method, path: &str) -> Response<Body> {
        *self
            .unknown
            .lock()
            .entry(format!("{method} {path}"))
            .or_insert(0) += 1;
        tracing::debug!(member = self.index, %method, path, "simulated member: unknown path");
        status(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// Record a write: bump the revision, store, tell watchers and the observer.
    fn commit(
        &self,
        st: &mut State,
        resource: &str,
        ns: &str,
        name: &str,
        kind: WriteKind,
        obj: Arc<Obj>,
    ) {
        let res: Arc<str> = match st.resources.get_key_value(resource) {
            Some((k, _)) => k.clone(),
            None => Arc::from(resource),
        };
        let r = st.resources.entry(res.clone()).or_default();
        let key = (ns.to_owned(), name.to_owned());
        match kind {
            WriteKind::Deleted => {
                r.objects.remove(&key);
            }
            _ => {
                r.objects.insert(key, obj.clone());
            }
        }
        let mut line = None;
        r.watchers.retain(|w| {
            if w.tx.is_closed() {
                return false;
            }
            if w.ns.as_deref().is_none_or(|n| n == ns) && w.filter.matches(ns, name, &obj.labels) {
                let l = line.get_or_insert_with(|| event_line(kind_word(kind), &obj.bytes));
                return w.tx.send(l.clone()).is_ok();
            }
            true
        });
        if let Some(o) = &self.observer {
            o.wrote(self.index, kind, resource, ns, name, &obj.labels);
        }
        st.history.push_back(Event {
            rv: obj.rv,
            kind,
            resource: res,
            ns: ns.to_owned(),
            name: name.to_owned(),
            obj,
        });
        while st.history.len() > HISTORY {
            st.history.pop_front();
        }
        self.rev.store(st.rev, Ordering::Relaxed);
    }

    /// Serialize `v` with the member's metadata set, as revision `rv`.
    #[allow(clippy::too_many_arguments)]
    fn render(
        &self,
        mut v: Value,
        t: &Target,
        name: &str,
        rv: u64,
        old: Option<&Obj>,
        manager: Option<&str>,
        applied: u64,
    ) -> Result<Arc<Obj>, &'static str> {
        let Some(obj) = v.as_object_mut() else {
            return Err("the body is not an object");
        };
        let api_version = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let meta = obj
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        let Some(meta) = meta.as_object_mut() else {
            return Err("metadata is not an object");
        };
        let uid = old.map_or_else(
            || format!("00000000-0000-4000-8000-{:04x}{:08x}", self.index, rv),
            |o| o.uid.clone(),
        );
        meta.insert("name".into(), name.into());
        if let Some(ns) = &t.ns {
            meta.insert("namespace".into(), ns.as_str().into());
        }
        meta.insert("uid".into(), uid.as_str().into());
        meta.insert("resourceVersion".into(), rv.to_string().into());
        meta.entry("creationTimestamp")
            .or_insert_with(|| now_rfc3339().into());
        meta.remove("generateName");
        if let Some(m) = manager {
            meta.insert(
                "managedFields".into(),
                json!([{"manager": m, "operation": "Apply", "apiVersion": api_version,
                        "time": now_rfc3339(), "fieldsType": "FieldsV1", "fieldsV1": {}}]),
            );
        }
        let labels = labels_of(&v);
        let bytes = Bytes::from(serde_json::to_vec(&v).unwrap_or_default());
        Ok(Arc::new(Obj {
            bytes,
            rv,
            uid,
            labels,
            applied,
        }))
    }

    fn namespace_missing(st: &State, t: &Target) -> Option<Response<Body>> {
        let ns = t.ns.as_deref()?;
        let exists = st
            .resources
            .get(NAMESPACES)
            .is_some_and(|r| r.objects.contains_key(&(String::new(), ns.to_owned())));
        (!exists).then(|| {
            status(
                StatusCode::NOT_FOUND,
                "NotFound",
                &format!("namespaces \"{ns}\" not found"),
            )
        })
    }

    fn get(&self, t: &Target, name: &str) -> Response<Body> {
        let st = self.state.lock();
        let key = (t.ns.clone().unwrap_or_default(), name.to_owned());
        match st
            .resources
            .get(t.resource.as_str())
            .and_then(|r| r.objects.get(&key))
        {
            Some(o) => json_response(StatusCode::OK, o.bytes.clone()),
            None => not_found(t, name),
        }
    }

    fn list(&self, t: &Target, q: &HashMap<String, String>) -> Response<Body> {
        let filter = Filter::parse(q.get("labelSelector"), q.get("fieldSelector"));
        let limit: usize = q
            .get("limit")
            .and_then(|l| l.parse().ok())
            .filter(|_| q.get("resourceVersion").is_none_or(|rv| rv != "0"))
            .unwrap_or(0);
        let after = q.get("continue").filter(|c| !c.is_empty()).and_then(|c| {
            let (ns, name) = c.split_once('/')?;
            Some((ns.to_owned(), name.to_owned()))
        });
        let st = self.state.lock();
        let mut body = Vec::with_capacity(1024);
        let mut count = 0usize;
        let mut next = None;
        let empty = Resource::default();
        let r = st.resources.get(t.resource.as_str()).unwrap_or(&empty);
        let range = match (&t.ns, &after) {
            (_, Some(a)) => r.objects.range((
                std::ops::Bound::Excluded(a.clone()),
                std::ops::Bound::Unbounded,
            )),
            (Some(ns), None) => r.objects.range((ns.clone(), String::new())..),
            (None, None) => r.objects.range::<(String, String), _>(..),
        };
        for ((ns, name), o) in range {
            if t.ns.as_deref().is_some_and(|n| n != ns) {
                break;
            }
            if !filter.matches(ns, name, &o.labels) {
                continue;
            }
            if limit > 0 && count == limit {
                next = Some(format!("{ns}/{name}"));
                break;
            }
            if count > 0 {
                body.push(b',');
            }
            body.extend_from_slice(&o.bytes);
            count += 1;
        }
        let (kind, api_version) = r.kind.clone().unwrap_or_default();
        let mut meta = json!({"resourceVersion": st.rev.to_string()});
        if let Some(c) = next {
            meta["continue"] = c.into();
        }
        let head = format!(
            "{{\"kind\":\"{kind}List\",\"apiVersion\":\"{api_version}\",\"metadata\":{meta},\"items\":["
        );
        let mut out = Vec::with_capacity(head.len() + body.len() + 2);
        out.extend_from_slice(head.as_bytes());
        out.extend_from_slice(&body);
        out.extend_from_slice(b"]}");
        json_response(StatusCode::OK, out)
    }

    fn watch(self: &Arc<Self>, t: &Target, q: &HashMap<String, String>) -> Response<Body> {
        let filter = Filter::parse(q.get("labelSelector"), q.get("fieldSelector"));
        let from: Option<u64> = q
            .get("resourceVersion")
            .filter(|rv| !rv.is_empty() && *rv != "0")
            .and_then(|rv| rv.parse().ok());
        let timeout = q
            .get("timeoutSeconds")
            .and_then(|s| s.parse().ok())
            .map_or(Duration::from_secs(1800), Duration::from_secs);
        let bookmarks = q.get("allowWatchBookmarks").is_some_and(|b| b == "true");
        let (tx, rx) = mpsc::unbounded_channel();
        let kind;
        {
            let mut st = self.state.lock();
            let oldest = st
                .history
                .front()
                .map_or(st.rev, |e| e.rv.saturating_sub(1));
            match from {
                Some(rv) if rv < oldest => {
                    let gone = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": format!("too old resource version: {rv} ({oldest})"), "reason": "Expired", "code": 410});
                    let _ = tx.send(event_line("ERROR", gone.to_string().as_bytes()));
                    drop(tx);
                    return watch_response(rx, None, timeout);
                }
                Some(rv) => {
                    for e in st
                        .history
                        .iter()
                        .filter(|e| e.rv > rv && *e.resource == *t.resource)
                    {
                        if t.ns.as_deref().is_none_or(|n| n == e.ns)
                            && filter.matches(&e.ns, &e.name, &e.obj.labels)
                        {
                            let _ = tx.send(event_line(kind_word(e.kind), &e.obj.bytes));
                        }
                    }
                }
                None => {
                    if let Some(r) = st.resources.get(t.resource.as_str()) {
                        for ((ns, name), o) in &r.objects {
                            if t.ns.as_deref().is_none_or(|n| n == ns)
                                && filter.matches(ns, name, &o.labels)
                            {
                                let _ = tx.send(event_line("ADDED", &o.bytes));
                            }
                        }
                    }
                }
            }
            let r = st
                .resources
                .entry(Arc::from(t.resource.as_str()))
                .or_default();
            kind = r.kind.clone();
            r.watchers.push(Watcher {
                ns: t.ns.clone(),
                filter,
                tx,
            });
        }
        let bookmark = bookmarks.then(|| (self.clone(), kind.unwrap_or_default()));
        watch_response(rx, bookmark, timeout)
    }

    fn apply(
        &self,
        t: &Target,
        name: &str,
        q: &HashMap<String, String>,
        body: &[u8],
    ) -> Response<Body> {
        let Ok(v) = serde_json::from_slice::<Value>(body) else {
            return status(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "UnsupportedMediaType",
                "the simulated member reads JSON apply configurations only",
            );
        };
        let manager = q.get("fieldManager").map_or("unknown", String::as_str);
        let hash = applied_hash(&v);
        let mut st = self.state.lock();
        if let Some(resp) = Self::namespace_missing(&st, t) {
            return resp;
        }
        let key = (t.ns.clone().unwrap_or_default(), name.to_owned());
        let old = st
            .resources
            .get(t.resource.as_str())
            .and_then(|r| r.objects.get(&key))
            .cloned();
        if let Some(o) = &old
            && o.applied == hash
        {
            return json_response(StatusCode::OK, o.bytes.clone());
        }
        let mut v = v;
        // Fields the apply does not set stay (status).
        if let (Some(o), Some(obj)) = (&old, v.as_object_mut())
            && !obj.contains_key("status")
            && let Ok(prev) = serde_json::from_slice::<Value>(&o.bytes)
            && let Some(s) = prev.get("status")
        {
            obj.insert("status".into(), s.clone());
        }
        self.remember_kind(&mut st, t, &v);
        let rv = st.rev + 1;
        let obj = match self.render(v, t, name, rv, old.as_deref(), Some(manager), hash) {
            Ok(o) => o,
            Err(m) => return status(StatusCode::BAD_REQUEST, "BadRequest", m),
        };
        st.rev = rv;
        let (code, kind) = if old.is_some() {
            (StatusCode::OK, WriteKind::Modified)
        } else {
            (StatusCode::CREATED, WriteKind::Created)
        };
        let bytes = obj.bytes.clone();
        self.commit(&mut st, &t.resource, &key.0, name, kind, obj);
        json_response(code, bytes)
    }

    fn remember_kind(&self, st: &mut State, t: &Target, v: &Value) {
        let r = st
            .resources
            .entry(Arc::from(t.resource.as_str()))
            .or_default();
        if r.kind.is_none()
            && let (Some(k), Some(a)) = (
                v.get("kind").and_then(Value::as_str),
                v.get("apiVersion").and_then(Value::as_str),
            )
        {
            r.kind = Some((k.to_owned(), a.to_owned()));
        }
    }

    /// POST (create), PUT (replace) and merge patches: a write of a whole object.
    fn write(
        &self,
        method: &Method,
        t: &Target,
        name: Option<&str>,
        body: &[u8],
        merge: bool,
    ) -> Response<Body> {
        let Ok(mut v) = serde_json::from_slice::<Value>(body) else {
            return status(
                StatusCode::BAD_REQUEST,
                "BadRequest",
                "the body is not JSON",
            );
        };
        if t.resource.ends_with("reviews") {
            // Access and token reviews: allowed, authenticated.
            v["status"] = json!({"allowed": true, "authenticated": true});
            return json_response(StatusCode::CREATED, v.to_string());
        }
        let mut st = self.state.lock();
        if let Some(resp) = Self::namespace_missing(&st, t) {
            return resp;
        }
        let name = match name {
            Some(n) => n.to_owned(),
            None => match (
                v.pointer("/metadata/name").and_then(Value::as_str),
                v.pointer("/metadata/generateName").and_then(Value::as_str),
            ) {
                (Some(n), _) if !n.is_empty() => n.to_owned(),
                (_, Some(g)) => format!("{g}{:05x}", st.rev + 1),
                _ => {
                    return status(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "Invalid",
                        "metadata.name: Required value",
                    );
                }
            },
        };
        let key = (t.ns.clone().unwrap_or_default(), name.clone());
        let old = st
            .resources
            .get(t.resource.as_str())
            .and_then(|r| r.objects.get(&key))
            .cloned();
        match (method, &old) {
            (&Method::POST, Some(_)) => {
                return status(
                    StatusCode::CONFLICT,
                    "AlreadyExists",
                    &format!("\"{name}\" already exists"),
                );
            }
            (&Method::PUT | &Method::PATCH, None) if merge || t.sub.is_some() => {
                return not_found(t, &name);
            }
            _ => {}
        }
        if merge && let Some(o) = &old {
            let Ok(mut cur) = serde_json::from_slice::<Value>(&o.bytes) else {
                return status(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "InternalError",
                    "a stored object is not JSON",
                );
            };
            merge_patch(&mut cur, &v);
            v = cur;
        } else if let (Some(o), Some(want)) = (
            &old,
            v.pointer("/metadata/resourceVersion")
                .and_then(Value::as_str),
        ) && want != o.rv.to_string()
        {
            return status(
                StatusCode::CONFLICT,
                "Conflict",
                "the object has been modified",
            );
        }
        self.remember_kind(&mut st, t, &v);
        let rv = st.rev + 1;
        let obj = match self.render(v, t, &name, rv, old.as_deref(), None, 0) {
            Ok(o) => o,
            Err(m) => return status(StatusCode::BAD_REQUEST, "BadRequest", m),
        };
        st.rev = rv;
        let (code, kind) = match (&old, method) {
            (None, &Method::POST) => (StatusCode::CREATED, WriteKind::Created),
            (None, _) => (StatusCode::CREATED, WriteKind::Created),
            (Some(_), _) => (StatusCode::OK, WriteKind::Modified),
        };
        let bytes = obj.bytes.clone();
        self.commit(&mut st, &t.resource, &key.0, &name, kind, obj);
        json_response(code, bytes)
    }

    fn delete(&self, t: &Target, name: &str, body: &[u8]) -> Response<Body> {
        let want_uid = serde_json::from_slice::<Value>(body).ok().and_then(|v| {
            v.pointer("/preconditions/uid")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        let mut st = self.state.lock();
        let key = (t.ns.clone().unwrap_or_default(), name.to_owned());
        let Some(old) = st
            .resources
            .get(t.resource.as_str())
            .and_then(|r| r.objects.get(&key))
            .cloned()
        else {
            return not_found(t, name);
        };
        if want_uid.as_ref().is_some_and(|u| *u != old.uid) {
            return status(
                StatusCode::CONFLICT,
                "Conflict",
                "Precondition failed: UID in precondition does not match",
            );
        }
        let rv = st.rev + 1;
        let mut v = serde_json::from_slice::<Value>(&old.bytes).unwrap_or(Value::Null);
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.insert("resourceVersion".into(), rv.to_string().into());
        }
        let obj = Arc::new(Obj {
            bytes: Bytes::from(serde_json::to_vec(&v).unwrap_or_default()),
            rv,
            uid: old.uid.clone(),
            labels: old.labels.clone(),
            applied: 0,
        });
        st.rev = rv;
        let bytes = obj.bytes.clone();
        self.commit(&mut st, &t.resource, &key.0, name, WriteKind::Deleted, obj);
        json_response(StatusCode::OK, bytes)
    }
}

fn not_found(t: &Target, name: &str) -> Response<Body> {
    let res = t.resource.rsplit('/').next().unwrap_or("");
    status(
        StatusCode::NOT_FOUND,
        "NotFound",
        &format!("{res} \"{name}\" not found"),
    )
}

/// RFC 7386.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Some(p) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Some(t) = target.as_object_mut() {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

/// A streamed watch body: the events as they come, a bookmark now and
/// then (when asked), the end at `timeout`.
fn watch_response(
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    bookmark: Option<(Arc<Member>, (String, String))>,
    timeout: Duration,
) -> Response<Body> {
    let deadline = tokio::time::Instant::now() + timeout;
    let stream = async_stream(move |out: mpsc::Sender<Bytes>| async move {
        let mut tick =
            tokio::time::interval_at(tokio::time::Instant::now() + BOOKMARK_EVERY, BOOKMARK_EVERY);
        loop {
            tokio::select! {
                ev = rx.recv() => match ev {
                    Some(b) => if out.send(b).await.is_err() { return },
                    None => return,
                },
                _ = tick.tick(), if bookmark.is_some() => {
                    if let Some((m, (kind, api_version))) = &bookmark {
                        let rv = m.rev.load(Ordering::Relaxed);
                        let b = json!({"kind": kind, "apiVersion": api_version, "metadata": {"resourceVersion": rv.to_string()}});
                        if out.send(event_line("BOOKMARK", b.to_string().as_bytes())).await.is_err() { return }
                    }
                }
                _ = tokio::time::sleep_until(deadline) => return,
            }
        }
    });
    let body = StreamBody::new(stream.map(|b| Ok::<_, Infallible>(Frame::data(b))));
    let mut r = Response::new(BodyExt::boxed_unsync(body));
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

/// A stream fed by a task running `f` (ends when the task ends or the
/// stream is dropped).
fn async_stream<F, Fut>(f: F) -> impl futures::Stream<Item = Bytes> + Send + 'static
where
    F: FnOnce(mpsc::Sender<Bytes>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(64);
    let task = tokio::spawn(f(tx));
    let guard = AbortOnDrop(task);
    futures::stream::unfold((rx, guard), |(mut rx, g)| async move {
        rx.recv().await.map(|b| (b, (rx, g)))
    })
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

const API_VERSIONS: &str = r#"{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]}"#;
const API_GROUPS: &str = r#"{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}}]}"#;
const VERSION: &str = r#"{"major":"1","minor":"36","gitVersion":"v1.36.2-simulated","gitCommit":"simulated","gitTreeState":"clean","buildDate":"2026-01-01T00:00:00Z","goVersion":"go1.24","compiler":"gc","platform":"linux/amd64"}"#;

/// A request's shape: method, resource, `{ns}`/`{name}` placeholders,
/// subresource, content type of a write, the query's keys (and the label
/// selector's value).
fn shape(method: &Method, path: &str, uri: &http::Uri, content_type: &str) -> String {
    let mut out = format!("{method} ");
    match target(path) {
        Some(t) => {
            out.push_str(&t.resource);
            if t.ns.is_some() {
                out.push_str("/{ns}");
            }
            if t.name.is_some() {
                out.push_str("/{name}");
            }
            if let Some(s) = &t.sub {
                out.push('/');
                out.push_str(s);
            }
        }
        None => out.push_str(path),
    }
    if matches!(*method, Method::PATCH | Method::POST | Method::PUT) && !content_type.is_empty() {
        out.push(' ');
        out.push_str(content_type);
    }
    let q = query(uri);
    if !q.is_empty() {
        let mut keys: Vec<String> = q
            .iter()
            .map(|(k, v)| match k.as_str() {
                "labelSelector" | "watch" | "allowWatchBookmarks" => format!("{k}={v}"),
                _ => k.clone(),
            })
            .collect();
        keys.sort();
        out.push_str(" ?");
        out.push_str(&keys.join("&"));
    }
    out
}

/// Answer one request.
async fn handle(member: &Arc<Member>, req: Request<Incoming>) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_owned();
    let method = parts.method.clone();
    {
        let ct = parts
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let key = shape(&method, &path, &parts.uri, ct);
        *member.requests.lock().entry(key).or_insert(0) += 1;
    }
    match (&method, path.as_str()) {
        (&Method::GET, "/readyz" | "/healthz" | "/livez") => {
            return full(StatusCode::OK, "text/plain", "ok");
        }
        (&Method::GET, "/version") => return json_response(StatusCode::OK, VERSION),
        (&Method::GET, "/api") => return json_response(StatusCode::OK, API_VERSIONS),
        (&Method::GET, "/apis") => return json_response(StatusCode::OK, API_GROUPS),
        _ => {}
    }
    let Some(t) = target(&path) else {
        // `/apis/G/V` and `/api/v1`: an empty resource list.
        let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
        if method == Method::GET
            && let ["api", v] | ["apis", _, v] = segs.as_slice()
        {
            let gv = segs[1..].join("/");
            let _ = v;
            return json_response(
                StatusCode::OK,
                json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": []}).to_string(),
            );
        }
        return member.unknown(&method, &path);
    };
    let q = query(&parts.uri);
    let body = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return status(
                StatusCode::BAD_REQUEST,
                "BadRequest",
                "cannot read the body",
            );
        }
    };
    let content_type = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    match (&method, &t.name, &t.sub) {
        (&Method::GET, None, None) if q.get("watch").is_some_and(|w| w == "true" || w == "1") => {
            member.watch(&t, &q)
        }
        (&Method::GET, None, None) => member.list(&t, &q),
        (&Method::GET, Some(n), _) => member.get(&t, n),
        (&Method::PATCH, Some(n), _) if content_type.starts_with("application/apply-patch") => {
            member.apply(&t, n, &q, &body)
        }
        (&Method::PATCH, Some(n), _)
            if content_type.starts_with("application/merge-patch")
                || content_type.starts_with("application/strategic-merge-patch") =>
        {
            member.write(&method, &t, Some(n), &body, true)
        }
        (&Method::POST, None, None) => member.write(&method, &t, None, &body, false),
        (&Method::PUT, Some(n), _) => member.write(&method, &t, Some(n), &body, false),
        (&Method::DELETE, Some(n), None) => member.delete(&t, n, &body),
        _ => member.unknown(&method, &path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_into_resource_namespace_name_and_subresource() {
        let t = |p| target(p).map(|t| (t.resource, t.ns, t.name, t.sub));
        let s = |x: &str| Some(x.to_owned());
        assert_eq!(
            t("/api/v1/namespaces/a/configmaps/b"),
            Some(("api/v1/configmaps".into(), s("a"), s("b"), None))
        );
        assert_eq!(
            t("/api/v1/namespaces/a"),
            Some(("api/v1/namespaces".into(), None, s("a"), None))
        );
        assert_eq!(
            t("/api/v1/namespaces/a/status"),
            Some(("api/v1/namespaces".into(), None, s("a"), s("status")))
        );
        assert_eq!(
            t("/apis/apps/v1/namespaces/x/deployments/d/status"),
            Some((
                "apis/apps/v1/deployments".into(),
                s("x"),
                s("d"),
                s("status")
            ))
        );
        assert_eq!(
            t("/apis/apps/v1/deployments"),
            Some(("apis/apps/v1/deployments".into(), None, None, None))
        );
        assert_eq!(t("/version"), None);
    }

    #[test]
    fn label_selectors_match_as_kube_matches_them() {
        let l: Labels = vec![("a".into(), "1".into()), ("b".into(), "x".into())];
        let m = |s: &str| Filter::parse(Some(&s.to_owned()), None).matches("ns", "n", &l);
        assert!(m("a=1"));
        assert!(m("a==1,b"));
        assert!(!m("a=2"));
        assert!(m("a!=2,!c"));
        assert!(!m("!a"));
        assert!(m("b in (x, y),a notin (3)"));
        assert!(!m("b notin (x)"));
        let f = Filter::parse(None, Some(&"metadata.name=n".to_owned()));
        assert!(f.matches("ns", "n", &l) && !f.matches("ns", "m", &l));
    }

    #[test]
    fn applied_hashes_ignore_key_order() {
        let a = json!({"a": 1, "b": {"c": [1, 2], "d": "x"}});
        let b: Value =
            serde_json::from_str(r#"{"b": {"d": "x", "c": [1, 2]}, "a": 1}"#).unwrap_or_default();
        assert_eq!(applied_hash(&a), applied_hash(&b));
        assert_ne!(applied_hash(&a), applied_hash(&json!({"a": 2})));
    }

    #[test]
    fn query_values_are_percent_decoded() {
        let uri: http::Uri = "/x?labelSelector=a%3D1%2Cb&watch=true&x=a+b"
            .parse()
            .unwrap_or_default();
        let q = query(&uri);
        assert_eq!(q["labelSelector"], "a=1,b");
        assert_eq!(q["watch"], "true");
        assert_eq!(q["x"], "a b");
    }

    #[test]
    fn merge_patches_remove_nulls_and_merge_objects() {
        let mut v = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "data": {"x": "1"}});
        merge_patch(
            &mut v,
            &json!({"metadata": {"labels": {"a": null}}, "data": {"y": "2"}}),
        );
        assert_eq!(
            v,
            json!({"metadata": {"labels": {"b": "2"}}, "data": {"x": "1", "y": "2"}})
        );
    }
}
