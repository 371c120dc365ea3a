//! Replica scheduling end to end (SPEC §3.6; issue "Workloads across
//! clusters"): a federation and member clusters, all real `ubernetes serve`
//! processes, driven with the real kubectl.
//!
//! - the seed article's demo (003): 10 replicas at weights 1:1 are 5 + 5,
//!   weights 20/0 move them to 10 + 0, switched to 0 + 10 — each step a
//!   `kubectl apply`, for a ReplicaSet and for a Deployment;
//! - no preferences: 9 replicas over 3 members are 3/3/3; min/max are
//!   honoured; `rebalance: false` keeps what runs, `true` moves it;
//! - failover: a member killed has its share moved within a monitor period
//!   of going not Ready; restarted, it gets it back, and at no sampled
//!   moment is the sum of available replicas below the total (the test
//!   plays the members' controllers: it writes each copy's status through
//!   the member's status subresource as pods would come up);
//! - a federated HPA 2..10 over two members is 1..5 in each, and the
//!   members' replicas (their autoscalers' business) are not overwritten.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};
use ubernetes_e2e::federation::{self, Federation, write_status};
use ubernetes_e2e::{Server, eventually};

const WAIT: Duration = Duration::from_secs(30);

fn get(server: &Server, args: &[&str]) -> Result<Option<Value>> {
    server.kubectl_get(args)
}

fn replicas_of(server: &Server, kind: &str, name: &str) -> Result<Option<i64>> {
    Ok(get(server, &[kind, name])?
        .and_then(|v| v.pointer("/spec/replicas").and_then(Value::as_i64)))
}

/// Wait until every member's copy of `kind/name` has the replicas in
/// `want` (one per member, in order).
fn wait_replicas(fed: &Federation, kind: &str, name: &str, want: &[i64]) -> Result<()> {
    let mut last = Vec::new();
    eventually(WAIT, || {
        last = fed
            .members
            .iter()
            .map(|m| replicas_of(m, kind, name))
            .collect::<Result<Vec<_>>>()?;
        Ok((last.iter().map(|r| r.unwrap_or(-1)).collect::<Vec<_>>() == want).then_some(()))
    })
    .with_context(|| {
        format!(
            "{kind}/{name}: members have {last:?}, want {want:?}\nhost log:\n{}",
            fed.host.log_tail()
        )
    })
}

fn events(host: &Server, name: &str) -> Result<Vec<(String, String)>> {
    federation::events_of(host, None, name)
}

fn workload(
    kind: &str,
    name: &str,
    replicas: i64,
    annotation: &str,
    prefs: Option<&str>,
) -> String {
    let api = "apps/v1";
    let mut meta = json!({"name": name, "namespace": "default"});
    if let Some(p) = prefs {
        meta["annotations"] = json!({ annotation: p });
    }
    json!({
        "apiVersion": api,
        "kind": kind,
        "metadata": meta,
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.10"}]},
            },
        },
    })
    .to_string()
}

fn two_weights(a: (&str, i64), b: (&str, i64)) -> String {
    json!({
        "rebalance": true,
        "clusters": {
            a.0: {"minReplicas": 0, "maxReplicas": 10, "weight": a.1},
            b.0: {"minReplicas": 0, "maxReplicas": 10, "weight": b.1},
        }
    })
    .to_string()
}

fn join_all(fed: &Federation, names: &[&str]) -> Result<()> {
    for (i, n) in names.iter().enumerate() {
        fed.join(i, n, &[])?;
    }
    for n in names {
        fed.wait_ready(n)?;
    }
    Ok(())
}

#[test]
fn seed_demo_weights_move_replicas_for_replicasets_and_deployments() -> Result<()> {
    let fed = Federation::start(2, &[])?;
    join_all(&fed, &["new-york", "berlin"])?;
    for (kind, annotation) in [
        (
            "ReplicaSet",
            "federation.kubernetes.io/replica-set-preferences",
        ),
        (
            "Deployment",
            "federation.kubernetes.io/deployment-preferences",
        ),
    ] {
        let res = kind.to_ascii_lowercase();
        let apply = |p: &str| {
            fed.host.kubectl_stdin_ok(
                &["apply", "-f", "-"],
                &workload(kind, "nginx", 10, annotation, Some(p)),
            )
        };
        apply(&two_weights(("new-york", 1), ("berlin", 1)))?;
        wait_replicas(&fed, &res, "nginx", &[5, 5])?;
        apply(&two_weights(("new-york", 20), ("berlin", 0)))?;
        wait_replicas(&fed, &res, "nginx", &[10, 0])?;
        apply(&two_weights(("new-york", 0), ("berlin", 20)))?;
        wait_replicas(&fed, &res, "nginx", &[0, 10])?;
        // The federated object keeps the user's 10; the moves are events
        // saying why, and the record has each cluster's share.
        ensure!(replicas_of(&fed.host, &res, "nginx")? == Some(10));
        let moved: Vec<String> = eventually(WAIT, || {
            let ev = events(&fed.host, "nginx")?;
            let m: Vec<String> = ev
                .into_iter()
                .filter(|(r, m)| r == "ReplicasMoved" && m.contains("weight change"))
                .map(|(_, m)| m)
                .collect();
            Ok((m.len() >= 2).then_some(m))
        })
        .context("ReplicasMoved events")?;
        ensure!(
            moved
                .iter()
                .any(|m| m.contains("new-york 5→10") && m.contains("berlin 5→0")),
            "{moved:?}"
        );
        let record = get(
            &fed.host,
            &[
                "propagationrecords",
                &format!("nginx.{res}s.apps"),
                "-n",
                "default",
            ],
        )?
        .context("propagation record")?;
        let shares: Vec<(String, i64)> = record
            .pointer("/status/clusters")
            .and_then(Value::as_array)
            .context("record clusters")?
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap_or("").to_string(),
                    c["replicas"].as_i64().unwrap_or(-1),
                )
            })
            .collect();
        ensure!(
            shares == vec![("berlin".into(), 10), ("new-york".into(), 0)],
            "{shares:?}"
        );
        fed.host.kubectl_ok(&["delete", &res, "nginx"])?;
    }
    // `kubectl get clusters -o wide`: OBJECTS IN SYNC is filled (in sync /
    // placed, from the propagation records). The workloads are deleted
    // above, so one object stays placed everywhere (without it the count
    // is 0/0 once the deletions are recounted, and the check raced them).
    fed.host
        .kubectl_ok(&["create", "configmap", "in-sync-probe"])?;
    let mut table = String::new();
    eventually(WAIT, || {
        table = fed.host.kubectl_ok(&["get", "clusters", "-o", "wide"])?;
        let rows: Vec<&str> = table.lines().skip(1).collect();
        let filled = rows.len() == 2
            && rows.iter().all(|r| {
                r.split_whitespace().last().is_some_and(|c| {
                    c.split_once('/')
                        .is_some_and(|(a, b)| a == b && a.parse::<u32>().is_ok_and(|n| n > 0))
                })
            });
        Ok(filled.then_some(()))
    })
    .with_context(|| format!("OBJECTS IN SYNC not filled:\n{table}"))?;
    Ok(())
}

/// Status of a copy whose `ready` replicas are all up, having observed it.
fn up(copy: &Value, ready: i64) -> Value {
    let spec = copy
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let generation = copy
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    json!({
        "observedGeneration": generation,
        "replicas": spec,
        "updatedReplicas": spec,
        "readyReplicas": ready,
        "availableReplicas": ready,
    })
}

#[test]
fn even_split_min_max_and_rebalance() -> Result<()> {
    let fed = Federation::start(3, &[])?;
    join_all(&fed, &["m0", "m1", "m2"])?;
    let ann = "federation.kubernetes.io/deployment-preferences";
    let apply = |p: Option<&str>| {
        fed.host.kubectl_stdin_ok(
            &["apply", "-f", "-"],
            &workload("Deployment", "web", 9, ann, p),
        )
    };
    // No preferences: weight 1 each.
    apply(None)?;
    wait_replicas(&fed, "deployment", "web", &[3, 3, 3])?;

    // min and max: m0 takes its minimum of 6, the others at most 1.
    apply(Some(
        r#"{"clusters": {"m0": {"minReplicas": 6, "weight": 1}, "*": {"weight": 1, "maxReplicas": 1}}}"#,
    ))?;
    wait_replicas(&fed, "deployment", "web", &[7, 1, 1])?;

    // Back to 3/3/3, with the members reporting 3 ready each.
    apply(Some(
        r#"{"rebalance": false, "clusters": {"*": {"weight": 1}}}"#,
    ))?;
    wait_replicas(&fed, "deployment", "web", &[3, 3, 3])?;
    for m in &fed.members {
        let copy = get(m, &["deployment", "web"])?.context("copy")?;
        write_status(m, "deployment", "web", up(&copy, 3))?;
    }
    // rebalance false: a new weight does not move running replicas.
    apply(Some(
        r#"{"rebalance": false, "clusters": {"*": {"weight": 1}, "m2": {"weight": 2}}}"#,
    ))?;
    std::thread::sleep(Duration::from_secs(3));
    wait_replicas(&fed, "deployment", "web", &[3, 3, 3])?;
    // rebalance true: m2 gets its double share (ceil(9·2/4) = 5).
    apply(Some(
        r#"{"rebalance": true, "clusters": {"*": {"weight": 1}, "m2": {"weight": 2}}}"#,
    ))?;
    eventually(WAIT, || {
        let r = replicas_of(fed.member(2)?, "deployment", "web")?;
        Ok((r == Some(5)).then_some(()))
    })
    .context("m2 never got 5 with rebalance: true")?;
    let total = || -> Result<i64> {
        fed.members
            .iter()
            .map(|m| replicas_of(m, "deployment", "web").map(|r| r.unwrap_or(0)))
            .sum::<Result<i64>>()
    };
    // Make before break: the others keep their replicas until m2's new
    // ones are available ...
    std::thread::sleep(Duration::from_secs(2));
    ensure!(total()? == 11, "total {}", total()?);
    // ... and give them up once they are.
    let m2 = fed.member(2)?;
    let copy = get(m2, &["deployment", "web"])?.context("copy")?;
    write_status(m2, "deployment", "web", up(&copy, 5))?;
    eventually(WAIT, || Ok((total()? == 9).then_some(())))
        .context("the others never scaled down")?;
    Ok(())
}

/// The members' controllers, played by the test: every `tick`, each live
/// member's copy of `deployment/name` gets one more available replica up
/// to its spec, and loses at once what is above it.
struct Kubelets {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Kubelets {
    fn start(
        members: Vec<(String, std::path::PathBuf, Arc<AtomicBool>)>,
        name: &'static str,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                for (_, kubeconfig, alive) in &members {
                    if !alive.load(Ordering::Relaxed) {
                        continue;
                    }
                    let _ = step(kubeconfig, name);
                }
                std::thread::sleep(Duration::from_millis(300));
            }
        });
        Self {
            stop,
            handle: Some(handle),
        }
    }
}

impl Drop for Kubelets {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn kubectl_at(kubeconfig: &std::path::Path, args: &[&str]) -> Result<String> {
    let out = std::process::Command::new(ubernetes_e2e::kubectl_bin())
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()?;
    ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).to_string())
}

fn step(kubeconfig: &std::path::Path, name: &str) -> Result<()> {
    let copy: Value = serde_json::from_str(&kubectl_at(
        kubeconfig,
        &["get", "deployment", name, "-o", "json"],
    )?)?;
    let spec = copy
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let avail = copy
        .pointer("/status/availableReplicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let next = if avail > spec {
        spec
    } else {
        (avail + 1).min(spec)
    };
    let generation = copy
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let observed = copy
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if next == avail && observed == generation {
        return Ok(());
    }
    let status = json!({"status": {
        "observedGeneration": generation, "replicas": spec, "updatedReplicas": spec,
        "readyReplicas": next, "availableReplicas": next}});
    kubectl_at(
        kubeconfig,
        &[
            "patch",
            "deployment",
            name,
            "--subresource=status",
            "--type=merge",
            "-p",
            &status.to_string(),
        ],
    )?;
    Ok(())
}

/// Available replicas over the live members (read from their copies).
fn available(fed: &Federation, alive: &[Arc<AtomicBool>], name: &str) -> Result<i64> {
    let mut sum = 0;
    for (m, a) in fed.members.iter().zip(alive) {
        if !a.load(Ordering::Relaxed) {
            continue;
        }
        if let Some(c) = get(m, &["deployment", name])? {
            let spec = c
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            let av = c
                .pointer("/status/availableReplicas")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            sum += av.min(spec);
        }
    }
    Ok(sum)
}

#[test]
fn failover_moves_the_share_and_gives_it_back_without_a_dip() -> Result<()> {
    let mut fed = Federation::start(2, &[])?;
    join_all(&fed, &["a", "b"])?;
    let alive: Vec<Arc<AtomicBool>> = (0..2).map(|_| Arc::new(AtomicBool::new(true))).collect();
    let kubelets = Kubelets::start(
        fed.members
            .iter()
            .zip(["a", "b"])
            .zip(&alive)
            .map(|((m, n), a)| (n.to_string(), m.kubeconfig(), a.clone()))
            .collect(),
        "web",
    );
    fed.host.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &workload(
            "Deployment",
            "web",
            10,
            "federation.kubernetes.io/deployment-preferences",
            Some(r#"{"rebalance": true, "clusters": {"*": {"weight": 1}}}"#),
        ),
    )?;
    wait_replicas(&fed, "deployment", "web", &[5, 5])?;
    eventually(WAIT, || {
        Ok((available(&fed, &alive, "web")? == 10).then_some(()))
    })
    .context("10 available")?;

    // b dies, and its pods with it (its copy, as it will be found when b
    // is back, shows none available): within a monitor period of b going
    // not Ready, a runs all 10.
    alive[1].store(false, Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(500));
    let copy = get(fed.member(1)?, &["deployment", "web"])?.context("b's copy")?;
    write_status(fed.member(1)?, "deployment", "web", up(&copy, 0))?;
    fed.member_mut(1)?.kill9();
    fed.wait_condition("b", "Ready", "Unknown", None, WAIT)
        .or_else(|_| fed.wait_condition("b", "Ready", "False", None, WAIT))?;
    let lost_at = Instant::now();
    eventually(Duration::from_secs(10), || {
        Ok((replicas_of(fed.member(0)?, "deployment", "web")? == Some(10)).then_some(()))
    })
    .context("a never got b's share")?;
    ensure!(
        lost_at.elapsed() < Duration::from_secs(5),
        "share moved after {:?} (monitor period 1s)",
        lost_at.elapsed()
    );
    eventually(WAIT, || {
        Ok((available(&fed, &alive, "web")? == 10).then_some(()))
    })
    .context("a's 10 available")?;
    let events_lost = events(&fed.host, "web")?;
    ensure!(
        events_lost
            .iter()
            .any(|(r, m)| r == "ReplicasMoved" && m.contains("cluster lost: b")),
        "{events_lost:?}"
    );

    // b returns: shares come back, and at no sampled moment is the sum of
    // available replicas over the live members below 10.
    // (b's pods went down with it: its copy shows none available.)
    fed.member_mut(1)?.restart()?;
    alive[1].store(true, Ordering::Relaxed);
    let mut samples = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let av = available(&fed, &alive, "web")?;
        samples.push(av);
        ensure!(av >= 10, "available dipped to {av}; samples {:?}", samples);
        let a = replicas_of(fed.member(0)?, "deployment", "web")?;
        let b = replicas_of(fed.member(1)?, "deployment", "web")?;
        if a == Some(5) && b == Some(5) && av == 10 {
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "shares did not return: a {a:?} b {b:?}; samples {:?}\n{}",
            samples,
            fed.host.log_tail()
        );
        std::thread::sleep(Duration::from_millis(150));
    }
    // b's replicas came up one at a time, so a came down gradually.
    ensure!(samples.len() > 3, "too few samples: {samples:?}");
    drop(kubelets);
    Ok(())
}

#[test]
fn federated_hpa_is_split_and_member_replicas_are_left_to_it() -> Result<()> {
    let fed = Federation::start(2, &[])?;
    join_all(&fed, &["a", "b"])?;
    fed.host.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &workload("Deployment", "web", 4, "", None),
    )?;
    wait_replicas(&fed, "deployment", "web", &[2, 2])?;
    let hpa = json!({
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 10,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50}}}],
        },
    });
    fed.host
        .kubectl_stdin_ok(&["apply", "-f", "-"], &hpa.to_string())?;
    for m in &fed.members {
        eventually(WAIT, || {
            let h = get(m, &["hpa", "web"])?;
            Ok(h.filter(|h| {
                h.pointer("/spec/minReplicas") == Some(&json!(1))
                    && h.pointer("/spec/maxReplicas") == Some(&json!(5))
            }))
        })
        .with_context(|| format!("member HPA 1..5 in {}\n{}", m.url(), fed.host.log_tail()))?;
    }
    // The member's autoscaler scales its copy: the federation leaves it.
    fed.member(0)?
        .kubectl_ok(&["scale", "deployment", "web", "--replicas=4"])?;
    fed.member(1)?
        .kubectl_ok(&["scale", "deployment", "web", "--replicas=1"])?;
    std::thread::sleep(Duration::from_secs(4));
    wait_replicas(&fed, "deployment", "web", &[4, 1])?;
    // Also after a change of the federated workload's template.
    fed.host
        .kubectl_ok(&["set", "image", "deployment/web", "nginx=nginx:1.11"])?;
    for m in &fed.members {
        eventually(WAIT, || {
            let d = get(m, &["deployment", "web"])?;
            Ok(d.filter(|d| {
                d.pointer("/spec/template/spec/containers/0/image") == Some(&json!("nginx:1.11"))
            }))
        })?;
    }
    wait_replicas(&fed, "deployment", "web", &[4, 1])?;
    ensure!(replicas_of(&fed.host, "deployment", "web")? == Some(4));
    Ok(())
}
