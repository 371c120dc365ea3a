//! kubectl 1.37 against RBAC: a token user bound to `view` in one namespace
//! reads there and is refused (kube's 403 wording) elsewhere and on writes;
//! `auth can-i` (protobuf SelfSubjectAccessReview) and `auth whoami`;
//! impersonation (`--as`) allowed for the admin, refused for the user;
//! ClusterRole aggregation into `view`; discovery of the review resources;
//! `--authorization-mode AlwaysAllow`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use ubernetes_e2e::{Server, eventually, kubectl_bin};

/// A server with bearer tokens for `bob` (uid 1001, group `devs`) and `carol`.
struct Env {
    server: Server,
    dir: tempfile::TempDir,
    /// A kubeconfig with contexts `bob` and `carol` (token users).
    users_kubeconfig: PathBuf,
}

fn start(extra: &[&str]) -> Result<Env> {
    let dir = tempfile::Builder::new()
        .prefix("ubernetes-rbac-")
        .tempdir()?;
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(
        &tokens,
        "bob-token,bob,1001,\"devs\"\ncarol-token,carol,1002\n",
    )?;
    let tokens = tokens.to_string_lossy().into_owned();
    let mut args = vec!["--token-auth-file", tokens.as_str()];
    args.extend_from_slice(extra);
    let server = Server::start_with(&args)?;
    // The cluster of the admin kubeconfig, with token users instead of the
    // admin's client certificate.
    let users_kubeconfig = dir.path().join("users-kubeconfig");
    std::fs::copy(server.kubeconfig(), &users_kubeconfig)?;
    for user in ["bob", "carol"] {
        let token = format!("--token={user}-token");
        config(&users_kubeconfig, &["set-credentials", user, &token])?;
        let u = format!("--user={user}");
        config(
            &users_kubeconfig,
            &["set-context", user, "--cluster=federation", &u],
        )?;
    }
    Ok(Env {
        server,
        dir,
        users_kubeconfig,
    })
}

fn config(kubeconfig: &Path, args: &[&str]) -> Result<()> {
    let out = Command::new(kubectl_bin())
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("config")
        .args(args)
        .env_remove("KUBECONFIG")
        .output()?;
    if !out.status.success() {
        bail!(
            "kubectl config {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

impl Env {
    /// kubectl as a token user (context `bob` or `carol`).
    fn as_user(&self, user: &str, args: &[&str]) -> Result<Output> {
        Command::new(kubectl_bin())
            .arg("--kubeconfig")
            .arg(&self.users_kubeconfig)
            .arg(format!("--context={user}"))
            .args(args)
            .env(
                "KUBECACHEDIR",
                self.dir.path().join(format!("cache-{user}")),
            )
            .env_remove("KUBECONFIG")
            .output()
            .context("running kubectl (set $KUBECTL)")
    }

    fn bob_ok(&self, args: &[&str]) -> Result<String> {
        let out = self.as_user("bob", args)?;
        if !out.status.success() {
            bail!(
                "kubectl {} as bob failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn bob_err(&self, args: &[&str]) -> Result<String> {
        let out = self.as_user("bob", args)?;
        if out.status.success() {
            bail!(
                "kubectl {} as bob succeeded but should fail: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stdout)
            );
        }
        Ok(String::from_utf8_lossy(&out.stderr).into_owned())
    }

    /// Namespaces `team` (with ConfigMap `c1`) and `other`, and bob bound
    /// to `view` in `team`; waits until the binding is in force.
    fn bob_views_team(&self) -> Result<()> {
        let s = &self.server;
        s.kubectl_ok(&["create", "namespace", "team"])?;
        s.kubectl_ok(&["create", "namespace", "other"])?;
        s.kubectl_ok(&[
            "create",
            "configmap",
            "c1",
            "-n",
            "team",
            "--from-literal=k=v",
        ])?;
        s.kubectl_ok(&[
            "create",
            "configmap",
            "o1",
            "-n",
            "other",
            "--from-literal=k=v",
        ])?;
        s.kubectl_ok(&[
            "create",
            "rolebinding",
            "bob-view",
            "--clusterrole=view",
            "--user=bob",
            "-n",
            "team",
        ])?;
        eventually(Duration::from_secs(10), || {
            Ok(self
                .as_user("bob", &["get", "cm", "-n", "team"])?
                .status
                .success()
                .then_some(()))
        })
    }
}

#[test]
fn a_user_bound_to_view_in_one_namespace_reads_there_only() -> Result<()> {
    let env = start(&[])?;
    // Before any binding: nothing.
    let err = env.bob_err(&["get", "cm", "-n", "team"])?;
    assert!(
        err.contains(r#"Error from server (Forbidden): configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "team""#),
        "{err}"
    );
    env.bob_views_team()?;
    let out = env.bob_ok(&["get", "cm", "-n", "team", "-o", "name"])?;
    assert!(out.contains("configmap/c1"), "{out}");
    let out = env.bob_ok(&["get", "cm", "c1", "-n", "team", "-o", "jsonpath={.data.k}"])?;
    assert_eq!(out, "v");

    let err = env.bob_err(&["get", "cm", "-n", "other"])?;
    assert!(
        err.contains(r#"Error from server (Forbidden): configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "other""#),
        "{err}"
    );
    let err = env.bob_err(&["get", "cm", "o1", "-n", "other"])?;
    assert!(
        err.contains(r#"Error from server (Forbidden): configmaps "o1" is forbidden: User "bob" cannot get resource "configmaps" in API group "" in the namespace "other""#),
        "{err}"
    );
    let err = env.bob_err(&["create", "configmap", "x", "-n", "team"])?;
    assert!(
        err.contains(r#"configmaps is forbidden: User "bob" cannot create resource "configmaps" in API group "" in the namespace "team""#),
        "{err}"
    );
    let err = env.bob_err(&["delete", "configmap", "c1", "-n", "team"])?;
    assert!(
        err.contains(r#"configmaps "c1" is forbidden: User "bob" cannot delete resource "configmaps" in API group "" in the namespace "team""#),
        "{err}"
    );
    let err = env.bob_err(&["get", "namespaces"])?;
    assert!(
        err.contains(r#"namespaces is forbidden: User "bob" cannot list resource "namespaces" in API group "" at the cluster scope"#),
        "{err}"
    );
    // The admin (system:masters) still may do anything.
    env.server.kubectl_ok(&["get", "cm", "-n", "other"])?;
    Ok(())
}

#[test]
fn can_i_asks_with_a_protobuf_self_subject_access_review() -> Result<()> {
    let env = start(&[])?;
    env.bob_views_team()?;
    let out = env.as_user(
        "bob",
        &["auth", "can-i", "list", "configmaps", "-n", "team", "-v=8"],
    )?;
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "yes");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("selfsubjectaccessreviews")
            && log.contains("application/vnd.kubernetes.protobuf"),
        "kubectl should POST a protobuf SSAR:\n{log}"
    );
    assert!(log.contains("201 Created"), "{log}");

    let out = env.as_user(
        "bob",
        &["auth", "can-i", "create", "configmaps", "-n", "team"],
    )?;
    assert!(!out.status.success(), "can-i no exits 1");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "no");
    let out = env.as_user(
        "bob",
        &["auth", "can-i", "list", "configmaps", "-n", "other"],
    )?;
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "no");

    // The admin asks about bob by impersonating him.
    let out = env.server.kubectl(&[
        "auth",
        "can-i",
        "get",
        "configmaps",
        "-n",
        "team",
        "--as=bob",
    ])?;
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "yes");
    let out = env.server.kubectl(&[
        "auth",
        "can-i",
        "delete",
        "configmaps",
        "-n",
        "team",
        "--as=bob",
    ])?;
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "no");
    let out = env.server.kubectl_ok(&["auth", "can-i", "*", "*"])?;
    assert_eq!(out.trim(), "yes");

    // can-i --list: a SelfSubjectRulesReview.
    let out = env.bob_ok(&["auth", "can-i", "--list", "-n", "team"])?;
    assert!(out.contains("configmaps"), "{out}");
    assert!(
        out.contains("selfsubjectaccessreviews.authorization.k8s.io"),
        "{out}"
    );
    Ok(())
}

#[test]
fn whoami_prints_the_token_user_and_groups() -> Result<()> {
    let env = start(&[])?;
    let out = env.bob_ok(&["auth", "whoami"])?;
    let lines: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], vec!["ATTRIBUTE", "VALUE"], "{out}");
    assert!(lines.contains(&vec!["Username", "bob"]), "{out}");
    assert!(lines.contains(&vec!["UID", "1001"]), "{out}");
    assert!(
        lines.contains(&vec!["Groups", "[devs", "system:authenticated]"]),
        "{out}"
    );
    let out = env.bob_ok(&["auth", "whoami", "-o", "json"])?;
    let v: serde_json::Value = serde_json::from_str(&out)?;
    assert_eq!(v["kind"], "SelfSubjectReview");
    assert_eq!(v["status"]["userInfo"]["username"], "bob");

    // The admin impersonating carol is carol.
    let out = env.server.kubectl_ok(&[
        "auth",
        "whoami",
        "--as=carol",
        "--as-group=qa",
        "-o",
        "json",
    ])?;
    let v: serde_json::Value = serde_json::from_str(&out)?;
    assert_eq!(v["status"]["userInfo"]["username"], "carol");
    assert_eq!(
        v["status"]["userInfo"]["groups"],
        serde_json::json!(["qa", "system:authenticated"])
    );
    Ok(())
}

#[test]
fn only_a_user_allowed_to_impersonate_may_act_as_another() -> Result<()> {
    let env = start(&[])?;
    env.bob_views_team()?;
    let out = env
        .server
        .kubectl_ok(&["get", "cm", "-n", "team", "--as=bob", "-o", "name"])?;
    assert!(out.contains("configmap/c1"), "{out}");
    let err = env
        .server
        .kubectl_err(&["get", "cm", "-n", "other", "--as=bob"])?;
    assert!(
        err.contains(r#"configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "other""#),
        "{err}"
    );
    let err = env.bob_err(&["get", "cm", "-n", "team", "--as=carol"])?;
    assert!(
        err.contains(r#"Error from server (Forbidden): users "carol" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope"#),
        "{err}"
    );
    Ok(())
}

#[test]
fn a_cluster_role_labelled_aggregate_to_view_adds_its_rules_to_view() -> Result<()> {
    let env = start(&[])?;
    env.bob_views_team()?;
    let s = &env.server;
    s.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "s1",
        "-n",
        "team",
        "--from-literal=a=b",
    ])?;
    let err = env.bob_err(&["get", "secrets", "-n", "team"])?;
    assert!(err.contains("Forbidden"), "{err}");
    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: secret-reader
  labels:
    rbac.authorization.k8s.io/aggregate-to-view: "true"
rules:
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "list"]
"#,
    )?;
    eventually(Duration::from_secs(10), || {
        let out = s.kubectl_ok(&["get", "clusterrole", "view", "-o", "json"])?;
        let v: serde_json::Value = serde_json::from_str(&out)?;
        let has = v["rules"].as_array().is_some_and(|rules| {
            rules
                .iter()
                .any(|r| r["resources"] == serde_json::json!(["secrets"]))
        });
        Ok(has.then_some(()))
    })?;
    let out = eventually(Duration::from_secs(10), || {
        let out = env.as_user("bob", &["get", "secrets", "-n", "team", "-o", "name"])?;
        Ok(out
            .status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned()))
    })?;
    assert!(out.contains("secret/s1"), "{out}");
    // Removing the label takes the rules out again.
    s.kubectl_ok(&[
        "label",
        "clusterrole",
        "secret-reader",
        "rbac.authorization.k8s.io/aggregate-to-view-",
    ])?;
    eventually(Duration::from_secs(10), || {
        let out = env.as_user("bob", &["get", "secrets", "-n", "team"])?;
        Ok((!out.status.success()).then_some(()))
    })?;
    Ok(())
}

#[test]
fn discovery_lists_the_review_resources_as_create_only() -> Result<()> {
    let env = start(&[])?;
    let out = env.server.kubectl_ok(&[
        "api-resources",
        "--api-group=authorization.k8s.io",
        "-o",
        "wide",
    ])?;
    for (name, namespaced) in [
        ("localsubjectaccessreviews", "true"),
        ("selfsubjectaccessreviews", "false"),
        ("selfsubjectrulesreviews", "false"),
        ("subjectaccessreviews", "false"),
    ] {
        let row: Vec<&str> = out
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .with_context(|| format!("{name} in {out}"))?
            .split_whitespace()
            .collect();
        assert_eq!(row[2], namespaced, "{row:?}");
        assert_eq!(row[4], "create", "{row:?}");
    }
    let out = env.server.kubectl_ok(&[
        "api-resources",
        "--api-group=authentication.k8s.io",
        "-o",
        "name",
    ])?;
    assert!(
        out.contains("selfsubjectreviews.authentication.k8s.io"),
        "{out}"
    );
    assert!(out.contains("tokenreviews.authentication.k8s.io"), "{out}");
    Ok(())
}

#[test]
fn a_token_review_names_the_tokens_user() -> Result<()> {
    let env = start(&[])?;
    let out = env.server.kubectl_stdin_ok(
        &["create", "-f", "-", "-o", "json", "--validate=false"],
        r#"{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "carol-token"}}"#,
    )?;
    let v: serde_json::Value = serde_json::from_str(&out)?;
    assert_eq!(v["status"]["authenticated"], true, "{v}");
    assert_eq!(v["status"]["user"]["username"], "carol");
    assert_eq!(
        v["status"]["user"]["groups"],
        serde_json::json!(["system:authenticated"])
    );
    Ok(())
}

#[test]
fn always_allow_mode_lets_every_authenticated_user_in() -> Result<()> {
    let env = start(&["--authorization-mode", "AlwaysAllow"])?;
    env.server.kubectl_ok(&["create", "namespace", "other"])?;
    env.bob_ok(&["get", "cm", "-n", "other"])?;
    env.bob_ok(&["create", "configmap", "x", "-n", "other"])?;
    let out = env.bob_ok(&["auth", "can-i", "delete", "nodes"])?;
    assert_eq!(out.trim(), "yes");
    Ok(())
}

/// Escalation prevention: a user allowed to write Roles may only grant
/// permissions they hold themselves (kube's "is attempting to grant RBAC
/// permissions not currently held"), on create, update and patch.
#[test]
fn a_user_cannot_grant_permissions_they_do_not_hold() -> Result<()> {
    let env = start(&[])?;
    env.bob_views_team()?;
    // bob may also manage Roles in team.
    env.server.kubectl_ok(&[
        "create",
        "role",
        "role-writer",
        "-n",
        "team",
        "--verb=create,update,patch,get",
        "--resource=roles.rbac.authorization.k8s.io",
    ])?;
    env.server.kubectl_ok(&[
        "create",
        "rolebinding",
        "bob-role-writer",
        "-n",
        "team",
        "--role=role-writer",
        "--user=bob",
    ])?;
    // Granting what view already gives him is fine.
    eventually_ok(|| {
        env.bob_ok(&[
            "create",
            "role",
            "reader",
            "-n",
            "team",
            "--verb=get",
            "--resource=configmaps",
        ])
    })?;
    // Granting create on configmaps (which he lacks) is refused.
    let err = env.bob_err(&[
        "create",
        "role",
        "writer",
        "-n",
        "team",
        "--verb=create",
        "--resource=configmaps",
    ])?;
    assert!(
        err.contains("is attempting to grant RBAC permissions not currently held"),
        "{err}"
    );
    // So is widening the allowed role through a patch.
    let err = env.bob_err(&[
        "patch",
        "role",
        "reader",
        "-n",
        "team",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/rules/0/verbs/-","value":"delete"}]"#,
    ])?;
    assert!(
        err.contains("is attempting to grant RBAC permissions not currently held"),
        "{err}"
    );
    // The admin (system:masters) may grant anything.
    env.server.kubectl_ok(&[
        "create",
        "role",
        "writer",
        "-n",
        "team",
        "--verb=create",
        "--resource=configmaps",
    ])?;
    Ok(())
}

/// Retry a kubectl call for a few seconds (bindings reach the authorizer's
/// snapshot through a watch).
fn eventually_ok(mut f: impl FnMut() -> Result<String>) -> Result<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match f() {
            Ok(out) => return Ok(out),
            Err(e) if std::time::Instant::now() > deadline => return Err(e),
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(100)),
        }
    }
}
