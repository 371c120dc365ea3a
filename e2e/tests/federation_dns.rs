//! Routing across clusters by DNS end to end (SPEC §3.9, issue 13): a host
//! `ubernetes serve --dns-bind …` and three member servers (two regions,
//! three zones, from the members' Node labels), a LoadBalancer Service
//! whose member copies get addresses (the test writes each member's
//! Service status and EndpointSlices, as a member's cloud controller and
//! endpoint controller would), and the real `dig` (Debian's dnsutils,
//! installed by scripts/test.sh) asking the embedded server:
//!
//! - A records at zone, region and global level, a cluster spanning two
//!   zones in both, a CNAME up where a zone has no healthy endpoint;
//! - a member whose Service has no ready endpoint leaves the answers while
//!   its cluster stays Ready; a killed member leaves once its Cluster is
//!   not Ready and comes back when restarted;
//! - `weighted` answers put each cluster first in proportion to its ready
//!   endpoints; `failover` answers only the primary until it has none;
//! - an Ingress host inside the zone answers its member copies'
//!   load-balancer addresses, less those whose backend Service has no
//!   ready endpoint there; a host outside the zone is not served;
//! - the DNSEndpoint objects (ExternalDNS's CRD, installed by the server)
//!   list exactly the names and targets `dig` gets.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};
use ubernetes_e2e::dig::{self, Dig, dig};
use ubernetes_e2e::federation::{Federation, condition};
use ubernetes_e2e::{Server, eventually};

const WAIT: Duration = Duration::from_secs(40);

const SERVICE: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  type: LoadBalancer
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
"#;

// Cluster name, zones (its Nodes' labels), region, load-balancer IP.
const CLUSTERS: [(&str, &[&str], &str, &str); 3] = [
    ("east-a", &["east-1", "east-2"], "east", "192.0.2.1"),
    ("east-b", &["east-2"], "east", "192.0.2.2"),
    ("west-a", &["west-1"], "west", "192.0.2.3"),
];

const INGRESS: &str = r#"
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop, namespace: default}
spec:
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
  - host: shop.example.org
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
"#;

// The Ingress's load-balancer IP in each cluster of CLUSTERS.
const INGRESS_IPS: [&str; 3] = ["198.51.100.1", "198.51.100.2", "198.51.100.3"];
const SHOP: &str = "shop.example.com.";

const GLOBAL: &str = "web.default.fed.svc.example.com.";
const EAST: &str = "web.default.fed.svc.east.example.com.";
const WEST: &str = "web.default.fed.svc.west.example.com.";
const EAST_1: &str = "web.default.fed.svc.east-1.east.example.com.";
const EAST_2: &str = "web.default.fed.svc.east-2.east.example.com.";
const WEST_1: &str = "web.default.fed.svc.west-1.west.example.com.";

fn set(ips: &[&str]) -> BTreeSet<String> {
    ips.iter().map(|s| s.to_string()).collect()
}

/// Wait until `name` answers exactly the addresses `ips`.
fn wait_addresses(fed: &Federation, port: u16, name: &str, ips: &[&str]) -> Result<Dig> {
    let want = set(ips);
    let mut last = None;
    eventually(WAIT, || {
        let d = dig(port, name, "A", false)?;
        let ok = d.status == "NOERROR" && d.addresses() == want;
        last = Some(format!("{d:?}"));
        Ok(ok.then_some(d))
    })
    .with_context(|| {
        format!(
            "{name} never answered {want:?}; last: {last:?}\nhost log:\n{}",
            fed.host.log_tail()
        )
    })
}

/// A member's EndpointSlice for `web` with `ready` ready endpoints and one
/// not ready.
fn endpoint_slice(ready: usize) -> String {
    let mut endpoints: Vec<Value> = (0..ready)
        .map(|i| json!({"addresses": [format!("10.1.0.{}", i + 1)], "conditions": {"ready": true}}))
        .collect();
    endpoints.push(json!({"addresses": ["10.1.1.1"], "conditions": {"ready": false}}));
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-abcde", "namespace": "default",
            "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "", "port": 8080, "protocol": "TCP"}],
    })
    .to_string()
}

fn set_ready_endpoints(member: &Server, ready: usize) -> Result<()> {
    member.kubectl_stdin_ok(&["apply", "-f", "-"], &endpoint_slice(ready))?;
    Ok(())
}

/// The DNSEndpoints the federation wrote (`-l federation.kubernetes.io/dns=true`)
/// list, per object, exactly the names `want` and, for each name inside
/// the zone, exactly the records `dig` gets; the names outside the zone
/// are not served (REFUSED).
fn dns_endpoints_match_dig(
    fed: &Federation,
    port: u16,
    want: &BTreeMap<&str, BTreeSet<String>>,
) -> Result<()> {
    let mut last = String::new();
    eventually(WAIT, || {
        let out = fed.host.kubectl_ok(&[
            "get",
            "dnsendpoints",
            "-A",
            "-l",
            "federation.kubernetes.io/dns=true",
            "-o",
            "json",
        ])?;
        let list: Value = serde_json::from_str(&out)?;
        let mut names: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        let mut mismatch = Vec::new();
        for item in list["items"].as_array().into_iter().flatten() {
            let obj = item["metadata"]["name"].as_str().unwrap_or_default();
            let Some((key, _)) = want.get_key_value(obj) else {
                mismatch.push(format!("unexpected DNSEndpoint {obj}"));
                continue;
            };
            let entry = names.entry(key).or_default();
            for e in item["spec"]["endpoints"].as_array().into_iter().flatten() {
                let name = format!("{}.", e["dnsName"].as_str().unwrap_or_default());
                let kind = e["recordType"].as_str().unwrap_or_default();
                let targets: BTreeSet<String> = e["targets"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|t| t.as_str())
                    .map(|t| t.trim_end_matches('.').to_string())
                    .collect();
                entry.insert(name.clone());
                let d = dig(port, &name, kind, false)?;
                if !name.ends_with(".example.com.") {
                    if d.status != "REFUSED" {
                        mismatch.push(format!("{name} is outside the zone: {d:?}"));
                    }
                    continue;
                }
                let got: BTreeSet<String> = d
                    .answers
                    .iter()
                    .filter(|(n, t, _)| n == &name && t == kind)
                    .map(|(_, _, data)| data.trim_end_matches('.').to_string())
                    .collect();
                if got != targets {
                    mismatch.push(format!("{name} {kind}: listed {targets:?}, dig {got:?}"));
                }
            }
        }
        let names: BTreeMap<&str, BTreeSet<String>> = names;
        if &names != want {
            mismatch.push(format!("names listed {names:?}, want {want:?}"));
        }
        last = mismatch.join("; ");
        Ok(mismatch.is_empty().then_some(()))
    })
    .with_context(|| format!("DNSEndpoints differ from the answers: {last}"))
}

fn annotate(host: &Server, annotations: &[&str]) -> Result<()> {
    let mut args = vec!["annotate", "service", "web", "--overwrite"];
    args.extend_from_slice(annotations);
    host.kubectl_ok(&args)?;
    Ok(())
}

#[test]
fn dig_gets_healthy_addresses_at_every_level() -> Result<()> {
    if dig::missing() {
        return Ok(());
    }
    let port = dig::free_port()?;
    let bind = format!("127.0.0.1:{port}");
    let mut fed = Federation::start(
        3,
        &[
            "--dns-bind",
            &bind,
            "--dns-zone",
            "example.com",
            "--federation-name",
            "fed",
            "--dns-ttl",
            "30",
        ],
    )?;

    // The zone itself answers before any Service: SOA, NS, no recursion.
    let soa = dig(port, "example.com.", "SOA", false)?;
    ensure!(soa.status == "NOERROR" && soa.answers.len() == 1, "{soa:?}");
    ensure!(soa.flags.split_whitespace().any(|f| f == "aa"), "{soa:?}");
    let refused = dig(port, "kubernetes.io.", "A", false)?;
    ensure!(refused.status == "REFUSED", "{refused:?}");

    for (i, (name, zones, region, _)) in CLUSTERS.iter().enumerate() {
        let nodes: Vec<(String, &str, &str)> = zones
            .iter()
            .enumerate()
            .map(|(n, z)| (format!("{name}-node-{n}"), *z, *region))
            .collect();
        let nodes: Vec<(&str, &str, &str)> =
            nodes.iter().map(|(n, z, r)| (n.as_str(), *z, *r)).collect();
        fed.create_nodes(i, &nodes)?;
        fed.join(i, name, &[])?;
    }
    for (name, zones, region, _) in CLUSTERS {
        fed.wait_ready(name)?;
        eventually(WAIT, || {
            let c = fed.cluster(name)?.context("cluster")?;
            let ok = c.pointer("/status/region") == Some(&json!(region))
                && c.pointer("/status/zones") == Some(&json!(zones));
            Ok(ok.then_some(()))
        })
        .with_context(|| format!("{name}: zones and region never reported"))?;
    }

    fed.host.kubectl_stdin_ok(&["apply", "-f", "-"], SERVICE)?;
    for (i, (_, _, _, ip)) in CLUSTERS.iter().enumerate() {
        let member = fed.member(i)?;
        eventually(WAIT, || {
            Ok(member
                .kubectl(&["get", "service", "web"])?
                .status
                .success()
                .then_some(()))
        })
        .context("the Service reaches every member")?;
        member.kubectl_ok(&[
            "patch",
            "service",
            "web",
            "--subresource=status",
            "--type=merge",
            "-p",
            &json!({"status": {"loadBalancer": {"ingress": [{"ip": ip}]}}}).to_string(),
        ])?;
        set_ready_endpoints(member, 1)?;
    }

    // Every level, every zone of the cluster spanning two.
    wait_addresses(&fed, port, GLOBAL, &["192.0.2.1", "192.0.2.2", "192.0.2.3"])?;
    wait_addresses(&fed, port, EAST, &["192.0.2.1", "192.0.2.2"])?;
    wait_addresses(&fed, port, WEST, &["192.0.2.3"])?;
    wait_addresses(&fed, port, EAST_1, &["192.0.2.1"])?;
    wait_addresses(&fed, port, EAST_2, &["192.0.2.1", "192.0.2.2"])?;
    let west1 = wait_addresses(&fed, port, WEST_1, &["192.0.2.3"])?;
    ensure!(
        west1.flags.split_whitespace().any(|f| f == "aa"),
        "{west1:?}"
    );
    ensure!(
        !west1.flags.split_whitespace().any(|f| f == "ra"),
        "no recursion: {west1:?}"
    );
    // Over TCP too.
    let tcp = dig(port, GLOBAL, "A", true)?;
    ensure!(tcp.addresses().len() == 3, "{tcp:?}");
    // A name that does not exist, and one that exists without an A.
    let nx = dig(port, "db.default.fed.svc.example.com.", "A", false)?;
    ensure!(nx.status == "NXDOMAIN", "{nx:?}");
    let nodata = dig(port, GLOBAL, "MX", false)?;
    ensure!(
        nodata.status == "NOERROR" && nodata.answers.is_empty(),
        "{nodata:?}"
    );

    // An Ingress: its host inside the zone answers every member copy's
    // load-balancer address; the host outside the zone is not served.
    fed.host.kubectl_stdin_ok(&["apply", "-f", "-"], INGRESS)?;
    for (i, ip) in INGRESS_IPS.iter().enumerate() {
        let member = fed.member(i)?;
        eventually(WAIT, || {
            Ok(member
                .kubectl(&["get", "ingress", "shop"])?
                .status
                .success()
                .then_some(()))
        })
        .context("the Ingress reaches every member")?;
        member.kubectl_ok(&[
            "patch",
            "ingress",
            "shop",
            "--subresource=status",
            "--type=merge",
            "-p",
            &json!({"status": {"loadBalancer": {"ingress": [{"ip": ip}]}}}).to_string(),
        ])?;
    }
    wait_addresses(&fed, port, SHOP, &INGRESS_IPS)?;
    // The federated Ingress shows the union of its copies' addresses.
    eventually(WAIT, || {
        let ips = fed.host.kubectl_ok(&[
            "get",
            "ingress",
            "shop",
            "-o",
            "jsonpath={.status.loadBalancer.ingress[*].ip}",
        ])?;
        let got: BTreeSet<String> = ips.split_whitespace().map(str::to_string).collect();
        Ok((got == set(&INGRESS_IPS)).then_some(()))
    })
    .context("the federated Ingress never showed every copy's address")?;
    let outside = dig(port, "shop.example.org.", "A", false)?;
    ensure!(outside.status == "REFUSED", "{outside:?}");

    // west-a's Service has no ready endpoint: its zone CNAMEs up to the
    // region, the region to the global name, which answers the others;
    // west-a stays Ready.
    set_ready_endpoints(fed.member(2)?, 0)?;
    wait_addresses(&fed, port, GLOBAL, &["192.0.2.1", "192.0.2.2"])?;
    let chain = wait_addresses(&fed, port, WEST_1, &["192.0.2.1", "192.0.2.2"])?;
    ensure!(
        chain.cnames()
            == [
                (WEST_1.to_string(), WEST.to_string()),
                (WEST.to_string(), GLOBAL.to_string())
            ],
        "{chain:?}"
    );
    let west = fed.cluster("west-a")?.context("west-a")?;
    ensure!(
        condition(&west, "Ready").is_some_and(|c| c["status"] == "True"),
        "west-a must stay Ready: {west}"
    );
    // The Ingress sends to that Service: west-a's Ingress address goes too.
    wait_addresses(&fed, port, SHOP, &INGRESS_IPS[..2])?;
    // The DNSEndpoints list exactly what the server answers, CNAMEs too,
    // and the Ingress's host outside the zone.
    let service_names: BTreeSet<String> = [GLOBAL, EAST, WEST, EAST_1, EAST_2, WEST_1]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut want = BTreeMap::from([
        ("web-service", service_names),
        ("shop-ingress", set(&[SHOP, "shop.example.org."])),
    ]);
    dns_endpoints_match_dig(&fed, port, &want)?;
    let owner = fed.host.kubectl_ok(&[
        "get",
        "dnsendpoint",
        "web-service",
        "-o",
        "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}",
    ])?;
    ensure!(owner.trim() == "Service/web", "{owner}");
    set_ready_endpoints(fed.member(2)?, 1)?;
    wait_addresses(&fed, port, WEST_1, &["192.0.2.3"])?;
    wait_addresses(&fed, port, SHOP, &INGRESS_IPS)?;

    // east-b killed: its address leaves once its Cluster is not Ready.
    fed.member_mut(1)?.kill9();
    fed.wait_condition("east-b", "Ready", "Unknown", None, WAIT)?;
    wait_addresses(&fed, port, GLOBAL, &["192.0.2.1", "192.0.2.3"])?;
    wait_addresses(&fed, port, EAST_2, &["192.0.2.1"])?;
    wait_addresses(&fed, port, EAST, &["192.0.2.1"])?;
    // Restarted: back.
    fed.member_mut(1)?.crash_and_restart()?;
    fed.wait_ready("east-b")?;
    wait_addresses(&fed, port, GLOBAL, &["192.0.2.1", "192.0.2.2", "192.0.2.3"])?;
    wait_addresses(&fed, port, EAST_2, &["192.0.2.1", "192.0.2.2"])?;

    // weighted: ready endpoints 3, 1, 4: each cluster first in proportion.
    let weights = [3usize, 1, 4];
    for (i, w) in weights.iter().enumerate() {
        set_ready_endpoints(fed.member(i)?, *w)?;
    }
    annotate(&fed.host, &["federation.kubernetes.io/dns-policy=weighted"])?;
    // Wait for the weighted table: answers whose first address varies.
    eventually(WAIT, || {
        let firsts: BTreeSet<String> = (0..30)
            .map(|_| dig(port, GLOBAL, "A", false).map(|d| d.first_address().unwrap_or_default()))
            .collect::<Result<_>>()?;
        Ok((firsts.len() == 3).then_some(()))
    })
    .context("weighted answers never varied")?;
    // Give the last EndpointSlice changes time to land in one table.
    std::thread::sleep(Duration::from_secs(2));
    let n = 300;
    let mut first: BTreeMap<String, usize> = BTreeMap::new();
    for _ in 0..n {
        let d = dig(port, GLOBAL, "A", false)?;
        ensure!(d.addresses().len() == 3, "every address listed: {d:?}");
        *first
            .entry(d.first_address().unwrap_or_default())
            .or_default() += 1;
    }
    let total: usize = weights.iter().sum();
    for (i, (_, _, _, ip)) in CLUSTERS.iter().enumerate() {
        let share = first.get(*ip).copied().unwrap_or(0) as f64 / n as f64;
        let want = weights[i] as f64 / total as f64;
        ensure!(
            (share - want).abs() < 0.1,
            "{ip} first in {share:.2} of answers, want {want:.2} (ready endpoints {weights:?}): {first:?}"
        );
    }

    // failover to west-a: only it, until it has no ready endpoint.
    annotate(
        &fed.host,
        &[
            "federation.kubernetes.io/dns-policy=failover",
            "federation.kubernetes.io/dns-primary-cluster=west-a",
        ],
    )?;
    wait_addresses(&fed, port, GLOBAL, &["192.0.2.3"])?;
    let east1 = wait_addresses(&fed, port, EAST_1, &["192.0.2.3"])?;
    ensure!(
        east1.cnames().first() == Some(&(EAST_1.to_string(), EAST.to_string())),
        "{east1:?}"
    );
    set_ready_endpoints(fed.member(2)?, 0)?;
    wait_addresses(&fed, port, GLOBAL, &["192.0.2.1", "192.0.2.2"])?;
    set_ready_endpoints(fed.member(2)?, 2)?;
    wait_addresses(&fed, port, GLOBAL, &["192.0.2.3"])?;

    // The Service deleted: its names go.
    fed.host.kubectl_ok(&["delete", "service", "web"])?;
    eventually(WAIT, || {
        let d = dig(port, GLOBAL, "A", false)?;
        Ok((d.status == "NXDOMAIN").then_some(()))
    })
    .context("the deleted Service's name stays")?;
    want.remove("web-service");
    dns_endpoints_match_dig(&fed, port, &want)?;
    Ok(())
}
