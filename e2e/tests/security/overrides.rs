//! Overrides are checked on each member copy (issue 28, item 2): a user
//! allowed to bind only `view` cannot make a member hold a binding to
//! `cluster-admin` through a per-cluster override, by any verb (create,
//! update, merge and JSON patch, server-side apply): 403 with kube's
//! escalation wording, as for the same binding written directly; a harmless
//! override passes and reaches the member. A Secret whose override makes it
//! a service-account token is refused even for an admin (403 naming the
//! cluster and the rule). One federation, one member, real processes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};
use ubernetes_e2e::federation::Federation;
use ubernetes_e2e::{Server, eventually, kubectl_bin};

const WAIT: Duration = Duration::from_secs(30);
const OVERRIDES: &str = "federation.kubernetes.io/overrides";
const ESCALATION: &str = "is attempting to grant RBAC permissions not currently held";

/// kubectl as the token user `eve` (group `tenants`).
struct Eve {
    kubeconfig: PathBuf,
    cache: PathBuf,
}

impl Eve {
    fn new(host: &Server, dir: &Path) -> Result<Self> {
        let kubeconfig = dir.join("eve-kubeconfig");
        std::fs::copy(host.kubeconfig(), &kubeconfig)?;
        for args in [
            &["set-credentials", "eve", "--token=eve-token"][..],
            &["set-context", "eve", "--cluster=federation", "--user=eve"][..],
        ] {
            let out = Command::new(kubectl_bin())
                .arg("--kubeconfig")
                .arg(&kubeconfig)
                .arg("config")
                .args(args)
                .env_remove("KUBECONFIG")
                .output()?;
            ensure!(out.status.success(), "kubectl config {args:?}: {out:?}");
        }
        Ok(Self {
            kubeconfig,
            cache: dir.join("eve-cache"),
        })
    }

    fn run(&self, args: &[&str], stdin: Option<&Value>) -> Result<Output> {
        let mut child = Command::new(kubectl_bin())
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--context=eve")
            .args(args)
            .env("KUBECACHEDIR", &self.cache)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("running kubectl (set $KUBECTL)")?;
        let input = stdin.map(Value::to_string).unwrap_or_default();
        std::io::Write::write_all(&mut child.stdin.take().context("stdin")?, input.as_bytes())?;
        Ok(child.wait_with_output()?)
    }

    fn ok(&self, args: &[&str], stdin: Option<&Value>) -> Result<String> {
        let out = self.run(args, stdin)?;
        if !out.status.success() {
            bail!(
                "kubectl {} as eve failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The stderr of a refused command; it must be a 403.
    fn forbidden(&self, args: &[&str], stdin: Option<&Value>) -> Result<String> {
        let out = self.run(args, stdin)?;
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        ensure!(
            !out.status.success() && err.contains("(Forbidden)"),
            "kubectl {} as eve should be refused with 403: {err}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout)
        );
        Ok(err)
    }
}

/// A RoleBinding (or ClusterRoleBinding when `ns` is None) of `role` to
/// user `mallory`, with `overrides` as the annotation when given.
fn binding(name: &str, ns: Option<&str>, role: &str, overrides: Option<Value>) -> Value {
    let kind = if ns.is_some() {
        "RoleBinding"
    } else {
        "ClusterRoleBinding"
    };
    let mut b = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "User", "name": "mallory", "apiGroup": "rbac.authorization.k8s.io"}]
    });
    if let Some(ns) = ns {
        b["metadata"]["namespace"] = json!(ns);
    }
    if let Some(o) = overrides {
        b["metadata"]["annotations"] = json!({OVERRIDES: o.to_string()});
    }
    b
}

fn to_admin(entry: &str) -> Value {
    json!({entry: [{"op": "replace", "path": "/roleRef/name", "value": "cluster-admin"}]})
}

/// The reason of a kubectl 403: the text after `is forbidden: ` up to the
/// end of its first line (kube's escalation sentence, without the name).
fn reason(stderr: &str) -> String {
    let after = stderr.split("is forbidden: ").nth(1).unwrap_or_default();
    after.lines().next().unwrap_or_default().to_string()
}

/// Every binding in `member` (namespace `shop` and cluster-wide) made by
/// the federation whose role is `cluster-admin`.
fn admin_copies(member: &Server) -> Result<Vec<String>> {
    let mut found = Vec::new();
    for args in [
        &["rolebindings", "-n", "shop"][..],
        &["clusterrolebindings"][..],
    ] {
        let list = member.kubectl_get(args)?.unwrap_or_default();
        for item in list["items"].as_array().into_iter().flatten() {
            let managed = item
                .pointer("/metadata/labels/federation.kubernetes.io~1managed")
                .is_some();
            if managed && item["roleRef"]["name"] == "cluster-admin" {
                found.push(item["metadata"]["name"].to_string());
            }
        }
    }
    Ok(found)
}

#[test]
fn overrides_are_checked_on_each_member_copy() -> Result<()> {
    let dir = tempfile::Builder::new()
        .prefix("ubernetes-overrides-")
        .tempdir()?;
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "eve-token,eve,2001,\"tenants\"\n")?;
    let tokens = tokens.to_string_lossy().into_owned();
    let fed = Federation::start(1, &["--token-auth-file", &tokens])?;
    fed.join(0, "m1", &[])?;
    let host = &fed.host;
    let member = fed.member(0)?;
    host.kubectl_ok(&["create", "namespace", "shop"])?;
    // eve may write bindings and bind `view`, nothing else.
    let binder = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "binder"},
        "rules": [
            {"apiGroups": ["rbac.authorization.k8s.io"],
             "resources": ["rolebindings", "clusterrolebindings"],
             "verbs": ["create", "get", "list", "update", "patch"]},
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
             "verbs": ["bind"], "resourceNames": ["view"]}
        ]
    });
    host.kubectl_stdin_ok(&["apply", "-f", "-"], &binder.to_string())?;
    host.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "eve-binder",
        "--clusterrole=binder",
        "--user=eve",
    ])?;
    fed.wait_ready("m1")?;
    let eve = Eve::new(host, dir.path())?;

    // A harmless override: eve binds `view` and the member gets the copy.
    let label = json!({"*": [{"op": "add", "path": "/metadata/labels/extra", "value": "yes"}]});
    let harmless = binding("rb-view", Some("shop"), "view", Some(label));
    eventually(WAIT, || {
        Ok(eve
            .run(&["create", "-f", "-"], Some(&harmless))?
            .status
            .success()
            .then_some(()))
    })
    .context("eve creating a binding to view (her binding in force)")?;
    eventually(WAIT, || {
        Ok(member
            .kubectl_get(&["rolebinding", "rb-view", "-n", "shop"])?
            .filter(|b| {
                b["roleRef"]["name"] == "view" && b["metadata"]["labels"]["extra"] == "yes"
            }))
    })
    .context("the copy of rb-view in the member")?;

    // The same grant directly, for kube's wording.
    let direct = eve.forbidden(
        &["create", "-f", "-"],
        Some(&binding("rb-direct", Some("shop"), "cluster-admin", None)),
    )?;
    let kube_reason = reason(&direct);
    ensure!(
        kube_reason.starts_with("user \"eve\" (groups=[") && kube_reason.contains(ESCALATION),
        "direct grant: {direct}"
    );
    // Server-side apply of the direct grant is refused too.
    let applied = binding("rb-direct", Some("shop"), "cluster-admin", None);
    let err = eve.forbidden(
        &["apply", "--server-side", "--field-manager=eve", "-f", "-"],
        Some(&applied),
    )?;
    ensure!(reason(&err) == kube_reason, "direct apply: {err}");

    // Through an override, by every verb: kube's reason, and the cluster.
    let annotate = format!("{OVERRIDES}={}", to_admin("*"));
    let checks: Vec<(&str, Vec<&str>, Option<Value>)> = vec![
        (
            "create RoleBinding, \"*\" entry",
            vec!["create", "-f", "-"],
            Some(binding(
                "rb-evil",
                Some("shop"),
                "view",
                Some(to_admin("*")),
            )),
        ),
        (
            "create ClusterRoleBinding, entry m1",
            vec!["create", "-f", "-"],
            Some(binding("crb-evil", None, "view", Some(to_admin("m1")))),
        ),
        (
            "server-side apply",
            vec!["apply", "--server-side", "--field-manager=eve", "-f", "-"],
            Some(binding(
                "rb-evil",
                Some("shop"),
                "view",
                Some(to_admin("m1")),
            )),
        ),
        (
            "update (PUT)",
            vec!["replace", "-f", "-"],
            Some(binding(
                "rb-view",
                Some("shop"),
                "view",
                Some(to_admin("m1")),
            )),
        ),
        (
            "merge patch (annotate)",
            vec![
                "annotate",
                "rolebinding",
                "rb-view",
                "-n",
                "shop",
                "--overwrite",
                &annotate,
            ],
            None,
        ),
    ];
    for (what, args, stdin) in &checks {
        let err = eve.forbidden(args, stdin.as_ref())?;
        ensure!(
            reason(&err) == kube_reason,
            "{what}: not kube's escalation reason: {err}"
        );
        ensure!(
            err.contains(OVERRIDES) && err.contains("cluster"),
            "{what}: the refusal should name the copy and the override: {err}"
        );
    }
    let json_patch = json!([{"op": "add", "path": "/metadata/annotations",
        "value": {OVERRIDES: to_admin("m1").to_string()}}])
    .to_string();
    let err = eve.forbidden(
        &[
            "patch",
            "rolebinding",
            "rb-view",
            "-n",
            "shop",
            "--type=json",
            "-p",
            &json_patch,
        ],
        None,
    )?;
    ensure!(
        reason(&err) == kube_reason && err.contains("member cluster \"m1\""),
        "json patch: {err}"
    );

    // Eve's harmless change still goes through; once the member has it,
    // the member holds no binding to cluster-admin from the federation.
    eve.ok(
        &["label", "rolebinding", "rb-view", "-n", "shop", "round=2"],
        None,
    )?;
    eventually(WAIT, || {
        Ok(member
            .kubectl_get(&["rolebinding", "rb-view", "-n", "shop"])?
            .filter(|b| b["metadata"]["labels"]["round"] == "2"))
    })
    .context("rb-view's label in the member")?;
    let copies = admin_copies(member)?;
    ensure!(
        copies.is_empty(),
        "member bindings to cluster-admin: {copies:?}"
    );
    for (kind, name) in [
        ("rolebinding", "rb-evil"),
        ("clusterrolebinding", "crb-evil"),
    ] {
        let mut args = vec![kind, name];
        if kind == "rolebinding" {
            args.extend(["-n", "shop"]);
        }
        ensure!(
            host.kubectl_get(&args)?.is_none(),
            "{kind} {name} was stored"
        );
    }

    // A Secret an override turns into a service-account token: refused
    // even for the admin, naming the cluster and the rule.
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": "s1", "namespace": "shop", "annotations": {OVERRIDES:
            json!({"m1": [{"op": "replace", "path": "/type",
                "value": "kubernetes.io/service-account-token"}]}).to_string()}},
        "stringData": {"token": "x"}
    });
    let out = host.kubectl_stdin(&["create", "-f", "-"], &secret.to_string())?;
    let err = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success()
            && err.contains("(Forbidden)")
            && err.contains("secrets \"s1\" is forbidden")
            && err.contains("member cluster \"m1\"")
            && err.contains("kubernetes.io/service-account-token are never propagated"),
        "token Secret through an override: {err}"
    );
    ensure!(
        host.kubectl_get(&["secret", "s1", "-n", "shop"])?.is_none(),
        "s1 was stored"
    );
    Ok(())
}
