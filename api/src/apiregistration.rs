//! `apiregistration.k8s.io/v1` [`APIService`], as the kube-aggregator
//! defines it (`k8s.io/kube-aggregator/pkg/apis/apiregistration/v1`):
//! `k8s-openapi` has no types for that group. Same shape as the federation
//! types: the `k8s_openapi` traits for `kube::Api<APIService>`, a
//! `schemars::JsonSchema` named as kube's OpenAPI definition
//! (`io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService`), and a
//! wire form with `apiVersion`/`kind` first.

use std::borrow::Cow;

use k8s_openapi::ByteString;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta, Time};
use schemars::{JsonSchema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// API group of [`APIService`].
pub const GROUP: &str = "apiregistration.k8s.io";
/// API version of [`APIService`].
pub const VERSION: &str = "v1";
const API_VERSION: &str = "apiregistration.k8s.io/v1";
const DEF: &str = "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1";

/// An API group/version this server serves itself (`Local`, no service) or
/// one an extension API server behind a Service would serve.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct APIService {
    pub metadata: ObjectMeta,
    pub spec: APIServiceSpec,
    pub status: Option<APIServiceStatus>,
}

/// What the APIService serves and where.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceSpec")]
pub struct APIServiceSpec {
    /// The Service of the extension API server; none for a `Local` one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<ServiceReference>,
    /// The API group name this server hosts.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The API version this server hosts, e.g. `v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// Disables TLS certificate verification when talking to the server.
    #[serde(
        default,
        rename = "insecureSkipTLSVerify",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub insecure_skip_tls_verify: bool,
    /// PEM CA bundle that validates the server's serving certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "byte_string")]
    pub ca_bundle: Option<ByteString>,
    /// The priority of the group this APIService serves (higher first).
    #[serde(default)]
    pub group_priority_minimum: i32,
    /// The order of this version within its group (higher first).
    #[serde(default)]
    pub version_priority: i32,
}

/// `[]byte` in kube's OpenAPI: a base64 string.
fn byte_string(_: &mut SchemaGenerator) -> schemars::Schema {
    json_schema!({"type": "string", "format": "byte"})
}

/// A reference to a Service.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.ServiceReference")]
pub struct ServiceReference {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The port on the service hosting the webhook (default 443).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
}

/// The observed state of an APIService.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceStatus")]
pub struct APIServiceStatus {
    /// Current service state of the APIService (`Available`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<APIServiceCondition>,
}

/// One condition of an APIService.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceCondition")]
pub struct APIServiceCondition {
    /// `Available`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A list of APIServices.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct APIServiceList {
    pub metadata: ListMeta,
    pub items: Vec<APIService>,
}

resource_traits!(
    APIService,
    APIServiceList,
    "apiservices",
    API_VERSION,
    GROUP,
    VERSION,
    ClusterResourceScope
);

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct APIServiceWire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: APIServiceSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<APIServiceStatus>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct APIServiceListWire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    #[serde(default)]
    metadata: ListMeta,
    #[serde(default)]
    items: Vec<APIService>,
}

impl Serialize for APIService {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        APIServiceWire {
            api_version: Some(API_VERSION.into()),
            kind: Some("APIService".into()),
            metadata: self.metadata.clone(),
            spec: self.spec.clone(),
            status: self.status.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for APIService {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = APIServiceWire::deserialize(d)?;
        crate::check_type_meta_of(
            API_VERSION,
            w.api_version.as_deref(),
            w.kind.as_deref(),
            "APIService",
        )?;
        Ok(APIService {
            metadata: w.metadata,
            spec: w.spec,
            status: w.status,
        })
    }
}

impl Serialize for APIServiceList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        APIServiceListWire {
            api_version: Some(API_VERSION.into()),
            kind: Some("APIServiceList".into()),
            metadata: self.metadata.clone(),
            items: self.items.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for APIServiceList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = APIServiceListWire::deserialize(d)?;
        crate::check_type_meta_of(
            API_VERSION,
            w.api_version.as_deref(),
            w.kind.as_deref(),
            "APIServiceList",
        )?;
        Ok(APIServiceList {
            metadata: w.metadata,
            items: w.items,
        })
    }
}

impl JsonSchema for APIService {
    fn schema_name() -> Cow<'static, str> {
        format!("{DEF}.APIService").into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> schemars::Schema {
        json_schema!({
            "description": "APIService represents a server for a particular GroupVersion. Name must be \"version.group\".",
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."},
                "kind": {"type": "string", "description": "Kind is a string value representing the REST resource this object represents."},
                "metadata": generator.subschema_for::<ObjectMeta>(),
                "spec": generator.subschema_for::<APIServiceSpec>(),
                "status": generator.subschema_for::<APIServiceStatus>(),
            },
            "x-kubernetes-group-version-kind": [{"group": GROUP, "kind": "APIService", "version": VERSION}],
        })
    }
}

impl JsonSchema for APIServiceList {
    fn schema_name() -> Cow<'static, str> {
        format!("{DEF}.APIServiceList").into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> schemars::Schema {
        json_schema!({
            "description": "APIServiceList is a list of APIService objects.",
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": generator.subschema_for::<ListMeta>(),
                "items": {"type": "array", "items": generator.subschema_for::<APIService>()},
            },
            "required": ["items"],
            "x-kubernetes-group-version-kind": [{"group": GROUP, "kind": "APIServiceList", "version": VERSION}],
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_api_service_round_trips_through_its_wire_form() {
        let v = json!({
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": "v1beta1.metrics.k8s.io"},
            "spec": {
                "service": {"namespace": "kube-system", "name": "metrics-server", "port": 443},
                "group": "metrics.k8s.io", "version": "v1beta1",
                "insecureSkipTLSVerify": true,
                "groupPriorityMinimum": 100, "versionPriority": 100
            },
            "status": {"conditions": [{"type": "Available", "status": "False",
                "lastTransitionTime": "2024-01-01T00:00:00Z",
                "reason": "ServiceNotFound", "message": "m"}]}
        });
        let a: APIService = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(a.spec.group_priority_minimum, 100);
        assert_eq!(serde_json::to_value(&a).unwrap(), v);
    }

    #[test]
    fn a_local_one_keeps_its_priorities_and_drops_empty_fields() {
        let a: APIService = serde_json::from_value(json!({
            "metadata": {"name": "v1."}, "spec": {"version": "v1"}
        }))
        .unwrap();
        let v = serde_json::to_value(&a).unwrap();
        assert_eq!(
            v["spec"],
            json!({"version": "v1", "groupPriorityMinimum": 0, "versionPriority": 0})
        );
    }

    #[test]
    fn the_schema_is_named_as_kube_names_it() {
        assert_eq!(
            APIService::schema_name(),
            "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService"
        );
        let mut g = SchemaGenerator::default();
        let _ = g.subschema_for::<APIService>();
        assert!(
            g.definitions()
                .contains_key("io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceSpec")
        );
    }
}
