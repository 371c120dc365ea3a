//! `ubernetes serve --event-ttl 3s` (kube-apiserver's flag): an Event is
//! deleted TTL after its last write, whichever API wrote it.
//!
//! - a core v1 Event and an events.k8s.io/v1 Event created together are
//!   there at 2 s and gone soon after 3 s;
//! - one created with them and written again at 2 s outlives them and is
//!   gone soon after 5 s;
//! - the federation's own Event (a Cluster whose Secret is missing gets
//!   `ClusterCredentialsInvalid`) expires too;
//! - the same on etcd (`--etcd-servers`, leader election on; skipped with
//!   a message when there is no etcd binary).

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use ubernetes_e2e::{Server, eventually};
use ubernetes_storage::etcd_process::EtcdProcess;

const TTL: Duration = Duration::from_secs(3);
/// How late after its deadline an Event may still be seen: the sweeper's
/// own delay is milliseconds; this covers kubectl's start-up and a busy CI.
const SLACK: Duration = Duration::from_millis(2500);

const EVENTS: &str = r#"{"apiVersion": "v1", "kind": "List", "items": [
 {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "once", "namespace": "default"},
  "involvedObject": {"kind": "ConfigMap", "name": "c", "namespace": "default"},
  "reason": "Tested", "message": "written once", "type": "Normal"},
 {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "twice", "namespace": "default"},
  "involvedObject": {"kind": "ConfigMap", "name": "c", "namespace": "default"},
  "reason": "Tested", "message": "written twice", "type": "Normal"},
 {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "new-api", "namespace": "default"},
  "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "example.com/tester",
  "reportingInstance": "tester-1", "action": "Test", "reason": "Tested", "type": "Normal",
  "regarding": {"kind": "ConfigMap", "name": "c", "namespace": "default"}, "note": "events.k8s.io"}
]}"#;

/// Whether Event `name` exists in `default` (through the core API).
fn exists(server: &Server, name: &str) -> Result<bool> {
    let out = server.kubectl_ok(&[
        "get",
        "event",
        name,
        "-n",
        "default",
        "--ignore-not-found",
        "-o",
        "name",
    ])?;
    Ok(!out.trim().is_empty())
}

/// Wait until Event `name` is gone; when it went, measured from `since`.
fn gone_after(server: &Server, name: &str, since: Instant, limit: Duration) -> Result<Duration> {
    eventually(limit.saturating_sub(since.elapsed()), || {
        Ok((!exists(server, name)?).then(|| since.elapsed()))
    })
    .with_context(|| format!("Event {name} still there {limit:?} after its last write"))
}

#[test]
fn events_expire_ttl_after_their_last_write() -> Result<()> {
    let server = Server::start_with(&["--event-ttl", "3s"])?;
    check_expiry(&server)
}

#[test]
fn events_expire_on_etcd_too() -> Result<()> {
    let Some(etcd) = EtcdProcess::start()? else {
        eprintln!("SKIPPED: no etcd binary (set ETCD_BIN or install etcd-server)");
        return Ok(());
    };
    let server = Server::start_with(&["--event-ttl", "3s", "--etcd-servers", etcd.url.as_str()])?;
    check_expiry(&server)
}

fn check_expiry(server: &Server) -> Result<()> {
    server.kubectl_stdin_ok(&["create", "-f", "-"], EVENTS)?;
    let created = Instant::now();
    // The events.k8s.io Event is one of the same objects.
    ensure!(
        exists(server, "new-api")?,
        "the events.k8s.io Event is a core Event"
    );

    std::thread::sleep(Duration::from_secs(2).saturating_sub(created.elapsed()));
    for name in ["once", "twice", "new-api"] {
        ensure!(exists(server, name)?, "{name} expired before its TTL");
    }
    server.kubectl_ok(&[
        "patch",
        "event",
        "twice",
        "-n",
        "default",
        "--type=merge",
        "-p",
        r#"{"message": "written again"}"#,
    ])?;
    let rewritten = Instant::now();

    let once = gone_after(server, "once", created, TTL + SLACK)?;
    let new_api = gone_after(server, "new-api", created, TTL + SLACK)?;
    ensure!(
        once >= Duration::from_secs(2) && new_api >= Duration::from_secs(2),
        "gone at {once:?} / {new_api:?}"
    );
    // Past the first two's expiry, the rewritten one is still there.
    std::thread::sleep(Duration::from_secs(2).saturating_sub(rewritten.elapsed()));
    ensure!(
        exists(server, "twice")?,
        "the write at 2 s restarted its TTL"
    );
    let twice = gone_after(server, "twice", rewritten, TTL + SLACK)?;
    ensure!(twice >= Duration::from_secs(2), "gone at {twice:?}");

    // The federation's own Events: a Cluster whose Secret does not exist.
    ubernetes_e2e::federation::create_cluster(
        server,
        "ghost",
        "https://127.0.0.1:1",
        "no-such-secret",
        &[],
    )?;
    let name = eventually(Duration::from_secs(20), || {
        let out = server.kubectl_ok(&[
            "get",
            "events",
            "-A",
            "--field-selector",
            "reason=ClusterCredentialsInvalid",
            "-o",
            "jsonpath={.items[*].metadata.name}",
        ])?;
        Ok(Some(out.trim().to_string()).filter(|n| !n.is_empty()))
    })
    .context("the federation's ClusterCredentialsInvalid Event")?;
    let seen = Instant::now();
    let ns = server.kubectl_ok(&[
        "get",
        "events",
        "-A",
        "--field-selector",
        &format!("metadata.name={name}"),
        "-o",
        "jsonpath={.items[0].metadata.namespace}",
    ])?;
    eventually(TTL + SLACK, || {
        let out = server.kubectl_ok(&[
            "get",
            "event",
            &name,
            "-n",
            ns.trim(),
            "--ignore-not-found",
            "-o",
            "name",
        ])?;
        Ok(out.trim().is_empty().then_some(()))
    })
    .with_context(|| format!("the federation's Event {ns}/{name} did not expire"))?;
    ensure!(seen.elapsed() <= TTL + SLACK);
    Ok(())
}
