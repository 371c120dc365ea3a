//! Pull-mode members end to end (SPEC §3.12, issue 24): real `ubernetes
//! serve` processes, `ubernetes join --pull`, `ubernetes agent` as a child
//! process, the real kubectl.
//!
//! - a member whose address the federation is never given, reached only
//!   through its agent's tunnel: a federated ConfigMap reaches it, a
//!   Deployment's replicas are split over it and a push member, its copy's
//!   status is in the federated sum, the Cluster is Ready and `-o wide`
//!   says Pull; `clusters/NAME/proxy` works, a watch included;
//! - DNS (the host runs `--dns-bind`, the real `dig`): a LoadBalancer
//!   Service's copies, given an address and a ready endpoint in each member,
//!   make the federation name answer both members' addresses and the pull
//!   member's zone name its own;
//! - the agent's kubeconfig: 403 for another cluster's tunnel, for a
//!   Secret of `federation-system`, for listing all Secrets, for federated
//!   objects; its own tunnel and Lease are allowed;
//! - an agent restart with everything in sync writes nothing in the member
//!   (resourceVersions unchanged) and the Cluster never leaves Ready;
//! - the agent killed: not Ready once its Lease lapses (the host runs with
//!   `--cluster-lease-duration 4s`), its replicas move to the push member,
//!   DNS answers only the push member's address (the pull member's zone
//!   name too, by CNAMEs up to the federation name);
//!   the agent back: Ready, a change made meanwhile arrives, DNS answers
//!   its address again;
//! - a real kube-apiserver + kube-controller-manager (`../shared/kube`) as
//!   a pull member (skipped, saying so, when absent); `kubectl exec`,
//!   `attach` and `port-forward` through `federation@real` get kube's own
//!   answer, as straight at the member;
//! - upgrades over the tunnel (HTTP/2 extended CONNECT): the echo member
//!   of `proxy_support` behind an agent answers a WebSocket exec (frames
//!   both ways, the caller impersonated, the agent's member token), SPDY,
//!   a refusal unchanged, and the real `kubectl exec -i`;
//! - two replicas on one etcd (skipped without etcd): the agent keeps a
//!   tunnel to each (`--federation-server` twice), the proxy answers
//!   through each, and after the leader's kill -9 the other leads and a new
//!   ConfigMap reaches the member with no reconnect.

use std::collections::BTreeSet;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};
use ubernetes_e2e::dig::{self, dig};
use ubernetes_e2e::federation::{Federation, condition, write_status};
use ubernetes_e2e::real_kube::{KubeCluster, kube_sh};
use ubernetes_e2e::{Server, eventually, kubectl_bin, ubernetes_bin};

mod proxy_support;
use proxy_support::{
    EchoMember, kubectl_stdin, member_kubeconfig, member_refusal_arrives_unchanged,
    real_upgrade_answers_arrive_unchanged, spdy_exec_round_trip, websocket_exec_round_trip,
};

const WAIT: Duration = Duration::from_secs(30);

/// A running `ubernetes agent`, killed on drop.
struct Agent {
    child: Option<Child>,
    log: PathBuf,
    args: Vec<String>,
}

impl Agent {
    fn start(
        dir: &Path,
        cluster: &str,
        federation_kubeconfig: &Path,
        member: &[&str],
    ) -> Result<Self> {
        let mut args = vec![
            "agent".to_string(),
            "--cluster".into(),
            cluster.into(),
            "--federation-kubeconfig".into(),
            federation_kubeconfig.display().to_string(),
            "--lease-renew-interval".into(),
            "1s".into(),
        ];
        args.extend(member.iter().map(|s| s.to_string()));
        let mut agent = Self {
            child: None,
            log: dir.join(format!("agent-{cluster}.log")),
            args,
        };
        agent.spawn()?;
        Ok(agent)
    }

    fn spawn(&mut self) -> Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let child = Command::new(ubernetes_bin())
            .args(&self.args)
            .env("RUST_LOG", "info")
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .context("starting ubernetes agent (cargo build -p ubernetes)")?;
        self.child = Some(child);
        Ok(())
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn restart(&mut self) -> Result<()> {
        self.kill();
        self.spawn()
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `ubernetes join NAME --pull --agent-kubeconfig-out OUT` against `host`.
fn join_pull(host: &Server, name: &str, out: &Path) -> Result<()> {
    let run = Command::new(ubernetes_bin())
        .args(["join", name, "--pull", "--agent-kubeconfig-out"])
        .arg(out)
        .arg("--federation-kubeconfig")
        .arg(host.kubeconfig())
        .env_remove("KUBECONFIG")
        .output()
        .context("running ubernetes join --pull")?;
    ensure!(
        run.status.success(),
        "join --pull: {}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    Ok(())
}

/// kubectl with the agent's own kubeconfig: (success, stdout + stderr).
fn as_agent(kubeconfig: &Path, args: &[&str]) -> Result<(bool, String)> {
    let out = Command::new(kubectl_bin())
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .env_remove("KUBECONFIG")
        .output()
        .context("running kubectl")?;
    Ok((
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    ))
}

fn replicas(server: &Server, name: &str) -> Result<Option<i64>> {
    Ok(server
        .kubectl_get(&["deployment", name])?
        .and_then(|d| d.pointer("/spec/replicas").and_then(Value::as_i64)))
}

fn resource_version(server: &Server, args: &[&str]) -> Result<String> {
    let obj = server
        .kubectl_get(args)?
        .with_context(|| format!("{args:?}"))?;
    Ok(obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string())
}

const OBJECTS: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: default}
data: {color: green}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  annotations:
    federation.kubernetes.io/deployment-preferences: '{"rebalance": true, "clusters": {"*": {"weight": 1}}}'
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.27}]
"#;

/// The EndpointSlice of Service `web` the test writes in each member (as a
/// member's endpoint controller would): one endpoint, ready.
const ENDPOINTS: &str = r#"
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-abcde
  namespace: default
  labels: {kubernetes.io/service-name: web}
addressType: IPv4
endpoints: [{addresses: [10.1.0.1], conditions: {ready: true}}]
ports: [{name: "", port: 8080, protocol: TCP}]
"#;

/// The load-balancer address of the Service's copy in push and in edge.
const PUSH_IP: &str = "192.0.2.10";
const EDGE_IP: &str = "192.0.2.20";
/// The Service's federation name, and its name in edge's zone `edge-a`.
const DNS_GLOBAL: &str = "web.default.fed.svc.example.com.";
const DNS_EDGE_A: &str = "web.default.fed.svc.edge-a.edge-region.example.com.";

/// Waits until the embedded DNS server (on `port`, when `dig` runs here)
/// answers `name` with exactly the addresses `ips` (a CNAME chain in the
/// zone followed).
fn dns_answers(port: Option<u16>, host: &Server, name: &str, ips: &[&str]) -> Result<()> {
    let Some(port) = port else { return Ok(()) };
    let want: BTreeSet<String> = ips.iter().map(|ip| ip.to_string()).collect();
    let mut last = String::new();
    eventually(WAIT, || {
        let answer = dig(port, name, "A", false)?;
        last = format!("{answer:?}");
        Ok((answer.status == "NOERROR" && answer.addresses() == want).then_some(()))
    })
    .with_context(|| {
        format!(
            "{name} never answered {want:?}; last: {last}\nhost log:\n{}",
            host.log_tail()
        )
    })
}

fn available_status(copy: &Value) -> Value {
    let n = copy
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let generation = copy
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    json!({"observedGeneration": generation, "replicas": n, "updatedReplicas": n,
           "readyReplicas": n, "availableReplicas": n})
}

#[test]
fn a_pull_member_is_reached_only_through_its_agent() -> Result<()> {
    // The DNS part needs `dig`; without it the rest still runs.
    let dns = (!dig::missing()).then(dig::free_port).transpose()?;
    let bind = format!("127.0.0.1:{}", dns.unwrap_or(0));
    let mut flags = vec!["--cluster-lease-duration", "4s"];
    if dns.is_some() {
        flags.extend(["--dns-bind", &bind, "--dns-zone", "example.com"]);
        flags.extend(["--federation-name", "fed"]);
    }
    let fed = Federation::start(2, &flags)?;
    let dir = tempfile::tempdir()?;
    fed.join(0, "push", &[])?;
    let agent_kubeconfig = dir.path().join("edge.kubeconfig");
    join_pull(&fed.host, "edge", &agent_kubeconfig)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&agent_kubeconfig)?.permissions().mode();
        ensure!(mode & 0o777 == 0o600, "agent kubeconfig mode {mode:o}");
    }
    let cluster = fed.cluster("edge")?.context("Cluster edge")?;
    ensure!(cluster["spec"]["syncMode"] == "Pull", "{cluster}");
    ensure!(cluster["spec"].get("secretRef").is_none(), "{cluster}");
    ensure!(
        cluster["spec"]
            .get("serverAddressByClientCIDRs")
            .is_none_or(|a| a.as_array().is_some_and(Vec::is_empty)),
        "the federation was given an address: {cluster}"
    );

    // Before its agent runs, the Cluster is unreachable.
    fed.wait_condition("edge", "Offline", "True", None, WAIT)?;

    // Zones and region come from the member's Nodes, read over the tunnel.
    fed.create_nodes(
        1,
        &[
            ("edge-1", "edge-a", "edge-region"),
            ("edge-2", "edge-b", "edge-region"),
        ],
    )?;
    let member = fed.member(1)?;
    let member_kubeconfig = member.kubeconfig().display().to_string();
    let mut agent = Agent::start(
        dir.path(),
        "edge",
        &agent_kubeconfig,
        &["--kubeconfig", &member_kubeconfig],
    )?;
    fed.wait_ready("push")?;
    fed.wait_ready("edge")
        .with_context(|| format!("agent log:\n{}", agent.log_tail()))?;
    let edge = fed.cluster("edge")?.context("edge")?;
    ensure!(
        edge.pointer("/status/zones") == Some(&json!(["edge-a", "edge-b"]))
            && edge.pointer("/status/region") == Some(&json!("edge-region")),
        "zones and region of the pull member: {edge}"
    );
    let wide = fed.host.kubectl_ok(&["get", "clusters", "-o", "wide"])?;
    ensure!(wide.contains("SYNC MODE"), "{wide}");
    let edge_row = wide
        .lines()
        .find(|l| l.starts_with("edge"))
        .context("edge row")?;
    ensure!(edge_row.split_whitespace().nth(5) == Some("Pull"), "{wide}");
    let push_row = wide
        .lines()
        .find(|l| l.starts_with("push"))
        .context("push row")?;
    ensure!(push_row.split_whitespace().nth(5) == Some("Push"), "{wide}");

    // Objects reach it; the replicas are split; its status is summed.
    fed.host.kubectl_stdin_ok(&["apply", "-f", "-"], OBJECTS)?;
    eventually(WAIT, || {
        Ok(member
            .kubectl_get(&["configmap", "settings"])?
            .filter(|c| c["data"]["color"] == "green"))
    })
    .with_context(|| format!("the ConfigMap never reached edge\n{}", fed.host.log_tail()))?;
    eventually(WAIT, || {
        let (a, b) = (replicas(fed.member(0)?, "web")?, replicas(member, "web")?);
        Ok((a == Some(2) && b == Some(2)).then_some(()))
    })
    .context("replicas 2 + 2")?;
    for m in &fed.members {
        let copy = m.kubectl_get(&["deployment", "web"])?.context("copy")?;
        write_status(m, "deployment", "web", available_status(&copy))?;
    }
    eventually(WAIT, || {
        let d = fed
            .host
            .kubectl_get(&["deployment", "web"])?
            .context("web")?;
        Ok((d.pointer("/status/availableReplicas") == Some(&json!(4))).then_some(()))
    })
    .context("the federated status never summed both members")?;

    // DNS: the pull member's copy answers as the push member's does, its
    // Service and EndpointSlices read over the tunnel.
    fed.host
        .kubectl_ok(&["create", "service", "loadbalancer", "web", "--tcp=80:8080"])?;
    for (m, ip) in fed.members.iter().zip([PUSH_IP, EDGE_IP]) {
        eventually(WAIT, || m.kubectl_get(&["service", "web"]))
            .context("the Service never reached both members")?;
        let status = json!({"loadBalancer": {"ingress": [{"ip": ip}]}});
        write_status(m, "service", "web", status)?;
        m.kubectl_stdin_ok(&["apply", "-f", "-"], ENDPOINTS)?;
    }
    dns_answers(dns, &fed.host, DNS_GLOBAL, &[PUSH_IP, EDGE_IP])?;
    dns_answers(dns, &fed.host, DNS_EDGE_A, &[EDGE_IP])?;

    // The cluster proxy, over the tunnel; a watch too.
    let proxy = "/apis/federation/v1beta1/clusters/edge/proxy";
    let namespaces =
        fed.host
            .kubectl_ok(&["get", "--raw", &format!("{proxy}/api/v1/namespaces")])?;
    ensure!(namespaces.contains("\"default\""), "{namespaces}");
    let mut watch = fed
        .host
        .kubectl_cmd(&[
            "get",
            "--raw",
            &format!("{proxy}/api/v1/namespaces/default/configmaps?watch=1"),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let stdout = watch.stdout.take().context("watch stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let event = rx.recv_timeout(Duration::from_secs(15));
    let _ = watch.kill();
    let _ = watch.wait();
    let event = event.context("no watch event through the proxy")?;
    ensure!(event.contains("\"ADDED\""), "{event}");

    // Isolation: the agent's identity opens its own tunnel only.
    let (ok, out) = as_agent(
        &agent_kubeconfig,
        &[
            "create",
            "--raw",
            "/apis/federation/v1beta1/clusters/push/tunnel",
            "-f",
            "-",
        ],
    )?;
    ensure!(
        !ok && out.contains("forbidden"),
        "another cluster's tunnel: {out}"
    );
    let (ok, out) = as_agent(
        &agent_kubeconfig,
        &[
            "create",
            "--raw",
            "/apis/federation/v1beta1/clusters/edge/tunnel",
            "-f",
            "-",
        ],
    )?;
    ensure!(
        !ok && !out.contains("forbidden") && out.contains("upgrade"),
        "its own tunnel must be authorized (and need an upgrade): {out}"
    );
    for args in [
        vec!["get", "secret", "push", "-n", "federation-system"],
        vec!["get", "secrets", "-A"],
        vec!["get", "deployments", "-A"],
        vec!["get", "configmap", "settings", "-n", "default"],
        vec!["get", "lease", "push", "-n", "federation-system"],
    ] {
        let (ok, out) = as_agent(&agent_kubeconfig, &args)?;
        ensure!(
            !ok && out.contains("forbidden"),
            "{args:?} must be 403: {out}"
        );
    }
    let (ok, out) = as_agent(
        &agent_kubeconfig,
        &["get", "lease", "edge", "-n", "federation-system"],
    )?;
    ensure!(ok, "its own Lease: {out}");

    // Quiet restart: nothing written in the member, never not Ready.
    let before = (
        resource_version(member, &["configmap", "settings"])?,
        resource_version(member, &["deployment", "web"])?,
    );
    let ready_since = |c: &Value| condition(c, "Ready").map(|r| r["lastTransitionTime"].clone());
    let ready_at = ready_since(&fed.cluster("edge")?.context("edge")?);
    agent.restart()?;
    eventually(WAIT, || {
        Ok(fed
            .host
            .kubectl(&[
                "get",
                "--raw",
                &format!("{proxy}/api/v1/namespaces/default"),
            ])?
            .status
            .success()
            .then_some(()))
    })
    .context("the tunnel never came back")?;
    std::thread::sleep(Duration::from_secs(3));
    let after = (
        resource_version(member, &["configmap", "settings"])?,
        resource_version(member, &["deployment", "web"])?,
    );
    ensure!(
        before == after,
        "the agent restart wrote in the member: {before:?} → {after:?}"
    );
    let edge = fed.cluster("edge")?.context("edge")?;
    ensure!(
        ready_since(&edge) == ready_at
            && condition(&edge, "Ready").is_some_and(|r| r["status"] == "True"),
        "the Cluster left Ready during the restart: {edge}"
    );

    // The agent dies: not Ready once its Lease lapses; the push member
    // takes the replicas; a change meanwhile arrives when it is back.
    agent.kill();
    fed.wait_condition(
        "edge",
        "Ready",
        "Unknown",
        Some("ClusterNotReachable"),
        Duration::from_secs(60),
    )?;
    eventually(WAIT, || {
        Ok((replicas(fed.member(0)?, "web")? == Some(4)).then_some(()))
    })
    .context("the push member never got edge's replicas")?;
    // Its address leaves the answers; its zone's name climbs to push's.
    dns_answers(dns, &fed.host, DNS_GLOBAL, &[PUSH_IP])?;
    dns_answers(dns, &fed.host, DNS_EDGE_A, &[PUSH_IP])?;
    fed.host.kubectl_ok(&[
        "patch",
        "configmap",
        "settings",
        "--type=merge",
        "-p",
        r#"{"data":{"color":"red"}}"#,
    ])?;
    agent.restart()?;
    fed.wait_ready("edge")
        .with_context(|| format!("agent log:\n{}", agent.log_tail()))?;
    eventually(WAIT, || {
        Ok(member
            .kubectl_get(&["configmap", "settings"])?
            .filter(|c| c["data"]["color"] == "red"))
    })
    .context("the change made while the agent was away never arrived")?;
    dns_answers(dns, &fed.host, DNS_GLOBAL, &[PUSH_IP, EDGE_IP])?;
    Ok(())
}

#[test]
fn a_real_kube_apiserver_as_a_pull_member() -> Result<()> {
    let Some(script) = kube_sh() else {
        eprintln!(
            "SKIPPED: shared/kube/kube.sh not found beside the checkout (nor $UBERNETES_KUBE_SH): \
             no real kube-apiserver to join in pull mode"
        );
        return Ok(());
    };
    let host = Server::start_with(&["--cluster-monitor-period", "1s"])?;
    let kube = KubeCluster::up(&script, &format!("pull{}", std::process::id()), true)?;
    let dir = tempfile::tempdir()?;
    let agent_kubeconfig = dir.path().join("real.kubeconfig");
    join_pull(&host, "real", &agent_kubeconfig)?;
    let kube_kubeconfig = kube.kubeconfig.display().to_string();
    let agent = Agent::start(
        dir.path(),
        "real",
        &agent_kubeconfig,
        &["--kubeconfig", &kube_kubeconfig, "--context", &kube.name],
    )?;
    eventually(Duration::from_secs(60), || {
        let c = host.kubectl_get(&["cluster", "real"])?;
        Ok(c.filter(|c| condition(c, "Ready").is_some_and(|r| r["status"] == "True")))
    })
    .with_context(|| {
        format!(
            "real not Ready\nagent:\n{}\nhost:\n{}",
            agent.log_tail(),
            host.log_tail()
        )
    })?;
    host.kubectl_stdin_ok(&["apply", "-f", "-"], OBJECTS)?;
    // kube's own deployment controller runs the copy and reports status,
    // which comes back through the tunnel.
    let copy = eventually(Duration::from_secs(60), || {
        kube.get(&["deployment", "web", "-n", "default"])
    })
    .context("the Deployment never reached kube-apiserver")?;
    if copy.pointer("/spec/replicas") != Some(&json!(4)) {
        bail!("the only member runs all 4 replicas: {copy}");
    }
    eventually(Duration::from_secs(60), || {
        let d = host.kubectl_get(&["deployment", "web"])?.context("web")?;
        Ok((d.pointer("/status/replicas") == Some(&json!(4))).then_some(()))
    })
    .context("kube's status never summed into the federation")?;
    let namespaces = host.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/federation/v1beta1/clusters/real/proxy/api/v1/namespaces/kube-system",
    ])?;
    ensure!(namespaces.contains("kube-system"), "{namespaces}");
    // exec, attach, port-forward over the tunnel: kube's own answers.
    let kc = member_kubeconfig(&host, dir.path())?;
    real_upgrade_answers_arrive_unchanged(&kube, &kc, "federation@real", dir.path())
        .with_context(|| format!("agent log:\n{}", agent.log_tail()))?;
    // The agent's own manifest is valid for a real API server.
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/agent.yaml");
    let manifest = manifest.display().to_string();
    // (Its namespace for real first: a server dry run creates nothing.)
    kube.kubectl(&["create", "namespace", "ubernetes-agent"])?;
    let out = kube.kubectl(&["apply", "--dry-run=server", "-f", &manifest])?;
    ensure!(
        out.status.success(),
        "deploy/agent.yaml: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// Upgrades over the tunnel: the echo member (a WebSocket/SPDY exec server)
/// is a pull member, reached only through its agent.
#[test]
fn exec_reaches_a_pull_member_through_its_agent() -> Result<()> {
    let fed = Federation::start(0, &[])?;
    let dir = tempfile::tempdir()?;
    let echo = EchoMember::start()?;
    let echo_kubeconfig = dir.path().join("echo-member.kubeconfig");
    std::fs::write(&echo_kubeconfig, echo.kubeconfig())?;
    let agent_kubeconfig = dir.path().join("echo.kubeconfig");
    join_pull(&fed.host, "echo", &agent_kubeconfig)?;
    let agent = Agent::start(
        dir.path(),
        "echo",
        &agent_kubeconfig,
        &["--kubeconfig", &echo_kubeconfig.display().to_string()],
    )?;
    fed.wait_ready("echo")
        .with_context(|| format!("agent log:\n{}", agent.log_tail()))?;
    let exec = "/apis/federation/v1beta1/clusters/echo/proxy/api/v1/namespaces/x/pods/p/exec\
                ?command=cat&stdin=true&stdout=true";
    websocket_exec_round_trip(&fed.host, &echo, exec)
        .with_context(|| format!("agent log:\n{}", agent.log_tail()))?;
    spdy_exec_round_trip(&fed.host, &echo, exec)?;
    member_refusal_arrives_unchanged(&fed.host, exec)?;
    // The real kubectl exec through federation@echo: stdin comes back.
    let kc = member_kubeconfig(&fed.host, dir.path())?;
    let out = kubectl_stdin(
        &kc,
        "federation@echo",
        &["exec", "-i", "p", "-n", "x", "--", "cat"],
        b"through the tunnel\n",
    )?;
    ensure!(
        out.status.success(),
        "kubectl exec: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    ensure!(String::from_utf8_lossy(&out.stdout) == "through the tunnel\n");
    Ok(())
}

/// The holder of the federation's leader Lease, as `server` reads it.
fn leader(server: &Server) -> Result<Option<String>> {
    Ok(server
        .kubectl_get(&["lease", "-n", "kube-system", "ubernetes-controller-manager"])?
        .and_then(|l| l["spec"]["holderIdentity"].as_str().map(str::to_string)))
}

/// Two replicas on one etcd; the agent keeps a tunnel to each.
#[test]
fn the_agent_keeps_a_tunnel_to_every_replica() -> Result<()> {
    use ubernetes_storage::etcd_process::EtcdProcess;
    let Some(etcd) = EtcdProcess::start()? else {
        eprintln!(
            "SKIPPED: no etcd binary (set ETCD_BIN, install Debian's etcd-server, or unpack \
             ../shared/kube); scripts/test.sh installs etcd-server"
        );
        return Ok(());
    };
    let flags = [
        "--etcd-servers",
        etcd.url.as_str(),
        "--etcd-prefix",
        "/pull-ha",
        "--cluster-monitor-period",
        "1s",
    ];
    let member = Server::start_with(&["--federation-controllers=false"])?;
    let mut a = Server::start_with(&flags)?;
    let leader_a = eventually(WAIT, || leader(&a)).context("a never led")?;
    let b = Server::start_with_pki(&flags, &a)?;
    let dir = tempfile::tempdir()?;
    let agent_kubeconfig = dir.path().join("edge.kubeconfig");
    join_pull(&a, "edge", &agent_kubeconfig)?;
    let member_kc = member.kubeconfig().display().to_string();
    let agent = Agent::start(
        dir.path(),
        "edge",
        &agent_kubeconfig,
        &[
            "--kubeconfig",
            &member_kc,
            "--federation-server",
            &a.url(),
            "--federation-server",
            &b.url(),
        ],
    )?;
    let ready = |server: &Server| -> Result<Option<()>> {
        let c = server.kubectl_get(&["cluster", "edge"])?;
        Ok(
            c.filter(|c| condition(c, "Ready").is_some_and(|r| r["status"] == "True"))
                .map(|_| ()),
        )
    };
    eventually(WAIT, || ready(&b))
        .with_context(|| format!("edge not Ready\nagent:\n{}", agent.log_tail()))?;
    // Each replica's proxy goes over its own tunnel.
    let namespace = "/apis/federation/v1beta1/clusters/edge/proxy/api/v1/namespaces/default";
    for (replica, server) in [("a", &a), ("b", &b)] {
        eventually(WAIT, || {
            Ok(server
                .kubectl(&["get", "--raw", namespace])?
                .status
                .success()
                .then_some(()))
        })
        .with_context(|| {
            format!(
                "no proxy through replica {replica}\n{}",
                server
                    .kubectl_err(&["get", "--raw", namespace])
                    .unwrap_or_default()
            )
        })?;
    }
    // The leader dies: the other leads with the tunnel it already holds.
    a.kill9();
    eventually(Duration::from_secs(20), || {
        Ok(leader(&b)?.filter(|h| *h != leader_a).map(|_| ()))
    })
    .context("b never took the lead")?;
    b.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: after-failover, namespace: default}\n\
         data: {k: v}\n",
    )?;
    eventually(WAIT, || {
        member.kubectl_get(&["configmap", "after-failover"])
    })
    .with_context(|| {
        format!(
            "the ConfigMap never reached the pull member after the failover\nagent:\n{}\nb:\n{}",
            agent.log_tail(),
            b.log_tail()
        )
    })?;
    ensure!(ready(&b)?.is_some(), "edge left Ready on the failover");
    Ok(())
}
