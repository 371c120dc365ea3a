//! `multicluster.x-k8s.io/v1alpha1` `ClusterProfile`: sig-multicluster's
//! cluster inventory API (KEP-4322), with the schema of the upstream CRD
//! (kubernetes-sigs/cluster-inventory-api
//! `config/crd/bases/multicluster.x-k8s.io_clusterprofiles.yaml`,
//! `apis/v1alpha1/clusterprofile_types.go`).
//!
//! The federation publishes every Cluster as a ClusterProfile of the same
//! name in `federation-system` (the federation's `cluster_profiles`
//! controller; SPEC §3.12, `docs/federation.md` "Cluster inventory"), so
//! tools that read the inventory (Argo CD, Kueue's MultiKueue, Headlamp)
//! see the federation's clusters. The wire form and OpenAPI definition come
//! from the group's `mcs_kind!` (`crate::mcs`), as the MCS kinds'.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ListMeta, ObjectMeta, Time};
use schemars::{JsonSchema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::mcs::{API_VERSION, GROUP, VERSION};

/// `LabelClusterManagerKey`: the label naming the cluster manager a
/// ClusterProfile belongs to (its value is `spec.clusterManager.name`).
pub const LABEL_CLUSTER_MANAGER: &str = "x-k8s.io/cluster-manager";
/// `LabelClusterSetKey`: the label on a namespace naming the clusterset its
/// ClusterProfiles belong to.
pub const LABEL_CLUSTER_SET: &str = "multicluster.x-k8s.io/clusterset";
/// `ClusterConditionControlPlaneHealthy`: the cluster's control plane is healthy.
pub const CONDITION_CONTROL_PLANE_HEALTHY: &str = "ControlPlaneHealthy";
/// KEP-4322's `Joined`: the cluster is under management by the cluster manager.
pub const CONDITION_JOINED: &str = "Joined";
/// KEP-2149's well-known property: the cluster's id within its clusterset.
pub const PROPERTY_CLUSTER_ID: &str = "cluster.clusterset.k8s.io";
/// KEP-2149's well-known property: the clusterset the cluster belongs to.
pub const PROPERTY_CLUSTER_SET: &str = "clusterset.k8s.io";

/// A single cluster in a multi-cluster deployment (`ClusterProfile`, namespaced).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterProfile {
    pub metadata: ObjectMeta,
    /// Required by the CRD's schema (the registry refuses a profile without it).
    pub spec: Option<ClusterProfileSpec>,
    pub status: Option<ClusterProfileStatus>,
}

/// The desired state of a ClusterProfile.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.x-k8s.multicluster.v1alpha1.ClusterProfileSpec")]
pub struct ClusterProfileSpec {
    /// DisplayName defines a human-readable name of the ClusterProfile
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    /// ClusterManager defines which cluster manager owns this ClusterProfile resource
    #[serde(default)]
    pub cluster_manager: ClusterManager,
}

/// Which cluster manager owns the ClusterProfile (immutable).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.x-k8s.multicluster.v1alpha1.ClusterManager")]
pub struct ClusterManager {
    /// Name defines the name of the cluster manager
    #[serde(default)]
    pub name: String,
}

/// The observed state of a ClusterProfile.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.x-k8s.multicluster.v1alpha1.ClusterProfileStatus")]
pub struct ClusterProfileStatus {
    /// Conditions contains the different condition statuses for this cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// Version defines the version information of the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<ClusterVersion>,
    /// Properties defines cluster characteristics through a list of Property objects.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub properties: Vec<Property>,
    /// Deprecated: use accessProviders.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub credential_providers: Vec<AccessProvider>,
    /// AccessProviders is a list of cluster access providers that can provide access
    /// information for clusters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub access_providers: Vec<AccessProvider>,
}

/// Version information about the cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.x-k8s.multicluster.v1alpha1.ClusterVersion")]
pub struct ClusterVersion {
    /// Kubernetes is the kubernetes version of the cluster.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kubernetes: String,
}

/// A property of a cluster: a name/value pair (KEP-2149's well-known names
/// or a cluster manager's own).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.x-k8s.multicluster.v1alpha1.Property")]
pub struct Property {
    /// Name is the name of a property resource on cluster (1 to 253 characters).
    pub name: String,
    /// Value is a property-dependent string (1 to 1024 characters).
    pub value: String,
    /// LastObservedTime is the last time the property was observed on the corresponding cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_observed_time: Option<Time>,
}

/// One way a consumer can connect to the cluster (a kubeconfig `Cluster`,
/// kept as sent).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.x-k8s.multicluster.v1alpha1.AccessProvider")]
pub struct AccessProvider {
    pub name: String,
    /// Cluster contains information about how to communicate with a kubernetes cluster
    /// (client-go's `clientcmd/api/v1.Cluster`: `server`, `certificate-authority-data`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<Value>,
}

/// A list of ClusterProfiles.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterProfileList {
    pub metadata: ListMeta,
    pub items: Vec<ClusterProfile>,
}

mcs_kind!(
    ClusterProfile,
    ClusterProfileList,
    ClusterProfileSpec,
    ClusterProfileStatus,
    "clusterprofiles",
    "ClusterProfile represents a single cluster in a multi-cluster deployment."
);

impl ClusterProfile {
    /// The status condition of `type_`, if any.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.status
            .as_ref()?
            .conditions
            .iter()
            .find(|c| c.type_ == type_)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;
    use k8s_openapi::{ListableResource as _, Resource as _};
    use serde_json::json;

    #[test]
    fn a_profile_round_trips_through_its_wire_form() {
        let v = json!({
            "apiVersion": "multicluster.x-k8s.io/v1alpha1",
            "kind": "ClusterProfile",
            "metadata": {"name": "east", "namespace": "federation-system",
                         "labels": {"x-k8s.io/cluster-manager": "ubernetes"}},
            "spec": {"displayName": "east", "clusterManager": {"name": "ubernetes"}},
            "status": {
                "conditions": [{"type": "ControlPlaneHealthy", "status": "True", "reason": "ClusterReady",
                                "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "version": {"kubernetes": "v1.36.2"},
                "properties": [{"name": "cluster.clusterset.k8s.io", "value": "east"}],
                "accessProviders": [{"name": "kubeconfig", "cluster": {"server": "https://10.0.0.1:6443"}}]
            }
        });
        let p: ClusterProfile = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(
            p.condition(CONDITION_CONTROL_PLANE_HEALTHY)
                .map(|c| c.status.as_str()),
            Some("True")
        );
        assert_eq!(
            p.spec.as_ref().map(|s| s.cluster_manager.name.as_str()),
            Some("ubernetes")
        );
        assert_eq!(serde_json::to_value(&p).ok(), Some(v));
    }

    #[test]
    fn the_kind_is_named_as_the_upstream_crd() {
        assert_eq!(
            (
                ClusterProfile::KIND,
                ClusterProfile::URL_PATH_SEGMENT,
                ClusterProfile::LIST_KIND
            ),
            ("ClusterProfile", "clusterprofiles", "ClusterProfileList")
        );
        assert_eq!(
            ClusterProfile::API_VERSION,
            "multicluster.x-k8s.io/v1alpha1"
        );
        let r: Result<ClusterProfile, _> = serde_json::from_value(json!({"kind": "ServiceImport"}));
        assert!(r.is_err());
        let mut g = SchemaGenerator::default();
        let _ = g.subschema_for::<ClusterProfile>();
        let defs = g.definitions();
        assert!(defs.contains_key("io.x-k8s.multicluster.v1alpha1.ClusterProfile"));
        let status = &defs["io.x-k8s.multicluster.v1alpha1.ClusterProfileStatus"];
        assert_eq!(
            status.pointer("/properties/properties/x-kubernetes-list-map-keys/0"),
            Some(&json!("name"))
        );
    }
}
