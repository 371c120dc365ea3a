//! The cluster inventory controller (SPEC §3.12, KEP-4322): every Cluster,
//! push or pull, is published as a sig-multicluster `ClusterProfile`
//! (`multicluster.x-k8s.io/v1alpha1`) of the same name in
//! `federation-system`, so tools that read the inventory (Argo CD, Kueue's
//! MultiKueue, Headlamp) see the federation's clusters.
//!
//! A profile is [`desired`] from its Cluster alone:
//! - labels `x-k8s.io/cluster-manager: ubernetes`, `spec.clusterManager.name:
//!   ubernetes` ([`MANAGER`]), `spec.displayName` the Cluster's name (set at
//!   creation only: the KEP leaves it to the consumer), an ownerReference to
//!   the Cluster (the garbage collector removes a profile whose Cluster is
//!   gone, also when no leader runs);
//! - `status.conditions`: `ControlPlaneHealthy` from the Cluster's `Ready`
//!   (status, reason, message and lastTransitionTime carried over; Unknown
//!   before the first probe) and `Joined` (True since the Cluster was made);
//! - `status.version.kubernetes`: the Cluster's `status.kubernetesVersion`;
//! - `status.properties`: KEP-2149's `cluster.clusterset.k8s.io` (the
//!   cluster's name), `topology.kubernetes.io/region`,
//!   `topology.kubernetes.io/zone` (the zones, comma-joined) and
//!   `federation.kubernetes.io/sync-mode` (`Push` or `Pull`).
//!
//! Level-triggered: a change of any Cluster or profile recomputes every
//! profile ([`plan`]) and writes the difference: a missing profile is
//! created, a status that is not the desired one (a user's edit included)
//! is replaced whole, a missing label or ownerReference put back, and a
//! profile of ours whose Cluster is gone or being deleted (unjoin) deleted.
//! A profile of the same name owned by another cluster manager is left
//! alone (its `clusterManager` is immutable). Runs on the leader only.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, OwnerReference, Time};
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use ubernetes_api::cluster_inventory::{
    CONDITION_CONTROL_PLANE_HEALTHY, CONDITION_JOINED, ClusterManager, ClusterProfile,
    ClusterProfileSpec, ClusterProfileStatus, ClusterVersion, LABEL_CLUSTER_MANAGER,
    PROPERTY_CLUSTER_ID, Property,
};
use ubernetes_api::{Cluster, FEDERATION_NAMESPACE, SYNC_MODE_PULL, SYNC_MODE_PUSH};

use crate::Context;
use crate::dns_records::reflect;

/// The cluster manager's name: `spec.clusterManager.name` and the value of
/// the `x-k8s.io/cluster-manager` label on every profile the federation writes.
pub const MANAGER: &str = "ubernetes";
/// The property holding the Cluster's region (its nodes' label of that name).
pub const PROPERTY_REGION: &str = "topology.kubernetes.io/region";
/// The property holding the Cluster's zones, comma-joined.
pub const PROPERTY_ZONES: &str = "topology.kubernetes.io/zone";
/// The property holding the Cluster's `spec.syncMode` (`Push` or `Pull`).
pub const PROPERTY_SYNC_MODE: &str = "federation.kubernetes.io/sync-mode";
/// `Joined`'s reason while the Cluster exists.
pub const REASON_JOINED: &str = "ClusterJoined";
/// `ControlPlaneHealthy`'s reason before the Cluster's first probe.
pub const REASON_UNKNOWN: &str = "ClusterStatusUnknown";
/// The most characters a property value may hold (the CRD's schema).
const MAX_VALUE: usize = 1024;

/// One write [`plan`] asks for.
#[derive(Debug, PartialEq)]
pub enum Action {
    /// Create the profile (then write its status).
    Create(Box<ClusterProfile>),
    /// Put back the label and ownerReference of an existing profile.
    Metadata {
        name: String,
        labels: BTreeMap<String, String>,
        owner: OwnerReference,
    },
    /// Replace the profile's status (the profile as read, status replaced).
    Status(Box<ClusterProfile>),
    /// Delete a profile of ours whose Cluster is gone (its uid a precondition).
    Delete { name: String, uid: Option<String> },
}

/// Run the controller until `stop` (the leader's term).
pub async fn run(ctx: Arc<Context>, stop: CancellationToken) -> anyhow::Result<()> {
    let changed = Arc::new(Notify::new());
    let clusters = reflect(Api::<Cluster>::all(ctx.fed.clone()), &changed, &stop);
    let profiles_api: Api<ClusterProfile> = Api::namespaced(ctx.fed.clone(), FEDERATION_NAMESPACE);
    let profiles = reflect(profiles_api.clone(), &changed, &stop);
    // A pass over half-listed Clusters would delete profiles.
    let listed = async {
        crate::ready::wait_listed(&clusters).await && crate::ready::wait_listed(&profiles).await
    };
    tokio::select! {
        () = stop.cancelled() => return Ok(()),
        ok = listed => if !ok { return Ok(()) },
    }
    tracing::info!("cluster inventory (ClusterProfile) controller started");
    let mut warned = HashSet::new();
    loop {
        let (actions, foreign) = plan(&clusters.state(), &profiles.state(), now());
        for name in foreign {
            if warned.insert(name.clone()) {
                tracing::warn!(
                    cluster = name,
                    "a ClusterProfile of this name belongs to another cluster manager; not publishing the Cluster"
                );
            }
        }
        let mut retry = false;
        for action in actions {
            if let Err(e) = apply(&profiles_api, action).await {
                tracing::debug!(error = %e, "writing a ClusterProfile; retrying");
                retry = true;
            }
        }
        let wait = if retry {
            Duration::from_secs(2)
        } else {
            Duration::from_secs(300)
        };
        tokio::select! {
            () = stop.cancelled() => break,
            () = changed.notified() => {}
            () = tokio::time::sleep(wait) => {}
        }
        // Let a burst of events settle into one pass.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

fn now() -> Time {
    Time(jiff::Timestamp::now())
}

async fn apply(api: &Api<ClusterProfile>, action: Action) -> kube::Result<()> {
    match action {
        Action::Create(p) => {
            let name = p.name_any();
            let status = p.status.clone();
            let mut created = match api.create(&PostParams::default(), &p).await {
                Ok(c) => c,
                // Our cache is behind: the next pass sees it.
                Err(kube::Error::Api(e)) if e.code == 409 => return Ok(()),
                Err(e) => return Err(e),
            };
            tracing::info!(cluster = name, "published the Cluster as a ClusterProfile");
            created.status = status;
            api.replace_status(&name, &PostParams::default(), &created)
                .await
                .map(drop)
        }
        Action::Metadata {
            name,
            labels,
            owner,
        } => {
            let patch = json!({"metadata": {"labels": labels, "ownerReferences": [owner]}});
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map(drop)
        }
        Action::Status(p) => {
            let name = p.name_any();
            tracing::debug!(cluster = name, "writing a ClusterProfile's status");
            api.replace_status(&name, &PostParams::default(), &p)
                .await
                .map(drop)
        }
        Action::Delete { name, uid } => {
            let dp = DeleteParams {
                preconditions: Some(Preconditions {
                    uid,
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            match api.delete(&name, &dp).await {
                Ok(_) => {
                    tracing::info!(
                        cluster = name,
                        "the Cluster left: its ClusterProfile deleted"
                    );
                    Ok(())
                }
                Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => Ok(()),
                Err(e) => Err(e),
            }
        }
    }
}

/// Whether a profile is the federation's (its immutable `clusterManager`).
fn is_ours(p: &ClusterProfile) -> bool {
    p.spec
        .as_ref()
        .is_some_and(|s| s.cluster_manager.name == MANAGER)
}

/// Every write that makes the profiles match the Clusters, and the names of
/// Clusters whose profile belongs to another cluster manager.
pub fn plan(
    clusters: &[Arc<Cluster>],
    profiles: &[Arc<ClusterProfile>],
    now: Time,
) -> (Vec<Action>, Vec<String>) {
    let by_name: BTreeMap<String, &Arc<ClusterProfile>> =
        profiles.iter().map(|p| (p.name_any(), p)).collect();
    let live: BTreeMap<String, &Arc<Cluster>> = clusters
        .iter()
        .filter(|c| c.metadata.deletion_timestamp.is_none())
        .map(|c| (c.name_any(), c))
        .collect();
    let mut actions = Vec::new();
    let mut foreign = Vec::new();
    for (name, cluster) in &live {
        let existing = by_name.get(name).map(|p| p.as_ref());
        match existing {
            Some(p) if !is_ours(p) => foreign.push(name.clone()),
            Some(p) => actions.extend(repairs(cluster, p, &now)),
            None => actions.push(Action::Create(Box::new(desired(cluster, None, &now)))),
        }
    }
    for (name, p) in &by_name {
        if is_ours(p) && !live.contains_key(name) {
            actions.push(Action::Delete {
                name: name.clone(),
                uid: p.metadata.uid.clone(),
            });
        }
    }
    (actions, foreign)
}

/// What an existing profile of ours needs: its label and ownerReference
/// back, its status replaced.
fn repairs(cluster: &Cluster, p: &ClusterProfile, now: &Time) -> Vec<Action> {
    let want = desired(cluster, Some(p), now);
    let mut out = Vec::new();
    // The status first: the metadata patch (no precondition) would make
    // the status write's resourceVersion stale.
    if p.status != want.status {
        let mut next = p.clone();
        next.status = want.status.clone();
        out.push(Action::Status(Box::new(next)));
    }
    let owner = owner_ref(cluster);
    let has_owner = p
        .metadata
        .owner_references
        .as_ref()
        .is_some_and(|o| o.contains(&owner));
    let labelled = p.labels().get(LABEL_CLUSTER_MANAGER).map(String::as_str) == Some(MANAGER);
    if !has_owner || !labelled {
        out.push(Action::Metadata {
            name: p.name_any(),
            labels: want.labels().clone(),
            owner,
        });
    }
    out
}

fn owner_ref(cluster: &Cluster) -> OwnerReference {
    OwnerReference {
        api_version: format!("{}/{}", ubernetes_api::GROUP, ubernetes_api::VERSION),
        kind: "Cluster".into(),
        name: cluster.name_any(),
        uid: cluster.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: None,
    }
}

/// The profile `cluster` is published as (`existing`: the profile as read,
/// whose conditions keep their transition time while unchanged).
pub fn desired(cluster: &Cluster, existing: Option<&ClusterProfile>, now: &Time) -> ClusterProfile {
    let name = cluster.name_any();
    let status = cluster.status.clone().unwrap_or_default();
    let ready = status.conditions.iter().find(|c| c.type_ == "Ready");
    let (health, reason, message) = match ready {
        Some(c) => {
            let fallback = match c.status.as_str() {
                "True" => crate::clusters::REASON_READY,
                "False" => crate::clusters::REASON_NOT_READY,
                _ => REASON_UNKNOWN,
            };
            (
                c.status.clone(),
                c.reason
                    .clone()
                    .filter(|r| is_reason(r))
                    .unwrap_or_else(|| fallback.into()),
                c.message.clone().unwrap_or_default(),
            )
        }
        None => (
            "Unknown".to_string(),
            REASON_UNKNOWN.to_string(),
            "the federation has not probed the cluster yet".to_string(),
        ),
    };
    let since = |type_: &str, status: &str| {
        existing
            .and_then(|p| p.condition(type_))
            .filter(|c| c.status == status)
            .map(|c| c.last_transition_time.clone())
    };
    let health_since = ready
        .and_then(|c| c.last_transition_time.clone())
        .or_else(|| since(CONDITION_CONTROL_PLANE_HEALTHY, &health))
        .unwrap_or_else(|| now.clone());
    let joined_since = cluster
        .metadata
        .creation_timestamp
        .clone()
        .or_else(|| since(CONDITION_JOINED, "True"))
        .unwrap_or_else(|| now.clone());
    let mode = if cluster.spec.is_pull() {
        SYNC_MODE_PULL
    } else {
        SYNC_MODE_PUSH
    };
    let conditions = vec![
        Condition {
            type_: CONDITION_CONTROL_PLANE_HEALTHY.into(),
            status: health,
            reason,
            message,
            last_transition_time: health_since,
            observed_generation: None,
        },
        Condition {
            type_: CONDITION_JOINED.into(),
            status: "True".into(),
            reason: REASON_JOINED.into(),
            message: format!("{name} is a member of the federation ({mode} mode)"),
            last_transition_time: joined_since,
            observed_generation: None,
        },
    ];
    let mut properties = vec![property(PROPERTY_CLUSTER_ID, &name)];
    if let Some(region) = status.region.as_deref().filter(|r| !r.is_empty()) {
        properties.push(property(PROPERTY_REGION, region));
    }
    if !status.zones.is_empty() {
        properties.push(property(PROPERTY_ZONES, &status.zones.join(",")));
    }
    properties.push(property(PROPERTY_SYNC_MODE, mode));
    let version = status
        .kubernetes_version
        .filter(|v| !v.is_empty())
        .map(|kubernetes| ClusterVersion { kubernetes });
    let mut p = existing.cloned().unwrap_or_default();
    if existing.is_none() {
        p.metadata.name = Some(name.clone());
        p.metadata.namespace = Some(FEDERATION_NAMESPACE.into());
        p.metadata.owner_references = Some(vec![owner_ref(cluster)]);
        p.spec = Some(ClusterProfileSpec {
            display_name: name,
            cluster_manager: ClusterManager {
                name: MANAGER.into(),
            },
        });
    }
    p.labels_mut()
        .insert(LABEL_CLUSTER_MANAGER.into(), MANAGER.into());
    // What the federation does not know is not published: access
    // providers (the member credentials stay in the federation).
    p.status = Some(ClusterProfileStatus {
        conditions,
        version,
        properties,
        ..ClusterProfileStatus::default()
    });
    p
}

fn property(name: &str, value: &str) -> Property {
    Property {
        name: name.into(),
        value: value.chars().take(MAX_VALUE).collect(),
        last_observed_time: None,
    }
}

/// metav1.Condition's reason pattern: `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`.
fn is_reason(r: &str) -> bool {
    let mut chars = r.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && r.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ',' | ':'))
        && !r.ends_with([',', ':'])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn cluster(v: Value) -> Arc<Cluster> {
        let mut v = v;
        v["apiVersion"] = json!("federation/v1beta1");
        v["kind"] = json!("Cluster");
        Arc::new(serde_json::from_value(v).unwrap())
    }

    fn t(s: &str) -> Time {
        Time(s.parse().unwrap())
    }

    fn east(ready: &str, reason: &str) -> Arc<Cluster> {
        cluster(json!({
            "metadata": {"name": "east", "uid": "u-east", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"syncMode": "Pull"},
            "status": {
                "conditions": [{"type": "Ready", "status": ready, "reason": reason,
                                "message": "probe says so", "lastTransitionTime": "2026-01-02T00:00:00Z"}],
                "zones": ["a", "b"], "region": "eu", "kubernetesVersion": "v1.36.2"
            }
        }))
    }

    #[test]
    fn a_profile_carries_the_clusters_health_version_and_properties() {
        let p = desired(
            &east("False", "ClusterNotReady"),
            None,
            &t("2026-03-01T00:00:00Z"),
        );
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["metadata"]["namespace"], "federation-system");
        assert_eq!(
            v["metadata"]["labels"]["x-k8s.io/cluster-manager"],
            "ubernetes"
        );
        assert_eq!(v["metadata"]["ownerReferences"][0]["uid"], "u-east");
        assert_eq!(
            v["spec"],
            json!({"displayName": "east", "clusterManager": {"name": "ubernetes"}})
        );
        let health = p.condition(CONDITION_CONTROL_PLANE_HEALTHY).unwrap();
        assert_eq!(
            (
                health.status.as_str(),
                health.reason.as_str(),
                health.message.as_str()
            ),
            ("False", "ClusterNotReady", "probe says so")
        );
        assert_eq!(health.last_transition_time, t("2026-01-02T00:00:00Z"));
        let joined = p.condition(CONDITION_JOINED).unwrap();
        assert_eq!(
            (joined.status.as_str(), &joined.last_transition_time),
            ("True", &t("2026-01-01T00:00:00Z"))
        );
        assert_eq!(v["status"]["version"]["kubernetes"], "v1.36.2");
        assert_eq!(
            v["status"]["properties"],
            json!([
                {"name": "cluster.clusterset.k8s.io", "value": "east"},
                {"name": "topology.kubernetes.io/region", "value": "eu"},
                {"name": "topology.kubernetes.io/zone", "value": "a,b"},
                {"name": "federation.kubernetes.io/sync-mode", "value": "Pull"}
            ])
        );
    }

    #[test]
    fn an_unprobed_cluster_is_unknown_and_push() {
        let c = cluster(json!({"metadata": {"name": "west"}, "spec": {}}));
        let p = desired(&c, None, &t("2026-03-01T00:00:00Z"));
        let health = p.condition(CONDITION_CONTROL_PLANE_HEALTHY).unwrap();
        assert_eq!(
            (health.status.as_str(), health.reason.as_str()),
            ("Unknown", REASON_UNKNOWN)
        );
        let props = &p.status.as_ref().unwrap().properties;
        assert_eq!(props.last().map(|p| p.value.as_str()), Some("Push"));
        assert_eq!(props.len(), 2);
    }

    #[test]
    fn the_plan_creates_repairs_and_deletes() {
        let now = t("2026-03-01T00:00:00Z");
        let c = east("True", "ClusterReady");
        // None yet: created.
        let (a, _) = plan(std::slice::from_ref(&c), &[], now.clone());
        assert!(matches!(a.as_slice(), [Action::Create(_)]));
        // In step: nothing to do.
        let mut p = desired(&c, None, &now);
        p.metadata.uid = Some("p1".into());
        let (a, _) = plan(
            std::slice::from_ref(&c),
            &[Arc::new(p.clone())],
            now.clone(),
        );
        assert_eq!(a, []);
        // A user's edit of the status and the label: both put back.
        let mut edited = p.clone();
        edited.status.as_mut().unwrap().conditions[0].status = "False".into();
        edited.labels_mut().remove(LABEL_CLUSTER_MANAGER);
        let (a, _) = plan(std::slice::from_ref(&c), &[Arc::new(edited)], now.clone());
        assert!(
            matches!(a.as_slice(), [Action::Status(s), Action::Metadata { .. }]
            if s.status == p.status)
        );
        // The Cluster went unhealthy: the status follows.
        let (a, _) = plan(
            &[east("Unknown", "ClusterNotReachable")],
            &[Arc::new(p.clone())],
            now.clone(),
        );
        assert!(matches!(a.as_slice(), [Action::Status(s)]
            if s.condition(CONDITION_CONTROL_PLANE_HEALTHY).unwrap().status == "Unknown"));
        // Unjoined (gone, or being deleted): deleted.
        let (a, _) = plan(&[], &[Arc::new(p.clone())], now.clone());
        assert_eq!(
            a,
            [Action::Delete {
                name: "east".into(),
                uid: Some("p1".into())
            }]
        );
        let mut leaving = (*c).clone();
        leaving.metadata.deletion_timestamp = Some(now.clone());
        let (a, _) = plan(&[Arc::new(leaving)], &[Arc::new(p.clone())], now.clone());
        assert!(matches!(a.as_slice(), [Action::Delete { .. }]));
        // Another manager's profile: left alone, named.
        let mut theirs = p;
        theirs.spec.as_mut().unwrap().cluster_manager.name = "ocm".into();
        let (a, foreign) = plan(&[c], &[Arc::new(theirs.clone())], now.clone());
        assert_eq!((a.len(), foreign), (0, vec!["east".to_string()]));
        let (a, _) = plan(&[], &[Arc::new(theirs)], now);
        assert_eq!(a, []);
    }

    #[test]
    fn reasons_follow_the_condition_pattern() {
        assert!(is_reason("ClusterReady"));
        assert!(!is_reason("1Bad"));
        assert!(!is_reason("has space"));
        assert!(!is_reason("Trailing:"));
        let c = cluster(json!({"metadata": {"name": "w"}, "spec": {},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "not ok!"}]}}));
        let p = desired(&c, None, &t("2026-03-01T00:00:00Z"));
        assert_eq!(
            p.condition(CONDITION_CONTROL_PLANE_HEALTHY).unwrap().reason,
            "ClusterReady"
        );
    }
}
