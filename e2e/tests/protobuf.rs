//! Kubernetes protobuf end to end, with a client that talks as client-go
//! does when configured for protobuf (`rest.Config.ContentType =
//! application/vnd.kubernetes.protobuf`, as the e2e framework and
//! Kubernetes' own components run): `Content-Type:
//! application/vnd.kubernetes.protobuf`, `Accept:
//! application/vnd.kubernetes.protobuf,application/json`, and bodies that
//! are the magic `k8s\0` followed by a `runtime.Unknown` envelope whose
//! `raw` is the kind's `generated.proto` message. The bodies are encoded and
//! the answers decoded with the `k8s-pb` crate's prost types (generated from
//! Kubernetes' `.proto` files), independently of the server's own codec.
//!
//! Shown here: `DeleteOptions` in protobuf on delete and deletecollection
//! (built-in kinds under `v1`, `apps/v1` and `meta.k8s.io/v1` envelopes, and
//! custom resources), read for real (dry run, preconditions), and the
//! empty-body and JSON cases unchanged.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use http::header::{ACCEPT, CONTENT_TYPE};
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use kube::Client;
use kube::client::Body;
use prost::Message;
use serde_json::{Value, json};
use tokio::task::block_in_place;
use ubernetes_e2e::Server;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// client-go's Accept when its ContentType is protobuf.
const ACCEPT_PROTOBUF: &str = "application/vnd.kubernetes.protobuf,application/json";
const CM_PATH: &str = "/api/v1/namespaces/default/configmaps";

async fn start() -> Result<(Server, Client)> {
    let server = block_in_place(Server::start)?;
    let client = server.client().await?;
    Ok((server, client))
}

/// An answer: status code, Content-Type, raw body.
#[derive(Debug)]
struct Reply {
    code: u16,
    content_type: String,
    body: Vec<u8>,
}

impl Reply {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The `runtime.Unknown` of a protobuf answer (after checking the
    /// Content-Type and the magic), as client-go's protobuf decoder reads it.
    fn unknown(&self) -> Result<Unknown> {
        ensure!(
            self.content_type == PROTOBUF,
            "answer is {:?}, not protobuf: {}",
            self.content_type,
            self.text()
        );
        let rest = self
            .body
            .strip_prefix(b"k8s\0")
            .context("protobuf answer without the k8s\\0 magic")?;
        Ok(Unknown::decode(rest)?)
    }

    /// The kind and raw message of a protobuf answer.
    fn kind_and_raw(&self) -> Result<(String, String, Vec<u8>)> {
        let u = self.unknown()?;
        let tm = u.type_meta.unwrap_or_default();
        Ok((
            tm.api_version.unwrap_or_default(),
            tm.kind.unwrap_or_default(),
            u.raw.unwrap_or_default(),
        ))
    }

    /// A protobuf `metav1.Status` answer.
    fn status(&self) -> Result<meta::Status> {
        let (_, kind, raw) = self.kind_and_raw()?;
        ensure!(kind == "Status", "answer is a {kind}, not a Status");
        Ok(meta::Status::decode(raw.as_slice())?)
    }
}

/// One request as client-go configured for protobuf sends it (the body, if
/// any, with the given Content-Type).
async fn send(
    client: &Client,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> Result<Reply> {
    let mut req = http::Request::builder()
        .method(method)
        .uri(path)
        .header(ACCEPT, ACCEPT_PROTOBUF);
    if let Some(ct) = content_type {
        req = req.header(CONTENT_TYPE, ct);
    }
    let res = client
        .send(req.body(Body::from(body))?)
        .await
        .with_context(|| format!("{method} {path}"))?;
    let code = res.status().as_u16();
    let content_type = res
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = res.into_body().collect_bytes().await?.to_vec();
    Ok(Reply {
        code,
        content_type,
        body,
    })
}

/// A protobuf body: `k8s\0` + `runtime.Unknown{typeMeta, raw}` (client-go's
/// `protobuf.Serializer.Encode` leaves contentEncoding/contentType empty).
fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let u = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = b"k8s\0".to_vec();
    u.encode(&mut out).unwrap_or_default();
    out
}

fn delete_options(api_version: &str, opts: meta::DeleteOptions) -> Vec<u8> {
    envelope(api_version, "DeleteOptions", opts.encode_to_vec())
}

async fn send_json(client: &Client, method: &str, path: &str, body: &Value) -> Result<Reply> {
    send(
        client,
        method,
        path,
        Some("application/json"),
        serde_json::to_vec(body)?,
    )
    .await
}

async fn create_json(client: &Client, path: &str, body: Value) -> Result<Value> {
    let r = send_json(client, "POST", path, &body).await?;
    ensure!(r.code == 201, "create at {path}: {} {}", r.code, r.text());
    // Built-in kinds answer in protobuf (the client accepts it); decode
    // those through the test's own types only where a test needs them.
    Ok(r.json())
}

/// Wait up to 10 s for `path` to answer 404.
async fn wait_gone(client: &Client, path: &str) -> Result<()> {
    for _ in 0..100 {
        if !exists(client, path).await? {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("{path} still exists after 10 s")
}

async fn exists(client: &Client, path: &str) -> Result<bool> {
    let r = send(client, "GET", path, None, Vec::new()).await?;
    ensure!(
        r.code == 200 || r.code == 404,
        "GET {path}: {} {}",
        r.code,
        r.text()
    );
    Ok(r.code == 200)
}

fn configmap(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "labels": labels}, "data": {"k": "v"}})
}

#[tokio::test(flavor = "multi_thread")]
async fn protobuf_delete_options_delete_built_in_objects() -> Result<()> {
    let (_server, client) = start().await?;
    for name in ["a", "b", "c", "d", "e"] {
        create_json(&client, CM_PATH, configmap(name, json!({}))).await?;
    }

    // client-go's typed core client: DeleteOptions under `v1`.
    let r = send(
        &client,
        "DELETE",
        &format!("{CM_PATH}/a"),
        Some(PROTOBUF),
        delete_options(
            "v1",
            meta::DeleteOptions {
                propagation_policy: Some("Background".into()),
                ..Default::default()
            },
        ),
    )
    .await?;
    ensure!(r.code == 200, "protobuf delete: {} {}", r.code, r.text());
    let status = r.status()?;
    ensure!(
        status.status.as_deref() == Some("Success"),
        "delete answer: {status:?}"
    );
    ensure!(
        status.details.and_then(|d| d.name).as_deref() == Some("a"),
        "delete answer names the object"
    );
    ensure!(
        !exists(&client, &format!("{CM_PATH}/a")).await?,
        "a is gone"
    );

    // The body is read, not skipped: a dry run deletes nothing …
    let r = send(
        &client,
        "DELETE",
        &format!("{CM_PATH}/b"),
        Some(PROTOBUF),
        delete_options(
            "meta.k8s.io/v1",
            meta::DeleteOptions {
                dry_run: vec!["All".into()],
                ..Default::default()
            },
        ),
    )
    .await?;
    ensure!(r.code == 200, "dry-run delete: {} {}", r.code, r.text());
    ensure!(
        exists(&client, &format!("{CM_PATH}/b")).await?,
        "dry run kept b"
    );

    // … and a wrong uid precondition is a 409 Conflict (as a protobuf Status).
    let r = send(
        &client,
        "DELETE",
        &format!("{CM_PATH}/b"),
        Some(PROTOBUF),
        delete_options(
            "v1",
            meta::DeleteOptions {
                preconditions: Some(meta::Preconditions {
                    uid: Some("not-the-uid".into()),
                    resource_version: None,
                }),
                ..Default::default()
            },
        ),
    )
    .await?;
    ensure!(
        r.code == 409,
        "wrong uid precondition: {} {}",
        r.code,
        r.text()
    );
    ensure!(exists(&client, &format!("{CM_PATH}/b")).await?, "b kept");

    // An empty body and a JSON body work as before.
    let r = send(&client, "DELETE", &format!("{CM_PATH}/b"), None, Vec::new()).await?;
    ensure!(r.code == 200, "empty-body delete: {} {}", r.code, r.text());
    let r = send_json(
        &client,
        "DELETE",
        &format!("{CM_PATH}/c"),
        &json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}),
    )
    .await?;
    ensure!(r.code == 200, "JSON delete: {} {}", r.code, r.text());
    ensure!(
        !exists(&client, &format!("{CM_PATH}/b")).await?,
        "b is gone"
    );
    ensure!(
        !exists(&client, &format!("{CM_PATH}/c")).await?,
        "c is gone"
    );

    // An invalid propagation policy inside the protobuf body is refused as
    // kube refuses it (422 Invalid).
    let r = send(
        &client,
        "DELETE",
        &format!("{CM_PATH}/d"),
        Some(PROTOBUF),
        delete_options(
            "v1",
            meta::DeleteOptions {
                propagation_policy: Some("Sideways".into()),
                ..Default::default()
            },
        ),
    )
    .await?;
    ensure!(
        r.code == 422,
        "bad propagationPolicy: {} {}",
        r.code,
        r.text()
    );

    // A deployment through the typed apps/v1 client: DeleteOptions under `apps/v1`.
    let deploy_path = "/apis/apps/v1/namespaces/default/deployments";
    create_json(
        &client,
        deploy_path,
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web"},
               "spec": {"selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
    )
    .await?;
    let r = send(
        &client,
        "DELETE",
        &format!("{deploy_path}/web"),
        Some(PROTOBUF),
        delete_options(
            "apps/v1",
            meta::DeleteOptions {
                propagation_policy: Some("Foreground".into()),
                ..Default::default()
            },
        ),
    )
    .await?;
    ensure!(
        r.code == 200 || r.code == 202,
        "protobuf deployment delete: {} {}",
        r.code,
        r.text()
    );
    wait_gone(&client, &format!("{deploy_path}/web")).await
}

#[tokio::test(flavor = "multi_thread")]
async fn protobuf_delete_options_delete_a_collection() -> Result<()> {
    let (_server, client) = start().await?;
    for name in ["x1", "x2", "x3"] {
        create_json(&client, CM_PATH, configmap(name, json!({"set": "x"}))).await?;
    }
    create_json(&client, CM_PATH, configmap("keep", json!({"set": "y"}))).await?;

    let r = send(
        &client,
        "DELETE",
        &format!("{CM_PATH}?labelSelector=set%3Dx"),
        Some(PROTOBUF),
        delete_options(
            "v1",
            meta::DeleteOptions {
                propagation_policy: Some("Background".into()),
                ..Default::default()
            },
        ),
    )
    .await?;
    ensure!(
        r.code == 200,
        "protobuf deletecollection: {} {}",
        r.code,
        r.text()
    );
    // The answer is the ConfigMapList of what was deleted, in protobuf.
    let (api_version, kind, raw) = r.kind_and_raw()?;
    ensure!(
        api_version == "v1" && kind == "ConfigMapList",
        "deletecollection answered a {api_version} {kind}"
    );
    let list = k8s_pb::api::core::v1::ConfigMapList::decode(raw.as_slice())?;
    let mut names: Vec<String> = list
        .items
        .iter()
        .filter_map(|i| i.metadata.as_ref()?.name.clone())
        .collect();
    names.sort();
    ensure!(names == ["x1", "x2", "x3"], "deleted: {names:?}");
    for name in ["x1", "x2", "x3"] {
        ensure!(
            !exists(&client, &format!("{CM_PATH}/{name}")).await?,
            "{name} is gone"
        );
    }
    ensure!(
        exists(&client, &format!("{CM_PATH}/keep")).await?,
        "keep kept"
    );

    // A dry-run deletecollection in protobuf deletes nothing.
    let r = send(
        &client,
        "DELETE",
        CM_PATH,
        Some(PROTOBUF),
        delete_options(
            "meta.k8s.io/v1",
            meta::DeleteOptions {
                dry_run: vec!["All".into()],
                ..Default::default()
            },
        ),
    )
    .await?;
    ensure!(
        r.code == 200,
        "dry-run deletecollection: {} {}",
        r.code,
        r.text()
    );
    ensure!(
        exists(&client, &format!("{CM_PATH}/keep")).await?,
        "dry run kept keep"
    );
    Ok(())
}

const CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.example.com"},
  "spec": {
    "group": "example.com",
    "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}
    }]
  }
}"#;

const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

async fn widget_served(client: &Client) -> Result<()> {
    for _ in 0..100 {
        let r = send(client, "GET", WIDGETS, None, Vec::new()).await?;
        if r.code == 200 {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("widgets never served")
}

#[tokio::test(flavor = "multi_thread")]
async fn protobuf_delete_options_delete_custom_resources() -> Result<()> {
    let (_server, client) = start().await?;
    let crd: Value = serde_json::from_str(CRD)?;
    let r = send_json(
        &client,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    )
    .await?;
    ensure!(r.code == 201, "create CRD: {} {}", r.code, r.text());
    widget_served(&client).await?;
    for (name, set) in [("w1", "a"), ("w2", "b"), ("w3", "b")] {
        create_json(
            &client,
            WIDGETS,
            json!({"apiVersion": "example.com/v1", "kind": "Widget",
                   "metadata": {"name": name, "labels": {"set": set}}, "spec": {"size": 1}}),
        )
        .await?;
    }

    // client-go's dynamic and typed clients for a CR group send
    // DeleteOptions as `meta.k8s.io/v1` or `<group>/<version>`.
    let r = send(
        &client,
        "DELETE",
        &format!("{WIDGETS}/w1"),
        Some(PROTOBUF),
        delete_options(
            "example.com/v1",
            meta::DeleteOptions {
                propagation_policy: Some("Background".into()),
                ..Default::default()
            },
        ),
    )
    .await?;
    ensure!(r.code == 200, "protobuf CR delete: {} {}", r.code, r.text());
    // The answer is a Status, which has a protobuf form.
    ensure!(
        r.status()?.status.as_deref() == Some("Success"),
        "CR delete answer"
    );
    ensure!(
        !exists(&client, &format!("{WIDGETS}/w1")).await?,
        "w1 is gone"
    );

    let r = send(
        &client,
        "DELETE",
        &format!("{WIDGETS}?labelSelector=set%3Db"),
        Some(PROTOBUF),
        delete_options("meta.k8s.io/v1", meta::DeleteOptions::default()),
    )
    .await?;
    ensure!(
        r.code == 200,
        "protobuf CR deletecollection: {} {}",
        r.code,
        r.text()
    );
    // A list of custom resources has no protobuf form: JSON, which the
    // client also accepts.
    ensure!(
        r.content_type == "application/json",
        "CR deletecollection answered {:?}",
        r.content_type
    );
    let deleted = r.json()["items"].as_array().map_or(0, Vec::len);
    ensure!(deleted == 2, "deleted {deleted} widgets: {}", r.text());
    let r = send(&client, "GET", WIDGETS, None, Vec::new()).await?;
    ensure!(
        r.json()["items"].as_array().is_some_and(Vec::is_empty),
        "widgets left: {}",
        r.text()
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn undecodable_delete_options_are_refused_as_kube_refuses_them() -> Result<()> {
    let (_server, client) = start().await?;
    create_json(&client, CM_PATH, configmap("a", json!({}))).await?;
    let path = format!("{CM_PATH}/a");

    // kube's delete handler passes the decoder's error on unchanged: a 500
    // Status without a reason, the protobuf decoder's message.
    let mut truncated = delete_options(
        "v1",
        meta::DeleteOptions {
            propagation_policy: Some("Background".into()),
            ..Default::default()
        },
    );
    truncated.truncate(truncated.len() - 3);
    let r = send(&client, "DELETE", &path, Some(PROTOBUF), truncated).await?;
    ensure!(r.code == 500, "truncated body: {} {}", r.code, r.text());
    let j = r.json();
    ensure!(
        j["kind"] == "Status" && j["message"] == "unexpected EOF" && j.get("reason").is_none(),
        "truncated body: {}",
        r.text()
    );

    // Another kind in the envelope is not DeleteOptions.
    let other = envelope(
        "v1",
        "ConfigMap",
        k8s_pb::api::core::v1::ConfigMap::default().encode_to_vec(),
    );
    let r = send(&client, "DELETE", &path, Some(PROTOBUF), other).await?;
    ensure!(
        r.code == 500
            && r.json()["message"] == "decoded object cannot be converted to DeleteOptions",
        "ConfigMap as DeleteOptions: {} {}",
        r.code,
        r.text()
    );

    // An unsupported media type is 415.
    let r = send(&client, "DELETE", &path, Some("text/plain"), b"x".to_vec()).await?;
    ensure!(r.code == 415, "text/plain body: {} {}", r.code, r.text());
    ensure!(exists(&client, &path).await?, "nothing was deleted");
    Ok(())
}
