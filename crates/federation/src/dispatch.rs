//! Dispatch (kubefed's `dispatch` package): every write the federation
//! makes to a member cluster, one function per operation, each bounded by
//! a timeout and answering the member's own error message.
//!
//! - [`apply`]: server-side apply of a member copy, field manager
//!   [`FIELD_MANAGER`], forced (the federation owns the fields it sets;
//!   other managers' fields stay);
//! - [`ensure_namespace`]: the namespace first, from its federated twin
//!   ([`apply_with_namespace`]: both, when the member lacks the namespace);
//! - [`delete_copy`]: delete our copy (never an object the federation does
//!   not manage, checked against the label and the origin uid; with a uid
//!   precondition);
//! - [`orphan_copy`]: let our copy go (remove our label and annotation);
//! - [`get_copy`]: the member's object as it is there now;
//! - [`create_only`]: the body of an apply that only creates (a copy the
//!   member cache does not know: one request, never a write to an object
//!   that is there already).
//!
//! A user's own federated controller uses these as the built-in sync does.

use std::time::Duration;

use http::StatusCode;
use kube::Resource as _;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::Request;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::kinds::{self, FederatedKind};
use crate::member_object::{self, MANAGED_LABEL, ORIGIN_UID_ANNOTATION};
use crate::members::Member;

/// The field manager of every write to a member.
pub const FIELD_MANAGER: &str = "ubernetes";

/// A member call's failure, with the member's own message when it sent a
/// Status.
#[derive(Debug, Clone)]
pub struct MemberError {
    /// The HTTP status code, 0 when no answer came.
    pub code: u16,
    /// The member's message (or the transport error).
    pub message: String,
}

impl MemberError {
    /// A failure with no HTTP answer.
    pub fn transport(message: String) -> Self {
        Self { code: 0, message }
    }
    /// The member answered 404.
    pub fn not_found(&self) -> bool {
        self.code == 404
    }
}

impl std::fmt::Display for MemberError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for MemberError {}

/// Send a request to a member and read its JSON answer, within `timeout`.
pub async fn send(
    client: &kube::Client,
    req: http::Request<Vec<u8>>,
    timeout: Duration,
) -> Result<(StatusCode, Value), MemberError> {
    send_as(client, req, timeout).await
}

/// [`send`], reading a success's answer as `T` (e.g. only the fields the
/// caller needs: the rest of the JSON is skipped, not built). An answer
/// that is not a `T` is a transport error.
pub async fn send_as<T: DeserializeOwned>(
    client: &kube::Client,
    req: http::Request<Vec<u8>>,
    timeout: Duration,
) -> Result<(StatusCode, T), MemberError> {
    let call = async {
        let res = client
            .send(req.map(kube::client::Body::from))
            .await
            .map_err(|e| MemberError::transport(e.to_string()))?;
        let status = res.status();
        let bytes = res
            .into_body()
            .collect_bytes()
            .await
            .map_err(|e| MemberError::transport(e.to_string()))?;
        if status.is_success() {
            // An answer that is not JSON reads as `null` (for a `Value`).
            let body = serde_json::from_slice(&bytes)
                .or_else(|e| T::deserialize(Value::Null).map_err(|_| e))
                .map_err(|e| {
                    MemberError::transport(format!(
                        "the member's answer ({status}) cannot be read: {e}"
                    ))
                })?;
            Ok((status, body))
        } else {
            // Of a Status only its message is read (a 404 before each
            // first apply is routine).
            let message = serde_json::from_slice::<StatusMessage>(&bytes)
                .ok()
                .and_then(|s| s.message)
                .unwrap_or_else(|| format!("{status}: {}", String::from_utf8_lossy(&bytes)));
            Err(MemberError {
                code: status.as_u16(),
                message,
            })
        }
    };
    match tokio::time::timeout(timeout, call).await {
        Ok(r) => r,
        Err(_) => Err(MemberError::transport(format!(
            "no answer within {}s",
            timeout.as_secs_f64()
        ))),
    }
}

/// What a member's error answer (a Status) is read for.
#[derive(Deserialize)]
struct StatusMessage {
    #[serde(default)]
    message: Option<String>,
}

/// Server-side apply of `desired` (a member copy) as `name` in `ns`.
/// Returns the member's object after the apply, read as `T`: a `Value`
/// for all of it, or e.g. [`Applied`] for its resourceVersion only (the
/// rest of the answer is skipped, not built).
pub async fn apply<T: DeserializeOwned>(
    member: &Member,
    kind: &FederatedKind,
    desired: &Value,
    name: &str,
    ns: Option<&str>,
    timeout: Duration,
) -> Result<T, MemberError> {
    let body = serialize(desired)?;
    apply_body(member, kind, body, name, ns, timeout).await
}

/// A member copy as the JSON an apply sends: serialized once, it can be
/// sent to many members ([`apply_body`], [`apply_body_with_namespace`]).
pub fn serialize(desired: &Value) -> Result<Vec<u8>, MemberError> {
    serde_json::to_vec(desired).map_err(|e| MemberError::transport(e.to_string()))
}

/// [`apply`] of a copy already serialized ([`serialize`]): an object that
/// goes alike to every member is serialized once, not once per member.
pub async fn apply_body<T: DeserializeOwned>(
    member: &Member,
    kind: &FederatedKind,
    body: Vec<u8>,
    name: &str,
    ns: Option<&str>,
    timeout: Duration,
) -> Result<T, MemberError> {
    let params = PatchParams::apply(FIELD_MANAGER).force();
    // kube's request builder gives the URL, query and content type; the
    // body is ours, already serialized.
    let req = Request::new(DynamicObject::url_path(&kind.resource, ns))
        .patch(name, &params, &Patch::Apply(&Value::Null))
        .map_err(|e| MemberError::transport(e.to_string()))?
        .map(|_| body);
    send_as(&member.client, req, timeout).await.map(|(_, v)| v)
}

/// [`apply`], and when the member has no namespace `ns` yet, the
/// namespace first ([`ensure_namespace`], from its federated twin read with
/// `fed`) and the copy again.
pub async fn apply_with_namespace<T: DeserializeOwned>(
    fed: &kube::Client,
    member: &Member,
    kind: &FederatedKind,
    desired: &Value,
    name: &str,
    ns: Option<&str>,
    timeout: Duration,
) -> Result<T, MemberError> {
    let body = serialize(desired)?;
    apply_body_with_namespace(fed, member, kind, &body, name, ns, timeout).await
}

/// [`apply_with_namespace`] of a copy already serialized ([`serialize`]).
pub async fn apply_body_with_namespace<T: DeserializeOwned>(
    fed: &kube::Client,
    member: &Member,
    kind: &FederatedKind,
    body: &[u8],
    name: &str,
    ns: Option<&str>,
    timeout: Duration,
) -> Result<T, MemberError> {
    let result = apply_body(member, kind, body.to_vec(), name, ns, timeout).await;
    match (&result, ns) {
        (Err(e), Some(ns)) if e.not_found() && ensure_namespace(fed, member, ns, timeout).await => {
            apply_body(member, kind, body.to_vec(), name, Some(ns), timeout).await
        }
        _ => result,
    }
}

/// The resourceVersion a create-only apply carries ([`create_only`]): no
/// object ever has it (etcd's revisions and ours count up from 1 and never
/// get near it), so as the apply's precondition it fails (409 Conflict,
/// nothing written) on any object of that name, ours or not, while an
/// apply that creates the object ignores it, as kube-apiserver does.
pub const CREATE_ONLY_RESOURCE_VERSION: &str = "9223372036854775807";

/// `desired` (a member copy) as the body of a create-only apply: a
/// server-side apply that creates the copy when the member has no object
/// of that name and fails with 409 Conflict, writing nothing, when it has
/// one (kube-apiserver: a resourceVersion in an apply is a precondition of
/// an update and ignored by a create). One request instead of a GET and an
/// apply for a copy the member cache does not know (the cache holds our
/// copies only, so an object of the same name that is not ours is found
/// this way: the conflict rule then reads it as before); the fields are
/// owned by our `Apply` entry alone, as with any apply (a POST create
/// would own them as an `Update`, which a later apply does not take
/// away).
pub fn create_only(desired: &Value) -> Result<Vec<u8>, MemberError> {
    let mut copy = desired.clone();
    match copy.get_mut("metadata").and_then(Value::as_object_mut) {
        Some(meta) => {
            meta.insert(
                "resourceVersion".into(),
                Value::String(CREATE_ONLY_RESOURCE_VERSION.into()),
            );
        }
        None => {
            return Err(MemberError::transport(
                "the copy has no metadata".to_string(),
            ));
        }
    }
    serialize(&copy)
}

/// What the built-in sync reads of an applied copy: its resourceVersion
/// (the rest of the member's answer is skipped while it is read).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Applied {
    /// The copy's metadata.
    #[serde(default)]
    pub metadata: AppliedMeta,
}

/// The part of an applied copy's metadata [`Applied`] keeps.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppliedMeta {
    /// The copy's resourceVersion after the apply.
    #[serde(default)]
    pub resource_version: Option<String>,
}

/// Create the namespace `ns` in a member from its federated twin (read
/// with `fed`), before an object in it. False when the federation does not
/// propagate it or the write failed.
pub async fn ensure_namespace(
    fed: &kube::Client,
    member: &Member,
    ns: &str,
    timeout: Duration,
) -> bool {
    let kind = kinds::namespaces();
    let api: Api<DynamicObject> = Api::all_with(fed.clone(), &kind.resource);
    let Ok(obj) = api.get(ns).await else {
        return false;
    };
    let Ok(fed_ns) = kinds::to_value(&obj, &kind) else {
        return false;
    };
    if !member_object::is_propagated(kind.policy(), &fed_ns) {
        return false;
    }
    let Ok(copy) = member_object::member_copy(kind.policy(), &fed_ns, &member.name) else {
        return false;
    };
    match apply::<Value>(member, &kind, &copy, ns, None, timeout).await {
        Ok(_) => {
            tracing::debug!(cluster = %member.name, namespace = ns, "created the namespace first");
            true
        }
        Err(e) => {
            tracing::debug!(cluster = %member.name, namespace = ns, error = %e, "cannot create the namespace");
            false
        }
    }
}

/// The object `name` in `member` as it is there; `None` when absent.
pub async fn get_copy(
    member: &Member,
    kind: &FederatedKind,
    name: &str,
    ns: Option<&str>,
    timeout: Duration,
) -> Result<Option<Value>, MemberError> {
    let get = Request::new(DynamicObject::url_path(&kind.resource, ns))
        .get(name, &Default::default())
        .map_err(|e| MemberError::transport(e.to_string()))?;
    match send(&member.client, get, timeout).await {
        Ok((_, v)) => Ok(Some(v)),
        Err(e) if e.not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether a member object carries our label and our origin uid `uid`:
/// `(managed, from this origin)`.
pub fn is_ours(actual: &Value, uid: &str) -> (bool, bool) {
    let managed = actual
        .pointer("/metadata/labels")
        .and_then(|l| l.get(MANAGED_LABEL))
        .and_then(Value::as_str)
        == Some("true");
    let origin = actual
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(ORIGIN_UID_ANNOTATION))
        .and_then(Value::as_str)
        == Some(uid);
    (managed, origin)
}

/// Delete our copy of the federated object with uid `uid`; Ok(false) when
/// there was none (or it is not ours: the federation never deletes what it
/// does not manage).
pub async fn delete_copy(
    member: &Member,
    kind: &FederatedKind,
    name: &str,
    ns: Option<&str>,
    uid: &str,
    timeout: Duration,
) -> Result<bool, MemberError> {
    let Some(actual) = get_copy(member, kind, name, ns, timeout).await? else {
        return Ok(false);
    };
    let (managed, origin) = is_ours(&actual, uid);
    if !(managed && origin) {
        return Ok(false);
    }
    let mut dp = DeleteParams::background();
    if let Some(member_uid) = actual.pointer("/metadata/uid").and_then(Value::as_str) {
        dp.preconditions = Some(kube::api::Preconditions {
            uid: Some(member_uid.to_string()),
            resource_version: None,
        });
    }
    let del = Request::new(DynamicObject::url_path(&kind.resource, ns))
        .delete(name, &dp)
        .map_err(|e| MemberError::transport(e.to_string()))?;
    match send(&member.client, del, timeout).await {
        Ok(_) => Ok(true),
        Err(e) if e.not_found() => Ok(false),
        Err(e) => Err(e),
    }
}

/// Let our copy of the federated object with uid `uid` go (Orphan):
/// remove our label and annotation. Ok(false) when there was none.
pub async fn orphan_copy(
    member: &Member,
    kind: &FederatedKind,
    name: &str,
    ns: Option<&str>,
    uid: &str,
    timeout: Duration,
) -> Result<bool, MemberError> {
    let Some(actual) = get_copy(member, kind, name, ns, timeout).await? else {
        return Ok(false);
    };
    if !is_ours(&actual, uid).1 {
        return Ok(false);
    }
    let patch = json!({"metadata": {
        "labels": {MANAGED_LABEL: null},
        "annotations": {ORIGIN_UID_ANNOTATION: null},
    }});
    let req = Request::new(DynamicObject::url_path(&kind.resource, ns))
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .map_err(|e| MemberError::transport(e.to_string()))?;
    match send(&member.client, req, timeout).await {
        Ok(_) => Ok(true),
        Err(e) if e.not_found() => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_create_only_body_carries_the_impossible_resource_version() {
        let copy = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "labels": {MANAGED_LABEL: "true"}}, "data": {"k": "v"}});
        let body: Value = serde_json::from_slice(&create_only(&copy).expect("body")).expect("json");
        assert_eq!(
            body.pointer("/metadata/resourceVersion")
                .and_then(Value::as_str),
            Some(CREATE_ONLY_RESOURCE_VERSION)
        );
        // Nothing else changes.
        let mut back = body.clone();
        if let Some(m) = back.pointer_mut("/metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        assert_eq!(back, copy);
        assert!(create_only(&json!({"kind": "ConfigMap"})).is_err());
    }

    #[test]
    fn ownership_needs_the_label_and_our_uid() {
        let v = json!({"metadata": {"labels": {MANAGED_LABEL: "true"},
            "annotations": {ORIGIN_UID_ANNOTATION: "u1"}}});
        assert_eq!(is_ours(&v, "u1"), (true, true));
        assert_eq!(is_ours(&v, "u2"), (true, false));
        assert_eq!(is_ours(&json!({"metadata": {}}), "u1"), (false, false));
    }
}
