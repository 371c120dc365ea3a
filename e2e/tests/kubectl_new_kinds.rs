//! kubectl 1.37 against the kinds added for issue 15, each as kube-apiserver
//! 1.36 serves it: for every stored kind (DeviceClass, ResourceClaim,
//! ResourceClaimTemplate, ResourceSlice, FlowSchema,
//! PriorityLevelConfiguration, IPAddress, ServiceCIDR) one object goes
//! through `create`, `get` (kube's defaults in the JSON, kube's table
//! columns), `list`, a `get --watch --output-watch-events` that must
//! see ADDED, MODIFIED and DELETED, `patch`, a rejected invalid variant
//! (kube's main validation), and `delete`. Then the objects kube-apiserver
//! creates at start (the APF bootstrap configuration, the default
//! ServiceCIDR), `pods/binding` and `bindings` (a Pod gets its node), and
//! `componentstatuses`.

mod kubectl_support;

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::Value;
use ubernetes_e2e::Server;

use kubectl_support::{Streaming, header, json, rows, wait_gone};

struct Case {
    /// The resource as kubectl names it (plural.group).
    resource: &'static str,
    name: &'static str,
    namespaced: bool,
    manifest: &'static str,
    /// (JSON pointer, value) kube-apiserver's defaulting sets.
    defaults: &'static [(&'static str, &'static str)],
    /// kube's table header (`kubectl get`).
    header: &'static str,
    /// A manifest kube rejects, and a piece of its message.
    invalid: (&'static str, &'static str),
}

const NS: &str = "newkinds";

const CASES: &[Case] = &[
    Case {
        resource: "deviceclasses.resource.k8s.io",
        name: "gpu.example.com",
        namespaced: false,
        manifest: r#"{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": "gpu.example.com"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}}"#,
        defaults: &[("/metadata/generation", "1")],
        header: "NAME AGE",
        invalid: (
            r#"{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "Bad_Name"}}"#,
            "metadata.name: Invalid value: \"Bad_Name\"",
        ),
    },
    Case {
        resource: "resourceclaims.resource.k8s.io",
        name: "claim1",
        namespaced: true,
        manifest: r#"{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "claim1"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}"#,
        defaults: &[
            (
                "/spec/devices/requests/0/exactly/allocationMode",
                "\"ExactCount\"",
            ),
            ("/spec/devices/requests/0/exactly/count", "1"),
            ("/status", "{}"),
        ],
        header: "NAME STATE AGE",
        invalid: (
            r#"{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "bad"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {}}]}}}"#,
            "spec.devices.requests[0].exactly.deviceClassName: Required value",
        ),
    },
    Case {
        resource: "resourceclaimtemplates.resource.k8s.io",
        name: "template1",
        namespaced: true,
        manifest: r#"{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "template1"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}}"#,
        defaults: &[
            (
                "/spec/spec/devices/requests/0/exactly/allocationMode",
                "\"ExactCount\"",
            ),
            ("/spec/spec/devices/requests/0/exactly/count", "1"),
        ],
        header: "NAME AGE",
        invalid: (
            r#"{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "bad"},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpu"}]}}}}"#,
            "spec.spec.devices.requests[0]: Required value",
        ),
    },
    Case {
        resource: "resourceslices.resource.k8s.io",
        name: "node1-gpu",
        namespaced: false,
        manifest: r#"{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "node1-gpu"},
            "spec": {"driver": "gpu.example.com", "nodeName": "node1",
                     "pool": {"name": "pool1", "resourceSliceCount": 1}, "devices": [{"name": "gpu-0"}]}}"#,
        defaults: &[
            ("/spec/pool/generation", "0"),
            ("/metadata/generation", "1"),
        ],
        header: "NAME NODE DRIVER POOL AGE",
        invalid: (
            r#"{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "bad"},
                "spec": {"driver": "gpu.example.com", "pool": {"name": "p", "resourceSliceCount": 1}}}"#,
            "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required",
        ),
    },
    Case {
        resource: "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io",
        name: "level1",
        namespaced: false,
        manifest: r#"{"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
            "metadata": {"name": "level1"},
            "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}}"#,
        defaults: &[
            ("/spec/limited/nominalConcurrencyShares", "30"),
            ("/spec/limited/lendablePercent", "0"),
            ("/spec/limited/limitResponse/queuing/queues", "64"),
            ("/spec/limited/limitResponse/queuing/handSize", "8"),
            ("/spec/limited/limitResponse/queuing/queueLengthLimit", "50"),
            ("/status", "{}"),
        ],
        header: "NAME TYPE NOMINALCONCURRENCYSHARES QUEUES HANDSIZE QUEUELENGTHLIMIT AGE",
        invalid: (
            r#"{"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
                "metadata": {"name": "bad"},
                "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue"}}}}"#,
            "spec.limited.limitResponse.queuing: Required value: must not be empty if limited.limitResponse.type is Limited",
        ),
    },
    Case {
        resource: "flowschemas.flowcontrol.apiserver.k8s.io",
        name: "schema1",
        namespaced: false,
        manifest: r#"{"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
            "metadata": {"name": "schema1"},
            "spec": {"priorityLevelConfiguration": {"name": "level1"},
                     "rules": [{"subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}}],
                                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}]}]}}"#,
        defaults: &[
            ("/spec/matchingPrecedence", "1000"),
            ("/metadata/generation", "1"),
        ],
        header: "NAME PRIORITYLEVEL MATCHINGPRECEDENCE DISTINGUISHERMETHOD AGE MISSINGPL",
        invalid: (
            r#"{"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": "bad"},
                "spec": {"priorityLevelConfiguration": {"name": "level1"}, "matchingPrecedence": 20000}}"#,
            "spec.matchingPrecedence: Invalid value: 20000: must be between 1 and 10000, inclusive",
        ),
    },
    Case {
        resource: "ipaddresses.networking.k8s.io",
        name: "10.96.5.5",
        namespaced: false,
        manifest: r#"{"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
            "metadata": {"name": "10.96.5.5"},
            "spec": {"parentRef": {"resource": "services", "namespace": "default", "name": "foo"}}}"#,
        defaults: &[("/spec/parentRef/name", "\"foo\"")],
        header: "NAME PARENTREF",
        invalid: (
            r#"{"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress", "metadata": {"name": "10.96.5.6"},
                "spec": {"parentRef": {"resource": "services", "namespace": "default"}}}"#,
            "spec.parentRef.name: Required value",
        ),
    },
    Case {
        resource: "servicecidrs.networking.k8s.io",
        name: "extra",
        namespaced: false,
        manifest: r#"{"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
            "metadata": {"name": "extra"}, "spec": {"cidrs": ["10.97.0.0/24"]}}"#,
        defaults: &[("/status", "{}")],
        header: "NAME CIDRS AGE",
        invalid: (
            r#"{"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR", "metadata": {"name": "bad"},
                "spec": {"cidrs": ["10.97.0.1/24"]}}"#,
            "must be in canonical form (\"10.97.0.0/24\")",
        ),
    },
];

fn with_ns<'a>(case: &Case, args: &[&'a str]) -> Vec<&'a str> {
    let mut v = args.to_vec();
    if case.namespaced {
        v.extend(["-n", NS]);
    }
    v
}

fn exercise(server: &Server, case: &Case) -> Result<()> {
    let r = case.resource;
    // `get -w` lists first (items as ADDED) then watches from the list's
    // resourceVersion, so no event is lost whenever the watch starts.
    let mut watch = Streaming::start(
        server,
        &with_ns(case, &["get", r, "--watch", "--output-watch-events"]),
    )?;

    let out = server.kubectl_stdin_ok(&with_ns(case, &["create", "-f", "-"]), case.manifest)?;
    ensure!(out.contains("created"), "{r}: create said {out}");

    let obj = json(server, &with_ns(case, &["get", r, case.name]))?;
    for (ptr, want) in case.defaults {
        let want: Value = serde_json::from_str(want)?;
        ensure!(
            obj.pointer(ptr) == Some(&want),
            "{r}: {ptr} is {:?}, kube-apiserver sets {want}; object: {obj}",
            obj.pointer(ptr)
        );
    }

    let table = server.kubectl_ok(&with_ns(case, &["get", r]))?;
    ensure!(
        header(&table) == case.header,
        "{r}: table header {:?}",
        header(&table)
    );
    ensure!(
        rows(&table)
            .iter()
            .any(|row| row.starts_with(&format!("{} ", case.name))),
        "{r}: no row for {} in {table}",
        case.name
    );
    let list = json(server, &with_ns(case, &["get", r]))?;
    ensure!(
        list["items"]
            .as_array()
            .is_some_and(|items| items.iter().any(|i| i["metadata"]["name"] == case.name)),
        "{r}: list lacks {}: {list}",
        case.name
    );

    server.kubectl_ok(&with_ns(
        case,
        &[
            "patch",
            r,
            case.name,
            "--type=merge",
            "-p",
            r#"{"metadata":{"labels":{"patched":"yes"}}}"#,
        ],
    ))?;
    let patched = json(server, &with_ns(case, &["get", r, case.name]))?;
    ensure!(
        patched["metadata"]["labels"]["patched"] == "yes",
        "{r}: patch lost: {patched}"
    );

    let refused = server.kubectl_stdin(&with_ns(case, &["create", "-f", "-"]), case.invalid.0)?;
    let code = refused.status.code().unwrap_or(-1);
    let err = String::from_utf8_lossy(&refused.stderr);
    ensure!(
        code != 0 && err.contains(case.invalid.1),
        "{r}: the invalid object was not refused with {:?}: {err}",
        case.invalid.1
    );

    server.kubectl_ok(&with_ns(case, &["delete", r, case.name]))?;
    wait_gone(server, &with_ns(case, &["get", r, case.name]))?;

    let name = case.name;
    for event in ["ADDED", "MODIFIED", "DELETED"] {
        watch
            .wait_for(Duration::from_secs(20), |l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                cols.first() == Some(&event) && cols.get(1) == Some(&name)
            })
            .with_context(|| format!("{r}: watch never showed {event} {name}"))?;
    }
    Ok(())
}

#[test]
fn kubectl_create_get_list_watch_patch_delete_each_new_kind() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_ok(&["create", "namespace", NS])?;
    for case in CASES {
        exercise(&server, case)?;
    }
    Ok(())
}

#[test]
fn kube_bootstrap_objects_exist_at_start() -> Result<()> {
    let server = Server::start()?;
    // kube-apiserver 1.36.2's mandatory + suggested objects, in the order
    // its table prints them (matching precedence, then name).
    let schemas = server.kubectl_ok(&["get", "flowschemas"])?;
    let names: Vec<String> = rows(&schemas)
        .iter()
        .map(|r| r.split(' ').next().unwrap_or_default().to_string())
        .collect();
    ensure!(
        names
            == [
                "exempt",
                "probes",
                "system-leader-election",
                "system-node-high",
                "system-nodes",
                "kube-controller-manager",
                "kube-scheduler",
                "kube-system-service-accounts",
                "service-accounts",
                "global-default",
                "catch-all",
            ],
        "FlowSchemas: {schemas}"
    );
    ensure!(
        rows(&schemas).iter().all(|r| r.ends_with(" False")),
        "every bootstrap FlowSchema finds its priority level (MISSINGPL False): {schemas}"
    );
    let levels = server.kubectl_ok(&["get", "prioritylevelconfigurations"])?;
    let level_rows = rows(&levels);
    ensure!(level_rows.len() == 8, "{levels}");
    ensure!(
        level_rows
            .iter()
            .any(|r| r.starts_with("global-default Limited 20 128 6 50 ")),
        "{levels}"
    );
    ensure!(
        level_rows
            .iter()
            .any(|r| r.starts_with("exempt Exempt <none> <none> <none> <none> ")),
        "{levels}"
    );
    let exempt = json(&server, &["get", "flowschema", "exempt"])?;
    ensure!(
        exempt["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"] == "true",
        "{exempt}"
    );

    let cidr = json(&server, &["get", "servicecidr", "kubernetes"])?;
    ensure!(
        cidr["spec"]["cidrs"] == serde_json::json!(["10.96.0.0/12"]),
        "{cidr}"
    );
    ensure!(
        cidr["status"]["conditions"][0]["type"] == "Ready"
            && cidr["status"]["conditions"][0]["status"] == "True",
        "{cidr}"
    );
    // kube-apiserver's readiness waits for both hooks.
    let readyz = server.kubectl_ok(&["get", "--raw", "/readyz?verbose"])?;
    for hook in [
        "[+]poststarthook/priority-and-fairness-config-producer ok",
        "[+]poststarthook/start-kubernetes-service-cidr-controller ok",
    ] {
        ensure!(readyz.contains(hook), "{readyz}");
    }
    Ok(())
}

const BINDING: &str = r#"{"apiVersion": "v1", "kind": "Binding",
    "metadata": {"name": "web", "annotations": {"scheduled-by": "e2e"}},
    "target": {"kind": "Node", "name": "node-a"}}"#;

#[test]
fn bindings_assign_pods_to_nodes_as_the_scheduler_does() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_ok(&["create", "namespace", "bind"])?;
    for pod in ["web", "api"] {
        server.kubectl_ok(&["run", pod, "--image=nginx", "-n", "bind"])?;
    }
    let dir = tempfile::tempdir()?;
    let body = dir.path().join("binding.json");
    std::fs::write(&body, BINDING)?;
    let body = body.to_string_lossy().into_owned();

    // The pods/binding subresource.
    let out = server.kubectl_ok(&[
        "create",
        "--raw",
        "/api/v1/namespaces/bind/pods/web/binding",
        "-f",
        &body,
    ])?;
    let status: Value = serde_json::from_str(&out)?;
    ensure!(
        status["kind"] == "Status" && status["status"] == "Success" && status["code"] == 201,
        "{out}"
    );
    let pod = json(&server, &["get", "pod", "web", "-n", "bind"])?;
    ensure!(pod["spec"]["nodeName"] == "node-a", "{pod}");
    ensure!(
        pod["metadata"]["annotations"]["scheduled-by"] == "e2e",
        "{pod}"
    );
    ensure!(
        pod["status"]["conditions"].as_array().is_some_and(|c| c
            .iter()
            .any(|c| c["type"] == "PodScheduled" && c["status"] == "True")),
        "{pod}"
    );
    // A bound pod cannot be bound again (kube's Conflict wording).
    let err = server.kubectl_err(&[
        "create",
        "--raw",
        "/api/v1/namespaces/bind/pods/web/binding",
        "-f",
        &body,
    ])?;
    ensure!(
        err.contains(
            "Operation cannot be fulfilled on pods/binding \"web\": pod web is already assigned to node \"node-a\""
        ),
        "{err}"
    );
    // The name in the URL must be the Binding's.
    let err = server.kubectl_err(&[
        "create",
        "--raw",
        "/api/v1/namespaces/bind/pods/api/binding",
        "-f",
        &body,
    ])?;
    ensure!(
        err.contains("name in URL does not match name in Binding object"),
        "{err}"
    );

    // The bindings resource (create only).
    std::fs::write(
        &body,
        BINDING
            .replace("\"web\"", "\"api\"")
            .replace("node-a", "node-b"),
    )?;
    server.kubectl_ok(&[
        "create",
        "--raw",
        "/api/v1/namespaces/bind/bindings",
        "-f",
        &body,
    ])?;
    let pod = json(&server, &["get", "pod", "api", "-n", "bind"])?;
    ensure!(pod["spec"]["nodeName"] == "node-b", "{pod}");
    let err = server.kubectl_err(&["get", "--raw", "/api/v1/namespaces/bind/bindings"])?;
    ensure!(err.contains("MethodNotAllowed"), "{err}");
    // kube's ValidatePodBinding, answered as its aggregate (a 500).
    std::fs::write(
        &body,
        r#"{"kind": "Binding", "apiVersion": "v1", "metadata": {"name": "api"}, "target": {"kind": "Pod"}}"#,
    )?;
    let err = server.kubectl_err(&[
        "create",
        "--raw",
        "/api/v1/namespaces/bind/bindings",
        "-f",
        &body,
    ])?;
    ensure!(
        err.contains(
            "target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\""
        ) && err.contains("target.name: Required value"),
        "{err}"
    );
    Ok(())
}

#[test]
fn componentstatuses_report_the_scheduler_controllers_and_store() -> Result<()> {
    let server = Server::start()?;
    let out = server.kubectl(&["get", "componentstatuses"])?;
    ensure!(out.status.success(), "{out:?}");
    let table = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        stderr.contains("Warning: v1 ComponentStatus is deprecated in v1.19+"),
        "{stderr}"
    );
    ensure!(header(&table) == "NAME STATUS MESSAGE ERROR", "{table}");
    let rows = rows(&table);
    ensure!(rows.iter().any(|r| r == "etcd-0 Healthy ok"), "{table}");
    ensure!(
        rows.iter().any(|r| r == "controller-manager Healthy ok"),
        "{table}"
    );
    // Nothing runs a kube-scheduler on 127.0.0.1:10259 here (kube's probe,
    // kube's words), unless the machine has one: then it must be Healthy.
    let scheduler_listens = std::net::TcpStream::connect(("127.0.0.1", 10259)).is_ok();
    let sched = rows
        .iter()
        .find(|r| r.starts_with("scheduler "))
        .context("no scheduler row")?;
    if scheduler_listens {
        ensure!(sched.starts_with("scheduler Healthy"), "{sched}");
    } else {
        ensure!(
            sched
                == "scheduler Unhealthy Get \"https://127.0.0.1:10259/healthz\": dial tcp 127.0.0.1:10259: connect: connection refused",
            "{sched}"
        );
    }
    let cs = json(&server, &["get", "cs", "etcd-0"])?;
    ensure!(
        cs["kind"] == "ComponentStatus"
            && cs["conditions"][0]["type"] == "Healthy"
            && cs["conditions"][0]["status"] == "True",
        "{cs}"
    );
    let err = server.kubectl_err(&["get", "cs", "nope"])?;
    ensure!(err.contains("componentstatus \"nope\" not found"), "{err}");
    Ok(())
}
