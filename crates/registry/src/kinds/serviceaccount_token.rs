//! A ServiceAccount's `token` subresource (`POST
//! …/namespaces/NS/serviceaccounts/NAME/token`, kube's `TokenREST` of
//! `pkg/registry/core/serviceaccount/storage/token.go`): `kubectl create
//! token NAME`. Declared by the ServiceAccount kind
//! ([`Builtin::create_subresource`](super::Builtin::create_subresource)),
//! so the API server's handlers dispatch to it without naming it.
//! Audiences default to `--api-audiences`, `expirationSeconds` to 3600 (at
//! least 600, at most 2^32; shortened to
//! `--service-account-max-token-expiration` with a warning), and a
//! `boundObjectRef` to a Pod, Secret or Node puts that object into the
//! claims (a pod's node too), so the token dies with it.

use serde_json::{Value, json};
use ubernetes_apimachinery::ApiError;
use ubernetes_apimachinery::error::field;

use crate::jwt::{Binding, ObjectRef};
use crate::registry::Registry;
use crate::strategy::{CreateRest, Created, RestContext};

/// The ServiceAccount's `token` REST.
pub static TOKEN: TokenRest = TokenRest;

/// See [`TOKEN`].
pub struct TokenRest;

/// The group and kind of the subresource's body.
const AUTHN: &str = "authentication.k8s.io";
const TOKEN_REQUEST: &str = "TokenRequest";
/// `SetDefaults_TokenRequestSpec`: one hour.
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// `ValidateTokenRequest`: ten minutes.
const MIN_EXPIRATION_SECONDS: i64 = 600;
/// `ValidateTokenRequest`: 2^32 seconds.
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `schema.GroupVersionKind.String()` of a reference.
fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

#[async_trait::async_trait]
impl CreateRest for TokenRest {
    /// kube's `TokenREST.Create`.
    async fn create(&self, ctx: RestContext<'_>, body: Value) -> Result<Created, ApiError> {
        create_token(ctx, body).await
    }
}

/// `POST …/serviceaccounts/NAME/token` (kube's `TokenREST.Create`).
async fn create_token(ctx: RestContext<'_>, mut req: Value) -> Result<Created, ApiError> {
    let name = ctx.name;
    let namespace = ctx
        .namespace
        .ok_or_else(|| ApiError::bad_request("namespace is required"))?;
    let kind = str_at(&req, "/kind");
    if !kind.is_empty() && kind != TOKEN_REQUEST {
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {TOKEN_REQUEST}): couldn't get version/kind; json parse error: expected {AUTHN}/v1, Kind={TOKEN_REQUEST}, got {}, Kind={kind}",
            str_at(&req, "/apiVersion")
        )));
    }
    if !req.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request is not a TokenRequest",
        ));
    }
    let invalid = |name: &str, cause| ApiError::invalid(AUTHN, TOKEN_REQUEST, name, vec![cause]);
    let req_name = str_at(&req, "/metadata/name").to_string();
    if !req_name.is_empty() && req_name != name {
        return Err(invalid(
            name,
            field::invalid(
                "metadata.name",
                &json!(req_name),
                "must match the service account name if specified",
            ),
        ));
    }
    let req_ns = str_at(&req, "/metadata/namespace").to_string();
    if !req_ns.is_empty() && req_ns != namespace {
        return Err(invalid(
            name,
            field::invalid(
                "metadata.namespace",
                &json!(req_ns),
                "must match the service account namespace if specified",
            ),
        ));
    }
    let account = ctx.store.get_value(Some(namespace), name).await?;
    let account_uid = str_at(&account, "/metadata/uid").to_string();
    let req_uid = str_at(&req, "/metadata/uid").to_string();
    if !req_uid.is_empty() && req_uid != account_uid {
        return Err(ApiError::conflict(
            AUTHN,
            TOKEN_REQUEST,
            name,
            &format!(
                "the UID in the token request ({req_uid}) does not match the UID of the service account ({account_uid})"
            ),
        ));
    }
    let jwt = ctx.service_accounts;
    let mut audiences: Vec<String> = req
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if audiences.is_empty() {
        audiences = jwt.api_audiences().to_vec();
    }
    let mut expiration = match req.pointer("/spec/expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
        Some(v) => v.as_i64().ok_or_else(|| {
            ApiError::bad_request(format!(
                "json: cannot unmarshal {v} into Go struct field TokenRequestSpec.spec.expirationSeconds of type int64"
            ))
        })?,
    };
    if expiration == 0 {
        expiration = DEFAULT_EXPIRATION_SECONDS;
    }
    let now = jiff::Timestamp::now();
    // Static validation (`ValidateTokenRequest`).
    let mut causes = Vec::new();
    if expiration < MIN_EXPIRATION_SECONDS {
        causes.push(field::invalid(
            "spec.expirationSeconds",
            &json!(expiration),
            "may not specify a duration less than 10 minutes",
        ));
    }
    if expiration > MAX_EXPIRATION_SECONDS {
        causes.push(field::invalid(
            "spec.expirationSeconds",
            &json!(expiration),
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(AUTHN, TOKEN_REQUEST, "", causes));
    }
    let mut binding = Binding::default();
    if let Some(r) = req.pointer("/spec/boundObjectRef").filter(|r| !r.is_null()) {
        binding = bind(ctx.registry, namespace, name, r).await?;
    }
    let mut warnings = Vec::new();
    let max = jwt.max_expiration_seconds();
    if max > 0 && expiration > max {
        warnings.push(format!(
            "requested expiration of {expiration} seconds shortened to {max} seconds"
        ));
        expiration = max;
    }
    let account_ref = ObjectRef {
        name: name.to_string(),
        uid: account_uid.clone(),
    };
    let now_secs = now.as_second();
    let (token, _exp) = jwt
        .bound_token(
            namespace,
            &account_ref,
            &binding,
            &audiences,
            expiration,
            now_secs,
        )
        .map_err(|e| ApiError::internal(format!("failed to generate token: {e}")))?;
    let expires = jiff::Timestamp::from_second(now_secs.saturating_add(expiration))
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let created =
        jiff::Timestamp::from_second(now_secs).map_err(|e| ApiError::internal(e.to_string()))?;
    if let Some(obj) = req.as_object_mut() {
        obj.insert("apiVersion".into(), json!(format!("{AUTHN}/v1")));
        obj.insert("kind".into(), json!(TOKEN_REQUEST));
        let meta = obj.entry("metadata").or_insert_with(|| json!({}));
        if !meta.is_object() {
            *meta = json!({});
        }
        meta["name"] = json!(name);
        meta["namespace"] = json!(namespace);
        meta["uid"] = json!(account_uid);
        meta["creationTimestamp"] = json!(created.to_string());
        let spec = obj.entry("spec").or_insert_with(|| json!({}));
        if !spec.is_object() {
            *spec = json!({});
        }
        spec["audiences"] = json!(audiences);
        spec["expirationSeconds"] = json!(expiration);
        if spec.get("boundObjectRef").is_some_and(Value::is_null)
            && let Some(s) = spec.as_object_mut()
        {
            s.remove("boundObjectRef");
        }
        obj.insert(
            "status".into(),
            json!({"token": token, "expirationTimestamp": expires.to_string()}),
        );
    }
    Ok(Created {
        object: req,
        warnings,
    })
}

/// Resolve `spec.boundObjectRef` (Pod, Secret or Node of the core group).
async fn bind(
    registry: &Registry,
    namespace: &str,
    account: &str,
    r: &Value,
) -> Result<Binding, ApiError> {
    let api_version = str_at(r, "/apiVersion");
    let kind = str_at(r, "/kind");
    let ref_name = str_at(r, "/name");
    let ref_uid = str_at(r, "/uid");
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let get = |resource: &'static str, ns: Option<&str>| {
        let store = registry.get("", "v1", resource);
        let ns = ns.map(str::to_string);
        let name = ref_name.to_string();
        async move {
            let store = store.ok_or_else(|| {
                ApiError::bad_request(format!("cannot bind token to object of type {resource}"))
            })?;
            store.get_value(ns.as_deref(), &name).await
        }
    };
    let mut binding = Binding::default();
    let uid = match (group, kind) {
        ("", "Pod") => {
            let pod = get("pods", Some(namespace)).await?;
            if str_at(&pod, "/spec/serviceAccountName") != account {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token for serviceaccount \"{account}\" to pod running with different serviceaccount name."
                )));
            }
            let uid = str_at(&pod, "/metadata/uid").to_string();
            binding.pod = Some(ObjectRef {
                name: ref_name.to_string(),
                uid: uid.clone(),
            });
            let node_name = str_at(&pod, "/spec/nodeName");
            if !node_name.is_empty() {
                let node_uid = match registry.get("", "v1", "nodes") {
                    Some(nodes) => match nodes.get_value(None, node_name).await {
                        Ok(n) => str_at(&n, "/metadata/uid").to_string(),
                        // kube: a missing node still gives its name.
                        Err(e) if e.code == 404 => String::new(),
                        Err(e) => return Err(e),
                    },
                    None => String::new(),
                };
                binding.node = Some(ObjectRef {
                    name: node_name.to_string(),
                    uid: node_uid,
                });
            }
            uid
        }
        ("", "Node") => {
            let node = get("nodes", None).await?;
            let uid = str_at(&node, "/metadata/uid").to_string();
            binding.node = Some(ObjectRef {
                name: ref_name.to_string(),
                uid: uid.clone(),
            });
            uid
        }
        ("", "Secret") => {
            let secret = get("secrets", Some(namespace)).await?;
            let uid = str_at(&secret, "/metadata/uid").to_string();
            binding.secret = Some(ObjectRef {
                name: ref_name.to_string(),
                uid: uid.clone(),
            });
            uid
        }
        _ => {
            return Err(ApiError::bad_request(format!(
                "cannot bind token to object of type {}",
                gvk_string(api_version, kind)
            )));
        }
    };
    if !ref_uid.is_empty() && ref_uid != uid {
        return Err(ApiError::conflict(
            group,
            kind,
            ref_name,
            &format!(
                "the UID in the bound object reference ({ref_uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    Ok(binding)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_kind_is_named_as_go_prints_a_group_version_kind() {
        assert_eq!(gvk_string("v1", "ConfigMap"), "/v1, Kind=ConfigMap");
        assert_eq!(
            gvk_string("apps/v1", "Deployment"),
            "apps/v1, Kind=Deployment"
        );
    }
}
