//! Cluster health end to end (SPEC §3.1–§3.3): a federation host and two
//! member API servers, joined declaratively with kubectl; the Cluster health
//! controller marks them Ready with zones and region from their nodes, sees
//! a killed member go Offline and come back, and reports a Cluster whose
//! Secret is missing.
//!
//! One scenario, because starting three servers is the slow part.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::Value;
use ubernetes_e2e::eventually;
use ubernetes_e2e::federation::{CLUSTER_WAIT, Federation, condition};

/// How soon (with `--cluster-monitor-period 1s`) a health change must show.
const HEALTH_WAIT: Duration = Duration::from_secs(10);

fn cond_field<'a>(cluster: &'a Value, type_: &str, field: &str) -> Option<&'a str> {
    condition(cluster, type_).and_then(|c| c[field].as_str())
}

#[test]
fn clusters_join_report_health_zones_and_credentials() -> Result<()> {
    let mut fed = Federation::start(2, &[])?;
    fed.create_nodes(
        0,
        &[
            ("ny-1", "us-east-1b", "us-east-1"),
            ("ny-2", "us-east-1a", "us-east-1"),
            ("ny-3", "us-east-1b", "us-east-1"),
        ],
    )?;
    fed.create_nodes(1, &[("ldn-1", "eu-west-2a", "eu-west-2")])?;

    fed.join(0, "new-york", &[("region", "us-east")])?;
    fed.join(1, "london", &[("region", "eu-west")])?;

    // Both Ready, with their zones and region.
    let ny = fed.wait_ready("new-york")?;
    let ldn = fed.wait_ready("london")?;
    ensure!(
        cond_field(&ny, "Ready", "message") == Some("/healthz responded with ok"),
        "{ny}"
    );
    ensure!(
        condition(&ny, "Offline").is_none(),
        "a Ready cluster has no Offline condition (Federation v1): {ny}"
    );
    let facts = eventually(CLUSTER_WAIT, || {
        let ny = fed.cluster("new-york")?.context("new-york")?;
        Ok(
            (ny["status"]["zones"] == serde_json::json!(["us-east-1a", "us-east-1b"])
                && ny["status"]["region"] == "us-east-1")
                .then_some(ny),
        )
    })
    .context("new-york zones and region")?;
    ensure!(
        cond_field(&facts, "Ready", "status") == Some("True"),
        "{facts}"
    );
    eventually(CLUSTER_WAIT, || {
        let ldn = fed.cluster("london")?.context("london")?;
        Ok((ldn["status"]["zones"] == serde_json::json!(["eu-west-2a"])
            && ldn["status"]["region"] == "eu-west-2")
            .then_some(()))
    })
    .context("london zones and region")?;
    let ready_since = cond_field(&ldn, "Ready", "lastTransitionTime")
        .context("lastTransitionTime")?
        .to_string();

    // The table: Name, Ready, Zones, Region, Age.
    let table = fed.host.kubectl_ok(&["get", "clusters"])?;
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    ensure!(
        rows.first().map(|h| h[..4].to_vec()) == Some(vec!["NAME", "READY", "ZONES", "REGION"]),
        "{table}"
    );
    let row = |name: &str| rows.iter().find(|r| r.first() == Some(&name)).cloned();
    ensure!(
        row("new-york").map(|r| r[1..4].to_vec())
            == Some(vec!["True", "us-east-1a,us-east-1b", "us-east-1"]),
        "{table}"
    );
    ensure!(
        row("london").map(|r| r[1..4].to_vec()) == Some(vec!["True", "eu-west-2a", "eu-west-2"]),
        "{table}"
    );
    let wide = fed.host.kubectl_ok(&["get", "clusters", "-o", "wide"])?;
    let member_url = fed.member(1)?.url();
    ensure!(
        wide.contains(&member_url),
        "the server address in -o wide:\n{wide}"
    );

    // Kill london: Offline=True and Ready=Unknown within seconds.
    fed.member_mut(1)?.kill9();
    let down = fed.wait_condition(
        "london",
        "Offline",
        "True",
        Some("ClusterNotReachable"),
        HEALTH_WAIT,
    )?;
    ensure!(
        cond_field(&down, "Ready", "status") == Some("Unknown"),
        "{down}"
    );
    ensure!(
        cond_field(&down, "Offline", "message") == Some("cluster is not reachable"),
        "{down}"
    );
    ensure!(
        down["status"]["region"] == "eu-west-2",
        "the last known region is kept while unreachable: {down}"
    );
    // new-york is unaffected.
    let ny = fed.cluster("new-york")?.context("new-york")?;
    ensure!(cond_field(&ny, "Ready", "status") == Some("True"), "{ny}");

    // Restart it (same port and data): Ready again, with a new transition.
    fed.member_mut(1)?.restart()?;
    let back = fed.wait_condition("london", "Ready", "True", Some("ClusterReady"), HEALTH_WAIT)?;
    ensure!(condition(&back, "Offline").is_none(), "{back}");
    let transition = cond_field(&back, "Ready", "lastTransitionTime").context("transition")?;
    ensure!(
        transition > ready_since.as_str(),
        "a new transition: {back}"
    );
    ensure!(
        cond_field(&back, "Ready", "lastProbeTime") >= Some(transition),
        "{back}"
    );

    // A Cluster whose Secret does not exist.
    let ny_url = fed.member(0)?.url();
    fed.create_cluster("ghost", &ny_url, "no-such-secret", &[])?;
    let ghost = fed.wait_condition(
        "ghost",
        "Ready",
        "False",
        Some("ClusterCredentialsInvalid"),
        HEALTH_WAIT,
    )?;
    let message = cond_field(&ghost, "Ready", "message").unwrap_or_default();
    ensure!(
        message.contains("federation-system/no-such-secret"),
        "the message names the Secret: {ghost}"
    );
    let table = fed.host.kubectl_ok(&["get", "cluster", "ghost"])?;
    ensure!(table.contains("False"), "{table}");
    eventually(HEALTH_WAIT, || {
        let events = fed
            .host
            .kubectl_ok(&["get", "events", "-A", "-o", "json"])?;
        Ok(events.contains("ClusterCredentialsInvalid").then_some(()))
    })
    .context("a ClusterCredentialsInvalid event")?;

    // Its Secret appears: the Cluster becomes Ready.
    let kubeconfig = std::fs::read_to_string(fed.member(0)?.kubeconfig())?;
    fed.create_secret("no-such-secret", &kubeconfig)?;
    fed.wait_ready("ghost")?;

    // Unjoin london: the Cluster is gone, the others stay.
    fed.unjoin("london")?;
    eventually(CLUSTER_WAIT, || {
        Ok(fed.cluster("london")?.is_none().then_some(()))
    })?;
    let table = fed.host.kubectl_ok(&["get", "clusters"])?;
    ensure!(
        !table.contains("london") && table.contains("new-york"),
        "{table}"
    );
    Ok(())
}
