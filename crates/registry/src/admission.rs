//! Admission: what kube-apiserver's admission chain does between decoding a
//! write and storing it. Plugins see an [`Attributes`] (operation, resource,
//! subresource, namespace, name, old object, user, dry run) and run in two
//! phases, as kube's `admission.Interface`:
//!
//! 1. **mutating** ([`Admission::mutate`]): after the kind's defaults, before
//!    validation (LimitRanger defaults, mutating webhooks, ClusterIP
//!    allocation);
//! 2. **validating** ([`Admission::validate`]): after the kind's validation,
//!    just before the write (ValidatingAdmissionPolicy, validating webhooks,
//!    ResourceQuota).
//!
//! A plugin answers with warnings (sent as `Warning: 299` headers) or an
//! [`ApiError`] that becomes the response's `Status` (kube's wording is the
//! plugin's job). Plugins are registered per resource in
//! [`crate::Registry`] (kind-specific, e.g. ClusterIP allocation) or for
//! every resource (`RegistryOptions::admission`: webhooks, policies, quota).

use serde_json::Value;
use ubernetes_apimachinery::user::UserInfo;
use ubernetes_apimachinery::{ApiError, ResourceInfo};

/// The operation admitted (`admission.Operation`; the webhook wire names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    /// `CREATE`, `UPDATE`, `DELETE`, `CONNECT`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "CREATE",
            Self::Update => "UPDATE",
            Self::Delete => "DELETE",
            Self::Connect => "CONNECT",
        }
    }
}

/// What a plugin knows about the request (`admission.Attributes`).
#[derive(Debug, Clone, Copy)]
pub struct Attributes<'a> {
    pub operation: Operation,
    /// The resource as served at the request's group/version.
    pub info: &'a ResourceInfo,
    /// `status`, `scale`, …; `None` for the main resource.
    pub subresource: Option<&'a str>,
    pub namespace: Option<&'a str>,
    /// The object's name (for a create with `generateName`, the generated one).
    pub name: &'a str,
    /// The stored object on update and delete.
    pub old: Option<&'a Value>,
    /// Who asks; `None` for the server's own writes (controllers, bootstrap).
    pub user: Option<&'a UserInfo>,
    pub dry_run: bool,
    /// The request's `CreateOptions`/`UpdateOptions`/`DeleteOptions` as JSON
    /// (`AdmissionRequest.options`), when the caller has them.
    pub options: Option<&'a Value>,
}

/// One admission plugin. Both phases default to "admit, no warnings".
#[async_trait::async_trait]
pub trait Admission: Send + Sync {
    /// Mutate (or reject) the object about to be written. On delete `obj` is
    /// the stored object and changes to it are ignored.
    async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        obj: &mut Value,
    ) -> Result<Vec<String>, ApiError> {
        let _ = (attrs, obj);
        Ok(Vec::new())
    }

    /// Accept or reject the object about to be written, unchanged.
    async fn validate(&self, attrs: &Attributes<'_>, obj: &Value) -> Result<Vec<String>, ApiError> {
        let _ = (attrs, obj);
        Ok(Vec::new())
    }
}
