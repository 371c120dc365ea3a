//! Bad input against the real server, over hand-built HTTP requests
//! (`kube::Client::send`, HTTP/1.1 with the admin client certificate): each
//! request gets kube-apiserver's status code and a `metav1.Status` body
//! (kind, code, reason, and the message where kube-apiserver's is fixed
//! text), nothing is written (checked by listing or re-reading afterwards),
//! and the server still answers `/readyz` after all of it.
//!
//! The expected answers come from kube-apiserver's handlers
//! (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/{create,patch,
//! update,delete,rest}.go`, `.../endpoints/request/...`,
//! `k8s.io/apimachinery/pkg/api/errors`).

use std::collections::BTreeSet;

use anyhow::{Context, Result, bail, ensure};
use http::header::CONTENT_TYPE;
use kube::Client;
use kube::client::Body;
use serde_json::{Value, json};
use tokio::task::block_in_place;
use ubernetes_e2e::Server;

const CM_PATH: &str = "/api/v1/namespaces/default/configmaps";

async fn start() -> Result<(Server, Client)> {
    let server = block_in_place(Server::start)?;
    let client = server.client().await?;
    Ok((server, client))
}

/// A response: status code, raw body, and the body as JSON (`Null` if it is not JSON).
#[derive(Debug)]
struct Reply {
    code: u16,
    text: String,
    json: Value,
}

async fn send(
    client: &Client,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: impl Into<Vec<u8>>,
) -> Result<Reply> {
    let mut req = http::Request::builder().method(method).uri(path);
    if let Some(ct) = content_type {
        req = req.header(CONTENT_TYPE, ct);
    }
    let req = req.body(Body::from(body.into()))?;
    let res = client
        .send(req)
        .await
        .with_context(|| format!("{method} {path}"))?;
    let code = res.status().as_u16();
    let bytes = res.into_body().collect_bytes().await?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Ok(Reply { code, text, json })
}

async fn get(client: &Client, path: &str) -> Result<Reply> {
    send(client, "GET", path, None, Vec::new()).await
}

/// `r` is a `metav1.Status` failure with this code and reason.
fn check_status(what: &str, r: &Reply, code: u16, reason: &str) -> Result<()> {
    ensure!(
        r.code == code,
        "{what}: HTTP {} instead of {code}: {}",
        r.code,
        r.text
    );
    let j = &r.json;
    ensure!(
        j["kind"] == "Status" && j["apiVersion"] == "v1",
        "{what}: not a Status: {}",
        r.text
    );
    ensure!(j["status"] == "Failure", "{what}: status: {}", r.text);
    ensure!(j["code"] == code, "{what}: Status.code: {}", r.text);
    let got_reason = j["reason"].as_str().unwrap_or("");
    ensure!(
        got_reason == reason,
        "{what}: reason {got_reason:?} instead of {reason:?}: {}",
        r.text
    );
    ensure!(
        j["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{what}: no message: {}",
        r.text
    );
    Ok(())
}

fn message(r: &Reply) -> &str {
    r.json["message"].as_str().unwrap_or("")
}

/// Names of the ConfigMaps in `default`.
async fn configmap_names(client: &Client) -> Result<BTreeSet<String>> {
    let r = get(client, CM_PATH).await?;
    ensure!(r.code == 200, "list: {}", r.text);
    Ok(r.json["items"]
        .as_array()
        .context("items")?
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str().map(String::from))
        .collect())
}

async fn assert_ready(client: &Client) -> Result<()> {
    let r = get(client, "/readyz").await?;
    ensure!(
        r.code == 200 && r.text == "ok",
        "/readyz: {} {}",
        r.code,
        r.text
    );
    Ok(())
}

async fn create_configmap(client: &Client, name: &str) -> Result<Value> {
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": name}, "data": {"a": "1"}});
    let r = send(
        client,
        "POST",
        CM_PATH,
        Some("application/json"),
        body.to_string(),
    )
    .await?;
    ensure!(r.code == 201, "create {name}: {}", r.text);
    Ok(r.json)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_or_mismatched_create_bodies_are_400_and_write_nothing() -> Result<()> {
    let (_server, client) = start().await?;
    let before = configmap_names(&client).await?;
    let json_ct = Some("application/json");

    let r = send(
        &client,
        "POST",
        CM_PATH,
        json_ct,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad-json""#,
    )
    .await?;
    check_status("malformed JSON", &r, 400, "BadRequest")?;
    ensure!(
        message(&r).starts_with("couldn't get version/kind; json parse error: "),
        "malformed JSON message: {}",
        r.text
    );

    let r = send(
        &client,
        "POST",
        CM_PATH,
        Some("application/yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: [\n  name: bad-yaml\n",
    )
    .await?;
    check_status("malformed YAML", &r, 400, "BadRequest")?;
    ensure!(
        message(&r).starts_with("error converting YAML to JSON: yaml: "),
        "malformed YAML message: {}",
        r.text
    );

    // "Billion laughs": 9 levels of 10 aliases over a 1 KiB string, a
    // terabyte if expanded. Refused at once in go-yaml's words (issue 28).
    let mut bomb = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: laughs}}\nl0: &l0 \"{}\"\n",
        "x".repeat(1024)
    );
    for i in 1..=9 {
        let refs = vec![format!("*l{}", i - 1); 10].join(", ");
        bomb.push_str(&format!("l{i}: &l{i} [{refs}]\n"));
    }
    let r = send(&client, "POST", CM_PATH, Some("application/yaml"), bomb).await?;
    check_status("YAML alias bomb", &r, 400, "BadRequest")?;
    ensure!(
        message(&r) == "error converting YAML to JSON: yaml: document contains excessive aliasing",
        "YAML alias bomb message: {}",
        r.text
    );

    // No GVK could be read, so kube-apiserver's transformDecodeError names
    // the expected kind and appends summarizeData (hex, ≤ 30 bytes).
    let garbage = b"this is not protobuf at all";
    let r = send(
        &client,
        "POST",
        CM_PATH,
        Some("application/vnd.kubernetes.protobuf"),
        garbage.to_vec(),
    )
    .await?;
    check_status("protobuf garbage", &r, 400, "BadRequest")?;
    let hex: String = garbage.iter().map(|b| format!("{b:02x}")).collect();
    ensure!(
        message(&r)
            == format!(
                "the object provided is unrecognized (must be of type ConfigMap): provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] ({hex})"
            ),
        "protobuf garbage message: {}",
        r.text
    );

    // The right magic prefix, then a truncated runtime.Unknown envelope.
    let r = send(
        &client,
        "POST",
        CM_PATH,
        Some("application/vnd.kubernetes.protobuf"),
        b"k8s\x00\x0a\xff\xff\xff\xff\x0fgarbage".to_vec(),
    )
    .await?;
    check_status("truncated protobuf", &r, 400, "BadRequest")?;

    let r = send(
        &client,
        "POST",
        CM_PATH,
        json_ct,
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"bad-kind"}}"#,
    )
    .await?;
    check_status("a Secret posted to configmaps", &r, 400, "BadRequest")?;
    ensure!(
        message(&r).starts_with(r#"Secret in version "v1" cannot be handled as a ConfigMap: "#),
        "wrong kind message: {}",
        r.text
    );

    let r = send(
        &client,
        "POST",
        CM_PATH,
        json_ct,
        r#"{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"bad-version"}}"#,
    )
    .await?;
    check_status(
        "apiVersion apps/v1 posted to core/v1",
        &r,
        400,
        "BadRequest",
    )?;

    let r = send(
        &client,
        "POST",
        CM_PATH,
        json_ct,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad-ns","namespace":"kube-system"}}"#,
    )
    .await?;
    check_status("namespace mismatch", &r, 400, "BadRequest")?;
    ensure!(
        message(&r)
            == "the namespace of the provided object does not match the namespace sent on the request",
        "namespace mismatch message: {}",
        r.text
    );

    let r = send(
        &client,
        "POST",
        CM_PATH,
        Some("text/plain"),
        "name: bad-text",
    )
    .await?;
    check_status("text/plain body", &r, 415, "UnsupportedMediaType")?;

    let after = configmap_names(&client).await?;
    ensure!(before == after, "nothing written: {before:?} → {after:?}");
    let kube_system = get(&client, "/api/v1/namespaces/kube-system/configmaps").await?;
    ensure!(
        !kube_system.text.contains("bad-ns"),
        "nothing written in the body's namespace: {}",
        kube_system.text
    );
    assert_ready(&client).await
}

/// kube-apiserver reads up to MaxRequestBodyBytes + 1 (3 MiB) of the body,
/// then answers 413 (`limitedReadBody` in handlers/rest.go), and Go's server
/// discards the small remainder, so the client that is still sending gets
/// the Status. Several rounds, since a server that answers before reading
/// the body only sometimes gets its 413 through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_3_mib_get_a_413_status_and_write_nothing() -> Result<()> {
    let (_server, client) = start().await?;
    let target = create_configmap(&client, "target").await?;
    let target_path = format!("{CM_PATH}/target");
    let before = configmap_names(&client).await?;
    for round in 0..5 {
        // kube-apiserver's MaxRequestBodyBytes: 3 MiB.
        let big = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
                         "data": {"k": "x".repeat(3 * 1024 * 1024 + 1)}})
        .to_string();
        let r = send(&client, "POST", CM_PATH, Some("application/json"), big).await?;
        check_status(
            &format!("a body over 3 MiB, round {round}"),
            &r,
            413,
            "RequestEntityTooLarge",
        )?;
        ensure!(
            message(&r) == "Request entity too large: limit is 3145728",
            "413 message: {}",
            r.text
        );
        let big_patch = json!({"data": {"k": "x".repeat(3 * 1024 * 1024 + 1)}}).to_string();
        let r = send(
            &client,
            "PATCH",
            &target_path,
            Some("application/merge-patch+json"),
            big_patch,
        )
        .await?;
        check_status(
            &format!("a patch over 3 MiB, round {round}"),
            &r,
            413,
            "RequestEntityTooLarge",
        )?;
    }
    let after = configmap_names(&client).await?;
    ensure!(before == after, "nothing written: {before:?} → {after:?}");
    let now = get(&client, &target_path).await?;
    ensure!(
        now.json["metadata"]["resourceVersion"] == target["metadata"]["resourceVersion"],
        "the patch target is unchanged: {}",
        now.text
    );
    assert_ready(&client).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_and_deeply_nested_bodies_are_handled_and_the_server_keeps_serving() -> Result<()> {
    let (_server, client) = start().await?;
    let target = create_configmap(&client, "target").await?;
    let target_path = format!("{CM_PATH}/target");
    let before = configmap_names(&client).await?;

    // A large body under the limit is fine (and shows the limit is not lower).
    let fine = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "large"},
                      "data": {"k": "x".repeat(900 * 1024)}})
    .to_string();
    let r = send(&client, "POST", CM_PATH, Some("application/json"), fine).await?;
    ensure!(
        r.code == 201,
        "a 900 KiB ConfigMap is accepted: {}",
        &r.text[..r.text.len().min(300)]
    );

    let depth = 100_000;
    let nested = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let open_only = "[".repeat(depth);
    let deep_object = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"deep"}},"data":{{"a":{nested}}}}}"#
    );
    let cases: Vec<(&str, &str, &str, String)> = vec![
        (
            "deep JSON create",
            "POST",
            "application/json",
            deep_object.clone(),
        ),
        (
            "unclosed deep JSON create",
            "POST",
            "application/json",
            open_only.clone(),
        ),
        (
            "deep YAML create",
            "POST",
            "application/yaml",
            deep_object.clone(),
        ),
        (
            "unclosed deep YAML create",
            "POST",
            "application/yaml",
            open_only.clone(),
        ),
        (
            "deep merge patch",
            "PATCH",
            "application/merge-patch+json",
            deep_object.clone(),
        ),
        (
            "deep strategic patch",
            "PATCH",
            "application/strategic-merge-patch+json",
            deep_object,
        ),
        (
            "deep JSON patch",
            "PATCH",
            "application/json-patch+json",
            nested,
        ),
    ];
    for (what, method, ct, body) in cases {
        let path = if method == "POST" {
            CM_PATH
        } else {
            &target_path
        };
        let r = send(&client, method, path, Some(ct), body).await?;
        ensure!(
            (400..500).contains(&r.code),
            "{what}: HTTP {} (want 4xx): {}",
            r.code,
            &r.text[..r.text.len().min(300)]
        );
        ensure!(
            r.json["kind"] == "Status" && r.json["code"] == r.code,
            "{what}: a Status body: {}",
            &r.text[..r.text.len().min(300)]
        );
        assert_ready(&client)
            .await
            .with_context(|| format!("after {what}"))?;
    }

    let mut want = before.clone();
    want.insert("large".into());
    let after = configmap_names(&client).await?;
    ensure!(
        after == want,
        "only `large` was written: {before:?} → {after:?}"
    );
    let now = get(&client, &target_path).await?;
    ensure!(
        now.json["metadata"]["resourceVersion"] == target["metadata"]["resourceVersion"],
        "the patch target is unchanged: {}",
        now.text
    );
    assert_ready(&client).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_label_and_field_selectors_are_400() -> Result<()> {
    let (_server, client) = start().await?;
    let long_key = "a".repeat(64);
    let cases = [
        (
            "unterminated set",
            format!("{CM_PATH}?labelSelector=a%20in%20("),
        ),
        ("bare !", "/api/v1/configmaps?labelSelector=!".to_string()),
        (
            "label key over 63 bytes",
            format!("{CM_PATH}?labelSelector={long_key}%3Db"),
        ),
        (
            "invalid label value",
            format!("{CM_PATH}?labelSelector=a%3D%25"),
        ),
        (
            "watch with an invalid label selector",
            format!("{CM_PATH}?watch=true&labelSelector=a%20in%20("),
        ),
        (
            "field selector with ===",
            format!("{CM_PATH}?fieldSelector=a%3D%3D%3Db"),
        ),
        (
            "field selector without operator",
            format!("{CM_PATH}?fieldSelector=metadata.name"),
        ),
    ];
    for (what, path) in &cases {
        let r = get(&client, path).await?;
        check_status(what, &r, 400, "BadRequest")?;
    }

    // kube-apiserver's DefaultMetaV1FieldSelectorConversion for kinds
    // without their own selectable fields.
    for path in [
        format!("{CM_PATH}?fieldSelector=spec.foo%3Dx"),
        format!("{CM_PATH}?watch=true&fieldSelector=spec.foo%3Dx"),
        "/api/v1/configmaps?fieldSelector=spec.foo%3Dx".to_string(),
    ] {
        let r = get(&client, &path).await?;
        check_status("unknown field selector field", &r, 400, "BadRequest")?;
        ensure!(
            message(&r)
                == r#""spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace""#,
            "unknown field message: {}",
            r.text
        );
    }

    // A long but valid selector is served (HTTP/1.1: the URL fits hyper's buffer).
    let many: Vec<String> = (0..2000).map(|i| format!("k{i}%3Dv")).collect();
    let r = get(
        &client,
        &format!("{CM_PATH}?labelSelector={}", many.join(",")),
    )
    .await?;
    ensure!(
        r.code == 200 && r.json["items"] == json!([]),
        "a 2,000-term selector: {} {}",
        r.code,
        &r.text[..r.text.len().min(300)]
    );
    assert_ready(&client).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_patches_get_kube_apiserver_codes_and_change_nothing() -> Result<()> {
    let (_server, client) = start().await?;
    let created = create_configmap(&client, "p").await?;
    let path = format!("{CM_PATH}/p");
    let json_patch = "application/json-patch+json";
    let merge = "application/merge-patch+json";
    let smp = "application/strategic-merge-patch+json";
    // (what, content type, body, code, reason)
    let cases = [
        ("malformed JSON patch", json_patch, "{{{", 400, "BadRequest"),
        (
            "JSON patch that is an object",
            json_patch,
            r#"{"op":"add"}"#,
            400,
            "BadRequest",
        ),
        (
            "JSON patch whose test op fails",
            json_patch,
            r#"[{"op":"test","path":"/data/a","value":"2"},{"op":"replace","path":"/data/a","value":"3"}]"#,
            422,
            "Invalid",
        ),
        (
            "JSON patch removing a missing path",
            json_patch,
            r#"[{"op":"remove","path":"/data/missing"}]"#,
            422,
            "Invalid",
        ),
        (
            "JSON patch with an unknown op",
            json_patch,
            r#"[{"op":"frobnicate","path":"/data/a"}]"#,
            422,
            "Invalid",
        ),
        ("malformed merge patch", merge, "{{{", 400, "BadRequest"),
        ("malformed strategic patch", smp, "{{{", 400, "BadRequest"),
        (
            "strategic patch that is a list",
            smp,
            r#"[{"op":"add"}]"#,
            400,
            "BadRequest",
        ),
        (
            "merge patch renaming the object",
            merge,
            r#"{"metadata":{"name":"other"}}"#,
            400,
            "BadRequest",
        ),
        (
            "merge patch moving the object to another namespace",
            merge,
            r#"{"metadata":{"namespace":"kube-system"}}"#,
            400,
            "BadRequest",
        ),
        (
            "merge patch making the object invalid",
            merge,
            r#"{"data":{"not a key!":"x"}}"#,
            422,
            "Invalid",
        ),
        // kube-apiserver: an unknown `$patch` directive is a plain error from
        // strategicpatch, so it answers 500 with reason "" (ErrorToAPIStatus).
        (
            "strategic patch with an unknown $patch directive",
            smp,
            r#"{"data":{"$patch":"foo"}}"#,
            500,
            "",
        ),
        (
            "text/plain patch",
            "text/plain",
            "{}",
            415,
            "UnsupportedMediaType",
        ),
        // Server-side apply needs an explicit fieldManager (kube's
        // ValidatePatchOptions: 422 on PatchOptions).
        (
            "apply patch without a field manager",
            "application/apply-patch+yaml",
            "{}",
            422,
            "Invalid",
        ),
    ];
    for (what, ct, body, code, reason) in cases {
        let r = send(&client, "PATCH", &path, Some(ct), body).await?;
        check_status(what, &r, code, reason)?;
    }

    // A failed JSON patch op is 422 with kube-apiserver's generic message.
    let r = send(
        &client,
        "PATCH",
        &path,
        Some(json_patch),
        r#"[{"op":"test","path":"/data/a","value":"2"}]"#,
    )
    .await?;
    ensure!(
        message(&r) == "the server rejected our request due to an error in our request",
        "JSON patch apply failure message: {}",
        r.text
    );
    let r = send(&client, "PATCH", &path, Some("text/plain"), "{}").await?;
    ensure!(
        message(&r).starts_with(
            "the body of the request was in an unknown format - accepted media types include: "
        ),
        "415 message: {}",
        r.text
    );
    let r = send(
        &client,
        "PATCH",
        &path,
        Some(merge),
        r#"{"metadata":{"name":"other"}}"#,
    )
    .await?;
    ensure!(
        message(&r) == "the name of the object does not match the name on the URL",
        "rename message: {}",
        r.text
    );

    let now = get(&client, &path).await?;
    ensure!(
        now.json["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
            && now.json["data"] == json!({"a": "1"}),
        "the object is unchanged: {}",
        now.text
    );
    ensure!(
        configmap_names(&client)
            .await?
            .into_iter()
            .all(|n| n != "other"),
        "no object `other`"
    );
    assert_ready(&client).await
}

/// kube-apiserver decodes the patched JSON into the typed object; when that
/// fails for a reason other than strictness (a wrong type), it answers 422
/// with `NewInvalid(GroupKind{}, "", [field.Invalid("patch", …)])`
/// (`jsonPatcher.applyPatchToCurrentObject` / `applyPatchToObject` in
/// handlers/patch.go), and malformed JSON-/merge-patch bodies are 400
/// "error decoding patch: …" (strict decoding runs first under the default
/// fieldValidation=Warn).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_decode_failures_match_kube_apiserver_codes_and_messages() -> Result<()> {
    let (_server, client) = start().await?;
    let created = create_configmap(&client, "p").await?;
    let path = format!("{CM_PATH}/p");
    for (what, ct, body) in [
        (
            "merge patch with a wrong type",
            "application/merge-patch+json",
            r#"{"data":5}"#,
        ),
        (
            "strategic patch with a wrong type",
            "application/strategic-merge-patch+json",
            r#"{"data":5}"#,
        ),
        (
            "JSON patch with a wrong type",
            "application/json-patch+json",
            r#"[{"op":"replace","path":"/data","value":5}]"#,
        ),
    ] {
        let r = send(&client, "PATCH", &path, Some(ct), body).await?;
        check_status(what, &r, 422, "Invalid")?;
        ensure!(
            r.json["details"]["causes"][0]["field"] == "patch",
            "{what}: cause field: {}",
            r.text
        );
        ensure!(
            message(&r).starts_with(r#" "" is invalid: patch: Invalid value: "#),
            "{what}: message: {}",
            r.text
        );
    }
    for (what, ct) in [
        ("malformed JSON patch", "application/json-patch+json"),
        ("malformed merge patch", "application/merge-patch+json"),
    ] {
        let r = send(&client, "PATCH", &path, Some(ct), "{{{").await?;
        check_status(what, &r, 400, "BadRequest")?;
        ensure!(
            message(&r)
                == "error decoding patch: invalid character '{' looking for beginning of object key string",
            "{what}: message: {}",
            r.text
        );
    }
    let now = get(&client, &path).await?;
    ensure!(
        now.json["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"],
        "unchanged: {}",
        now.text
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_names_are_422_with_a_metadata_name_cause() -> Result<()> {
    let (_server, client) = start().await?;
    let json_ct = Some("application/json");
    let cases = [
        (
            CM_PATH,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}}),
            "ConfigMap",
            "FieldValueInvalid",
        ),
        (
            CM_PATH,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a".repeat(254)}}),
            "ConfigMap",
            "FieldValueInvalid",
        ),
        (
            CM_PATH,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
            "ConfigMap",
            "FieldValueRequired",
        ),
        (
            "/api/v1/namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}}),
            "Namespace",
            "FieldValueInvalid",
        ),
        (
            "/api/v1/namespaces/default/services",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "1svc"},
                   "spec": {"ports": [{"port": 80}]}}),
            "Service",
            "FieldValueInvalid",
        ),
    ];
    for (path, body, kind, cause_reason) in cases {
        let what = format!("{kind} {}", body["metadata"]);
        let r = send(&client, "POST", path, json_ct, body.to_string()).await?;
        check_status(&what, &r, 422, "Invalid")?;
        let details = &r.json["details"];
        ensure!(details["kind"] == kind, "{what}: details.kind: {}", r.text);
        ensure!(
            details["causes"][0]["field"] == "metadata.name",
            "{what}: causes[0].field: {}",
            r.text
        );
        ensure!(
            details["causes"][0]["reason"] == cause_reason,
            "{what}: causes[0].reason: {}",
            r.text
        );
        let name = body["metadata"]["name"].as_str().unwrap_or("");
        ensure!(
            message(&r).starts_with(&format!("{kind} {name:?} is invalid: metadata.name: ")),
            "{what}: message: {}",
            r.text
        );
    }
    let r = send(
        &client,
        "POST",
        CM_PATH,
        json_ct,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}})
            .to_string(),
    )
    .await?;
    ensure!(
        message(&r)
            == "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        "RFC 1123 subdomain message: {}",
        r.text
    );

    let names = configmap_names(&client).await?;
    ensure!(
        !names
            .iter()
            .any(|n| n.to_lowercase().starts_with("bad") || n.starts_with("aaaa")),
        "nothing written: {names:?}"
    );
    let ns = get(&client, "/api/v1/namespaces/a.b").await?;
    ensure!(ns.code == 404, "namespace a.b not created: {}", ns.text);
    assert_ready(&client).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_updates_and_failed_delete_preconditions_are_409_and_change_nothing() -> Result<()> {
    let (_server, client) = start().await?;
    let first = create_configmap(&client, "c").await?;
    let path = format!("{CM_PATH}/c");
    let mut updated = first.clone();
    updated["data"]["a"] = json!("2");
    let r = send(
        &client,
        "PUT",
        &path,
        Some("application/json"),
        updated.to_string(),
    )
    .await?;
    ensure!(r.code == 200, "a current update: {}", r.text);
    let current = r.json;

    // The first version again: its resourceVersion is stale now.
    let mut stale = first.clone();
    stale["data"]["a"] = json!("stale");
    let r = send(
        &client,
        "PUT",
        &path,
        Some("application/json"),
        stale.to_string(),
    )
    .await?;
    check_status("stale update", &r, 409, "Conflict")?;
    ensure!(
        message(&r)
            == "Operation cannot be fulfilled on configmaps \"c\": the object has been modified; please apply your changes to the latest version and try again",
        "conflict message: {}",
        r.text
    );
    ensure!(
        r.json["details"]["name"] == "c" && r.json["details"]["kind"] == "configmaps",
        "conflict details: {}",
        r.text
    );

    // A patch carrying a stale resourceVersion is a conflict too.
    let stale_rv = first["metadata"]["resourceVersion"].clone();
    let r = send(
        &client,
        "PATCH",
        &path,
        Some("application/merge-patch+json"),
        json!({"metadata": {"resourceVersion": stale_rv}, "data": {"a": "stale"}}).to_string(),
    )
    .await?;
    check_status("stale merge patch", &r, 409, "Conflict")?;

    let r = send(
        &client,
        "POST",
        CM_PATH,
        Some("application/json"),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}).to_string(),
    )
    .await?;
    check_status("create of an existing name", &r, 409, "AlreadyExists")?;
    ensure!(
        message(&r) == "configmaps \"c\" already exists",
        "exists message: {}",
        r.text
    );

    let uid = current["metadata"]["uid"].as_str().context("uid")?;
    let wrong_uid = "00000000-0000-0000-0000-000000000000";
    let r = send(
        &client,
        "DELETE",
        &path,
        Some("application/json"),
        json!({"kind": "DeleteOptions", "apiVersion": "v1",
               "preconditions": {"uid": wrong_uid}})
        .to_string(),
    )
    .await?;
    check_status("delete with a wrong uid precondition", &r, 409, "Conflict")?;
    ensure!(
        message(&r)
            == format!(
                "Operation cannot be fulfilled on configmaps \"c\": Precondition failed: UID in precondition: {wrong_uid}, UID in object meta: {uid}"
            ),
        "uid precondition message: {}",
        r.text
    );
    let r = send(
        &client,
        "DELETE",
        &path,
        Some("application/json"),
        json!({"kind": "DeleteOptions", "apiVersion": "v1",
               "preconditions": {"resourceVersion": stale_rv}})
        .to_string(),
    )
    .await?;
    check_status(
        "delete with a stale resourceVersion precondition",
        &r,
        409,
        "Conflict",
    )?;

    let now = get(&client, &path).await?;
    if now.code != 200 {
        bail!("the object survives every refused write: {}", now.text);
    }
    ensure!(
        now.json["metadata"]["resourceVersion"] == current["metadata"]["resourceVersion"]
            && now.json["data"] == json!({"a": "2"}),
        "the object is the one the good update wrote: {}",
        now.text
    );

    // The right uid precondition deletes it.
    let r = send(
        &client,
        "DELETE",
        &path,
        Some("application/json"),
        json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": uid}})
            .to_string(),
    )
    .await?;
    ensure!(r.code == 200, "delete with the right uid: {}", r.text);
    assert_ready(&client).await
}
