//! Admission of what the members would get (issue 28: the federation must
//! not be a confused deputy). The federation writes into every member with
//! an account that may `bind` and `escalate`, and per-cluster overrides
//! (annotation `federation.kubernetes.io/overrides`) change each member's
//! copy after the checks on the federated object ran. So a write is also
//! checked on **each member copy** its overrides produce:
//!
//! - the never-propagated rules (a Secret whose override makes it a
//!   service-account token, an override adding the control-plane
//!   annotation …) → 403 naming the cluster, the override and the rule;
//! - for Roles, ClusterRoles and their bindings, RBAC's escalation checks,
//!   as on a direct write (kube's wording), with the stored object's copy
//!   for the same cluster as `old` → 403.
//!
//! It runs as a registry-wide validating admission plugin, the one place
//! every write's final object passes through: create, update, every patch
//! type and server-side apply (also when apply creates), dry run included.
//! It runs before ResourceQuota, so a refused write charges nothing. The
//! same plugin runs the escalation check on the object itself for roles
//! and bindings: server-side apply has no handler-side guard of its own.
//!
//! The copies come from the federation crate, which the API server does not
//! depend on: `ubernetes serve` installs the function with
//! [`set_member_copies`] before the server starts (it is the federation's
//! pure rule, the same for every server of the process). Without it (the
//! API server alone, in tests) only the escalation checks of the object
//! itself run. Writes by the server itself (no user) and subresource writes
//! are not checked; objects without the overrides annotation cost a map
//! lookup.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock, Weak};

use serde_json::Value;
use ubernetes_apimachinery::user::UserInfo;
use ubernetes_apimachinery::{ApiError, ResourceInfo};
use ubernetes_registry::Registry;
use ubernetes_registry::admission::{Admission, Attributes, Operation};
use ubernetes_registry::strategy::WriteAuthority;

use crate::authz::Authorization;

/// The federation's overrides annotation (`ubernetes_federation::overrides::
/// OVERRIDES_ANNOTATION`).
const OVERRIDES_ANNOTATION: &str = "federation.kubernetes.io/overrides";

/// The label of the copy every cluster the annotation does not name gets.
const OTHER_CLUSTERS: &str = "*";

/// The API group of roles and bindings.
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// `(resource plural, federated object)` → every member copy it produces,
/// each labelled with its cluster (`"*"`: every cluster the overrides do
/// not name), or Err with why a copy is refused (the 403's reason).
/// `ubernetes_federation::copy_checks::check_copies`.
pub type MemberCopiesFn =
    Arc<dyn Fn(&str, &Value) -> Result<Vec<(String, Value)>, String> + Send + Sync>;

static MEMBER_COPIES: OnceLock<MemberCopiesFn> = OnceLock::new();

/// Install the member-copies function (once per process; `false` if one was
/// installed already).
pub fn set_member_copies(copies: MemberCopiesFn) -> bool {
    MEMBER_COPIES.set(copies).is_ok()
}

/// RBAC's escalation check of a write of a role (`RoleEscalation`) or a
/// binding (`BindingEscalation`) by `user`, kube's policy-based storages:
/// `new` the object written, `old` the stored one on update. Other
/// authorities pass.
pub fn rbac_write_check(
    authz: &Authorization,
    authority: WriteAuthority,
    user: &UserInfo,
    resource: &str,
    namespace: &str,
    new: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let authorizer = authz.authorizer();
    match authority {
        WriteAuthority::RoleEscalation => {
            ubernetes_rbac::check_role_write(&authorizer, user, resource, namespace, new, old)
        }
        WriteAuthority::BindingEscalation => {
            ubernetes_rbac::check_binding_write(&authorizer, user, resource, namespace, new, old)
        }
        WriteAuthority::None | WriteAuthority::SignerPermission(_) => Ok(()),
    }
}

/// The plugin (see the module docs).
pub(super) struct MemberCopyAdmission {
    registry: Weak<Registry>,
    /// Set once the RBAC cache is loaded (after the chain is built).
    authz: Arc<OnceLock<Arc<Authorization>>>,
    /// `(group, resource)` of the federated kinds, in any served version.
    federated: HashSet<(String, String)>,
}

impl MemberCopyAdmission {
    pub(super) fn new(
        registry: &Arc<Registry>,
        authz: Arc<OnceLock<Arc<Authorization>>>,
    ) -> Arc<Self> {
        Arc::new(Self {
            registry: Arc::downgrade(registry),
            authz,
            federated: super::federated_kinds()
                .into_iter()
                .map(|i| (i.group, i.resource))
                .collect(),
        })
    }

    fn authority(&self, info: &ResourceInfo) -> WriteAuthority {
        if info.group != RBAC_GROUP {
            return WriteAuthority::None;
        }
        self.registry
            .upgrade()
            .and_then(|r| r.get(&info.group, &info.version, &info.resource))
            .map_or(WriteAuthority::None, |s| s.strategy().write_authority())
    }
}

#[async_trait::async_trait]
impl Admission for MemberCopyAdmission {
    fn mutates(&self) -> bool {
        false
    }

    async fn validate(&self, attrs: &Attributes<'_>, obj: &Value) -> Result<Vec<String>, ApiError> {
        let (Some(user), None, Operation::Create | Operation::Update) =
            (attrs.user, attrs.subresource, attrs.operation)
        else {
            return Ok(Vec::new());
        };
        let info = attrs.info;
        let has_overrides = obj
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(OVERRIDES_ANNOTATION))
            .is_some();
        let authority = self.authority(info);
        let escalation = matches!(
            authority,
            WriteAuthority::RoleEscalation | WriteAuthority::BindingEscalation
        );
        if !has_overrides && !escalation {
            return Ok(Vec::new());
        }
        let ns = attrs.namespace.unwrap_or("");
        let authz = self.authz.get();
        if let (true, Some(authz)) = (escalation, authz) {
            rbac_write_check(authz, authority, user, &info.resource, ns, obj, attrs.old)?;
        }
        let federated = has_overrides
            && self
                .federated
                .contains(&(info.group.clone(), info.resource.clone()));
        let Some(copies_of) = MEMBER_COPIES.get().filter(|_| federated) else {
            return Ok(Vec::new());
        };
        let copies = copies_of(&info.resource, obj)
            .map_err(|why| ApiError::forbidden(&info.group, &info.resource, attrs.name, &why))?;
        let (true, Some(authz)) = (escalation, authz) else {
            return Ok(Vec::new());
        };
        // The stored object's copy for the same cluster: its own entry, or
        // the one of every other cluster. None when it had none (checked as
        // a create).
        let old_copies = attrs
            .old
            .and_then(|o| copies_of(&info.resource, o).ok())
            .unwrap_or_default();
        let old_for = |cluster: &str| {
            let find = |c: &str| old_copies.iter().find(|(k, _)| k == c).map(|(_, v)| v);
            find(cluster).or_else(|| find(OTHER_CLUSTERS))
        };
        for (cluster, copy) in &copies {
            rbac_write_check(
                authz,
                authority,
                user,
                &info.resource,
                ns,
                copy,
                old_for(cluster),
            )
            .map_err(|e| in_copy(e, cluster))?;
        }
        Ok(Vec::new())
    }
}

/// Kube's refusal, with the member copy it is about.
fn in_copy(mut e: ApiError, cluster: &str) -> ApiError {
    let whose = if cluster == OTHER_CLUSTERS {
        "every member cluster the annotation does not name".to_string()
    } else {
        format!("member cluster {cluster:?}")
    };
    e.message.push_str(&format!(
        "; in the copy that {whose} would get through the {OVERRIDES_ANNOTATION} annotation"
    ));
    e
}
