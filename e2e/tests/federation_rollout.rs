//! Rollouts across clusters, wave by wave, end to end (SPEC §3.11; issue
//! 23 items 1, 2 and 4): real `ubernetes serve` processes (a host and two
//! members) and the real kubectl. The test plays the members' deployment
//! controller by writing the copies' status.
//!
//! - waves `[["a"],["b"]]`: after `kubectl set image`, `a` gets the new
//!   image and `b` keeps the old one (its wave `Waiting` in the record,
//!   WAVE `1/2`) until `a`'s copy reports complete; then `b` gets it;
//!   `kubectl rollout status --watch=false` on the federation says
//!   waiting until both are done, and done after; `WaveStarted` and
//!   `WaveCompleted` Events;
//! - `onFailure: Rollback`: `a` reports `ProgressDeadlineExceeded`, `b`
//!   never gets the new image, `a` gets the old one back, `kubectl rollout
//!   status` fails with "exceeded its progress deadline", and a
//!   `RolloutHalted` Event names the cluster;
//! - `kubectl rollout pause` holds the waves (`a` complete, `b` keeps the
//!   old image while paused), `resume` moves on; `kubectl rollout history`
//!   lists both revisions; `kubectl rollout undo` brings the old image
//!   back wave by wave (`a` first, `b` once `a` reports complete);
//! - a real kube-apiserver + kube-controller-manager member (`kube.sh`,
//!   skipped with a message when absent) in wave 1: its deployment
//!   controller reports `ProgressDeadlineExceeded` itself (no kubelet, so
//!   no pod ever runs), the rollout halts (`RolloutHalted` naming it,
//!   `kubectl rollout status` fails with kube's words), our member in
//!   wave 2 never gets the new image, and `Rollback` sends the old image
//!   back to the real member.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};
use ubernetes_e2e::federation::{Federation, events_of, propagation_record, write_status};
use ubernetes_e2e::real_kube::{KubeCluster, kube_sh};
use ubernetes_e2e::{Server, eventually};

const WAIT: Duration = Duration::from_secs(30);
const OLD: &str = "nginx:1.27";
const NEW: &str = "nginx:1.28";

fn deployment(strategy: &str) -> String {
    deployment_with(strategy, "", "")
}

/// The Deployment with more annotations and spec fields (YAML lines,
/// indented).
fn deployment_with(strategy: &str, annotations: &str, spec: &str) -> String {
    format!(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  annotations:
    federation.kubernetes.io/rollout-strategy: '{strategy}'
{annotations}
spec:
{spec}
  replicas: 4
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers: [{{name: web, image: "{OLD}"}}]
"#
    )
}

fn image(member: &Server) -> Result<Option<(String, Value)>> {
    Ok(member.kubectl_get(&["deployment", "web"])?.and_then(|d| {
        let i = d
            .pointer("/spec/template/spec/containers/0/image")?
            .as_str()?
            .to_string();
        Some((i, d))
    }))
}

/// The copy once it runs `want`.
fn wait_image(member: &Server, want: &str) -> Result<Value> {
    eventually(WAIT, || {
        Ok(image(member)?.and_then(|(i, d)| (i == want).then_some(d)))
    })
    .with_context(|| format!("the copy never ran {want}"))
}

/// What the member's deployment controller reports for `copy`: every
/// replica updated and available (`timed_out`: Progressing=False,
/// ProgressDeadlineExceeded, nothing updated).
fn report(member: &Server, copy: &Value, timed_out: bool) -> Result<()> {
    let [spec, generation] = ["/spec/replicas", "/metadata/generation"]
        .map(|p| copy.pointer(p).and_then(Value::as_i64).unwrap_or(1));
    let (updated, progressing) = if timed_out {
        (
            0,
            json!({"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                   "message": "ReplicaSet \"web-x\" has timed out progressing.",
                   "lastUpdateTime": "2024-05-01T10:00:00Z", "lastTransitionTime": "2024-05-01T10:00:00Z"}),
        )
    } else {
        (
            spec,
            json!({"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                      "lastUpdateTime": "2024-05-01T10:00:00Z", "lastTransitionTime": "2024-05-01T10:00:00Z"}),
        )
    };
    write_status(
        member,
        "deployment",
        "web",
        json!({
            "observedGeneration": generation, "replicas": spec, "updatedReplicas": updated,
            "readyReplicas": spec, "availableReplicas": spec,
            "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                "lastUpdateTime": "2024-05-01T10:00:00Z", "lastTransitionTime": "2024-05-01T10:00:00Z"},
                progressing],
        }),
    )
}

/// `kubectl rollout status deployment/web` on the federation: (exit ok,
/// stdout + stderr).
fn rollout_status(host: &Server, args: &[&str]) -> Result<(bool, String)> {
    let mut all = vec!["rollout", "status", "deployment/web"];
    all.extend(args);
    let out = host.kubectl(&all)?;
    Ok((
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    ))
}

/// Two members joined, the Deployment applied with `strategy` and rolled
/// out everywhere on the old image; returns the federation.
fn rolled_out(strategy: &str) -> Result<Federation> {
    let fed = Federation::start(2, &[])?;
    fed.join(0, "a", &[])?;
    fed.join(1, "b", &[])?;
    fed.wait_ready("a")?;
    fed.wait_ready("b")?;
    fed.host
        .kubectl_stdin_ok(&["apply", "-f", "-"], &deployment(strategy))?;
    for i in 0..2 {
        let m = fed.member(i)?;
        let copy = wait_image(m, OLD)?;
        ensure!(
            copy.pointer("/metadata/annotations/federation.kubernetes.io~1rollout-strategy")
                .is_none(),
            "the strategy reached a member: {copy}"
        );
        report(m, &copy, false)?;
    }
    eventually(WAIT, || {
        let (_, out) = rollout_status(&fed.host, &["--watch=false"])?;
        Ok(out.contains("successfully rolled out").then_some(()))
    })
    .with_context(|| format!("the first rollout never completed\n{}", fed.host.log_tail()))?;
    fed.host
        .kubectl_ok(&["set", "image", "deployment/web", &format!("web={NEW}")])?;
    Ok(fed)
}

/// The record says `cluster`'s wave is `Waiting`.
fn ensure_waiting(host: &Server, cluster: &str) -> Result<()> {
    let record =
        propagation_record(host, "deployments.apps", Some("default"), "web")?.context("record")?;
    let state = record
        .pointer("/status/clusters")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|x| x["name"] == cluster))
        .and_then(|x| x.get("waveState"))
        .and_then(Value::as_str);
    ensure!(state == Some("Waiting"), "{cluster}'s wave state: {record}");
    Ok(())
}

/// `member`'s copy keeps `want` for `secs` seconds.
fn keeps_image(member: &Server, want: &str, secs: u64) -> Result<()> {
    let until = std::time::Instant::now() + Duration::from_secs(secs);
    while std::time::Instant::now() < until {
        let got = image(member)?.map(|i| i.0);
        ensure!(got.as_deref() == Some(want), "moved early to {got:?}");
        std::thread::sleep(Duration::from_millis(300));
    }
    Ok(())
}

/// The copy once `pred` holds for it.
fn wait_copy(member: &Server, pred: impl Fn(&Value) -> bool) -> Result<Value> {
    eventually(WAIT, || {
        Ok(member
            .kubectl_get(&["deployment", "web"])?
            .filter(|d| pred(d)))
    })
}

fn paused(copy: &Value) -> bool {
    copy.pointer("/spec/paused") == Some(&Value::Bool(true))
}

fn reasons(host: &Server) -> Result<Vec<(String, String)>> {
    events_of(host, Some("default"), "web")
}

#[test]
fn the_second_wave_waits_for_the_first_to_complete() -> Result<()> {
    let fed = rolled_out(r#"{"waves": [["a"], ["b"]]}"#)?;
    let (a, b) = (fed.member(0)?, fed.member(1)?);
    let copy_a = wait_image(a, NEW)?;
    // a has the new image; b keeps the old one while a is not complete.
    std::thread::sleep(Duration::from_secs(2));
    ensure!(
        image(b)?.map(|i| i.0).as_deref() == Some(OLD),
        "b moved early"
    );
    ensure_waiting(&fed.host, "b")?;
    let table = fed
        .host
        .kubectl_ok(&["get", "propagationrecords", "web.deployments.apps"])?;
    let mut lines = table.lines();
    let header = lines.next().unwrap_or("");
    let row = lines.next().unwrap_or("");
    let cell = header
        .find("WAVE")
        .and_then(|i| row.get(i..))
        .and_then(|r| r.split_whitespace().next());
    ensure!(cell == Some("1/2"), "WAVE column:\n{table}");
    let (_, out) = rollout_status(&fed.host, &["--watch=false"])?;
    ensure!(
        out.contains("Waiting"),
        "rollout status before a is done: {out}"
    );

    // a complete: b gets the new image; not done until b is too.
    report(a, &copy_a, false)?;
    let copy_b = wait_image(b, NEW)
        .with_context(|| format!("b never got the new image\n{}", fed.host.log_tail()))?;
    let (_, out) = rollout_status(&fed.host, &["--watch=false"])?;
    ensure!(
        out.contains("Waiting"),
        "rollout status before b is done: {out}"
    );
    report(b, &copy_b, false)?;
    eventually(WAIT, || {
        let (ok, out) = rollout_status(&fed.host, &["--watch=false"])?;
        Ok((ok && out.contains("successfully rolled out")).then_some(()))
    })
    .context("rollout status never said done")?;
    let events = reasons(&fed.host)?;
    for want in ["WaveStarted", "WaveCompleted"] {
        ensure!(
            events.iter().any(|(r, _)| r == want),
            "no {want}: {events:?}"
        );
    }
    Ok(())
}

#[test]
fn a_halted_wave_stops_the_rollout_and_rollback_restores_the_old_image() -> Result<()> {
    let fed = rolled_out(r#"{"waves": [["a"], ["b"]], "onFailure": "Rollback"}"#)?;
    let (a, b) = (fed.member(0)?, fed.member(1)?);
    let copy_a = wait_image(a, NEW)?;
    report(a, &copy_a, true)?;
    // a gets the old image back; b never gets the new one.
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        ensure!(
            image(b)?.map(|i| i.0).as_deref() == Some(OLD),
            "b got the new image"
        );
        if image(a)?.map(|i| i.0).as_deref() == Some(OLD) {
            break;
        }
        ensure!(
            std::time::Instant::now() < deadline,
            "a never got the old image back\n{}",
            fed.host.log_tail()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    let (ok, out) = rollout_status(&fed.host, &["--timeout=20s"])?;
    ensure!(
        !ok && out.contains("exceeded its progress deadline"),
        "{out}"
    );
    let events = reasons(&fed.host)?;
    ensure!(
        events
            .iter()
            .any(|(r, m)| r == "RolloutHalted" && m.contains("cluster a")),
        "{events:?}"
    );
    ensure!(
        image(b)?.map(|i| i.0).as_deref() == Some(OLD),
        "b got the new image"
    );
    Ok(())
}

#[test]
fn pause_holds_the_waves_and_undo_goes_back_wave_by_wave() -> Result<()> {
    let fed = rolled_out(r#"{"waves": [["a"], ["b"]]}"#)?;
    let (a, b) = (fed.member(0)?, fed.member(1)?);
    wait_image(a, NEW)?;
    // Paused, a completes (its copy is paused too): b waits all the same.
    fed.host
        .kubectl_ok(&["rollout", "pause", "deployment/web"])?;
    let copy_a = wait_copy(a, paused).context("a's copy never paused")?;
    report(a, &copy_a, false)?;
    keeps_image(b, OLD, 4).context("b while paused")?;
    ensure_waiting(&fed.host, "b")?;
    // Resumed: a reports its unpaused copy complete, b gets the image.
    fed.host
        .kubectl_ok(&["rollout", "resume", "deployment/web"])?;
    let copy_a = wait_copy(a, |c| !paused(c)).context("a's copy never resumed")?;
    second_wave_and_done(&fed, &copy_a, NEW)?;
    let history = eventually(WAIT, || {
        let out = fed
            .host
            .kubectl_ok(&["rollout", "history", "deployment/web"])?;
        let revisions = out
            .lines()
            .filter(|l| {
                l.split_whitespace()
                    .next()
                    .is_some_and(|n| n.parse::<u32>().is_ok())
            })
            .count();
        Ok((revisions >= 2).then_some(out))
    })
    .context("history never listed two revisions")?;
    ensure!(history.contains("REVISION"), "{history}");

    // Undo: the old image goes to a first; b keeps the new one until a
    // reports complete.
    fed.host
        .kubectl_ok(&["rollout", "undo", "deployment/web"])?;
    let copy_a = wait_image(a, OLD).context("a never got the old image back")?;
    keeps_image(b, NEW, 2).context("b during the undo's first wave")?;
    second_wave_and_done(&fed, &copy_a, OLD)
}

/// `a` reports `copy_a` complete: `b` gets `want`, reports complete, and
/// `kubectl rollout status` on the federation says done.
fn second_wave_and_done(fed: &Federation, copy_a: &Value, want: &str) -> Result<()> {
    let (a, b) = (fed.member(0)?, fed.member(1)?);
    report(a, copy_a, false)?;
    let copy_b = wait_image(b, want)
        .with_context(|| format!("b never got {want}\n{}", fed.host.log_tail()))?;
    report(b, &copy_b, false)?;
    eventually(WAIT, || {
        let (ok, out) = rollout_status(&fed.host, &["--watch=false"])?;
        Ok((ok && out.contains("successfully rolled out")).then_some(()))
    })
    .with_context(|| format!("rollout status never said done on {want}"))
}

#[test]
fn a_real_member_past_its_progress_deadline_halts_the_rollout() -> Result<()> {
    let Some(script) = kube_sh() else {
        eprintln!(
            "SKIPPED: shared/kube/kube.sh not found beside the checkout (nor $UBERNETES_KUBE_SH): \
             no real kube-apiserver to roll out to"
        );
        return Ok(());
    };
    let kube = KubeCluster::up(&script, &format!("roll{}", std::process::id()), true)?;
    let fed = Federation::start(1, &[])?;
    kube.join(&fed.host, "real")?;
    fed.join(0, "b", &[])?;
    fed.wait_ready("real")?;
    fed.wait_ready("b")?;
    // The federation's own clock (120 s) is long; the real member's
    // deployment controller gets 10 s (an override), so the halt is its
    // report, not the federation's timer.
    fed.host.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &deployment_with(
            r#"{"waves": [["real"], ["b"]], "onFailure": "Rollback"}"#,
            r#"    federation.kubernetes.io/overrides: '{"real": [{"op": "replace", "path": "/spec/progressDeadlineSeconds", "value": 10}]}'"#,
            "  progressDeadlineSeconds: 120",
        ),
    )?;
    let b = fed.member(0)?;
    let real_image = || -> Result<Option<String>> {
        Ok(kube.get(&["deployment", "web"])?.and_then(|d| {
            d.pointer("/spec/template/spec/containers/0/image")
                .and_then(Value::as_str)
                .map(str::to_string)
        }))
    };
    wait_image(b, OLD)?;
    eventually(Duration::from_secs(60), || {
        Ok((real_image()?.as_deref() == Some(OLD)).then_some(()))
    })
    .with_context(|| {
        format!(
            "the real member never got the copy\n{}",
            fed.host.log_tail()
        )
    })?;
    fed.host
        .kubectl_ok(&["set", "image", "deployment/web", &format!("web={NEW}")])?;
    eventually(WAIT, || {
        Ok((real_image()?.as_deref() == Some(NEW)).then_some(()))
    })
    .context("the real member (wave 1) never got the new image")?;
    // Its controller times out after 10 s; the rollout halts and the old
    // image goes back; b never gets the new one meanwhile.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while real_image()?.as_deref() != Some(OLD) {
        ensure!(
            image(b)?.map(|i| i.0).as_deref() == Some(OLD),
            "b got the new image"
        );
        ensure!(
            std::time::Instant::now() < deadline,
            "the real member never got the old image back\n{}",
            fed.host.log_tail()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let events = reasons(&fed.host)?;
    ensure!(
        events.iter().any(|(r, m)| r == "RolloutHalted"
            && m.contains("cluster real: exceeded its progress deadline")),
        "no RolloutHalted from the real member's own report: {events:?}"
    );
    // b's controller (played) reports its copy, so the federated status
    // is observed everywhere and kubectl reads its Progressing condition.
    let copy_b = image(b)?.context("b's copy")?.1;
    report(b, &copy_b, false)?;
    let (ok, out) = rollout_status(&fed.host, &["--timeout=20s"])?;
    ensure!(
        !ok && out.contains("exceeded its progress deadline"),
        "{out}"
    );
    keeps_image(b, OLD, 2)
}
