//! The user's object is the user's (issue 11 item 6, must-show 8; SPEC
//! §3.8): with three members joined, a client cannot tell from its object
//! that members are joined. Create → update with the returned
//! resourceVersion succeeds; the object carries no annotation or finalizer
//! of the federation; a default (Background) delete is NotFound at once and
//! the member copies go right after, also across a federation restart while
//! a member is down; `--cascade=foreground` returns only after every member
//! copy is gone; `--cascade=orphan` leaves the copies, let go.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use serde_json::Value;
use ubernetes_e2e::federation::{Federation, propagation_record, propagation_state};
use ubernetes_e2e::{Server, eventually};

const WAIT: Duration = Duration::from_secs(30);
const NS: &str = "shop";

fn get(server: &Server, args: &[&str]) -> Result<Option<Value>> {
    server.kubectl_get(args)
}

fn managed(v: &Value) -> bool {
    v.pointer("/metadata/labels/federation.kubernetes.io~1managed")
        .is_some()
}

/// Create ConfigMap `name` and wait until every member has its copy and
/// the record says InSync everywhere; returns the object the create
/// returned.
fn create_everywhere(fed: &Federation, name: &str) -> Result<Value> {
    let out = fed.host.kubectl_ok(&[
        "create",
        "configmap",
        name,
        "-n",
        NS,
        "--from-literal=k=v1",
        "-o",
        "json",
    ])?;
    let created: Value = serde_json::from_str(&out)?;
    for m in &fed.members {
        eventually(WAIT, || {
            Ok(get(m, &["configmap", name, "-n", NS])?.filter(managed))
        })
        .with_context(|| format!("{name} reaches {}", m.url()))?;
    }
    eventually(WAIT, || {
        let rec = propagation_state(&fed.host, "configmaps", Some(NS), name)?;
        Ok(["m0", "m1", "m2"]
            .iter()
            .all(|c| rec[c]["state"] == "InSync")
            .then_some(()))
    })
    .with_context(|| format!("{name}: record InSync in every member"))?;
    Ok(created)
}

#[test]
fn with_three_members_joined_a_client_cannot_tell_from_its_object() -> Result<()> {
    let mut fed = Federation::start(3, &[])?;
    for i in 0..3 {
        fed.join(i, &format!("m{i}"), &[])?;
    }
    for i in 0..3 {
        fed.wait_ready(&format!("m{i}"))?;
    }
    fed.host.kubectl_ok(&["create", "namespace", NS])?;

    // 1. Create, let it propagate, then update what the create returned:
    //    no 409, and the object is as the client wrote it.
    let created = create_everywhere(&fed, "plain")?;
    let now = get(&fed.host, &["configmap", "plain", "-n", NS])?.context("plain")?;
    ensure!(
        now["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"],
        "the federation wrote the user's object:\ncreated {created}\nnow {now}"
    );
    ensure!(
        now.pointer("/metadata/finalizers").is_none()
            && now.pointer("/metadata/annotations").is_none(),
        "no finalizer or annotation of ours: {now}"
    );
    let mut update = created.clone();
    update["data"]["k"] = "v2".into();
    fed.host
        .kubectl_stdin_ok(&["replace", "-f", "-"], &update.to_string())
        .context("update with the resourceVersion the create returned")?;
    for m in &fed.members {
        eventually(WAIT, || {
            Ok(get(m, &["configmap", "plain", "-n", NS])?.filter(|v| v["data"]["k"] == "v2"))
        })?;
    }

    // 2. A default delete is NotFound at once; the copies go right after.
    fed.host
        .kubectl_ok(&["delete", "configmap", "plain", "-n", NS, "--wait=false"])?;
    ensure!(
        get(&fed.host, &["configmap", "plain", "-n", NS])?.is_none(),
        "a Background delete leaves nothing behind"
    );
    let start = Instant::now();
    for m in &fed.members {
        eventually(Duration::from_secs(10), || {
            Ok(get(m, &["configmap", "plain", "-n", NS])?
                .is_none()
                .then_some(()))
        })
        .with_context(|| format!("copy left in {}", m.url()))?;
    }
    eprintln!("copies gone {:?} after the delete", start.elapsed());

    // 3. Foreground: kubectl returns only once every copy is gone.
    create_everywhere(&fed, "fg")?;
    fed.host.kubectl_ok(&[
        "delete",
        "configmap",
        "fg",
        "-n",
        NS,
        "--cascade=foreground",
        "--timeout=60s",
    ])?;
    for m in &fed.members {
        ensure!(
            get(m, &["configmap", "fg", "-n", NS])?.is_none(),
            "--cascade=foreground returned with a copy in {}",
            m.url()
        );
    }
    ensure!(get(&fed.host, &["configmap", "fg", "-n", NS])?.is_none());

    // 4. Orphan: the copies stay, without our label and annotation.
    create_everywhere(&fed, "kept")?;
    fed.host
        .kubectl_ok(&["delete", "configmap", "kept", "-n", NS, "--cascade=orphan"])?;
    ensure!(get(&fed.host, &["configmap", "kept", "-n", NS])?.is_none());
    for m in &fed.members {
        let copy = eventually(WAIT, || {
            let c = get(m, &["configmap", "kept", "-n", NS])?.context("orphaned copy stays")?;
            Ok((!managed(&c)).then_some(c))
        })?;
        ensure!(
            copy.pointer("/metadata/annotations/federation.kubernetes.io~1origin-uid")
                .is_none(),
            "{copy}"
        );
    }
    std::thread::sleep(Duration::from_secs(2));
    for m in &fed.members {
        ensure!(
            get(m, &["configmap", "kept", "-n", NS])?.is_some(),
            "an orphaned copy was deleted in {}",
            m.url()
        );
    }

    // 5. A member down at deletion time, and the federation restarted
    //    meanwhile: the copy there is deleted when it is back.
    create_everywhere(&fed, "later")?;
    fed.members[2].kill9();
    fed.wait_condition("m2", "Offline", "True", None, WAIT)?;
    fed.host
        .kubectl_ok(&["delete", "configmap", "later", "-n", NS, "--wait=false"])?;
    ensure!(get(&fed.host, &["configmap", "later", "-n", NS])?.is_none());
    for m in &fed.members[..2] {
        eventually(WAIT, || {
            Ok(get(m, &["configmap", "later", "-n", NS])?
                .is_none()
                .then_some(()))
        })?;
    }
    ensure!(
        propagation_record(&fed.host, "configmaps", Some(NS), "later")?.is_some(),
        "the record waits for m2"
    );
    fed.host.restart()?;
    fed.members[2].crash_and_restart()?;
    fed.wait_ready("m2")?;
    eventually(WAIT, || {
        Ok(get(&fed.members[2], &["configmap", "later", "-n", NS])?
            .is_none()
            .then_some(()))
    })
    .with_context(|| {
        format!(
            "the copy in the member that was down goes when it is back; host log:\n{}",
            std::fs::read_to_string(fed.host.data_dir().with_file_name("server.log"))
                .unwrap_or_default()
                .lines()
                .filter(|l| l.contains("deletion")
                    || l.contains("member updated")
                    || l.contains("later"))
                .collect::<Vec<_>>()
                .join("\n")
        )
    })?;
    eventually(WAIT, || {
        Ok(
            propagation_record(&fed.host, "configmaps", Some(NS), "later")?
                .is_none()
                .then_some(()),
        )
    })
    .context("then the record goes")?;

    fed.host.stop();
    for m in &mut fed.members {
        m.stop();
    }
    Ok(())
}
