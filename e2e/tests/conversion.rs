//! One storage for kinds served in several versions, through the real
//! kubectl 1.37: an HPA created as `autoscaling/v1` is read as `v2` and back,
//! a watch in one version sees a write in the other, a strategic-merge patch
//! through v1 keeps the v2-only metrics (they travel in kube's
//! `autoscaling.alpha.kubernetes.io/metrics` annotation); a core Event is
//! listed, watched, field-selected and patched as `events.k8s.io/v1` and an
//! `events.k8s.io/v1` Event as core `v1`.

mod kubectl_support;

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::Value;
use ubernetes_e2e::Server;

use kubectl_support::{SETTLE, Streaming, json, lines, wait_gone};

const HPA_V1: &str = r#"
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: conv-hpa
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: web
  minReplicas: 2
  maxReplicas: 5
  targetCPUUtilizationPercentage: 50
"#;

fn metrics(hpa: &Value) -> Vec<Value> {
    hpa["spec"]["metrics"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn cpu_target(hpa: &Value) -> Option<i64> {
    metrics(hpa)
        .iter()
        .find(|m| m["resource"]["name"] == "cpu")
        .and_then(|m| m["resource"]["target"]["averageUtilization"].as_i64())
}

#[test]
fn an_hpa_created_as_v1_is_read_watched_and_patched_as_v2_and_back() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_ok(&["create", "namespace", "conv-hpa"])?;
    let v1 = "horizontalpodautoscalers.v1.autoscaling";
    let v2 = "horizontalpodautoscalers.v2.autoscaling";
    let ns = ["-n", "conv-hpa"];

    // A watch in v2 started before the v1 create.
    let mut watch_v2 = Streaming::start(
        &server,
        &[
            "get",
            v2,
            "-n",
            "conv-hpa",
            "-w",
            "-o",
            r#"jsonpath={.apiVersion} {.metadata.name} {.spec.metrics[0].resource.target.averageUtilization}{"\n"}"#,
        ],
    )?;
    server.kubectl_stdin_ok(&["create", "-f", "-"], HPA_V1)?;

    let got = json(&server, &["get", v2, "web", ns[0], ns[1]])?;
    assert_eq!(got["apiVersion"], "autoscaling/v2");
    assert_eq!(cpu_target(&got), Some(50), "{got}");
    assert_eq!(got["spec"]["minReplicas"], 2);
    assert!(
        got["metadata"]["annotations"].is_null(),
        "no round-trip annotation in v2: {got}"
    );
    watch_v2.wait_for(SETTLE, |l| l == "autoscaling/v2 web 50")?;

    // A watch in v1 sees a v2 write.
    let mut watch_v1 = Streaming::start(
        &server,
        &[
            "get",
            v1,
            "-n",
            "conv-hpa",
            "-w",
            "-o",
            r#"jsonpath={.apiVersion} {.metadata.name} {.spec.targetCPUUtilizationPercentage}{"\n"}"#,
        ],
    )?;
    watch_v1.wait_for(SETTLE, |l| l == "autoscaling/v1 web 50")?;
    // v2 only: a memory metric besides the CPU one.
    server.kubectl_ok(&[
        "patch",
        v2,
        "web",
        "-n",
        "conv-hpa",
        "--type=merge",
        "-p",
        r#"{"spec":{"metrics":[
            {"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":65}}},
            {"type":"Resource","resource":{"name":"memory","target":{"type":"AverageValue","averageValue":"256Mi"}}}]}}"#,
    ])?;
    watch_v1.wait_for(SETTLE, |l| l == "autoscaling/v1 web 65")?;

    // Read back as v1: the CPU target in its field, memory in kube's annotation.
    let got = json(&server, &["get", v1, "web", ns[0], ns[1]])?;
    assert_eq!(got["apiVersion"], "autoscaling/v1");
    assert_eq!(got["spec"]["targetCPUUtilizationPercentage"], 65, "{got}");
    let other: Value = serde_json::from_str(
        got["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"]
            .as_str()
            .context("metrics annotation")?,
    )?;
    assert_eq!(other[0]["resource"]["name"], "memory", "{other}");
    assert_eq!(other[0]["resource"]["targetAverageValue"], "256Mi");

    // A strategic-merge patch through v1 (applied to the v1 form) changes the
    // CPU target and keeps the memory metric that only v2 can express.
    server.kubectl_ok(&[
        "patch",
        v1,
        "web",
        "-n",
        "conv-hpa",
        "-p",
        r#"{"spec":{"targetCPUUtilizationPercentage":70,"maxReplicas":7}}"#,
    ])?;
    watch_v2.wait_for(SETTLE, |l| {
        l == "autoscaling/v2 web 70" || l == "autoscaling/v2 web "
    })?;
    let got = json(&server, &["get", v2, "web", ns[0], ns[1]])?;
    assert_eq!(cpu_target(&got), Some(70), "{got}");
    assert_eq!(got["spec"]["maxReplicas"], 7);
    let names: Vec<String> = metrics(&got)
        .iter()
        .filter_map(|m| m["resource"]["name"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        names,
        ["memory", "cpu"],
        "kube's order: annotation metrics, then CPU: {got}"
    );
    assert!(
        got["metadata"]["annotations"].is_null(),
        "the round-trip annotation is not stored: {got}"
    );

    // One object: a delete through v1 removes it from v2.
    server.kubectl_ok(&["delete", v1, "web", "-n", "conv-hpa"])?;
    wait_gone(&server, &["get", v2, "web", "-n", "conv-hpa"])?;
    Ok(())
}

const CORE_EVENT: &str = r#"
apiVersion: v1
kind: Event
metadata:
  name: core-ev
  namespace: conv-ev
involvedObject:
  kind: ConfigMap
  name: cm-a
  namespace: conv-ev
reason: Testing
message: written as core v1
type: Normal
source:
  component: e2e
"#;

const EVENTS_V1_EVENT: &str = r#"
apiVersion: events.k8s.io/v1
kind: Event
metadata:
  name: new-ev
  namespace: conv-ev
eventTime: "2026-01-01T00:00:00.000000Z"
reportingController: example.com/e2e
reportingInstance: e2e-1
action: Testing
reason: Tested
type: Warning
note: written as events.k8s.io/v1
regarding:
  kind: ConfigMap
  name: cm-b
  namespace: conv-ev
"#;

#[test]
fn an_event_created_in_one_group_is_listed_watched_and_selected_in_the_other() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_ok(&["create", "namespace", "conv-ev"])?;
    let new = "events.v1.events.k8s.io";
    let core = "events";

    let mut watch_new = Streaming::start(
        &server,
        &[
            "get",
            new,
            "-n",
            "conv-ev",
            "-w",
            "-o",
            r#"jsonpath={.apiVersion} {.metadata.name} {.note}{"\n"}"#,
        ],
    )?;
    server.kubectl_stdin_ok(&["create", "-f", "-"], CORE_EVENT)?;
    watch_new.wait_for(SETTLE, |l| {
        l == "events.k8s.io/v1 core-ev written as core v1"
    })?;

    let mut watch_core = Streaming::start(
        &server,
        &[
            "get",
            core,
            "-n",
            "conv-ev",
            "-w",
            "-o",
            r#"jsonpath={.apiVersion} {.metadata.name} {.message} {.series.count}{"\n"}"#,
        ],
    )?;
    server.kubectl_stdin_ok(&["create", "-f", "-"], EVENTS_V1_EVENT)?;
    watch_core.wait_for(SETTLE, |l| {
        l.trim_end() == "v1 new-ev written as events.k8s.io/v1"
    })?;

    // Both lists hold both events, each in its own version's fields.
    let listed = json(&server, &["get", new, "-n", "conv-ev"])?;
    let items = listed["items"].as_array().context("items")?;
    ensure!(items.len() == 2, "events.k8s.io list: {listed}");
    let core_ev = items
        .iter()
        .find(|e| e["metadata"]["name"] == "core-ev")
        .context("core-ev listed as events.k8s.io")?;
    assert_eq!(core_ev["apiVersion"], "events.k8s.io/v1");
    assert_eq!(core_ev["regarding"]["name"], "cm-a");
    assert_eq!(core_ev["deprecatedSource"]["component"], "e2e");
    assert!(core_ev.get("message").is_none() && core_ev.get("involvedObject").is_none());
    let listed = json(&server, &["get", core, "-n", "conv-ev"])?;
    let new_ev = listed["items"]
        .as_array()
        .and_then(|i| {
            i.iter()
                .find(|e| e["metadata"]["name"] == "new-ev")
                .cloned()
        })
        .context("new-ev listed as core v1")?;
    assert_eq!(new_ev["involvedObject"]["name"], "cm-b");
    assert_eq!(new_ev["reportingComponent"], "example.com/e2e");
    assert_eq!(new_ev["message"], "written as events.k8s.io/v1");

    // Field selectors in each version's own field names.
    let out = server.kubectl_ok(&[
        "get",
        core,
        "-n",
        "conv-ev",
        "--field-selector",
        "involvedObject.name=cm-b",
        "-o",
        "name",
    ])?;
    assert_eq!(lines(&out), ["event/new-ev"], "{out}");
    let out = server.kubectl_ok(&[
        "get",
        new,
        "-n",
        "conv-ev",
        "--field-selector",
        "regarding.name=cm-a",
        "-o",
        "name",
    ])?;
    assert_eq!(lines(&out), ["event.events.k8s.io/core-ev"], "{out}");

    // A patch through events.k8s.io on the core event, applied to its
    // events.k8s.io form: a series (mutable) goes through and the core watch
    // sees it; the note (core `message`) is immutable there, as in kube.
    server.kubectl_ok(&[
        "patch",
        new,
        "core-ev",
        "-n",
        "conv-ev",
        "--type=merge",
        "-p",
        r#"{"series":{"count":2,"lastObservedTime":"2026-01-01T00:05:00.000000Z"}}"#,
    ])?;
    watch_core.wait_for(Duration::from_secs(20), |l| {
        l == "v1 core-ev written as core v1 2"
    })?;
    let got = json(&server, &["get", core, "core-ev", "-n", "conv-ev"])?;
    assert_eq!(got["series"]["count"], 2, "{got}");
    assert_eq!(got["involvedObject"]["name"], "cm-a", "{got}");
    assert_eq!(got["source"]["component"], "e2e", "{got}");
    let err = server.kubectl_err(&[
        "patch",
        new,
        "core-ev",
        "-n",
        "conv-ev",
        "--type=merge",
        "-p",
        r#"{"note":"changed"}"#,
    ])?;
    assert!(
        err.contains("message: Invalid value") && err.contains("field is immutable"),
        "{err}"
    );

    // Deleted as core, gone as events.k8s.io.
    server.kubectl_ok(&["delete", core, "new-ev", "-n", "conv-ev"])?;
    wait_gone(&server, &["get", new, "new-ev", "-n", "conv-ev"])?;
    Ok(())
}
