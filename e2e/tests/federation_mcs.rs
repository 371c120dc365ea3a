//! The Multi-cluster Services controller end to end (SPEC §3.14, issue 27
//! item 1): a host `ubernetes serve` and two member servers (real
//! processes, the real kubectl), a federated Service `web` that both run,
//! each member with an EndpointSlice of its own (the test writes them, as a
//! member's endpoint controller would), and a ServiceExport in the
//! federation:
//!
//! - each member gets a ServiceImport `web` (ClusterSetIP, the Service's
//!   port, both clusters in its status) and the **other** member's ready
//!   endpoints in an EndpointSlice labelled
//!   `multicluster.kubernetes.io/service-name` / `source-cluster` and
//!   managed by the controller; the export is `Valid` with `NoConflicts`;
//! - an endpoint turning not ready disappears from the other member;
//! - an override giving one member another port: `Conflict=True`,
//!   `PortConflict`, the oldest export's port kept;
//! - a member unjoined takes its endpoints away from the other, which
//!   then imports from itself alone;
//! - the ServiceExport deleted: the ServiceImport and slices are gone.
//!
//! With `../shared/kube/kube.sh` (a real kube-apiserver 1.36, which has no
//! MCS CRD), a second test joins one as a member beside ours: the
//! federation installs the upstream ServiceImport CRD there, and each side
//! imports the other's endpoints. Skipped, saying so, without it.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};
use ubernetes_e2e::federation::Federation;
use ubernetes_e2e::real_kube::{KubeCluster, kube_sh};
use ubernetes_e2e::{Server, eventually};

const WAIT: Duration = Duration::from_secs(40);

const EXPORT: &str = r#"
apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ServiceExport
metadata: {name: web, namespace: default}
"#;

/// The federated Service `web`, with `overrides` (the annotation's JSON).
fn service(overrides: Option<&str>) -> String {
    let mut s = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
    });
    if let Some(o) = overrides {
        s["metadata"]["annotations"] = json!({"federation.kubernetes.io/overrides": o});
    }
    s.to_string()
}

/// A member's own EndpointSlice of `web`: `endpoints` as (address, ready).
fn slice(name: &str, endpoints: &[(&str, bool)]) -> String {
    let endpoints: Vec<Value> = endpoints
        .iter()
        .map(|(a, ready)| json!({"addresses": [a], "conditions": {"ready": ready}, "nodeName": "node-1"}))
        .collect();
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": "default",
            "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    })
    .to_string()
}

/// The addresses of the slices in `member` that hold `source`'s endpoints
/// of `web`, checking their labels.
fn imported(member: &Server, source: &str) -> Result<BTreeSet<String>> {
    let selector = format!(
        "multicluster.kubernetes.io/service-name=web,multicluster.kubernetes.io/source-cluster={source}"
    );
    let list = member
        .kubectl_get(&["endpointslices", "-l", &selector])?
        .unwrap_or_default();
    let mut out = BTreeSet::new();
    for s in list["items"].as_array().into_iter().flatten() {
        ensure!(
            s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"]
                == "mcs-controller.federation.kubernetes.io",
            "managed by the controller: {s}"
        );
        ensure!(
            s["metadata"]["labels"]
                .get("kubernetes.io/service-name")
                .is_none(),
            "not the member's own Service's slice: {s}"
        );
        for e in s["endpoints"].as_array().into_iter().flatten() {
            ensure!(e.get("nodeName").is_none(), "node names stay home: {e}");
            for a in e["addresses"].as_array().into_iter().flatten() {
                out.insert(a.as_str().unwrap_or_default().to_string());
            }
        }
    }
    Ok(out)
}

/// Wait until `member` holds exactly `want` of `source`'s endpoints.
fn wait_imported(fed: &Federation, member: &Server, source: &str, want: &[&str]) -> Result<()> {
    let want: BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
    let mut last = BTreeSet::new();
    eventually(WAIT, || {
        last = imported(member, source)?;
        Ok((last == want).then_some(()))
    })
    .with_context(|| {
        format!(
            "{source}'s endpoints never became {want:?}; last {last:?}\nhost log:\n{}",
            fed.host.log_tail()
        )
    })
}

/// Wait until the ServiceExport's condition `type_` is `status` with `reason`.
fn wait_condition(fed: &Federation, type_: &str, status: &str, reason: &str) -> Result<Value> {
    let mut last = Value::Null;
    eventually(WAIT, || {
        let export = fed
            .host
            .kubectl_get(&["serviceexport", "web"])?
            .unwrap_or_default();
        let c = export["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == type_)
            .cloned()
            .unwrap_or_default();
        last = export["status"].clone();
        Ok((c["status"] == status && c["reason"] == reason).then_some(c))
    })
    .with_context(|| format!("no condition {type_}={status} ({reason}); last status {last}"))
}

/// Wait until the federation has an Event with `reason` about the
/// ServiceExport `web`.
fn wait_event(fed: &Federation, reason: &str) -> Result<()> {
    eventually(WAIT, || {
        let events = fed.host.kubectl_get(&["events"])?.unwrap_or_default();
        let found = events["items"].as_array().into_iter().flatten().any(|e| {
            e["reason"] == reason
                && e["involvedObject"]["kind"] == "ServiceExport"
                && e["involvedObject"]["name"] == "web"
        });
        Ok(found.then_some(()))
    })
    .with_context(|| format!("no {reason} Event on the ServiceExport"))
}

/// Wait until `member`'s ServiceImport `web` satisfies `ok` (or, with
/// `None`, is gone).
fn wait_import(member: &Server, ok: Option<&dyn Fn(&Value) -> bool>) -> Result<()> {
    let mut last = None;
    eventually(WAIT, || {
        let import = member.kubectl_get(&["serviceimport", "web"])?;
        let done = match (ok, &import) {
            (None, None) => true,
            (Some(f), Some(i)) => f(i),
            _ => false,
        };
        last = import;
        Ok(done.then_some(()))
    })
    .with_context(|| format!("the ServiceImport never got there; last {last:?}"))
}

fn clusters(import: &Value) -> Vec<&str> {
    import["status"]["clusters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["cluster"].as_str())
        .collect()
}

fn ports(import: &Value) -> Vec<i64> {
    import["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["port"].as_i64())
        .collect()
}

#[test]
fn exported_services_import_the_other_clusters_ready_endpoints() -> Result<()> {
    let fed = Federation::start(2, &[])?;
    for (i, name) in ["east", "west"].iter().enumerate() {
        fed.join(i, name, &[])?;
    }
    for name in ["east", "west"] {
        fed.wait_ready(name)?;
    }
    let east = fed.member(0)?;
    let west = fed.member(1)?;

    // Exported before the Service exists: not valid.
    fed.host.kubectl_stdin_ok(&["apply", "-f", "-"], EXPORT)?;
    wait_condition(&fed, "Valid", "False", "NoService")?;

    fed.host
        .kubectl_stdin_ok(&["apply", "-f", "-"], &service(None))?;
    for m in [east, west] {
        eventually(WAIT, || Ok(m.kubectl_get(&["service", "web"])?.map(drop)))
            .context("the Service reaches every member")?;
    }
    east.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &slice("web-east", &[("10.1.0.1", true), ("10.1.0.2", true)]),
    )?;
    west.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &slice("web-west", &[("10.2.0.1", true), ("10.2.0.9", false)]),
    )?;

    // Each member imports the other's ready endpoints, and the ServiceImport.
    wait_imported(&fed, east, "west", &["10.2.0.1"])?;
    wait_imported(&fed, west, "east", &["10.1.0.1", "10.1.0.2"])?;
    ensure!(imported(east, "east")?.is_empty() && imported(west, "west")?.is_empty());
    for m in [east, west] {
        wait_import(
            m,
            Some(&|i: &Value| {
                i["spec"]["type"] == "ClusterSetIP"
                    && ports(i) == [80]
                    && clusters(i) == ["east", "west"]
            }),
        )?;
    }
    let valid = wait_condition(&fed, "Valid", "True", "Valid")?;
    ensure!(valid["lastTransitionTime"].is_string(), "{valid}");
    wait_condition(&fed, "Conflict", "False", "NoConflicts")?;
    wait_condition(&fed, "Ready", "True", "Exported")?;
    wait_event(&fed, "ServiceImportCreated")?;
    // kubectl's columns for the kind (the CRD's printer columns).
    let table = east.kubectl_ok(&["get", "serviceimports"])?;
    ensure!(
        table.contains("TYPE") && table.contains("ClusterSetIP"),
        "{table}"
    );

    // An endpoint of east turns not ready: it leaves west.
    east.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &slice("web-east", &[("10.1.0.1", true), ("10.1.0.2", false)]),
    )?;
    wait_imported(&fed, west, "east", &["10.1.0.1"])?;

    // west's copy gets another port (an override): a port conflict, the
    // oldest export's port kept (same age: the first cluster by name).
    fed.host.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &service(Some(
            r#"{"west": [{"op": "replace", "path": "/spec/ports/0/port", "value": 81}]}"#,
        )),
    )?;
    let conflict = wait_condition(&fed, "Conflict", "True", "PortConflict")?;
    ensure!(
        conflict["message"]
            .as_str()
            .unwrap_or_default()
            .contains("81"),
        "the message names the port: {conflict}"
    );
    wait_import(west, Some(&|i: &Value| ports(i) == [80]))?;
    wait_event(&fed, "PortConflict")?;
    // Back in agreement.
    fed.host
        .kubectl_stdin_ok(&["apply", "-f", "-"], &service(None))?;
    wait_condition(&fed, "Conflict", "False", "NoConflicts")?;

    // west leaves the federation: east no longer imports its endpoints.
    fed.unjoin("west")?;
    wait_imported(&fed, east, "west", &[])?;
    wait_import(east, Some(&|i: &Value| clusters(i) == ["east"]))?;

    // The export deleted: east's ServiceImport goes.
    fed.host.kubectl_ok(&["delete", "serviceexport", "web"])?;
    wait_import(east, None)?;
    Ok(())
}

/// kubectl against the real cluster `kube` (its own kubeconfig and context).
fn real_kubectl(kube: &KubeCluster, _cache: &Path, args: &[&str]) -> Result<Output> {
    kube.kubectl(args)
}

/// `kubectl get ARGS -o json` against the real cluster; `None` on failure.
fn real_get(kube: &KubeCluster, _cache: &Path, args: &[&str]) -> Result<Option<Value>> {
    kube.get(args)
}

#[test]
fn a_real_kube_apiserver_member_gets_the_crd_and_imports() -> Result<()> {
    let Some(script) = kube_sh() else {
        eprintln!(
            "SKIPPED: shared/kube/kube.sh not found beside the checkout (nor $UBERNETES_KUBE_SH): \
             no real kube-apiserver to export between"
        );
        return Ok(());
    };
    let name = format!("mcs{}", std::process::id());
    let kube = KubeCluster::up(&script, &name, true)?;
    let fed = Federation::start(1, &[])?;
    fed.join(0, "east", &[])?;
    let dir = tempfile::tempdir()?;
    let cache = dir.path().join("cache");
    kube.join(&fed.host, "real")?;
    for c in ["east", "real"] {
        fed.wait_ready(c)?;
    }
    ensure!(
        real_get(
            &kube,
            &cache,
            &["crd", "serviceimports.multicluster.x-k8s.io"]
        )?
        .is_none(),
        "kube-apiserver has no MCS CRD of its own"
    );
    fed.host
        .kubectl_stdin_ok(&["apply", "-f", "-"], &service(None))?;
    let east = fed.member(0)?;
    eventually(WAIT, || {
        Ok(real_get(&kube, &cache, &["service", "web"])?.map(drop))
    })
    .with_context(|| {
        format!(
            "the Service reaches the real member\n{}",
            fed.host.log_tail()
        )
    })?;
    east.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &slice("web-east", &[("10.1.0.1", true)]),
    )?;
    let file = dir.path().join("slice.json");
    std::fs::write(
        &file,
        slice("web-real", &[("10.3.0.1", true), ("10.3.0.2", false)]),
    )?;
    let out = real_kubectl(&kube, &cache, &["apply", "-f", &file.to_string_lossy()])?;
    ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    fed.host.kubectl_stdin_ok(&["apply", "-f", "-"], EXPORT)?;

    // The real member gets the CRD, its ServiceImport and east's endpoints.
    let mut last = None;
    eventually(Duration::from_secs(60), || {
        let import = real_get(&kube, &cache, &["serviceimport", "web"])?;
        let ok = import
            .as_ref()
            .is_some_and(|i| clusters(i) == ["east", "real"] && ports(i) == [80]);
        last = import;
        Ok(ok.then_some(()))
    })
    .with_context(|| {
        format!(
            "no ServiceImport in the real member; last {last:?}\nhost log:\n{}",
            fed.host.log_tail()
        )
    })?;
    eventually(WAIT, || {
        let list = real_get(
            &kube,
            &cache,
            &[
                "endpointslices",
                "-l",
                "multicluster.kubernetes.io/source-cluster=east",
            ],
        )?
        .unwrap_or_default();
        let addrs: Vec<&str> = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|s| s["endpoints"].as_array().into_iter().flatten())
            .filter_map(|e| e["addresses"][0].as_str())
            .collect();
        Ok((addrs == ["10.1.0.1"]).then_some(()))
    })
    .context("east's endpoints in the real member")?;
    wait_imported(&fed, east, "real", &["10.3.0.1"])?;
    Ok(())
}
