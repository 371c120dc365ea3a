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
//! every resource ([`Chain`]: `RegistryOptions::admission` and
//! [`crate::Registry::add_admission`]: webhooks, policies, quota).
//!
//! Where the store runs them (kube's order: mutating admission, then the
//! kind's validation, then validating admission):
//! - create: defaults and the kind's create preparation, NamespaceLifecycle,
//!   registry-wide `mutate`, the kind's validation, the resource's own
//!   plugins (ClusterIP allocation, after validation as kube's service
//!   REST storage allocates), registry-wide `validate`, write;
//! - update, patch, apply and subresource writes (`status`, `scale`,
//!   `finalize`, with [`Attributes::subresource`] set): inside the
//!   guaranteed-update loop, after the change produced the new object (and
//!   the kind validated it): registry-wide `mutate`, the kind's validation
//!   again when a plugin changed the object, the resource's plugins,
//!   registry-wide `validate`; re-run on a storage conflict as kube's
//!   `GuaranteedUpdate` re-runs its admission;
//! - delete: `mutate` (changes ignored) and `validate` with the stored
//!   object as `old` (kube sends DELETE to webhooks with `oldObject`).
//!
//! Dry run goes through every plugin with [`Attributes::dry_run`] set.
//!
//! Server-internal writes: the in-server controllers (garbage collector,
//! namespace deletion, token controller, leases, bootstrap objects) write
//! through the same `create`/`update`/`patch`/`delete` and are admitted
//! like any request, with `user: None` (kube's controllers write through
//! the API and are admitted too; webhooks see them as `system:apiserver`).
//! Only [`crate::Store::system_update`] bypasses admission: the controllers'
//! finalizer and status bookkeeping, which a webhook must not be able to
//! wedge (an object whose last finalizer cannot go is never deleted).

use std::sync::Arc;

use parking_lot::RwLock;
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

impl Attributes<'_> {
    /// Whether the request creates an object of the resource itself (not
    /// one of its subresources): what a plugin that sets up new objects
    /// (kube's ServiceAccount, RuntimeClass) admits.
    pub fn creates_object(&self) -> bool {
        self.operation == Operation::Create && self.subresource.is_none()
    }
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

    /// [`Admission::mutate`], saying whether it changed `obj` (the store
    /// then validates the object again, as the kind's types may no longer
    /// hold). The store calls this, never `mutate` directly. The default
    /// compares `obj` with a copy taken before; a plugin that knows (it had
    /// nothing to do, or tracks its own changes) implements this instead of
    /// `mutate`, so that no copy is made.
    async fn mutate_changed(
        &self,
        attrs: &Attributes<'_>,
        obj: &mut Value,
    ) -> Result<(Vec<String>, bool), ApiError> {
        let before = obj.clone();
        let warnings = self.mutate(attrs, obj).await?;
        let changed = *obj != before;
        Ok((warnings, changed))
    }

    /// Whether the plugin has a mutating phase at all. `false` (a plugin
    /// that only validates): the store neither calls [`Admission::mutate`]
    /// nor copies the object to see whether it changed.
    fn mutates(&self) -> bool {
        true
    }

    /// Accept or reject the object about to be written, unchanged.
    async fn validate(&self, attrs: &Attributes<'_>, obj: &Value) -> Result<Vec<String>, ApiError> {
        let _ = (attrs, obj);
        Ok(Vec::new())
    }

    /// For a kind's own plugin: whether it mutates in the mutating phase,
    /// before the registry-wide plugins, as kube's built-in admission
    /// plugins (Priority, ...) do, so that mutating webhooks and policies
    /// see what it set. Otherwise (the default) it mutates after the kind's
    /// validation, as kube's storage allocates (a ClusterIP only for a
    /// valid Service). Registry-wide plugins ignore this.
    fn mutates_before_webhooks(&self) -> bool {
        false
    }
}

/// The registry-wide plugins (webhooks, policies, quota), run on every
/// resource after the resource's own. Settable after the registry exists:
/// plugins that read the registry (webhook configurations, namespaces) are
/// built from it and then installed with [`crate::Registry::add_admission`].
#[derive(Clone, Default)]
pub struct Chain(Arc<RwLock<Vec<Arc<dyn Admission>>>>);

impl Chain {
    /// A chain holding `plugins`, in order.
    pub fn new(plugins: Vec<Arc<dyn Admission>>) -> Self {
        Self(Arc::new(RwLock::new(plugins)))
    }

    /// Append a plugin (it runs after those already installed).
    pub fn push(&self, plugin: Arc<dyn Admission>) {
        self.0.write().push(plugin);
    }

    /// The plugins now installed, in order.
    pub fn plugins(&self) -> Vec<Arc<dyn Admission>> {
        self.0.read().clone()
    }
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "admission::Chain({} plugins)", self.0.read().len())
    }
}
