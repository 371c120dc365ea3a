//! `federation@all` (SPEC §3.13, issue 25 item 3), real processes and the
//! real kubectl against two members:
//!
//! - `kubectl --context federation@all get cm -n shop` lists m1's and
//!   m2's ConfigMaps with a first column `CLUSTER`; `-o json` carries the
//!   `federation.kubernetes.io/cluster` annotation; `-l` selects in every
//!   member; `--chunk-size=1` pages across both; a bad `continue` is 400;
//! - `kubectl get -w` through it shows a ConfigMap created in m2;
//! - a write through it is 405 naming `federation@NAME`;
//! - a user allowed `clusters/proxy` on m1 only sees only m1's items and
//!   gets 403 through `federation@m2`;
//! - a member that hangs (SIGSTOP) costs the bound (5 s), a paged list
//!   past it too (once for the whole walk, not per page), one that is down
//!   costs nothing: the answer comes with a `Warning` naming it.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use ubernetes_e2e::federation::Federation;

/// The kubeconfig with the member contexts, and kubectl runs on it.
struct Contexts {
    path: PathBuf,
}

impl Contexts {
    /// A copy of `host`'s admin kubeconfig in `dir`, given the member
    /// contexts by `ubernetes kubeconfig --members`.
    fn write(host_kubeconfig: &Path, dir: &Path) -> Result<Self> {
        let path = dir.join("kubeconfig");
        std::fs::copy(host_kubeconfig, &path)?;
        let args = ["kubeconfig", "--members", "--kubeconfig"];
        let out = Command::new(ubernetes_e2e::ubernetes_bin())
            .args(args)
            .arg(&path)
            .env_remove("KUBECONFIG")
            .output()
            .context("running ubernetes kubeconfig --members")?;
        ubernetes_e2e::check(&args, out)?;
        Ok(Self { path })
    }

    fn cmd(&self, context: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(ubernetes_e2e::kubectl_bin());
        cmd.arg("--kubeconfig")
            .arg(&self.path)
            .args(["--context", context])
            .args(args)
            .env("KUBECACHEDIR", self.path.with_file_name(context))
            .env_remove("KUBECONFIG");
        cmd
    }

    fn run(&self, context: &str, args: &[&str]) -> Result<Output> {
        self.cmd(context, args)
            .output()
            .context("running kubectl (set $KUBECTL)")
    }

    fn ok(&self, context: &str, args: &[&str]) -> Result<String> {
        ubernetes_e2e::check(args, self.run(context, args)?)
    }
}

/// `(cluster, name)` of each row of a `kubectl get` table (header first).
fn rows(table: &str) -> Vec<(String, String)> {
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut cells = l.split_whitespace();
            Some((cells.next()?.to_string(), cells.next()?.to_string()))
        })
        .filter(|(_, name)| name != "kube-root-ca.crt")
        .collect()
}

/// `(annotation, name)` of each item of a JSON list.
fn items(list: &str) -> Result<Vec<(String, String)>> {
    let v: Value = serde_json::from_str(list).with_context(|| format!("not JSON: {list}"))?;
    let mut out: Vec<(String, String)> = v["items"]
        .as_array()
        .context("no items")?
        .iter()
        .map(|i| {
            let m = &i["metadata"];
            (
                m["annotations"]["federation.kubernetes.io/cluster"]
                    .as_str()
                    .unwrap_or("(none)")
                    .to_string(),
                m["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .filter(|(_, name)| name != "kube-root-ca.crt")
        .collect();
    out.sort();
    Ok(out)
}

/// `federation@all`'s server path. Raw requests go through the plain
/// `federation` context: kubectl 1.37 puts a `--raw` path after the
/// context's server path (1.32 replaced it), so a full path must be sent
/// through a context whose server has none.
const FEDERATION: &str = "federation";

/// The merged view's path on the federation.
const ALL_PROXY: &str = "/apis/federation/v1beta1/clusters/-/proxy";

fn pair(c: &str, n: &str) -> (String, String) {
    (c.to_string(), n.to_string())
}

#[test]
fn one_view_across_every_member() -> Result<()> {
    let mut fed = Federation::start(2, &[])?;
    fed.join(0, "m1", &[])?;
    fed.join(1, "m2", &[])?;
    fed.wait_ready("m1")?;
    fed.wait_ready("m2")?;
    for (i, objects) in [
        (0, &[("a1", "web"), ("a2", "db")][..]),
        (1, &[("b1", "web")][..]),
    ] {
        let member = fed.member(i)?;
        member.kubectl_ok(&["create", "namespace", "shop"])?;
        for (name, app) in objects {
            member.kubectl_ok(&["create", "configmap", name, "-n", "shop"])?;
            member.kubectl_ok(&[
                "label",
                "configmap",
                name,
                "-n",
                "shop",
                &format!("app={app}"),
            ])?;
        }
    }
    let dir = tempfile::tempdir()?;
    let kc = Contexts::write(&fed.host.kubeconfig(), dir.path())?;
    let all = "federation@all";
    let every = vec![pair("m1", "a1"), pair("m1", "a2"), pair("m2", "b1")];

    // A table with a first column CLUSTER, the rows by cluster.
    let table = kc.ok(all, &["get", "configmaps", "-n", "shop"])?;
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(header.first().copied(), Some("CLUSTER"), "{table}");
    assert_eq!(header.get(1).copied(), Some("NAME"), "{table}");
    assert_eq!(rows(&table), every, "{table}");
    // JSON: each item annotated with its cluster.
    let list = kc.ok(all, &["get", "configmaps", "-n", "shop", "-o", "json"])?;
    assert_eq!(items(&list)?, every);
    // A label selector, in every member.
    let web = kc.ok(
        all,
        &[
            "get",
            "configmaps",
            "-n",
            "shop",
            "-l",
            "app=web",
            "-o",
            "json",
        ],
    )?;
    assert_eq!(items(&web)?, [pair("m1", "a1"), pair("m2", "b1")]);
    // Pages of one item walk both members.
    let paged = kc.ok(all, &["get", "configmaps", "-n", "shop", "--chunk-size=1"])?;
    assert_eq!(rows(&paged), every, "{paged}");
    // Pages of two: both members at once, one item each; every item once.
    let paged = kc.ok(all, &["get", "configmaps", "-n", "shop", "--chunk-size=2"])?;
    let mut two = rows(&paged);
    two.sort();
    assert_eq!(two, every, "{paged}");
    let bad = kc.run(
        FEDERATION,
        &[
            "get",
            "--raw",
            &format!("{ALL_PROXY}/api/v1/namespaces/shop/configmaps?limit=1&continue=bogus"),
        ],
    )?;
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && err.contains("continue key is not valid"),
        "{err}"
    );
    // One object by name: one row per member holding it.
    let one = kc.ok(all, &["get", "configmap", "b1", "-n", "shop"])?;
    assert_eq!(rows(&one), [pair("m2", "b1")], "{one}");
    let missing = kc.run(all, &["get", "configmap", "nowhere", "-n", "shop"])?;
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains(r#"configmaps "nowhere" not found"#),
        "{missing:?}"
    );

    fed.member(0)?
        .kubectl_ok(&["get", "configmap", "a1", "-n", "shop"])?;
    // Writes are refused (405), naming the per-member contexts.
    let write = kc.run(all, &["create", "configmap", "x", "-n", "shop"])?;
    let err = String::from_utf8_lossy(&write.stderr);
    assert!(
        !write.status.success()
            && err.contains("federation@all only reads")
            && err.contains("kubectl --context federation@NAME"),
        "{err}"
    );
    let delete = kc.run(
        FEDERATION,
        &[
            "delete",
            "--raw",
            &format!("{ALL_PROXY}/api/v1/namespaces/shop/configmaps/a1"),
        ],
    )?;
    let err = String::from_utf8_lossy(&delete.stderr);
    assert!(
        err.contains("(MethodNotAllowed)") && err.contains("does not allow DELETE"),
        "{err}"
    );
    fed.member(0)?
        .kubectl_ok(&["get", "configmap", "a1", "-n", "shop"])?;

    // A watch shows a change made in m2.
    let mut watch = kc
        .cmd(all, &["get", "configmaps", "-n", "shop", "-w"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("kubectl get -w")?;
    let stdout = watch.stdout.take().context("stdout")?;
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // The list part first (every row), then the change.
    let until = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    let mut created = false;
    let found = loop {
        let Ok(line) = lines.recv_timeout(until.saturating_duration_since(Instant::now())) else {
            break None;
        };
        seen.push(line.clone());
        if !created && line.split_whitespace().nth(1) == Some("b1") {
            fed.member(1)?
                .kubectl_ok(&["create", "configmap", "watched", "-n", "shop"])?;
            created = true;
        }
        if line.split_whitespace().take(2).eq(["m2", "watched"]) {
            break Some(line);
        }
    };
    let _ = watch.kill();
    let _ = watch.wait();
    if found.is_none() {
        bail!("kubectl get -w did not show m2's new ConfigMap: {seen:?}");
    }

    // RBAC: bob may proxy to m1 only; each member lets him read.
    fed.host.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "proxy-m1"},
             "rules": [{"apiGroups": ["federation"], "resources": ["clusters/proxy"],
                        "resourceNames": ["m1"], "verbs": ["get"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "bob-proxy-m1"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "proxy-m1"},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]}
        ]})
        .to_string(),
    )?;
    for i in 0..2 {
        fed.member(i)?.kubectl_ok(&[
            "create",
            "clusterrolebinding",
            "bob-view",
            "--clusterrole=view",
            "--user=bob",
        ])?;
    }
    let bobs = ubernetes_e2e::eventually(Duration::from_secs(10), || {
        let out = kc.run(
            all,
            &["get", "configmaps", "-n", "shop", "-o", "json", "--as=bob"],
        )?;
        if !out.status.success() {
            return Ok(None);
        }
        let seen = items(&String::from_utf8_lossy(&out.stdout))?;
        Ok((!seen.is_empty()).then_some(seen))
    })?;
    assert_eq!(bobs, [pair("m1", "a1"), pair("m1", "a2")]);
    // Through federation@m2 bob is refused (kubectl's own discovery
    // reports a 403 as "unknown", so the raw request shows kube's message).
    let refused = kc.run(
        "federation@m2",
        &["get", "configmaps", "-n", "shop", "--as=bob"],
    )?;
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("Error from server (Forbidden)"),
        "{refused:?}"
    );
    let m2 = "/apis/federation/v1beta1/clusters/m2/proxy/api/v1/namespaces/shop/configmaps";
    let refused = kc.run(FEDERATION, &["get", "--raw", m2, "--as=bob"])?;
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains(
            r#"clusters.federation "m2" is forbidden: User "bob" cannot get resource "clusters/proxy""#
        ),
        "{refused:?}"
    );
    // Carol may proxy to no member: federation@all is the gate's 403.
    let carol = kc.run(
        FEDERATION,
        &[
            "get",
            "--raw",
            &format!("{ALL_PROXY}/api/v1/namespaces/shop/configmaps"),
            "--as=carol",
        ],
    )?;
    assert!(
        String::from_utf8_lossy(&carol.stderr)
            .contains(r#"clusters.federation "-" is forbidden: User "carol" cannot get resource "clusters/proxy""#),
        "{carol:?}"
    );

    // m2 hangs: the answer comes at the bound, without m2, with a Warning.
    let pid = fed.member(1)?.pid().context("m2's pid")?.to_string();
    Command::new("kill").args(["-STOP", &pid]).status()?;
    let started = Instant::now();
    let slow = kc.run(all, &["get", "configmaps", "-n", "shop"]);
    let took = started.elapsed();
    // Paged: every page asks both members at once; m2 misses the bound on
    // the first and is done for the walk, so the walk costs one bound, not
    // one per page.
    let started = Instant::now();
    let paged = kc.run(all, &["get", "configmaps", "-n", "shop", "--chunk-size=2"]);
    let paged_took = started.elapsed();
    Command::new("kill").args(["-CONT", &pid]).status()?;
    let slow = slow?;
    let paged = paged?;
    let out = ubernetes_e2e::check(&["get", "configmaps"], slow.clone())?;
    assert_eq!(rows(&out), [pair("m1", "a1"), pair("m1", "a2")], "{out}");
    let err = String::from_utf8_lossy(&slow.stderr);
    assert!(
        err.contains("Warning: cluster m2: no answer within 5s"),
        "{err}"
    );
    assert!(
        took >= Duration::from_secs(5) && took < Duration::from_secs(9),
        "a hanging member should cost the 5 s bound, took {took:?}"
    );
    let out = ubernetes_e2e::check(&["get", "configmaps", "--chunk-size=2"], paged.clone())?;
    assert_eq!(rows(&out), [pair("m1", "a1"), pair("m1", "a2")], "{out}");
    let err = String::from_utf8_lossy(&paged.stderr);
    assert_eq!(
        err.matches("Warning: cluster m2: no answer within 5s")
            .count(),
        1,
        "{err}"
    );
    assert!(
        paged_took >= Duration::from_secs(5) && paged_took < Duration::from_secs(9),
        "paging past a hanging member should cost one 5 s bound, took {paged_took:?}"
    );
    // m2 down: no wait at all, the Warning names it.
    fed.member_mut(1)?.kill9();
    let started = Instant::now();
    let down = kc.run(all, &["get", "configmaps", "-n", "shop"])?;
    let took = started.elapsed();
    let out = ubernetes_e2e::check(&["get", "configmaps"], down.clone())?;
    assert_eq!(rows(&out), [pair("m1", "a1"), pair("m1", "a2")], "{out}");
    let err = String::from_utf8_lossy(&down.stderr);
    assert!(err.contains("Warning: cluster m2: "), "{err}");
    assert!(took < Duration::from_secs(5), "a down member cost {took:?}");
    Ok(())
}
