//! The cluster-policy kinds print and default as kube-apiserver 1.36 does,
//! for the objects of `tests/kube_reference/tables-objects.yaml`:
//! - the Table each list answers (`Accept: application/json;as=Table`) has
//!   kube's columns (names, types, formats, descriptions, priorities) and
//!   kube's cells (the `Age` and `Created At` cells left out);
//! - each object reads back (`kubectl get -o json`) as kube stores it: its
//!   defaults, its always-present fields (the metadata that differs per
//!   server left out).
//!
//! With `../shared/kube/kube.sh` the reference is a live kube-apiserver given
//! the same objects (and `tests/kube_reference/tables.json` and
//! `objects.json` must still be what it answers); without it, those
//! checked-in files.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use ubernetes_e2e::Server;
use ubernetes_e2e::real_kube::{KubeCluster, kube_sh};

const OBJECTS: &str = "tests/kube_reference/tables-objects.yaml";
const REFERENCE: &str = include_str!("kube_reference/tables.json");
const OBJECTS_REFERENCE: &str = include_str!("kube_reference/objects.json");

/// The lists whose Tables are compared.
const LISTS: &[&str] = &[
    "/api/v1/namespaces/default/limitranges",
    "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
    "/apis/rbac.authorization.k8s.io/v1/clusterroles?labelSelector=ref-table%3Dyes",
    "/apis/certificates.k8s.io/v1/certificatesigningrequests",
    "/apis/scheduling.k8s.io/v1/priorityclasses?labelSelector=ref-table%3Dyes",
    "/apis/node.k8s.io/v1/runtimeclasses",
    "/apis/storage.k8s.io/v1/storageclasses",
    "/apis/storage.k8s.io/v1/csidrivers",
    "/apis/storage.k8s.io/v1/csinodes",
    "/apis/storage.k8s.io/v1/namespaces/default/csistoragecapacities",
    "/apis/storage.k8s.io/v1/volumeattachments",
    "/apis/storage.k8s.io/v1/volumeattributesclasses",
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
    "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
    "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
    "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies",
    "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings",
];

/// kubectl with arguments and an optional stdin, against one server.
type Kubectl<'a> = &'a dyn Fn(&[&str], Option<&str>) -> Result<String>;

/// Apply the objects (as one user on both servers, whose admin users are
/// named differently: a CSR records its requestor), label the cluster-wide
/// ones the lists select (a cluster has its own ClusterRoles and
/// PriorityClasses), approve one CSR.
fn setup(kubectl: Kubectl<'_>) -> Result<()> {
    let objects = std::fs::read_to_string(OBJECTS).context(OBJECTS)?;
    kubectl(
        &[
            "--as=ref-user",
            "--as-group=system:masters",
            "apply",
            "-f",
            "-",
        ],
        Some(&objects),
    )?;
    kubectl(
        &["label", "clusterrole", "ref-clusterrole", "ref-table=yes"],
        None,
    )?;
    kubectl(&["label", "priorityclass", "ref-pc", "ref-table=yes"], None)?;
    kubectl(&["certificate", "approve", "ref-csr-forever"], None)?;
    Ok(())
}

/// A list's Table without what varies between runs and servers: the Age
/// (or Created At) cells, the list metadata and the rows' objects.
fn normalized(table: &Value) -> Result<Value> {
    let columns = table["columnDefinitions"]
        .as_array()
        .context("columnDefinitions")?;
    let age = columns
        .iter()
        .position(|c| c["name"] == "Age" || c["name"] == "Created At");
    let mut rows: Vec<Value> = table["rows"]
        .as_array()
        .context("rows")?
        .iter()
        .map(|r| {
            let mut cells = r["cells"].as_array().cloned().unwrap_or_default();
            if let Some(i) = age
                && i < cells.len()
            {
                cells[i] = json!("<age>");
            }
            Value::Array(cells)
        })
        .collect();
    rows.sort_by_key(|r| r.to_string());
    Ok(json!({"columns": columns, "rows": rows}))
}

async fn tables(client: &kube::Client) -> Result<BTreeMap<String, Value>> {
    let mut out = BTreeMap::new();
    for path in LISTS {
        let sep = if path.contains('?') { '&' } else { '?' };
        let raw = client
            .request_text(
                http::Request::get(format!("{path}{sep}includeObject=None"))
                    .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
                    .body(Vec::new())?,
            )
            .await
            .with_context(|| format!("GET {path} as a Table"))?;
        let table: Value = serde_json::from_str(&raw).with_context(|| raw.clone())?;
        out.insert(path.to_string(), normalized(&table)?);
    }
    Ok(out)
}

/// Every object of the manifest as the server reads it back, by
/// `kind.group/name` (namespace-qualified where namespaced), without what
/// differs per server and run: uid, resourceVersion, timestamps, managed
/// fields, generation, kubectl's last-applied annotation.
fn objects(kubectl: Kubectl<'_>) -> Result<BTreeMap<String, Value>> {
    // kubectl reads the manifest and gets each of its objects.
    let list: Value = serde_json::from_str(&kubectl(&["get", "-f", OBJECTS, "-o", "json"], None)?)?;
    let mut out = BTreeMap::new();
    for mut obj in list["items"].as_array().cloned().unwrap_or_default() {
        let group = obj["apiVersion"]
            .as_str()
            .and_then(|v| v.rsplit_once('/'))
            .map_or("", |(g, _)| g)
            .to_string();
        let key = format!(
            "{}.{group}/{}{}",
            obj["kind"].as_str().unwrap_or_default(),
            obj["metadata"]["namespace"]
                .as_str()
                .map(|ns| format!("{ns}/"))
                .unwrap_or_default(),
            obj["metadata"]["name"].as_str().unwrap_or_default()
        );
        if let Some(meta) = obj["metadata"].as_object_mut() {
            for volatile in [
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "managedFields",
                "generation",
            ] {
                meta.remove(volatile);
            }
            if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
                annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
                if annotations.is_empty() {
                    meta.remove("annotations");
                }
            }
        }
        for condition in obj
            .pointer_mut("/status/conditions")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(c) = condition.as_object_mut() {
                c.remove("lastUpdateTime");
                c.remove("lastTransitionTime");
            }
        }
        out.insert(key, obj);
    }
    Ok(out)
}

fn kubectl_at(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Result<String> {
    use std::io::Write;
    let mut child = std::process::Command::new(ubernetes_e2e::kubectl_bin())
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin.unwrap_or("").as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!("kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn differences(
    what: &str,
    want: &BTreeMap<String, Value>,
    got: &BTreeMap<String, Value>,
) -> Vec<String> {
    want.keys()
        .chain(got.keys().filter(|k| !want.contains_key(*k)))
        .filter(|k| want.get(*k) != got.get(*k))
        .map(|k| {
            format!(
                "{what} {k}:\n  kube-apiserver {}\n  ours           {}",
                want.get(k).map(Value::to_string).unwrap_or_default(),
                got.get(k).map(Value::to_string).unwrap_or_default()
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_kinds_print_and_default_as_kube_apiserver() -> Result<()> {
    let server = Server::start()?;
    let ours_kubectl = |args: &[&str], stdin: Option<&str>| match stdin {
        Some(input) => server.kubectl_stdin_ok(args, input),
        None => server.kubectl_ok(args),
    };
    setup(&ours_kubectl)?;
    let ours = tables(&server.client().await?).await?;
    let ours_objects = objects(&ours_kubectl)?;

    let reference: BTreeMap<String, Value> = serde_json::from_str(REFERENCE)?;
    let reference_objects: BTreeMap<String, Value> = serde_json::from_str(OBJECTS_REFERENCE)?;
    let mut problems = Vec::new();
    let (kube, kube_objects) = match kube_sh() {
        None => {
            eprintln!(
                "NOTE: shared/kube/kube.sh not found beside the checkout (nor $UBERNETES_KUBE_SH): \
                 comparing with the checked-in kube-apiserver 1.36.2 answers \
                 (tests/kube_reference/tables.json, objects.json)"
            );
            (reference, reference_objects)
        }
        Some(script) => {
            let name = format!("tables{}", std::process::id());
            let cluster = KubeCluster::up(&script, &name, false)?;
            let kc = cluster.kubeconfig.clone();
            let live_kubectl = |args: &[&str], stdin: Option<&str>| kubectl_at(&kc, args, stdin);
            setup(&live_kubectl)?;
            let live = tables(&cluster.client().await?).await?;
            let live_objects = objects(&live_kubectl)?;
            if std::env::var_os("UBERNETES_WRITE_REFERENCE").is_some() {
                std::fs::write(
                    "tests/kube_reference/tables.json",
                    serde_json::to_string_pretty(&live)? + "\n",
                )?;
                std::fs::write(
                    "tests/kube_reference/objects.json",
                    serde_json::to_string_pretty(&live_objects)? + "\n",
                )?;
            }
            problems.extend(differences(
                "tests/kube_reference/tables.json is stale:",
                &live,
                &reference,
            ));
            problems.extend(differences(
                "tests/kube_reference/objects.json is stale:",
                &live_objects,
                &reference_objects,
            ));
            (live, live_objects)
        }
    };
    // A documented difference (docs/api-compatibility.md): kube's
    // StorageObjectInUseProtection admission adds this finalizer, which only
    // kube-controller-manager's protection controller removes; the
    // federation runs no such controller, so a delete would hang.
    let mut kube_objects = kube_objects;
    for obj in kube_objects.values_mut() {
        let protected = obj.pointer("/metadata/finalizers")
            == Some(&serde_json::json!(["kubernetes.io/vac-protection"]));
        if protected && let Some(meta) = obj["metadata"].as_object_mut() {
            meta.remove("finalizers");
        }
    }
    problems.extend(differences("Table of", &kube, &ours));
    problems.extend(differences("Object", &kube_objects, &ours_objects));
    if !problems.is_empty() {
        bail!("{} difference(s):\n{}", problems.len(), problems.join("\n"));
    }
    // Not vacuous: every list has its object(s), every object was read.
    for path in LISTS {
        let rows = kube[*path]["rows"].as_array().map_or(0, Vec::len);
        assert!(rows >= 1, "{path}: no rows in {}", kube[*path]);
    }
    assert!(kube_objects.len() >= 25, "{kube_objects:?}");
    Ok(())
}
