//! Federation end to end (issue "Federation: clusters join, stay healthy,
//! and receive every federated object"): a federation and three members,
//! all real `ubernetes serve` processes (members with
//! `--federation-controllers=false`), driven with the real kubectl.
//!
//! One scenario, in the issue's order, because each step builds on the
//! state of the one before and starting four servers is the slow part:
//! join (declaratively and with `ubernetes join`), propagation of every
//! kind with label and origin annotation, updates, drift repair, a foreign
//! manager's field left alone, placement and relabelling, overrides, a
//! member that rejects an object, a member killed and restarted, deletion
//! with and without orphaning, and a federation restart that sends no
//! member writes.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::Value;
use ubernetes_e2e::federation::{
    self, Federation, condition, propagation_record, propagation_state,
};
use ubernetes_e2e::{Server, eventually, ubernetes_bin};

const WAIT: Duration = Duration::from_secs(30);

fn json(s: &str) -> Result<Value> {
    serde_json::from_str(s).with_context(|| format!("not JSON: {s}"))
}

fn get(server: &Server, args: &[&str]) -> Result<Option<Value>> {
    server.kubectl_get(args)
}

fn label<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.pointer("/metadata/labels")
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
}

fn annotation<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.pointer("/metadata/annotations")
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
}

/// Wait until `args` exists in `member` as our managed copy of `fed_uid`
/// and `check` holds on it.
fn wait_copy(
    member: &Server,
    args: &[&str],
    fed_uid: &str,
    check: impl Fn(&Value) -> bool,
) -> Result<Value> {
    eventually(WAIT, || {
        Ok(get(member, args)?.filter(|v| {
            label(v, "federation.kubernetes.io/managed") == Some("true")
                && annotation(v, "federation.kubernetes.io/origin-uid") == Some(fed_uid)
                && check(v)
        }))
    })
    .with_context(|| format!("copy of {args:?} in {}", member.url()))
}

fn wait_gone(member: &Server, args: &[&str]) -> Result<()> {
    eventually(WAIT, || Ok(get(member, args)?.is_none().then_some(())))
        .with_context(|| format!("{args:?} still in {}", member.url()))
}

fn uid_of(server: &Server, args: &[&str]) -> Result<String> {
    let v = get(server, args)?.with_context(|| format!("{args:?} missing"))?;
    Ok(v.pointer("/metadata/uid")
        .and_then(Value::as_str)
        .context("uid")?
        .to_string())
}

/// Every managed object's resourceVersion in a member, by kind/ns/name.
fn managed_versions(member: &Server) -> Result<BTreeMap<String, String>> {
    let out = member.kubectl_ok(&[
        "get",
        "namespaces,configmaps,secrets,services,deployments,ingresses,widgets,customresourcedefinitions",
        "-A",
        "-l",
        "federation.kubernetes.io/managed=true",
        "-o",
        "json",
    ])?;
    let list = json(&out)?;
    let mut map = BTreeMap::new();
    for item in list["items"].as_array().context("items")? {
        let key = format!(
            "{}/{}/{}",
            item["kind"].as_str().unwrap_or(""),
            item.pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or(""),
            item.pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
        );
        let rv = item
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        map.insert(key, rv);
    }
    Ok(map)
}

fn events_of(host: &Server, ns: &str, name: &str) -> Result<Vec<(String, String)>> {
    federation::events_of(host, Some(ns), name)
}

const APP: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: app}
data: {color: red}
---
apiVersion: v1
kind: Secret
metadata: {name: sec, namespace: app}
stringData: {password: s3cret}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: app}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.27}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: app}
spec:
  rules:
  - host: web.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
  labels: {federation.kubernetes.io/federated: "true"}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
"#;

/// The cluster-wide policy a platform team declares once for every cluster.
const PLATFORM: &str = r#"
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: example.com/fast
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: batch-low}
value: 100
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: edge}
spec: {controller: example.com/edge}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: max-replicas}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}
  validations:
  - {expression: "object.spec.replicas <= 50"}
"#;

const WIDGET: &str = r#"
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: app}
spec: {size: 3}
"#;

#[test]
fn a_federation_of_three_members_propagates_repairs_places_and_deletes() -> Result<()> {
    // 1. A federation and three members; two joined declaratively, one
    //    with `ubernetes join`.
    let mut fed = Federation::start(3, &[])?;
    for (i, region) in ["us-east-1", "eu-west-1", "ap-south-1"]
        .into_iter()
        .enumerate()
    {
        let (a, b) = (format!("{region}-1a"), format!("{region}-1b"));
        fed.create_nodes(i, &[("node-a", &a, region), ("node-b", &b, region)])?;
    }
    // An object made while no member is joined (the sync and status
    // controllers queue nothing then) reaches the members once they join.
    fed.host
        .kubectl_ok(&["create", "configmap", "early", "--from-literal=k=v"])?;
    let early_uid = uid_of(&fed.host, &["configmap", "early"])?;
    fed.join(0, "m0", &[("tier", "gold")])?;
    fed.join(1, "m1", &[("tier", "silver")])?;
    let out = Command::new(ubernetes_bin())
        .args([
            "join",
            "m2",
            "--cluster-context",
            "federation",
            "--kubeconfig",
        ])
        .arg(fed.members[2].kubeconfig())
        .arg("--federation-kubeconfig")
        .arg(fed.host.kubeconfig())
        .args(["--federation-context", "federation"])
        .output()?;
    ensure!(
        out.status.success(),
        "ubernetes join failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for (name, region) in [
        ("m0", "us-east-1"),
        ("m1", "eu-west-1"),
        ("m2", "ap-south-1"),
    ] {
        let c = fed.wait_condition(name, "Ready", "True", None, WAIT)?;
        ensure!(
            c.pointer("/status/region").and_then(Value::as_str) == Some(region),
            "{c}"
        );
        let zones = c.pointer("/status/zones").cloned().unwrap_or_default();
        ensure!(
            zones == serde_json::json!([format!("{region}-1a"), format!("{region}-1b")]),
            "zones of {name}: {zones}"
        );
    }
    for m in &fed.members {
        wait_copy(m, &["configmap", "early"], &early_uid, |c| {
            c["data"]["k"] == "v"
        })?;
    }
    let wide = fed.host.kubectl_ok(&["get", "clusters", "-o", "wide"])?;
    ensure!(wide.contains("v1."), "members' versions in:\n{wide}");
    let table = fed.host.kubectl_ok(&["get", "clusters"])?;
    for want in [
        "NAME",
        "READY",
        "ZONES",
        "REGION",
        "m0",
        "m1",
        "m2",
        "us-east-1",
    ] {
        ensure!(table.contains(want), "{want} missing from:\n{table}");
    }

    // 2. Every kind reaches every member, with our label and annotation.
    fed.host.kubectl_stdin_ok(&["apply", "-f", "-"], APP)?;
    eventually(WAIT, || {
        let crd = get(&fed.host, &["crd", "widgets.example.com"])?;
        Ok(crd.filter(|c| condition(c, "Established").is_some_and(|x| x["status"] == "True")))
    })?;
    fed.host.kubectl_stdin_ok(&["apply", "-f", "-"], WIDGET)?;
    let objects: [&[&str]; 8] = [
        &["namespace", "app"],
        &["configmap", "cfg", "-n", "app"],
        &["secret", "sec", "-n", "app"],
        &["service", "web", "-n", "app"],
        &["deployment", "web", "-n", "app"],
        &["ingress", "web", "-n", "app"],
        &["crd", "widgets.example.com"],
        &["widgets", "w1", "-n", "app"],
    ];
    for args in objects {
        let uid = uid_of(&fed.host, args)?;
        for m in &fed.members {
            wait_copy(m, args, &uid, |_| true).with_context(|| fed.host.log_tail())?;
        }
    }
    // The member assigned its own clusterIP, not the federation's.
    let fed_ip =
        get(&fed.host, &["service", "web", "-n", "app"])?.context("svc")?["spec"]["clusterIP"]
            .clone();
    let m_svc = get(&fed.members[0], &["service", "web", "-n", "app"])?.context("svc")?;
    ensure!(m_svc["spec"]["clusterIP"].is_string(), "{m_svc}");
    ensure!(
        m_svc.pointer("/metadata/uid")
            != get(&fed.host, &["service", "web", "-n", "app"])?
                .context("svc")?
                .pointer("/metadata/uid"),
        "uids are the member's own"
    );
    let _ = fed_ip;

    // The cluster-scoped policy kinds are federated like the rest; each
    // member keeps its own system PriorityClasses and APF bootstrap objects.
    fed.host.kubectl_stdin_ok(&["apply", "-f", "-"], PLATFORM)?;
    let platform: [&[&str]; 4] = [
        &["storageclass", "fast"],
        &["priorityclass", "batch-low"],
        &["ingressclass", "edge"],
        &["validatingadmissionpolicy", "max-replicas"],
    ];
    for args in platform {
        let uid = uid_of(&fed.host, args)?;
        for m in &fed.members {
            wait_copy(m, args, &uid, |_| true).with_context(|| fed.host.log_tail())?;
        }
    }
    for args in [
        &["priorityclass", "system-node-critical"][..],
        &["flowschema", "exempt"][..],
    ] {
        let own = get(&fed.members[0], args)?.with_context(|| format!("{args:?}"))?;
        ensure!(
            label(&own, "federation.kubernetes.io/managed").is_none(),
            "a member's own {args:?} was taken over: {own}"
        );
    }

    // 3. Updates flow; drift is repaired; a member user's field stays.
    let cfg_uid = uid_of(&fed.host, &["configmap", "cfg", "-n", "app"])?;
    fed.host.kubectl_ok(&[
        "patch",
        "configmap",
        "cfg",
        "-n",
        "app",
        "-p",
        r#"{"data":{"color":"green"}}"#,
    ])?;
    for m in &fed.members {
        wait_copy(m, &["configmap", "cfg", "-n", "app"], &cfg_uid, |v| {
            v["data"]["color"] == "green"
        })?;
    }
    fed.members[0].kubectl_ok(&["delete", "configmap", "cfg", "-n", "app"])?;
    wait_copy(
        &fed.members[0],
        &["configmap", "cfg", "-n", "app"],
        &cfg_uid,
        |v| v["data"]["color"] == "green",
    )
    .context("a copy deleted in a member is restored")?;
    fed.members[1].kubectl_ok(&[
        "patch",
        "configmap",
        "cfg",
        "-n",
        "app",
        "-p",
        r#"{"data":{"color":"purple"}}"#,
    ])?;
    wait_copy(
        &fed.members[1],
        &["configmap", "cfg", "-n", "app"],
        &cfg_uid,
        |v| v["data"]["color"] == "green",
    )
    .context("an edit of our field in a member is reverted")?;
    fed.members[2].kubectl_ok(&["label", "configmap", "cfg", "-n", "app", "owner=local-team"])?;
    std::thread::sleep(Duration::from_secs(3));
    let local = get(&fed.members[2], &["configmap", "cfg", "-n", "app"])?.context("cfg")?;
    ensure!(
        label(&local, "owner") == Some("local-team"),
        "a member user's label stays: {local}"
    );
    ensure!(local["data"]["color"] == "green", "{local}");

    // 4. Placement by cluster selector, moved by relabelling; overrides.
    fed.host.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: placed
  namespace: app
  annotations:
    federation.alpha.kubernetes.io/cluster-selector: '[{"key": "tier", "operator": "In", "values": ["gold"]}]'
data: {where: gold}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: ov
  namespace: app
  annotations:
    federation.kubernetes.io/overrides: '{"m2": [{"op": "replace", "path": "/data/color", "value": "blue"}]}'
data: {color: red}
"#,
    )?;
    let placed_uid = uid_of(&fed.host, &["configmap", "placed", "-n", "app"])?;
    wait_copy(
        &fed.members[0],
        &["configmap", "placed", "-n", "app"],
        &placed_uid,
        |_| true,
    )?;
    let ov_uid = uid_of(&fed.host, &["configmap", "ov", "-n", "app"])?;
    wait_copy(
        &fed.members[2],
        &["configmap", "ov", "-n", "app"],
        &ov_uid,
        |v| v["data"]["color"] == "blue",
    )?;
    wait_copy(
        &fed.members[0],
        &["configmap", "ov", "-n", "app"],
        &ov_uid,
        |v| v["data"]["color"] == "red",
    )?;
    wait_copy(
        &fed.members[1],
        &["configmap", "ov", "-n", "app"],
        &ov_uid,
        |v| v["data"]["color"] == "red",
    )?;
    for m in &fed.members[1..] {
        ensure!(
            get(m, &["configmap", "placed", "-n", "app"])?.is_none(),
            "placed only on gold"
        );
    }
    fed.host
        .kubectl_ok(&["label", "cluster", "m0", "tier=silver", "--overwrite"])?;
    fed.host
        .kubectl_ok(&["label", "cluster", "m1", "tier=gold", "--overwrite"])?;
    wait_copy(
        &fed.members[1],
        &["configmap", "placed", "-n", "app"],
        &placed_uid,
        |_| true,
    )
    .context("added to the newly selected cluster")?;
    wait_gone(&fed.members[0], &["configmap", "placed", "-n", "app"])
        .context("removed from the old")?;

    // 8. A member that rejects an object: Failed there, the others sync.
    fed.host.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: picky
  namespace: app
  annotations:
    federation.kubernetes.io/overrides: '{"m1": [{"op": "replace", "path": "/spec/replicas", "value": -1}]}'
spec:
  replicas: 1
  selector: {matchLabels: {app: picky}}
  template:
    metadata: {labels: {app: picky}}
    spec:
      containers: [{name: c, image: busybox}]
"#,
    )?;
    let picky_uid = uid_of(&fed.host, &["deployment", "picky", "-n", "app"])?;
    wait_copy(
        &fed.members[0],
        &["deployment", "picky", "-n", "app"],
        &picky_uid,
        |_| true,
    )?;
    wait_copy(
        &fed.members[2],
        &["deployment", "picky", "-n", "app"],
        &picky_uid,
        |_| true,
    )?;
    let state = eventually(WAIT, || {
        let rec = propagation_state(&fed.host, "deployments.apps", Some("app"), "picky")?;
        Ok((rec["m1"]["state"] == "Failed"
            && rec["m0"]["state"] == "InSync"
            && rec["m2"]["state"] == "InSync")
            .then_some(rec))
    })
    .context("propagation record: m1 Failed, others InSync")?;
    ensure!(
        state["m1"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("replicas"),
        "the member's own error: {state}"
    );
    ensure!(get(&fed.members[1], &["deployment", "picky", "-n", "app"])?.is_none());
    let events = eventually(WAIT, || {
        let ev = events_of(&fed.host, "app", "picky")?;
        Ok((ev
            .iter()
            .any(|(r, m)| r == "FailedCreateInCluster" && m.contains("m1"))
            && ev
                .iter()
                .any(|(r, m)| r == "CreateInCluster" && m.contains("m0")))
        .then_some(ev))
    })
    .context("events name the cluster and the action")?;
    let _ = events;

    // 5. A member down: Offline; writes still reach the others; back:
    //    Ready and converged with no manual step. An object deleted while
    //    it is down is gone at once (Background deletion); its record waits
    //    (an event names the cluster) and its copy there is deleted when
    //    the member is back (§3.8).
    fed.host.kubectl_ok(&[
        "create",
        "configmap",
        "doomed",
        "-n",
        "app",
        "--from-literal=k=v",
    ])?;
    let doomed_uid = uid_of(&fed.host, &["configmap", "doomed", "-n", "app"])?;
    for m in &fed.members {
        wait_copy(
            m,
            &["configmap", "doomed", "-n", "app"],
            &doomed_uid,
            |_| true,
        )?;
    }
    // The record of m2 must be written before m2 goes away.
    eventually(WAIT, || {
        let rec = propagation_state(&fed.host, "configmaps", Some("app"), "doomed")?;
        Ok((rec["m2"]["state"] == "InSync").then_some(()))
    })?;
    fed.members[2].kill9();
    let c = fed.wait_condition("m2", "Offline", "True", None, WAIT)?;
    ensure!(
        condition(&c, "Ready").is_some_and(|x| x["status"] == "Unknown"),
        "{c}"
    );
    fed.host.kubectl_ok(&[
        "create",
        "configmap",
        "during",
        "-n",
        "app",
        "--from-literal=k=v",
    ])?;
    let during_uid = uid_of(&fed.host, &["configmap", "during", "-n", "app"])?;
    wait_copy(
        &fed.members[0],
        &["configmap", "during", "-n", "app"],
        &during_uid,
        |_| true,
    )?;
    wait_copy(
        &fed.members[1],
        &["configmap", "during", "-n", "app"],
        &during_uid,
        |_| true,
    )?;
    fed.host
        .kubectl_ok(&["delete", "configmap", "doomed", "-n", "app", "--wait=false"])?;
    wait_gone(&fed.members[0], &["configmap", "doomed", "-n", "app"])?;
    wait_gone(&fed.members[1], &["configmap", "doomed", "-n", "app"])?;
    eventually(WAIT, || {
        let ev = events_of(&fed.host, "app", "doomed")?;
        Ok(ev
            .iter()
            .any(|(r, m)| r == "FailedDeleteInCluster" && m.contains("m2"))
            .then_some(()))
    })
    .context("an event names the cluster the deletion waits for")?;
    // Background deletion: the user's object is gone at once; the
    // federation's record waits for the unreachable member.
    ensure!(get(&fed.host, &["configmap", "doomed", "-n", "app"])?.is_none());
    let waiting = propagation_record(&fed.host, "configmaps", Some("app"), "doomed")?
        .context("the propagation record waits for the unreachable member")?;
    ensure!(
        waiting.pointer("/metadata/deletionTimestamp").is_some(),
        "{waiting}"
    );
    let port = fed.members[2].port();
    fed.members[2].crash_and_restart()?;
    ensure!(fed.members[2].port() == port);
    fed.wait_condition("m2", "Ready", "True", None, WAIT)?;
    wait_copy(
        &fed.members[2],
        &["configmap", "during", "-n", "app"],
        &during_uid,
        |_| true,
    )
    .context("the returning member converges")?;
    wait_gone(&fed.members[2], &["configmap", "doomed", "-n", "app"])
        .context("the copy is deleted when the member is back")?;
    eventually(WAIT, || {
        Ok(
            propagation_record(&fed.host, "configmaps", Some("app"), "doomed")?
                .is_none()
                .then_some(()),
        )
    })
    .context("then the record goes")?;

    // 6. Deletion: foreground returns once every member copy is gone;
    //    orphan keeps the copies without our label.
    fed.host.kubectl_ok(&[
        "delete",
        "deployment",
        "web",
        "-n",
        "app",
        "--cascade=foreground",
        "--wait=true",
    ])?;
    for m in &fed.members {
        ensure!(
            get(m, &["deployment", "web", "-n", "app"])?.is_none(),
            "web left in {}",
            m.url()
        );
    }
    ensure!(get(&fed.host, &["deployment", "web", "-n", "app"])?.is_none());
    fed.host.kubectl_ok(&[
        "delete",
        "configmap",
        "during",
        "-n",
        "app",
        "--cascade=orphan",
        "--wait=true",
    ])?;
    for m in &fed.members {
        let copy = eventually(WAIT, || {
            let copy =
                get(m, &["configmap", "during", "-n", "app"])?.context("orphaned copy stays")?;
            Ok((label(&copy, "federation.kubernetes.io/managed").is_none()).then_some(copy))
        })?;
        ensure!(
            annotation(&copy, "federation.kubernetes.io/origin-uid").is_none(),
            "{copy}"
        );
    }
    eventually(WAIT, || {
        Ok(
            propagation_record(&fed.host, "configmaps", Some("app"), "during")?
                .is_none()
                .then_some(()),
        )
    })
    .context("the orphaned record goes")?;

    // 7. A federation restart with everything in sync sends no member
    //    write; a new object still propagates promptly.
    fed.host
        .kubectl_ok(&["delete", "deployment", "picky", "-n", "app", "--wait=false"])?;
    for m in &fed.members {
        wait_gone(m, &["deployment", "picky", "-n", "app"])?;
    }
    // Wait for quiet: the cfg copies carry everything; records written.
    std::thread::sleep(Duration::from_secs(2));
    let before: Vec<_> = fed
        .members
        .iter()
        .map(managed_versions)
        .collect::<Result<_>>()?;
    fed.host.restart()?;
    for name in ["m0", "m1", "m2"] {
        fed.wait_condition(name, "Ready", "True", None, WAIT)?;
    }
    fed.host.kubectl_ok(&[
        "create",
        "configmap",
        "after",
        "-n",
        "app",
        "--from-literal=k=v",
    ])?;
    let after_uid = uid_of(&fed.host, &["configmap", "after", "-n", "app"])?;
    for m in &fed.members {
        eventually(Duration::from_secs(5), || {
            Ok(get(m, &["configmap", "after", "-n", "app"])?.filter(|v| {
                annotation(v, "federation.kubernetes.io/origin-uid") == Some(after_uid.as_str())
            }))
        })
        .context("a new object propagates right after a restart")?;
    }
    std::thread::sleep(Duration::from_secs(2));
    for (m, before) in fed.members.iter().zip(&before) {
        let mut after = managed_versions(m)?;
        after.remove("ConfigMap/app/after");
        ensure!(
            &after == before,
            "member writes after restart in {}:\nbefore {before:?}\nafter {after:?}\nhost log:\n{}",
            m.url(),
            fed.host.log_tail()
        );
    }
    fed.host.stop();
    for m in &mut fed.members {
        m.stop();
    }
    Ok(())
}
