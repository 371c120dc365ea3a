//! kube-controller-manager's endpoints, endpointslice, endpointslice-mirroring
//! and disruption controllers over the federation's own API (issue 22 item
//! 3), with the real kubectl against the real binary:
//!
//! - a Service with a selector gets an Endpoints of its name (the Service's
//!   labels, the trigger-time annotation, no subsets while no Pod matches)
//!   and a placeholder EndpointSlice (`managed-by:
//!   endpointslice-controller.k8s.io`, owned by the Service); a matching
//!   Pod with an IP and Ready becomes an address and an endpoint; both go
//!   with the Service;
//! - a user's Endpoints of a Service without a selector is mirrored into an
//!   EndpointSlice (`managed-by: endpointslicemirroring-controller.k8s.io`)
//!   through create, update and delete; one labelled skip-mirror is not,
//!   nor one without a Service, which is left alone;
//! - in standalone mode (no Cluster) a PodDisruptionBudget gets kube's
//!   status: `observedGeneration`, expected/desired/current counts,
//!   `disruptionsAllowed` and the `DisruptionAllowed` condition;
//! - with `--federation-controllers=false` (a member, the difference
//!   harness's plain kube-apiserver) none of it is written.

use std::time::Duration;

use anyhow::{Result, ensure};
use serde_json::Value;
use ubernetes_e2e::{Server, eventually};

const WAIT: Duration = Duration::from_secs(20);

fn get(s: &Server, args: &[&str]) -> Result<Option<Value>> {
    s.kubectl_get(args)
}

/// The EndpointSlices of Service `svc` in `ns`.
fn slices_of(s: &Server, ns: &str, svc: &str) -> Result<Vec<Value>> {
    let selector = format!("kubernetes.io/service-name={svc}");
    let list = get(s, &["endpointslices", "-n", ns, "-l", &selector])?.unwrap_or_default();
    Ok(list["items"].as_array().cloned().unwrap_or_default())
}

fn len(v: &Value) -> usize {
    v.as_array().map_or(0, Vec::len)
}

/// Make a Pod look run by a kubelet: an IP and the Ready condition.
fn run_pod(s: &Server, ns: &str, name: &str, ip: &str) -> Result<()> {
    let status = format!(
        r#"{{"status": {{"phase": "Running", "podIP": "{ip}", "podIPs": [{{"ip": "{ip}"}}],
            "conditions": [{{"type": "Ready", "status": "True",
                             "lastTransitionTime": "2026-01-01T00:00:00Z"}}]}}}}"#
    );
    s.kubectl_ok(&[
        "patch",
        "pod",
        name,
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        &status,
    ])?;
    Ok(())
}

const SELECTOR_SERVICE: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop, labels: {tier: front}}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
"#;

const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: shop, labels: {app: web}}
spec: {containers: [{name: c, image: nginx}]}
"#;

#[test]
fn endpoints_and_slices_follow_services_and_pods() -> Result<()> {
    let s = Server::start_with(&[])?;
    s.kubectl_stdin_ok(&["apply", "-f", "-"], SELECTOR_SERVICE)?;
    let svc = get(&s, &["service", "web", "-n", "shop"])?.unwrap_or_default();

    // No Pod: an empty Endpoints and a placeholder slice.
    let ep = eventually(WAIT, || get(&s, &["endpoints", "web", "-n", "shop"]))?;
    ensure!(len(&ep["subsets"]) == 0, "{ep}");
    ensure!(ep["metadata"]["labels"]["tier"] == "front", "{ep}");
    ensure!(
        ep["metadata"]["annotations"]["endpoints.kubernetes.io/last-change-trigger-time"]
            == svc["metadata"]["creationTimestamp"],
        "trigger time: {ep}"
    );
    let slice = eventually(WAIT, || {
        Ok(slices_of(&s, "shop", "web")?.into_iter().next())
    })?;
    ensure!(
        slice["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"]
            == "endpointslice-controller.k8s.io",
        "{slice}"
    );
    ensure!(slice["metadata"]["labels"]["tier"] == "front", "{slice}");
    ensure!(slice["addressType"] == "IPv4", "{slice}");
    ensure!(len(&slice["endpoints"]) == 0, "{slice}");
    ensure!(
        slice["metadata"]["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("web-")),
        "{slice}"
    );
    let owner = &slice["metadata"]["ownerReferences"][0];
    ensure!(
        owner["kind"] == "Service" && owner["uid"] == svc["metadata"]["uid"],
        "{slice}"
    );

    // A Pod that runs: its IP on the target port, in both.
    s.kubectl_stdin_ok(&["apply", "-f", "-"], POD)?;
    run_pod(&s, "shop", "web-1", "10.9.8.7")?;
    let ep = eventually(WAIT, || {
        let ep = get(&s, &["endpoints", "web", "-n", "shop"])?;
        Ok(ep.filter(|e| e["subsets"][0]["addresses"][0]["ip"] == "10.9.8.7"))
    })?;
    ensure!(
        ep["subsets"][0]["ports"][0]["port"] == 8080
            && ep["subsets"][0]["ports"][0]["name"] == "http",
        "{ep}"
    );
    ensure!(
        ep["subsets"][0]["addresses"][0]["targetRef"]["name"] == "web-1",
        "{ep}"
    );
    let slices = eventually(WAIT, || {
        let all = slices_of(&s, "shop", "web")?;
        let ok = all.len() == 1 && all[0]["endpoints"][0]["addresses"][0] == "10.9.8.7";
        Ok(ok.then_some(all))
    })?;
    ensure!(
        slices[0]["endpoints"][0]["conditions"]["ready"] == true
            && slices[0]["ports"][0]["port"] == 8080,
        "{}",
        slices[0]
    );

    // The Service goes: so do its Endpoints and slices.
    s.kubectl_ok(&["delete", "service", "web", "-n", "shop"])?;
    eventually(WAIT, || {
        let gone = get(&s, &["endpoints", "web", "-n", "shop"])?.is_none()
            && slices_of(&s, "shop", "web")?.is_empty();
        Ok(gone.then_some(()))
    })?;
    Ok(())
}

const SELECTORLESS: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: db, namespace: default}
spec:
  ports: [{name: example, port: 80, protocol: TCP}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: db, namespace: default, labels: {team: data}}
subsets:
- addresses: [{ip: 10.1.2.3}]
  ports: [{port: 80}]
"#;

#[test]
fn a_users_endpoints_are_mirrored_through_create_update_and_delete() -> Result<()> {
    let s = Server::start_with(&[])?;
    s.kubectl_stdin_ok(&["apply", "-f", "-"], SELECTORLESS)?;
    let mirrored = |ip: &'static str| {
        let s = &s;
        move || -> Result<Option<Value>> {
            let all = slices_of(s, "default", "db")?;
            let ok = all.len() == 1 && all[0]["endpoints"][0]["addresses"][0] == ip;
            Ok(ok.then(|| all[0].clone()))
        }
    };
    let slice = eventually(WAIT, mirrored("10.1.2.3"))?;
    ensure!(
        slice["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"]
            == "endpointslicemirroring-controller.k8s.io",
        "{slice}"
    );
    ensure!(slice["metadata"]["labels"]["team"] == "data", "{slice}");
    ensure!(
        slice["ports"][0]["port"] == 80 && len(&slice["endpoints"]) == 1,
        "{slice}"
    );
    ensure!(
        slice["metadata"]["ownerReferences"][0]["kind"] == "Endpoints",
        "{slice}"
    );
    // The user's Endpoints is left as written (no selector: not the
    // endpoints controller's).
    let ep = get(&s, &["endpoints", "db", "-n", "default"])?.unwrap_or_default();
    ensure!(ep["subsets"][0]["addresses"][0]["ip"] == "10.1.2.3", "{ep}");

    s.kubectl_ok(&[
        "patch",
        "endpoints",
        "db",
        "-n",
        "default",
        "--type=json",
        "-p",
        r#"[{"op": "replace", "path": "/subsets/0/addresses/0/ip", "value": "10.2.3.4"}]"#,
    ])?;
    eventually(WAIT, mirrored("10.2.3.4"))?;

    s.kubectl_ok(&["delete", "endpoints", "db", "-n", "default"])?;
    eventually(WAIT, || {
        Ok(slices_of(&s, "default", "db")?.is_empty().then_some(()))
    })?;

    // skip-mirror: never mirrored (as the kubernetes Endpoints).
    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        r#"
apiVersion: v1
kind: Endpoints
metadata: {name: db, namespace: default, labels: {endpointslice.kubernetes.io/skip-mirror: "true"}}
subsets:
- addresses: [{ip: 10.1.2.3}]
  ports: [{port: 80}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: no-service, namespace: default}
subsets:
- addresses: [{ip: 10.1.2.5}]
  ports: [{port: 80}]
"#,
    )?;
    std::thread::sleep(Duration::from_secs(2));
    // An Endpoints without a Service is neither deleted nor mirrored.
    ensure!(
        get(&s, &["endpoints", "no-service", "-n", "default"])?.is_some(),
        "an Endpoints without a Service was deleted"
    );
    ensure!(slices_of(&s, "default", "no-service")?.is_empty());
    ensure!(
        slices_of(&s, "default", "db")?.is_empty(),
        "a skip-mirror Endpoints was mirrored"
    );
    Ok(())
}

const PDB: &str = r#"
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: budget, namespace: default}
spec:
  minAvailable: 1%
  selector: {matchLabels: {foo: bar}}
"#;

fn pdb_status(s: &Server) -> Result<Option<Value>> {
    let pdb = get(s, &["pdb", "budget", "-n", "default"])?;
    Ok(pdb.filter(|p| p["status"]["observedGeneration"] == p["metadata"]["generation"]))
}

fn condition(pdb: &Value) -> (String, String) {
    let c = pdb["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "DisruptionAllowed"))
        .cloned()
        .unwrap_or_default();
    (
        c["status"].as_str().unwrap_or_default().to_string(),
        c["reason"].as_str().unwrap_or_default().to_string(),
    )
}

#[test]
fn a_disruption_budget_gets_kubes_status_while_standalone() -> Result<()> {
    let s = Server::start_with(&[])?;
    s.kubectl_stdin_ok(&["apply", "-f", "-"], PDB)?;
    // No Pod: processed, nothing expected, nothing allowed.
    let pdb = eventually(WAIT, || pdb_status(&s))?;
    ensure!(
        pdb["status"]["expectedPods"] == 0 && pdb["status"]["disruptionsAllowed"] == 0,
        "{pdb}"
    );
    ensure!(
        condition(&pdb) == ("False".into(), "InsufficientPods".into()),
        "{pdb}"
    );

    // minAvailable 1 and two ready Pods: one disruption allowed.
    s.kubectl_ok(&[
        "patch",
        "pdb",
        "budget",
        "-n",
        "default",
        "--type=merge",
        "-p",
        r#"{"spec": {"minAvailable": 1}}"#,
    ])?;
    for (name, ip) in [("p-1", "10.0.0.1"), ("p-2", "10.0.0.2")] {
        s.kubectl_stdin_ok(
            &["apply", "-f", "-"],
            &format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default, labels: {{foo: bar}}}}\nspec: {{containers: [{{name: c, image: pause}}]}}\n"
            ),
        )?;
        run_pod(&s, "default", name, ip)?;
    }
    let pdb = eventually(WAIT, || {
        Ok(pdb_status(&s)?.filter(|p| p["status"]["currentHealthy"] == 2))
    })?;
    ensure!(
        pdb["status"]["desiredHealthy"] == 1
            && pdb["status"]["expectedPods"] == 2
            && pdb["status"]["disruptionsAllowed"] == 1,
        "{pdb}"
    );
    ensure!(
        condition(&pdb) == ("True".into(), "SufficientPods".into()),
        "{pdb}"
    );
    Ok(())
}

#[test]
fn a_plain_api_server_writes_none_of_it() -> Result<()> {
    let s = Server::start_with(&["--federation-controllers=false"])?;
    s.kubectl_stdin_ok(&["apply", "-f", "-"], SELECTOR_SERVICE)?;
    s.kubectl_stdin_ok(&["apply", "-f", "-"], PDB)?;
    std::thread::sleep(Duration::from_secs(2));
    ensure!(get(&s, &["endpoints", "web", "-n", "shop"])?.is_none());
    ensure!(slices_of(&s, "shop", "web")?.is_empty());
    let pdb = get(&s, &["pdb", "budget", "-n", "default"])?.unwrap_or_default();
    ensure!(pdb["status"]["observedGeneration"].is_null(), "{pdb}");
    Ok(())
}
