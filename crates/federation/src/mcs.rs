//! The Multi-cluster Services controller (KEP-1645, SPEC §3.14): a
//! `ServiceExport` `ns/name` in the federation beside a federated Service
//! `ns/name` exports that Service from every member that runs it.
//!
//! - The **exporting clusters** are the members that hold a copy of the
//!   Service (the federated informer of Services) and are Ready.
//! - Each exporting member gets a `ServiceImport` `ns/name` (type
//!   `ClusterSetIP`, or `Headless` for a headless Service; the ports of the
//!   exporting Services merged by the KEP's rules; `status.clusters` listing
//!   the exporting clusters) and, for every **other** exporting member, an
//!   EndpointSlice in `ns` holding that member's ready endpoints for the
//!   Service (read from the member's own EndpointSlices labelled
//!   `kubernetes.io/service-name=name`), labelled
//!   `multicluster.kubernetes.io/service-name=name`,
//!   `multicluster.kubernetes.io/source-cluster=<cluster>` and
//!   `endpointslice.kubernetes.io/managed-by=` [`CONTROLLER_NAME`] (so the
//!   member's EndpointSlice controller leaves them alone), owned by the
//!   ServiceImport (an ownerReference, as the KEP shows), and named
//!   [`slice_name`].
//! - Kept in step, level-triggered: every change of a ServiceExport, a
//!   federated Service, a member copy of a Service, a member EndpointSlice,
//!   one of ours, or the member set recomputes the whole desired state and
//!   writes the difference. An endpoint turning not ready disappears from
//!   the other members' slices; a cluster that leaves or stops being Ready
//!   stops exporting and its slices are deleted from the others; a
//!   ServiceExport deleted takes its ServiceImports and slices with it.
//! - **No finalizer** on the user's ServiceExport (the user's object is the
//!   user's): what the controller wrote carries its labels, and whatever of
//!   ours the member caches hold that no export wants is deleted (owner
//!   tracking by label). A member unreachable when the export goes is
//!   cleaned when it is Ready again.
//! - A member that does not serve `serviceimports` (a kube-apiserver without
//!   the MCS CRD) gets the upstream CRD (`mcs/serviceimports.crd.json`,
//!   kubernetes-sigs/mcs-api v0.5.0) created first; if the member refuses,
//!   the export's `Ready` condition is False (reason `Failed`) naming it.
//! - Conditions on the federation's ServiceExport, by mcs-api's names:
//!   `Valid` (`Valid`; False with `NoService` or `InvalidServiceType`),
//!   `Conflict` (`PortConflict`, `TypeConflict`, `SessionAffinityConflict`,
//!   comma-joined; False with `NoConflicts`) and `Ready` (`Exported`,
//!   `Pending`, `Failed`); Events when it writes.
//!
//! The conflict rules are the KEP's: the exporting clusters' Services are
//! taken oldest first (their copies' `creationTimestamp`, then cluster
//! name); ports are the union, merged by name and then by protocol and
//! port, and a port that clashes with an older one is left out (a
//! `PortConflict`); headlessness and session affinity are the oldest's.
//! In a federation the members run the same federated Service, so conflicts
//! come from per-cluster overrides.
//!
//! Runs on the leader only (it writes); the member namespace denylist
//! applies as it does to propagation.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt as _, StreamExt as _};
use kube::Resource as _;
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::Request;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use ubernetes_api::mcs::{
    self as api, CONDITION_CONFLICT, CONDITION_VALID, LABEL_SERVICE_NAME, LABEL_SOURCE_CLUSTER,
};

use crate::Context;
use crate::dispatch::{self, MemberError};
use crate::events::EventType;
use crate::informer::{FederatedInformer, ObjectKey, Selection};
use crate::kinds::FederatedKind;
use crate::members::Member;

/// The controller's name: the value of `endpointslice.kubernetes.io/managed-by`
/// on the EndpointSlices it writes and of `app.kubernetes.io/managed-by`
/// on the ServiceImports.
pub const CONTROLLER_NAME: &str = "mcs-controller.federation.kubernetes.io";
/// The EndpointSlice label naming the controller that manages a slice.
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// The label naming the controller that manages a ServiceImport.
pub const IMPORT_MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// A hash of what the controller last wrote into an object (a write is
/// skipped while the member's object carries the hash of the desired one).
pub const HASH_ANNOTATION: &str = "federation.kubernetes.io/mcs-hash";
/// The label tying a member's own EndpointSlice to its Service.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// `ServiceExportConditionReady`.
const CONDITION_READY: &str = "Ready";
/// How long after a start a pass waits for every Ready member's caches
/// before going on without the ones that are not listed.
const SETTLE: Duration = Duration::from_secs(30);
/// The most endpoints an EndpointSlice may hold (kube's validation).
const MAX_ENDPOINTS: usize = 1000;

/// The upstream ServiceImport CRD (kubernetes-sigs/mcs-api
/// `config/crd/multicluster.x-k8s.io_serviceimports.yaml`, as JSON),
/// installed into a member that does not serve `serviceimports`.
pub const SERVICE_IMPORT_CRD: &str = include_str!("mcs/serviceimports.crd.json");

/// The `multicluster.x-k8s.io/v1alpha1` ServiceExport kind.
pub fn export_kind() -> FederatedKind {
    FederatedKind::new(
        api::GROUP,
        api::VERSION,
        "ServiceExport",
        "serviceexports",
        true,
    )
}

/// The `multicluster.x-k8s.io/v1alpha1` ServiceImport kind.
pub fn import_kind() -> FederatedKind {
    FederatedKind::new(
        api::GROUP,
        api::VERSION,
        "ServiceImport",
        "serviceimports",
        true,
    )
}

fn service_kind() -> FederatedKind {
    FederatedKind::new("", "v1", "Service", "services", true)
}

fn slice_kind() -> FederatedKind {
    FederatedKind::new(
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        "endpointslices",
        true,
    )
}

// ---- pure policy ----------------------------------------------------------

/// One exporting cluster's Service, as the conflict rules read it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExportingService {
    /// The member cluster.
    pub cluster: String,
    /// The copy's `creationTimestamp` (RFC 3339; older exports win).
    pub created: String,
    /// Its ports, as a ServiceImport lists them.
    pub ports: Vec<api::ServicePort>,
    /// `clusterIP: None`.
    pub headless: bool,
    /// `spec.sessionAffinity` (`None` when unset).
    pub session_affinity: String,
    /// `type: ExternalName` (never exportable).
    pub external_name: bool,
}

impl ExportingService {
    /// From a member's copy of the Service.
    pub fn of(cluster: &str, svc: &Value) -> Self {
        let spec = svc.get("spec").cloned().unwrap_or(Value::Null);
        let s = |p: &str| spec.pointer(p).and_then(Value::as_str).map(str::to_string);
        let ports = spec
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|p| api::ServicePort {
                name: p
                    .get("name")
                    .and_then(Value::as_str)
                    .filter(|n| !n.is_empty())
                    .map(str::to_string),
                protocol: Some(
                    p.get("protocol")
                        .and_then(Value::as_str)
                        .unwrap_or("TCP")
                        .to_string(),
                ),
                app_protocol: p
                    .get("appProtocol")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                port: p
                    .get("port")
                    .and_then(Value::as_i64)
                    .and_then(|n| i32::try_from(n).ok())
                    .unwrap_or(0),
            })
            .collect();
        Self {
            cluster: cluster.to_string(),
            created: svc
                .pointer("/metadata/creationTimestamp")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            ports,
            headless: s("/clusterIP").as_deref() == Some("None"),
            session_affinity: s("/sessionAffinity").unwrap_or_else(|| "None".into()),
            external_name: s("/type").as_deref() == Some("ExternalName"),
        }
    }
}

/// The multi-cluster service derived from its exporting Services.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Derived {
    /// The union of ports, merged by name then by protocol and port.
    pub ports: Vec<api::ServicePort>,
    /// `ClusterSetIP` or `Headless`.
    pub type_: String,
    /// The oldest export's session affinity.
    pub session_affinity: String,
    /// The exporting clusters, sorted by name.
    pub clusters: Vec<String>,
    /// The KEP's conflict reasons (`PortConflict`, `TypeConflict`,
    /// `SessionAffinityConflict`), in that order; empty: none.
    pub conflicts: Vec<&'static str>,
    /// What conflicts and which cluster won, for the condition's message.
    pub message: String,
}

/// Merge the exporting Services by the KEP's conflict resolution policy
/// (oldest export first; see the module docs).
pub fn derive(mut services: Vec<ExportingService>) -> Derived {
    services.sort_by(|a, b| (&a.created, &a.cluster).cmp(&(&b.created, &b.cluster)));
    let mut out = Derived {
        clusters: services.iter().map(|s| s.cluster.clone()).collect(),
        ..Derived::default()
    };
    out.clusters.sort();
    let Some(oldest) = services.first() else {
        out.type_ = api::TYPE_CLUSTER_SET_IP.into();
        out.session_affinity = "None".into();
        return out;
    };
    out.type_ = if oldest.headless {
        api::TYPE_HEADLESS
    } else {
        api::TYPE_CLUSTER_SET_IP
    }
    .into();
    out.session_affinity = oldest.session_affinity.clone();
    let mut notes = Vec::new();
    let mut port_conflict = false;
    for svc in &services {
        for p in &svc.ports {
            let same_name = out.ports.iter().find(|q| q.name == p.name);
            let same_port = out
                .ports
                .iter()
                .find(|q| q.port == p.port && q.protocol == p.protocol);
            match (same_name, same_port) {
                (Some(q), _) if q == p => {}
                (None, None) => out.ports.push(p.clone()),
                (Some(q), _) | (None, Some(q)) => {
                    port_conflict = true;
                    notes.push(format!(
                        "port {} of cluster {} clashes with {}; {} (oldest) wins",
                        port_text(p),
                        svc.cluster,
                        port_text(q),
                        oldest.cluster
                    ));
                }
            }
        }
    }
    if port_conflict {
        out.conflicts.push(api::REASON_PORT_CONFLICT);
    }
    if let Some(s) = services.iter().find(|s| s.headless != oldest.headless) {
        out.conflicts.push(api::REASON_TYPE_CONFLICT);
        notes.push(format!(
            "cluster {} is {}headless, {} (oldest) is not{}",
            s.cluster,
            if s.headless { "" } else { "not " },
            oldest.cluster,
            if oldest.headless { "" } else { " headless" }
        ));
    }
    if let Some(s) = services
        .iter()
        .find(|s| s.session_affinity != oldest.session_affinity)
    {
        out.conflicts.push("SessionAffinityConflict");
        notes.push(format!(
            "cluster {} has sessionAffinity {}, {} (oldest) {}",
            s.cluster, s.session_affinity, oldest.cluster, oldest.session_affinity
        ));
    }
    out.message = notes.join("; ");
    out
}

fn port_text(p: &api::ServicePort) -> String {
    format!(
        "{}{}/{}",
        p.name
            .as_deref()
            .map(|n| format!("{n}:"))
            .unwrap_or_default(),
        p.port,
        p.protocol.as_deref().unwrap_or("TCP")
    )
}

/// The ServiceImport `ns/name` written into each exporting member.
pub fn import_object(ns: &str, name: &str, derived: &Derived) -> Value {
    let mut obj = json!({
        "apiVersion": api::API_VERSION,
        "kind": "ServiceImport",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {IMPORT_MANAGED_BY_LABEL: CONTROLLER_NAME},
        },
        "spec": {
            "type": derived.type_,
            "ports": derived.ports,
            "sessionAffinity": derived.session_affinity,
        },
        "status": {
            "clusters": derived.clusters.iter().map(|c| json!({"cluster": c})).collect::<Vec<_>>(),
        },
    });
    stamp_hash(&mut obj);
    obj
}

/// A derived EndpointSlice's name: `<service>-<cluster>-<hash>` (the hash
/// of the service, cluster and the slice's group), the first part cut so
/// that the whole fits a DNS label (63).
pub fn slice_name(service: &str, cluster: &str, group: &str) -> String {
    let h = crate::member_object::content_hash(&json!([service, cluster, group]));
    let hash = &h[..h.len().min(10)];
    let mut prefix = format!("{service}-{cluster}");
    prefix.truncate(63 - 1 - hash.len());
    let prefix = prefix.trim_end_matches(['-', '.']);
    format!("{prefix}-{hash}")
}

/// The ready endpoints of one source cluster's EndpointSlices of a
/// Service, regrouped by address type and ports (the slices of one group
/// share one port list), as the slices to write into another member:
/// `(name, object)`. Node names and target references stay home (they
/// name objects of the source cluster); the endpoint's zone and hostname
/// travel.
pub fn derived_slices(
    ns: &str,
    service: &str,
    source: &str,
    slices: &[Arc<DynamicObject>],
    owner: Option<(&str, &str)>,
) -> Vec<(String, Value)> {
    let mut groups: BTreeMap<String, (Value, Value, Vec<Value>)> = BTreeMap::new();
    for s in slices {
        let address_type = s.data.get("addressType").cloned().unwrap_or(json!("IPv4"));
        let ports = s.data.get("ports").cloned().unwrap_or(json!([]));
        let key = json!([address_type, ports]).to_string();
        let eps = &mut groups
            .entry(key)
            .or_insert_with(|| (address_type, ports, Vec::new()))
            .2;
        for e in s
            .data
            .get("endpoints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if e.pointer("/conditions/ready") == Some(&Value::Bool(false)) {
                continue;
            }
            let mut kept = serde_json::Map::new();
            kept.insert(
                "addresses".into(),
                e.get("addresses").cloned().unwrap_or(json!([])),
            );
            kept.insert("conditions".into(), json!({"ready": true}));
            for f in ["hostname", "zone"] {
                if let Some(v) = e.get(f).filter(|v| !v.is_null()) {
                    kept.insert(f.into(), v.clone());
                }
            }
            eps.push(Value::Object(kept));
        }
    }
    let mut out = Vec::new();
    for (key, (address_type, ports, mut endpoints)) in groups {
        endpoints.sort_by_key(Value::to_string);
        endpoints.dedup();
        let chunks: Vec<Vec<Value>> = if endpoints.is_empty() {
            vec![Vec::new()]
        } else {
            endpoints
                .chunks(MAX_ENDPOINTS)
                .map(<[Value]>::to_vec)
                .collect()
        };
        for (i, chunk) in chunks.into_iter().enumerate() {
            let name = slice_name(service, source, &format!("{key}#{i}"));
            let mut obj = json!({
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "name": name,
                    "namespace": ns,
                    "labels": {
                        LABEL_SERVICE_NAME: service,
                        LABEL_SOURCE_CLUSTER: source,
                        MANAGED_BY_LABEL: CONTROLLER_NAME,
                    },
                },
                "addressType": address_type,
                "ports": ports,
                "endpoints": chunk,
            });
            if let Some((import, uid)) = owner {
                obj["metadata"]["ownerReferences"] = json!([{
                    "apiVersion": api::API_VERSION,
                    "kind": "ServiceImport",
                    "name": import,
                    "uid": uid,
                    "controller": false,
                }]);
            }
            stamp_hash(&mut obj);
            out.push((name, obj));
        }
    }
    out
}

fn stamp_hash(obj: &mut Value) {
    let hash = crate::member_object::content_hash(obj);
    obj["metadata"]["annotations"] = json!({ HASH_ANNOTATION: hash });
}

fn desired_hash(obj: &Value) -> Option<&str> {
    obj.get("metadata")?
        .get("annotations")?
        .get(HASH_ANNOTATION)?
        .as_str()
}

fn hash_of(obj: &DynamicObject) -> Option<&str> {
    obj.metadata
        .annotations
        .as_ref()?
        .get(HASH_ANNOTATION)
        .map(String::as_str)
}

/// A condition's type, status, reason and message (`lastTransitionTime`
/// is kept while the status does not change).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cond {
    /// `Valid`, `Conflict` or `Ready`.
    pub type_: &'static str,
    /// `True` or `False`.
    pub status: &'static str,
    /// The mcs-api reason.
    pub reason: String,
    /// For a human.
    pub message: String,
}

fn cond(type_: &'static str, ok: bool, reason: &str, message: String) -> Cond {
    Cond {
        type_,
        status: if ok { "True" } else { "False" },
        reason: reason.to_string(),
        message,
    }
}

/// The `status.conditions` of a ServiceExport from these conditions and
/// the ones it has (`existing`), keeping each unchanged condition's
/// `lastTransitionTime`.
pub fn conditions_json(conds: &[Cond], existing: &Value, generation: i64, now: &str) -> Value {
    let old = existing.as_array().cloned().unwrap_or_default();
    let list: Vec<Value> = conds
        .iter()
        .map(|c| {
            let prev = old
                .iter()
                .find(|o| o.get("type").and_then(Value::as_str) == Some(c.type_));
            let since = prev
                .filter(|o| o.get("status").and_then(Value::as_str) == Some(c.status))
                .and_then(|o| o.get("lastTransitionTime").cloned())
                .unwrap_or_else(|| json!(now));
            json!({
                "type": c.type_,
                "status": c.status,
                "reason": c.reason,
                "message": c.message,
                "observedGeneration": generation,
                "lastTransitionTime": since,
            })
        })
        .collect();
    Value::Array(list)
}

// ---- the controller --------------------------------------------------------

/// What the controller keeps between passes.
#[derive(Default)]
struct State {
    /// Per export uid, the conditions last written.
    written: HashMap<String, Vec<Cond>>,
}

/// The caches the controller reads (all shared with other controllers
/// where they exist).
struct Inputs {
    services: Arc<FederatedInformer>,
    sources: Arc<FederatedInformer>,
    ours: Arc<FederatedInformer>,
    imports: Arc<FederatedInformer>,
}

/// What a member's own EndpointSlice cache keeps: everything but
/// managedFields, annotations and ownerReferences.
fn lean_source(slice: &mut DynamicObject) {
    slice.metadata.managed_fields = None;
    slice.metadata.annotations = None;
    slice.metadata.owner_references = None;
}

/// Run the MCS controller until `stop` (the leader's term).
pub async fn run(ctx: Arc<Context>, stop: CancellationToken) -> anyhow::Result<()> {
    let exports = ctx.objects.for_kind(&export_kind());
    let fed_services = ctx.objects.for_kind(&service_kind());
    // Every input's changes, merged: any of them wakes a pass.
    let mut triggers = futures::stream::SelectAll::new();
    triggers.push(exports.triggers().map(drop).boxed());
    let mut inputs: Option<Inputs> = None;
    let mut state = State::default();
    let mut member_changes = ctx.members.subscribe();
    // A pass over half-listed exports or Services would take imports away.
    let listed = async {
        crate::ready::wait_listed(&exports.store()).await
            && crate::ready::wait_listed(&fed_services.store()).await
    };
    tokio::select! {
        () = stop.cancelled() => return Ok(()),
        ok = listed => if !ok { return Ok(()) },
    }
    tracing::info!("multi-cluster services controller started");
    let started = std::time::Instant::now();
    loop {
        let mut retry = false;
        let current = exports.store().state();
        // The member caches start with the first export: a federation
        // without MCS watches nothing more.
        if inputs.is_none() && !current.is_empty() {
            let i = Inputs {
                services: ctx.informers.for_kind(&service_kind()),
                sources: ctx.informers.for_member_objects(
                    &slice_kind(),
                    Selection {
                        labels: format!(
                            "{SERVICE_NAME_LABEL},!{LABEL_SOURCE_CLUSTER},{MANAGED_BY_LABEL}!={CONTROLLER_NAME}"
                        ),
                        modify: lean_source,
                    },
                ),
                ours: ctx.informers.for_member_objects(
                    &slice_kind(),
                    Selection {
                        labels: format!("{MANAGED_BY_LABEL}={CONTROLLER_NAME}"),
                        modify: crate::informer::lean,
                    },
                ),
                imports: ctx.informers.for_member_objects(
                    &import_kind(),
                    Selection {
                        labels: format!("{IMPORT_MANAGED_BY_LABEL}={CONTROLLER_NAME}"),
                        modify: crate::informer::lean,
                    },
                ),
            };
            for inf in [&i.services, &i.sources, &i.ours, &i.imports] {
                triggers.push(inf.subscribe().map(drop).boxed());
            }
            triggers.push(fed_services.triggers().map(drop).boxed());
            inputs = Some(i);
        }
        if let Some(i) = &inputs {
            retry = reconcile(
                &ctx,
                i,
                &current,
                &fed_services.store().state(),
                &mut state,
                started,
            )
            .await;
        }
        let wait = if retry {
            Duration::from_secs(2)
        } else {
            Duration::from_secs(300)
        };
        tokio::select! {
            () = stop.cancelled() => break,
            t = triggers.next() => if t.is_none() { break },
            r = member_changes.changed() => if r.is_err() { break },
            () = tokio::time::sleep(wait) => {}
        }
        // Let a burst of events settle into one pass.
        tokio::time::sleep(Duration::from_millis(100)).await;
        while let Some(Some(())) = triggers.next().now_or_never() {}
    }
    Ok(())
}

/// What one member should hold for one export: the ServiceImport and the
/// derived slices (name, object).
struct Wanted {
    import: Value,
    slices: Vec<(String, Value)>,
    export: Arc<DynamicObject>,
}

/// What one member should hold, per export.
#[derive(Default)]
struct MemberWants {
    imports: BTreeMap<ObjectKey, Wanted>,
}

/// One pass over every export; true when something should be retried soon.
async fn reconcile(
    ctx: &Context,
    i: &Inputs,
    exports: &[Arc<DynamicObject>],
    fed_services: &[Arc<DynamicObject>],
    state: &mut State,
    started: std::time::Instant,
) -> bool {
    let timeout = ctx.options.member_request_timeout;
    let denylist = crate::member_object::namespace_denylist();
    let members: Vec<Arc<Member>> = ctx.members.snapshot();
    // A Ready member whose Service copies or EndpointSlices are not listed
    // yet is left alone (no write there, none of its endpoints taken away
    // elsewhere) until they are.
    let (ready, unknown): (Vec<&Arc<Member>>, Vec<&Arc<Member>>) =
        members.iter().filter(|m| m.ready).partition(|m| {
            i.services.is_synced(&m.name) == Some(true)
                && i.sources.is_synced(&m.name) == Some(true)
        });
    let unknown: BTreeSet<&str> = unknown.iter().map(|m| m.name.as_str()).collect();
    tracing::debug!(
        exports = exports.len(),
        members = ?members.iter().map(|m| (m.name.as_str(), m.ready)).collect::<Vec<_>>(),
        listed = ?ready.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(),
        ?unknown,
        "pass"
    );
    if !unknown.is_empty() && started.elapsed() < SETTLE {
        // Just started (a new term): wait for every member's caches rather
        // than take a member's endpoints away from the others meanwhile.
        return true;
    }
    let fed_svc_keys: BTreeSet<ObjectKey> = fed_services
        .iter()
        .filter(|s| s.metadata.deletion_timestamp.is_none())
        .map(|s| ObjectKey::of(s))
        .collect();
    let mut wants: HashMap<String, MemberWants> = HashMap::new();
    let mut per_export: Vec<(Arc<DynamicObject>, Vec<Cond>, Vec<String>)> = Vec::new();
    for export in exports {
        if export.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let key = ObjectKey::of(export);
        let ns = key.namespace.clone().unwrap_or_default();
        let mut conds = Vec::new();
        if !fed_svc_keys.contains(&key) {
            conds.push(cond(
                CONDITION_VALID,
                false,
                api::REASON_NO_SERVICE,
                format!("no Service {key} in the federation"),
            ));
            per_export.push((export.clone(), conds, Vec::new()));
            continue;
        }
        if let Some(pattern) = denylist.denies(&ns) {
            conds.push(cond(
                CONDITION_VALID,
                true,
                api::REASON_VALID,
                "the Service is exported".into(),
            ));
            conds.push(cond(
                CONDITION_READY,
                false,
                "Failed",
                format!("namespace {ns} is kept out of the members (member namespace denylist {pattern})"),
            ));
            per_export.push((export.clone(), conds, Vec::new()));
            continue;
        }
        let copies: Vec<ExportingService> = ready
            .iter()
            .filter_map(|m| {
                let copy = i.services.get(&m.name, &key)?;
                if copy.metadata.deletion_timestamp.is_some() {
                    return None;
                }
                let v = serde_json::to_value(&*copy).ok()?;
                Some(ExportingService::of(&m.name, &v))
            })
            .collect();
        if copies.iter().any(|c| c.external_name) {
            conds.push(cond(
                CONDITION_VALID,
                false,
                api::REASON_INVALID_SERVICE_TYPE,
                "an ExternalName Service cannot be exported".into(),
            ));
            per_export.push((export.clone(), conds, Vec::new()));
            continue;
        }
        conds.push(cond(
            CONDITION_VALID,
            true,
            api::REASON_VALID,
            "the Service is exported".into(),
        ));
        let derived = derive(copies);
        conds.push(if derived.conflicts.is_empty() {
            cond(
                CONDITION_CONFLICT,
                false,
                api::REASON_NO_CONFLICTS,
                String::new(),
            )
        } else {
            cond(
                CONDITION_CONFLICT,
                true,
                &derived.conflicts.join(","),
                derived.message.clone(),
            )
        });
        tracing::debug!(export = %key, clusters = ?derived.clusters, "exporting clusters");
        let import = import_object(&ns, &key.name, &derived);
        // The ready endpoints of each exporting cluster.
        let by_cluster: BTreeMap<&str, Vec<Arc<DynamicObject>>> = derived
            .clusters
            .iter()
            .map(|c| {
                let slices = i
                    .sources
                    .list(c)
                    .into_iter()
                    .filter(|s| {
                        s.namespace().as_deref() == Some(ns.as_str())
                            && s.labels().get(SERVICE_NAME_LABEL) == Some(&key.name)
                    })
                    .collect();
                (c.as_str(), slices)
            })
            .collect();
        for target in &derived.clusters {
            let owner = i
                .imports
                .get(target, &key)
                .and_then(|o| o.uid())
                .map(|uid| (key.name.clone(), uid));
            let mut slices = Vec::new();
            for (source, src) in &by_cluster {
                if source != target {
                    slices.extend(derived_slices(
                        &ns,
                        &key.name,
                        source,
                        src,
                        owner.as_ref().map(|(n, u)| (n.as_str(), u.as_str())),
                    ));
                }
            }
            wants.entry(target.clone()).or_default().imports.insert(
                key.clone(),
                Wanted {
                    import: import.clone(),
                    slices,
                    export: export.clone(),
                },
            );
        }
        per_export.push((export.clone(), conds, derived.clusters.clone()));
    }

    // Write each Ready member's difference.
    let mut failed: BTreeMap<ObjectKey, Vec<String>> = BTreeMap::new();
    let mut retry = false;
    for m in &ready {
        let want = wants.remove(&m.name).unwrap_or_default();
        for (
            key,
            Wanted {
                import,
                slices,
                export,
            },
        ) in &want.imports
        {
            let ns = key.namespace.as_deref();
            let have = i.imports.get(&m.name, key);
            if have.as_deref().and_then(hash_of) != desired_hash(import) {
                match write_import(ctx, m, import, &key.name, ns).await {
                    Ok(created) => {
                        if created {
                            record(
                                ctx,
                                export,
                                EventType::Normal,
                                "ServiceImportCreated",
                                format!("ServiceImport {key} created in cluster {}", m.name),
                            );
                        }
                    }
                    Err(e) => {
                        retry = true;
                        note_failure(&mut failed, key, m, "ServiceImport", &e);
                        continue;
                    }
                }
            }
            if have.is_none() {
                // The slices name the import as owner: write them once it exists.
                retry = true;
                continue;
            }
            for (name, obj) in slices {
                let skey = ObjectKey::new(ns, name);
                let current = i.ours.get(&m.name, &skey);
                if current.as_deref().and_then(hash_of) == desired_hash(obj) {
                    continue;
                }
                if let Err(e) =
                    dispatch::apply::<Value>(m, &slice_kind(), obj, name, ns, timeout).await
                {
                    retry = true;
                    note_failure(&mut failed, key, m, "EndpointSlice", &e);
                }
            }
        }
        // Ours that nothing wants.
        if i.ours.is_synced(&m.name) == Some(true) {
            let wanted: BTreeSet<ObjectKey> = want
                .imports
                .iter()
                .flat_map(|(k, Wanted { slices, .. })| {
                    slices
                        .iter()
                        .map(|(n, _)| ObjectKey::new(k.namespace.as_deref(), n))
                })
                .collect();
            for s in i.ours.list(&m.name) {
                let k = ObjectKey::of(&s);
                let from_unknown = s
                    .labels()
                    .get(LABEL_SOURCE_CLUSTER)
                    .is_some_and(|c| unknown.contains(c.as_str()));
                if !wanted.contains(&k)
                    && !from_unknown
                    && delete(m, &slice_kind(), &k, timeout).await.is_err()
                {
                    retry = true;
                }
            }
        }
        if i.imports.is_synced(&m.name) == Some(true) {
            for imp in i.imports.list(&m.name) {
                let k = ObjectKey::of(&imp);
                if !want.imports.contains_key(&k) {
                    match delete(m, &import_kind(), &k, timeout).await {
                        Ok(()) => {
                            tracing::info!(cluster = %m.name, import = %k, "ServiceImport no longer exported: deleted")
                        }
                        Err(_) => retry = true,
                    }
                }
            }
        }
    }

    // The exports' conditions.
    for (export, mut conds, clusters) in per_export {
        let key = ObjectKey::of(&export);
        if conds
            .iter()
            .any(|c| c.type_ == CONDITION_VALID && c.status == "True")
            && !conds.iter().any(|c| c.type_ == CONDITION_READY)
        {
            conds.push(match failed.get(&key) {
                Some(errors) => cond(
                    CONDITION_READY,
                    false,
                    "Failed",
                    format!("not exported to {}", errors.join("; ")),
                ),
                None if clusters.is_empty() => cond(
                    CONDITION_READY,
                    false,
                    "Pending",
                    "no Ready member runs the Service".into(),
                ),
                None => cond(
                    CONDITION_READY,
                    true,
                    "Exported",
                    format!("exported from and imported into {}", clusters.join(", ")),
                ),
            });
        }
        let uid = export.uid().unwrap_or_default();
        if state.written.get(&uid) == Some(&conds) {
            continue;
        }
        let was_conflict = state.written.get(&uid).is_some_and(|c| {
            c.iter()
                .any(|c| c.type_ == CONDITION_CONFLICT && c.status == "True")
        });
        if let Some(c) = conds
            .iter()
            .find(|c| c.type_ == CONDITION_CONFLICT && c.status == "True")
            && !was_conflict
        {
            record(
                ctx,
                &export,
                EventType::Warning,
                &c.reason,
                c.message.clone(),
            );
        }
        match write_status(ctx, &export, &conds).await {
            Ok(()) => {
                state.written.insert(uid, conds);
            }
            Err(e) => {
                tracing::debug!(export = %key, error = %e, "cannot write the ServiceExport status");
                retry = true;
            }
        }
    }
    let live: BTreeSet<String> = exports.iter().filter_map(|e| e.uid()).collect();
    state.written.retain(|uid, _| live.contains(uid));
    retry || !unknown.is_empty()
}

/// A member write that failed: logged, and named in the export's `Ready`
/// condition.
fn note_failure(
    failed: &mut BTreeMap<ObjectKey, Vec<String>>,
    key: &ObjectKey,
    m: &Member,
    what: &str,
    e: &MemberError,
) {
    tracing::warn!(cluster = %m.name, export = %key, error = %e, "cannot write the {what}");
    failed
        .entry(key.clone())
        .or_default()
        .push(format!("{}: {e}", m.name));
}

fn record(ctx: &Context, export: &DynamicObject, kind: EventType, reason: &str, message: String) {
    let obj = json!({
        "apiVersion": api::API_VERSION,
        "kind": "ServiceExport",
        "metadata": {"name": export.name_any(), "namespace": export.namespace(), "uid": export.uid()},
    });
    ctx.recorder.record(&obj, kind, reason, message);
}

/// Apply the ServiceImport (status through its subresource); when the
/// member does not serve the kind, create the upstream CRD first (the next
/// pass writes the import). Ok(true) when it was created.
async fn write_import(
    ctx: &Context,
    m: &Member,
    import: &Value,
    name: &str,
    ns: Option<&str>,
) -> Result<bool, MemberError> {
    let timeout = ctx.options.member_request_timeout;
    let kind = import_kind();
    // A member without the kind answers a GET 404 as for a missing
    // object; its apply 404s too.
    let existed = dispatch::get_copy(m, &kind, name, ns, timeout)
        .await?
        .is_some();
    let mut spec_only = import.clone();
    if let Some(o) = spec_only.as_object_mut() {
        o.remove("status");
    }
    match dispatch::apply::<Value>(m, &kind, &spec_only, name, ns, timeout).await {
        Err(e) if e.code == 404 && !existed => {
            return install_crd(m, timeout).await.map(|()| false);
        }
        r => r?,
    };
    let status = json!({
        "apiVersion": api::API_VERSION,
        "kind": "ServiceImport",
        "metadata": {"name": name, "namespace": ns},
        "status": import.get("status").cloned().unwrap_or(Value::Null),
    });
    let params = PatchParams::apply(dispatch::FIELD_MANAGER).force();
    let req = Request::new(DynamicObject::url_path(&kind.resource, ns))
        .patch_subresource("status", name, &params, &Patch::Apply(&status))
        .map_err(|e| MemberError::transport(e.to_string()))?;
    dispatch::send(&m.client, req, timeout).await?;
    Ok(!existed)
}

/// Create the upstream ServiceImport CRD in `m` (a 404 on the kind: the
/// member does not serve it). An error names why the member refused.
async fn install_crd(m: &Member, timeout: Duration) -> Result<(), MemberError> {
    let crd: Value = serde_json::from_str(SERVICE_IMPORT_CRD)
        .map_err(|e| MemberError::transport(e.to_string()))?;
    let req = Request::new("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
        .create(
            &Default::default(),
            serde_json::to_vec(&crd).unwrap_or_default(),
        )
        .map_err(|e| MemberError::transport(e.to_string()))?;
    match dispatch::send(&m.client, req, timeout).await {
        Ok(_) => {
            tracing::info!(cluster = %m.name, "installed the ServiceImport CRD");
            Err(MemberError {
                code: 503,
                message: "ServiceImport CRD installed, not yet served".into(),
            })
        }
        // Already there: not yet Established.
        Err(e) if e.code == 409 => Err(MemberError {
            code: 503,
            message: "ServiceImport CRD not yet served".into(),
        }),
        Err(e) => {
            let message = format!(
                "the member does not serve serviceimports.multicluster.x-k8s.io and refused its CRD: {}",
                e.message
            );
            Err(MemberError {
                code: e.code,
                message,
            })
        }
    }
}

async fn delete(
    m: &Member,
    kind: &FederatedKind,
    key: &ObjectKey,
    timeout: Duration,
) -> Result<(), MemberError> {
    let req = Request::new(DynamicObject::url_path(
        &kind.resource,
        key.namespace.as_deref(),
    ))
    .delete(&key.name, &DeleteParams::background())
    .map_err(|e| MemberError::transport(e.to_string()))?;
    match dispatch::send(&m.client, req, timeout).await {
        Ok(_) => Ok(()),
        Err(e) if e.not_found() => Ok(()),
        Err(e) => {
            tracing::debug!(cluster = %m.name, object = %key, error = %e, "cannot delete");
            Err(e)
        }
    }
}

/// Write the export's conditions through its status subresource (a merge
/// patch of `status.conditions`, keeping unchanged conditions' times).
async fn write_status(ctx: &Context, export: &DynamicObject, conds: &[Cond]) -> kube::Result<()> {
    let ns = export.namespace().unwrap_or_default();
    let api: Api<DynamicObject> =
        Api::namespaced_with(ctx.fed.clone(), &ns, &export_kind().resource);
    let Some(full) = api.get_opt(&export.name_any()).await? else {
        return Ok(());
    };
    let existing = full
        .data
        .pointer("/status/conditions")
        .cloned()
        .unwrap_or(Value::Null);
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let generation = full.metadata.generation.unwrap_or(0);
    let conditions = conditions_json(conds, &existing, generation, &now);
    if conditions == existing {
        return Ok(());
    }
    let patch = json!({"metadata": {"resourceVersion": full.resource_version()}, "status": {"conditions": conditions}});
    api.patch_status(
        &full.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    fn svc(cluster: &str, created: &str, ports: Value) -> ExportingService {
        ExportingService::of(
            cluster,
            &json!({"metadata": {"creationTimestamp": created}, "spec": {"ports": ports}}),
        )
    }

    #[test]
    fn same_ports_everywhere_are_no_conflict() {
        let d = derive(vec![
            svc(
                "b",
                "2025-01-02T00:00:00Z",
                json!([{"name": "http", "port": 80}]),
            ),
            svc(
                "a",
                "2025-01-01T00:00:00Z",
                json!([{"name": "http", "port": 80, "protocol": "TCP"}]),
            ),
        ]);
        assert!(d.conflicts.is_empty(), "{d:?}");
        assert_eq!(d.clusters, ["a", "b"]);
        assert_eq!(d.type_, "ClusterSetIP");
        assert_eq!(d.ports.len(), 1);
        assert_eq!(d.ports[0].protocol.as_deref(), Some("TCP"));
    }

    #[test]
    fn a_clashing_port_is_a_port_conflict_the_oldest_wins() {
        let d = derive(vec![
            svc(
                "new",
                "2025-01-02T00:00:00Z",
                json!([{"name": "http", "port": 8080}, {"name": "metrics", "port": 9090}]),
            ),
            svc(
                "old",
                "2025-01-01T00:00:00Z",
                json!([{"name": "http", "port": 80}]),
            ),
        ]);
        assert_eq!(d.conflicts, ["PortConflict"]);
        let ports: Vec<i32> = d.ports.iter().map(|p| p.port).collect();
        // The union, the older http kept.
        assert_eq!(ports, [80, 9090]);
        assert!(d.message.contains("old (oldest) wins"), "{}", d.message);
        // Same protocol and port under another name clashes too.
        let d = derive(vec![
            svc(
                "a",
                "2025-01-01T00:00:00Z",
                json!([{"name": "http", "port": 80}]),
            ),
            svc(
                "b",
                "2025-01-02T00:00:00Z",
                json!([{"name": "web", "port": 80}]),
            ),
        ]);
        assert_eq!(d.conflicts, ["PortConflict"]);
    }

    #[test]
    fn headlessness_and_affinity_follow_the_oldest() {
        let mut a = svc("a", "2025-01-01T00:00:00Z", json!([]));
        a.headless = true;
        let mut b = svc("b", "2025-01-02T00:00:00Z", json!([]));
        b.session_affinity = "ClientIP".into();
        let d = derive(vec![b, a]);
        assert_eq!(d.type_, "Headless");
        assert_eq!(d.session_affinity, "None");
        assert_eq!(d.conflicts, ["TypeConflict", "SessionAffinityConflict"]);
    }

    fn slice(endpoints: Value) -> Arc<DynamicObject> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": "web-abc", "namespace": "app"},
                "addressType": "IPv4",
                "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
                "endpoints": endpoints,
            }))
            .unwrap(),
        )
    }

    #[test]
    fn derived_slices_hold_the_ready_endpoints_labelled_by_source() {
        let s = slice(json!([
            {"addresses": ["10.0.0.1"], "conditions": {"ready": true}, "nodeName": "n1", "zone": "z1"},
            {"addresses": ["10.0.0.2"], "conditions": {"ready": false}},
            {"addresses": ["10.0.0.3"]},
        ]));
        let out = derived_slices("app", "web", "east", &[s], Some(("web", "u1")));
        assert_eq!(out.len(), 1);
        let (name, obj) = &out[0];
        assert!(name.starts_with("web-east-"), "{name}");
        assert_eq!(obj["metadata"]["labels"][LABEL_SOURCE_CLUSTER], "east");
        assert_eq!(obj["metadata"]["labels"][LABEL_SERVICE_NAME], "web");
        assert_eq!(obj["metadata"]["labels"][MANAGED_BY_LABEL], CONTROLLER_NAME);
        assert_eq!(obj["metadata"]["ownerReferences"][0]["uid"], "u1");
        let addrs: Vec<&str> = obj["endpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["addresses"][0].as_str().unwrap())
            .collect();
        assert_eq!(addrs, ["10.0.0.1", "10.0.0.3"]);
        assert!(obj["endpoints"][0].get("nodeName").is_none());
        assert_eq!(obj["endpoints"][0]["zone"], "z1");
        assert!(obj["metadata"]["annotations"][HASH_ANNOTATION].is_string());
        // Deterministic.
        assert_eq!(
            derived_slices("app", "web", "east", &[slice(json!([]))], None)[0].0,
            *name
        );
    }

    #[test]
    fn slice_names_fit_a_dns_label() {
        let long = "s".repeat(60);
        let n = slice_name(&long, "cluster-with-a-long-name", "g");
        assert!(n.len() <= 63, "{n}");
        assert_ne!(n, slice_name(&long, "cluster-with-a-long-namf", "g"));
    }

    #[test]
    fn conditions_keep_their_transition_time_while_unchanged() {
        let conds = [cond(CONDITION_VALID, true, "Valid", String::new())];
        let first = conditions_json(&conds, &Value::Null, 1, "2025-01-01T00:00:00Z");
        let again = conditions_json(&conds, &first, 1, "2025-02-02T00:00:00Z");
        assert_eq!(again, first);
        let flipped = [cond(CONDITION_VALID, false, "NoService", String::new())];
        let third = conditions_json(&flipped, &first, 1, "2025-02-02T00:00:00Z");
        assert_eq!(third[0]["lastTransitionTime"], "2025-02-02T00:00:00Z");
    }

    /// The start that once hung: the controller waits on a shared store,
    /// another task then waits on the same store (kube-runtime keeps only
    /// the last waiter's waker), the list completes: the controller goes on.
    #[test]
    fn the_embedded_crd_serves_v1alpha1_service_imports() {
        let crd: Value = serde_json::from_str(SERVICE_IMPORT_CRD).unwrap();
        assert_eq!(
            crd["metadata"]["name"],
            "serviceimports.multicluster.x-k8s.io"
        );
        assert!(
            crd["spec"]["versions"]
                .as_array()
                .unwrap()
                .iter()
                .any(|v| v["name"] == "v1alpha1" && v["served"] == true)
        );
    }
}
