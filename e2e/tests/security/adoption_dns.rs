//! Issue 28, items 4 and 5: the federation takes nothing over that it did
//! not create, and no tenant takes another's DNS name. One host (with the
//! embedded DNS server) and one member, real processes:
//!
//! - a member's own namespace `tenant-x` is not adopted by default (the
//!   record says Failed and how to adopt, a `FailedAdoptInCluster` event,
//!   the member's namespace unchanged) and deleting the federated one
//!   leaves it; `istio-system` (the member namespace denylist) is never
//!   written, not even with the adopt annotation (a `NotPropagated`
//!   event says why); `tenant-y` with the adopt annotation is adopted;
//! - two Ingresses claiming one host: the older claim (in namespace
//!   `zzz-owner`) keeps it, the newer one (in `aaa-taker`, first by name)
//!   gets a `DNSNameConflict` event and condition on its propagation
//!   record, and only the owner's address is
//!   published (its DNSEndpoint) and answered (`dig`, when installed).

use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};
use ubernetes_e2e::federation::{Federation, propagation_record, propagation_state};
use ubernetes_e2e::{Server, eventually};

const WAIT: Duration = Duration::from_secs(40);
const MANAGED: &str = "federation.kubernetes.io/managed";
const RESOLUTION: &str = "federation.kubernetes.io/conflict-resolution";

fn label<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.pointer("/metadata/labels")?.get(key)?.as_str()
}

fn namespace(name: &str, labels: Value, annotations: Value) -> String {
    json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "labels": labels, "annotations": annotations}})
    .to_string()
}

fn apply(server: &Server, manifest: &str) -> Result<()> {
    server.kubectl_stdin_ok(&["apply", "-f", "-"], manifest)?;
    Ok(())
}

/// The events in `ns` about `name` with `reason`.
fn events(host: &Server, ns: &str, name: &str, reason: &str) -> Result<Vec<Value>> {
    let list = host.kubectl_get(&["events", "-n", ns])?.unwrap_or_default();
    Ok(list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["involvedObject"]["name"] == name && e["reason"] == reason)
        .cloned()
        .collect())
}

fn wait_event(host: &Server, ns: &str, name: &str, reason: &str) -> Result<Value> {
    eventually(WAIT, || {
        Ok(events(host, ns, name, reason)?.into_iter().next())
    })
    .with_context(|| format!("no {reason} event on {ns}/{name}"))
}

/// The member's namespace `name`, which must be the member's own: its
/// marker label, nothing of the federation's.
fn member_namespace_untouched(member: &Server, name: &str) -> Result<()> {
    let ns = member
        .kubectl_get(&["namespace", name])?
        .with_context(|| format!("the member's namespace {name} is gone"))?;
    ensure!(
        label(&ns, "marker") == Some("member")
            && label(&ns, MANAGED).is_none()
            && label(&ns, "from").is_none(),
        "the member's namespace {name} was written by the federation: {ns}"
    );
    Ok(())
}

fn ingress(ns: &str, name: &str) -> String {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"rules": [{"host": "shop.example.com"}]}})
    .to_string()
}

/// A loopback port free for DNS over UDP and TCP.
fn dns_port() -> Result<u16> {
    eventually(Duration::from_secs(5), || {
        let port = std::net::UdpSocket::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        Ok(std::net::TcpListener::bind(("127.0.0.1", port))
            .is_ok()
            .then_some(port))
    })
}

#[test]
fn nothing_is_adopted_unasked_and_the_oldest_dns_claim_wins() -> Result<()> {
    let port = dns_port()?;
    let bind = format!("127.0.0.1:{port}");
    let fed = Federation::start(1, &["--dns-bind", &bind, "--dns-zone", "example.com"])?;
    let (host, member) = (&fed.host, fed.member(0)?);
    for ns in ["tenant-x", "tenant-y", "istio-system"] {
        apply(
            member,
            &namespace(ns, json!({"marker": "member"}), json!({})),
        )?;
    }
    fed.join(0, "m1", &[])?;
    fed.wait_ready("m1")?;

    // Created in the federation: the two namespaces of the DNS part, the
    // member's namespaces of the same names, and the older Ingress.
    for ns in ["zzz-owner", "aaa-taker"] {
        apply(host, &namespace(ns, json!({}), json!({})))?;
    }
    for ns in ["tenant-x", "istio-system"] {
        apply(
            host,
            &namespace(ns, json!({"from": "federation"}), json!({})),
        )?;
    }
    apply(host, &ingress("zzz-owner", "owner"))?;
    // creationTimestamp has seconds: the newer claim is a second younger.
    std::thread::sleep(Duration::from_millis(1100));
    apply(host, &ingress("aaa-taker", "taker"))?;

    // Not adopted by default: Failed, with how to adopt, and an event.
    let state = eventually(WAIT, || {
        let s = propagation_state(host, "namespaces", None, "tenant-x")?;
        Ok((s["m1"]["state"] == "Failed").then_some(s))
    })
    .context("the conflict on tenant-x is not in its record")?;
    let message = state["m1"]["message"].as_str().unwrap_or_default();
    ensure!(
        message.contains("Namespace tenant-x already exists in cluster m1")
            && message.contains(&format!("{RESOLUTION}=adopt"))
            && state["m1"].get("hash").is_none(),
        "{state}"
    );
    let event = wait_event(host, "default", "tenant-x", "FailedAdoptInCluster")?;
    ensure!(event["type"] == "Warning", "{event}");
    member_namespace_untouched(member, "tenant-x")?;

    // The denylist: istio-system has no record, says why, is not written.
    let event = wait_event(host, "default", "istio-system", "NotPropagated")?;
    let text = event["message"].as_str().unwrap_or_default();
    ensure!(
        text.contains("\"*-system\"") && text.contains("--member-namespace-denylist"),
        "{event}"
    );
    ensure!(propagation_record(host, "namespaces", None, "istio-system")?.is_none());

    // With the adopt annotation: istio-system still never written,
    // tenant-y (created after it, same controller) adopted.
    let adopt = json!({RESOLUTION: "adopt"});
    apply(
        host,
        &namespace("istio-system", json!({"from": "federation"}), adopt.clone()),
    )?;
    apply(
        host,
        &namespace("tenant-y", json!({"from": "federation"}), adopt),
    )?;
    eventually(WAIT, || {
        let ns = member.kubectl_get(&["namespace", "tenant-y"])?;
        Ok(ns
            .filter(|n| label(n, MANAGED) == Some("true") && label(n, "from") == Some("federation"))
            .map(|_| ()))
    })
    .context("tenant-y with the adopt annotation was not adopted")?;
    wait_event(host, "default", "tenant-y", "Adopted")?;
    member_namespace_untouched(member, "istio-system")?;
    ensure!(propagation_record(host, "namespaces", None, "istio-system")?.is_none());

    // Deleting the federated tenant-x leaves the member's.
    host.kubectl_ok(&["delete", "namespace", "tenant-x", "--wait=true"])?;
    eventually(WAIT, || {
        Ok(propagation_record(host, "namespaces", None, "tenant-x")?
            .is_none()
            .then_some(()))
    })
    .context("tenant-x's record outlived it")?;
    member_namespace_untouched(member, "tenant-x")?;

    // DNS: both Ingresses reach the member; their copies get addresses.
    for (ns, name, ip) in [
        ("zzz-owner", "owner", "192.0.2.10"),
        ("aaa-taker", "taker", "192.0.2.20"),
    ] {
        eventually(WAIT, || {
            Ok(member
                .kubectl_get(&["ingress", name, "-n", ns])?
                .map(|_| ()))
        })
        .with_context(|| format!("Ingress {ns}/{name} never reached the member"))?;
        member.kubectl_ok(&[
            "patch",
            "ingress",
            name,
            "-n",
            ns,
            "--subresource=status",
            "--type=merge",
            "-p",
            &json!({"status": {"loadBalancer": {"ingress": [{"ip": ip}]}}}).to_string(),
        ])?;
    }
    // The owner's DNSEndpoint publishes the host with its address; the
    // newer claim's publishes nothing.
    let endpoints = |ns: &str, name: &str| -> Result<Value> {
        Ok(host
            .kubectl_get(&["dnsendpoints.externaldns.k8s.io", name, "-n", ns])?
            .map(|d| d["spec"]["endpoints"].clone())
            .unwrap_or(Value::Null))
    };
    eventually(WAIT, || {
        let owner = endpoints("zzz-owner", "owner-ingress")?;
        Ok((owner
            == json!([{"dnsName": "shop.example.com", "recordType": "A",
                "targets": ["192.0.2.10"], "recordTTL": 180}]))
        .then_some(()))
    })
    .context("the older Ingress does not publish its host")?;
    let taker = endpoints("aaa-taker", "taker-ingress")?;
    ensure!(taker == json!([]), "the newer claim is published: {taker}");
    let event = wait_event(host, "aaa-taker", "taker", "DNSNameConflict")?;
    let text = event["message"].as_str().unwrap_or_default();
    ensure!(
        event["type"] == "Warning"
            && text.contains("host shop.example.com is claimed by Ingress zzz-owner/owner"),
        "{event}"
    );
    ensure!(
        events(host, "zzz-owner", "owner", "DNSNameConflict")?.is_empty(),
        "the owner was told it lost"
    );
    // The loser's record (the user's object is never written) says so too.
    let condition = eventually(WAIT, || {
        let record = propagation_record(
            host,
            "ingresses.networking.k8s.io",
            Some("aaa-taker"),
            "taker",
        )?;
        Ok(record.and_then(|r| {
            r.pointer("/status/conditions")?
                .as_array()?
                .iter()
                .find(|c| c["type"] == "DNSNameConflict")
                .cloned()
        }))
    })
    .context("no DNSNameConflict condition on the newer Ingress's record")?;
    ensure!(
        condition["status"] == "True" && condition["message"] == event["message"],
        "{condition}"
    );
    let owner = propagation_record(
        host,
        "ingresses.networking.k8s.io",
        Some("zzz-owner"),
        "owner",
    )?
    .context("the owner's record")?;
    ensure!(owner.pointer("/status/conditions").is_none(), "{owner}");
    // What the embedded server answers, with the real dig when installed.
    match Command::new("dig")
        .args(["@127.0.0.1", "-p", &port.to_string()])
        .args(["shop.example.com.", "A", "+short", "+time=2", "+tries=1"])
        .output()
    {
        Ok(out) => {
            let answer = String::from_utf8_lossy(&out.stdout);
            ensure!(
                out.status.success() && answer.trim() == "192.0.2.10",
                "dig answered {answer:?}"
            );
        }
        Err(_) => eprintln!("SKIPPED (the dig part): `dig` is not installed (dnsutils)"),
    }
    Ok(())
}
