//! The authorization and identity reviews (`pkg/registry/authorization/*`
//! and `pkg/registry/authentication/selfsubjectreview`): create-only kinds
//! whose answer is computed, never stored.
//! - SelfSubjectAccessReview (`kubectl auth can-i`): may I do this?
//! - SubjectAccessReview / LocalSubjectAccessReview: may they?
//! - SelfSubjectRulesReview (`kubectl auth can-i --list`): what may I do here?
//! - SelfSubjectReview (`kubectl auth whoami`): who am I?
//!
//! Each takes the request body as JSON and returns the response body, or
//! the 400/422 kube-apiserver gives for a bad one.

use k8s_openapi::api::rbac::v1::PolicyRule;
use serde_json::{Map, Value, json};
use ubernetes_apimachinery::{ApiError, Cause};

use crate::authorizer::{Authorizer, Decision, RbacSource, aggregate_errors};
use crate::request_info::Attributes;
use crate::rules::go_quote;
use crate::user::UserInfo;

/// The authorization API group.
pub const AUTHORIZATION_GROUP: &str = "authorization.k8s.io";
/// The authentication API group.
pub const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";

/// The metadata of a computed review (an object never stored): empty, as
/// `creationTimestamp` is `omitzero` in current apimachinery.
fn review_metadata() -> Value {
    json!({})
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn present(v: &Value, key: &str) -> Option<Value> {
    match v.get(key) {
        None | Some(Value::Null) => None,
        Some(x) => Some(x.clone()),
    }
}

const RESOURCE_ATTRIBUTE_KEYS: [&str; 9] = [
    "namespace",
    "verb",
    "group",
    "version",
    "resource",
    "subresource",
    "name",
    "fieldSelector",
    "labelSelector",
];

/// Keep the known, non-empty fields of an attributes object (what kube's
/// decode and re-encode leaves of it).
fn clean(attrs: &Value, keys: &[&str]) -> Value {
    let mut out = Map::new();
    for key in keys {
        match attrs.get(*key) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s.is_empty() => {}
            Some(v) => {
                out.insert(key.to_string(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// Go's `%#v` of an internal `NonResourceAttributes`, as kube's validation prints it.
fn non_resource_go_syntax(v: &Value) -> String {
    format!(
        "&authorization.NonResourceAttributes{{Path:{}, Verb:{}}}",
        go_quote(str_at(v, "path")),
        go_quote(str_at(v, "verb"))
    )
}

fn invalid_raw(path: &str, raw: &str, detail: &str) -> Cause {
    Cause::new(
        "FieldValueInvalid",
        format!("Invalid value: {raw}: {detail}"),
        path,
    )
}

/// `ValidateSelfSubjectAccessReviewSpec` (both kinds share these checks).
fn validate_attributes_choice(spec: &Value, causes: &mut Vec<Cause>) {
    let resource = present(spec, "resourceAttributes");
    let non_resource = present(spec, "nonResourceAttributes");
    match (&resource, &non_resource) {
        (Some(_), Some(nr)) => causes.push(invalid_raw(
            "spec.nonResourceAttributes",
            &non_resource_go_syntax(nr),
            "cannot be specified in combination with resourceAttributes",
        )),
        (None, None) => causes.push(invalid_raw(
            "spec.resourceAttributes",
            "\"null\"",
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
        _ => {}
    }
}

fn invalid(kind: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::invalid(AUTHORIZATION_GROUP, kind, "", causes)
}

/// The attributes a review asks about (`ResourceAttributesFrom` /
/// `NonResourceAttributesFrom`); version defaults to `*`.
fn review_attributes(user: &UserInfo, spec: &Value) -> Attributes {
    if let Some(ra) = present(spec, "resourceAttributes") {
        let version = str_at(&ra, "version");
        Attributes {
            user: user.clone(),
            verb: str_at(&ra, "verb").to_string(),
            namespace: str_at(&ra, "namespace").to_string(),
            api_group: str_at(&ra, "group").to_string(),
            api_version: if version.is_empty() { "*" } else { version }.to_string(),
            resource: str_at(&ra, "resource").to_string(),
            subresource: str_at(&ra, "subresource").to_string(),
            name: str_at(&ra, "name").to_string(),
            path: String::new(),
            resource_request: true,
        }
    } else {
        let nr = present(spec, "nonResourceAttributes").unwrap_or(Value::Null);
        Attributes::non_resource(user, str_at(&nr, "verb"), str_at(&nr, "path"))
    }
}

/// `SubjectAccessReviewStatus` of a decision.
fn access_status(decision: &Decision) -> Value {
    let mut status = Map::new();
    status.insert("allowed".into(), Value::Bool(decision.is_allowed()));
    if matches!(decision, Decision::Deny(_)) {
        status.insert("denied".into(), Value::Bool(true));
    }
    if !decision.reason().is_empty() {
        status.insert(
            "reason".into(),
            Value::String(decision.reason().to_string()),
        );
    }
    Value::Object(status)
}

/// The echoed spec: the attributes that were asked about, plus (for
/// SubjectAccessReview) who was asked about.
fn echo_spec(spec: &Value, with_subject: bool) -> Value {
    let mut out = Map::new();
    if let Some(ra) = present(spec, "resourceAttributes") {
        out.insert(
            "resourceAttributes".into(),
            clean(&ra, &RESOURCE_ATTRIBUTE_KEYS),
        );
    }
    if let Some(nr) = present(spec, "nonResourceAttributes") {
        out.insert(
            "nonResourceAttributes".into(),
            clean(&nr, &["path", "verb"]),
        );
    }
    if with_subject {
        for key in ["user", "groups", "extra", "uid"] {
            match spec.get(key) {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) if s.is_empty() => {}
                Some(Value::Array(a)) if a.is_empty() => {}
                Some(Value::Object(o)) if o.is_empty() => {}
                Some(v) => {
                    out.insert(key.into(), v.clone());
                }
            }
        }
    }
    Value::Object(out)
}

fn api_version_of(body: &Value) -> String {
    match body.get("apiVersion").and_then(Value::as_str) {
        Some(v) if !v.is_empty() => v.to_string(),
        _ => format!("{AUTHORIZATION_GROUP}/v1"),
    }
}

/// `POST .../selfsubjectaccessreviews`: may `user` do what `spec` asks?
/// Answers the review with `status.allowed` (and `reason` when RBAC gives one).
pub fn self_subject_access_review<S: RbacSource>(
    authz: &Authorizer<S>,
    user: &UserInfo,
    body: &Value,
) -> Result<Value, ApiError> {
    let spec = body.get("spec").cloned().unwrap_or(Value::Null);
    let mut causes = Vec::new();
    validate_attributes_choice(&spec, &mut causes);
    if !causes.is_empty() {
        return Err(invalid("SelfSubjectAccessReview", causes));
    }
    let decision = authz.authorize(&review_attributes(user, &spec));
    Ok(json!({
        "kind": "SelfSubjectAccessReview",
        "apiVersion": api_version_of(body),
        "metadata": review_metadata(),
        "spec": echo_spec(&spec, false),
        "status": access_status(&decision),
    }))
}

/// The user a SubjectAccessReview asks about.
fn spec_user(spec: &Value) -> UserInfo {
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    UserInfo {
        name: str_at(spec, "user").to_string(),
        uid: str_at(spec, "uid").to_string(),
        groups: strings(spec.get("groups")),
        extra: spec
            .get("extra")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), strings(Some(v))))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn validate_subject(spec: &Value, causes: &mut Vec<Cause>) {
    let user = str_at(spec, "user");
    let has_groups = spec
        .get("groups")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if user.is_empty() && !has_groups {
        causes.push(invalid_raw(
            "spec.user",
            &go_quote(user),
            "at least one of user or group must be specified",
        ));
    }
}

/// Whether the review's metadata is kube's `ObjectMeta{}` (managed fields
/// and `except` aside), compared as Go's `Semantic.DeepEqual` does: a zero
/// value is empty, so a Go client's protobuf body, which writes every
/// non-pointer field (`generation: 0`), passes as its JSON would.
fn metadata_is_empty(body: &Value, except: &[&str]) -> bool {
    match body.get("metadata") {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.iter().all(|(k, v)| {
            except.contains(&k.as_str())
                || k == "managedFields"
                || v.is_null()
                || v.as_str() == Some("")
                || v.as_f64() == Some(0.0)
                || v.as_bool() == Some(false)
                || v.as_object().is_some_and(|o| o.is_empty())
                || v.as_array().is_some_and(|a| a.is_empty())
        }),
        Some(_) => false,
    }
}

/// `POST /apis/authorization.k8s.io/v1/subjectaccessreviews`: may the user
/// in `spec.user`/`spec.groups` do what `spec` asks?
pub fn subject_access_review<S: RbacSource>(
    authz: &Authorizer<S>,
    body: &Value,
) -> Result<Value, ApiError> {
    let spec = body.get("spec").cloned().unwrap_or(Value::Null);
    let mut causes = Vec::new();
    validate_attributes_choice(&spec, &mut causes);
    validate_subject(&spec, &mut causes);
    if !metadata_is_empty(body, &[]) {
        causes.push(invalid_raw("metadata", "{}", "must be empty"));
    }
    if !causes.is_empty() {
        return Err(invalid("SubjectAccessReview", causes));
    }
    let decision = authz.authorize(&review_attributes(&spec_user(&spec), &spec));
    Ok(json!({
        "kind": "SubjectAccessReview",
        "apiVersion": api_version_of(body),
        "metadata": review_metadata(),
        "spec": echo_spec(&spec, true),
        "status": access_status(&decision),
    }))
}

/// `POST /apis/authorization.k8s.io/v1/namespaces/<ns>/localsubjectaccessreviews`:
/// a SubjectAccessReview confined to `namespace`.
pub fn local_subject_access_review<S: RbacSource>(
    authz: &Authorizer<S>,
    namespace: &str,
    body: &Value,
) -> Result<Value, ApiError> {
    let spec = body.get("spec").cloned().unwrap_or(Value::Null);
    let meta_ns = body
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or(namespace);
    let mut causes = Vec::new();
    validate_attributes_choice(&spec, &mut causes);
    validate_subject(&spec, &mut causes);
    if !metadata_is_empty(body, &["namespace"]) {
        causes.push(invalid_raw(
            "metadata",
            "{}",
            "must be empty except for namespace",
        ));
    }
    if let Some(ra) = present(&spec, "resourceAttributes")
        && str_at(&ra, "namespace") != meta_ns
    {
        causes.push(invalid_raw(
            "spec.resourceAttributes.namespace",
            &go_quote(str_at(&ra, "namespace")),
            "must match metadata.namespace",
        ));
    }
    if let Some(nr) = present(&spec, "nonResourceAttributes") {
        causes.push(invalid_raw(
            "spec.nonResourceAttributes",
            &non_resource_go_syntax(&nr),
            "disallowed on this kind of request",
        ));
    }
    if !causes.is_empty() {
        return Err(invalid("LocalSubjectAccessReview", causes));
    }
    if namespace.is_empty() {
        return Err(ApiError::bad_request(format!(
            "namespace is required on this type: {namespace}"
        )));
    }
    if namespace != meta_ns {
        return Err(ApiError::bad_request(format!(
            "spec.resourceAttributes.namespace must match namespace: {namespace}"
        )));
    }
    let decision = authz.authorize(&review_attributes(&spec_user(&spec), &spec));
    Ok(json!({
        "kind": "LocalSubjectAccessReview",
        "apiVersion": api_version_of(body),
        "metadata": {"namespace": namespace},
        "spec": echo_spec(&spec, true),
        "status": access_status(&decision),
    }))
}

fn resource_rule_json(r: &PolicyRule) -> Value {
    let mut m = Map::new();
    m.insert("verbs".into(), json!(r.verbs));
    for (key, list) in [
        ("apiGroups", &r.api_groups),
        ("resources", &r.resources),
        ("resourceNames", &r.resource_names),
    ] {
        if let Some(l) = list
            && !l.is_empty()
        {
            m.insert(key.into(), json!(l));
        }
    }
    Value::Object(m)
}

/// The `status` of a SelfSubjectRulesReview: every rule `user` holds in
/// `namespace` (cluster-wide rules included), split into resource and
/// non-resource rules; `incomplete` is false (RBAC enumerates everything),
/// `evaluationError` lists bindings to missing roles.
pub fn rules_review_status<S: RbacSource>(
    authz: &Authorizer<S>,
    user: &UserInfo,
    namespace: &str,
) -> Value {
    let (rules, errors) = authz.rules_for(user, namespace);
    let resource_rules: Vec<Value> = rules
        .iter()
        .filter(|r| r.resources.as_ref().is_some_and(|l| !l.is_empty()))
        .map(resource_rule_json)
        .collect();
    let non_resource_rules: Vec<Value> = rules
        .iter()
        .filter_map(|r| match &r.non_resource_urls {
            Some(urls) if !urls.is_empty() => {
                Some(json!({"verbs": r.verbs, "nonResourceURLs": urls}))
            }
            _ => None,
        })
        .collect();
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": false,
    });
    if !errors.is_empty() {
        status["evaluationError"] = Value::String(aggregate_errors(&errors));
    }
    status
}

/// `POST .../selfsubjectrulesreviews`: what may `user` do in `spec.namespace`?
/// A missing namespace is kube's 400 `no namespace on request`.
pub fn self_subject_rules_review<S: RbacSource>(
    authz: &Authorizer<S>,
    user: &UserInfo,
    body: &Value,
) -> Result<Value, ApiError> {
    let namespace = body
        .pointer("/spec/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    if namespace.is_empty() {
        return Err(ApiError::bad_request("no namespace on request"));
    }
    Ok(json!({
        "kind": "SelfSubjectRulesReview",
        "apiVersion": api_version_of(body),
        "metadata": review_metadata(),
        "spec": {},
        "status": rules_review_status(authz, user, namespace),
    }))
}

/// `POST /apis/authentication.k8s.io/<version>/selfsubjectreviews`
/// (`kubectl auth whoami`): who the request was made by.
pub fn self_subject_review(user: &UserInfo, api_version: &str) -> Value {
    let mut info = Map::new();
    if !user.name.is_empty() {
        info.insert("username".into(), json!(user.name));
    }
    if !user.uid.is_empty() {
        info.insert("uid".into(), json!(user.uid));
    }
    if !user.groups.is_empty() {
        info.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        info.insert("extra".into(), json!(user.extra));
    }
    let api_version = if api_version.is_empty() {
        format!("{AUTHENTICATION_GROUP}/v1")
    } else {
        api_version.to_string()
    };
    json!({
        "kind": "SelfSubjectReview",
        "apiVersion": api_version,
        "metadata": review_metadata(),
        "status": {"userInfo": Value::Object(info)},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authorizer::StaticRbac;

    fn authz() -> Authorizer<StaticRbac> {
        Authorizer::new(StaticRbac::bootstrap())
    }

    #[test]
    fn ssar_answers_allowed_with_the_rbac_reason() {
        let bob = UserInfo::new("bob", &["system:authenticated"]);
        let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"nonResourceAttributes": {"path": "/version", "verb": "get"}}});
        let out = self_subject_access_review(&authz(), &bob, &body).unwrap_or_default();
        assert_eq!(
            out["status"],
            json!({"allowed": true, "reason": "RBAC: allowed by ClusterRoleBinding \"system:discovery\" of ClusterRole \"system:discovery\" to Group \"system:authenticated\""})
        );
        assert_eq!(
            out["spec"],
            json!({"nonResourceAttributes": {"path": "/version", "verb": "get"}})
        );
        assert_eq!(out["kind"], "SelfSubjectAccessReview");
    }

    #[test]
    fn ssar_without_attributes_is_invalid() {
        let bob = UserInfo::new("bob", &[]);
        let err = self_subject_access_review(&authz(), &bob, &json!({"spec": {}})).err();
        assert_eq!(
            err.map(|e| (e.code, e.message)),
            Some((422, "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified".to_string()))
        );
    }

    #[test]
    fn sar_needs_a_user_or_group() {
        let body = json!({"spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}});
        let err = subject_access_review(&authz(), &body).err();
        assert_eq!(
            err.map(|e| e.message),
            Some("SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.user: Invalid value: \"\": at least one of user or group must be specified".to_string())
        );
    }

    #[test]
    fn sar_decides_for_the_named_user() {
        let body = json!({"spec": {"user": "root", "groups": ["system:masters"],
            "resourceAttributes": {"verb": "delete", "resource": "nodes", "name": "n1"}}});
        let out = subject_access_review(&authz(), &body).unwrap_or_default();
        assert_eq!(out["status"], json!({"allowed": true}));
        let body = json!({"spec": {"user": "eve", "resourceAttributes": {"verb": "delete", "resource": "nodes"}}});
        let out = subject_access_review(&authz(), &body).unwrap_or_default();
        assert_eq!(out["status"], json!({"allowed": false}));
        assert_eq!(out["spec"]["user"], "eve");
    }

    #[test]
    fn sar_metadata_of_go_zero_values_is_empty_and_a_name_is_not() {
        // A Go client's protobuf body decodes with `generation: 0`.
        let spec =
            json!({"user": "eve", "resourceAttributes": {"verb": "get", "resource": "pods"}});
        let body = json!({"metadata": {"generation": 0}, "spec": spec});
        assert!(subject_access_review(&authz(), &body).is_ok());
        let body = json!({"metadata": {"namespace": "a", "generation": 0}, "spec": {"user": "eve",
            "resourceAttributes": {"namespace": "a", "verb": "get", "resource": "pods"}}});
        assert!(local_subject_access_review(&authz(), "a", &body).is_ok());
        let body = json!({"metadata": {"name": "x"}, "spec": spec});
        let err = subject_access_review(&authz(), &body).err();
        assert_eq!(
            err.map(|e| e.message),
            Some("SubjectAccessReview.authorization.k8s.io \"\" is invalid: metadata: Invalid value: {}: must be empty".to_string())
        );
    }

    #[test]
    fn lsar_must_stay_in_its_namespace() {
        let body = json!({"metadata": {"namespace": "a"}, "spec": {"user": "eve",
            "resourceAttributes": {"namespace": "b", "verb": "get", "resource": "pods"}}});
        let err = local_subject_access_review(&authz(), "a", &body).err();
        assert_eq!(
            err.map(|e| e.message),
            Some("LocalSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes.namespace: Invalid value: \"b\": must match metadata.namespace".to_string())
        );
    }

    #[test]
    fn ssrr_needs_a_namespace() {
        let bob = UserInfo::new("bob", &[]);
        let err = self_subject_rules_review(&authz(), &bob, &json!({"spec": {}})).err();
        assert_eq!(
            err.map(|e| (e.code, e.message)),
            Some((400, "no namespace on request".to_string()))
        );
    }

    #[test]
    fn whoami_reports_the_user() {
        let mut bob = UserInfo::new("bob", &["dev", "system:authenticated"]);
        bob.extra.insert("scopes".into(), vec!["a".into()]);
        let out = self_subject_review(&bob, "authentication.k8s.io/v1");
        assert_eq!(
            out["status"]["userInfo"],
            json!({"username": "bob", "groups": ["dev", "system:authenticated"], "extra": {"scopes": ["a"]}})
        );
        assert_eq!(out["kind"], "SelfSubjectReview");
    }
}
