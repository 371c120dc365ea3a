//! The members' Events on the federated object (SPEC §3.13, issue 25
//! item 4 / "must show" 5), real processes and the real kubectl:
//!
//! - two members of our own binary; a federated Deployment on both. An
//!   Event created in m1 about m1's copy, and one about a ReplicaSet the
//!   test makes in m1 owned by that copy (no controller manager runs
//!   there), show in `kubectl describe deployment web` on the federation,
//!   naming `cluster m1` (message) and `m1/test-controller` (From);
//! - the member Event's count goes up: the one mirror follows (count,
//!   no second Event), also after a restart of the federation;
//! - an Event about a member object that is no copy is not mirrored;
//!   nothing of it reaches m2 (Events never propagate);
//! - expiry: a member Event last seen just inside `--member-event-ttl` is
//!   mirrored and deleted once past it; one past it is never mirrored;
//! - with `../shared/kube` (skipped with a message otherwise), a real
//!   kube-apiserver + kube-controller-manager member: its deployment
//!   controller's `ScalingReplicaSet` Event and its ReplicaSet controller's
//!   `SuccessfulCreate` (about the copy's ReplicaSet) show in describe on
//!   the federation.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use ubernetes_e2e::federation::Federation;
use ubernetes_e2e::real_kube::{KubeCluster, kube_sh};
use ubernetes_e2e::{Server, eventually};

const WAIT: Duration = Duration::from_secs(30);
const MIRROR_LABEL: &str = "federation.kubernetes.io/member-event=true";

/// A Deployment or ReplicaSet `name` of 2 (`web` in `default`), with
/// `metadata` merged in.
fn workload(kind: &str, name: &str, metadata: Value) -> String {
    let mut w = json!({
        "apiVersion": "apps/v1", "kind": kind,
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}},
    });
    if let (Some(m), Value::Object(extra)) = (w["metadata"].as_object_mut(), metadata) {
        m.extend(extra);
    }
    w.to_string()
}

fn stamp(ago_secs: i64) -> String {
    let t = Timestamp::now() - SignedDuration::from_secs(ago_secs);
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A core v1 Event `name` about `involved`, last seen `ago_secs` ago.
fn event(
    name: &str,
    involved: Value,
    reason: &str,
    message: &str,
    count: i64,
    ago_secs: i64,
) -> String {
    json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": involved,
        "reason": reason, "message": message, "type": "Warning",
        "source": {"component": "test-controller"},
        "firstTimestamp": stamp(ago_secs), "lastTimestamp": stamp(ago_secs), "count": count,
    })
    .to_string()
}

/// The member counts Event `name` again: `count`, last seen now.
fn recount(member: &Server, name: &str, count: i64) -> Result<()> {
    let patch = json!({"count": count, "lastTimestamp": stamp(0)}).to_string();
    member.kubectl_ok(&["patch", "event", name, "--type=merge", "-p", &patch])?;
    Ok(())
}

/// `kubectl describe deployment web` on `host`.
fn describe(host: &Server) -> Result<String> {
    host.kubectl_ok(&["describe", "deployment", "web"])
}

/// The federation's mirrored Events (`kubectl get events -A -l …`).
fn mirrors(host: &Server) -> Result<Vec<Value>> {
    let list = host
        .kubectl_get(&["events", "-A", "-l", MIRROR_LABEL])?
        .context("events")?;
    Ok(list["items"].as_array().cloned().unwrap_or_default())
}

/// The mirrors of member Event `default/<name>`.
fn mirrors_of(host: &Server, name: &str) -> Result<Vec<Value>> {
    let source = format!("default/{name}");
    Ok(mirrors(host)?
        .into_iter()
        .filter(|e| {
            e.pointer("/metadata/annotations/federation.kubernetes.io~1member-event-name")
                .and_then(Value::as_str)
                == Some(&source)
        })
        .collect())
}

/// The count of the one mirror of member Event `name` once it is `want`;
/// fails when there are two.
fn wait_count(host: &Server, name: &str, want: i64) -> Result<()> {
    eventually(WAIT, || {
        let found = mirrors_of(host, name)?;
        ensure!(found.len() <= 1, "two mirrors of {name}: {found:#?}");
        Ok(found
            .first()
            .filter(|e| e["count"].as_i64() == Some(want))
            .map(|_| ()))
    })
    .with_context(|| format!("the mirror of {name} never counted {want}"))
}

#[test]
fn member_events_about_copies_show_on_the_federated_object() -> Result<()> {
    let mut fed = Federation::start(2, &["--member-event-ttl=90s"])?;
    fed.join(0, "m1", &[])?;
    fed.join(1, "m2", &[])?;
    fed.wait_ready("m1")?;
    fed.wait_ready("m2")?;
    fed.host.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &workload("Deployment", "web", json!({})),
    )?;
    let Federation { host, members } = &mut fed;
    let [m1, m2] = [&members[0], &members[1]];
    let copy = eventually(WAIT, || m1.kubectl_get(&["deployment", "web"]))
        .context("m1 never got the copy")?;
    eventually(WAIT, || m2.kubectl_get(&["deployment", "web"])).context("m2 never got the copy")?;
    let copy_uid = copy["metadata"]["uid"].as_str().context("copy uid")?;

    // The copy's child, as m1's deployment controller would make it.
    let rs = workload(
        "ReplicaSet",
        "web-5d0c6e1f2a",
        json!({"ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
            "uid": copy_uid, "controller": true, "blockOwnerDeletion": true}]}),
    );
    let rs = m1.kubectl_stdin_ok(&["create", "-o", "json", "-f", "-"], &rs)?;
    let rs: Value = serde_json::from_str(&rs)?;
    let lonely: Value =
        serde_json::from_str(&m1.kubectl_ok(&["create", "configmap", "lonely", "-o", "json"])?)?;

    let on_copy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
        "namespace": "default", "uid": copy_uid});
    let on_rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d0c6e1f2a",
        "namespace": "default", "uid": rs["metadata"]["uid"]});
    let on_lonely = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "lonely",
        "namespace": "default", "uid": lonely["metadata"]["uid"]});
    let all = [
        event(
            "web.copy",
            on_copy.clone(),
            "TestReason",
            "the copy is unwell",
            1,
            0,
        ),
        event(
            "web.child",
            on_rs,
            "TestChildReason",
            "the child is unwell",
            1,
            0,
        ),
        event("lonely.ev", on_lonely, "NotMirrored", "no copy", 1, 0),
        event(
            "web.ancient",
            on_copy.clone(),
            "AncientReason",
            "long ago",
            1,
            7200,
        ),
    ];
    for e in &all {
        m1.kubectl_stdin_ok(&["create", "-f", "-"], e)?;
    }

    let shown = eventually(WAIT, || {
        let out = describe(host)?;
        Ok((out.contains("TestReason") && out.contains("TestChildReason")).then_some(out))
    })
    .with_context(|| {
        format!(
            "describe never showed the member Events\n{}",
            host.log_tail()
        )
    })?;
    ensure!(shown.contains("cluster m1: the copy is unwell"), "{shown}");
    ensure!(
        shown.contains("cluster m1: ReplicaSet web-5d0c6e1f2a: the child is unwell"),
        "{shown}"
    );
    ensure!(
        shown.contains("m1/test-controller"),
        "From names the cluster: {shown}"
    );

    // The count follows: one mirror, count 4.
    recount(m1, "web.copy", 4)?;
    wait_count(host, "web.copy", 4)?;
    let out = describe(host)?;
    ensure!(
        !out.contains("NotMirrored"),
        "a non-copy's Event mirrored: {out}"
    );
    ensure!(
        !out.contains("AncientReason"),
        "an expired Event mirrored: {out}"
    );
    ensure!(
        mirrors(host)?.iter().all(|e| e["reason"] != "NotMirrored"),
        "a non-copy's Event mirrored"
    );

    // Nothing reaches m2: no mirror, no member Event of m1.
    let m2_events = m2.kubectl_get(&["events", "-A"])?.context("m2 events")?;
    let reasons: Vec<&str> = m2_events["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["reason"].as_str())
        .collect();
    ensure!(
        !reasons.iter().any(|r| r.starts_with("Test")),
        "m2 got events: {reasons:?}"
    );
    ensure!(
        m2.kubectl_get(&["events", "-A", "-l", MIRROR_LABEL])?
            .and_then(|l| l["items"].as_array().map(Vec::len))
            == Some(0),
        "m2 holds a mirror"
    );

    // Expiry (TTL 90 s): last seen 82 s ago → mirrored, then deleted.
    m1.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &event("web.old", on_copy, "OldReason", "nearly expired", 1, 82),
    )?;
    eventually(WAIT, || {
        Ok((!mirrors_of(host, "web.old")?.is_empty()).then_some(()))
    })
    .context("the nearly expired Event was never mirrored")?;

    // A restart writes the same mirror (deterministic name).
    host.restart()?;
    recount(m1, "web.copy", 5)?;
    wait_count(host, "web.copy", 5).context("after a restart")?;
    ensure!(
        mirrors_of(host, "web.child")?.len() == 1,
        "child mirrored twice"
    );

    eventually(WAIT, || {
        Ok(mirrors_of(host, "web.old")?.is_empty().then_some(()))
    })
    .context("the expired mirror was never deleted")?;
    Ok(())
}

#[test]
fn a_real_members_deployment_controller_events_show_on_the_federation() -> Result<()> {
    let Some(script) = kube_sh() else {
        eprintln!(
            "SKIPPED: shared/kube/kube.sh not found beside the checkout (nor $UBERNETES_KUBE_SH): \
             no real kube-controller-manager to write Events"
        );
        return Ok(());
    };
    let kube = KubeCluster::up(&script, &format!("ev{}", std::process::id()), true)?;
    let fed = Federation::start(0, &[])?;
    kube.join(&fed.host, "real")?;
    fed.wait_ready("real")?;
    fed.host.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &workload("Deployment", "web", json!({})),
    )?;
    let out = eventually(Duration::from_secs(60), || {
        let out = describe(&fed.host)?;
        Ok((out.contains("ScalingReplicaSet") && out.contains("SuccessfulCreate")).then_some(out))
    })
    .with_context(|| {
        format!(
            "describe never showed the real member's Events\n{}",
            fed.host.log_tail()
        )
    })?;
    ensure!(out.contains("real/deployment-controller"), "{out}");
    ensure!(
        out.contains("cluster real: Scaled up replica set web-"),
        "{out}"
    );
    ensure!(out.contains("cluster real: ReplicaSet web-"), "{out}");
    Ok(())
}
