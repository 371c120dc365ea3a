//! The cluster inventory API end to end (SPEC §3.12, issue 24 item 6): a
//! federation host and two member API servers (our own binary), joined; the
//! real kubectl lists both as `ClusterProfile`s in `federation-system` with
//! their health and version; `-o json` carries the version, the properties
//! (region, zones, sync mode) and the cluster manager; a user's edit of a
//! profile's status is repaired; a pull member is published too; a stopped member's profile turns
//! `ControlPlaneHealthy=Unknown`; an unjoined cluster's profile is deleted.
//!
//! One scenario, because starting three servers is the slow part.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};
use ubernetes_e2e::eventually;
use ubernetes_e2e::federation::{CLUSTER_WAIT, FEDERATION_NAMESPACE, Federation, condition};

/// How soon (with `--cluster-monitor-period 1s`) a change must show.
const WAIT: Duration = Duration::from_secs(15);

/// The rows of `kubectl get clusterprofiles -n federation-system [extra]`,
/// split on whitespace (the header first).
fn table(fed: &Federation, extra: &[&str]) -> Result<Vec<Vec<String>>> {
    let mut args = vec!["get", "clusterprofiles", "-n", FEDERATION_NAMESPACE];
    args.extend_from_slice(extra);
    let out = fed.host.kubectl_ok(&args)?;
    Ok(out
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect())
}

fn row<'a>(rows: &'a [Vec<String>], name: &str) -> Option<&'a [String]> {
    rows.iter()
        .find(|r| r.first().map(String::as_str) == Some(name))
        .map(Vec::as_slice)
}

/// ClusterProfile `name` as JSON, or `None` when there is none.
fn profile(fed: &Federation, name: &str) -> Result<Option<Value>> {
    let out = fed.host.kubectl(&[
        "get",
        "clusterprofile",
        name,
        "-n",
        FEDERATION_NAMESPACE,
        "-o",
        "json",
        "--ignore-not-found",
    ])?;
    ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    if text.trim().is_empty() {
        return Ok(None);
    }
    Ok(Some(serde_json::from_str(&text)?))
}

fn health(p: &Value) -> Option<(String, String)> {
    let c = condition(p, "ControlPlaneHealthy")?;
    Some((c["status"].as_str()?.into(), c["reason"].as_str()?.into()))
}

#[test]
fn every_cluster_is_published_as_a_cluster_profile() -> Result<()> {
    let mut fed = Federation::start(2, &[])?;
    fed.create_nodes(
        0,
        &[
            ("e-1", "eu-west-2a", "eu-west-2"),
            ("e-2", "eu-west-2b", "eu-west-2"),
        ],
    )?;
    fed.join(0, "east", &[])?;
    fed.join(1, "west", &[])?;
    let east = fed.wait_ready("east")?;
    fed.wait_ready("west")?;
    let version = east["status"]["kubernetesVersion"]
        .as_str()
        .context("the Cluster's version")?
        .to_string();

    // kubectl lists both, healthy, joined, with their version.
    let rows = eventually(CLUSTER_WAIT, || {
        let rows = table(&fed, &[])?;
        let healthy = |n: &str| {
            row(&rows, n).is_some_and(|r| {
                r.get(1..4) == Some(&["True".into(), "True".into(), version.clone()])
            })
        };
        Ok((healthy("east") && healthy("west")).then_some(rows))
    })
    .with_context(|| format!("both profiles healthy; host log:\n{}", fed.host.log_tail()))?;
    ensure!(
        rows.first().map(|h| h.join(" ")) == Some("NAME HEALTHY JOINED VERSION AGE".into()),
        "{rows:?}"
    );
    let wide = table(&fed, &["-o", "wide"])?;
    ensure!(
        row(&wide, "east")
            .and_then(|r| r.get(5))
            .map(String::as_str)
            == Some("ubernetes"),
        "the MANAGER column: {wide:?}"
    );

    // -o json: the spec, the label, the owner, the version and properties.
    let p = eventually(CLUSTER_WAIT, || {
        let p = profile(&fed, "east")?;
        Ok(p.filter(|p| {
            p["status"]["properties"]
                .as_array()
                .is_some_and(|a| a.iter().any(|x| x["name"] == "topology.kubernetes.io/zone"))
        }))
    })
    .context("east's zones published")?;
    ensure!(
        p["spec"] == json!({"displayName": "east", "clusterManager": {"name": "ubernetes"}}),
        "{p}"
    );
    ensure!(
        p["metadata"]["labels"]["x-k8s.io/cluster-manager"] == "ubernetes",
        "{p}"
    );
    ensure!(
        p["metadata"]["ownerReferences"][0]["kind"] == "Cluster"
            && p["metadata"]["ownerReferences"][0]["uid"] == east["metadata"]["uid"],
        "{p}"
    );
    ensure!(
        p["status"]["version"]["kubernetes"] == version.as_str(),
        "{p}"
    );
    ensure!(
        p["status"]["properties"]
            == json!([
                {"name": "cluster.clusterset.k8s.io", "value": "east"},
                {"name": "topology.kubernetes.io/region", "value": "eu-west-2"},
                {"name": "topology.kubernetes.io/zone", "value": "eu-west-2a,eu-west-2b"},
                {"name": "federation.kubernetes.io/sync-mode", "value": "Push"}
            ]),
        "{p}"
    );
    let joined = condition(&p, "Joined").context("Joined")?;
    ensure!(
        joined["status"] == "True" && joined["reason"] == "ClusterJoined",
        "{p}"
    );
    let ready = condition(&east, "Ready").context("Ready")?;
    ensure!(
        condition(&p, "ControlPlaneHealthy").map(|c| &c["lastTransitionTime"])
            == Some(&ready["lastTransitionTime"]),
        "the Cluster's transition time carried over: {p}"
    );

    // A user's edit of the status is repaired.
    fed.host.kubectl_ok(&[
        "patch",
        "clusterprofile",
        "east",
        "-n",
        FEDERATION_NAMESPACE,
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"version":{"kubernetes":"v0.0.1"}}}"#,
    ])?;
    eventually(WAIT, || {
        let p = profile(&fed, "east")?.context("east")?;
        Ok((p["status"]["version"]["kubernetes"] == version.as_str()).then_some(()))
    })
    .context("the edited version repaired")?;

    // A pull member (declared, no agent running yet) is published too.
    fed.host.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        r#"{"apiVersion": "federation/v1beta1", "kind": "Cluster",
            "metadata": {"name": "edge"}, "spec": {"syncMode": "Pull"}}"#,
    )?;
    let edge = eventually(WAIT, || profile(&fed, "edge")).context("the pull member's profile")?;
    ensure!(
        edge["status"]["properties"]
            .as_array()
            .is_some_and(|a| a
                .contains(&json!({"name": "federation.kubernetes.io/sync-mode", "value": "Pull"}))),
        "{edge}"
    );
    ensure!(
        health(&edge).is_some_and(|(s, _)| s != "True"),
        "no agent, not healthy: {edge}"
    );

    // west stopped: its profile's control plane is no longer healthy.
    fed.member_mut(1)?.kill9();
    let down = eventually(WAIT, || {
        let p = profile(&fed, "west")?.context("west")?;
        Ok(health(&p).filter(|(s, _)| s != "True").map(|h| (h, p)))
    })
    .context("west's profile turns unhealthy")?;
    ensure!(
        down.0 == ("Unknown".to_string(), "ClusterNotReachable".to_string()),
        "{}",
        down.1
    );
    let rows = table(&fed, &[])?;
    ensure!(
        row(&rows, "west")
            .and_then(|r| r.get(1))
            .map(String::as_str)
            == Some("Unknown")
            && row(&rows, "east")
                .and_then(|r| r.get(1))
                .map(String::as_str)
                == Some("True"),
        "{rows:?}"
    );

    // Unjoined: its profile is gone, the other stays.
    fed.unjoin("west")?;
    fed.unjoin("edge")?;
    eventually(WAIT, || {
        Ok((profile(&fed, "west")?.is_none() && profile(&fed, "edge")?.is_none()).then_some(()))
    })
    .context("west's and edge's profiles deleted")?;
    ensure!(profile(&fed, "east")?.is_some(), "east's profile stays");
    Ok(())
}
