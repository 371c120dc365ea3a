//! `kubectl get` of the cluster-policy kinds prints what kube-apiserver 1.36
//! prints: the Table each list answers (`Accept: application/json;as=Table`)
//! has kube's columns (names, types, formats, descriptions, priorities) and
//! kube's cells, for one object of each kind
//! (`tests/kube_reference/tables-objects.yaml`).
//!
//! With `../shared/kube/kube.sh` the reference is a live kube-apiserver given
//! the same objects (and `tests/kube_reference/tables.json` must still be
//! what it answers); without it, that checked-in file. The `Age` and
//! `Created At` cells are left out (they depend on when the test runs).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use ubernetes_e2e::Server;
use ubernetes_e2e::real_kube::{KubeCluster, kube_sh};

const OBJECTS: &str = "tests/kube_reference/tables-objects.yaml";
const REFERENCE: &str = include_str!("kube_reference/tables.json");

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

async fn client_of(kubeconfig: &Path, context: &str) -> Result<kube::Client> {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(
        kc,
        &kube::config::KubeConfigOptions {
            context: Some(context.into()),
            ..Default::default()
        },
    )
    .await?;
    Ok(kube::Client::try_from(config)?)
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
    LISTS
        .iter()
        .filter(|p| want.get(**p) != got.get(**p))
        .map(|p| {
            format!(
                "{what} {p}:\n  kube-apiserver {}\n  ours           {}",
                want.get(*p).map(Value::to_string).unwrap_or_default(),
                got.get(*p).map(Value::to_string).unwrap_or_default()
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_of_the_policy_kinds_are_kube_apiservers() -> Result<()> {
    let server = Server::start()?;
    setup(&|args, stdin| match stdin {
        Some(input) => server.kubectl_stdin_ok(args, input),
        None => server.kubectl_ok(args),
    })?;
    let ours = tables(&server.client().await?).await?;

    let reference: BTreeMap<String, Value> = serde_json::from_str(REFERENCE)?;
    let mut problems = Vec::new();
    let kube = match kube_sh() {
        None => {
            eprintln!(
                "NOTE: shared/kube/kube.sh not found beside the checkout (nor $UBERNETES_KUBE_SH): \
                 comparing with the checked-in kube-apiserver 1.36.2 Tables \
                 (tests/kube_reference/tables.json)"
            );
            reference
        }
        Some(script) => {
            let name = format!("tables{}", std::process::id());
            let cluster = KubeCluster::up(&script, &name, false)?;
            let kc = cluster.kubeconfig.clone();
            setup(&|args, stdin| kubectl_at(&kc, args, stdin))?;
            let live = tables(&client_of(&kc, &cluster.name).await?).await?;
            if std::env::var_os("UBERNETES_WRITE_REFERENCE").is_some() {
                std::fs::write(
                    "tests/kube_reference/tables.json",
                    serde_json::to_string_pretty(&live)? + "\n",
                )?;
            }
            problems.extend(
                differences(
                    "tests/kube_reference/tables.json is stale:",
                    &live,
                    &reference,
                )
                .into_iter()
                .map(|d| d.replace("ours  ", "file  ")),
            );
            live
        }
    };
    problems.extend(differences("Table of", &kube, &ours));
    if !problems.is_empty() {
        bail!("{} difference(s):\n{}", problems.len(), problems.join("\n"));
    }
    // Not vacuous: every list has its object(s).
    for path in LISTS {
        let rows = kube[*path]["rows"].as_array().map_or(0, Vec::len);
        assert!(rows >= 1, "{path}: no rows in {}", kube[*path]);
    }
    Ok(())
}
