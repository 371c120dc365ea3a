//! `ubernetes join NAME --pull --agent-kubeconfig-out FILE` (SPEC §3.12):
//! a member the federation cannot reach. Nothing is written in the member;
//! in the federation (all in `federation-system`, with server-side apply):
//! - ServiceAccount `agent-NAME`, the agent's identity, and its token
//!   Secret `agent-NAME-token` (type `kubernetes.io/service-account-token`,
//!   long-lived: rotate it by deleting the Secret and running join again);
//! - ClusterRole and ClusterRoleBinding `ubernetes:agent:NAME`: `create`
//!   on `clusters/tunnel` (group `federation`), resourceNames `[NAME]`;
//! - Role and RoleBinding `ubernetes:agent:NAME`: `get`, `update`, `patch`
//!   on `leases` (group `coordination.k8s.io`), resourceNames `[NAME]`;
//! - the Lease `NAME` the agent renews (created here: `create` cannot be
//!   limited to one name);
//! - the Cluster `NAME` with `spec.syncMode: Pull` (no address, no Secret).
//!
//! FILE (mode 0600) gets the agent's kubeconfig: the federation's server
//! and CA from the federation context, the account's token. The agent's
//! rights are exactly those: no Secret, no federated object, no other
//! cluster's tunnel or Lease.

use std::io::Write as _;
use std::path::Path;

use anyhow::Context as _;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::Api;
use serde_json::json;
use ubernetes_api::Cluster;

use crate::join::{
    JoinNames, NAMESPACE, Target, account_token, apply, context_ca, delete, member_kubeconfig,
    namespace_and_account, secret_data,
};

/// The names of a pull member's agent identity.
pub fn agent_names(name: &str) -> JoinNames {
    JoinNames {
        service_account: format!("agent-{name}"),
        token_secret: format!("agent-{name}-token"),
        binding: format!("ubernetes:agent:{name}"),
        cluster: name.to_string(),
    }
}

/// The agent's ClusterRole: its own cluster's tunnel, nothing else.
fn tunnel_role(names: &JoinNames) -> serde_json::Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
           "metadata": {"name": names.binding, "labels": {"app.kubernetes.io/managed-by": "ubernetes"}},
           "rules": [{"apiGroups": ["federation"], "resources": ["clusters/tunnel"],
                      "resourceNames": [names.cluster], "verbs": ["create"]}]})
}

/// The agent's Role in `federation-system`: its own Lease.
fn lease_role(names: &JoinNames) -> serde_json::Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
           "metadata": {"name": names.binding, "namespace": NAMESPACE,
                        "labels": {"app.kubernetes.io/managed-by": "ubernetes"}},
           "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                      "resourceNames": [names.cluster], "verbs": ["get", "update", "patch"]}]})
}

/// A binding of `kind` (`ClusterRoleBinding` or `RoleBinding`) to the agent.
fn binding(names: &JoinNames, kind: &str, role_kind: &str) -> serde_json::Value {
    let mut metadata =
        json!({"name": names.binding, "labels": {"app.kubernetes.io/managed-by": "ubernetes"}});
    if kind == "RoleBinding" {
        metadata["namespace"] = json!(NAMESPACE);
    }
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": metadata,
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": names.binding},
           "subjects": [{"kind": "ServiceAccount", "name": names.service_account, "namespace": NAMESPACE}]})
}

/// Join `name` in pull mode and write the agent's kubeconfig to `out`.
pub async fn join_pull(name: &str, fed: &Target, out: &Path) -> anyhow::Result<()> {
    let names = agent_names(name);
    let client = fed.client.clone();
    let account = namespace_and_account(&names, fed).await?;
    let cluster_roles: Api<ClusterRole> = Api::all(client.clone());
    apply(
        &cluster_roles,
        &names.binding,
        tunnel_role(&names),
        &format!("cluster role {}", names.binding),
        fed,
    )
    .await?;
    let cluster_bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    apply(
        &cluster_bindings,
        &names.binding,
        binding(&names, "ClusterRoleBinding", "ClusterRole"),
        &format!("cluster role binding {}", names.binding),
        fed,
    )
    .await?;
    let roles: Api<Role> = Api::namespaced(client.clone(), NAMESPACE);
    apply(
        &roles,
        &names.binding,
        lease_role(&names),
        &format!("role {NAMESPACE}/{}", names.binding),
        fed,
    )
    .await?;
    let role_bindings: Api<RoleBinding> = Api::namespaced(client.clone(), NAMESPACE);
    apply(
        &role_bindings,
        &names.binding,
        binding(&names, "RoleBinding", "Role"),
        &format!("role binding {NAMESPACE}/{}", names.binding),
        fed,
    )
    .await?;
    let leases: Api<Lease> = Api::namespaced(client.clone(), NAMESPACE);
    if leases.get_opt(name).await?.is_none() {
        apply(
            &leases,
            name,
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                   "metadata": {"name": name, "namespace": NAMESPACE,
                                "labels": {"app.kubernetes.io/managed-by": "ubernetes"}},
                   "spec": {"leaseDurationSeconds": 40}}),
            &format!("lease {NAMESPACE}/{name}"),
            fed,
        )
        .await?;
    }
    let (secret, token) = account_token(&account, &names, fed).await?;
    let clusters: Api<Cluster> = Api::all(client);
    apply(
        &clusters,
        name,
        json!({"apiVersion": "federation/v1beta1", "kind": "Cluster",
               "metadata": {"name": name}, "spec": {"syncMode": ubernetes_api::SYNC_MODE_PULL}}),
        &format!("cluster {name}"),
        fed,
    )
    .await?;
    let server = fed.config.cluster_url.to_string();
    let server = server.trim_end_matches('/');
    let ca = match context_ca(fed)? {
        Some(ca) => Some(ca),
        None => secret_data(&secret, "ca.crt"),
    };
    let insecure = fed
        .cluster
        .as_ref()
        .and_then(|c| c.insecure_skip_tls_verify)
        == Some(true);
    let kubeconfig = member_kubeconfig(name, server, ca.as_deref(), insecure, &token)?;
    write_private(out, kubeconfig.as_bytes())?;
    println!("wrote the agent's kubeconfig to {}", out.display());
    println!(
        "cluster {name} joined the federation in pull mode: run `ubernetes agent --cluster {name} \
         --federation-kubeconfig {}` with the member's credentials (deploy/agent.yaml)",
        out.display()
    );
    Ok(())
}

/// Write `bytes` to `path`, readable by its owner only.
fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.write_all(bytes)
        .with_context(|| format!("cannot write {}", path.display()))?;
    // An existing file keeps its mode on open: made private here too.
    #[cfg(unix)]
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .with_context(|| format!("cannot make {} private", path.display()))?;
    Ok(())
}

/// Remove a pull member's agent identity from the federation (unjoin):
/// its bindings, roles, token Secret, account and Lease.
pub async fn remove_agent(name: &str, fed: &Target) -> anyhow::Result<()> {
    let names = agent_names(name);
    let client = fed.client.clone();
    let cluster_bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    let cluster_roles: Api<ClusterRole> = Api::all(client.clone());
    let role_bindings: Api<RoleBinding> = Api::namespaced(client.clone(), NAMESPACE);
    let roles: Api<Role> = Api::namespaced(client.clone(), NAMESPACE);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), NAMESPACE);
    let leases: Api<Lease> = Api::namespaced(client, NAMESPACE);
    let b = &names.binding;
    delete(
        &cluster_bindings,
        b,
        &format!("cluster role binding {b}"),
        fed,
    )
    .await?;
    delete(&cluster_roles, b, &format!("cluster role {b}"), fed).await?;
    delete(
        &role_bindings,
        b,
        &format!("role binding {NAMESPACE}/{b}"),
        fed,
    )
    .await?;
    delete(&roles, b, &format!("role {NAMESPACE}/{b}"), fed).await?;
    let t = &names.token_secret;
    delete(&secrets, t, &format!("secret {NAMESPACE}/{t}"), fed).await?;
    let a = &names.service_account;
    delete(
        &accounts,
        a,
        &format!("service account {NAMESPACE}/{a}"),
        fed,
    )
    .await?;
    delete(&leases, name, &format!("lease {NAMESPACE}/{name}"), fed).await?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    #[test]
    fn the_agent_may_open_its_own_tunnel_and_renew_its_own_lease_only() {
        let names = agent_names("edge");
        let tunnel = tunnel_role(&names);
        assert_eq!(
            tunnel["rules"],
            json!([{"apiGroups": ["federation"], "resources": ["clusters/tunnel"],
                    "resourceNames": ["edge"], "verbs": ["create"]}])
        );
        let lease = lease_role(&names);
        assert_eq!(lease["rules"][0]["resourceNames"], json!(["edge"]));
        assert_eq!(lease["rules"][0]["resources"], json!(["leases"]));
        let b = binding(&names, "RoleBinding", "Role");
        assert_eq!(b["metadata"]["namespace"], NAMESPACE);
        assert_eq!(b["subjects"][0]["name"], "agent-edge");
    }

    #[test]
    fn the_kubeconfig_file_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.kubeconfig");
        write_private(&path, b"x").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
