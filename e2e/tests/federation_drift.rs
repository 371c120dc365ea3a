//! Drift report mode (issue 23 item 5, SPEC §3.4's drift policy): a
//! federation and one member, both real `ubernetes serve` processes (the
//! member with `--federation-controllers=false`), driven with the real
//! kubectl.
//!
//! One scenario, because starting the servers is the slow part: without
//! the annotation a member edit is repaired; with
//! `federation.kubernetes.io/drift-policy: Report` it stays (checked after
//! more than 10 s and after reconciles the member and the federated object
//! cause), the PropagationRecord lists the field with both values, the
//! DRIFT column of `kubectl get propagationrecords` counts it, one
//! `DriftDetected` Event names the cluster and the field; a change of the
//! federated object reaches the member without undoing the member's edit;
//! back to `Repair` the copy is repaired and the list clears; a value that
//! is no policy gets an `InvalidDriftPolicy` Event naming it.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use serde_json::Value;
use ubernetes_e2e::federation::{Federation, events_of, propagation_state};
use ubernetes_e2e::{Server, eventually};

const WAIT: Duration = Duration::from_secs(30);
const POLICY: &str = "federation.kubernetes.io/drift-policy";

/// `data.<key>` of ConfigMap `name` in `server` (`None`: no such
/// ConfigMap or key).
fn data(server: &Server, name: &str, key: &str) -> Result<Option<String>> {
    Ok(server
        .kubectl_get(&["configmap", name])?
        .and_then(|v| v["data"][key].as_str().map(str::to_string)))
}

fn wait_data(server: &Server, name: &str, key: &str, want: &str) -> Result<()> {
    eventually(WAIT, || {
        Ok((data(server, name, key)?.as_deref() == Some(want)).then_some(()))
    })
    .with_context(|| format!("configmap {name}: data.{key} never became {want:?}"))
}

/// The drift list of cluster `a` in the record of ConfigMap `name`.
fn drift_of(host: &Server, name: &str) -> Result<Vec<Value>> {
    let state = propagation_state(host, "configmaps", Some("default"), name)?;
    Ok(state["a"]["drift"].as_array().cloned().unwrap_or_default())
}

fn set_color(member: &Server, name: &str, color: &str) -> Result<()> {
    member.kubectl_ok(&[
        "patch",
        "configmap",
        name,
        "-p",
        &format!(r#"{{"data":{{"color":"{color}"}}}}"#),
    ])?;
    Ok(())
}

#[test]
fn member_edits_are_reported_not_repaired_until_the_policy_says_repair() -> Result<()> {
    let fed = Federation::start(1, &[])?;
    fed.join(0, "a", &[])?;
    fed.wait_ready("a")?;
    let host = &fed.host;
    let member = fed.member(0)?;
    host.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &format!(
            r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: report
  annotations: {{{POLICY}: Report}}
data: {{color: green, size: L}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: repair}}
data: {{color: green}}
"#
        ),
    )?;
    wait_data(member, "report", "color", "green")?;
    wait_data(member, "repair", "color", "green")?;
    let copy = member
        .kubectl_get(&["configmap", "report"])?
        .context("copy")?;
    ensure!(
        copy.pointer("/metadata/annotations")
            .and_then(|a| a.get(POLICY))
            .is_none(),
        "the drift policy is the federation's, not copied: {copy}"
    );

    // The default (no annotation) repairs.
    set_color(member, "repair", "red")?;
    wait_data(member, "repair", "color", "green").context("the default repairs drift")?;

    // Report: the edit stays, the record and an Event name the field.
    set_color(member, "report", "red")?;
    let edited = Instant::now();
    let drift = eventually(WAIT, || {
        let d = drift_of(host, "report")?;
        Ok((!d.is_empty()).then_some(d))
    })
    .with_context(|| format!("no drift recorded\nhost log:\n{}", host.log_tail()))?;
    ensure!(
        drift
            == vec![serde_json::json!({
                "path": "/data/color", "ours": "\"green\"", "theirs": "\"red\""
            })],
        "{drift:?}"
    );
    let table = host.kubectl_ok(&["get", "propagationrecords", "report.configmaps"])?;
    // Columns are aligned: DRIFT's cell starts where its header does.
    let mut lines = table.lines();
    let header = lines.next().unwrap_or("");
    let row = lines.next().unwrap_or("");
    let cell = header
        .find("DRIFT")
        .and_then(|i| row.get(i..))
        .and_then(|r| r.split_whitespace().next());
    ensure!(cell == Some("a=1"), "DRIFT column:\n{table}");
    let detected = eventually(WAIT, || {
        let e: Vec<String> = events_of(host, None, "report")?
            .into_iter()
            .filter(|(r, _)| r == "DriftDetected")
            .map(|(_, m)| m)
            .collect();
        Ok((!e.is_empty()).then_some(e))
    })?;
    ensure!(
        detected[0].contains("cluster a") && detected[0].contains("/data/color"),
        "{detected:?}"
    );

    // Reconciles caused by the member (a foreign label) and by the
    // federated object (a new key) keep the member's value; the new key
    // reaches the member.
    member.kubectl_ok(&["label", "configmap", "report", "team=ops"])?;
    host.kubectl_ok(&[
        "patch",
        "configmap",
        "report",
        "-p",
        r#"{"data":{"size":"XL"}}"#,
    ])?;
    wait_data(member, "report", "size", "XL")?;
    let left = Duration::from_secs(11).saturating_sub(edited.elapsed());
    std::thread::sleep(left);
    ensure!(
        data(member, "report", "color")?.as_deref() == Some("red"),
        "the member's edit survives > 10 s under Report"
    );
    ensure!(
        drift_of(host, "report")?.len() == 1,
        "still one drifted field"
    );
    let n = events_of(host, None, "report")?
        .iter()
        .filter(|(r, _)| r == "DriftDetected")
        .count();
    ensure!(
        n == 1,
        "one DriftDetected Event per change, not per reconcile: {n}"
    );

    // Back to Repair: the copy is repaired and the list clears.
    host.kubectl_ok(&[
        "annotate",
        "--overwrite",
        "configmap",
        "report",
        &format!("{POLICY}=Repair"),
    ])?;
    wait_data(member, "report", "color", "green").context("Repair repairs")?;
    eventually(WAIT, || {
        Ok(drift_of(host, "report")?.is_empty().then_some(()))
    })
    .context("the drift list clears")?;
    ensure!(
        data(member, "report", "size")?.as_deref() == Some("XL"),
        "the federated change stays"
    );
    // A value that is no policy: an Event names it (drift is repaired).
    host.kubectl_ok(&[
        "annotate",
        "--overwrite",
        "configmap",
        "report",
        &format!("{POLICY}=Bogus"),
    ])?;
    eventually(WAIT, || {
        Ok(events_of(host, None, "report")?
            .iter()
            .any(|(r, m)| r == "InvalidDriftPolicy" && m.contains("Bogus"))
            .then_some(()))
    })
    .context("InvalidDriftPolicy event")?;

    Ok(())
}
