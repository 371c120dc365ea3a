//! `federation/v1beta1` PropagationRecord: the federation's own record of
//! how one federated object is propagated (SPEC §3.4, §3.8), kept out of
//! the user's object so that the user's object is the user's (a client
//! cannot tell from it that members are joined).
//!
//! One record per federated object, in the object's namespace (in
//! `federation-system` for cluster-scoped objects), named
//! `<name>.<resource>[.<group>]`, owned by the object (an ownerReference
//! with `blockOwnerDeletion`) and held by the finalizer
//! `federation.kubernetes.io/delete-from-underlying-clusters` until the
//! member copies are gone. `status.clusters` is, per member cluster, where
//! propagation stands and kubefed's version cache (the hash of what was
//! applied and the member object's resourceVersion right after), so a
//! restart sends no writes for objects in sync.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use schemars::{JsonSchema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{GROUP, VERSION, check_type_meta};

/// The federation's record of one federated object's propagation
/// (`federation/v1beta1`, namespaced).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PropagationRecord {
    pub metadata: ObjectMeta,
    pub spec: PropagationRecordSpec,
    pub status: Option<PropagationRecordStatus>,
}

/// Which federated object the record is about.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.ubernetes.federation.v1beta1.PropagationRecordSpec")]
pub struct PropagationRecordSpec {
    /// The federated object.
    #[serde(default)]
    pub resource: ObjectReference,
}

/// A federated object, by kind, resource, namespace, name and uid.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.ubernetes.federation.v1beta1.ObjectReference")]
pub struct ObjectReference {
    /// e.g. `apps/v1`.
    #[serde(default)]
    pub api_version: String,
    /// e.g. `Deployment`.
    #[serde(default)]
    pub kind: String,
    /// The plural resource, e.g. `deployments`.
    #[serde(default)]
    pub resource: String,
    /// Empty for a cluster-scoped object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(default)]
    pub name: String,
    /// The federated object's uid (the member copies carry it in
    /// `federation.kubernetes.io/origin-uid`).
    #[serde(default)]
    pub uid: String,
}

/// Where propagation of the object stands, per member cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.ubernetes.federation.v1beta1.PropagationRecordStatus")]
pub struct PropagationRecordStatus {
    /// One entry per member cluster the object is (or was) propagated to,
    /// sorted by cluster name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<ClusterPropagation>,
    /// What the federation reports about the object as a whole, in
    /// Kubernetes' condition shape (e.g. `DNSNameConflict`: an Ingress host
    /// another, older claim holds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    /// Where a wave-by-wave rollout of the workload's pod template stands
    /// (annotation `federation.kubernetes.io/rollout-strategy`, SPEC
    /// §3.11); absent for objects without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutStatus>,
}

/// A federated workload's rollout across clusters, wave by wave.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.ubernetes.federation.v1beta1.RolloutStatus")]
pub struct RolloutStatus {
    /// The hash of the pod template being rolled out (the federated
    /// object's `spec.template`).
    #[serde(default)]
    pub template_hash: String,
    /// The hash of the template the rollout started from (what a
    /// `Rollback` sends back); absent for the first template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_hash: Option<String>,
    /// How many waves the rollout has.
    #[serde(default)]
    pub waves: i64,
    /// The wave under way, from 1; `waves + 1` once every wave is done.
    #[serde(default)]
    pub wave: i64,
    /// When the wave under way started (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wave_started: Option<String>,
    /// Since when every copy of the wave under way is healthy (RFC 3339;
    /// the next wave starts `minReadySeconds` after).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthy_since: Option<String>,
    /// Why the rollout halted (naming the cluster); no further wave starts
    /// until the template changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halted: Option<String>,
    /// The pod templates some cluster still runs, or a rollback would send,
    /// by hash (the federated object no longer holds them).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub templates: std::collections::BTreeMap<String, serde_json::Value>,
}

/// Propagation to one member cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.ubernetes.federation.v1beta1.ClusterPropagation")]
pub struct ClusterPropagation {
    /// The Cluster's name.
    pub name: String,
    /// `InSync`, `Pending` or `Failed`.
    #[serde(default)]
    pub state: String,
    /// The federated object's `metadata.generation` this state is about.
    #[serde(default)]
    pub observed_generation: i64,
    /// Why it failed or is pending (empty when in sync).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// A hash of the member copy last applied successfully.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// The member object's resourceVersion right after that apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// The `spec.replicas` sent to this cluster, when the federation
    /// schedules the object's replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i64>,
    /// The fields of the copy the federation manages whose value in the
    /// member differs from the federation's (drift), kept in place because
    /// the federated object says `federation.kubernetes.io/drift-policy:
    /// Report`; empty otherwise (drift is repaired).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift: Vec<DriftedField>,
    /// The hash of the pod template this cluster's copy was last sent (a
    /// Deployment, StatefulSet or DaemonSet), see [`RolloutStatus`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_hash: Option<String>,
    /// The cluster's wave in the object's rollout (from 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wave: Option<i64>,
    /// `Waiting`, `Progressing`, `Healthy` or `Failed`: where the cluster's
    /// wave of the rollout stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wave_state: Option<String>,
}

/// One drifted field of a member copy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.ubernetes.federation.v1beta1.DriftedField")]
pub struct DriftedField {
    /// Where, as a JSON pointer into the copy (RFC 6901, as the overrides'
    /// paths), e.g. `/data/color`.
    pub path: String,
    /// The federation's value, as JSON (shortened when long: a prefix,
    /// the length and a hash).
    #[serde(default)]
    pub ours: String,
    /// The member's value, as JSON (shortened the same way); absent when
    /// the member removed the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theirs: Option<String>,
}

/// A list of propagation records.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PropagationRecordList {
    pub metadata: ListMeta,
    pub items: Vec<PropagationRecord>,
}

resource_traits!(
    PropagationRecord,
    PropagationRecordList,
    "propagationrecords",
    "federation/v1beta1",
    GROUP,
    VERSION,
    NamespaceResourceScope
);

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: PropagationRecordSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<PropagationRecordStatus>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListWire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    #[serde(default)]
    metadata: ListMeta,
    #[serde(default)]
    items: Vec<PropagationRecord>,
}

impl Serialize for PropagationRecord {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Wire {
            api_version: Some("federation/v1beta1".into()),
            kind: Some("PropagationRecord".into()),
            metadata: self.metadata.clone(),
            spec: self.spec.clone(),
            status: self.status.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for PropagationRecord {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = Wire::deserialize(d)?;
        check_type_meta(
            w.api_version.as_deref(),
            w.kind.as_deref(),
            "PropagationRecord",
        )?;
        Ok(Self {
            metadata: w.metadata,
            spec: w.spec,
            status: w.status,
        })
    }
}

impl Serialize for PropagationRecordList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ListWire {
            api_version: Some("federation/v1beta1".into()),
            kind: Some("PropagationRecordList".into()),
            metadata: self.metadata.clone(),
            items: self.items.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for PropagationRecordList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = ListWire::deserialize(d)?;
        check_type_meta(
            w.api_version.as_deref(),
            w.kind.as_deref(),
            "PropagationRecordList",
        )?;
        Ok(Self {
            metadata: w.metadata,
            items: w.items,
        })
    }
}

impl JsonSchema for PropagationRecord {
    fn schema_name() -> Cow<'static, str> {
        "io.ubernetes.federation.v1beta1.PropagationRecord".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> schemars::Schema {
        json_schema!({
            "description": "PropagationRecord is the federation's record of how one federated object is propagated to the member clusters.",
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."},
                "kind": {"type": "string", "description": "Kind is a string value representing the REST resource this object represents."},
                "metadata": generator.subschema_for::<ObjectMeta>(),
                "spec": generator.subschema_for::<PropagationRecordSpec>(),
                "status": generator.subschema_for::<PropagationRecordStatus>(),
            },
            "x-kubernetes-group-version-kind": [{"group": GROUP, "kind": "PropagationRecord", "version": VERSION}],
        })
    }
}

impl JsonSchema for PropagationRecordList {
    fn schema_name() -> Cow<'static, str> {
        "io.ubernetes.federation.v1beta1.PropagationRecordList".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> schemars::Schema {
        json_schema!({
            "description": "PropagationRecordList is a list of PropagationRecords.",
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": generator.subschema_for::<ListMeta>(),
                "items": {"type": "array", "items": generator.subschema_for::<PropagationRecord>()},
            },
            "required": ["items"],
            "x-kubernetes-group-version-kind": [{"group": GROUP, "kind": "PropagationRecordList", "version": VERSION}],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_record_round_trips_through_its_wire_form() {
        let v = json!({
            "apiVersion": "federation/v1beta1",
            "kind": "PropagationRecord",
            "metadata": {"name": "web.deployments.apps", "namespace": "app"},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment",
                "resource": "deployments", "namespace": "app", "name": "web", "uid": "u1"}},
            "status": {"clusters": [{"name": "m0", "state": "InSync", "observedGeneration": 2,
                "hash": "abc", "resourceVersion": "42", "replicas": 5,
                "drift": [{"path": "/data/color", "ours": "\"green\"", "theirs": "\"red\""},
                    {"path": "/data/gone", "ours": "\"x\""}]}]}
        });
        let r: PropagationRecord = serde_json::from_value(v.clone()).unwrap_or_default();
        assert_eq!(r.spec.resource.uid, "u1");
        let drift = r
            .status
            .as_ref()
            .map(|s| s.clusters[0].drift.clone())
            .unwrap_or_default();
        assert_eq!(drift.len(), 2);
        assert_eq!(drift[1].theirs, None);
        assert_eq!(serde_json::to_value(&r).ok(), Some(v));
    }

    #[test]
    fn a_record_of_another_kind_is_refused() {
        let r: Result<PropagationRecord, _> = serde_json::from_value(json!({"kind": "Cluster"}));
        assert!(r.is_err());
    }
}
