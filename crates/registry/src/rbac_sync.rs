//! Roles and bindings as the authorizer reads them: an in-memory snapshot of
//! the four RBAC kinds (Roles, RoleBindings, ClusterRoles,
//! ClusterRoleBindings), kept current by following the stores' watch caches
//! (kube-apiserver's RBAC authorizer reads shared informers the same way).
//!
//! Authorization runs on every request, so nothing is parsed per request:
//! each watch event is decoded once into the typed object and applied to a
//! copy-on-write [`RbacSnapshot`]; readers take an `Arc` of the current one.
//!
//! The ClusterRole aggregation controller lives here too
//! ([`start_aggregation`]): whenever a ClusterRole changes it recomputes the
//! aggregated roles (with the function it is given, the rbac crate's
//! `aggregate_cluster_roles`) and writes back those whose rules changed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};
use parking_lot::RwLock;
use serde_json::Value;
use tokio::sync::watch;
use ubernetes_apimachinery::ApiError;
use ubernetes_storage::EventType;

use crate::Registry;
use crate::store::{ReadAt, Store};

/// The RBAC API group.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// Every Role, RoleBinding, ClusterRole and ClusterRoleBinding at one point.
#[derive(Clone, Debug, Default)]
pub struct RbacSnapshot {
    /// namespace → name → Role.
    pub roles: BTreeMap<String, BTreeMap<String, Role>>,
    /// namespace → name → RoleBinding.
    pub role_bindings: BTreeMap<String, BTreeMap<String, RoleBinding>>,
    /// name → ClusterRole.
    pub cluster_roles: BTreeMap<String, ClusterRole>,
    /// name → ClusterRoleBinding.
    pub cluster_role_bindings: BTreeMap<String, ClusterRoleBinding>,
}

/// One of the four RBAC kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RbacKind {
    Role,
    RoleBinding,
    ClusterRole,
    ClusterRoleBinding,
}

impl RbacKind {
    /// All four.
    pub const ALL: [RbacKind; 4] = [
        RbacKind::Role,
        RbacKind::RoleBinding,
        RbacKind::ClusterRole,
        RbacKind::ClusterRoleBinding,
    ];

    /// The resource (plural) name.
    pub fn resource(self) -> &'static str {
        match self {
            RbacKind::Role => "roles",
            RbacKind::RoleBinding => "rolebindings",
            RbacKind::ClusterRole => "clusterroles",
            RbacKind::ClusterRoleBinding => "clusterrolebindings",
        }
    }
}

fn meta_of(obj: &Value) -> (String, String) {
    let s = |k: &str| {
        obj.pointer(&format!("/metadata/{k}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    (s("namespace"), s("name"))
}

fn decode<T: serde::de::DeserializeOwned>(obj: &Value) -> Option<T> {
    match serde_json::from_value(obj.clone()) {
        Ok(t) => Some(t),
        Err(e) => {
            tracing::warn!(error = %e, "undecodable RBAC object ignored by the authorizer");
            None
        }
    }
}

fn put<T>(map: &mut BTreeMap<String, BTreeMap<String, T>>, ns: String, name: String, v: Option<T>) {
    match v {
        Some(v) => {
            map.entry(ns).or_default().insert(name, v);
        }
        None => {
            if let Some(inner) = map.get_mut(&ns) {
                inner.remove(&name);
                if inner.is_empty() {
                    map.remove(&ns);
                }
            }
        }
    }
}

fn put_flat<T>(map: &mut BTreeMap<String, T>, name: String, v: Option<T>) {
    match v {
        Some(v) => {
            map.insert(name, v);
        }
        None => {
            map.remove(&name);
        }
    }
}

impl RbacSnapshot {
    /// Apply one change (`Deleted` removes, anything else inserts/replaces).
    /// An object that does not decode as its kind is dropped (never grants).
    pub fn apply(&mut self, kind: RbacKind, event: EventType, obj: &Value) {
        let (ns, name) = meta_of(obj);
        if name.is_empty() {
            return;
        }
        let deleted = event == EventType::Deleted;
        match kind {
            RbacKind::Role => {
                let v = if deleted { None } else { decode::<Role>(obj) };
                put(&mut self.roles, ns, name, v);
            }
            RbacKind::RoleBinding => {
                let v = if deleted {
                    None
                } else {
                    decode::<RoleBinding>(obj)
                };
                put(&mut self.role_bindings, ns, name, v);
            }
            RbacKind::ClusterRole => {
                let v = if deleted {
                    None
                } else {
                    decode::<ClusterRole>(obj)
                };
                put_flat(&mut self.cluster_roles, name, v);
            }
            RbacKind::ClusterRoleBinding => {
                let v = if deleted {
                    None
                } else {
                    decode::<ClusterRoleBinding>(obj)
                };
                put_flat(&mut self.cluster_role_bindings, name, v);
            }
        }
    }

    /// Forget every object of `kind` (before a relist).
    pub fn clear(&mut self, kind: RbacKind) {
        match kind {
            RbacKind::Role => self.roles.clear(),
            RbacKind::RoleBinding => self.role_bindings.clear(),
            RbacKind::ClusterRole => self.cluster_roles.clear(),
            RbacKind::ClusterRoleBinding => self.cluster_role_bindings.clear(),
        }
    }
}

/// The live snapshot, following the registry's four RBAC stores.
#[derive(Debug)]
pub struct RbacCache {
    current: RwLock<Arc<RbacSnapshot>>,
    /// Bumped after every applied change.
    changes: watch::Sender<u64>,
    /// Bumped after every applied ClusterRole change.
    cluster_role_changes: watch::Sender<u64>,
}

impl Default for RbacCache {
    fn default() -> Self {
        Self {
            current: RwLock::new(Arc::new(RbacSnapshot::default())),
            changes: watch::channel(0).0,
            cluster_role_changes: watch::channel(0).0,
        }
    }
}

impl RbacCache {
    /// An empty cache that follows nothing (fill it with [`RbacCache::apply`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// List the four stores (a consistent read, so the first request after
    /// start sees every stored role), then follow their watches until the
    /// registry shuts down. Kinds the registry does not serve stay empty.
    pub async fn start(registry: &Arc<Registry>) -> Result<Arc<Self>, ApiError> {
        let cache = Arc::new(Self::new());
        for kind in RbacKind::ALL {
            let Some(store) = registry.get(RBAC_GROUP, "v1", kind.resource()) else {
                continue;
            };
            let revision = cache.relist(kind, &store).await?;
            let follower = cache.clone();
            let stop = registry.stop_token();
            tokio::spawn(async move {
                tokio::select! {
                    () = stop.cancelled() => {}
                    () = follower.follow(kind, store, revision) => {}
                }
            });
        }
        Ok(cache)
    }

    /// The current snapshot (cheap: an `Arc` clone).
    pub fn snapshot(&self) -> Arc<RbacSnapshot> {
        self.current.read().clone()
    }

    /// Apply one change and tell the subscribers.
    pub fn apply(&self, kind: RbacKind, event: EventType, obj: &Value) {
        self.edit(kind, |snap| snap.apply(kind, event, obj));
    }

    /// A receiver that sees a new value after every applied change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// A receiver that sees a new value after every ClusterRole change.
    pub fn subscribe_cluster_roles(&self) -> watch::Receiver<u64> {
        self.cluster_role_changes.subscribe()
    }

    fn edit(&self, kind: RbacKind, f: impl FnOnce(&mut RbacSnapshot)) {
        {
            let mut guard = self.current.write();
            f(Arc::make_mut(&mut guard));
        }
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
        if kind == RbacKind::ClusterRole {
            self.cluster_role_changes
                .send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    async fn relist(&self, kind: RbacKind, store: &Store) -> Result<u64, ApiError> {
        let list = store.list(None, None, 0, None, ReadAt::Latest).await?;
        let items: Vec<Value> = list
            .items
            .iter()
            .filter_map(|b| serde_json::from_slice(b).ok())
            .collect();
        self.edit(kind, |snap| {
            snap.clear(kind);
            for item in &items {
                snap.apply(kind, EventType::Added, item);
            }
        });
        Ok(list.resource_version)
    }

    async fn follow(self: Arc<Self>, kind: RbacKind, store: Arc<Store>, mut revision: u64) {
        loop {
            match store.watch(None, revision, None).await {
                Ok(mut rx) => {
                    while let Some(ev) = rx.recv().await {
                        match ev {
                            Ok(ev) => {
                                if let Ok(v) = serde_json::from_slice::<Value>(&ev.object.json) {
                                    self.apply(kind, ev.kind, &v);
                                }
                            }
                            Err(e) => {
                                tracing::debug!(resource = kind.resource(), error = %e, "RBAC watch ended; relisting");
                                break;
                            }
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(resource = kind.resource(), error = %e, "RBAC watch failed; relisting");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
            loop {
                match self.relist(kind, &store).await {
                    Ok(rv) => {
                        revision = rv;
                        break;
                    }
                    Err(e) => {
                        tracing::warn!(resource = kind.resource(), error = %e, "RBAC relist failed; retrying");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
        }
    }
}

/// How aggregated ClusterRoles are computed: fills in the rules of the
/// aggregated roles in place and returns the names of those that changed
/// (the rbac crate's `aggregate_cluster_roles`).
pub type AggregateFn = fn(&mut [ClusterRole]) -> Vec<String>;

/// One pass of the aggregation controller: recompute from `snapshot` and
/// write back every aggregated ClusterRole whose rules changed. Returns the
/// names written.
pub async fn aggregate_once(
    store: &Store,
    snapshot: &RbacSnapshot,
    aggregate: AggregateFn,
) -> Vec<String> {
    let mut roles: Vec<ClusterRole> = snapshot.cluster_roles.values().cloned().collect();
    let changed = aggregate(&mut roles);
    let mut written = Vec::new();
    for name in changed {
        let Some(role) = roles
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(name.as_str()))
        else {
            continue;
        };
        let rules: Vec<PolicyRule> = role.rules.clone().unwrap_or_default();
        let Ok(rules_json) = serde_json::to_value(&rules) else {
            continue;
        };
        let result = store
            .system_update(None, &name, |mut obj| {
                if obj.get("aggregationRule").is_none_or(Value::is_null) {
                    return Ok(None);
                }
                if obj.get("rules") == Some(&rules_json) {
                    return Ok(None);
                }
                if let Some(map) = obj.as_object_mut() {
                    map.insert("rules".into(), rules_json.clone());
                }
                Ok(Some(obj))
            })
            .await;
        match result {
            Ok(_) => written.push(name),
            Err(e) if e.code == 404 => {}
            Err(e) => {
                tracing::warn!(role = %name, error = %e.message, "writing an aggregated ClusterRole failed");
            }
        }
    }
    written
}

/// Start the ClusterRole aggregation controller: after every ClusterRole
/// change seen by `cache`, recompute the aggregated roles and write back the
/// changed ones, until the registry shuts down.
pub fn start_aggregation(registry: &Arc<Registry>, cache: &Arc<RbacCache>, aggregate: AggregateFn) {
    start_aggregation_until(registry, cache, aggregate, registry.stop_token());
}

/// [`start_aggregation`], working until `stop` (a leadership term).
pub fn start_aggregation_until(
    registry: &Arc<Registry>,
    cache: &Arc<RbacCache>,
    aggregate: AggregateFn,
    stop: tokio_util::sync::CancellationToken,
) {
    let Some(store) = registry.get(RBAC_GROUP, "v1", "clusterroles") else {
        return;
    };
    let cache = cache.clone();
    let mut rx = cache.subscribe_cluster_roles();
    tokio::spawn(async move {
        let work = async move {
            loop {
                rx.mark_unchanged();
                let snapshot = cache.snapshot();
                aggregate_once(&store, &snapshot, aggregate).await;
                if rx.changed().await.is_err() {
                    break;
                }
            }
        };
        tokio::select! {
            () = stop.cancelled() => {}
            () = work => {}
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn role(ns: &str, name: &str) -> Value {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": name, "namespace": ns},
               "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]})
    }

    #[test]
    fn applied_objects_are_indexed_by_namespace_and_name_and_deletes_remove_them() {
        let mut snap = RbacSnapshot::default();
        snap.apply(RbacKind::Role, EventType::Added, &role("a", "r1"));
        snap.apply(RbacKind::Role, EventType::Added, &role("b", "r2"));
        assert_eq!(snap.roles["a"].len(), 1);
        assert!(snap.roles["b"].contains_key("r2"));
        snap.apply(RbacKind::Role, EventType::Deleted, &role("a", "r1"));
        assert!(!snap.roles.contains_key("a"));
    }

    #[test]
    fn an_undecodable_object_is_dropped() {
        let mut snap = RbacSnapshot::default();
        let bad = json!({"metadata": {"name": "x"}, "rules": "nope"});
        snap.apply(RbacKind::ClusterRole, EventType::Added, &bad);
        assert!(snap.cluster_roles.is_empty());
    }

    #[test]
    fn a_cache_change_bumps_the_subscribers_and_leaves_old_snapshots_alone() {
        let cache = RbacCache::new();
        let mut all = cache.subscribe();
        let cluster = cache.subscribe_cluster_roles();
        let before = cache.snapshot();
        cache.apply(RbacKind::Role, EventType::Added, &role("a", "r"));
        assert!(all.has_changed().unwrap_or(false));
        assert!(!cluster.has_changed().unwrap_or(true));
        all.mark_unchanged();
        cache.apply(
            RbacKind::ClusterRole,
            EventType::Added,
            &json!({"metadata": {"name": "c"}}),
        );
        assert!(cluster.has_changed().unwrap_or(false));
        assert!(before.roles.is_empty());
        assert_eq!(cache.snapshot().roles["a"].len(), 1);
        assert!(cache.snapshot().cluster_roles.contains_key("c"));
    }
}

#[cfg(test)]
mod live_tests {
    use super::*;
    use crate::RegistryOptions;
    use crate::store::WriteOptions;
    use serde_json::json;
    use ubernetes_storage::Storage;
    use ubernetes_storage::sled_engine::SledStorage;

    /// Aggregated roles get the rules of every role labelled `agg: "true"`.
    fn by_label(roles: &mut [ClusterRole]) -> Vec<String> {
        let picked: Vec<PolicyRule> = roles
            .iter()
            .filter(|r| {
                r.metadata
                    .labels
                    .as_ref()
                    .is_some_and(|l| l.get("agg").map(String::as_str) == Some("true"))
            })
            .flat_map(|r| r.rules.clone().unwrap_or_default())
            .collect();
        let mut changed = Vec::new();
        for r in roles.iter_mut() {
            if r.aggregation_rule.is_some() && r.rules.as_ref() != Some(&picked) {
                r.rules = Some(picked.clone());
                changed.push(r.metadata.name.clone().unwrap_or_default());
            }
        }
        changed
    }

    async fn until(cache: &RbacCache, f: impl Fn(&RbacSnapshot) -> bool) {
        let mut rx = cache.subscribe();
        let wait = async {
            loop {
                if f(&cache.snapshot()) {
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        };
        assert!(
            tokio::time::timeout(Duration::from_secs(10), wait)
                .await
                .is_ok(),
            "condition not reached"
        );
    }

    #[tokio::test]
    async fn stored_roles_reach_the_snapshot_and_aggregated_roles_are_written_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let storage: Arc<dyn Storage> = Arc::new(SledStorage::open(dir.path()).expect("open sled"));
        let registry = Registry::new(storage, crate::kinds::builtin(), RegistryOptions::default())
            .await
            .expect("registry");
        let store = registry
            .get(RBAC_GROUP, "v1", "clusterroles")
            .expect("clusterroles are served");
        let create = |obj: Value| {
            let store = store.clone();
            async move {
                store
                    .create(None, None, obj, &WriteOptions::default())
                    .await
                    .expect("create")
            }
        };
        create(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "before"}}),
        )
        .await;
        let cache = RbacCache::start(&registry).await.expect("cache");
        assert!(cache.snapshot().cluster_roles.contains_key("before"));
        start_aggregation(&registry, &cache, by_label);

        create(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "agg"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "true"}}]}}),
        )
        .await;
        create(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "part", "labels": {"agg": "true"}},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}]}),
        )
        .await;
        until(&cache, |s| {
            s.cluster_roles.get("agg").is_some_and(|r| {
                r.rules.as_ref().is_some_and(|rules| {
                    rules.len() == 1 && rules[0].resources == Some(vec!["secrets".into()])
                })
            })
        })
        .await;
        let stored = store.get_value(None, "agg").await.expect("stored");
        assert_eq!(stored["rules"][0]["resources"], json!(["secrets"]));
        registry.shutdown();
    }
}
