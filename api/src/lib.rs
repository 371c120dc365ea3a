//! # ubernetes-api
//!
//! The federation API types, like `k8s.io/api` for Kubernetes: the
//! cluster-scoped `federation/v1beta1` [`Cluster`] (a member cluster, how to
//! reach it and its health) and [`ClusterList`]. They implement
//! `k8s_openapi`'s `Resource`, `ListableResource` and `Metadata` traits so a
//! `kube::Api<Cluster>` works, and `schemars::JsonSchema` so the OpenAPI
//! documents include them (definition `io.ubernetes.federation.v1beta1.Cluster`).
//!
//! The namespaced [`PropagationRecord`] is the federation's own record of
//! how one federated object is propagated ([`propagation`]).
//!
//! [`mcs`] holds the Multi-cluster Services API (`multicluster.x-k8s.io/v1alpha1`
//! ServiceExport and ServiceImport, KEP-1645).
//! [`cluster_inventory`] holds sig-multicluster's cluster inventory API
//! (`multicluster.x-k8s.io/v1alpha1` ClusterProfile, KEP-4322).
//!
//! What it is not: no behaviour. Validation lives in the registry's
//! `kinds::federation`, the controllers elsewhere.
#![forbid(unsafe_code)]

/// `k8s_openapi`'s `Resource`, `ListableResource` and `Metadata` of a kind
/// `$ty` (its `KIND` is its name) and its list `$list` (its `metadata` a
/// `ListMeta`, no URL segment, `SubResourceScope`), as k8s-openapi
/// generates them for kube's kinds: `resource_traits!(Kind, KindList,
/// "kinds", api_version, group, version, ClusterResourceScope)`.
macro_rules! resource_traits {
    ($ty:ident, $list:ident, $plural:expr, $api_version:expr, $group:expr, $version:expr, $scope:ident) => {
        resource_traits!(@one $ty, $plural, $api_version, $group, $version, $scope, ObjectMeta);
        resource_traits!(@one $list, "", $api_version, $group, $version, SubResourceScope, ListMeta);

        impl k8s_openapi::ListableResource for $ty {
            const LIST_KIND: &'static str = stringify!($list);
        }
    };
    (@one $ty:ident, $plural:expr, $api_version:expr, $group:expr, $version:expr, $scope:ident, $meta:ident) => {
        impl k8s_openapi::Resource for $ty {
            const API_VERSION: &'static str = $api_version;
            const GROUP: &'static str = $group;
            const KIND: &'static str = stringify!($ty);
            const VERSION: &'static str = $version;
            const URL_PATH_SEGMENT: &'static str = $plural;
            type Scope = k8s_openapi::$scope;
        }

        impl k8s_openapi::Metadata for $ty {
            type Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::$meta;
            fn metadata(&self) -> &Self::Ty {
                &self.metadata
            }
            fn metadata_mut(&mut self) -> &mut Self::Ty {
                &mut self.metadata
            }
        }
    };
}

pub mod apiregistration;
#[macro_use]
pub mod mcs;
pub mod cluster_inventory;

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta, Time};
use schemars::{JsonSchema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub mod propagation;
pub use propagation::{
    ClusterPropagation, ObjectReference, PropagationRecord, PropagationRecordList,
    PropagationRecordSpec, PropagationRecordStatus,
};

/// API group of the federation types.
pub const GROUP: &str = "federation";
/// API version of the federation types.
pub const VERSION: &str = "v1beta1";
/// The federation's own namespace: member credentials (the Secrets `join`
/// writes, the member account's), the PropagationRecords of cluster-scoped
/// objects.
pub const FEDERATION_NAMESPACE: &str = "federation-system";
/// The annotation naming the member cluster an object was read from
/// (`federation@all`'s merged lists and watches, SPEC §3.13).
pub const CLUSTER_ANNOTATION: &str = "federation.kubernetes.io/cluster";

/// A member cluster of the federation (`federation/v1beta1`, cluster-scoped).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cluster {
    pub metadata: ObjectMeta,
    pub spec: ClusterSpec,
    pub status: Option<ClusterStatus>,
}

/// How to reach a member cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.ubernetes.federation.v1beta1.ClusterSpec")]
pub struct ClusterSpec {
    /// Server addresses by client CIDR; the longest matching CIDR wins.
    #[serde(default, rename = "serverAddressByClientCIDRs")]
    pub server_address_by_client_cidrs: Vec<ServerAddressByClientCIDR>,
    /// The Secret (namespace `federation-system`, key `kubeconfig`) with the
    /// credentials to reach the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalSecretReference>,
    /// Who opens the connections: `Push` (the default: the federation
    /// reaches the member at its server address with the Secret's
    /// credentials) or `Pull` (the member's agent opens a tunnel to the
    /// federation; no address, no Secret). Karmada's `spec.syncMode`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_mode: Option<String>,
}

/// `spec.syncMode` of a Cluster the federation reaches itself (the default).
pub const SYNC_MODE_PUSH: &str = "Push";
/// `spec.syncMode` of a Cluster whose agent opens a tunnel to the federation.
pub const SYNC_MODE_PULL: &str = "Pull";

impl ClusterSpec {
    /// Whether the member is reached through its agent's tunnel
    /// (`spec.syncMode: Pull`).
    pub fn is_pull(&self) -> bool {
        self.sync_mode.as_deref() == Some(SYNC_MODE_PULL)
    }
}

/// A server address for clients in a CIDR.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.ubernetes.federation.v1beta1.ServerAddressByClientCIDR")]
pub struct ServerAddressByClientCIDR {
    /// e.g. `0.0.0.0/0`.
    #[serde(default, rename = "clientCIDR")]
    pub client_cidr: String,
    /// e.g. `https://10.1.2.3:6443`.
    #[serde(default)]
    pub server_address: String,
}

/// A reference to a Secret by name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.ubernetes.federation.v1beta1.LocalSecretReference")]
pub struct LocalSecretReference {
    #[serde(default)]
    pub name: String,
}

/// Observed state of a member cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.ubernetes.federation.v1beta1.ClusterStatus")]
pub struct ClusterStatus {
    /// `Ready` and `Offline`, as Federation v1.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ClusterCondition>,
    /// From member node labels `topology.kubernetes.io/zone`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,
    /// From member node labels `topology.kubernetes.io/region`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// The member's `gitVersion` from its `/version` (shown by
    /// `kubectl get clusters -o wide`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
    /// How many federated objects placed in this cluster are in sync there
    /// (`kubectl get clusters -o wide`, OBJECTS IN SYNC, as `objectsInSync/objectsPlaced`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects_in_sync: Option<i64>,
    /// How many federated objects are placed in this cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects_placed: Option<i64>,
}

/// One condition of a cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.ubernetes.federation.v1beta1.ClusterCondition")]
pub struct ClusterCondition {
    /// `Ready` or `Offline`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_probe_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// A list of clusters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterList {
    pub metadata: ListMeta,
    pub items: Vec<Cluster>,
}

resource_traits!(
    Cluster,
    ClusterList,
    "clusters",
    "federation/v1beta1",
    GROUP,
    VERSION,
    ClusterResourceScope
);

/// The wire form: type meta first, as every Kubernetes object.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClusterWire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: ClusterSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<ClusterStatus>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClusterListWire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    #[serde(default)]
    metadata: ListMeta,
    #[serde(default)]
    items: Vec<Cluster>,
}

/// Refuses a wire form whose `apiVersion` or `kind`, where given, is not
/// the one wanted.
fn check_type_meta_of<E: serde::de::Error>(
    want_api_version: &str,
    api_version: Option<&str>,
    kind: Option<&str>,
    want_kind: &str,
) -> Result<(), E> {
    if let Some(v) = api_version.filter(|v| *v != want_api_version) {
        return Err(E::invalid_value(
            serde::de::Unexpected::Str(v),
            &want_api_version,
        ));
    }
    if let Some(k) = kind.filter(|k| *k != want_kind) {
        return Err(E::invalid_value(serde::de::Unexpected::Str(k), &want_kind));
    }
    Ok(())
}

/// [`check_type_meta_of`] for `federation/v1beta1`.
fn check_type_meta<E: serde::de::Error>(
    api_version: Option<&str>,
    kind: Option<&str>,
    want_kind: &str,
) -> Result<(), E> {
    check_type_meta_of("federation/v1beta1", api_version, kind, want_kind)
}

impl Serialize for Cluster {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ClusterWire {
            api_version: Some("federation/v1beta1".into()),
            kind: Some("Cluster".into()),
            metadata: self.metadata.clone(),
            spec: self.spec.clone(),
            status: self.status.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Cluster {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = ClusterWire::deserialize(d)?;
        check_type_meta(w.api_version.as_deref(), w.kind.as_deref(), "Cluster")?;
        Ok(Cluster {
            metadata: w.metadata,
            spec: w.spec,
            status: w.status,
        })
    }
}

impl Serialize for ClusterList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ClusterListWire {
            api_version: Some("federation/v1beta1".into()),
            kind: Some("ClusterList".into()),
            metadata: self.metadata.clone(),
            items: self.items.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for ClusterList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = ClusterListWire::deserialize(d)?;
        check_type_meta(w.api_version.as_deref(), w.kind.as_deref(), "ClusterList")?;
        Ok(ClusterList {
            metadata: w.metadata,
            items: w.items,
        })
    }
}

impl JsonSchema for Cluster {
    fn schema_name() -> Cow<'static, str> {
        "io.ubernetes.federation.v1beta1.Cluster".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> schemars::Schema {
        json_schema!({
            "description": "Cluster is a member cluster of the federation.",
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."},
                "kind": {"type": "string", "description": "Kind is a string value representing the REST resource this object represents."},
                "metadata": generator.subschema_for::<ObjectMeta>(),
                "spec": generator.subschema_for::<ClusterSpec>(),
                "status": generator.subschema_for::<ClusterStatus>(),
            },
            "x-kubernetes-group-version-kind": [{"group": GROUP, "kind": "Cluster", "version": VERSION}],
        })
    }
}

impl JsonSchema for ClusterList {
    fn schema_name() -> Cow<'static, str> {
        "io.ubernetes.federation.v1beta1.ClusterList".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> schemars::Schema {
        json_schema!({
            "description": "ClusterList is a list of Clusters.",
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": generator.subschema_for::<ListMeta>(),
                "items": {"type": "array", "items": generator.subschema_for::<Cluster>()},
            },
            "required": ["items"],
            "x-kubernetes-group-version-kind": [{"group": GROUP, "kind": "ClusterList", "version": VERSION}],
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resource_traits_name_each_kind_and_its_list() {
        use k8s_openapi::{ListableResource, Resource};
        assert_eq!(
            (Cluster::KIND, Cluster::URL_PATH_SEGMENT, Cluster::LIST_KIND),
            ("Cluster", "clusters", "ClusterList")
        );
        assert_eq!(
            (ClusterList::KIND, ClusterList::URL_PATH_SEGMENT),
            ("ClusterList", "")
        );
        assert_eq!(Cluster::API_VERSION, format!("{GROUP}/{VERSION}"));
        assert_eq!(
            (PropagationRecord::KIND, PropagationRecord::URL_PATH_SEGMENT),
            ("PropagationRecord", "propagationrecords")
        );
        assert_eq!(
            apiregistration::APIServiceList::API_VERSION,
            "apiregistration.k8s.io/v1"
        );
        assert_eq!(mcs::ServiceImport::LIST_KIND, "ServiceImportList");
        assert_eq!(FEDERATION_NAMESPACE, "federation-system");
    }

    #[test]
    fn a_cluster_round_trips_through_its_wire_form() {
        let v = json!({
            "apiVersion": "federation/v1beta1",
            "kind": "Cluster",
            "metadata": {"name": "new-york", "labels": {"region": "us-east"}},
            "spec": {
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "https://10.1.2.3:6443"}],
                "secretRef": {"name": "new-york"}
            },
            "status": {
                "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady",
                                "lastProbeTime": "2024-01-01T00:00:00Z"}],
                "zones": ["us-east-1a"],
                "region": "us-east-1"
            }
        });
        let c: Cluster = serde_json::from_value(v.clone()).unwrap_or_default();
        assert_eq!(
            c.spec.server_address_by_client_cidrs[0].client_cidr,
            "0.0.0.0/0"
        );
        assert_eq!(serde_json::to_value(&c).ok(), Some(v));
    }

    #[test]
    fn a_cluster_of_another_kind_is_refused() {
        let r: Result<Cluster, _> = serde_json::from_value(json!({"kind": "Pod"}));
        assert!(r.is_err());
    }

    #[test]
    fn the_schema_is_named_as_its_openapi_definition() {
        assert_eq!(
            Cluster::schema_name(),
            "io.ubernetes.federation.v1beta1.Cluster"
        );
        let mut g = SchemaGenerator::default();
        let _ = g.subschema_for::<Cluster>();
        assert!(
            g.definitions()
                .contains_key("io.ubernetes.federation.v1beta1.ClusterSpec")
        );
    }

    #[test]
    fn list_serialises_with_its_list_kind() {
        let l = ClusterList::default();
        let v = serde_json::to_value(&l).unwrap_or_default();
        assert_eq!(v["kind"], "ClusterList");
        assert_eq!(v["apiVersion"], "federation/v1beta1");
    }
}
