//! [`ResourceInfo`]: the description of one served resource (what discovery,
//! OpenAPI, routing and the registry all need to know about it). Plain data,
//! built for built-in kinds by the registry and, later, from CRDs.

/// A subresource of a resource (`status`, `scale`, `finalize`, `token` …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubresourceInfo {
    /// e.g. `status`, `scale`.
    pub name: String,
    /// The kind exchanged on this subresource: `Deployment` for status,
    /// `Scale` (group `autoscaling`, version `v1`) for scale.
    pub kind: String,
    pub group: String,
    pub version: String,
    pub verbs: Vec<String>,
}

/// One resource as served at `/apis/<group>/<version>/[namespaces/<ns>/]<resource>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group; empty for the core (`/api/v1`) group.
    pub group: String,
    pub version: String,
    /// Plural lowercase resource name, e.g. `deployments`.
    pub resource: String,
    /// Singular lowercase name, e.g. `deployment`.
    pub singular: String,
    /// Kind, e.g. `Deployment`; the list kind is `<kind>List`.
    pub kind: String,
    pub namespaced: bool,
    /// e.g. `create, delete, deletecollection, get, list, patch, update, watch`.
    pub verbs: Vec<String>,
    pub short_names: Vec<String>,
    /// e.g. `all` for kinds `kubectl get all` shows.
    pub categories: Vec<String>,
    pub subresources: Vec<SubresourceInfo>,
    /// OpenAPI definition name of the kind's schema, e.g. `io.k8s.api.apps.v1.Deployment`.
    pub definition: String,
}

impl ResourceInfo {
    /// `apps/v1`, or `v1` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `<kind>List`.
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// Whether a subresource of that name is served.
    pub fn has_subresource(&self, name: &str) -> bool {
        self.subresources.iter().any(|s| s.name == name)
    }

    /// The standard verbs of a read-write resource.
    pub fn standard_verbs() -> Vec<String> {
        [
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }
}
