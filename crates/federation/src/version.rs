//! The version record (kubefed's `version` package): per federated object,
//! a [`PropagationRecord`] of the federation's own (`federation/v1beta1`),
//! never the user's object (SPEC §3.8). Per member cluster it says where
//! propagation stands, as kubectl users see it (`state`,
//! `observedGeneration`, `message`, the `replicas` placed there), and what
//! was last applied there (`hash` of the member copy and the member
//! object's `resourceVersion` right after): the version cache that lets a
//! restart send no writes for objects in sync.
//!
//! # Where a record lives, and how it drives deletion
//! - In the federated object's namespace (cluster-scoped objects:
//!   `federation-system`), named `<name>.<resource>[.<group>]`
//!   ([`record_name`]), labelled with the kind ([`RESOURCE_LABEL`]) so each
//!   kind's controller watches only its own.
//! - Owned by the federated object: an ownerReference with
//!   `blockOwnerDeletion: true`, so the garbage collector applies the
//!   user's `propagationPolicy` to it as to any dependent.
//! - Held by the finalizer [`RECORD_FINALIZER`] until the member copies are
//!   gone (see [`crate::deletion`]). Background delete: the object goes at
//!   once, the collector deletes the record, the federation deletes the
//!   copies and lets the record go. Foreground: the object waits in
//!   `foregroundDeletion` until its dependents, this record included, are
//!   gone, so until the copies are. Orphan: the collector drops the
//!   ownerReference; a record without one has its copies let go (our label
//!   and annotation removed) and is deleted.
//!
//! Pure functions, no I/O.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
pub use ubernetes_api::PropagationRecord;
use ubernetes_api::propagation::DriftedField;
use ubernetes_api::{
    ClusterPropagation, ObjectReference, PropagationRecordSpec, PropagationRecordStatus,
};

use crate::kinds::FederatedKind;

/// The finalizer on every [`PropagationRecord`]: removed once the member
/// copies are deleted (or let go). Federation v1 put it on the user's
/// object; here it holds only the federation's own record.
pub const RECORD_FINALIZER: &str = "federation.kubernetes.io/delete-from-underlying-clusters";
/// The label on every record naming its kind (`configmaps`,
/// `deployments.apps`, …), see [`resource_label`].
pub const RESOURCE_LABEL: &str = "federation.kubernetes.io/resource";
/// Where the records of cluster-scoped objects live.
pub use ubernetes_api::FEDERATION_NAMESPACE as CLUSTER_SCOPED_RECORDS_NAMESPACE;

/// Where propagation to one cluster stands.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SyncState {
    /// The member object carries what was last applied.
    InSync,
    /// Not applied yet (or being applied).
    #[default]
    Pending,
    /// The last attempt failed; `message` says why.
    Failed,
}

impl SyncState {
    fn parse(s: &str) -> Self {
        match s {
            "InSync" => Self::InSync,
            "Failed" => Self::Failed,
            _ => Self::Pending,
        }
    }

    /// The name written in the record.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::InSync => "InSync",
            Self::Pending => "Pending",
            Self::Failed => "Failed",
        }
    }
}

/// The record of one member cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterRecord {
    /// Where propagation stands (Default: Pending).
    pub state: SyncState,
    /// The federated object's `metadata.generation` this state is about.
    pub observed_generation: i64,
    /// Why it failed or is pending (empty when in sync).
    pub message: String,
    /// content_hash of the member copy last applied successfully.
    pub hash: Option<String>,
    /// the member object's resourceVersion right after that apply.
    pub resource_version: Option<String>,
    /// The `spec.replicas` sent there, when scheduled.
    pub replicas: Option<i64>,
    /// The drifted fields kept in the member (drift policy `Report`, see
    /// [`crate::sync::drift`]); empty when none or when drift is repaired.
    pub drift: Vec<DriftedField>,
    /// The hash of the pod template last sent there (workloads; see
    /// [`crate::rollout`]).
    pub template_hash: Option<String>,
    /// The cluster's wave in the object's rollout (from 1).
    pub wave: Option<i64>,
    /// Where the cluster's wave stands (`Waiting`, `Progressing`,
    /// `Healthy`, `Failed`).
    pub wave_state: Option<String>,
}

/// Cluster name → record.
pub type PropagationState = BTreeMap<String, ClusterRecord>;

/// The per-cluster state in a record's status.
pub fn state_of(record: &PropagationRecord) -> PropagationState {
    record
        .status
        .as_ref()
        .map(|s| {
            s.clusters
                .iter()
                .map(|c| {
                    (
                        c.name.clone(),
                        ClusterRecord {
                            state: SyncState::parse(&c.state),
                            observed_generation: c.observed_generation,
                            message: c.message.clone(),
                            hash: c.hash.clone(),
                            resource_version: c.resource_version.clone(),
                            replicas: c.replicas,
                            drift: c.drift.clone(),
                            template_hash: c.template_hash.clone(),
                            wave: c.wave,
                            wave_state: c.wave_state.clone(),
                        },
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The status that records `state` (clusters sorted by name). Its
/// `conditions` are left empty, so a merge patch of it keeps those other
/// controllers wrote ([`conditions_patch`]).
pub fn status_of(state: &PropagationState) -> PropagationRecordStatus {
    PropagationRecordStatus {
        conditions: Vec::new(),
        rollout: None,
        clusters: state
            .iter()
            .map(|(name, c)| ClusterPropagation {
                name: name.clone(),
                state: c.state.as_str().to_string(),
                observed_generation: c.observed_generation,
                message: c.message.clone(),
                hash: c.hash.clone(),
                resource_version: c.resource_version.clone(),
                replicas: c.replicas,
                drift: c.drift.clone(),
                template_hash: c.template_hash.clone(),
                wave: c.wave,
                wave_state: c.wave_state.clone(),
            })
            .collect(),
    }
}

/// The condition type of an Ingress host that another, older claim holds
/// (written by [`crate::dns_records`]).
pub const DNS_NAME_CONFLICT: &str = "DNSNameConflict";

/// A merge patch of a record's status setting its condition `type_`:
/// `Some((reason, message))` sets it `True` (the transition time `now`
/// unless it was already True with the same reason and message), `None`
/// removes it; the record's other conditions are kept. `None` when the
/// record already says so (nothing to write).
pub fn conditions_patch(
    record: &PropagationRecord,
    type_: &str,
    set: Option<(&str, &str)>,
    now: jiff::Timestamp,
) -> Option<serde_json::Value> {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
    let current: Vec<Condition> = record
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let existing = current.iter().find(|c| c.type_ == type_);
    let mut next: Vec<Condition> = current
        .iter()
        .filter(|c| c.type_ != type_)
        .cloned()
        .collect();
    match set {
        Some((reason, message)) => {
            if existing
                .is_some_and(|c| c.status == "True" && c.reason == reason && c.message == message)
            {
                return None;
            }
            next.push(Condition {
                type_: type_.to_string(),
                status: "True".into(),
                reason: reason.to_string(),
                message: message.to_string(),
                last_transition_time: Time(now),
                observed_generation: None,
            });
        }
        None if existing.is_none() => return None,
        None => {}
    }
    Some(serde_json::json!({"status": {"conditions": next}}))
}

/// The value of [`RESOURCE_LABEL`] for `kind`: its id (`plural.group`)
/// when it fits a label value, else a prefix and a hash of it.
pub fn resource_label(kind: &FederatedKind) -> String {
    shorten(&kind.id(), 63)
}

/// The name of the record of object `name` of `kind`:
/// `<name>.<plural>[.<group>]` (a prefix and a hash when longer than a
/// name may be).
pub fn record_name(kind: &FederatedKind, name: &str) -> String {
    shorten(&format!("{name}.{}", kind.id()), 253)
}

/// The namespace of the record of an object in `namespace` (`None`:
/// cluster-scoped).
pub fn record_namespace(namespace: Option<&str>) -> String {
    namespace
        .filter(|n| !n.is_empty())
        .unwrap_or(CLUSTER_SCOPED_RECORDS_NAMESPACE)
        .to_string()
}

fn shorten(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let hash = hex16(s);
    // ASCII by construction (names and ids are DNS subdomains).
    let keep = max - hash.len() - 1;
    let prefix: String = s.chars().take(keep).collect();
    format!("{}-{hash}", prefix.trim_end_matches(['.', '-']))
}

fn hex16(s: &str) -> String {
    Sha256::digest(s.as_bytes())
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A new record for the federated object with metadata `meta` of `kind`:
/// owned by it (blocking its foreground deletion), held by
/// [`RECORD_FINALIZER`], no status yet.
pub fn new_record(kind: &FederatedKind, meta: &ObjectMeta) -> PropagationRecord {
    let name = meta.name.clone().unwrap_or_default();
    let uid = meta.uid.clone().unwrap_or_default();
    let namespace = meta.namespace.clone().filter(|n| !n.is_empty());
    PropagationRecord {
        metadata: ObjectMeta {
            name: Some(record_name(kind, &name)),
            namespace: Some(record_namespace(namespace.as_deref())),
            labels: Some(BTreeMap::from([(
                RESOURCE_LABEL.to_string(),
                resource_label(kind),
            )])),
            finalizers: Some(vec![RECORD_FINALIZER.to_string()]),
            owner_references: Some(vec![OwnerReference {
                api_version: kind.resource.api_version.clone(),
                kind: kind.resource.kind.clone(),
                name: name.clone(),
                uid: uid.clone(),
                block_owner_deletion: Some(true),
                controller: None,
            }]),
            ..Default::default()
        },
        spec: PropagationRecordSpec {
            resource: ObjectReference {
                api_version: kind.resource.api_version.clone(),
                kind: kind.resource.kind.clone(),
                resource: kind.resource.plural.clone(),
                namespace: namespace.unwrap_or_default(),
                name,
                uid,
            },
        },
        status: None,
    }
}

/// Whether `record` is still owned by its federated object (the garbage
/// collector drops the reference when the object is deleted with
/// `propagationPolicy: Orphan`).
pub fn is_owned(record: &PropagationRecord) -> bool {
    let uid = &record.spec.resource.uid;
    record
        .metadata
        .owner_references
        .as_deref()
        .unwrap_or_default()
        .iter()
        .any(|o| &o.uid == uid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> PropagationState {
        let mut r = PropagationState::new();
        r.insert(
            "west".into(),
            ClusterRecord {
                state: SyncState::Failed,
                observed_generation: 2,
                message: "forbidden: nope".into(),
                ..Default::default()
            },
        );
        r.insert(
            "east".into(),
            ClusterRecord {
                state: SyncState::InSync,
                observed_generation: 3,
                message: String::new(),
                hash: Some("abc123".into()),
                resource_version: Some("42".into()),
                replicas: Some(5),
                drift: vec![DriftedField {
                    path: "/data/color".into(),
                    ours: "\"green\"".into(),
                    theirs: Some("\"red\"".into()),
                }],
                template_hash: Some("t1".into()),
                wave: Some(2),
                wave_state: Some("Waiting".into()),
            },
        );
        r
    }

    fn kind() -> FederatedKind {
        FederatedKind::new("apps", "v1", "Deployment", "deployments", true)
    }

    #[test]
    fn state_round_trips_through_the_status() {
        let mut rec = new_record(&kind(), &ObjectMeta::default());
        rec.status = Some(status_of(&sample()));
        assert_eq!(state_of(&rec), sample());
        let names: Vec<_> = rec
            .status
            .iter()
            .flat_map(|s| s.clusters.iter().map(|c| c.name.as_str()))
            .collect();
        assert_eq!(names, ["east", "west"], "sorted by cluster");
    }

    #[test]
    fn an_unknown_state_reads_as_pending() {
        let mut rec = new_record(&kind(), &ObjectMeta::default());
        rec.status = Some(PropagationRecordStatus {
            clusters: vec![ClusterPropagation {
                name: "east".into(),
                state: "Sleeping".into(),
                ..Default::default()
            }],
            ..Default::default()
        });
        assert_eq!(state_of(&rec)["east"].state, SyncState::Pending);
    }

    #[test]
    fn a_new_record_is_owned_held_and_labelled() {
        let meta = ObjectMeta {
            name: Some("web".into()),
            namespace: Some("app".into()),
            uid: Some("u1".into()),
            ..Default::default()
        };
        let rec = new_record(&kind(), &meta);
        assert_eq!(rec.metadata.name.as_deref(), Some("web.deployments.apps"));
        assert_eq!(rec.metadata.namespace.as_deref(), Some("app"));
        assert_eq!(
            rec.metadata.finalizers,
            Some(vec![RECORD_FINALIZER.to_string()])
        );
        assert!(is_owned(&rec));
        let owner = &rec.metadata.owner_references.as_deref().unwrap_or_default()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.block_owner_deletion),
            ("Deployment", Some(true))
        );
        assert_eq!(rec.spec.resource.resource, "deployments");
    }

    #[test]
    fn cluster_scoped_objects_have_their_records_in_the_federation_namespace() {
        let ns = FederatedKind::new("", "v1", "Namespace", "namespaces", false);
        let meta = ObjectMeta {
            name: Some("team".into()),
            uid: Some("u".into()),
            ..Default::default()
        };
        let rec = new_record(&ns, &meta);
        assert_eq!(rec.metadata.namespace.as_deref(), Some("federation-system"));
        assert_eq!(rec.metadata.name.as_deref(), Some("team.namespaces"));
        assert_eq!(rec.spec.resource.namespace, "");
    }

    #[test]
    fn long_names_are_shortened_with_a_stable_hash() {
        let long = "a".repeat(250);
        let n = record_name(&kind(), &long);
        assert!(n.len() <= 253, "{}", n.len());
        assert_eq!(n, record_name(&kind(), &long));
        assert_ne!(n, record_name(&kind(), &"a".repeat(249)));
        let crd = FederatedKind::new("x".repeat(60).as_str(), "v1", "Foo", "foos", true);
        assert!(resource_label(&crd).len() <= 63);
    }

    #[test]
    fn a_condition_is_set_kept_and_removed_by_merge_patches() {
        let now = jiff::Timestamp::from_second(1_700_000_000).unwrap_or_default();
        let mut rec = new_record(&kind(), &ObjectMeta::default());
        assert_eq!(conditions_patch(&rec, DNS_NAME_CONFLICT, None, now), None);
        let patch = conditions_patch(&rec, DNS_NAME_CONFLICT, Some(("R", "m")), now);
        let Some(patch) = patch else {
            panic!("a new condition is written");
        };
        assert_eq!(
            patch["status"]["conditions"],
            serde_json::json!([{"type": DNS_NAME_CONFLICT, "status": "True", "reason": "R",
                "message": "m", "lastTransitionTime": "2023-11-14T22:13:20Z"}])
        );
        // What the sync writes leaves the conditions alone.
        let sync = serde_json::to_value(status_of(&sample())).unwrap_or_default();
        assert!(sync.get("conditions").is_none(), "{sync}");
        rec.status = serde_json::from_value(patch["status"].clone()).ok();
        assert_eq!(
            conditions_patch(&rec, DNS_NAME_CONFLICT, Some(("R", "m")), now),
            None
        );
        let cleared = conditions_patch(&rec, DNS_NAME_CONFLICT, None, now);
        assert_eq!(
            cleared.map(|p| p["status"]["conditions"].clone()),
            Some(serde_json::json!([]))
        );
    }

    #[test]
    fn an_orphaned_record_has_no_owner() {
        let mut rec = new_record(
            &kind(),
            &ObjectMeta {
                uid: Some("u".into()),
                ..Default::default()
            },
        );
        rec.metadata.owner_references = None;
        assert!(!is_owned(&rec));
    }
}
