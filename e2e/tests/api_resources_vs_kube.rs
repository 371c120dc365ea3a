//! The served API against kube-apiserver 1.36's, as kubectl 1.37 sees it:
//! `kubectl api-resources -o wide` (name, short names, group/version,
//! scope, kind, verbs, categories) and `kubectl api-versions` must list
//! exactly kube-apiserver's, plus our own `federation/v1beta1` (`clusters`,
//! `propagationrecords`) and the MCS API's `multicluster.x-k8s.io/v1alpha1`
//! (`serviceexports`, `serviceimports`) and cluster inventory API
//! (`clusterprofiles`), listed explicitly below. The discovery entries of
//! the kinds added for issue 15 (`bindings`, `componentstatuses`,
//! `pods/binding`, `resource.k8s.io/v1`, `flowcontrol.apiserver.k8s.io/v1`,
//! `ipaddresses`, `servicecidrs`) are compared field by field too, and so is
//! the order of the groups in `/apis` (kube's APIService priorities).
//!
//! With `../shared/kube/kube.sh` the reference is a live kube-apiserver
//! 1.36.2 (and the checked-in reference files must still match it);
//! without it, the files in `tests/kube_reference/`, generated from it.

use std::collections::BTreeSet;

use anyhow::{Context, Result, bail};
use serde_json::Value;
use ubernetes_e2e::Server;
use ubernetes_e2e::real_kube::{KubeCluster, kube_sh};

/// Our resources kube-apiserver does not have (`kubectl api-resources -o
/// wide` lines, columns collapsed to single spaces).
const OUR_EXTRA_RESOURCES: [&str; 5] = [
    "clusters federation/v1beta1 false Cluster create,delete,deletecollection,get,list,patch,update,watch",
    "propagationrecords federation/v1beta1 true PropagationRecord create,delete,deletecollection,get,list,patch,update,watch",
    "serviceexports svcex,svcexport multicluster.x-k8s.io/v1alpha1 true ServiceExport create,delete,deletecollection,get,list,patch,update,watch",
    "serviceimports svcim,svcimport multicluster.x-k8s.io/v1alpha1 true ServiceImport create,delete,deletecollection,get,list,patch,update,watch",
    "clusterprofiles multicluster.x-k8s.io/v1alpha1 true ClusterProfile create,delete,deletecollection,get,list,patch,update,watch",
];
/// Our group/versions kube-apiserver does not have.
const OUR_EXTRA_VERSIONS: [&str; 2] = ["federation/v1beta1", "multicluster.x-k8s.io/v1alpha1"];

const REF_RESOURCES: &str = include_str!("kube_reference/api-resources.txt");
const REF_VERSIONS: &str = include_str!("kube_reference/api-versions.txt");
const REF_DISCOVERY: &str = include_str!("kube_reference/discovery-new-kinds.json");
const REF_GROUPS: &str = include_str!("kube_reference/apis-groups.txt");

/// The group names of `/apis`, in the server's order (kube orders them by
/// the APIServices' `groupPriorityMinimum`), without our `federation` and
/// `multicluster.x-k8s.io`.
fn group_order(apis: &str) -> Result<Vec<String>> {
    let v: Value = serde_json::from_str(apis)?;
    Ok(v["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g["name"].as_str())
        .filter(|g| *g != "federation" && *g != "multicluster.x-k8s.io")
        .map(String::from)
        .collect())
}

/// The lines of a kubectl output, whitespace collapsed (the table's column
/// widths depend on the longest entry, which our extras change).
fn line_set(text: &str) -> BTreeSet<String> {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect()
}

/// kubectl against a kubeconfig, as the real cluster's tests run it.
fn kubectl_at(
    kubeconfig: &std::path::Path,
    cache: &std::path::Path,
    args: &[&str],
) -> Result<String> {
    let out = std::process::Command::new(ubernetes_e2e::kubectl_bin())
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .env("KUBECACHEDIR", cache)
        .env_remove("KUBECONFIG")
        .output()
        .context("running kubectl (set $KUBECTL)")?;
    if !out.status.success() {
        bail!(
            "kubectl {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The discovery entries the reference file holds, from a server reached
/// by `get_raw` (a `kubectl get --raw PATH`).
fn new_kind_discovery(get_raw: impl Fn(&str) -> Result<String>) -> Result<Value> {
    let reference: Value = serde_json::from_str(REF_DISCOVERY)?;
    let mut out = serde_json::Map::new();
    for (gv, wanted) in reference.as_object().context("reference is an object")? {
        let path = if gv == "v1" {
            "/api/v1".to_string()
        } else {
            format!("/apis/{gv}")
        };
        let list: Value = serde_json::from_str(&get_raw(&path)?)?;
        let names: BTreeSet<&str> = wanted
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["name"].as_str())
            .collect();
        let mut found: Vec<Value> = list["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["name"].as_str().is_some_and(|n| names.contains(n)))
            .cloned()
            .map(|mut r| {
                if let Some(m) = r.as_object_mut() {
                    m.remove("storageVersionHash");
                }
                r
            })
            .collect();
        found.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        out.insert(gv.clone(), Value::Array(found));
    }
    Ok(Value::Object(out))
}

fn sorted_reference_discovery() -> Result<Value> {
    let mut v: Value = serde_json::from_str(REF_DISCOVERY)?;
    for list in v.as_object_mut().context("object")?.values_mut() {
        if let Some(a) = list.as_array_mut() {
            a.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        }
    }
    Ok(v)
}

fn diff(
    what: &str,
    kube: &BTreeSet<String>,
    ours: &BTreeSet<String>,
    extras: &[&str],
) -> Vec<String> {
    let extras: BTreeSet<String> = extras
        .iter()
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    let mut problems = Vec::new();
    for missing in kube.difference(ours) {
        problems.push(format!("{what}: kube-apiserver has, we lack: {missing}"));
    }
    for extra in ours.difference(kube) {
        if !extras.contains(extra) {
            problems.push(format!("{what}: we have, kube-apiserver does not: {extra}"));
        }
    }
    for e in &extras {
        if !ours.contains(e) {
            problems.push(format!("{what}: our listed extra is not served: {e}"));
        }
    }
    problems
}

#[test]
fn api_resources_and_versions_match_kube_apiserver() -> Result<()> {
    let server = Server::start()?;
    let ours_resources = line_set(&server.kubectl_ok(&["api-resources", "-o", "wide"])?);
    let ours_versions = line_set(&server.kubectl_ok(&["api-versions"])?);
    let ours_discovery = new_kind_discovery(|p| server.kubectl_ok(&["get", "--raw", p]))?;
    let ours_groups = group_order(&server.kubectl_ok(&["get", "--raw", "/apis"])?)?;
    let reference_groups: Vec<String> = REF_GROUPS.lines().map(String::from).collect();

    let reference_resources = line_set(REF_RESOURCES);
    let reference_versions = line_set(REF_VERSIONS);
    let reference_discovery = sorted_reference_discovery()?;

    let mut problems = Vec::new();
    let (kube_resources, kube_versions, kube_discovery, kube_groups) = match kube_sh() {
        None => {
            eprintln!(
                "NOTE: shared/kube/kube.sh not found beside the checkout (nor $UBERNETES_KUBE_SH): \
                 comparing with the checked-in kube-apiserver 1.36.2 output (tests/kube_reference)"
            );
            (
                reference_resources,
                reference_versions,
                reference_discovery,
                reference_groups,
            )
        }
        Some(script) => {
            let name = format!("apires{}", std::process::id());
            let kube = KubeCluster::up(&script, &name, false)?;
            let cache = tempfile::tempdir()?;
            let kc = kube.kubeconfig.clone();
            let live_resources = line_set(&kubectl_at(
                &kc,
                cache.path(),
                &["api-resources", "-o", "wide"],
            )?);
            let live_versions = line_set(&kubectl_at(&kc, cache.path(), &["api-versions"])?);
            let live_discovery =
                new_kind_discovery(|p| kubectl_at(&kc, cache.path(), &["get", "--raw", p]))?;
            // The checked-in files must still be what kube-apiserver says.
            problems.extend(diff(
                "reference api-resources",
                &live_resources,
                &reference_resources,
                &[],
            ));
            problems.extend(diff(
                "reference api-versions",
                &live_versions,
                &reference_versions,
                &[],
            ));
            if live_discovery != reference_discovery {
                problems.push(format!(
                    "tests/kube_reference/discovery-new-kinds.json is stale; kube-apiserver says: {}",
                    serde_json::to_string_pretty(&live_discovery)?
                ));
            }
            let live_groups =
                group_order(&kubectl_at(&kc, cache.path(), &["get", "--raw", "/apis"])?)?;
            if live_groups != reference_groups {
                problems.push(format!(
                    "tests/kube_reference/apis-groups.txt is stale; kube-apiserver says {live_groups:?}"
                ));
            }
            (live_resources, live_versions, live_discovery, live_groups)
        }
    };
    problems.extend(diff(
        "api-resources",
        &kube_resources,
        &ours_resources,
        &OUR_EXTRA_RESOURCES,
    ));
    problems.extend(diff(
        "api-versions",
        &kube_versions,
        &ours_versions,
        &OUR_EXTRA_VERSIONS,
    ));
    for (gv, kube_list) in kube_discovery.as_object().context("object")? {
        let ours = &ours_discovery[gv];
        if ours != kube_list {
            problems.push(format!(
                "discovery of {gv}: kube-apiserver {kube_list}\n  ours {ours}"
            ));
        }
    }
    if ours_groups != kube_groups {
        problems.push(format!(
            "/apis group order: kube-apiserver {kube_groups:?}\n  ours {ours_groups:?}"
        ));
    }
    if !problems.is_empty() {
        bail!("{} difference(s):\n{}", problems.len(), problems.join("\n"));
    }
    // Not vacuous: both sides list the whole API.
    assert!(kube_resources.len() > 60, "{kube_resources:?}");
    Ok(())
}
