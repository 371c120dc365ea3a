//! `ubernetes kubeconfig --members` (SPEC §3.13): one kubeconfig context
//! per joined cluster, `federation@NAME`, whose server is that cluster's
//! proxy on the federation (`…/apis/federation/v1beta1/clusters/NAME/proxy`)
//! and whose user is the federation context's own, so every request is the
//! caller's: the proxy checks `clusters/proxy` and acts as the caller in the
//! member. And `federation@all`, whose server is [`ALL_MEMBERS_PATH`], the
//! path reserved for the merged view of every member.
//!
//! The kubeconfig is edited as a YAML document, not through kube's typed
//! `Kubeconfig` (which would drop fields it does not know): only the
//! `clusters` and `contexts` entries named `federation@…` are added or
//! replaced, everything else is written back as it was read (comments
//! aside).

use std::path::Path;

use anyhow::{Context as _, bail};
use kube::api::{Api, DynamicObject};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

/// The path on the federation of one member's proxy.
fn member_path(name: &str) -> String {
    format!("/apis/federation/v1beta1/clusters/{name}/proxy")
}

/// The path reserved for the merged view of every member (`-` is no
/// Cluster's name: names are DNS subdomains, which start alphanumeric).
pub const ALL_MEMBERS_PATH: &str = "/apis/federation/v1beta1/clusters/-/proxy";

/// The name of the context (and cluster entry) for member `name`.
pub fn context_name(name: &str) -> String {
    format!("federation@{name}")
}

/// Add `federation@NAME` per joined cluster and `federation@all` to the
/// kubeconfig at `path`, from its context `context` (the federation's).
pub async fn add_member_contexts(path: &Path, context: &str) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the kubeconfig {}", path.display()))?;
    let kubeconfig = Kubeconfig::from_yaml(&text)
        .with_context(|| format!("{} is not a kubeconfig", path.display()))?;
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &KubeConfigOptions {
            context: Some(context.to_string()),
            ..Default::default()
        },
    )
    .await
    .with_context(|| {
        format!(
            "cannot use context {context:?} of {} (pass --context with the federation's)",
            path.display()
        )
    })?;
    let client = kube::Client::try_from(config)
        .with_context(|| format!("cannot build a client for context {context:?}"))?;
    let resource = ApiResource {
        group: "federation".into(),
        version: "v1beta1".into(),
        api_version: "federation/v1beta1".into(),
        kind: "Cluster".into(),
        plural: "clusters".into(),
    };
    let clusters = Api::<DynamicObject>::all_with(client, &resource)
        .list(&Default::default())
        .await
        .with_context(|| format!("cannot list the federation's clusters (context {context:?})"))?;
    let mut names: Vec<String> = clusters
        .items
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    names.sort();

    let mut doc: Value = serde_saphyr::from_str(&text)
        .with_context(|| format!("cannot read {} as YAML", path.display()))?;
    let added = add_contexts(&mut doc, context, &names)?;
    let yaml = serde_saphyr::to_string(&doc).context("cannot write the kubeconfig as YAML")?;
    write_replacing(path, &yaml)?;
    for (name, server) in added {
        println!("context {name} (server {server})");
    }
    println!(
        "use them with: kubectl --kubeconfig {} --context {} get pods -A",
        path.display(),
        names
            .first()
            .map_or_else(|| context_name("NAME"), |n| context_name(n))
    );
    Ok(())
}

/// Add (or replace) in `doc` the cluster and context entries of each of
/// `members` and of `all`, copied from context `context`; the
/// `(context, server)` pairs written. A member named `all` gets no context
/// of its own (`federation@all` is the merged view); its proxy path is
/// still reachable with `kubectl get --raw`.
fn add_contexts(
    doc: &mut Value,
    context: &str,
    members: &[String],
) -> anyhow::Result<Vec<(String, String)>> {
    let entry = |list: &str, name: &str| -> Option<Value> {
        doc.get(list)?
            .as_array()?
            .iter()
            .find(|e| e.get("name").and_then(Value::as_str) == Some(name))
            .cloned()
    };
    let Some(fed_context) = entry("contexts", context).and_then(|c| c.get("context").cloned())
    else {
        bail!("the kubeconfig has no context {context:?} (pass --context with the federation's)");
    };
    let cluster_name = fed_context
        .get("cluster")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let Some(fed_cluster) =
        entry("clusters", &cluster_name).and_then(|c| c.get("cluster").cloned())
    else {
        bail!(
            "context {context:?} names cluster {cluster_name:?}, which the kubeconfig does not have"
        );
    };
    let Some(base) = fed_cluster.get("server").and_then(Value::as_str) else {
        bail!("cluster {cluster_name:?} of the kubeconfig has no server");
    };
    let base = base.trim_end_matches('/').to_string();
    let mut paths: Vec<(String, String)> = members
        .iter()
        .filter(|m| {
            if m.as_str() == "all" {
                eprintln!(
                    "warning: cluster \"all\" gets no context: federation@all is every member's"
                );
            }
            m.as_str() != "all"
        })
        .map(|m| (context_name(m), member_path(m)))
        .collect();
    paths.push((context_name("all"), ALL_MEMBERS_PATH.to_string()));

    let mut added = Vec::new();
    for (name, path) in paths {
        let server = format!("{base}{path}");
        let mut cluster = fed_cluster.clone();
        cluster["server"] = Value::String(server.clone());
        upsert(doc, "clusters", json!({"name": name, "cluster": cluster}))?;
        let mut ctx = fed_context.clone();
        ctx["cluster"] = Value::String(name.clone());
        upsert(doc, "contexts", json!({"name": name, "context": ctx}))?;
        added.push((name, server));
    }
    Ok(added)
}

/// Replace the entry of `doc[list]` with `entry`'s name, or append it.
fn upsert(doc: &mut Value, list: &str, entry: Value) -> anyhow::Result<()> {
    let Some(map) = doc.as_object_mut() else {
        bail!("the kubeconfig is not a YAML mapping");
    };
    let items = map
        .entry(list.to_string())
        .or_insert_with(|| Value::Array(Vec::new()));
    if items.is_null() {
        *items = Value::Array(Vec::new());
    }
    let Some(items) = items.as_array_mut() else {
        bail!("the kubeconfig's {list:?} is not a list");
    };
    match items
        .iter_mut()
        .find(|e| e.get("name") == entry.get("name"))
    {
        Some(old) => *old = entry,
        None => items.push(entry),
    }
    Ok(())
}

/// Write `text` to `path` through a file beside it renamed over it, with
/// the old file's permissions (a kubeconfig holds credentials).
fn write_replacing(path: &Path, text: &str) -> anyhow::Result<()> {
    let tmp = path.with_extension("ubernetes-tmp");
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(&tmp, meta.permissions())
            .with_context(|| format!("cannot set the permissions of {}", tmp.display()))?;
    }
    std::fs::rename(&tmp, path).with_context(|| format!("cannot replace {}", path.display()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)] // a failing test may panic
mod tests {
    use super::*;

    const KUBECONFIG: &str = r#"
apiVersion: v1
kind: Config
preferences: {colors: true}
clusters:
- name: fed
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: Q0E=
    x-unknown: kept
- name: federation@east
  cluster: {server: "https://stale"}
- name: other
  cluster: {server: "https://10.0.0.1"}
users:
- name: admin
  user: {token: secret}
contexts:
- name: federation
  context: {cluster: fed, user: admin, namespace: apps}
- name: other
  context: {cluster: other, user: admin}
current-context: other
"#;

    #[test]
    fn member_contexts_copy_the_federation_context_and_keep_the_rest() {
        let mut doc: Value = serde_saphyr::from_str(KUBECONFIG).unwrap();
        let added = add_contexts(&mut doc, "federation", &["east".into(), "west".into()]).unwrap();
        assert_eq!(
            added,
            [
                (
                    "federation@east".to_string(),
                    "https://127.0.0.1:6443/apis/federation/v1beta1/clusters/east/proxy"
                        .to_string()
                ),
                (
                    "federation@west".to_string(),
                    "https://127.0.0.1:6443/apis/federation/v1beta1/clusters/west/proxy"
                        .to_string()
                ),
                (
                    "federation@all".to_string(),
                    "https://127.0.0.1:6443/apis/federation/v1beta1/clusters/-/proxy".to_string()
                ),
            ]
        );
        // Round trip through YAML, as the file is written.
        let doc: Value = serde_saphyr::from_str(&serde_saphyr::to_string(&doc).unwrap()).unwrap();
        let clusters = doc["clusters"].as_array().unwrap();
        let names: Vec<&str> = clusters
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        // The stale entry is replaced in place, the others appended.
        assert_eq!(
            names,
            [
                "fed",
                "federation@east",
                "other",
                "federation@west",
                "federation@all"
            ]
        );
        let east = &clusters[1]["cluster"];
        assert_eq!(
            east["server"],
            "https://127.0.0.1:6443/apis/federation/v1beta1/clusters/east/proxy"
        );
        assert_eq!(east["certificate-authority-data"], "Q0E=");
        assert_eq!(east["x-unknown"], "kept");
        let ctx = doc["contexts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "federation@west")
            .unwrap();
        assert_eq!(
            ctx["context"],
            json!({"cluster": "federation@west", "user": "admin", "namespace": "apps"})
        );
        // Nothing else changed.
        assert_eq!(doc["current-context"], "other");
        assert_eq!(doc["preferences"], json!({"colors": true}));
        assert_eq!(
            doc["users"],
            json!([{"name": "admin", "user": {"token": "secret"}}])
        );
        assert_eq!(clusters[2]["cluster"]["server"], "https://10.0.0.1");
        // The result is a kubeconfig kube reads.
        let text = serde_saphyr::to_string(&doc).unwrap();
        let kc = Kubeconfig::from_yaml(&text).unwrap();
        assert!(kc.contexts.iter().any(|c| c.name == "federation@all"));
    }

    #[test]
    fn a_missing_context_or_a_member_named_all_are_handled() {
        let mut doc: Value = serde_saphyr::from_str(KUBECONFIG).unwrap();
        let err = add_contexts(&mut doc, "nope", &[]).unwrap_err();
        assert!(err.to_string().contains("no context \"nope\""), "{err}");
        let added = add_contexts(&mut doc, "federation", &["all".into()]).unwrap();
        assert_eq!(added.len(), 1);
        assert!(added[0].1.ends_with("/clusters/-/proxy"));
    }
}
