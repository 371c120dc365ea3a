//! Backup and restore as docs/operations.md tells operators to do them, on
//! real processes:
//! - the embedded store: the whole data dir copied while the server is
//!   stopped, the server changed afterwards, the copy put back → the objects
//!   are as they were at the backup, with the same resourceVersions;
//! - etcd: `etcdctl snapshot save` while the server serves, changes after
//!   it, `etcdctl snapshot restore` into a new data dir, a new etcd on it and
//!   a server on that etcd → the objects as at the snapshot.
//!
//! Secrets are encrypted at rest by default with a key in `DATA_DIR/pki`,
//! apart from the store: the data dir copy carries it, and the etcd restore
//! needs the old PKI directory beside the snapshot, or its Secrets are
//! unreadable (docs/operations.md, "Backup and restore").

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;
use ubernetes_e2e::Server;
use ubernetes_storage::etcd_process::EtcdProcess;

fn get(server: &Server, args: &[&str]) -> Result<Option<Value>> {
    server.kubectl_get(args)
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)
                .with_context(|| format!("copying {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// A Secret (encrypted at rest by default) in `ns`.
fn create_sealed_secret(server: &Server, ns: &str) -> Result<()> {
    server.kubectl_ok(&[
        "-n",
        ns,
        "create",
        "secret",
        "generic",
        "sealed",
        "--from-literal=k=c2VjcmV0",
    ])?;
    Ok(())
}

/// The Secret of [`create_sealed_secret`] reads back (its key was restored).
fn assert_sealed_secret(server: &Server, ns: &str) -> Result<()> {
    let secret = get(server, &["-n", ns, "secret", "sealed"])?.context("the Secret is back")?;
    assert_eq!(secret["data"]["k"], "YzJWamNtVjA=");
    Ok(())
}

#[test]
fn the_embedded_store_comes_back_from_a_copy_of_the_stopped_data_dir() -> Result<()> {
    let mut server = Server::start_with(&[])?;
    server.kubectl_ok(&["create", "namespace", "backed-up"])?;
    server.kubectl_ok(&[
        "-n",
        "backed-up",
        "create",
        "configmap",
        "kept",
        "--from-literal=k=before",
    ])?;
    create_sealed_secret(&server, "backed-up")?;
    let before =
        get(&server, &["-n", "backed-up", "configmap", "kept"])?.context("the ConfigMap exists")?;

    // The backup: the whole data dir, with the server stopped.
    server.stop();
    let backup = tempfile::tempdir()?;
    copy_dir(&server.data_dir(), backup.path())?;

    // Changes after the backup.
    server.restart()?;
    server.kubectl_ok(&[
        "-n",
        "backed-up",
        "patch",
        "configmap",
        "kept",
        "-p",
        r#"{"data":{"k":"after"}}"#,
    ])?;
    server.kubectl_ok(&["-n", "backed-up", "create", "configmap", "later"])?;

    // The restore: stop, put the copy in place, start.
    server.stop();
    std::fs::remove_dir_all(server.data_dir())?;
    copy_dir(backup.path(), &server.data_dir())?;
    server.restart()?;

    let restored = get(&server, &["-n", "backed-up", "configmap", "kept"])?
        .context("the ConfigMap is back")?;
    assert_eq!(restored["data"]["k"], "before");
    assert_eq!(restored["metadata"]["uid"], before["metadata"]["uid"]);
    assert_eq!(
        restored["metadata"]["resourceVersion"],
        before["metadata"]["resourceVersion"]
    );
    assert!(
        get(&server, &["-n", "backed-up", "configmap", "later"])?.is_none(),
        "what was created after the backup is not in it"
    );
    // The encrypted Secret reads with the key the copy carried (pki/).
    assert_sealed_secret(&server, "backed-up")?;
    Ok(())
}

/// `etcdctl`: `$ETCDCTL_BIN`, else on PATH (Debian's `etcd-client`), else
/// next to the etcd that `../shared/kube` unpacks.
fn etcdctl() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ETCDCTL_BIN").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("etcdctl"))
            .find(|c| c.is_file())
    });
    on_path.or_else(|| {
        let home = std::env::var_os("HOME")?;
        let cached = Path::new(&home).join(".cache/ubernetes-kube/bin/etcdctl");
        cached.is_file().then_some(cached)
    })
}

fn run(cmd: &mut Command) -> Result<()> {
    let out = cmd.env("ETCDCTL_API", "3").output()?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

#[test]
fn an_etcd_snapshot_restores_the_federation_into_a_new_etcd() -> Result<()> {
    let Some(etcdctl) = etcdctl() else {
        eprintln!(
            "SKIPPED: no etcdctl (install Debian's etcd-client, set ETCDCTL_BIN, or unpack \
             ../shared/kube); scripts/test.sh installs etcd-client"
        );
        return Ok(());
    };
    let Some(etcd) = EtcdProcess::start()? else {
        eprintln!("SKIPPED: no etcd binary (scripts/test.sh installs Debian's etcd-server)");
        return Ok(());
    };
    let flags = ["--etcd-servers", etcd.url.as_str()];
    let mut server = Server::start_with(&flags)?;
    server.kubectl_ok(&["create", "namespace", "snap"])?;
    server.kubectl_ok(&[
        "-n",
        "snap",
        "create",
        "configmap",
        "kept",
        "--from-literal=k=before",
    ])?;
    create_sealed_secret(&server, "snap")?;
    let before = get(&server, &["-n", "snap", "configmap", "kept"])?.context("ConfigMap")?;

    // The snapshot, taken while the server serves.
    let work = tempfile::tempdir()?;
    let snapshot = work.path().join("fed.db");
    run(Command::new(&etcdctl)
        .arg("--endpoints")
        .arg(&etcd.url)
        .arg("snapshot")
        .arg("save")
        .arg(&snapshot))?;

    server.kubectl_ok(&["-n", "snap", "delete", "configmap", "kept"])?;
    server.kubectl_ok(&["-n", "snap", "create", "configmap", "later"])?;
    server.stop();
    drop(etcd);

    // The restore into a new data dir and a new etcd on it.
    let restored_dir = work.path().join("restored");
    run(Command::new(&etcdctl)
        .arg("snapshot")
        .arg("restore")
        .arg(&snapshot)
        .arg("--name=test")
        .arg("--initial-cluster=test=http://127.0.0.1:2380")
        .arg("--initial-advertise-peer-urls=http://127.0.0.1:2380")
        .arg("--data-dir")
        .arg(&restored_dir))?;
    let restored_etcd =
        EtcdProcess::start_on(&restored_dir)?.context("etcd was found a moment ago")?;
    // The server of the restore gets the old PKI directory (the Secrets'
    // encryption key is there, not in etcd).
    let server = Server::start_with_pki(&["--etcd-servers", restored_etcd.url.as_str()], &server)?;

    let restored =
        get(&server, &["-n", "snap", "configmap", "kept"])?.context("the ConfigMap is back")?;
    assert_eq!(restored["data"]["k"], "before");
    assert_eq!(restored["metadata"]["uid"], before["metadata"]["uid"]);
    assert_eq!(
        restored["metadata"]["resourceVersion"],
        before["metadata"]["resourceVersion"]
    );
    assert!(
        get(&server, &["-n", "snap", "configmap", "later"])?.is_none(),
        "what was created after the snapshot is not in it"
    );
    assert_sealed_secret(&server, "snap")?;
    Ok(())
}
