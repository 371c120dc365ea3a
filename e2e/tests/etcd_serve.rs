//! `ubernetes serve --etcd-servers`: the store is a real etcd (started here,
//! see `ubernetes_storage::etcd_process` for which binary; skipped with a
//! message when there is none). Two servers on the same etcd and prefix,
//! started at the same time (both bootstrap the default objects), serve the
//! same objects with the same resourceVersions, which are etcd's revisions:
//! kubectl create / get / list / watch through either sees the other's writes.

mod kubectl_support;

use anyhow::{Context, Result};
use serde_json::Value;
use ubernetes_e2e::Server;
use ubernetes_storage::Storage;
use ubernetes_storage::etcd_engine::{EtcdOptions, EtcdStorage};
use ubernetes_storage::etcd_process::EtcdProcess;

use kubectl_support::{SETTLE, Streaming, json};

fn rv(obj: &Value) -> Result<String> {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .map(str::to_string)
        .context("resourceVersion")
}

#[test]
fn two_servers_on_one_etcd_serve_the_same_objects_and_resource_versions() -> Result<()> {
    let Some(etcd) = EtcdProcess::start()? else {
        eprintln!(
            "SKIPPED: no etcd binary (set ETCD_BIN, install Debian's etcd-server, or unpack \
             ../shared/kube); scripts/test.sh installs etcd-server"
        );
        return Ok(());
    };
    eprintln!("etcd {} at {}", etcd.binary.display(), etcd.url);
    let flags = ["--etcd-servers", etcd.url.as_str(), "--etcd-prefix", "/fed"];
    // Both start (and bootstrap namespaces, the kubernetes Service, RBAC) at once.
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| Server::start_with(&flags));
        let b = s.spawn(|| Server::start_with(&flags));
        (a.join(), b.join())
    });
    let a = a.map_err(|_| anyhow::anyhow!("server a panicked"))??;
    let b = b.map_err(|_| anyhow::anyhow!("server b panicked"))??;
    assert!(
        !a.data_dir().join("store").exists(),
        "no embedded store with --etcd-servers"
    );

    // Created through a, read through b: the same object, the same version.
    a.kubectl_ok(&["create", "configmap", "shared", "--from-literal=k=one"])?;
    let on_a = json(&a, &["get", "configmap", "shared"])?;
    let on_b = json(&b, &["get", "configmap", "shared"])?;
    assert_eq!(on_a["metadata"]["uid"], on_b["metadata"]["uid"]);
    assert_eq!(rv(&on_a)?, rv(&on_b)?);
    assert_eq!(on_b["data"]["k"], "one");

    // The resourceVersion is etcd's revision of the key, which lives under
    // --etcd-prefix.
    let rt = tokio::runtime::Runtime::new()?;
    let etcd_key = rt.block_on(async {
        let raw = EtcdStorage::connect(&EtcdOptions {
            endpoints: vec![etcd.url.clone()],
            prefix: "/fed".into(),
            ..Default::default()
        })
        .await?;
        raw.get("/core/configmaps/default/shared").await
    })?;
    let etcd_key = etcd_key.context("the ConfigMap is in etcd at /fed/core/configmaps/...")?;
    assert_eq!(etcd_key.mod_revision.to_string(), rv(&on_a)?);

    // A list through b has it, at a list resourceVersion not older than it
    // (the raw list: kubectl's own List drops the resourceVersion).
    let list: Value = serde_json::from_str(&b.kubectl_ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/configmaps",
    ])?)?;
    assert!(
        rv(&list)?.parse::<u64>()? >= rv(&on_a)?.parse::<u64>()?,
        "{list}"
    );
    let names: Vec<&str> = list["items"]
        .as_array()
        .context("items")?
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert!(names.contains(&"shared"), "{names:?}");

    // A watch on b sees writes made through a, with a's resourceVersions.
    let mut watch = Streaming::start(
        &b,
        &[
            "get",
            "configmaps",
            "-w",
            "--output-watch-events",
            "-o",
            "jsonpath={.type} {.object.metadata.name} {.object.metadata.resourceVersion}{\"\\n\"}",
        ],
    )?;
    watch.wait_for(SETTLE, |l| l.starts_with("ADDED shared"))?;
    a.kubectl_ok(&["create", "configmap", "second"])?;
    let second_rv = rv(&json(&a, &["get", "configmap", "second"])?)?;
    let line = watch.wait_for(SETTLE, |l| l.contains("second"))?;
    assert_eq!(line, format!("ADDED second {second_rv}"));
    a.kubectl_ok(&[
        "patch",
        "configmap",
        "shared",
        "-p",
        r#"{"data":{"k":"two"}}"#,
    ])?;
    let patched = json(&a, &["get", "configmap", "shared"])?;
    let line = watch.wait_for(SETTLE, |l| l.contains("shared"))?;
    assert_eq!(line, format!("MODIFIED shared {}", rv(&patched)?));
    drop(watch);

    // A stale update through b (a's first resourceVersion) conflicts.
    let mut stale = on_b.clone();
    stale["data"]["k"] = Value::from("stale");
    let out = b.kubectl_stdin(&["replace", "-f", "-"], &stale.to_string())?;
    assert!(!out.status.success(), "a stale replace must conflict");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the object has been modified"),
        "409 Conflict: {err}"
    );

    // A watch through a resumes from the resourceVersion b's list gave.
    // kube-root-ca.crt is left out: each server has its own CA here (not
    // the shared PKI of docs/operations.md, "HA topology"), so the leader's
    // root-CA publisher may rewrite it with its own CA meanwhile.
    let b_list_rv = rv(&list)?;
    let events = a.kubectl_ok(&[
        "get",
        "--raw",
        &format!(
            "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={b_list_rv}&timeoutSeconds=2&fieldSelector=metadata.name!%3Dkube-root-ca.crt"
        ),
    ])?;
    let seen: Vec<(String, String)> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| {
            (
                e["type"].as_str().unwrap_or("").to_string(),
                e["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("ADDED".to_string(), "second".to_string()),
            ("MODIFIED".to_string(), "shared".to_string())
        ],
        "{events}"
    );

    // Both servers' bootstrap objects are there once (no duplicates, no failures).
    let ns = json(&b, &["get", "namespaces"])?;
    let mut ns_names: Vec<&str> = ns["items"]
        .as_array()
        .context("items")?
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    ns_names.sort_unstable();
    for want in ["default", "kube-node-lease", "kube-public", "kube-system"] {
        assert!(ns_names.contains(&want), "{ns_names:?}");
    }
    drop((a, b));
    drop(etcd);
    Ok(())
}
