//! CRD conversion webhooks end to end: a real HTTPS conversion webhook
//! process (e2e/webhook/conversion_webhook.py, its certificate signed by a
//! CA this test generates) and a Widget CRD whose two versions' schemas
//! differ (`v1` `spec.size: string`, the storage version; `v2`
//! `spec.sizeInt: integer`), with `conversion.strategy: Webhook`, driven by
//! the real kubectl:
//!
//! - a Widget created as v1 is read as v2 (converted by a
//!   `ConversionReview` the webhook really received: uid, desiredAPIVersion,
//!   the stored object), keeping its metadata but the webhook's labels;
//! - one created and one patched as v2 are stored as v1;
//! - a watch in v2 sees writes made in v1 and in v2, converted;
//! - after a restart the v2 list is converted in one review;
//! - a webhook answering `Failure`, or with another `response.uid`, and a
//!   webhook that is down fail the request with kube's 500 and message
//!   (`conversion webhook for example.com/v2, Kind=Widget failed: Post
//!   "https://…": dial tcp …: connect: connection refused`), while the
//!   storage version is still served; a change made in v1 meanwhile makes
//!   v2 reads fail with that error; once the webhook is back, v2 writes go
//!   through again and v2 reads catch up.

mod kubectl_support;

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use kube::client::Body;
use serde_json::{Value, json};
use ubernetes_e2e::webhook::{WebhookProcess, python3_available, serving_certificates};
use ubernetes_e2e::{Server, eventually};

use kubectl_support::{SETTLE, Streaming, json as kubectl_json};

const SCRIPT: &str = "conversion_webhook.py";

/// The caBundle form of a PEM.
fn b64(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// A CRD `PLURAL.example.com` (kind `KIND`) in v1 (storage) and v2,
/// converted by the webhook at `https://127.0.0.1:PORT/PATH`.
fn crd(plural: &str, kind: &str, port: u16, path: &str, ca: &str) -> String {
    let singular = kind.to_lowercase();
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {{plural: {plural}, singular: {singular}, kind: {kind}}}
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
              size: {{type: string, pattern: "^[0-9]+$"}}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              sizeInt: {{type: integer}}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: ["v1"]
      clientConfig:
        url: https://127.0.0.1:{port}{path}
        caBundle: {ca}
"#,
        ca = b64(ca)
    )
}

fn v1_object(kind: &str, name: &str, size: &str) -> String {
    format!(
        "apiVersion: example.com/v1\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  size: \"{size}\"\n"
    )
}

fn v2_object(kind: &str, name: &str, size: i64) -> String {
    format!(
        "apiVersion: example.com/v2\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  sizeInt: {size}\n"
    )
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The reviews the webhook received asking for `desired`.
fn reviews_to(hook: &WebhookProcess, desired: &str) -> Vec<Value> {
    hook.requests()
        .into_iter()
        .map(|r| r["review"].clone())
        .filter(|r| r["request"]["desiredAPIVersion"] == desired)
        .collect()
}

/// POST `obj` as JSON to `path` with the admin client: (code, body).
fn raw_post(server: &Server, path: &str, obj: &Value) -> Result<(u16, Value)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let client = server.client().await?;
        let req = http::Request::post(path)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Body::from(serde_json::to_vec(obj)?))?;
        let res = client.send(req).await?;
        let code = res.status().as_u16();
        let bytes = res.into_body().collect_bytes().await?;
        Ok((code, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
    })
}

#[test]
fn a_webhook_converted_crd_is_read_written_and_watched_in_every_version() -> Result<()> {
    if !python3_available() {
        eprintln!("SKIPPED: python3 is not installed (the conversion webhook is a Python script)");
        return Ok(());
    }
    let tmp = tempfile::tempdir()?;
    let (ca, cert, key) = serving_certificates(tmp.path(), &["127.0.0.1"])?;
    let hook = WebhookProcess::start(SCRIPT, tmp.path(), &cert, &key, 0)?;
    let port = hook.port;
    let mut server = Server::start()?;

    for (plural, kind, path) in [
        ("widgets", "Widget", "/convert"),
        ("gadgets", "Gadget", "/fail"),
        ("doodads", "Doodad", "/wrong-uid"),
    ] {
        server.kubectl_stdin_ok(&["apply", "-f", "-"], &crd(plural, kind, port, path, &ca))?;
        server.kubectl_ok(&[
            "wait",
            "--for",
            "condition=Established",
            &format!("crd/{plural}.example.com"),
            "--timeout=30s",
        ])?;
    }
    let v1 = "widgets.v1.example.com";
    let v2 = "widgets.v2.example.com";

    // --- A watch in v2, started before any write.
    let mut watch_v2 = Streaming::start(
        &server,
        &[
            "get",
            v2,
            "-n",
            "default",
            "-w",
            "-o",
            r#"jsonpath={.apiVersion} {.metadata.name} {.spec.sizeInt}{"\n"}"#,
        ],
    )?;

    // --- Created as v1, read as v2 through a ConversionReview.
    server.kubectl_stdin_ok(&["create", "-f", "-"], &v1_object("Widget", "w1", "3"))?;
    let as_v1 = kubectl_json(&server, &["get", v1, "w1", "-n", "default"])?;
    assert_eq!(as_v1["apiVersion"], "example.com/v1");
    assert_eq!(as_v1["spec"], json!({"size": "3"}), "stored as v1: {as_v1}");
    let as_v2 = kubectl_json(&server, &["get", v2, "w1", "-n", "default"])?;
    assert_eq!(as_v2["apiVersion"], "example.com/v2");
    assert_eq!(as_v2["kind"], "Widget");
    assert_eq!(as_v2["spec"], json!({"sizeInt": 3}), "converted: {as_v2}");
    for field in ["uid", "creationTimestamp", "resourceVersion", "name"] {
        assert_eq!(
            as_v2["metadata"][field], as_v1["metadata"][field],
            "metadata.{field} is the stored object's"
        );
    }
    assert_eq!(
        as_v2["metadata"]["labels"]["converted-to"], "v2",
        "the webhook's labels are kept: {as_v2}"
    );
    let review = reviews_to(&hook, "example.com/v2")
        .into_iter()
        .find(|r| r["request"]["objects"][0]["metadata"]["name"] == "w1")
        .context("the webhook received a review converting w1 to v2")?;
    assert_eq!(review["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(review["kind"], "ConversionReview");
    assert!(
        review["request"]["uid"]
            .as_str()
            .is_some_and(|u| u.len() >= 32),
        "a request uid: {review}"
    );
    let sent = &review["request"]["objects"][0];
    assert_eq!(sent["apiVersion"], "example.com/v1");
    assert_eq!(sent["spec"], json!({"size": "3"}));
    watch_v2.wait_for(SETTLE, |l| l == "example.com/v2 w1 3")?;

    // --- Created as v2: stored as v1 (converted before it is written).
    server.kubectl_stdin_ok(&["create", "-f", "-"], &v2_object("Widget", "w2", 7))?;
    let w2 = kubectl_json(&server, &["get", v1, "w2", "-n", "default"])?;
    assert_eq!(w2["spec"], json!({"size": "7"}), "{w2}");
    assert_eq!(w2["metadata"]["labels"]["converted-to"], "v1");
    assert!(
        reviews_to(&hook, "example.com/v1").iter().any(|r| {
            let o = &r["request"]["objects"][0];
            o["metadata"]["name"] == "w2" && o["spec"]["sizeInt"] == 7
        }),
        "the webhook converted w2 to the storage version"
    );
    watch_v2.wait_for(SETTLE, |l| l == "example.com/v2 w2 7")?;

    // --- Patched as v2 (the patch applies to the v2 form), stored as v1.
    server.kubectl_ok(&[
        "patch",
        v2,
        "w1",
        "-n",
        "default",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"sizeInt":10}}"#,
    ])?;
    let w1 = kubectl_json(&server, &["get", v1, "w1", "-n", "default"])?;
    assert_eq!(w1["spec"], json!({"size": "10"}), "{w1}");
    watch_v2.wait_for(SETTLE, |l| l == "example.com/v2 w1 10")?;
    drop(watch_v2);

    // --- After a restart, the v2 list is converted in one review.
    let before = hook.requests().len();
    server.restart()?;
    let list = kubectl_json(&server, &["get", v2, "-n", "default"])?;
    let mut sizes: Vec<(String, i64)> = list["items"]
        .as_array()
        .context("items")?
        .iter()
        .map(|i| {
            assert_eq!(i["apiVersion"], "example.com/v2", "{i}");
            (
                i["metadata"]["name"].as_str().unwrap_or("").to_string(),
                i["spec"]["sizeInt"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    sizes.sort();
    assert_eq!(sizes, vec![("w1".into(), 10), ("w2".into(), 7)]);
    let after: Vec<Value> = hook.requests()[before..].to_vec();
    assert!(
        after.iter().any(|r| {
            r["review"]["request"]["desiredAPIVersion"] == "example.com/v2"
                && r["review"]["request"]["objects"]
                    .as_array()
                    .is_some_and(|o| o.len() == 2)
        }),
        "one review with both widgets after the restart: {after:?}"
    );

    // --- A webhook answering Failure: its message, in kube's words.
    let out = server.kubectl_stdin(&["create", "-f", "-"], &v2_object("Gadget", "g1", 1))?;
    ensure!(
        !out.status.success(),
        "a failed conversion fails the create"
    );
    assert!(
        stderr_of(&out).contains(
            "conversion webhook for example.com/v2, Kind=Gadget failed: widgets of this size cannot be converted"
        ),
        "{}",
        stderr_of(&out)
    );
    // ... and one answering for another request.
    let out = server.kubectl_stdin(&["create", "-f", "-"], &v2_object("Doodad", "d1", 1))?;
    ensure!(
        !out.status.success(),
        "a wrong response.uid fails the create"
    );
    assert!(
        stderr_of(&out).contains(
            "conversion webhook for example.com/v2, Kind=Doodad failed: expected response.uid=\""
        ),
        "{}",
        stderr_of(&out)
    );

    // --- The webhook down: kube's 500 and message; v1 is still served.
    drop(hook);
    let refused = format!(
        "conversion webhook for example.com/v2, Kind=Widget failed: Post \"https://127.0.0.1:{port}/convert?timeout=30s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
    );
    let out = server.kubectl_stdin(&["create", "-f", "-"], &v2_object("Widget", "w3", 4))?;
    ensure!(!out.status.success(), "no webhook, no v2 create");
    assert!(stderr_of(&out).contains(&refused), "{}", stderr_of(&out));
    let (code, status) = raw_post(
        &server,
        "/apis/example.com/v2/namespaces/default/widgets",
        &json!({"apiVersion": "example.com/v2", "kind": "Widget",
                "metadata": {"name": "w3"}, "spec": {"sizeInt": 4}}),
    )?;
    assert_eq!(code, 500, "{status}");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["code"], 500);
    assert_eq!(status["message"], refused.as_str());
    assert!(
        status.get("reason").is_none(),
        "kube gives no reason: {status}"
    );
    let w1 = kubectl_json(&server, &["get", v1, "w1", "-n", "default"])?;
    assert_eq!(w1["spec"], json!({"size": "10"}));
    assert!(
        server.kubectl_get(&[v1, "w3", "-n", "default"])?.is_none(),
        "nothing was stored"
    );
    // A change made in v1 meanwhile cannot reach v2: reads in v2 fail
    // with the conversion error (of the stored v1 object), as kube's.
    server.kubectl_ok(&[
        "patch",
        v1,
        "w1",
        "-n",
        "default",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"size":"11"}}"#,
    ])?;
    let read_refused =
        refused.replace("example.com/v2, Kind=Widget", "example.com/v1, Kind=Widget");
    let err = eventually(SETTLE, || {
        let out = server.kubectl(&["get", v2, "w1", "-n", "default"])?;
        Ok((!out.status.success()).then(|| stderr_of(&out)))
    })?;
    assert!(err.contains(&read_refused), "{err}");

    // --- The webhook back on its port: v2 writes go through again.
    let hook = WebhookProcess::start(SCRIPT, tmp.path(), &cert, &key, port)?;
    eventually(Duration::from_secs(20), || {
        let out = server.kubectl_stdin(&["create", "-f", "-"], &v2_object("Widget", "w3", 4))?;
        Ok(out.status.success().then_some(()))
    })?;
    let w3 = kubectl_json(&server, &["get", v1, "w3", "-n", "default"])?;
    assert_eq!(w3["spec"], json!({"size": "4"}), "{w3}");
    // ... and v2 reads catch up with the change made while it was down.
    eventually(SETTLE, || {
        let got = server.kubectl_get(&[v2, "w1", "-n", "default"])?;
        Ok(got.filter(|g| g["spec"]["sizeInt"] == 11))
    })?;
    let w3 = eventually(SETTLE, || {
        let got = server.kubectl_get(&[v2, "w3", "-n", "default"])?;
        Ok(got.filter(|g| g["spec"]["sizeInt"] == 4))
    })?;
    assert_eq!(w3["apiVersion"], "example.com/v2");
    drop(hook);
    Ok(())
}
