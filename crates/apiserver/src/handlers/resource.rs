//! The resource handler: URL → (store, namespace, name, subresource), verb
//! → registry call, result → negotiated representation.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest as _, Path, Request, State as AxState};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::IntoResponse;
use serde_json::{Value, json};
use ubernetes_apimachinery::{ApiError, ResourceInfo};
use ubernetes_registry::Store;
use ubernetes_registry::store::{
    DeleteOptions, DeleteResult, ListResult, WriteOptions, WriteResult,
};
use ubernetes_registry::strategy::{CreateRest, RestContext, Subresource, WriteAuthority};
use ubernetes_storage::cache::FilterFn;

use super::negotiate::{self, Output, Query};
use super::{HandlerResult, State, bytes_response};
use crate::authn::UserInfo;

/// What a URL names.
pub struct Target {
    pub store: Arc<Store>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

/// Resolve path segments after `/api/v1/` or `/apis/<g>/<v>/`. Returns the
/// target and whether the legacy `/watch/` prefix was used.
pub fn resolve(
    state: &crate::state::AppState,
    group: &str,
    version: &str,
    rest: &str,
) -> Result<(Target, bool), ApiError> {
    let mut segs: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let mut legacy_watch = false;
    if segs.first() == Some(&"watch") {
        legacy_watch = true;
        segs.remove(0);
    }
    let (namespace, rest): (Option<&str>, &[&str]) = if segs.len() >= 3
        && segs[0] == "namespaces"
        && !is_namespace_subresource(state, segs[2])
    {
        (Some(segs[1]), &segs[2..])
    } else {
        (None, &segs[..])
    };
    let (resource, name, sub) = match rest {
        [r] => (*r, None, None),
        [r, n] => (*r, Some(*n), None),
        [r, n, s] => (*r, Some(*n), Some(*s)),
        _ => return Err(ApiError::no_route()),
    };
    let store = state
        .registry
        .get(group, version, resource)
        .ok_or_else(ApiError::no_route)?;
    let info = store.info();
    if namespace.is_some() && !info.namespaced {
        return Err(ApiError::no_route());
    }
    if info.namespaced && namespace.is_none() && name.is_some() {
        return Err(ApiError::no_route());
    }
    if let Some(s) = sub
        && !info.has_subresource(s)
    {
        return Err(ApiError::no_route());
    }
    Ok((
        Target {
            store,
            namespace: namespace.map(str::to_string),
            name: name.map(str::to_string),
            subresource: sub.map(str::to_string),
        },
        legacy_watch,
    ))
}

/// `/api/v1/{*rest}`.
pub async fn core(
    AxState(state): AxState<State>,
    Path(rest): Path<String>,
    request: Request,
) -> HandlerResult {
    let req = match Req::take(request).await {
        Ok(req) => req,
        Err(rejection) => return Ok(rejection),
    };
    let protobuf_errors = negotiate::protobuf_errors(&req.headers);
    serve(state, "", "v1", &rest, req, protobuf_errors).await
}

/// `/apis/{group}/{version}/{*rest}`.
pub async fn grouped(
    AxState(state): AxState<State>,
    Path((group, version, rest)): Path<(String, String, String)>,
    request: Request,
) -> HandlerResult {
    let req = match Req::take(request).await {
        Ok(req) => req,
        Err(rejection) => return Ok(rejection),
    };
    let protobuf_errors = negotiate::protobuf_errors(&req.headers);
    serve(state, &group, &version, &rest, req, protobuf_errors).await
}

/// One request to a resource: resolved, dispatched, its error negotiated,
/// and the resource's deprecation warning (if it declares one) put first
/// on the answer, error or not, as kube-apiserver does.
async fn serve(
    state: State,
    group: &str,
    version: &str,
    rest: &str,
    req: Req,
    protobuf_errors: bool,
) -> HandlerResult {
    let (target, legacy_watch) = match resolve(&state, group, version, rest) {
        Ok(t) => t,
        Err(e) => return negotiate::negotiate_error(protobuf_errors, Err(e.into())),
    };
    let deprecation = target.store.strategy().deprecation_warning();
    let result = negotiate::negotiate_error(
        protobuf_errors,
        dispatch(state, target, legacy_watch, req).await,
    );
    match deprecation {
        None => result,
        Some(warning) => {
            let mut resp = result.unwrap_or_else(IntoResponse::into_response);
            crate::response::warn_first(resp.headers_mut(), warning);
            Ok(resp)
        }
    }
}

/// The parts of one request the handlers use.
struct Req {
    method: Method,
    query: Option<String>,
    /// The authenticated (or impersonated) user; absent only in unit tests
    /// that call the router without the authentication layer.
    user: Option<UserInfo>,
    headers: HeaderMap,
    body: Bytes,
}

impl Req {
    /// The parts of `request`, moved out of it (axum's `HeaderMap` and
    /// `Extension` extractors would copy the headers and the user), and its
    /// body read within the body limit (axum's answer when it is not).
    async fn take(mut request: Request) -> Result<Self, axum::response::Response> {
        let headers = std::mem::take(request.headers_mut());
        let user = request.extensions_mut().remove::<UserInfo>();
        let method = request.method().clone();
        let query = request.uri().query().map(str::to_string);
        let body = Bytes::from_request(request, &())
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(Self {
            method,
            query,
            user,
            headers,
            body,
        })
    }
}

/// Whether `/namespaces/{name}/{seg}` names a subresource of a namespace
/// (`status`, `finalize`, as the namespace kind declares them) rather than
/// a resource in that namespace.
fn is_namespace_subresource(state: &crate::state::AppState, seg: &str) -> bool {
    state
        .registry
        .namespaces()
        .is_some_and(|s| s.info().has_subresource(seg))
}

/// A check every write of this resource must pass on its final object
/// (`new`, and the stored `old` for updates): RBAC's escalation prevention
/// for roles and bindings (kube-apiserver's RBAC REST storage), the signer
/// permissions the kind's subresource writes need (CertificateSigningRequests).
///
/// Each member copy a federated object's overrides produce is checked too,
/// and server-side apply, by the admission plugin of
/// `state/copy_checks.rs` (the one place every verb's final object meets).
type WriteGuard = Arc<dyn Fn(&Value, Option<&Value>) -> Result<(), ApiError> + Send + Sync>;

fn write_guard(
    state: &State,
    strategy: &dyn ubernetes_registry::Strategy,
    ns: Option<&str>,
    subresource: Option<&str>,
    user: Option<&UserInfo>,
) -> Option<WriteGuard> {
    let info = strategy.info();
    let authority = strategy.write_authority();
    let checked = match authority {
        WriteAuthority::None => false,
        WriteAuthority::SignerPermission(checks) => checks.checks(subresource),
        WriteAuthority::RoleEscalation | WriteAuthority::BindingEscalation => true,
    };
    if !checked {
        return None;
    }
    let user = crate::authz::to_rbac_user(user?);
    let authz = state.authz.clone();
    let resource = info.resource.clone();
    let group = info.group.clone();
    let ns = ns.unwrap_or("").to_string();
    let subresource = subresource.map(str::to_string);
    Some(Arc::new(
        move |new: &Value, old: Option<&Value>| match authority {
            WriteAuthority::RoleEscalation | WriteAuthority::BindingEscalation => {
                crate::state::rbac_write_check(&authz, authority, &user, &resource, &ns, new, old)
            }
            WriteAuthority::SignerPermission(checks) => {
                let authorizer = authz.authorizer();
                let Some(verb) = checks.verb(subresource.as_deref(), new, old) else {
                    return Ok(());
                };
                let signer = checks.signer(new);
                if ubernetes_rbac::authorized_for_signer(&authorizer, &user, verb, signer) {
                    return Ok(());
                }
                let name = new
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                Err(ApiError::forbidden(
                    &group,
                    &resource,
                    name,
                    &format!("user not permitted to {verb} requests with signerName \"{signer}\""),
                ))
            }
            WriteAuthority::None => Ok(()),
        },
    ))
}

async fn dispatch(state: State, target: Target, legacy_watch: bool, req: Req) -> HandlerResult {
    let Req {
        method,
        query: raw_query,
        user,
        headers,
        body,
    } = req;
    let query = Query::parse(raw_query.as_deref());
    let info = target.store.info();
    let ns = target.namespace.as_deref();
    // What the kind declares its subresource to be: the dispatch below
    // follows that, not the subresource's name.
    let declared = target
        .subresource
        .as_deref()
        .map(|s| target.store.strategy().subresource(s));
    let is_scale = matches!(declared, Some(Some(Subresource::Scale)));
    match (
        method.clone(),
        target.name.as_deref(),
        target.subresource.as_deref(),
    ) {
        (Method::GET, None, None) => {
            if legacy_watch || query.flag("watch") {
                super::watch::watch(&state, &target, &query, &headers).await
            } else {
                list(&state, &target, &query, &headers).await
            }
        }
        (Method::GET, Some(name), _)
            if matches!(
                declared,
                None | Some(Some(Subresource::Object(_) | Subresource::Finalize(_)))
            ) =>
        {
            let output = negotiate::output(&headers)?;
            let bytes = target.store.get(ns, name).await?;
            render_object_bytes(info, bytes, output, StatusCode::OK, &[])
        }
        (Method::GET, Some(name), Some(_)) if is_scale => {
            let obj = target.store.get_value(ns, name).await?;
            let scale = to_scale(&target.store, &obj)?;
            render_value(
                info,
                &scale,
                negotiate::output(&headers)?,
                StatusCode::OK,
                &[],
            )
        }
        (Method::POST, None, None) => {
            if info.namespaced && ns.is_none() {
                return Err(ApiError::no_route().into());
            }
            let obj = negotiate::decode_body(&headers, &body, &info.kind)?;
            let mut opts = write_options(&query, &headers)?;
            opts.user = user.clone();
            opts.duplicate_fields = duplicate_fields(info, &headers, &body, &opts);
            if let Some(guard) = write_guard(
                &state,
                target.store.strategy().as_ref(),
                ns,
                None,
                user.as_ref(),
            ) {
                guard(&obj, None)?;
            }
            let namespaces = state.registry.namespaces();
            let res = target
                .store
                .create(namespaces.as_deref(), ns, obj, &opts)
                .await?;
            let status = if opts.dry_run {
                StatusCode::OK
            } else {
                StatusCode::CREATED
            };
            render_value(
                info,
                &res.object,
                negotiate::output(&headers)?,
                status,
                &res.warnings,
            )
        }
        (Method::PUT, Some(name), sub) => {
            let kind = if is_scale {
                "Scale"
            } else {
                info.kind.as_str()
            };
            let obj = negotiate::decode_body(&headers, &body, kind)?;
            let mut opts = write_options(&query, &headers)?;
            opts.user = user.clone();
            if !is_scale {
                opts.duplicate_fields = duplicate_fields(info, &headers, &body, &opts);
            }
            let res = match declared.flatten() {
                Some(Subresource::Scale) => {
                    let sub = sub.unwrap_or_default();
                    update_scale(&target.store, ns, name, sub, obj, &opts).await?
                }
                Some(Subresource::Finalize(next)) => {
                    let sub = sub.unwrap_or_default();
                    finalize(&target.store, name, sub, obj, next, &opts).await?
                }
                _ => match write_guard(
                    &state,
                    target.store.strategy().as_ref(),
                    ns,
                    sub,
                    user.as_ref(),
                ) {
                    // Checked against the stored object inside the update loop.
                    Some(guard) => {
                        target
                            .store
                            .patch(ns, name, sub, &opts, move |cur| {
                                guard(&obj, Some(cur))?;
                                Ok(obj.clone())
                            })
                            .await?
                    }
                    None => target.store.update(ns, name, obj, sub, &opts).await?,
                },
            };
            let out = if is_scale {
                to_scale(&target.store, &res.object)?
            } else {
                res.object
            };
            render_value(
                info,
                &out,
                negotiate::output(&headers)?,
                StatusCode::OK,
                &res.warnings,
            )
        }
        (Method::PATCH, Some(name), sub) => {
            let guard = write_guard(
                &state,
                target.store.strategy().as_ref(),
                ns,
                sub,
                user.as_ref(),
            );
            let (obj, warnings, created) = patch(
                &state,
                &target,
                name,
                sub,
                &query,
                &headers,
                &body,
                guard,
                user.as_ref(),
            )
            .await?;
            let status = if created && !query.dry_run()? {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            render_value(info, &obj, negotiate::output(&headers)?, status, &warnings)
        }
        (Method::DELETE, Some(name), None) => {
            let (mut opts, orphan_false) = delete_options(&query, &headers, &body)?;
            opts.user = user.clone();
            let (result, warnings) = target.store.delete_with_warnings(ns, name, &opts).await?;
            let (out, status) = delete_response(&target.store, name, result, orphan_false);
            render_value(info, &out, negotiate::output(&headers)?, status, &warnings)
        }
        (Method::DELETE, None, None) => {
            delete_collection(&state, &target, &query, &headers, &body, user.as_ref()).await
        }
        (Method::POST, Some(name), Some(sub)) => match declared {
            Some(Some(Subresource::Create(rest))) => {
                let mut opts = write_options(&query, &headers)?;
                opts.user = user.clone();
                let call = SubresourceCall {
                    name,
                    sub,
                    rest,
                    opts: &opts,
                };
                create_subresource(&state, &target, call, &headers, &body).await
            }
            _ => Err(ApiError::method_not_supported(&info.group, &info.resource, "create").into()),
        },
        (m, _, _) => {
            let verb = match m {
                Method::POST => "create",
                Method::PUT => "update",
                Method::PATCH => "patch",
                Method::DELETE => "delete",
                _ => "this method",
            };
            Err(ApiError::method_not_supported(&info.group, &info.resource, verb).into())
        }
    }
}

/// Which object's subresource a [`create_subresource`] runs, and how.
struct SubresourceCall<'a> {
    name: &'a str,
    sub: &'a str,
    rest: &'static dyn CreateRest,
    opts: &'a WriteOptions,
}

/// POST of a subresource served by the kind's own REST
/// ([`Subresource::Create`], e.g. a ServiceAccount's `token`): the body
/// decoded as the kind the subresource's discovery facts name, the REST's
/// answer sent as 201 Created with its warnings.
async fn create_subresource(
    state: &State,
    target: &Target,
    call: SubresourceCall<'_>,
    headers: &HeaderMap,
    body: &Bytes,
) -> HandlerResult {
    let SubresourceCall {
        name,
        sub,
        rest,
        opts,
    } = call;
    let info = target.store.info().clone();
    let body_kind = info
        .subresources
        .iter()
        .find(|s| s.name == sub)
        .map_or_else(|| info.kind.clone(), |s| s.kind.clone());
    let req = negotiate::decode_body(headers, body, &body_kind)?;
    let ctx = RestContext {
        registry: &state.registry,
        store: &target.store,
        service_accounts: &state.service_accounts,
        namespace: target.namespace.as_deref(),
        name,
        options: opts,
    };
    let created = rest.create(ctx, req).await?;
    render_value(
        &info,
        &created.object,
        negotiate::output(headers)?,
        StatusCode::CREATED,
        &created.warnings,
    )
}

/// What a DELETE answers, as kube-apiserver's generic store and delete
/// handler do: an object that is gone is answered with itself when the kind
/// declares [`Strategy::returns_deleted_object`], else with a Success
/// `Status` naming it; an object only marked for deletion (finalizers
/// pending) with its current state. The code is 200, except 202 when the
/// object was not deleted yet and the client asked for cascading deletion
/// the legacy way (`orphanDependents: false`), kube's one exception.
///
/// [`Strategy::returns_deleted_object`]: ubernetes_registry::Strategy::returns_deleted_object
fn delete_response(
    store: &Store,
    name: &str,
    result: DeleteResult,
    orphan_dependents_false: bool,
) -> (Value, StatusCode) {
    match result {
        DeleteResult::Deleted(obj) if store.strategy().returns_deleted_object() => {
            (obj, StatusCode::OK)
        }
        DeleteResult::Deleted(obj) => (deleted_status(store.info(), name, &obj), StatusCode::OK),
        DeleteResult::Pending(obj) if orphan_dependents_false => (obj, StatusCode::ACCEPTED),
        DeleteResult::Pending(obj) => (obj, StatusCode::OK),
    }
}

fn deleted_status(info: &ResourceInfo, name: &str, obj: &Value) -> Value {
    let mut details = json!({"name": name, "kind": info.resource});
    if !info.group.is_empty() {
        details["group"] = json!(info.group);
    }
    if let Some(uid) = obj.pointer("/metadata/uid") {
        details["uid"] = uid.clone();
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}

/// Write options from query and headers; `fieldManager` defaults to the
/// user agent's program name, as kube-apiserver.
pub fn write_options(query: &Query, headers: &HeaderMap) -> Result<WriteOptions, ApiError> {
    let field_manager = match query.get("fieldManager") {
        Some(m) if !m.is_empty() => {
            if m.len() > 128 {
                return Err(ApiError::bad_request(
                    "fieldManager: Too long: may not be more than 128 bytes",
                ));
            }
            Some(m.to_string())
        }
        _ => headers
            .get(http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(|ua| ua.split('/').next().unwrap_or(ua).to_string())
            .filter(|s| !s.is_empty()),
    };
    Ok(WriteOptions {
        dry_run: query.dry_run()?,
        field_manager,
        field_validation: query.field_validation()?,
        fields_tracked: false,
        force: query.flag("force"),
        duplicate_fields: Vec::new(),
        user: None,
    })
}

/// The duplicate fields of a JSON request body (`duplicate field
/// "spec.replicas"`, in document order), as kube's strict JSON decoder
/// reports them; none for other bodies, or when fields are not checked.
fn duplicate_fields(
    info: &ResourceInfo,
    headers: &HeaderMap,
    body: &[u8],
    opts: &WriteOptions,
) -> Vec<String> {
    if opts.field_validation == ubernetes_registry::store::FieldValidation::Ignore {
        return Vec::new();
    }
    let json = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|ct| {
            ct.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        });
    if !json {
        return Vec::new();
    }
    ubernetes_openapi::strict_field_errors(&info.definition, body)
        .map(|errors| {
            errors
                .iter()
                .filter(|e| matches!(e, ubernetes_openapi::StrictFieldError::Duplicate(_)))
                .map(ToString::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// DeleteOptions from the body (kubectl sends one in JSON, client-go
/// configured for protobuf in protobuf) and the query, and
/// whether the legacy `orphanDependents: false` was given. kube's generic
/// store reads `orphanDependents` before anything else: `true` orphans,
/// `false` neither orphans nor deletes in the foreground (Background); it may
/// not be combined with `propagationPolicy`.
fn delete_options(
    query: &Query,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(DeleteOptions, bool), ApiError> {
    let mut opts = DeleteOptions {
        dry_run: query.dry_run()?,
        propagation_policy: query.get("propagationPolicy").map(str::to_string),
        ..Default::default()
    };
    let mut orphan_dependents = match query.get("orphanDependents") {
        Some("true") => Some(true),
        Some("false") => Some(false),
        _ => None,
    };
    if let Some(v) = negotiate::decode_delete_options(headers, body)? {
        if let Some(p) = v.get("propagationPolicy").and_then(Value::as_str) {
            opts.propagation_policy = Some(p.to_string());
        }
        if let Some(o) = v.get("orphanDependents").and_then(Value::as_bool) {
            orphan_dependents = Some(o);
        }
        if let Some(dr) = v.get("dryRun").and_then(Value::as_array)
            && dr.iter().any(|d| d.as_str() == Some("All"))
        {
            opts.dry_run = true;
        }
        if let Some(pre) = v.get("preconditions") {
            opts.precondition_uid = pre.get("uid").and_then(Value::as_str).map(str::to_string);
            opts.precondition_resource_version = pre
                .get("resourceVersion")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
    }
    if let Some(orphan) = orphan_dependents {
        if let Some(p) = &opts.propagation_policy {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "DeleteOptions",
                "",
                vec![ubernetes_apimachinery::error::field::invalid(
                    "propagationPolicy",
                    &json!(p),
                    "orphanDependents and deletionPropagation cannot be both set",
                )],
            ));
        }
        opts.propagation_policy = Some(if orphan { "Orphan" } else { "Background" }.into());
    }
    if let Some(p) = &opts.propagation_policy
        && !matches!(p.as_str(), "Orphan" | "Background" | "Foreground")
    {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "DeleteOptions",
            "",
            vec![ubernetes_apimachinery::error::field::not_supported(
                "propagationPolicy",
                &json!(p),
                &["Foreground", "Background", "Orphan", "nil"],
            )],
        ));
    }
    Ok((opts, orphan_dependents == Some(false)))
}

/// Compile `labelSelector` and `fieldSelector` into one filter; unknown field
/// selector keys → 400 as kube-apiserver.
pub fn selector_filter(store: &Store, query: &Query) -> Result<Option<FilterFn>, ApiError> {
    use ubernetes_apimachinery::fields::FieldSelector;
    use ubernetes_apimachinery::labels::Selector;
    let labels = match query.get("labelSelector") {
        Some(s) if !s.trim().is_empty() => Some(Selector::parse(s)?),
        _ => None,
    };
    let fields = match query.get("fieldSelector") {
        Some(s) if !s.trim().is_empty() => {
            let fs = FieldSelector::parse(s)?;
            let allowed = store.strategy().selectable_fields();
            for req in fs.requirements() {
                let key = req.field.as_str();
                if key != "metadata.name" && key != "metadata.namespace" && !allowed.contains(&key)
                {
                    // Kinds with their own conversion name the label; the
                    // rest get the default conversion's wording.
                    return Err(if allowed.is_empty() {
                        ubernetes_apimachinery::fields::unknown_field_selector(key)
                    } else {
                        ubernetes_apimachinery::fields::unsupported_field_label(key)
                    });
                }
            }
            Some(fs)
        }
        _ => None,
    };
    if labels.is_none() && fields.is_none() {
        return Ok(None);
    }
    Ok(Some(Arc::new(move |obj| {
        labels
            .as_ref()
            .is_none_or(|l| l.matches_with(|k| obj.attrs.labels.get(k)))
            && fields
                .as_ref()
                .is_none_or(|f| f.matches_with(|k| obj.attrs.fields.get(k)))
    })))
}

async fn list(state: &State, target: &Target, query: &Query, headers: &HeaderMap) -> HandlerResult {
    let _ = state;
    let output = negotiate::output(headers)?;
    let filter = selector_filter(&target.store, query)?;
    let result = target
        .store
        .list(
            target.namespace.as_deref(),
            filter.as_ref(),
            query.limit()?,
            query.get("continue"),
            query.read_at()?,
        )
        .await?;
    render_list(target.store.info(), result, output)
}

fn list_metadata(result: &ListResult) -> Value {
    let mut meta = json!({"resourceVersion": result.resource_version.to_string()});
    if let Some(c) = &result.continue_token {
        meta["continue"] = json!(c);
    }
    if let Some(n) = result.remaining_item_count {
        meta["remainingItemCount"] = json!(n);
    }
    meta
}

/// Render a list: JSON is assembled from the cached item bytes without
/// re-encoding them.
pub fn render_list(info: &ResourceInfo, result: ListResult, output: Output) -> HandlerResult {
    let meta = list_metadata(&result);
    let output = negotiate::for_kind(output, &info.api_version(), &info.list_kind())?;
    match output {
        Output::Protobuf | Output::ProtobufOnly => {
            let items = parse_items(&result.items)?;
            let list = json!({"apiVersion": info.api_version(), "kind": info.list_kind(), "metadata": meta, "items": items});
            let body = crate::protobuf::encode_list(&list)?;
            Ok(bytes_response(
                StatusCode::OK,
                crate::protobuf::PROTOBUF_CONTENT_TYPE,
                body,
                &[],
            ))
        }
        Output::Json => {
            let head = format!(
                "{{\"kind\":\"{}\",\"apiVersion\":\"{}\",\"metadata\":{},\"items\":[",
                info.list_kind(),
                info.api_version(),
                meta
            );
            let size = head.len() + result.items.iter().map(|b| b.len() + 1).sum::<usize>() + 3;
            let mut buf = Vec::with_capacity(size);
            buf.extend_from_slice(head.as_bytes());
            for (i, item) in result.items.iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                buf.extend_from_slice(item);
            }
            // The newline Go's json.Encoder ends a value with.
            buf.extend_from_slice(b"]}\n");
            Ok(bytes_response(StatusCode::OK, "application/json", buf, &[]))
        }
        Output::Yaml => {
            let items = parse_items(&result.items)?;
            let list = json!({"apiVersion": info.api_version(), "kind": info.list_kind(), "metadata": meta, "items": items});
            let body = negotiate::encode(&list, Output::Yaml)?;
            Ok(bytes_response(
                StatusCode::OK,
                "application/yaml",
                body,
                &[],
            ))
        }
        Output::Table => {
            let items = parse_items(&result.items)?;
            let table = crate::table::table(info, &items, Some(meta), true);
            Ok(bytes_response(
                StatusCode::OK,
                "application/json",
                crate::response::json_bytes(&table)?,
                &[],
            ))
        }
        Output::PartialMetadata => {
            let items = parse_items(&result.items)?;
            let items: Vec<Value> = items.iter().map(partial_metadata).collect();
            let list = json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "items": items});
            Ok(bytes_response(
                StatusCode::OK,
                "application/json",
                crate::response::json_bytes(&list)?,
                &[],
            ))
        }
    }
}

fn parse_items(items: &[Bytes]) -> Result<Vec<Value>, ApiError> {
    items
        .iter()
        .map(|b| serde_json::from_slice(b).map_err(|e| ApiError::internal(e.to_string())))
        .collect()
}

/// `PartialObjectMetadata` of an object.
pub fn partial_metadata(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// Render one object already encoded as JSON.
pub fn render_object_bytes(
    info: &ResourceInfo,
    bytes: Bytes,
    output: Output,
    status: StatusCode,
    warnings: &[String],
) -> HandlerResult {
    if output == Output::Json {
        return Ok(bytes_response(
            status,
            "application/json",
            crate::response::json_body_with_newline(bytes),
            warnings,
        ));
    }
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| ApiError::internal(e.to_string()))?;
    render_value(info, &v, output, status, warnings)
}

/// Render one object.
pub fn render_value(
    info: &ResourceInfo,
    obj: &Value,
    output: Output,
    status: StatusCode,
    warnings: &[String],
) -> HandlerResult {
    let is_status = obj.get("kind").and_then(Value::as_str) == Some("Status");
    // The object itself is encoded as it is (borrowed: a create or patch
    // answer used to deep-copy the whole object here).
    let rendered = match output {
        Output::Table if !is_status => std::borrow::Cow::Owned(crate::table::table(
            info,
            std::slice::from_ref(obj),
            None,
            true,
        )),
        Output::PartialMetadata if !is_status => std::borrow::Cow::Owned(partial_metadata(obj)),
        _ => std::borrow::Cow::Borrowed(obj),
    };
    let out = match output {
        Output::Yaml => Output::Yaml,
        Output::Protobuf | Output::ProtobufOnly => negotiate::for_kind(
            output,
            rendered
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            rendered
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        )?,
        _ => Output::Json,
    };
    let body = negotiate::encode(&rendered, out)?;
    Ok(bytes_response(
        status,
        negotiate::content_type(out),
        body,
        warnings,
    ))
}

/// The `autoscaling/v1` Scale of an object.
fn to_scale(store: &Store, obj: &Value) -> Result<Value, ApiError> {
    let paths = store.strategy().scale().ok_or_else(ApiError::no_route)?;
    let spec_replicas = obj
        .pointer(&paths.spec_replicas)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let status_replicas = obj
        .pointer(&paths.status_replicas)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let selector = paths
        .selector
        .as_deref()
        .and_then(|p| obj.pointer(p))
        .map(|sel| {
            if sel.get("matchLabels").is_some() || sel.get("matchExpressions").is_some() {
                ubernetes_apimachinery::labels::Selector::from_label_selector(sel)
                    .map(|s| s.to_string())
                    .unwrap_or_default()
            } else if let Some(m) = sel.as_object() {
                // A plain map selector (ReplicationController).
                let mut parts: Vec<String> = m
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                    .collect();
                parts.sort();
                parts.join(",")
            } else {
                String::new()
            }
        })
        .unwrap_or_default();
    let meta = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let mut scale_meta = json!({});
    for k in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(k) {
            scale_meta[k] = v.clone();
        }
    }
    let mut status = json!({"replicas": status_replicas});
    if !selector.is_empty() {
        status["selector"] = json!(selector);
    }
    Ok(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": spec_replicas},
        "status": status,
    }))
}

fn replicas_from_scale(scale: &Value) -> Result<i64, ApiError> {
    let r = scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if r < 0 {
        let name = scale
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        return Err(ApiError::invalid(
            "autoscaling",
            "Scale",
            name,
            vec![ubernetes_apimachinery::error::field::invalid(
                "spec.replicas",
                &json!(r),
                "must be greater than or equal to 0",
            )],
        ));
    }
    Ok(r)
}

fn set_replicas(store: &Store, obj: &mut Value, replicas: i64) -> Result<(), ApiError> {
    let paths = store.strategy().scale().ok_or_else(ApiError::no_route)?;
    let mut parts: Vec<&str> = paths
        .spec_replicas
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let last = parts.pop().unwrap_or("replicas");
    let mut cur = &mut *obj;
    for p in parts {
        if !cur.get(p).is_some_and(Value::is_object) {
            cur[p] = json!({});
        }
        cur = &mut cur[p];
    }
    cur[last] = json!(replicas);
    Ok(())
}

async fn update_scale(
    store: &Store,
    ns: Option<&str>,
    name: &str,
    sub: &str,
    scale: Value,
    opts: &WriteOptions,
) -> Result<WriteResult, ApiError> {
    let replicas = replicas_from_scale(&scale)?;
    let want_rv = scale
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let info = store.info().clone();
    store
        .patch(ns, name, Some(sub), opts, |current| {
            if let Some(rv) = &want_rv
                && current
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    != Some(rv.as_str())
            {
                return Err(ApiError::conflict(
                    &info.group,
                    &info.resource,
                    name,
                    ApiError::OBJECT_MODIFIED,
                ));
            }
            let mut next = current.clone();
            set_replicas(store, &mut next, replicas)?;
            Ok(next)
        })
        .await
}

/// `PUT …/{name}/finalize`: the kind's own finalize update
/// ([`ubernetes_registry::Strategy::finalize`]) inside a guaranteed update.
async fn finalize(
    store: &Store,
    name: &str,
    sub: &str,
    obj: Value,
    update: ubernetes_registry::strategy::FinalizeFn,
    opts: &WriteOptions,
) -> Result<WriteResult, ApiError> {
    store
        .patch(None, name, Some(sub), opts, |current| {
            Ok(update(current, &obj))
        })
        .await
}

/// Whether the kind declares `sub` its `Scale` subresource.
fn declares_scale(target: &Target, sub: Option<&str>) -> bool {
    matches!(
        sub.and_then(|s| target.store.strategy().subresource(s)),
        Some(Subresource::Scale)
    )
}

const PATCH_TYPES: &str = "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json";

#[allow(clippy::too_many_arguments)] // the parts of one patch request
async fn patch(
    state: &State,
    target: &Target,
    name: &str,
    sub: Option<&str>,
    query: &Query,
    headers: &HeaderMap,
    body: &[u8],
    guard: Option<WriteGuard>,
    user: Option<&UserInfo>,
) -> Result<(Value, Vec<String>, bool), ApiError> {
    let ct = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let mut opts = write_options(query, headers)?;
    opts.user = user.cloned();
    let info = target.store.info();
    let ns = target.namespace.as_deref();
    let unsupported = || {
        ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {PATCH_TYPES}"
            ),
        )
    };
    let force = query.flag("force");
    if ct == "application/apply-patch+yaml" {
        return apply_patch(state, target, name, sub, query, &opts, body).await;
    }
    if force {
        return Err(patch_options_invalid(
            ubernetes_apimachinery::error::field::forbidden(
                "force",
                "may not be specified for non-apply patch",
            ),
        ));
    }
    let kind = match ct.as_str() {
        "application/json-patch+json" => PatchKind::Json,
        "application/merge-patch+json" => PatchKind::Merge,
        "application/strategic-merge-patch+json" => {
            if !state.has_builtin_schema(info) {
                return Err(unsupported());
            }
            PatchKind::Strategic
        }
        _ => return Err(unsupported()),
    };
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("the body of the request was empty"));
    }
    // kube-apiserver decodes JSON and merge patches (strictly, under the
    // default fieldValidation) before applying them.
    if matches!(kind, PatchKind::Json | PatchKind::Merge)
        && let Err(e) = ubernetes_apimachinery::patch::parse_json(body)
    {
        return Err(ApiError::bad_request(format!("error decoding patch: {e}")));
    }
    let patch_meta: Option<Box<dyn ubernetes_apimachinery::patch::PatchMeta>> =
        if kind == PatchKind::Strategic {
            Some(state.patch_meta(info))
        } else {
            None
        };
    let apply_patch_body = |doc: &Value| -> Result<Value, ApiError> {
        match kind {
            PatchKind::Json => ubernetes_apimachinery::patch::json_patch(doc, body),
            PatchKind::Merge => ubernetes_apimachinery::patch::merge_patch(doc, body),
            PatchKind::Strategic => ubernetes_apimachinery::patch::strategic_merge_patch(
                doc,
                body,
                patch_meta
                    .as_deref()
                    .unwrap_or(&ubernetes_apimachinery::patch::NoPatchMeta),
            ),
        }
    };
    let apply = |doc: &Value| -> Result<Value, ApiError> {
        let patched = apply_patch_body(doc)?;
        if let Some(g) = &guard {
            g(&patched, Some(doc))?;
        }
        Ok(patched)
    };
    let res = if declares_scale(target, sub) {
        let store = target.store.clone();
        let s2 = store.clone();
        let res = store
            .patch(ns, name, sub, &opts, move |current| {
                let scale = to_scale(&s2, current)?;
                let patched = apply(&scale)?;
                let replicas = replicas_from_scale(&patched)?;
                let mut next = current.clone();
                set_replicas(&s2, &mut next, replicas)?;
                Ok(next)
            })
            .await?;
        let obj = target.store.get_value(ns, name).await?;
        return Ok((to_scale(&target.store, &obj)?, res.warnings, false));
    } else {
        target.store.patch(ns, name, sub, &opts, apply).await?
    };
    Ok((res.object, res.warnings, false))
}

/// 422 on the request's PatchOptions, as kube-apiserver's
/// `ValidatePatchOptions`.
fn patch_options_invalid(cause: ubernetes_apimachinery::Cause) -> ApiError {
    ApiError::invalid("meta.k8s.io", "PatchOptions", "", vec![cause])
}

/// Server-side apply: the body is the manager's whole intent for the object.
async fn apply_patch(
    state: &State,
    target: &Target,
    name: &str,
    sub: Option<&str>,
    query: &Query,
    opts: &WriteOptions,
    body: &[u8],
) -> Result<(Value, Vec<String>, bool), ApiError> {
    // Apply needs an explicit manager: no user-agent default.
    if query.get("fieldManager").is_none_or(str::is_empty) {
        return Err(patch_options_invalid(
            ubernetes_apimachinery::error::field::required(
                "fieldManager",
                "is required for apply patch",
            ),
        ));
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("the body of the request was empty"));
    }
    if declares_scale(target, sub) {
        return Err(ApiError::unsupported_media_type(
            "application/apply-patch+yaml",
        ));
    }
    let applied = negotiate::decode_yaml(body)?;
    let namespaces = state.registry.namespaces();
    let res = target
        .store
        .apply(
            namespaces.as_deref(),
            target.namespace.as_deref(),
            name,
            applied,
            sub,
            opts,
        )
        .await?;
    Ok((res.object, res.warnings, res.created))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PatchKind {
    Json,
    Merge,
    Strategic,
}

async fn delete_collection(
    state: &State,
    target: &Target,
    query: &Query,
    headers: &HeaderMap,
    body: &[u8],
    user: Option<&UserInfo>,
) -> HandlerResult {
    let _ = state;
    let (mut opts, _) = delete_options(query, headers, body)?;
    opts.user = user.cloned();
    let filter = selector_filter(&target.store, query)?;
    let ns = target.namespace.as_deref();
    let list = target
        .store
        .list(
            ns,
            filter.as_ref(),
            0,
            None,
            ubernetes_registry::store::ReadAt::Latest,
        )
        .await?;
    let mut deleted = Vec::new();
    for item in &list.items {
        let v: Value =
            serde_json::from_slice(item).map_err(|e| ApiError::internal(e.to_string()))?;
        let Some(name) = v.pointer("/metadata/name").and_then(Value::as_str) else {
            continue;
        };
        let item_ns = v.pointer("/metadata/namespace").and_then(Value::as_str);
        match target.store.delete(item_ns.or(ns), name, &opts).await {
            Ok(DeleteResult::Deleted(o)) | Ok(DeleteResult::Pending(o)) => deleted.push(o),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    let info = target.store.info();
    let out = json!({
        "kind": info.list_kind(),
        "apiVersion": info.api_version(),
        "metadata": {"resourceVersion": target.store.revision().to_string()},
        "items": deleted,
    });
    render_value(info, &out, negotiate::output(headers)?, StatusCode::OK, &[])
}
