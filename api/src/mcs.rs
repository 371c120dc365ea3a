//! `multicluster.x-k8s.io/v1alpha1`: the sig-multicluster Multi-cluster
//! Services API (KEP-1645), `ServiceExport` and `ServiceImport`, with the
//! schemas of the upstream CRDs (kubernetes-sigs/mcs-api
//! `config/crd/multicluster.x-k8s.io_*.yaml`, `pkg/apis/v1alpha1`).
//!
//! A `ServiceExport` in the federation beside a federated Service exports
//! it from every member that runs it; each exporting member gets a
//! `ServiceImport` of the same name (the federation's MCS controller writes
//! both sides; SPEC §3.14, `docs/federation.md` "Multi-cluster Services").
//! Like the upstream CRDs, `spec` and `status` are optional and omitted
//! when absent (a CRD stores what it is sent).

use std::borrow::Cow;

use k8s_openapi::api::core::v1::SessionAffinityConfig;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ListMeta, ObjectMeta};
use schemars::{JsonSchema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// API group of the MCS types.
pub const GROUP: &str = "multicluster.x-k8s.io";
/// API version served.
pub const VERSION: &str = "v1alpha1";
/// `apiVersion` of the MCS types.
pub const API_VERSION: &str = "multicluster.x-k8s.io/v1alpha1";

/// `ServiceExportConditionValid`: the exported Service exists and can be exported.
pub const CONDITION_VALID: &str = "Valid";
/// `ServiceExportConditionConflict`: the exporting clusters' Services disagree.
pub const CONDITION_CONFLICT: &str = "Conflict";
/// `ServiceExportReasonValid`.
pub const REASON_VALID: &str = "Valid";
/// `ServiceExportReasonNoService`.
pub const REASON_NO_SERVICE: &str = "NoService";
/// `ServiceExportReasonInvalidServiceType` (an `ExternalName` Service).
pub const REASON_INVALID_SERVICE_TYPE: &str = "InvalidServiceType";
/// `ServiceExportReasonPortConflict`.
pub const REASON_PORT_CONFLICT: &str = "PortConflict";
/// `ServiceExportReasonTypeConflict` (headless beside non-headless).
pub const REASON_TYPE_CONFLICT: &str = "TypeConflict";
/// `ServiceExportReasonNoConflicts`.
pub const REASON_NO_CONFLICTS: &str = "NoConflicts";
/// `ServiceImport` type: reached through a clusterset IP.
pub const TYPE_CLUSTER_SET_IP: &str = "ClusterSetIP";
/// `ServiceImport` type: backends addressed directly.
pub const TYPE_HEADLESS: &str = "Headless";

/// The label naming the multi-cluster service an EndpointSlice belongs to.
pub const LABEL_SERVICE_NAME: &str = "multicluster.kubernetes.io/service-name";
/// The label naming the cluster an imported EndpointSlice's endpoints come from.
pub const LABEL_SOURCE_CLUSTER: &str = "multicluster.kubernetes.io/source-cluster";

/// A Service exported to the clusterset (`ServiceExport`, namespaced).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServiceExport {
    pub metadata: ObjectMeta,
    pub spec: Option<ServiceExportSpec>,
    pub status: Option<ServiceExportStatus>,
}

/// What of the Service is exported besides the Service itself.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.x-k8s.multicluster.v1alpha1.ServiceExportSpec")]
pub struct ServiceExportSpec {
    /// exportedLabels describes the labels exported. It is optional for implementation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exported_labels: Option<std::collections::BTreeMap<String, String>>,
    /// exportedAnnotations describes the annotations exported. It is optional for implementation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exported_annotations: Option<std::collections::BTreeMap<String, String>>,
}

/// The export's state: `Valid`, `Conflict` (and `Ready`) conditions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.x-k8s.multicluster.v1alpha1.ServiceExportStatus")]
pub struct ServiceExportStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

/// A Service imported from the clusters of the clusterset that export it
/// (`ServiceImport`, namespaced).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServiceImport {
    pub metadata: ObjectMeta,
    pub spec: Option<ServiceImportSpec>,
    pub status: Option<ServiceImportStatus>,
}

/// An imported service and what is needed to consume it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.x-k8s.multicluster.v1alpha1.ServiceImportSpec")]
pub struct ServiceImportSpec {
    #[serde(default)]
    pub ports: Vec<ServicePort>,
    /// ip will be used as the VIP for this service when type is ClusterSetIP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ips: Option<Vec<String>>,
    /// type defines the type of this service. Must be ClusterSetIP or Headless.
    #[serde(rename = "type", default)]
    pub type_: String,
    /// Supports "ClientIP" and "None". Used to maintain session affinity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_affinity: Option<String>,
    /// sessionAffinityConfig contains session affinity configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_affinity_config: Option<SessionAffinityConfig>,
    /// IPFamilies identifies all the IPFamilies assigned for this ServiceImport.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_families: Option<Vec<String>>,
    /// How nodes distribute service traffic they receive on the ClusterIP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_traffic_policy: Option<String>,
    /// A preference for how traffic is distributed to the endpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic_distribution: Option<String>,
}

/// A port the imported service exposes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.x-k8s.multicluster.v1alpha1.ServicePort")]
pub struct ServicePort {
    /// The name of this port within the service (a DNS_LABEL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `TCP` (the default), `UDP` or `SCTP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The application protocol for this port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_protocol: Option<String>,
    /// The port that will be exposed by this service.
    pub port: i32,
}

/// The clusters the imported service is derived from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.x-k8s.multicluster.v1alpha1.ServiceImportStatus")]
pub struct ServiceImportStatus {
    /// clusters is the list of exporting clusters from which this service was derived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<Vec<ClusterStatus>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

/// One exporting cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.x-k8s.multicluster.v1alpha1.ClusterStatus")]
pub struct ClusterStatus {
    /// cluster is the name of the exporting cluster (an RFC-1123 DNS label).
    pub cluster: String,
}

/// A list of ServiceExports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServiceExportList {
    pub metadata: ListMeta,
    pub items: Vec<ServiceExport>,
}

/// A list of ServiceImports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServiceImportList {
    pub metadata: ListMeta,
    pub items: Vec<ServiceImport>,
}

/// The wire form of a `multicluster.x-k8s.io` object (type meta first);
/// also `crate::cluster_inventory`'s.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Wire<Spec, Status> {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<String>,
    #[serde(default)]
    pub(crate) metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) spec: Option<Spec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) status: Option<Status>,
}

/// The wire form of a `multicluster.x-k8s.io` list.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListWire<T> {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<String>,
    #[serde(default)]
    pub(crate) metadata: ListMeta,
    #[serde(default)]
    pub(crate) items: Vec<T>,
}

/// The traits of one MCS kind and its list: `k8s_openapi`'s `Resource`,
/// `ListableResource` and `Metadata`, the wire form (type meta first) and
/// the OpenAPI definition named as kube publishes a CRD's. Every kind of
/// the group uses it (`crate::cluster_inventory`'s ClusterProfile too:
/// `#[macro_use]` on this module in `lib.rs`).
macro_rules! mcs_kind {
    ($ty:ident, $list:ident, $spec:ty, $status:ty, $plural:literal, $desc:literal) => {
        resource_traits!(
            $ty,
            $list,
            $plural,
            API_VERSION,
            GROUP,
            VERSION,
            NamespaceResourceScope
        );

        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                $crate::mcs::Wire::<&$spec, &$status> {
                    api_version: Some(API_VERSION.into()),
                    kind: Some(stringify!($ty).into()),
                    metadata: self.metadata.clone(),
                    spec: self.spec.as_ref(),
                    status: self.status.as_ref(),
                }
                .serialize(s)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let w = $crate::mcs::Wire::<$spec, $status>::deserialize(d)?;
                crate::check_type_meta_of(
                    API_VERSION,
                    w.api_version.as_deref(),
                    w.kind.as_deref(),
                    stringify!($ty),
                )?;
                Ok(Self {
                    metadata: w.metadata,
                    spec: w.spec,
                    status: w.status,
                })
            }
        }

        impl Serialize for $list {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                $crate::mcs::ListWire::<&$ty> {
                    api_version: Some(API_VERSION.into()),
                    kind: Some(stringify!($list).into()),
                    metadata: self.metadata.clone(),
                    items: self.items.iter().collect(),
                }
                .serialize(s)
            }
        }

        impl<'de> Deserialize<'de> for $list {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let w = $crate::mcs::ListWire::<$ty>::deserialize(d)?;
                crate::check_type_meta_of(
                    API_VERSION,
                    w.api_version.as_deref(),
                    w.kind.as_deref(),
                    stringify!($list),
                )?;
                Ok(Self {
                    metadata: w.metadata,
                    items: w.items,
                })
            }
        }

        impl JsonSchema for $ty {
            fn schema_name() -> Cow<'static, str> {
                concat!("io.x-k8s.multicluster.v1alpha1.", stringify!($ty)).into()
            }

            fn json_schema(generator: &mut SchemaGenerator) -> schemars::Schema {
                json_schema!({
                    "description": $desc,
                    "type": "object",
                    "properties": {
                        "apiVersion": {"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."},
                        "kind": {"type": "string", "description": "Kind is a string value representing the REST resource this object represents."},
                        "metadata": generator.subschema_for::<ObjectMeta>(),
                        "spec": generator.subschema_for::<$spec>(),
                        "status": generator.subschema_for::<$status>(),
                    },
                    "x-kubernetes-group-version-kind": [{"group": GROUP, "kind": stringify!($ty), "version": VERSION}],
                })
            }
        }

        impl JsonSchema for $list {
            fn schema_name() -> Cow<'static, str> {
                concat!("io.x-k8s.multicluster.v1alpha1.", stringify!($list)).into()
            }

            fn json_schema(generator: &mut SchemaGenerator) -> schemars::Schema {
                json_schema!({
                    "description": concat!(stringify!($list), " is a list of ", stringify!($ty), "s."),
                    "type": "object",
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": generator.subschema_for::<ListMeta>(),
                        "items": {"type": "array", "items": generator.subschema_for::<$ty>()},
                    },
                    "required": ["items"],
                    "x-kubernetes-group-version-kind": [{"group": GROUP, "kind": stringify!($list), "version": VERSION}],
                })
            }
        }
    };
}

mcs_kind!(
    ServiceExport,
    ServiceExportList,
    ServiceExportSpec,
    ServiceExportStatus,
    "serviceexports",
    "ServiceExport declares that the Service with the same name and namespace as this export should be consumable from other clusters."
);
mcs_kind!(
    ServiceImport,
    ServiceImportList,
    ServiceImportSpec,
    ServiceImportStatus,
    "serviceimports",
    "ServiceImport describes a service imported from clusters in a ClusterSet."
);

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_import_round_trips_through_its_wire_form() {
        let v = json!({
            "apiVersion": "multicluster.x-k8s.io/v1alpha1",
            "kind": "ServiceImport",
            "metadata": {"name": "web", "namespace": "app"},
            "spec": {"ports": [{"name": "http", "protocol": "TCP", "port": 80}], "type": "ClusterSetIP"},
            "status": {"clusters": [{"cluster": "m0"}, {"cluster": "m1"}]}
        });
        let i: ServiceImport = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(i.spec.as_ref().map(|s| s.ports[0].port), Some(80));
        assert_eq!(serde_json::to_value(&i).ok(), Some(v));
    }

    #[test]
    fn an_export_without_spec_or_status_stays_without() {
        let v = json!({
            "apiVersion": "multicluster.x-k8s.io/v1alpha1",
            "kind": "ServiceExport",
            "metadata": {"name": "web", "namespace": "app"}
        });
        let e: ServiceExport = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&e).ok(), Some(v));
        let l = ServiceExportList {
            items: vec![e],
            ..Default::default()
        };
        let lv = serde_json::to_value(&l).unwrap();
        assert_eq!(lv["kind"], "ServiceExportList");
        let back: ServiceExportList = serde_json::from_value(lv).unwrap();
        assert_eq!(back.items.len(), 1);
    }

    #[test]
    fn another_group_or_kind_is_refused() {
        let r: Result<ServiceExport, _> = serde_json::from_value(json!({"kind": "ServiceImport"}));
        assert!(r.is_err());
        let r: Result<ServiceImport, _> =
            serde_json::from_value(json!({"apiVersion": "federation/v1beta1"}));
        assert!(r.is_err());
    }

    #[test]
    fn the_schemas_are_named_as_kube_names_a_crds() {
        assert_eq!(
            ServiceImport::schema_name(),
            "io.x-k8s.multicluster.v1alpha1.ServiceImport"
        );
        let mut g = SchemaGenerator::default();
        let _ = g.subschema_for::<ServiceImport>();
        assert!(
            g.definitions()
                .contains_key("io.x-k8s.multicluster.v1alpha1.ServicePort")
        );
    }
}
