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
//! empty-body and JSON cases unchanged; CustomResourceDefinitions created,
//! read, listed and watched in protobuf, their schema then enforced;
//! custom resources answered in JSON, or 406 to a protobuf-only client;
//! federation Clusters read with prost types written from Federation v1's
//! `generated.proto`; the scale subresource; and malformed bodies answered
//! with kube-apiserver's codes and wording, as protobuf `Status`es.

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
    send_accepting(client, ACCEPT_PROTOBUF, method, path, content_type, body).await
}

/// [`send`] with another Accept header.
async fn send_accepting(
    client: &Client,
    accept: &str,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> Result<Reply> {
    let mut req = http::Request::builder()
        .method(method)
        .uri(path)
        .header(ACCEPT, accept);
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
    let status = r.status()?;
    ensure!(
        status.message.as_deref() == Some("unexpected EOF")
            && status.reason.as_deref().unwrap_or("").is_empty()
            && status.code == Some(500),
        "truncated body: {status:?}"
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
            && r.status()?.message.as_deref()
                == Some("decoded object cannot be converted to DeleteOptions"),
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

// ---- CustomResourceDefinitions in protobuf ---------------------------------

use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// A schema node as Go writes it (every non-pointer string and bool set).
fn props(ty: &str) -> apiext::JsonSchemaProps {
    apiext::JsonSchemaProps {
        r#type: Some(ty.into()),
        description: Some(String::new()),
        format: Some(String::new()),
        nullable: Some(false),
        unique_items: Some(false),
        ..Default::default()
    }
}

fn json_value(v: Value) -> apiext::Json {
    apiext::Json {
        raw: Some(serde_json::to_vec(&v).unwrap_or_default()),
    }
}

/// The widgets CRD as a client-go program builds it.
fn widget_crd() -> apiext::CustomResourceDefinition {
    let mut size = props("integer");
    size.default = Some(json_value(json!(3)));
    size.maximum = Some(10.0);
    let mut color = props("string");
    color.r#enum = vec![json_value(json!("red")), json_value(json!("blue"))];
    let mut labels = props("object");
    labels.additional_properties = Some(Box::new(apiext::JsonSchemaPropsOrBool {
        allows: Some(true),
        schema: Some(Box::new(props("string"))),
    }));
    let mut spec = props("object");
    spec.properties = [
        ("size".to_string(), size),
        ("color".to_string(), color),
        ("labels".to_string(), labels),
    ]
    .into();
    let mut root = props("object");
    root.properties = [("spec".to_string(), spec)].into();
    apiext::CustomResourceDefinition {
        metadata: Some(meta::ObjectMeta {
            name: Some("widgets.example.com".into()),
            ..Default::default()
        }),
        spec: Some(apiext::CustomResourceDefinitionSpec {
            group: Some("example.com".into()),
            names: Some(apiext::CustomResourceDefinitionNames {
                plural: Some("widgets".into()),
                singular: Some("widget".into()),
                kind: Some("Widget".into()),
                list_kind: Some("WidgetList".into()),
                ..Default::default()
            }),
            scope: Some("Namespaced".into()),
            versions: vec![apiext::CustomResourceDefinitionVersion {
                name: Some("v1".into()),
                served: Some(true),
                storage: Some(true),
                schema: Some(apiext::CustomResourceValidation {
                    open_apiv3_schema: Some(root),
                }),
                subresources: Some(apiext::CustomResourceSubresources {
                    status: Some(apiext::CustomResourceSubresourceStatus {}),
                    scale: None,
                }),
                ..Default::default()
            }],
            conversion: None,
            preserve_unknown_fields: Some(false),
        }),
        status: None,
    }
}

/// The `spec` schema node of a served widgets CRD.
fn spec_schema(crd: &apiext::CustomResourceDefinition) -> Result<&apiext::JsonSchemaProps> {
    crd.spec
        .as_ref()
        .and_then(|s| s.versions.first())
        .and_then(|v| v.schema.as_ref())
        .and_then(|s| s.open_apiv3_schema.as_ref())
        .and_then(|r| r.properties.get("spec"))
        .context("no spec schema")
}

fn check_widget_schema(crd: &apiext::CustomResourceDefinition) -> Result<()> {
    let spec = spec_schema(crd)?;
    let size = spec.properties.get("size").context("size")?;
    ensure!(
        size.default.as_ref().and_then(|d| d.raw.as_deref()) == Some(b"3"),
        "size default: {:?}",
        size.default
    );
    ensure!(
        size.maximum == Some(10.0),
        "size maximum: {:?}",
        size.maximum
    );
    let color = spec.properties.get("color").context("color")?;
    let enums: Vec<&[u8]> = color
        .r#enum
        .iter()
        .filter_map(|e| e.raw.as_deref())
        .collect();
    ensure!(
        enums == [&b"\"red\""[..], &b"\"blue\""[..]],
        "color enum: {enums:?}"
    );
    let labels = spec
        .properties
        .get("labels")
        .and_then(|l| l.additional_properties.as_ref())
        .context("labels.additionalProperties")?;
    ensure!(
        labels.schema.as_ref().and_then(|s| s.r#type.as_deref()) == Some("string"),
        "labels.additionalProperties: {labels:?}"
    );
    Ok(())
}

/// The next complete frame of a protobuf watch stream (4-byte big-endian
/// length, then a `WatchEvent`), reading more of the body as needed.
async fn next_watch_event(
    body: &mut kube::client::Body,
    buf: &mut Vec<u8>,
) -> Result<meta::WatchEvent> {
    use http_body_util::BodyExt;
    loop {
        if buf.len() >= 4 {
            let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
            if buf.len() >= 4 + len {
                let ev = meta::WatchEvent::decode(&buf[4..4 + len])?;
                buf.drain(..4 + len);
                return Ok(ev);
            }
        }
        let frame = tokio::time::timeout(Duration::from_secs(10), body.frame())
            .await
            .context("no watch event within 10 s")?
            .context("watch stream ended")??;
        if let Ok(data) = frame.into_data() {
            buf.extend_from_slice(&data);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn protobuf_custom_resource_definitions_create_get_list_and_watch() -> Result<()> {
    let (_server, client) = start().await?;

    // A protobuf watch on CRDs, opened before the create.
    let req = http::Request::builder()
        .method("GET")
        .uri(format!("{CRDS}?watch=1"))
        .header(ACCEPT, ACCEPT_PROTOBUF)
        .body(Body::empty())?;
    let res = client.send(req).await?;
    ensure!(res.status() == 200, "watch: {}", res.status());
    let ct = res
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    ensure!(
        ct == "application/vnd.kubernetes.protobuf;stream=watch",
        "watch Content-Type {ct:?}"
    );
    let mut watch = res.into_body();

    // Create in protobuf; the answer is the stored CRD in protobuf.
    let body = envelope(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        widget_crd().encode_to_vec(),
    );
    let r = send(&client, "POST", CRDS, Some(PROTOBUF), body).await?;
    ensure!(
        r.code == 201,
        "protobuf CRD create: {} {}",
        r.code,
        r.text()
    );
    let (api_version, kind, raw) = r.kind_and_raw()?;
    ensure!(
        api_version == "apiextensions.k8s.io/v1" && kind == "CustomResourceDefinition",
        "create answered a {api_version} {kind}"
    );
    let created = apiext::CustomResourceDefinition::decode(raw.as_slice())?;
    let created_meta = created.metadata.clone().unwrap_or_default();
    ensure!(
        created_meta.name.as_deref() == Some("widgets.example.com")
            && created_meta.uid.is_some_and(|u| !u.is_empty()),
        "created metadata: {:?}",
        created.metadata
    );
    check_widget_schema(&created)?;

    // The watch sees it, in protobuf.
    let mut buf = Vec::new();
    let ev = next_watch_event(&mut watch, &mut buf).await?;
    ensure!(
        ev.r#type.as_deref() == Some("ADDED"),
        "event {:?}",
        ev.r#type
    );
    let object = ev.object.and_then(|o| o.raw).context("event object")?;
    let object = Unknown::decode(object.strip_prefix(b"k8s\0").context("event magic")?)?;
    let watched =
        apiext::CustomResourceDefinition::decode(object.raw.unwrap_or_default().as_slice())?;
    ensure!(
        watched.metadata.and_then(|m| m.name).as_deref() == Some("widgets.example.com"),
        "watched CRD"
    );

    // Get: Established, in protobuf, schema intact.
    let path = format!("{CRDS}/widgets.example.com");
    let mut established = false;
    for _ in 0..100 {
        let r = send(&client, "GET", &path, None, Vec::new()).await?;
        ensure!(r.code == 200, "get CRD: {} {}", r.code, r.text());
        let (_, kind, raw) = r.kind_and_raw()?;
        ensure!(kind == "CustomResourceDefinition", "get answered a {kind}");
        let crd = apiext::CustomResourceDefinition::decode(raw.as_slice())?;
        check_widget_schema(&crd)?;
        established = crd.status.is_some_and(|s| {
            s.conditions.iter().any(|c| {
                c.r#type.as_deref() == Some("Established") && c.status.as_deref() == Some("True")
            })
        });
        if established {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ensure!(established, "the CRD never became Established");

    // List: a CustomResourceDefinitionList in protobuf.
    let r = send(&client, "GET", CRDS, None, Vec::new()).await?;
    let (_, kind, raw) = r.kind_and_raw()?;
    ensure!(
        kind == "CustomResourceDefinitionList",
        "list answered a {kind}"
    );
    let list = apiext::CustomResourceDefinitionList::decode(raw.as_slice())?;
    ensure!(
        list.items
            .iter()
            .any(|c| c.metadata.as_ref().and_then(|m| m.name.as_deref())
                == Some("widgets.example.com")),
        "the list has the CRD"
    );

    // The schema that came in protobuf is the one enforced: the default is
    // applied and the maximum refused.
    widget_served(&client).await?;
    let r = send_json(
        &client,
        "POST",
        WIDGETS,
        &json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w"}, "spec": {"color": "red"}}),
    )
    .await?;
    ensure!(r.code == 201, "create widget: {} {}", r.code, r.text());
    ensure!(
        r.json()["spec"]["size"] == 3,
        "defaulted size: {}",
        r.text()
    );
    let r = send_json(
        &client,
        "POST",
        WIDGETS,
        &json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "big"}, "spec": {"size": 11}}),
    )
    .await?;
    ensure!(r.code == 422, "size 11: {} {}", r.code, r.text());

    // A custom resource has no protobuf form: a client that also accepts
    // JSON gets JSON, one that accepts only protobuf gets kube's 406.
    let r = send(&client, "GET", &format!("{WIDGETS}/w"), None, Vec::new()).await?;
    ensure!(
        r.code == 200 && r.content_type == "application/json" && r.json()["spec"]["size"] == 3,
        "widget for a protobuf-or-JSON client: {} {:?} {}",
        r.code,
        r.content_type,
        r.text()
    );
    let r = send_accepting(&client, PROTOBUF, "GET", WIDGETS, None, Vec::new()).await?;
    let status = r.status()?;
    ensure!(
        r.code == 406
            && status.reason.as_deref() == Some("NotAcceptable")
            && status.message.as_deref()
                == Some(
                    "object *unstructured.UnstructuredList does not implement the protobuf marshalling interface and cannot be encoded to a protobuf message"
                ),
        "widget list for a protobuf-only client: {} {status:?}",
        r.code
    );

    // A custom resource's protobuf body is refused as
    // kube-apiserver refuses it (a 400, here as a protobuf Status).
    let r = send(
        &client,
        "POST",
        WIDGETS,
        Some(PROTOBUF),
        envelope(
            "example.com/v1",
            "Widget",
            k8s_pb::api::core::v1::ConfigMap::default().encode_to_vec(),
        ),
    )
    .await?;
    ensure!(r.code == 400, "protobuf widget: {} {}", r.code, r.text());
    let status = r.status()?;
    ensure!(
        status.reason.as_deref() == Some("BadRequest")
            && status.message.as_deref()
                == Some(
                    "Widget in version \"v1\" cannot be handled as a Widget: object *unstructured.Unstructured does not implement the protobuf marshalling interface and cannot be encoded to a protobuf message"
                ),
        "protobuf widget: {status:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_protobuf_bodies_get_kube_apiserver_answers() -> Result<()> {
    let (_server, client) = start().await?;

    // A CRD whose message is cut short: 400, kube's create-handler wording,
    // as a protobuf Status (the client asked for protobuf first).
    let mut raw = widget_crd().encode_to_vec();
    raw.truncate(raw.len() - 5);
    let body = envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", raw);
    let r = send(&client, "POST", CRDS, Some(PROTOBUF), body).await?;
    ensure!(r.code == 400, "truncated CRD: {} {}", r.code, r.text());
    let status = r.status()?;
    ensure!(
        status.reason.as_deref() == Some("BadRequest")
            && status.code == Some(400)
            && status.message.as_deref()
                == Some(
                    "CustomResourceDefinition in version \"v1\" cannot be handled as a CustomResourceDefinition: unexpected EOF"
                ),
        "truncated CRD: {status:?}"
    );

    // Only the magic: `empty body`; no bytes at all: `empty data`.
    let r = send(&client, "POST", CM_PATH, Some(PROTOBUF), b"k8s\0".to_vec()).await?;
    ensure!(
        r.code == 400
            && r.status()?.message.as_deref()
                == Some(
                    "the object provided is unrecognized (must be of type ConfigMap): empty body (6b387300)"
                ),
        "magic only: {} {}",
        r.code,
        r.text()
    );

    // A kind the server does not know.
    let r = send(
        &client,
        "POST",
        CM_PATH,
        Some(PROTOBUF),
        envelope("v1", "Gadget", Vec::new()),
    )
    .await?;
    let status = r.status()?;
    ensure!(
        r.code == 400
            && status.message.as_deref()
                == Some(
                    "Gadget in version \"v1\" cannot be handled as a ConfigMap: no kind \"Gadget\" is registered for version \"v1\" in scheme \"k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30\""
                ),
        "unknown kind: {status:?}"
    );

    // An unsupported media type: 415 with kube's wording.
    let r = send(
        &client,
        "POST",
        CM_PATH,
        Some("application/cbor-seq"),
        b"x".to_vec(),
    )
    .await?;
    let status = r.status()?;
    ensure!(
        r.code == 415 && status.reason.as_deref() == Some("UnsupportedMediaType"),
        "unsupported media type: {status:?}"
    );

    // Errors in general follow the client's Accept: a NotFound in protobuf.
    let r = send(
        &client,
        "GET",
        &format!("{CM_PATH}/missing"),
        None,
        Vec::new(),
    )
    .await?;
    let status = r.status()?;
    ensure!(
        r.code == 404
            && status.reason.as_deref() == Some("NotFound")
            && status.message.as_deref() == Some("configmaps \"missing\" not found"),
        "not found: {status:?}"
    );
    // Nothing was created.
    let r = send(&client, "GET", CRDS, None, Vec::new()).await?;
    let (_, _, raw) = r.kind_and_raw()?;
    let list = apiext::CustomResourceDefinitionList::decode(raw.as_slice())?;
    ensure!(list.items.is_empty(), "a CRD was created");
    Ok(())
}

// ---- federation/v1beta1 Cluster in protobuf ----------------------------------

/// Federation v1's `apis/federation/v1beta1/generated.proto`, written out
/// for prost (k8s-pb has no federation types): how a Federation v1 client
/// reads a Cluster.
mod federation_v1beta1 {
    use k8s_pb::api::core::v1::LocalObjectReference;
    use k8s_pb::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta, Time};

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Cluster {
        #[prost(message, optional, tag = "1")]
        pub metadata: Option<ObjectMeta>,
        #[prost(message, optional, tag = "2")]
        pub spec: Option<ClusterSpec>,
        #[prost(message, optional, tag = "3")]
        pub status: Option<ClusterStatus>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ClusterList {
        #[prost(message, optional, tag = "1")]
        pub metadata: Option<ListMeta>,
        #[prost(message, repeated, tag = "2")]
        pub items: Vec<Cluster>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ClusterSpec {
        #[prost(message, repeated, tag = "1")]
        pub server_address_by_client_cid_rs: Vec<ServerAddressByClientCidr>,
        #[prost(message, optional, tag = "2")]
        pub secret_ref: Option<LocalObjectReference>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ServerAddressByClientCidr {
        #[prost(string, optional, tag = "1")]
        pub client_cidr: Option<String>,
        #[prost(string, optional, tag = "2")]
        pub server_address: Option<String>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ClusterStatus {
        #[prost(message, repeated, tag = "1")]
        pub conditions: Vec<ClusterCondition>,
        #[prost(string, repeated, tag = "5")]
        pub zones: Vec<String>,
        #[prost(string, optional, tag = "6")]
        pub region: Option<String>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ClusterCondition {
        #[prost(string, optional, tag = "1")]
        pub r#type: Option<String>,
        #[prost(string, optional, tag = "2")]
        pub status: Option<String>,
        #[prost(message, optional, tag = "3")]
        pub last_probe_time: Option<Time>,
        #[prost(message, optional, tag = "4")]
        pub last_transition_time: Option<Time>,
        #[prost(string, optional, tag = "5")]
        pub reason: Option<String>,
        #[prost(string, optional, tag = "6")]
        pub message: Option<String>,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn federation_clusters_in_protobuf() -> Result<()> {
    use federation_v1beta1 as fed;
    let (_server, client) = start().await?;
    let clusters = "/apis/federation/v1beta1/clusters";
    let cluster = fed::Cluster {
        metadata: Some(meta::ObjectMeta {
            name: Some("east".into()),
            labels: [("region".to_string(), "us-east".to_string())].into(),
            ..Default::default()
        }),
        spec: Some(fed::ClusterSpec {
            server_address_by_client_cid_rs: vec![fed::ServerAddressByClientCidr {
                client_cidr: Some("0.0.0.0/0".into()),
                server_address: Some("https://127.0.0.1:1".into()),
            }],
            secret_ref: Some(k8s_pb::api::core::v1::LocalObjectReference {
                name: Some("east-kubeconfig".into()),
            }),
        }),
        status: None,
    };
    let body = envelope("federation/v1beta1", "Cluster", cluster.encode_to_vec());
    let r = send(&client, "POST", clusters, Some(PROTOBUF), body).await?;
    ensure!(
        r.code == 201,
        "protobuf cluster create: {} {}",
        r.code,
        r.text()
    );
    let (_, kind, raw) = r.kind_and_raw()?;
    ensure!(kind == "Cluster", "create answered a {kind}");
    let created = fed::Cluster::decode(raw.as_slice())?;
    let spec = created.spec.context("spec")?;
    ensure!(
        spec.server_address_by_client_cid_rs
            .first()
            .and_then(|a| a.server_address.as_deref())
            == Some("https://127.0.0.1:1")
            && spec.secret_ref.and_then(|s| s.name).as_deref() == Some("east-kubeconfig"),
        "created spec"
    );
    ensure!(
        created
            .metadata
            .is_some_and(|m| m.labels.get("region").map(String::as_str) == Some("us-east")),
        "created labels"
    );

    let r = send(&client, "GET", clusters, None, Vec::new()).await?;
    let (_, kind, raw) = r.kind_and_raw()?;
    ensure!(kind == "ClusterList", "list answered a {kind}");
    let list = fed::ClusterList::decode(raw.as_slice())?;
    ensure!(list.items.len() == 1, "{} clusters", list.items.len());
    Ok(())
}

// ---- the scale subresource in protobuf ---------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn scale_subresource_in_protobuf() -> Result<()> {
    use k8s_pb::api::autoscaling::v1 as autoscaling;
    let (_server, client) = start().await?;
    let deploys = "/apis/apps/v1/namespaces/default/deployments";
    create_json(
        &client,
        deploys,
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web"},
               "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
    )
    .await?;
    let scale_path = format!("{deploys}/web/scale");
    // client-go's UpdateScale under retry.RetryOnConflict (DefaultRetry, 5
    // steps): read the Scale, change the replicas, send it back. The
    // server's own deployment controller (standalone mode, as kcm beside
    // kube-apiserver) may write the Deployment between the read and the
    // update, which is a 409 for the update as on kube.
    let mut attempt = 0;
    let r = loop {
        attempt += 1;
        let r = send(&client, "GET", &scale_path, None, Vec::new()).await?;
        let (api_version, kind, raw) = r.kind_and_raw()?;
        ensure!(
            api_version == "autoscaling/v1" && kind == "Scale",
            "scale answered a {api_version} {kind}"
        );
        let mut scale = autoscaling::Scale::decode(raw.as_slice())?;
        ensure!(
            scale.spec.as_ref().and_then(|s| s.replicas) == Some(2),
            "scale: {scale:?}"
        );
        scale.spec = Some(autoscaling::ScaleSpec { replicas: Some(5) });
        let body = envelope("autoscaling/v1", "Scale", scale.encode_to_vec());
        let r = send(&client, "PUT", &scale_path, Some(PROTOBUF), body).await?;
        if r.code != 409 || attempt == 5 {
            break r;
        }
    };
    ensure!(
        r.code == 200,
        "protobuf scale update: {} {}",
        r.code,
        r.text()
    );
    let (_, kind, raw) = r.kind_and_raw()?;
    ensure!(kind == "Scale", "update answered a {kind}");
    let updated = autoscaling::Scale::decode(raw.as_slice())?;
    ensure!(
        updated.spec.and_then(|s| s.replicas) == Some(5),
        "updated scale"
    );
    let r = send_accepting(
        &client,
        "application/json",
        "GET",
        &format!("{deploys}/web"),
        None,
        Vec::new(),
    )
    .await?;
    ensure!(
        r.json()["spec"]["replicas"] == 5,
        "deployment replicas: {}",
        r.text()
    );
    Ok(())
}

// ---- the kinds added for issue 15 in protobuf ---------------------------------

/// FlowSchemas (created, listed with kube's bootstrap ones), a Binding sent
/// to `pods/binding`, and the ComponentStatusList, as client-go configured
/// for protobuf sends and reads them.
#[tokio::test(flavor = "multi_thread")]
async fn new_kinds_in_protobuf() -> Result<()> {
    use k8s_pb::api::core::v1 as core;
    use k8s_pb::api::flowcontrol::v1 as flowcontrol;
    let (_server, client) = start().await?;
    let schemas = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
    let schema = flowcontrol::FlowSchema {
        metadata: Some(meta::ObjectMeta {
            name: Some("pb-schema".into()),
            ..Default::default()
        }),
        spec: Some(flowcontrol::FlowSchemaSpec {
            priority_level_configuration: Some(flowcontrol::PriorityLevelConfigurationReference {
                name: Some("workload-low".into()),
            }),
            distinguisher_method: Some(flowcontrol::FlowDistinguisherMethod {
                r#type: Some("ByUser".into()),
            }),
            ..Default::default()
        }),
        status: None,
    };
    let body = envelope(
        "flowcontrol.apiserver.k8s.io/v1",
        "FlowSchema",
        schema.encode_to_vec(),
    );
    let r = send(&client, "POST", schemas, Some(PROTOBUF), body).await?;
    ensure!(
        r.code == 201,
        "protobuf FlowSchema create: {} {}",
        r.code,
        r.text()
    );
    let (_, kind, raw) = r.kind_and_raw()?;
    ensure!(kind == "FlowSchema", "create answered a {kind}");
    let created = flowcontrol::FlowSchema::decode(raw.as_slice())?;
    let spec = created.spec.context("spec")?;
    ensure!(
        spec.matching_precedence == Some(1000),
        "kube's default: {spec:?}"
    );
    ensure!(
        spec.distinguisher_method.and_then(|d| d.r#type).as_deref() == Some("ByUser"),
        "distinguisher kept"
    );
    let r = send(&client, "GET", schemas, None, Vec::new()).await?;
    let (_, kind, raw) = r.kind_and_raw()?;
    ensure!(kind == "FlowSchemaList", "list answered a {kind}");
    let list = flowcontrol::FlowSchemaList::decode(raw.as_slice())?;
    ensure!(
        list.items.len() == 12,
        "11 bootstrap + 1: {}",
        list.items.len()
    );

    // pods/binding with a protobuf Binding (what kube-scheduler sends).
    let pod = core::Pod {
        metadata: Some(meta::ObjectMeta {
            name: Some("pb-pod".into()),
            ..Default::default()
        }),
        spec: Some(core::PodSpec {
            containers: vec![core::Container {
                name: Some("c".into()),
                image: Some("nginx".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    };
    let r = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/pods",
        Some(PROTOBUF),
        envelope("v1", "Pod", pod.encode_to_vec()),
    )
    .await?;
    ensure!(r.code == 201, "pod create: {} {}", r.code, r.text());
    let binding = core::Binding {
        metadata: Some(meta::ObjectMeta {
            name: Some("pb-pod".into()),
            ..Default::default()
        }),
        target: Some(core::ObjectReference {
            kind: Some("Node".into()),
            name: Some("node-pb".into()),
            ..Default::default()
        }),
    };
    let r = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/pods/pb-pod/binding",
        Some(PROTOBUF),
        envelope("v1", "Binding", binding.encode_to_vec()),
    )
    .await?;
    ensure!(r.code == 201, "binding: {} {}", r.code, r.text());
    let status = r.status()?;
    ensure!(status.status.as_deref() == Some("Success"), "{status:?}");
    let r = send(
        &client,
        "GET",
        "/api/v1/namespaces/default/pods/pb-pod",
        None,
        Vec::new(),
    )
    .await?;
    let (_, _, raw) = r.kind_and_raw()?;
    let bound = core::Pod::decode(raw.as_slice())?;
    ensure!(
        bound.spec.and_then(|s| s.node_name).as_deref() == Some("node-pb"),
        "the pod got its node"
    );

    let r = send(
        &client,
        "GET",
        "/api/v1/componentstatuses",
        None,
        Vec::new(),
    )
    .await?;
    let (_, kind, raw) = r.kind_and_raw()?;
    ensure!(kind == "ComponentStatusList", "answered a {kind}");
    let list = core::ComponentStatusList::decode(raw.as_slice())?;
    let names: Vec<String> = list
        .items
        .iter()
        .filter_map(|c| c.metadata.as_ref()?.name.clone())
        .collect();
    ensure!(
        names == ["scheduler", "controller-manager", "etcd-0"],
        "{names:?}"
    );
    Ok(())
}
