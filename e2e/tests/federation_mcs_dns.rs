//! `clusterset.local` end to end (SPEC §3.14, issue 27 item 2): a host
//! `ubernetes serve --dns-bind …` (whose DNS server also answers the
//! clusterset zone, `--clusterset-zone` left at its default) and two member
//! servers, a federated Service `mcs` that both run, each member with an
//! EndpointSlice of its own (the test writes them, as a member's endpoint
//! controller would), and the real `dig`:
//!
//! - the clusterset zone has its SOA; a name in it that does not exist is
//!   NXDOMAIN with that SOA; the Service's name before it is exported too;
//! - the ServiceExport created, `mcs.default.svc.clusterset.local` answers
//!   both members' ready endpoints (not the one not ready, nor a slice
//!   labelled `multicluster.kubernetes.io/source-cluster`: endpoints the
//!   MCS controller copied into a member from another);
//! - an endpoint turning not ready leaves the answer;
//! - the ServiceExport deleted, the name is NXDOMAIN again.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};
use ubernetes_e2e::dig::{self, Dig, dig};
use ubernetes_e2e::eventually;
use ubernetes_e2e::federation::Federation;

const WAIT: Duration = Duration::from_secs(40);
const ZONE: &str = "clusterset.local.";
const NAME: &str = "mcs.default.svc.clusterset.local.";

const SERVICE: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: mcs, namespace: default}
spec:
  selector: {app: mcs}
  ports: [{port: 80, targetPort: 8080}]
"#;

const EXPORT: &str = r#"
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ServiceExport
metadata: {name: mcs, namespace: default}
"#;

/// An EndpointSlice of Service `mcs` named `name`: `endpoints` as
/// (address, ready), `labels` added to the service-name label.
fn slice(name: &str, endpoints: &[(&str, bool)], labels: &[(&str, &str)]) -> String {
    let mut l = json!({"kubernetes.io/service-name": "mcs"});
    for (k, v) in labels {
        l[*k] = json!(v);
    }
    let endpoints: Vec<Value> = endpoints
        .iter()
        .map(|(a, ready)| json!({"addresses": [a], "conditions": {"ready": ready}}))
        .collect();
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": "default", "labels": l},
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "", "port": 8080, "protocol": "TCP"}],
    })
    .to_string()
}

/// Wait until `NAME` answers `want` (empty: NXDOMAIN).
fn wait_answer(fed: &Federation, port: u16, want: &[&str]) -> Result<Dig> {
    let want: std::collections::BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
    let mut last = None;
    eventually(WAIT, || {
        let d = dig(port, NAME, "A", false)?;
        let ok = if want.is_empty() {
            d.status == "NXDOMAIN"
        } else {
            d.status == "NOERROR" && d.addresses() == want
        };
        last = Some(format!("{d:?}"));
        Ok(ok.then_some(d))
    })
    .with_context(|| {
        format!(
            "{NAME} never answered {want:?}; last: {last:?}\nhost log:\n{}",
            fed.host.log_tail()
        )
    })
}

/// A negative answer of the clusterset zone: authoritative, with its SOA.
fn ensure_negative_with_soa(d: &Dig) -> Result<()> {
    ensure!(d.status == "NXDOMAIN" && d.answers.is_empty(), "{d:?}");
    ensure!(d.authoritative(), "{d:?}");
    ensure!(
        d.authority
            .iter()
            .any(|(n, t, soa)| n == ZONE && t == "SOA" && soa == "ns.clusterset.local."),
        "the zone's SOA in the authority section: {d:?}"
    );
    Ok(())
}

#[test]
fn dig_gets_every_exporting_cluster_s_ready_endpoints() -> Result<()> {
    if dig::missing() {
        return Ok(());
    }
    let port = dig::free_port()?;
    let bind = format!("127.0.0.1:{port}");
    let fed = Federation::start(
        2,
        &[
            "--dns-bind",
            &bind,
            "--dns-zone",
            "example.com",
            "--dns-ttl",
            "5",
        ],
    )?;

    // The clusterset zone answers before anything is exported.
    let soa = dig(port, ZONE, "SOA", false)?;
    ensure!(
        soa.status == "NOERROR" && soa.authoritative() && soa.answers.len() == 1,
        "{soa:?}"
    );
    ensure_negative_with_soa(&dig(
        port,
        "nope.default.svc.clusterset.local.",
        "A",
        false,
    )?)?;
    let outside = dig(port, "mcs.default.svc.cluster.local.", "A", false)?;
    ensure!(outside.status == "REFUSED", "{outside:?}");

    for (i, name) in ["east", "west"].iter().enumerate() {
        fed.join(i, name, &[])?;
    }
    for name in ["east", "west"] {
        fed.wait_ready(name)?;
    }
    fed.host.kubectl_stdin_ok(&["apply", "-f", "-"], SERVICE)?;
    for i in 0..2 {
        let member = fed.member(i)?;
        eventually(WAIT, || {
            Ok(member.kubectl_get(&["service", "mcs"])?.map(drop))
        })
        .context("the Service reaches every member")?;
    }
    let east = fed.member(0)?;
    let west = fed.member(1)?;
    east.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &slice("mcs-east", &[("10.1.0.1", true), ("10.1.0.2", true)], &[]),
    )?;
    west.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &slice("mcs-west", &[("10.2.0.1", true), ("10.2.0.9", false)], &[]),
    )?;
    // What the MCS controller would copy into west from elsewhere: never
    // counted (its endpoints are another cluster's, answered from there).
    west.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &slice(
            "mcs-imported",
            &[("10.9.9.9", true)],
            &[("multicluster.kubernetes.io/source-cluster", "elsewhere")],
        ),
    )?;

    // Not exported yet: no name, though both members have endpoints.
    let before = dig(port, NAME, "A", false)?;
    ensure_negative_with_soa(&before)?;

    fed.host.kubectl_stdin_ok(&["apply", "-f", "-"], EXPORT)?;
    let d = wait_answer(&fed, port, &["10.1.0.1", "10.1.0.2", "10.2.0.1"])?;
    ensure!(d.authoritative(), "{d:?}");
    ensure!(
        dig(port, NAME, "A", true)?.addresses().len() == 3,
        "over TCP too"
    );

    // An endpoint of east turns not ready: it leaves the answer.
    east.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &slice("mcs-east", &[("10.1.0.1", true), ("10.1.0.2", false)], &[]),
    )?;
    wait_answer(&fed, port, &["10.1.0.1", "10.2.0.1"])?;

    // The export deleted: NXDOMAIN, with the zone's SOA.
    fed.host.kubectl_ok(&["delete", "serviceexport", "mcs"])?;
    let gone = wait_answer(&fed, port, &[])?;
    ensure_negative_with_soa(&gone)?;
    Ok(())
}
