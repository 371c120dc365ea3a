//! The cluster proxy (SPEC §3.10) between real processes: a host and two
//! members (`east` joined with `ubernetes join`, `west` declaratively with
//! the member's admin kubeconfig), driven with the real
//! kubectl (`get --raw`, `create --raw`) and, where the exact status code
//! and bytes matter, hand-built requests with the admin's `kube::Client`.
//!
//! - a read through `clusters/east/proxy/...` is the member's answer (a
//!   namespace that exists only in `east`; the query string passes);
//! - a POST through the proxy creates in the member, which sees the
//!   caller (issue 28): the federation's account for it (east joined with
//!   `ubernetes join`: its service account) impersonates the admin, whose
//!   name and `system:masters` group the member's SelfSubjectReview shows;
//! - a member error comes back unchanged (its 404 Status, byte for byte);
//! - a watch through the proxy delivers an event created after it started,
//!   while the stream stays open;
//! - a user without `clusters/proxy` gets kube's 403; a ClusterRole
//!   granting `get` on it lets them through to the member, where the
//!   member's own RBAC decides: the member's 403 naming that user, and a
//!   read once the member grants a group of theirs (still no `create`:
//!   the federation's gate);
//! - an unknown cluster is 404 for `clusters.federation`; an Upgrade
//!   request the member refuses gets the member's answer unchanged; a
//!   killed member is 503 naming the cluster;
//! - discovery lists `clusters/proxy` with kube's `nodes/proxy` verbs.
//!
//! And, when `../shared/kube` is there, a read, a 404 and a watch through
//! the proxy to a real kube-apiserver member, which also sees the caller:
//! the admin in its SelfSubjectReview, kube's 403 naming a user without
//! rights there, and a read once it grants that user's group.

use std::io::{BufRead as _, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use ubernetes_e2e::Server;
use ubernetes_e2e::federation::Federation;

const EAST: &str = "/apis/federation/v1beta1/clusters/east/proxy";
const WEST: &str = "/apis/federation/v1beta1/clusters/west/proxy";

fn json(text: &str) -> Result<Value> {
    serde_json::from_str(text).with_context(|| format!("not JSON: {text}"))
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// `(status, content type, body)` of a request sent with `server`'s admin
/// credentials (without kube's retries of 429/503/504: the answer is the
/// first one).
fn raw(
    server: &Server,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<(u16, String, String)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let kubeconfig = kube::config::Kubeconfig::read_from(server.kubeconfig())?;
        let mut config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await?;
        config.default_retry = false;
        let client = kube::Client::try_from(config)?;
        let mut req = http::Request::builder().method(method).uri(path);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req.body(kube::client::Body::from(body.as_bytes().to_vec()))?;
        let resp = client.send(req).await?;
        let status = resp.status().as_u16();
        let ct = resp
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let bytes = resp.into_body().collect_bytes().await?;
        Ok((status, ct, String::from_utf8_lossy(&bytes).into_owned()))
    })
}

/// Start `kubectl get --raw path` (a watch) and hand its output lines over
/// a channel as they arrive.
struct Streaming {
    child: std::process::Child,
    lines: mpsc::Receiver<String>,
}

impl Streaming {
    fn start(server: &Server, path: &str) -> Result<Self> {
        let mut child = server
            .kubectl_cmd(&["get", "--raw", path])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting kubectl get --raw (set $KUBECTL)")?;
        let stdout = child.stdout.take().context("kubectl stdout")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Self { child, lines })
    }

    /// The next watch event whose object is named `name`, within `deadline`.
    fn event_for(&mut self, name: &str, deadline: Duration) -> Result<Value> {
        let until = Instant::now() + deadline;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(line) => line,
                Err(_) => bail!("no watch event for {name} within {deadline:?}"),
            };
            let event = json(&line)?;
            if event["object"]["metadata"]["name"] == name {
                return Ok(event);
            }
        }
    }

    fn still_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_cluster_proxy_forwards_to_the_member_as_the_caller() -> Result<()> {
    let mut fed = Federation::start(2, &[])?;
    // East with `ubernetes join` (a service account of its own in the
    // member), west declaratively with the member's admin kubeconfig.
    let member_kc = fed.member(0)?.kubeconfig().to_string_lossy().into_owned();
    let host_kc = fed.host.kubeconfig().to_string_lossy().into_owned();
    let out = std::process::Command::new(ubernetes_e2e::ubernetes_bin())
        .args([
            "join",
            "east",
            "--cluster-context",
            "federation",
            "--kubeconfig",
        ])
        .arg(&member_kc)
        .arg("--federation-kubeconfig")
        .arg(&host_kc)
        .env_remove("KUBECONFIG")
        .output()
        .context("running ubernetes join (cargo build -p ubernetes)")?;
    if !out.status.success() {
        bail!(
            "ubernetes join east: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    fed.join(1, "west", &[])?;
    fed.wait_ready("east")?;
    fed.wait_ready("west")?;
    let host = &fed.host;
    let east = fed.member(0)?;
    east.kubectl_ok(&["create", "namespace", "only-in-east"])?;
    east.kubectl_ok(&["label", "namespace", "only-in-east", "proxy-test=yes"])?;

    // Discovery: kube's `nodes/proxy` verbs.
    let discovery = json(&host.kubectl_ok(&["get", "--raw", "/apis/federation/v1beta1"])?)?;
    let sub = discovery["resources"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["name"] == "clusters/proxy"))
        .with_context(|| format!("no clusters/proxy in {discovery}"))?;
    assert_eq!(
        sub["verbs"],
        json!(["create", "delete", "get", "patch", "update"])
    );
    assert_eq!(sub["kind"], "ClusterProxyOptions");

    // A read is the member's: the namespace only east has.
    let list = json(&host.kubectl_ok(&["get", "--raw", &format!("{EAST}/api/v1/namespaces")])?)?;
    assert_eq!(list["kind"], "NamespaceList");
    assert!(names(&list).contains(&"only-in-east".to_string()), "{list}");
    let list = json(&host.kubectl_ok(&["get", "--raw", &format!("{WEST}/api/v1/namespaces")])?)?;
    assert!(
        !names(&list).contains(&"only-in-east".to_string()),
        "{list}"
    );
    assert!(names(&list).contains(&"default".to_string()), "{list}");
    // The query string passes.
    let list = json(&host.kubectl_ok(&[
        "get",
        "--raw",
        &format!("{EAST}/api/v1/namespaces?labelSelector=proxy-test%3Dyes"),
    ])?)?;
    assert_eq!(names(&list), ["only-in-east"]);

    // A POST through the proxy creates in the member.
    let dir = tempfile::tempdir()?;
    let cm = dir.path().join("cm.json");
    std::fs::write(
        &cm,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "via-proxy"}, "data": {"k": "v"}})
        .to_string(),
    )?;
    let created = json(&host.kubectl_ok(&[
        "create",
        "--raw",
        &format!("{EAST}/api/v1/namespaces/only-in-east/configmaps"),
        "-f",
        &cm.to_string_lossy(),
    ])?)?;
    assert_eq!(created["metadata"]["name"], "via-proxy");
    let in_member = json(&east.kubectl_ok(&[
        "get",
        "configmap",
        "via-proxy",
        "-n",
        "only-in-east",
        "-o",
        "json",
    ])?)?;
    assert_eq!(in_member["data"]["k"], "v");
    assert_eq!(in_member["metadata"]["uid"], created["metadata"]["uid"]);

    // The member sees the caller: the federation's account for it (the
    // one `ubernetes join` made) impersonates the federation's admin.
    let ssr = dir.path().join("ssr.json");
    std::fs::write(
        &ssr,
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}).to_string(),
    )?;
    let review = json(&host.kubectl_ok(&[
        "create",
        "--raw",
        &format!("{EAST}/apis/authentication.k8s.io/v1/selfsubjectreviews"),
        "-f",
        &ssr.to_string_lossy(),
    ])?)?;
    let seen = &review["status"]["userInfo"];
    assert_eq!(seen["username"], "ubernetes-admin", "{review}");
    let groups = seen["groups"].as_array().cloned().unwrap_or_default();
    assert!(groups.contains(&json!("system:masters")), "{review}");

    // A member error comes back unchanged: its 404 Status, byte for byte.
    let missing = "/api/v1/namespaces/only-in-east/configmaps/nope";
    let direct = raw(east, "GET", missing, &[], "")?;
    let proxied = raw(host, "GET", &format!("{EAST}{missing}"), &[], "")?;
    assert_eq!(direct.0, 404);
    assert_eq!(proxied, direct);
    assert_eq!(json(&proxied.2)?["reason"], "NotFound");
    let err = host.kubectl_err(&["get", "--raw", &format!("{EAST}{missing}")])?;
    assert!(
        err.contains(r#"Error from server (NotFound): configmaps "nope" not found"#),
        "{err}"
    );

    // A watch through the proxy streams: an object created after the watch
    // started arrives while the stream stays open.
    let mut watch = Streaming::start(
        host,
        &format!("{EAST}/api/v1/namespaces/only-in-east/configmaps?watch=true"),
    )?;
    let first = watch.event_for("via-proxy", Duration::from_secs(15))?;
    assert_eq!(first["type"], "ADDED");
    east.kubectl_ok(&[
        "create",
        "configmap",
        "after-watch",
        "-n",
        "only-in-east",
        "--from-literal=x=y",
    ])?;
    let later = watch.event_for("after-watch", Duration::from_secs(15))?;
    assert_eq!(later["type"], "ADDED");
    assert_eq!(later["object"]["data"]["x"], "y");
    assert!(
        watch.still_running(),
        "the watch ended instead of streaming"
    );
    drop(watch);

    // Authorization: kube's 403 without `clusters/proxy` ...
    let err = host.kubectl_err(&[
        "get",
        "--raw",
        &format!("{EAST}/api/v1/namespaces"),
        "--as=bob",
    ])?;
    assert!(
        err.contains(
            r#"clusters.federation "east" is forbidden: User "bob" cannot get resource "clusters/proxy" in API group "federation" at the cluster scope"#
        ),
        "{err}"
    );
    // ... and a ClusterRole granting `get` on it lets bob read, not write.
    host.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "cluster-proxy-reader"},
             "rules": [{"apiGroups": ["federation"], "resources": ["clusters/proxy"],
                        "resourceNames": ["east"], "verbs": ["get"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "bob-cluster-proxy-reader"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                         "name": "cluster-proxy-reader"},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]}
        ]})
        .to_string(),
    )?;
    // Through the federation's gate, bob is bob in the member, which has
    // granted him nothing: the member's own 403, naming him.
    let member_403 = r#"namespaces is forbidden: User "bob" cannot list resource "namespaces" in API group "" at the cluster scope"#;
    let err = ubernetes_e2e::eventually(Duration::from_secs(10), || {
        let out = host.kubectl(&[
            "get",
            "--raw",
            &format!("{EAST}/api/v1/namespaces"),
            "--as=bob",
        ])?;
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        Ok(err.contains(member_403).then_some(err))
    })
    .context("bob's read through the proxy should be the member's 403")?;
    assert!(err.contains("Error from server (Forbidden)"), "{err}");
    // The member grants a group of his: his group reaches it, he reads.
    east.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "namespace-lister"},
             "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "proxy-readers-list-namespaces"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                         "name": "namespace-lister"},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                           "name": "proxy-readers"}]}
        ]})
        .to_string(),
    )?;
    let list = ubernetes_e2e::eventually(Duration::from_secs(10), || {
        let out = host.kubectl(&[
            "get",
            "--raw",
            &format!("{EAST}/api/v1/namespaces"),
            "--as=bob",
            "--as-group=proxy-readers",
        ])?;
        Ok(out
            .status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned()))
    })?;
    assert!(names(&json(&list)?).contains(&"only-in-east".to_string()));
    // Without the group he is still refused by the member.
    let err = host.kubectl_err(&[
        "get",
        "--raw",
        &format!("{EAST}/api/v1/namespaces"),
        "--as=bob",
    ])?;
    assert!(err.contains(member_403), "{err}");
    let err = host.kubectl_err(&[
        "get",
        "--raw",
        &format!("{WEST}/api/v1/namespaces"),
        "--as=bob",
    ])?;
    assert!(
        err.contains(r#"clusters.federation "west" is forbidden"#),
        "{err}"
    );
    let err = host.kubectl_err(&[
        "create",
        "--raw",
        &format!("{EAST}/api/v1/namespaces/only-in-east/configmaps"),
        "-f",
        &cm.to_string_lossy(),
        "--as=bob",
    ])?;
    assert!(
        err.contains(
            r#"User "bob" cannot create resource "clusters/proxy" in API group "federation""#
        ),
        "{err}"
    );

    // An unknown cluster is 404 for clusters.federation.
    let err = host.kubectl_err(&[
        "get",
        "--raw",
        "/apis/federation/v1beta1/clusters/nowhere/proxy/api/v1/namespaces",
    ])?;
    assert!(
        err.contains(r#"Error from server (NotFound): clusters.federation "nowhere" not found"#),
        "{err}"
    );

    // An upgrade goes to the member (federation_member_views.rs follows
    // one through); this member refuses it, and its answer comes back as
    // it is.
    let exec = "/api/v1/namespaces/only-in-east/pods/p/exec";
    let upgrade = [("Upgrade", "websocket"), ("Connection", "Upgrade")];
    let direct = raw(east, "GET", exec, &upgrade, "")?;
    let proxied = raw(host, "GET", &format!("{EAST}{exec}"), &upgrade, "")?;
    assert_ne!(direct.0, 101);
    assert_eq!(proxied, direct);

    // A killed member is 503, naming the cluster.
    fed.member_mut(1)?.kill9();
    let host = &fed.host;
    let (code, ct, body) = raw(host, "GET", &format!("{WEST}/api/v1/namespaces"), &[], "")?;
    assert_eq!(code, 503, "{body}");
    assert_eq!(ct, "application/json");
    let status = json(&body)?;
    assert_eq!(status["reason"], "ServiceUnavailable");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(r#"error trying to reach cluster "west": "#),
        "{message}"
    );
    // East still answers.
    host.kubectl_ok(&[
        "get",
        "--raw",
        &format!("{EAST}/api/v1/namespaces/only-in-east"),
    ])?;
    Ok(())
}

/// Through the proxy to a real kube-apiserver member (`../shared/kube`),
/// joined declaratively with its admin kubeconfig: a read, kube's own 404
/// Status unchanged, and a watch event. Skipped without kube.sh.
#[test]
fn the_cluster_proxy_reaches_a_real_kube_apiserver() -> Result<()> {
    use ubernetes_e2e::real_kube::{KubeCluster, kube_sh};
    let Some(script) = kube_sh() else {
        eprintln!(
            "SKIPPED: shared/kube/kube.sh not found beside the checkout (nor $UBERNETES_KUBE_SH): \
             no real kube-apiserver to proxy to"
        );
        return Ok(());
    };
    let name = format!("px{}", std::process::id());
    let kube = KubeCluster::up(&script, &name, false)?;
    let fed = Federation::start(0, &[])?;
    let host = &fed.host;
    let kubectl_real = |args: &[&str]| -> Result<String> {
        let out = std::process::Command::new(ubernetes_e2e::kubectl_bin())
            .arg("--kubeconfig")
            .arg(&kube.kubeconfig)
            .args(args)
            .env_remove("KUBECONFIG")
            .output()?;
        if !out.status.success() {
            bail!(
                "kubectl {} against the real member: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let server = kubectl_real(&[
        "config",
        "view",
        "--minify",
        "-o",
        "jsonpath={.clusters[0].cluster.server}",
    ])?;
    fed.create_secret("real", &std::fs::read_to_string(&kube.kubeconfig)?)?;
    fed.create_cluster("real", server.trim(), "real", &[])?;
    fed.wait_ready("real")?;
    kubectl_real(&["create", "namespace", "only-in-real"])?;

    let real = "/apis/federation/v1beta1/clusters/real/proxy";
    let ns = json(&host.kubectl_ok(&[
        "get",
        "--raw",
        &format!("{real}/api/v1/namespaces/only-in-real"),
    ])?)?;
    assert_eq!(ns["metadata"]["name"], "only-in-real");
    let err = host.kubectl_err(&[
        "get",
        "--raw",
        &format!("{real}/api/v1/namespaces/only-in-real/configmaps/nope"),
    ])?;
    assert!(
        err.contains(r#"Error from server (NotFound): configmaps "nope" not found"#),
        "{err}"
    );
    kubectl_real(&["create", "configmap", "before-watch", "-n", "only-in-real"])?;
    let mut watch = Streaming::start(
        host,
        &format!("{real}/api/v1/namespaces/only-in-real/configmaps?watch=true"),
    )?;
    // The stream is open once the existing object arrives.
    watch.event_for("before-watch", Duration::from_secs(15))?;
    kubectl_real(&[
        "create",
        "configmap",
        "after-watch",
        "-n",
        "only-in-real",
        "--from-literal=x=y",
    ])?;
    let event = watch.event_for("after-watch", Duration::from_secs(15))?;
    assert_eq!(event["type"], "ADDED");
    assert!(
        watch.still_running(),
        "the watch ended instead of streaming"
    );
    drop(watch);

    // The real member sees the caller (issue 28): the admin, impersonated
    // by the account of the member's kubeconfig ...
    let dir = tempfile::tempdir()?;
    let ssr = dir.path().join("ssr.json");
    std::fs::write(
        &ssr,
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}).to_string(),
    )?;
    let review = json(&host.kubectl_ok(&[
        "create",
        "--raw",
        &format!("{real}/apis/authentication.k8s.io/v1/selfsubjectreviews"),
        "-f",
        &ssr.to_string_lossy(),
    ])?)?;
    let seen = &review["status"]["userInfo"];
    assert_eq!(seen["username"], "ubernetes-admin", "{review}");
    let groups = seen["groups"].as_array().cloned().unwrap_or_default();
    assert!(groups.contains(&json!("system:masters")), "{review}");
    // ... and alice, whom the federation lets through its gate but the
    // member grants nothing: kube-apiserver's own 403, naming her.
    host.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "real-proxy-user"},
             "rules": [{"apiGroups": ["federation"], "resources": ["clusters/proxy"],
                        "resourceNames": ["real"], "verbs": ["get"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "alice-real-proxy-user"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                         "name": "real-proxy-user"},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]}
        ]})
        .to_string(),
    )?;
    let configmaps = format!("{real}/api/v1/namespaces/only-in-real/configmaps");
    let kube_403 = r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "only-in-real""#;
    ubernetes_e2e::eventually(Duration::from_secs(15), || {
        let out = host.kubectl(&["get", "--raw", &configmaps, "--as=alice"])?;
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        Ok(err.contains(kube_403).then_some(()))
    })
    .context("alice's read through the proxy should be kube-apiserver's 403")?;
    // Her group reaches the member: granted a role there, she reads (a Role
    // of its own: without the controller manager, `view` aggregates nothing).
    kubectl_real(&[
        "create",
        "role",
        "configmap-lister",
        "-n",
        "only-in-real",
        "--verb=list",
        "--resource=configmaps",
    ])?;
    kubectl_real(&[
        "create",
        "rolebinding",
        "real-readers-list",
        "-n",
        "only-in-real",
        "--role=configmap-lister",
        "--group=real-readers",
    ])?;
    let list = ubernetes_e2e::eventually(Duration::from_secs(15), || {
        let out = host.kubectl(&[
            "get",
            "--raw",
            &configmaps,
            "--as=alice",
            "--as-group=real-readers",
        ])?;
        Ok(out
            .status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned()))
    })
    .context("alice in group real-readers should read through the proxy")?;
    assert!(
        names(&json(&list)?).contains(&"after-watch".to_string()),
        "{list}"
    );
    Ok(())
}
