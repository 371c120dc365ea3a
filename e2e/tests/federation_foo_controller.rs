//! A user's own federated controller takes over a kind (issue 11,
//! must-show 7; seed 000): the federation runs with its built-in sync off
//! for `foos.example.com` (`--federation-controllers-disabled-for`), so a
//! Foo stays in the federation alone; then `examples/foo_controller.rs`
//! (the seed's FooController, written against the crate's public API) is
//! started as a process of its own and propagates the Foo to both members,
//! repairs a deleted copy, follows an update, and cascades the deletion.
//!
//! The example binary must be built first:
//! `cargo build -p ubernetes-federation --example foo_controller`.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;
use ubernetes_e2e::federation::{Federation, propagation_record};
use ubernetes_e2e::{Server, eventually, ubernetes_bin};

const WAIT: Duration = Duration::from_secs(30);

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: foos.example.com
  labels: {federation.kubernetes.io/federated: "true"}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: foos, singular: foo, kind: Foo}
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

const FOO: &str = r#"
apiVersion: example.com/v1
kind: Foo
metadata: {name: f1, namespace: demo}
spec: {size: 1}
"#;

/// The example binary, next to the server binary.
fn foo_controller_bin() -> Result<PathBuf> {
    let bin = ubernetes_bin()
        .parent()
        .map(|d| d.join("examples").join("foo_controller"))
        .context("no directory of the server binary")?;
    if !bin.exists() {
        bail!(
            "{} not found: build it with `cargo build -p ubernetes-federation --example foo_controller`",
            bin.display()
        );
    }
    Ok(bin)
}

/// The example process, killed on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn get(server: &Server, args: &[&str]) -> Result<Option<Value>> {
    server.kubectl_get(args)
}

fn by_example(v: &Value) -> bool {
    v.pointer("/metadata/annotations/example.com~1reconciled-by")
        .and_then(Value::as_str)
        == Some("foo-controller")
}

#[test]
fn a_users_own_federated_controller_takes_over_a_kind_whose_built_in_sync_is_off() -> Result<()> {
    let bin = foo_controller_bin()?;
    let mut fed = Federation::start(
        2,
        &["--federation-controllers-disabled-for=foos.example.com"],
    )?;
    fed.join(0, "m0", &[])?;
    fed.join(1, "m1", &[])?;
    fed.wait_ready("m0")?;
    fed.wait_ready("m1")?;

    // The CRD itself is still propagated by the built-in sync.
    fed.host.kubectl_stdin_ok(&["apply", "-f", "-"], CRD)?;
    for s in std::iter::once(&fed.host).chain(&fed.members) {
        eventually(WAIT, || {
            let crd = get(s, &["crd", "foos.example.com"])?;
            Ok(crd.filter(|c| {
                c.pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c["type"] == "Established" && c["status"] == "True")
                    })
            }))
        })
        .with_context(|| format!("CRD established in {}", s.url()))?;
    }
    fed.host.kubectl_ok(&["create", "namespace", "demo"])?;
    fed.host.kubectl_stdin_ok(&["apply", "-f", "-"], FOO)?;
    let uid = get(&fed.host, &["foo", "f1", "-n", "demo"])?.context("f1")?["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    // Built-in sync is off for foos: nothing reaches the members.
    std::thread::sleep(Duration::from_secs(3));
    for m in &fed.members {
        ensure!(
            get(m, &["foo", "f1", "-n", "demo"])?.is_none(),
            "the built-in sync propagated a disabled kind to {}",
            m.url()
        );
    }
    ensure!(propagation_record(&fed.host, "foos.example.com", Some("demo"), "f1")?.is_none());

    // The example takes over.
    let log = fed.host.data_dir().join("foo-controller.log");
    let child = Command::new(&bin)
        .env("KUBECONFIG", fed.host.kubeconfig())
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::fs::File::create(&log)?))
        .stderr(Stdio::from(std::fs::File::create(
            log.with_extension("err"),
        )?))
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let example = Running(child);
    let logs = || {
        format!(
            "{}{}",
            std::fs::read_to_string(&log).unwrap_or_default(),
            std::fs::read_to_string(log.with_extension("err")).unwrap_or_default()
        )
    };
    for m in &fed.members {
        eventually(WAIT, || {
            Ok(get(m, &["foo", "f1", "-n", "demo"])?.filter(|v| {
                by_example(v)
                    && v.pointer("/metadata/annotations/federation.kubernetes.io~1origin-uid")
                        .and_then(Value::as_str)
                        == Some(uid.as_str())
                    && v["spec"]["size"] == 1
            }))
        })
        .with_context(|| {
            format!(
                "the example propagates f1 to {}; its log:\n{}",
                m.url(),
                logs()
            )
        })?;
    }
    ensure!(
        propagation_record(&fed.host, "foos.example.com", Some("demo"), "f1")?.is_some(),
        "the deletion helper keeps a record"
    );

    // Compare and update: an update flows, a deleted copy is restored.
    fed.host.kubectl_ok(&[
        "patch",
        "foo",
        "f1",
        "-n",
        "demo",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":2}}"#,
    ])?;
    for m in &fed.members {
        eventually(WAIT, || {
            Ok(get(m, &["foo", "f1", "-n", "demo"])?.filter(|v| v["spec"]["size"] == 2))
        })
        .with_context(logs)?;
    }
    fed.members[0].kubectl_ok(&["delete", "foo", "f1", "-n", "demo"])?;
    eventually(WAIT, || {
        Ok(get(&fed.members[0], &["foo", "f1", "-n", "demo"])?.filter(by_example))
    })
    .with_context(|| format!("a deleted copy is restored; log:\n{}", logs()))?;

    // Cascading deletion: the Foo goes at once, its copies after it.
    fed.host
        .kubectl_ok(&["delete", "foo", "f1", "-n", "demo", "--wait=false"])?;
    ensure!(get(&fed.host, &["foo", "f1", "-n", "demo"])?.is_none());
    for m in &fed.members {
        eventually(WAIT, || {
            Ok(get(m, &["foo", "f1", "-n", "demo"])?
                .is_none()
                .then_some(()))
        })
        .with_context(|| format!("copy left in {}; log:\n{}", m.url(), logs()))?;
    }

    drop(example);
    fed.host.stop();
    for m in &mut fed.members {
        m.stop();
    }
    Ok(())
}
