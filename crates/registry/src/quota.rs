//! ResourceQuota: kube's `ResourceQuota` admission plugin
//! (`plugin/pkg/admission/resourcequota`) and the quota controller
//! (`pkg/controller/resourcequota`), over kube's usage evaluators
//! (`pkg/quota/v1/evaluator/core`):
//!
//! - usage of an object: `count/<resource>[.<group>]` for every resource;
//!   `pods`, `services`, `configmaps`, `secrets`, `replicationcontrollers`,
//!   `resourcequotas`, `persistentvolumeclaims` for the core object counts;
//!   `services.nodeports`, `services.loadbalancers`; a non-terminal pod's
//!   `requests.cpu`/`cpu`, `requests.memory`/`memory`,
//!   `requests.ephemeral-storage`/`ephemeral-storage`, `limits.cpu`,
//!   `limits.memory` (containers summed, at least any init container); a
//!   claim's `requests.storage`. Quotas with `scopes` (`Terminating`,
//!   `NotTerminating`, `BestEffort`, `NotBestEffort`) apply to pods only,
//!   as kube's object-count evaluators match no scope.
//! - admission ([`ResourceQuotaAdmission`], validating phase, creates):
//!   each quota of the namespace that limits something the object uses is
//!   checked against its `status` (`status unknown for quota: q,
//!   resources: configmaps` before the controller filled it in; `exceeded
//!   quota: q, requested: configmaps=1, used: configmaps=2, limited:
//!   configmaps=2`, both 403) and then charged: `status.used` is raised by
//!   a compare-and-swap write of the quota (re-checked against the fresh
//!   quota on a conflict), so two concurrent creates cannot both take the
//!   last slot, as kube's quota evaluator does with its CAS on the quota.
//! - the controller ([`QuotaController`], leader-only) recomputes
//!   `status.hard` (from `spec.hard`) and `status.used` when a quota
//!   changes and when an object of its namespace is created, deleted or (a
//!   pod, service or claim) changed (stores served later, custom resources,
//!   are followed within seconds), and every five minutes (kube's
//!   `--resource-quota-sync-period` default), which also returns what a
//!   create that failed after admission had charged.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use ubernetes_apimachinery::{ApiError, ResourceInfo};
use ubernetes_cel::library::Quantity;
use ubernetes_storage::EventType;

use crate::admission::{Admission, Attributes, Operation};
use crate::controllers::{Queue, follow, follow_listed_meta, spawn_until};
use crate::registry::Registry;
use crate::store::{ReadAt, Store};

/// A resource list with exact quantities; `binary` remembers a binary-SI
/// quantity (`Mi`, `Gi`) for printing.
pub type Usage = BTreeMap<String, (Quantity, bool)>;

fn q(s: &str) -> (Quantity, bool) {
    (
        Quantity::parse(s).unwrap_or_else(|_| Quantity::zero()),
        s.contains('i'),
    )
}

fn text(v: &(Quantity, bool)) -> String {
    v.0.canonical(v.1)
}

fn one() -> (Quantity, bool) {
    q("1")
}

/// The core kinds kube counts by their plain resource name.
const CORE_COUNTS: [&str; 7] = [
    "pods",
    "services",
    "configmaps",
    "secrets",
    "replicationcontrollers",
    "resourcequotas",
    "persistentvolumeclaims",
];

/// `count/<resource>` or `count/<resource>.<group>`.
fn count_name(info: &ResourceInfo) -> String {
    if info.group.is_empty() {
        format!("count/{}", info.resource)
    } else {
        format!("count/{}.{}", info.resource, info.group)
    }
}

fn is_terminal_pod(pod: &Value) -> bool {
    matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    )
}

fn add(total: &mut Usage, k: &str, v: (Quantity, bool)) {
    let sum = match total.get(k) {
        Some(t) => (t.0.add(&v.0).unwrap_or(v.0), t.1 || v.1),
        None => v,
    };
    total.insert(k.to_string(), sum);
}

/// What `obj` of `info` uses (kube's evaluator `Usage`).
pub fn usage(info: &ResourceInfo, obj: &Value) -> Usage {
    let mut u = Usage::new();
    let core = info.group.is_empty();
    if core && info.resource == "pods" && is_terminal_pod(obj) {
        return u;
    }
    u.insert(count_name(info), one());
    if core && CORE_COUNTS.contains(&info.resource.as_str()) {
        u.insert(info.resource.clone(), one());
    }
    if core && info.resource == "pods" {
        for (which, prefix) in [("requests", "requests."), ("limits", "limits.")] {
            for (k, v) in crate::limitranger::pod_total(obj, which) {
                let val = q(&v);
                add(&mut u, &format!("{prefix}{k}"), val);
                if which == "requests"
                    && matches!(k.as_str(), "cpu" | "memory" | "ephemeral-storage")
                {
                    add(&mut u, &k, val);
                }
            }
        }
    }
    if core && info.resource == "services" {
        let t = obj.pointer("/spec/type").and_then(Value::as_str);
        let ports = obj
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .map(|p| p.iter().filter(|p| p.get("nodePort").is_some()).count())
            .unwrap_or(0);
        if matches!(t, Some("NodePort" | "LoadBalancer")) {
            u.insert(
                "services.nodeports".into(),
                (
                    Quantity::parse(&ports.to_string()).unwrap_or_else(|_| Quantity::zero()),
                    false,
                ),
            );
        }
        if t == Some("LoadBalancer") {
            u.insert("services.loadbalancers".into(), one());
        }
    }
    if core
        && info.resource == "persistentvolumeclaims"
        && let Some(s) = obj
            .pointer("/spec/resources/requests/storage")
            .and_then(Value::as_str)
    {
        u.insert("requests.storage".into(), q(s));
    }
    u
}

/// What `after` uses more than `before` (kube's
/// `SubtractWithNonNegativeResult`, without the zeros).
pub fn growth(after: &Usage, before: &Usage) -> Usage {
    after
        .iter()
        .filter_map(|(k, v)| {
            let d = match before.get(k) {
                Some(b) => v.0.add(&b.0.neg())?,
                None => v.0,
            };
            (d > Quantity::zero()).then(|| (k.clone(), (d, v.1)))
        })
        .collect()
}

/// Whether a quota's `scopes` and `scopeSelector` admit `obj` (kube's pod
/// evaluator `podMatchesScopeFunc`: only pods match a scope; every scope
/// and every selector expression must match).
fn scopes_match(quota: &Value, info: &ResourceInfo, obj: &Value) -> bool {
    let scopes: Vec<&str> = quota
        .pointer("/spec/scopes")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let expressions: &[Value] = quota
        .pointer("/spec/scopeSelector/matchExpressions")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    if scopes.is_empty() && expressions.is_empty() {
        return true;
    }
    if !(info.group.is_empty() && info.resource == "pods") {
        return false;
    }
    scopes
        .iter()
        .all(|scope| pod_in_scope(obj, scope, "Exists", &[]))
        && expressions.iter().all(|e| {
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            pod_in_scope(
                obj,
                e.get("scopeName")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                e.get("operator")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                &values,
            )
        })
}

/// One scope (`operator` over `values` for PriorityClass; the others are
/// `Exists` only) against a pod.
fn pod_in_scope(pod: &Value, scope: &str, operator: &str, values: &[&str]) -> bool {
    let terminating = pod.pointer("/spec/activeDeadlineSeconds").is_some();
    let best_effort = ["containers", "initContainers"].iter().all(|f| {
        pod.pointer(&format!("/spec/{f}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .all(|c| {
                ["requests", "limits"].iter().all(|w| {
                    c.pointer(&format!("/resources/{w}"))
                        .and_then(Value::as_object)
                        .is_none_or(|m| m.is_empty())
                })
            })
    });
    match scope {
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        "BestEffort" => best_effort,
        "NotBestEffort" => !best_effort,
        "CrossNamespacePodAffinity" => cross_namespace_affinity(pod),
        "PriorityClass" => {
            let class = pod
                .pointer("/spec/priorityClassName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match operator {
                "In" => values.contains(&class),
                "NotIn" => !values.contains(&class),
                "Exists" => !class.is_empty(),
                "DoesNotExist" => class.is_empty(),
                _ => false,
            }
        }
        _ => false,
    }
}

/// Whether a pod's (anti-)affinity terms reach other namespaces
/// (`namespaces` or a `namespaceSelector`), kube's
/// `usesCrossNamespacePodAffinity`.
fn cross_namespace_affinity(pod: &Value) -> bool {
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        let Some(a) = pod.pointer(&format!("/spec/affinity/{kind}")) else {
            return false;
        };
        let required = a
            .get("requiredDuringSchedulingIgnoredDuringExecution")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        let preferred = a
            .get("preferredDuringSchedulingIgnoredDuringExecution")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|w| w.get("podAffinityTerm"));
        required.chain(preferred).any(|term| {
            term.get("namespaces")
                .and_then(Value::as_array)
                .is_some_and(|n| !n.is_empty())
                || term.get("namespaceSelector").is_some_and(|s| !s.is_null())
        })
    })
}

fn resource_list(v: Option<&Value>) -> Usage {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), q(v.as_str()?))))
                .collect()
        })
        .unwrap_or_default()
}

/// kube's `prettyPrint`: sorted `name=value`, comma-joined.
fn pretty(u: &Usage, keys: &[String]) -> String {
    keys.iter()
        .filter_map(|k| u.get(k).map(|v| format!("{k}={}", text(v))))
        .collect::<Vec<_>>()
        .join(",")
}

/// Checks `requested` against one quota; on success returns the quota with
/// `status.used` raised. Errors are the reason after `is forbidden: `.
pub fn charge(quota: &Value, requested_all: &Usage) -> Result<Option<Value>, String> {
    let name = quota
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let hard = resource_list(quota.pointer("/status/hard"));
    let used = resource_list(quota.pointer("/status/used"));
    // Resources the quota limits (as its status says: kube's
    // `hasUsageStats`) that the object uses.
    let mut restricted: Vec<String> = requested_all
        .keys()
        .filter(|k| hard.contains_key(*k))
        .cloned()
        .collect();
    restricted.sort();
    if restricted.is_empty() {
        return Ok(None);
    }
    let unknown: Vec<&String> = restricted
        .iter()
        .filter(|k| !used.contains_key(*k))
        .collect();
    if !unknown.is_empty() {
        return Err(format!(
            "status unknown for quota: {name}, resources: {}",
            unknown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    let mut new_used = used.clone();
    let mut exceeded = Vec::new();
    for k in &restricted {
        let (req, b) = requested_all[k];
        let cur = used.get(k).copied().unwrap_or((Quantity::zero(), b));
        let sum = (cur.0.add(&req).unwrap_or(cur.0), cur.1 || b);
        if let Some(h) = hard.get(k)
            && sum.0.cmp(&h.0).is_gt()
        {
            exceeded.push(k.clone());
        }
        new_used.insert(k.clone(), sum);
    }
    if !exceeded.is_empty() {
        return Err(format!(
            "exceeded quota: {name}, requested: {}, used: {}, limited: {}",
            pretty(requested_all, &exceeded),
            pretty(&used, &exceeded),
            pretty(&hard, &exceeded)
        ));
    }
    let mut out = quota.clone();
    out["status"]["used"] = Value::Object(
        new_used
            .iter()
            .map(|(k, v)| (k.clone(), json!(text(v))))
            .collect(),
    );
    Ok(Some(out))
}

/// kube's pod evaluator `Constraints`: when a quota limits cpu or memory,
/// every container must state it (`must specify requests.cpu for: a,b;
/// requests.memory for: a`).
pub fn pod_constraints(hard: &[&str], pod: &Value) -> Option<String> {
    const VALIDATION: [&str; 6] = [
        "cpu",
        "memory",
        "limits.cpu",
        "limits.memory",
        "requests.cpu",
        "requests.memory",
    ];
    let required: Vec<&str> = VALIDATION
        .iter()
        .copied()
        .filter(|r| hard.contains(r))
        .collect();
    if required.is_empty() {
        return None;
    }
    let mut missing: BTreeMap<&str, std::collections::BTreeSet<String>> = BTreeMap::new();
    for field in ["containers", "initContainers"] {
        for c in pod
            .pointer(&format!("/spec/{field}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let has =
                |which: &str, r: &str| c.pointer(&format!("/resources/{which}/{r}")).is_some();
            let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
            for r in &required {
                let stated = match *r {
                    "cpu" | "requests.cpu" => has("requests", "cpu"),
                    "memory" | "requests.memory" => has("requests", "memory"),
                    "limits.cpu" => has("limits", "cpu"),
                    _ => has("limits", "memory"),
                };
                if !stated {
                    missing.entry(r).or_default().insert(name.to_string());
                }
            }
        }
    }
    if missing.is_empty() {
        return None;
    }
    Some(format!(
        "must specify {}",
        missing
            .iter()
            .map(|(r, names)| format!(
                "{r} for: {}",
                names.iter().cloned().collect::<Vec<_>>().join(",")
            ))
            .collect::<Vec<_>>()
            .join("; ")
    ))
}

/// The admission plugin.
pub struct ResourceQuotaAdmission {
    registry: Weak<Registry>,
}

impl ResourceQuotaAdmission {
    pub fn new(registry: &Arc<Registry>) -> Arc<Self> {
        Arc::new(Self {
            registry: Arc::downgrade(registry),
        })
    }
}

fn quotas_store(registry: &Registry) -> Option<Arc<Store>> {
    registry.get("", "v1", "resourcequotas")
}

async fn cached(store: &Store, namespace: Option<&str>) -> Vec<Value> {
    match store.list(namespace, None, 0, None, ReadAt::Any).await {
        Ok(l) => l
            .items
            .iter()
            .filter_map(|b| serde_json::from_slice(b).ok())
            .collect(),
        Err(_) => Vec::new(),
    }
}

#[async_trait::async_trait]
impl Admission for ResourceQuotaAdmission {
    fn mutates(&self) -> bool {
        false
    }

    async fn validate(&self, attrs: &Attributes<'_>, obj: &Value) -> Result<Vec<String>, ApiError> {
        // Counts change on create; the pod, service and claim evaluators
        // also handle updates (a resize, a Service turned NodePort): only
        // what grew is charged.
        let info = attrs.info;
        let usage_updates = info.group.is_empty()
            && matches!(
                info.resource.as_str(),
                "pods" | "services" | "persistentvolumeclaims"
            );
        let update = attrs.operation == Operation::Update && usage_updates;
        if !(attrs.operation == Operation::Create || update) || attrs.subresource.is_some() {
            return Ok(Vec::new());
        }
        let Some(namespace) = attrs.namespace else {
            return Ok(Vec::new());
        };
        let Some(registry) = self.registry.upgrade() else {
            return Ok(Vec::new());
        };
        let Some(store) = quotas_store(&registry) else {
            return Ok(Vec::new());
        };
        let quotas = cached(&store, Some(namespace)).await;
        if quotas.is_empty() {
            return Ok(Vec::new());
        }
        let mut requested = usage(info, obj);
        if update {
            let before = attrs.old.map(|o| usage(info, o)).unwrap_or_default();
            requested = growth(&requested, &before);
            if requested.is_empty() {
                return Ok(Vec::new());
            }
        }
        let name = crate::policy::forbidden_name(attrs, obj);
        let forbid = |why: &str| ApiError::forbidden(&info.group, &info.resource, &name, why);
        // Check every quota first (no charge when one refuses), then charge
        // each with a compare-and-swap of its status.
        let mut charged = Vec::new();
        for quota in &quotas {
            if !scopes_match(quota, info, obj) {
                continue;
            }
            if info.group.is_empty() && info.resource == "pods" {
                let hard: Vec<&str> = quota
                    .pointer("/status/hard")
                    .and_then(Value::as_object)
                    .map(|m| m.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                if let Some(why) = pod_constraints(&hard, obj) {
                    let qname = quota
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    return Err(forbid(&format!("failed quota: {qname}: {why}")));
                }
            }
            match charge(quota, &requested) {
                Ok(Some(_)) => {
                    if let Some(n) = quota.pointer("/metadata/name").and_then(Value::as_str) {
                        charged.push(n.to_string());
                    }
                }
                Ok(None) => {}
                Err(why) => return Err(forbid(&why)),
            }
        }
        if attrs.dry_run {
            return Ok(Vec::new());
        }
        for qname in charged {
            let mut refused = None;
            let res = store
                .system_update(Some(namespace), &qname, |cur| {
                    match charge(&cur, &requested) {
                        Ok(next) => Ok(next),
                        Err(why) => {
                            refused = Some(why);
                            Err(ApiError::internal("quota refused"))
                        }
                    }
                })
                .await;
            if let Some(why) = refused {
                return Err(forbid(&why));
            }
            match res {
                Ok(_) => {
                    tracing::debug!(%namespace, quota = %qname, resource = %info.resource, %name, "quota charged");
                }
                // The quota went away meanwhile: nothing to charge.
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Vec::new())
    }
}

// --------------------------------------------------------------- controller

/// kube's `addQuota`: a quota changed is counted again only when its
/// `spec.hard` is not what its status says, or a limit has no usage yet.
fn needs_recount(quota: &Value) -> bool {
    let spec_hard = quota.pointer("/spec/hard");
    if spec_hard != quota.pointer("/status/hard") {
        return true;
    }
    let used = quota.pointer("/status/used").and_then(Value::as_object);
    spec_hard.and_then(Value::as_object).is_some_and(|hard| {
        hard.keys()
            .any(|k| !used.is_some_and(|u| u.contains_key(k)))
    })
}

/// The store counting `resource` (a quota's resource name), and whether
/// the name is a count.
fn counted_store(registry: &Registry, resource: &str) -> Option<Arc<Store>> {
    if let Some(rest) = resource.strip_prefix("count/") {
        let (res, group) = rest.split_once('.').unwrap_or((rest, ""));
        return registry.by_resource(group, res);
    }
    let core = match resource {
        r if CORE_COUNTS.contains(&r) => r,
        "services.nodeports" | "services.loadbalancers" => "services",
        "requests.storage" => "persistentvolumeclaims",
        r if r.starts_with("requests.")
            || r.starts_with("limits.")
            || r == "cpu"
            || r == "memory"
            || r == "ephemeral-storage" =>
        {
            "pods"
        }
        _ => return None,
    };
    registry.get("", "v1", core)
}

/// kube's `CalculateUsage`: `status.used` for the quota's hard resources
/// (zero for what nothing in this server uses).
pub async fn calculate_used(registry: &Registry, quota: &Value) -> Result<Usage, ApiError> {
    let namespace = quota
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let hard = resource_list(quota.pointer("/spec/hard"));
    let mut used = Usage::new();
    let mut listed: HashMap<String, Vec<Value>> = HashMap::new();
    for (k, (_, hard_binary)) in &hard {
        let mut total = (Quantity::zero(), *hard_binary);
        if let Some(store) = counted_store(registry, k) {
            let key = format!("{}/{}", store.info().group, store.info().resource);
            if !listed.contains_key(&key) {
                let list = store
                    .list(Some(namespace), None, 0, None, ReadAt::Latest)
                    .await?;
                let items = list
                    .items
                    .iter()
                    .filter_map(|b| serde_json::from_slice(b).ok())
                    .collect();
                listed.insert(key.clone(), items);
            }
            for obj in listed.get(&key).into_iter().flatten() {
                if !scopes_match(quota, store.info(), obj) {
                    continue;
                }
                if let Some(v) = usage(store.info(), obj).get(k) {
                    total = (total.0.add(&v.0).unwrap_or(total.0), total.1 || v.1);
                }
            }
        }
        used.insert(k.clone(), total);
    }
    Ok(used)
}

/// The quota controller (leader-only).
pub struct QuotaController {
    registry: Arc<Registry>,
    queue: Arc<Queue<(String, String)>>,
    /// namespace → its quotas' names.
    by_namespace: Mutex<HashMap<String, HashSet<String>>>,
    stop: CancellationToken,
}

impl QuotaController {
    /// Follow quotas and every store until `stop` (a leadership term).
    pub fn start_until(registry: Arc<Registry>, stop: CancellationToken) -> Option<Arc<Self>> {
        let quotas = quotas_store(&registry)?;
        let c = Arc::new(Self {
            registry: registry.clone(),
            queue: Queue::new(),
            by_namespace: Mutex::new(HashMap::new()),
            stop: stop.clone(),
        });
        let observer = c.clone();
        follow(stop.clone(), quotas, move |_, kind, obj| {
            let (Some(ns), Some(name)) = (
                obj.pointer("/metadata/namespace").and_then(Value::as_str),
                obj.pointer("/metadata/name").and_then(Value::as_str),
            ) else {
                return;
            };
            {
                let mut idx = observer.by_namespace.lock();
                let set = idx.entry(ns.to_string()).or_default();
                if kind == EventType::Deleted {
                    set.remove(name);
                    if set.is_empty() {
                        idx.remove(ns);
                    }
                    return;
                }
                set.insert(name.to_string());
            }
            // kube's controller: a status change (an admission charge, this
            // controller's own write) is no reason to recount; recounting
            // then could undo the charge of an object still being created.
            if kind == EventType::Modified && !needs_recount(&obj) {
                return;
            }
            observer.queue.add((ns.to_string(), name.to_string()));
        });
        // Every namespaced store, and those served later (custom
        // resources), checked for every few seconds.
        let follower = c.clone();
        spawn_until(stop.clone(), async move {
            let mut followed: Vec<Arc<Store>> = Vec::new();
            loop {
                for store in follower.registry.stores() {
                    if store.info().namespaced && !followed.iter().any(|s| Arc::ptr_eq(s, &store)) {
                        follower.follow_store(store.clone());
                        followed.push(store);
                    }
                }
                followed.retain(|s| {
                    follower
                        .registry
                        .stores()
                        .iter()
                        .any(|cur| Arc::ptr_eq(cur, s))
                });
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        });
        let worker = c.clone();
        spawn_until(stop.clone(), async move {
            loop {
                let (ns, name) = worker.queue.next().await;
                if let Err(e) = worker.sync(&ns, &name).await {
                    tracing::debug!(namespace = %ns, quota = %name, error = %e, "quota sync failed; retrying");
                    worker.queue.add_after((ns, name), Duration::from_secs(1));
                }
            }
        });
        let resync = c.clone();
        spawn_until(stop, async move {
            loop {
                tokio::time::sleep(Duration::from_secs(300)).await;
                resync.recount_all();
            }
        });
        Some(c)
    }

    /// Queue every known quota for a recount.
    fn recount_all(&self) {
        let all: Vec<(String, String)> = self
            .by_namespace
            .lock()
            .iter()
            .flat_map(|(ns, names)| names.iter().map(|n| (ns.clone(), n.clone())))
            .collect();
        for item in all {
            self.queue.add(item);
        }
    }

    /// Follow one store's objects: their creates and deletes (and changes
    /// of pods, services, claims) re-sync their namespace's quotas.
    fn follow_store(self: &Arc<Self>, store: Arc<Store>) {
        let c = self.clone();
        let usage_changes = store.info().group.is_empty()
            && matches!(
                store.info().resource.as_str(),
                "pods" | "services" | "persistentvolumeclaims"
            );
        let relisted = self.clone();
        let handle = move |_: &Arc<Store>, kind, obj: Arc<Value>| {
            if kind == EventType::Modified && !usage_changes {
                return;
            }
            let Some(ns) = obj.pointer("/metadata/namespace").and_then(Value::as_str) else {
                return;
            };
            let names: Vec<String> = match c.by_namespace.lock().get(ns) {
                Some(set) => set.iter().cloned().collect(),
                None => return,
            };
            for n in names {
                c.queue.add((ns.to_string(), n));
            }
        };
        // After each (re)list, every quota is counted again: objects deleted
        // before this store was followed (a custom resource served moments
        // ago) or during a relist have no event.
        let listed = move |_: &Arc<Store>| relisted.recount_all();
        // Only the namespace is read: the object's metadata is all that is
        // decoded of each event (a write's data is not parsed again here).
        follow_listed_meta(self.stop.clone(), store, handle, listed);
    }

    async fn sync(&self, ns: &str, name: &str) -> Result<(), ApiError> {
        let Some(store) = quotas_store(&self.registry) else {
            return Ok(());
        };
        let quota = match store.get_value(Some(ns), name).await {
            Ok(q) => q,
            Err(e) if e.code == 404 => return Ok(()),
            Err(e) => return Err(e),
        };
        let used = calculate_used(&self.registry, &quota).await?;
        let hard = quota.pointer("/spec/hard").cloned().unwrap_or(json!({}));
        let used_json: serde_json::Map<String, Value> = used
            .iter()
            .map(|(k, v)| (k.clone(), json!(text(v))))
            .collect();
        // Written only over the quota counted from: an admission charge
        // since then is for an object the count may not have seen yet
        // (kube's controller updates with the resourceVersion it read).
        let counted_from = quota.pointer("/metadata/resourceVersion").cloned();
        let res = store
            .system_update(Some(ns), name, |mut cur| {
                if cur.pointer("/metadata/resourceVersion").cloned() != counted_from {
                    return Err(ApiError::conflict(
                        "",
                        "resourcequotas",
                        name,
                        "the quota changed while its usage was counted",
                    ));
                }
                let status = json!({"hard": hard, "used": used_json});
                if cur.get("status") == Some(&status) {
                    return Ok(None);
                }
                cur["status"] = status;
                Ok(Some(cur))
            })
            .await;
        match res {
            Ok(_) => {
                tracing::debug!(namespace = %ns, quota = %name, used = ?used_json, "quota status recomputed");
                Ok(())
            }
            Err(e) if e.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn info(group: &str, resource: &str) -> ResourceInfo {
        ResourceInfo {
            group: group.into(),
            version: "v1".into(),
            resource: resource.into(),
            singular: String::new(),
            kind: String::new(),
            namespaced: true,
            verbs: Vec::new(),
            short_names: Vec::new(),
            categories: Vec::new(),
            subresources: Vec::new(),
            definition: String::new(),
        }
    }

    #[test]
    fn only_a_changed_spec_or_a_limit_without_usage_is_counted_again() {
        let quota = |spec: Value, status: Value| json!({"spec": {"hard": spec}, "status": status});
        let synced = json!({"hard": {"configmaps": "3"}, "used": {"configmaps": "1"}});
        // An admission charge or the controller's own write: no recount.
        assert!(!needs_recount(&quota(
            json!({"configmaps": "3"}),
            synced.clone()
        )));
        assert!(needs_recount(&quota(
            json!({"configmaps": "4"}),
            synced.clone()
        )));
        assert!(needs_recount(&quota(
            json!({"configmaps": "3"}),
            json!({"hard": {"configmaps": "3"}})
        )));
        assert!(needs_recount(&quota(json!({"configmaps": "3"}), json!({}))));
    }

    #[test]
    fn usage_of_objects() {
        let cm = usage(&info("", "configmaps"), &json!({}));
        assert_eq!(
            cm.keys().collect::<Vec<_>>(),
            ["configmaps", "count/configmaps"]
        );
        let d = usage(&info("apps", "deployments"), &json!({}));
        assert_eq!(d.keys().collect::<Vec<_>>(), ["count/deployments.apps"]);
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "1"}}},
            {"name": "b", "resources": {"requests": {"cpu": "500m", "memory": "64Mi", "ephemeral-storage": "30Gi"}}}]}});
        let u = usage(&info("", "pods"), &pod);
        // kube's pod evaluator counts ephemeral storage as it counts memory.
        assert_eq!(text(&u["ephemeral-storage"]), "30Gi");
        assert_eq!(text(&u["requests.ephemeral-storage"]), "30Gi");
        assert_eq!(text(&u["requests.cpu"]), "750m");
        assert_eq!(text(&u["cpu"]), "750m");
        assert_eq!(text(&u["requests.memory"]), "128Mi");
        assert_eq!(text(&u["limits.cpu"]), "1");
        assert_eq!(text(&u["pods"]), "1");
        let done = json!({"spec": {}, "status": {"phase": "Succeeded"}});
        assert!(usage(&info("", "pods"), &done).is_empty());
    }

    #[test]
    fn charge_and_refuse_with_kube_messages() {
        let requested = usage(&info("", "configmaps"), &json!({}));
        let unknown = json!({"metadata": {"name": "q"}, "spec": {"hard": {"configmaps": "2"}}, "status": {"hard": {"configmaps": "2"}}});
        assert_eq!(
            charge(&unknown, &requested).unwrap_err(),
            "status unknown for quota: q, resources: configmaps"
        );
        let quota = json!({"metadata": {"name": "q"}, "spec": {"hard": {"configmaps": "2", "count/configmaps": "5"}},
            "status": {"hard": {"configmaps": "2", "count/configmaps": "5"}, "used": {"configmaps": "1", "count/configmaps": "1"}}});
        let next = charge(&quota, &requested).unwrap().unwrap();
        assert_eq!(
            next["status"]["used"],
            json!({"configmaps": "2", "count/configmaps": "2"})
        );
        assert_eq!(
            charge(&next, &requested).unwrap_err(),
            "exceeded quota: q, requested: configmaps=1, used: configmaps=2, limited: configmaps=2"
        );
        let unrelated = usage(&info("", "secrets"), &json!({}));
        assert_eq!(charge(&quota, &unrelated).unwrap(), None);
    }

    #[test]
    fn pods_must_state_what_a_quota_limits() {
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "1"}}},
            {"name": "b"}]}});
        assert_eq!(
            pod_constraints(&["requests.cpu", "requests.memory", "pods"], &pod).unwrap(),
            "must specify requests.cpu for: b; requests.memory for: a,b"
        );
        assert_eq!(pod_constraints(&["pods", "count/pods"], &pod), None);
    }

    #[test]
    fn an_update_is_charged_only_what_grew() {
        let svc = info("", "services");
        let before = usage(
            &svc,
            &json!({"spec": {"type": "ClusterIP", "ports": [{"port": 80}]}}),
        );
        let after = usage(
            &svc,
            &json!({"spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}}),
        );
        let g = growth(&after, &before);
        assert_eq!(g.keys().collect::<Vec<_>>(), ["services.nodeports"]);
        assert_eq!(text(&g["services.nodeports"]), "1");
        assert!(growth(&before, &after).is_empty());
    }

    #[test]
    fn a_scope_selector_matches_pods_by_priority_class() {
        let pods = info("", "pods");
        let quota = |op: &str, values: Value| {
            json!({"spec": {"scopeSelector": {"matchExpressions": [
                {"scopeName": "PriorityClass", "operator": op, "values": values}]}}})
        };
        let high = json!({"spec": {"priorityClassName": "high", "containers": [{"name": "a"}]}});
        let plain = json!({"spec": {"containers": [{"name": "a"}]}});
        let in_high = quota("In", json!(["high", "critical"]));
        assert!(scopes_match(&in_high, &pods, &high));
        assert!(!scopes_match(&in_high, &pods, &plain));
        assert!(!scopes_match(&in_high, &info("", "configmaps"), &json!({})));
        assert!(!scopes_match(
            &quota("NotIn", json!(["high"])),
            &pods,
            &high
        ));
        assert!(scopes_match(
            &quota("NotIn", json!(["high"])),
            &pods,
            &plain
        ));
        assert!(scopes_match(&quota("Exists", json!([])), &pods, &high));
        assert!(!scopes_match(&quota("Exists", json!([])), &pods, &plain));
        assert!(scopes_match(
            &quota("DoesNotExist", json!([])),
            &pods,
            &plain
        ));
        // With scopes too: both must match.
        let mut both = in_high.clone();
        both["spec"]["scopes"] = json!(["NotBestEffort"]);
        assert!(!scopes_match(&both, &pods, &high));
        let cross = json!({"spec": {"affinity": {"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "zone", "namespaces": ["other"]}]}}}});
        let selector = json!({"spec": {"scopeSelector": {"matchExpressions": [
            {"scopeName": "CrossNamespacePodAffinity", "operator": "Exists"}]}}});
        assert!(scopes_match(&selector, &pods, &cross));
        assert!(!scopes_match(&selector, &pods, &plain));
    }

    #[test]
    fn scopes_only_match_pods() {
        let q = json!({"spec": {"scopes": ["BestEffort"]}});
        assert!(!scopes_match(&q, &info("", "configmaps"), &json!({})));
        let be = json!({"spec": {"containers": [{"name": "a"}]}});
        let not_be =
            json!({"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "1"}}}]}});
        assert!(scopes_match(&q, &info("", "pods"), &be));
        assert!(!scopes_match(&q, &info("", "pods"), &not_be));
    }
}
