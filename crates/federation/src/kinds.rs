//! The federated kinds (SPEC §3.4) as dynamic `ApiResource`s. Which
//! built-in kinds are propagated is not listed here: each kind declares it
//! in the registry, and the binary hands the list to
//! [`crate::FederationOptions::builtin_kinds`]. Custom resources join at run
//! time when their CRD carries the label
//! `federation.kubernetes.io/federated: "true"` ([`from_crd`]).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::DynamicObject;
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use crate::policy::{GroupKind, KindPolicy};

/// A federated kind: its API resource and whether it is namespaced.
#[derive(Clone, Debug)]
pub struct FederatedKind {
    /// Group, version, kind and plural, for `Api<DynamicObject>`.
    pub resource: ApiResource,
    /// Namespaced (else cluster-scoped).
    pub namespaced: bool,
    /// The objects of a federated CRD (else a built-in kind).
    pub custom: bool,
}

impl FederatedKind {
    /// A kind from its parts.
    pub fn new(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        let api_version = if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        };
        Self {
            resource: ApiResource {
                group: group.to_string(),
                version: version.to_string(),
                api_version,
                kind: kind.to_string(),
                plural: plural.to_string(),
            },
            namespaced,
            custom: false,
        }
    }

    /// The same kind, marked as the objects of a federated CRD.
    pub fn custom(mut self) -> Self {
        self.custom = true;
        self
    }

    /// Its group and kind.
    pub fn group_kind(&self) -> GroupKind {
        GroupKind::new(&self.resource.group, &self.resource.kind)
    }

    /// The federation's rules for this kind ([`crate::policy`]), by group
    /// and kind; the objects of a CRD get [`crate::policy::DEFAULT`]
    /// whatever they are called.
    pub fn policy(&self) -> &'static KindPolicy {
        if self.custom {
            &crate::policy::DEFAULT
        } else {
            crate::policy::of(&self.resource.group, &self.resource.kind)
        }
    }

    /// `plural.group` (or `plural` for the core group), as in RBAC and logs.
    pub fn id(&self) -> String {
        if self.resource.group.is_empty() {
            self.resource.plural.clone()
        } else {
            format!("{}.{}", self.resource.plural, self.resource.group)
        }
    }
}

/// `obj` as JSON with its `apiVersion` and `kind` (a watch of
/// `DynamicObject`s may leave them out).
pub fn to_value(obj: &DynamicObject, kind: &FederatedKind) -> Result<Value, serde_json::Error> {
    let mut v = serde_json::to_value(obj)?;
    if let Some(m) = v.as_object_mut() {
        m.insert("apiVersion".into(), json!(kind.resource.api_version));
        m.insert("kind".into(), json!(kind.resource.kind));
    }
    Ok(v)
}

/// The federated kind of a CRD's objects: its storage version (else the
/// first served one), once the CRD is Established and not being deleted.
pub fn from_crd(crd: &CustomResourceDefinition) -> Option<FederatedKind> {
    let established = crd.status.as_ref().is_some_and(|s| {
        s.conditions
            .as_deref()
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
    });
    if !established || crd.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let spec = &crd.spec;
    let version = spec
        .versions
        .iter()
        .find(|v| v.storage)
        .or_else(|| spec.versions.iter().find(|v| v.served))?;
    Some(
        FederatedKind::new(
            &spec.group,
            &version.name,
            &spec.names.kind,
            &spec.names.plural,
            spec.scope == "Namespaced",
        )
        .custom(),
    )
}

/// The Namespace kind (created in a member before the objects in it).
pub fn namespaces() -> FederatedKind {
    FederatedKind::new("", "v1", "Namespace", "namespaces", false)
}
