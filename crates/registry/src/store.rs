//! The generic store: every kind-independent rule of kube-apiserver's
//! `registry/generic/registry/store.go`, for one resource.
//!
//! - reads (get, list, watch) are served from the resource's
//!   [`WatchCache`], after waiting until the cache has seen this resource's
//!   last acknowledged write (read-your-writes without a storage round trip);
//! - writes run as a *guaranteed update*: read the current value, run the
//!   change as a closure (update, patch, status, finalize, delete marking),
//!   compare-and-swap on its revision, and on a conflict re-run the closure
//!   against the new value (unless the client gave a resourceVersion, which is
//!   then a precondition and a mismatch is a 409);
//! - object metadata rules: uid, creationTimestamp, generation, generateName,
//!   resourceVersion preconditions, deletionTimestamp + finalizers, the
//!   status/spec split of the status subresource, no-op updates not written.
//!
//! Per-kind policy comes from the [`Strategy`]; admission plugins (ClusterIP
//! allocation …) from [`crate::admission`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use serde_json::{Map, Value, json};
use ubernetes_apimachinery::error::field;
use ubernetes_apimachinery::{ApiError, Cause, ResourceInfo};
use ubernetes_storage::cache::{CachedObject, FilterFn, WatchCache};
use ubernetes_storage::{EventType, KeyValue, Revision, Storage, StorageError};

use crate::admission::{Attributes, Operation};
use crate::strategy::{Strategy, SubresourceWrite};
use ubernetes_apimachinery::user::UserInfo;

/// How many times a write is re-run after a compare-and-swap conflict before
/// giving up with 409 (kube-apiserver retries without bound for patches; a
/// bound keeps a hot key from pinning a request forever).
const MAX_WRITE_ATTEMPTS: usize = 64;

/// `fieldValidation` query parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    Ignore,
    Warn,
    /// kubectl's default since 1.27.
    #[default]
    Strict,
}

/// Per-request write options shared by create/update/patch/delete.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// `dryRun=All`: run every step, write nothing.
    pub dry_run: bool,
    /// `fieldManager`, defaulted from the user agent by the HTTP layer.
    pub field_manager: Option<String>,
    pub field_validation: FieldValidation,
    /// The managed fields were already computed (server-side apply): do not
    /// recompute them as an Update.
    pub fields_tracked: bool,
    /// Server-side apply only: take fields other managers own (`force=true`).
    pub force: bool,
    /// The duplicate fields of the request body (`duplicate field "…"`, in
    /// document order), found by the HTTP layer in the raw JSON (they are
    /// lost once it is parsed); reported after the unknown fields.
    pub duplicate_fields: Vec<String>,
    /// Who asks (admission's `userInfo`); `None` for the server's own writes.
    pub user: Option<UserInfo>,
}

/// The answer of a write: the object as stored (with resourceVersion) and
/// warnings to send as `Warning: 299` headers.
#[derive(Debug, Clone)]
pub struct WriteResult {
    pub object: Value,
    pub warnings: Vec<String>,
    /// Create: the object did not exist before (201 rather than 200).
    pub created: bool,
}

/// `DeleteOptions` as far as the store acts on them.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub dry_run: bool,
    /// `Orphan`, `Background`, `Foreground`; `None`: the kind's default (Background).
    pub propagation_policy: Option<String>,
    pub precondition_uid: Option<String>,
    pub precondition_resource_version: Option<String>,
    /// Who asks (admission's `userInfo`); `None` for the server's own writes.
    pub user: Option<UserInfo>,
}

/// The answer of a delete.
#[derive(Debug, Clone)]
pub enum DeleteResult {
    /// Gone from storage; the last state.
    Deleted(Value),
    /// Marked for deletion (finalizers pending); the current state.
    Pending(Value),
}

/// A list as served: the items' final JSON and the list metadata.
#[derive(Debug, Clone)]
pub struct ListResult {
    pub items: Vec<Bytes>,
    pub resource_version: Revision,
    pub continue_token: Option<String>,
    pub remaining_item_count: Option<u64>,
}

/// How a list reads, from `resourceVersion` / `resourceVersionMatch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadAt {
    /// Unset: the latest state (consistent read).
    Latest,
    /// `"0"` (or NotOlderThan 0): any state the cache has.
    Any,
    /// `resourceVersionMatch=NotOlderThan`: at least this revision.
    NotOlderThan(Revision),
    /// `resourceVersionMatch=Exact`: exactly this revision (served from storage history).
    Exact(Revision),
}

/// One served resource: its strategy, storage prefix and watch cache.
pub struct Store {
    strategy: Arc<dyn Strategy>,
    storage: Arc<dyn Storage>,
    cache: Arc<WatchCache>,
    /// `/registry/<group|core>/<resource>/`.
    prefix: String,
    /// Revision of this resource's last acknowledged write: reads wait for the
    /// cache to reach it.
    last_write: AtomicU64,
    admission: Vec<Arc<dyn crate::admission::Admission>>,
    /// The registry-wide plugins (webhooks, policies, quota), after `admission`.
    registry_admission: crate::admission::Chain,
    unknown_fields: Option<crate::validation::UnknownFieldsFn>,
    field_manager: Option<Arc<dyn crate::managed_fields::FieldManager>>,
}

/// The storage prefix of a resource.
pub fn storage_prefix(info: &ResourceInfo) -> String {
    storage_prefix_of(&info.group, &info.resource)
}

/// The storage prefix of a group's resource (`/registry/<group|core>/<resource>/`).
pub fn storage_prefix_of(group: &str, resource: &str) -> String {
    let group = if group.is_empty() { "core" } else { group };
    format!("/registry/{group}/{resource}/")
}

/// Current time as kube-apiserver writes timestamps (RFC 3339, seconds).
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| jiff::Timestamp::now().to_string())
}

fn storage_error(info: &ResourceInfo, name: &str, e: StorageError) -> ApiError {
    match e {
        StorageError::NotFound { .. } => ApiError::not_found(&info.group, &info.resource, name),
        StorageError::AlreadyExists { .. } => {
            ApiError::already_exists(&info.group, &info.resource, name)
        }
        StorageError::Conflict { .. } => {
            ApiError::conflict(&info.group, &info.resource, name, ApiError::OBJECT_MODIFIED)
        }
        StorageError::Compacted {
            requested,
            compacted,
        } => ApiError::expired(format!(
            "too old resource version: {requested} ({compacted})"
        )),
        StorageError::WatcherTooSlow => {
            ApiError::gone("watch closed: the client fell too far behind")
        }
        StorageError::Engine(msg) => ApiError::internal(msg),
        // kube answers a converter's error as it is: 500, no reason.
        StorageError::Conversion(msg) => {
            let mut e = ApiError::internal("");
            e.reason = String::new();
            e.message = msg;
            e
        }
    }
}

/// Parse stored JSON and set its resourceVersion.
pub fn decode_stored(kv: &KeyValue) -> Result<Value, ApiError> {
    let mut v: Value = serde_json::from_slice(&kv.value)
        .map_err(|e| ApiError::internal(format!("stored object {} is corrupt: {e}", kv.key)))?;
    set_resource_version(&mut v, kv.mod_revision);
    Ok(v)
}

fn set_resource_version(obj: &mut Value, rev: Revision) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::String(rev.to_string()));
    }
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// The labels and annotations of `written` on `merged` (a subresource write
/// whose kind lets them change).
pub(crate) fn keep_written_labels_and_annotations(merged: &mut Value, written: &Value) {
    for field in ["labels", "annotations"] {
        match written.get("metadata").and_then(|m| m.get(field)) {
            Some(v) => {
                meta_mut(merged).insert(field.into(), v.clone());
            }
            None => {
                meta_mut(merged).remove(field);
            }
        }
    }
}

fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    match obj.get_mut("metadata") {
        Some(Value::Object(m)) => m,
        // Unreachable: set to an object just above.
        _ => unreachable_meta(),
    }
}

#[allow(clippy::panic)] // metadata was made an object on the line before the only call.
fn unreachable_meta() -> ! {
    panic!("metadata is an object")
}

/// The object minus what is not "spec" for generation purposes: metadata and
/// status (kube bumps generation when anything but these changes).
fn spec_part(obj: &Value) -> Value {
    let mut v = obj.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("metadata");
        m.remove("status");
        m.remove("apiVersion");
        m.remove("kind");
    }
    v
}

/// Finalizers of an object.
pub fn finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Namespaces also wait for their `spec.finalizers` (the `kubernetes`
/// finalizer the namespace controller removes once the namespace is empty).
fn has_spec_finalizers(obj: &Value) -> bool {
    obj.pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
}

/// Whether anything still holds the object's deletion.
fn has_pending_finalizers(obj: &Value) -> bool {
    !finalizers(obj).is_empty() || has_spec_finalizers(obj)
}

fn set_finalizers(obj: &mut Value, list: Vec<String>) {
    let meta = meta_mut(obj);
    if list.is_empty() {
        meta.remove("finalizers");
    } else {
        meta.insert("finalizers".into(), json!(list));
    }
}

/// Continue token: base64 of `{"v":"meta.k8s.io/v1","rv":N,"start":"key"}` as kube's.
fn encode_continue(rev: Revision, last_key_suffix: &str) -> String {
    use base64::Engine;
    let token =
        json!({"v": "meta.k8s.io/v1", "rv": rev, "start": format!("{last_key_suffix}\u{0}")});
    base64::engine::general_purpose::STANDARD.encode(token.to_string())
}

/// kube's answer to a continue token whose revision was compacted
/// (`handleCompactedErrorForPaging`): 410 with a token that goes on from
/// the same key at the latest revision (`rv: -1`), an inconsistent list.
fn continue_expired(start: &str) -> ApiError {
    use base64::Engine;
    let token = json!({"v": "meta.k8s.io/v1", "rv": -1, "start": format!("{start}\u{0}")});
    let mut e = ApiError::expired(INCONSISTENT_CONTINUE);
    e.list_continue = Some(
        base64::engine::general_purpose::STANDARD
            .encode(token.to_string())
            .into(),
    );
    e
}

const INCONSISTENT_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// A continue token: the revision to list at (`None`: the latest, kube's
/// `rv: -1` of an inconsistent continue) and the key to start after.
fn decode_continue(token: &str) -> Result<(Option<Revision>, String), ApiError> {
    use base64::Engine;
    let bad = || {
        ApiError::bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        )
    };
    let raw = base64::engine::general_purpose::STANDARD
        .decode(token)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(token))
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    if v.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
        return Err(ApiError::bad_request(
            "continue key is not valid: server does not recognize this encoded key",
        ));
    }
    let rev = match v.get("rv").and_then(Value::as_i64).ok_or_else(bad)? {
        -1 => None,
        rv if rv > 0 => Some(rv as Revision),
        _ => return Err(bad()),
    };
    let start = v
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(bad)?
        .trim_end_matches('\u{0}')
        .to_string();
    if start.contains("..") || start.starts_with('/') {
        return Err(bad());
    }
    Ok((rev, start))
}

/// What an update's admission needs besides the objects.
struct AdmitCtx<'a> {
    subresource: Option<&'a str>,
    user: Option<&'a UserInfo>,
    dry_run: bool,
    /// `AdmissionRequest.options`.
    options: Value,
}

/// The request's options as `AdmissionRequest.options` shows them
/// (`CreateOptions`, `UpdateOptions`, `PatchOptions`).
fn write_options_json(kind: &str, opts: &WriteOptions) -> Value {
    let mut v = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
    if opts.dry_run {
        v["dryRun"] = json!(["All"]);
    }
    if let Some(m) = &opts.field_manager {
        v["fieldManager"] = json!(m);
    }
    if kind == "PatchOptions" && opts.force {
        v["force"] = json!(true);
    }
    v
}

/// `DeleteOptions` as `AdmissionRequest.options` shows them.
fn delete_options_json(opts: &DeleteOptions) -> Value {
    let mut v = json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"});
    if opts.dry_run {
        v["dryRun"] = json!(["All"]);
    }
    if let Some(p) = &opts.propagation_policy {
        v["propagationPolicy"] = json!(p);
    }
    if opts.precondition_uid.is_some() || opts.precondition_resource_version.is_some() {
        v["preconditions"] = json!({});
        if let Some(u) = &opts.precondition_uid {
            v["preconditions"]["uid"] = json!(u);
        }
        if let Some(rv) = &opts.precondition_resource_version {
            v["preconditions"]["resourceVersion"] = json!(rv);
        }
    }
    v
}

impl Store {
    /// Start the resource's watch cache and wrap it. `version_prefix`: keep
    /// this version's objects apart from the resource's first version
    /// (`/registry/<group>/<resource>.<version>/`), used until conversion exists.
    pub async fn new_with_prefix(
        strategy: Arc<dyn Strategy>,
        storage: Arc<dyn Storage>,
        admission: Vec<Arc<dyn crate::admission::Admission>>,
        version_prefix: Option<String>,
        unknown_fields: Option<crate::validation::UnknownFieldsFn>,
        cache_config: ubernetes_storage::cache::CacheConfig,
        field_manager: Option<Arc<dyn crate::managed_fields::FieldManager>>,
    ) -> Result<Self, ApiError> {
        let mut prefix = storage_prefix(strategy.info());
        if let Some(v) = version_prefix {
            prefix = format!("{}.{v}/", prefix.trim_end_matches('/'));
        }
        Self::new_at(
            strategy,
            storage,
            admission,
            prefix,
            unknown_fields,
            cache_config,
            field_manager,
        )
        .await
    }

    /// As [`Store::new_with_prefix`], at an explicit storage prefix (a
    /// version converted from another version's storage, `conversion.rs`).
    pub async fn new_at(
        strategy: Arc<dyn Strategy>,
        storage: Arc<dyn Storage>,
        admission: Vec<Arc<dyn crate::admission::Admission>>,
        prefix: String,
        unknown_fields: Option<crate::validation::UnknownFieldsFn>,
        cache_config: ubernetes_storage::cache::CacheConfig,
        field_manager: Option<Arc<dyn crate::managed_fields::FieldManager>>,
    ) -> Result<Self, ApiError> {
        let attrs_strategy = strategy.clone();
        let attrs: ubernetes_storage::cache::AttrsFn =
            Arc::new(move |v: &Value| attrs_strategy.attrs(v));
        let cache = WatchCache::start(storage.clone(), prefix.clone(), attrs, cache_config)
            .await
            .map_err(|e| {
                ApiError::internal(format!("starting the watch cache of {prefix}: {e}"))
            })?;
        Ok(Self {
            strategy,
            storage,
            cache,
            prefix,
            last_write: AtomicU64::new(0),
            admission,
            registry_admission: crate::admission::Chain::default(),
            unknown_fields,
            field_manager,
        })
    }

    /// Share the registry's admission chain (set by [`crate::Registry`]).
    pub fn set_registry_admission(&mut self, chain: crate::admission::Chain) {
        self.registry_admission = chain;
    }

    /// The mutating phase (kube's mutating admission: before the kind's
    /// validation): the kind's plugins that mutate as kube's built-in
    /// admission plugins, then the registry-wide plugins (webhooks last).
    /// Returns the plugins' warnings and whether any plugin changed `obj`
    /// (each says so: no copy of the object is compared here).
    async fn admit_mutate(
        &self,
        attrs: &Attributes<'_>,
        obj: &mut Value,
    ) -> Result<(Vec<String>, bool), ApiError> {
        let mut warnings = Vec::new();
        let mut changed = false;
        let kinds = self
            .admission
            .iter()
            .filter(|p| p.mutates_before_webhooks())
            .cloned();
        for plugin in kinds.chain(self.registry_admission.plugins()) {
            if !plugin.mutates() {
                continue;
            }
            let (more, this) = plugin.mutate_changed(attrs, obj).await?;
            warnings.extend(more);
            changed |= this;
        }
        Ok((warnings, changed))
    }

    /// After the kind's validation: the kind's other plugins mutate (as
    /// kube's storage allocates), the kind's plugins validate, then the
    /// registry-wide validating phase.
    async fn admit_validate(
        &self,
        attrs: &Attributes<'_>,
        obj: &mut Value,
    ) -> Result<Vec<String>, ApiError> {
        let mut warnings = Vec::new();
        for plugin in self
            .admission
            .iter()
            .filter(|p| !p.mutates_before_webhooks())
        {
            warnings.extend(plugin.mutate_changed(attrs, obj).await?.0);
        }
        for plugin in &self.admission {
            warnings.extend(plugin.validate(attrs, obj).await?);
        }
        for plugin in self.registry_admission.plugins() {
            warnings.extend(plugin.validate(attrs, obj).await?);
        }
        Ok(warnings)
    }

    /// An update's admission inside the guaranteed-update loop: mutate,
    /// validate again what a plugin changed, then the validating phase.
    async fn admit_update(
        &self,
        ctx: &AdmitCtx<'_>,
        namespace: Option<&str>,
        name: &str,
        current: &Value,
        new_obj: &mut Value,
    ) -> Result<Vec<String>, ApiError> {
        let info = self.info();
        let attrs = Attributes {
            operation: Operation::Update,
            info,
            subresource: ctx.subresource,
            namespace,
            name,
            old: Some(current),
            user: ctx.user,
            dry_run: ctx.dry_run,
            options: Some(&ctx.options),
        };
        let (mut warnings, changed) = self.admit_mutate(&attrs, new_obj).await?;
        if changed {
            self.validate(new_obj, Some(current), false)?;
        }
        warnings.extend(self.admit_validate(&attrs, new_obj).await?);
        Ok(warnings)
    }

    pub fn info(&self) -> &ResourceInfo {
        self.strategy.info()
    }

    pub fn strategy(&self) -> &Arc<dyn Strategy> {
        &self.strategy
    }

    pub fn cache(&self) -> &Arc<WatchCache> {
        &self.cache
    }

    /// The storage key of an object.
    pub fn key(&self, namespace: Option<&str>, name: &str) -> String {
        match namespace {
            Some(ns) if self.info().namespaced => format!("{}{ns}/{name}", self.prefix),
            _ => format!("{}{name}", self.prefix),
        }
    }

    /// The key prefix of a list: the whole resource, or one namespace.
    pub fn list_prefix(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) if self.info().namespaced => format!("{}{ns}/", self.prefix),
            _ => self.prefix.clone(),
        }
    }

    fn note_write(&self, rev: Revision) {
        self.last_write.fetch_max(rev, Ordering::AcqRel);
    }

    /// Make a read see every write acknowledged so far. `None`: the watch
    /// cache has caught up, read it. `Some(rev)`: the store is shared with
    /// other servers and its watches cannot vouch for their progress (an etcd
    /// older than 3.4.31 / 3.5.13, [`Storage::serves_progress_requests`]),
    /// so read the store itself at `rev`, as kube-apiserver does then.
    async fn consistent(&self) -> Result<Option<Revision>, ApiError> {
        let mut want = self.last_write.load(Ordering::Acquire);
        // A store shared with other servers (etcd): wait for its current
        // revision, so a write acknowledged by another replica is seen too.
        if let Some(current) = self
            .storage
            .consistent_read_revision()
            .await
            .map_err(|e| storage_error(self.info(), "", e))?
        {
            want = want.max(current);
            if !self.storage.serves_progress_requests() {
                return Ok(Some(want));
            }
        }
        if self.cache.revision() < want {
            self.storage.request_progress();
            self.cache
                .wait_for_revision(want)
                .await
                .map_err(|e| ApiError::timeout(format!("waiting for the watch cache: {e}")))?;
        }
        Ok(None)
    }

    /// The object as served (final JSON), or 404.
    pub async fn get(&self, namespace: Option<&str>, name: &str) -> Result<Bytes, ApiError> {
        let key = self.key(namespace, name);
        if self.consistent().await?.is_some() {
            let kv = self
                .storage
                .get(&key)
                .await
                .map_err(|e| storage_error(self.info(), name, e))?
                .ok_or_else(|| {
                    ApiError::not_found(&self.info().group, &self.info().resource, name)
                })?;
            let v = decode_stored(&kv)?;
            return serde_json::to_vec(&v)
                .map(Bytes::from)
                .map_err(|e| ApiError::internal(e.to_string()));
        }
        self.cache
            .get(&key)
            .map(|o| o.json.clone())
            .ok_or_else(|| ApiError::not_found(&self.info().group, &self.info().resource, name))
    }

    /// The object as a JSON value.
    pub async fn get_value(&self, namespace: Option<&str>, name: &str) -> Result<Value, ApiError> {
        let bytes = self.get(namespace, name).await?;
        serde_json::from_slice(&bytes).map_err(|e| ApiError::internal(e.to_string()))
    }

    /// The object as this process's watch cache has it now, without waiting
    /// for the store's latest revision (kube's admission listers): `None`
    /// when the cache does not have it, or has not yet applied a write this
    /// process made (a namespace just deleted here must be seen terminating:
    /// kube's NamespaceLifecycle keeps a live-lookup list for that).
    fn cached_value(&self, namespace: Option<&str>, name: &str) -> Option<Value> {
        if self.cache.revision() < self.last_write.load(Ordering::Acquire) {
            return None;
        }
        let obj = self.cache.get(&self.key(namespace, name))?;
        serde_json::from_slice(&obj.json).ok()
    }

    /// The object at `key` as this process's watch cache has it now, with
    /// its revision: the first guess of a guaranteed update (`None` when the
    /// cache does not have it).
    fn cached_current(&self, key: &str) -> Option<(Revision, Value)> {
        let obj = self.cache.get(key)?;
        let value = serde_json::from_slice(&obj.json).ok()?;
        Some((obj.mod_revision, value))
    }

    /// An update attempt that started from the watch cache's state at
    /// `rev` failed with `error`: `Ok` (try again, from the store) when the
    /// store has moved past `rev`, else `error` (the cache was current, so
    /// the store's state fails alike; kube's GuaranteedUpdate).
    async fn error_unless_cache_was_behind(
        &self,
        key: &str,
        rev: Revision,
        name: &str,
        error: ApiError,
    ) -> Result<(), ApiError> {
        let stored = self
            .storage
            .get(key)
            .await
            .map_err(|e| storage_error(self.info(), name, e))?;
        match stored {
            Some(kv) if kv.mod_revision == rev => Err(error),
            _ => Ok(()),
        }
    }

    /// The current cache revision (for bookmarks and list metadata).
    pub fn revision(&self) -> Revision {
        self.cache.revision()
    }

    /// List, with selectors already compiled into `filter`.
    pub async fn list(
        &self,
        namespace: Option<&str>,
        filter: Option<&FilterFn>,
        limit: usize,
        continue_token: Option<&str>,
        read_at: ReadAt,
    ) -> Result<ListResult, ApiError> {
        let prefix = self.list_prefix(namespace);
        let mut read_at = read_at;
        let (start_after, at, start) = match continue_token {
            Some(t) if !t.is_empty() => {
                let (rev, start) = decode_continue(t)?;
                if rev.is_none() {
                    // An inconsistent continue: the rest at the latest revision.
                    read_at = ReadAt::Latest;
                }
                (Some(format!("{}{start}", self.prefix)), rev, Some(start))
            }
            _ => (None, None, None),
        };
        let exact = match (&read_at, at) {
            (_, Some(rev)) => Some(rev),
            (ReadAt::Exact(rev), None) => Some(*rev),
            _ => None,
        };
        if let Some(rev) = exact {
            // History older than the last compaction is gone, even where the
            // watch cache could still rebuild it (kube reads it from etcd).
            let compacted = self
                .storage
                .compacted_revision()
                .await
                .map_err(|e| storage_error(self.info(), "", e))?;
            if rev < compacted {
                return Err(match &start {
                    Some(start) => continue_expired(start),
                    None => {
                        ApiError::expired(format!("too old resource version: {rev} ({compacted})"))
                    }
                });
            }
            if let Some((items, remaining)) =
                self.cache
                    .list_at(&prefix, start_after.as_deref(), filter, limit, rev)
            {
                return Ok(self.list_result(items, rev, remaining));
            }
            return self
                .list_from_storage(&prefix, start_after, filter, limit, rev)
                .await
                .map_err(|e| match &start {
                    Some(start) if e.code == 410 => continue_expired(start),
                    _ => e,
                });
        }
        match read_at {
            ReadAt::Latest => {
                if let Some(rev) = self.consistent().await? {
                    return self
                        .list_from_storage(&prefix, start_after, filter, limit, rev)
                        .await;
                }
            }
            ReadAt::NotOlderThan(rev) => {
                if self.cache.revision() < rev {
                    self.cache.wait_for_revision(rev).await.map_err(|_| {
                        ApiError::timeout(format!(
                            "Too large resource version: {rev}, current: {}",
                            self.cache.revision()
                        ))
                    })?;
                }
            }
            ReadAt::Any | ReadAt::Exact(_) => {}
        }
        let (items, rev, remaining) =
            self.cache
                .list(&prefix, start_after.as_deref(), filter, limit);
        Ok(self.list_result(items, rev, remaining))
    }

    /// A page of cached objects listed at `rev`, with `remaining` more to come.
    fn list_result(
        &self,
        items: Vec<Arc<CachedObject>>,
        rev: Revision,
        remaining: u64,
    ) -> ListResult {
        let continue_token = if remaining > 0 {
            items
                .last()
                .map(|o| encode_continue(rev, o.key.strip_prefix(&self.prefix).unwrap_or(&o.key)))
        } else {
            None
        };
        ListResult {
            items: items.iter().map(|o| o.json.clone()).collect(),
            resource_version: rev,
            remaining_item_count: continue_token.as_ref().map(|_| remaining),
            continue_token,
        }
    }

    /// A list at an old revision, from storage history (continue pages, Exact).
    async fn list_from_storage(
        &self,
        prefix: &str,
        start_after: Option<String>,
        filter: Option<&FilterFn>,
        limit: usize,
        rev: Revision,
    ) -> Result<ListResult, ApiError> {
        let info = self.info();
        let mut items = Vec::new();
        let mut cursor = start_after;
        let mut last_key = None;
        let mut remaining = 0u64;
        // Page through storage until `limit` matching items are found.
        loop {
            let page = self
                .storage
                .list(
                    prefix,
                    ubernetes_storage::ListOptions {
                        start_after: cursor.clone(),
                        limit: Some(if limit == 0 { 0 } else { limit.max(64) }),
                        revision: Some(rev),
                    },
                )
                .await
                .map_err(|e| storage_error(info, "", e))?;
            let page_len = page.items.len();
            for kv in page.items {
                cursor = Some(kv.key.clone());
                let mut v = decode_stored(&kv)?;
                let obj = CachedObject {
                    key: kv.key.clone(),
                    create_revision: kv.create_revision,
                    mod_revision: kv.mod_revision,
                    json: Bytes::new(),
                    attrs: self.strategy.attrs(&v),
                };
                if filter.is_some_and(|f| !f(&obj)) {
                    continue;
                }
                if limit > 0 && items.len() >= limit {
                    remaining += 1;
                    continue;
                }
                set_resource_version(&mut v, kv.mod_revision);
                items.push(Bytes::from(
                    serde_json::to_vec(&v).map_err(|e| ApiError::internal(e.to_string()))?,
                ));
                last_key = Some(kv.key);
            }
            if page.remaining == 0 || page_len == 0 {
                break;
            }
            if limit > 0 && items.len() >= limit {
                // Count what is left cheaply: the storage told us.
                remaining += page.remaining;
                break;
            }
        }
        let continue_token = if remaining > 0 {
            last_key.map(|k| encode_continue(rev, k.strip_prefix(&self.prefix).unwrap_or(&k)))
        } else {
            None
        };
        Ok(ListResult {
            items,
            resource_version: rev,
            remaining_item_count: continue_token.as_ref().map(|_| remaining),
            continue_token,
        })
    }

    /// Check the namespace of a namespaced create/update: it must exist, and
    /// must not be terminating for a create.
    async fn check_namespace(
        &self,
        namespaces: Option<&Store>,
        namespace: Option<&str>,
        name: &str,
        creating: bool,
    ) -> Result<(), ApiError> {
        let (Some(ns_store), Some(ns)) = (namespaces, namespace) else {
            return Ok(());
        };
        if !self.info().namespaced {
            return Ok(());
        }
        // As kube's NamespaceLifecycle admission: the namespace from the
        // cache first (no store round trip: on etcd a consistent read costs
        // one per create), a consistent read only when the cache lacks it
        // (a namespace created a moment ago, maybe through another replica).
        let cached = ns_store.cached_value(None, ns);
        let ns_obj = match cached {
            Some(v) => v,
            None => match ns_store.get_value(None, ns).await {
                Ok(v) => v,
                Err(e) if e.code == 404 => {
                    return Err(ApiError::not_found("", "namespaces", ns));
                }
                Err(e) => return Err(e),
            },
        };
        if creating && ns_obj.pointer("/metadata/deletionTimestamp").is_some() {
            return Err(ApiError::forbidden(
                &self.info().group,
                &self.info().resource,
                name,
                &format!(
                    "unable to create new content in namespace {ns} because it is being terminated"
                ),
            ));
        }
        Ok(())
    }

    /// Checks shared by create and update on the incoming body: apiVersion/kind
    /// agree with the URL, namespace agrees with the URL.
    fn check_type_and_namespace(
        &self,
        obj: &mut Value,
        namespace: Option<&str>,
    ) -> Result<(), ApiError> {
        let info = self.info();
        if !obj.is_object() {
            return Err(ApiError::bad_request(format!(
                "Object '{}' is not an object",
                info.kind
            )));
        }
        let api_version = info.api_version();
        match obj.get("apiVersion").and_then(Value::as_str) {
            None | Some("") => {
                obj["apiVersion"] = json!(api_version);
            }
            Some(v) if v == api_version => {}
            Some(v) => {
                return Err(ApiError::bad_request(format!(
                    "the API version in the data ({v}) does not match the expected API version ({api_version})"
                )));
            }
        }
        match obj.get("kind").and_then(Value::as_str) {
            None | Some("") => {
                obj["kind"] = json!(info.kind);
            }
            Some(k) if k == info.kind => {}
            Some(k) => {
                return Err(ApiError::bad_request(format!(
                    "{k} in version \"{}\" cannot be handled as a {}: no kind \"{k}\" is registered for version \"{api_version}\" in scheme",
                    info.version, info.kind
                )));
            }
        }
        if info.namespaced {
            let url_ns = namespace.unwrap_or_default();
            match meta_str(obj, "namespace") {
                None | Some("") => {
                    meta_mut(obj).insert("namespace".into(), json!(url_ns));
                }
                Some(ns) if ns == url_ns => {}
                Some(_) => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
            }
        } else if let Some(ns) = meta_str(obj, "namespace")
            && !ns.is_empty()
        {
            // kube-apiserver silently clears a namespace on cluster-scoped objects.
            meta_mut(obj).remove("namespace");
        }
        Ok(())
    }

    /// Validation common to every kind plus the strategy's; 422 on failure.
    /// `normalized`: `obj` is the kind's `normalize` output that no client
    /// and no admission plugin changed since (see
    /// [`Strategy::validate_normalized`]).
    fn validate(&self, obj: &Value, old: Option<&Value>, normalized: bool) -> Result<(), ApiError> {
        let info = self.info();
        let mut causes: Vec<Cause> = crate::validation::object_meta(&self.strategy, obj);
        if let Some(old) = old {
            causes.extend(crate::validation::object_meta_update(obj, old));
        }
        match (old, normalized) {
            (_, true) => causes.extend(self.strategy.validate_normalized(obj, old)),
            (None, false) => causes.extend(self.strategy.validate_create(obj)),
            (Some(old), false) => causes.extend(self.strategy.validate_update(obj, old)),
        }
        if causes.is_empty() {
            Ok(())
        } else {
            let name = meta_str(obj, "name").unwrap_or_default();
            Err(ApiError::invalid(&info.group, &info.kind, name, causes))
        }
    }

    /// Unknown-field handling by `fieldValidation` (Strict → 400, Warn → warnings).
    fn field_validation(
        &self,
        obj: &Value,
        mode: FieldValidation,
        duplicates: &[String],
    ) -> Result<Vec<String>, ApiError> {
        let Some(check) = self.unknown_fields.as_ref() else {
            return Ok(Vec::new());
        };
        if mode == FieldValidation::Ignore {
            return Ok(Vec::new());
        }
        let mut msgs: Vec<String> = check(self.info(), obj)
            .iter()
            .map(|p| format!("unknown field \"{p}\""))
            .collect();
        msgs.extend(duplicates.iter().cloned());
        if msgs.is_empty() {
            return Ok(Vec::new());
        }
        match mode {
            FieldValidation::Strict => Err(ApiError::bad_request(format!(
                "strict decoding error: {}",
                msgs.join(", ")
            ))),
            _ => Ok(msgs),
        }
    }

    /// Recompute `metadata.managedFields` for a non-apply write.
    fn track_fields(
        &self,
        obj: &mut Value,
        old: Option<&Value>,
        opts: &WriteOptions,
        subresource: Option<&str>,
    ) {
        if opts.fields_tracked {
            return;
        }
        match (&self.field_manager, opts.field_manager.as_deref()) {
            (Some(fm), Some(manager)) => {
                let new = std::mem::take(obj);
                *obj = fm.update(self.info(), old, new, manager, subresource.unwrap_or(""));
            }
            (Some(_), None) => {
                // No manager to credit: keep what the object had.
                if let Some(entries) = old.and_then(|o| o.pointer("/metadata/managedFields")) {
                    meta_mut(obj).insert("managedFields".into(), entries.clone());
                }
            }
            (None, _) => {
                crate::managed_fields::record_update(obj, old, opts, self.info(), subresource)
            }
        }
    }

    /// Server-side apply (PATCH `application/apply-patch+yaml`): merge the
    /// configuration as `opts.field_manager`, creating the object if it does
    /// not exist. Runs inside the guaranteed-update loop like any patch.
    pub async fn apply(
        &self,
        namespaces: Option<&Store>,
        namespace: Option<&str>,
        name: &str,
        applied: Value,
        subresource: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<WriteResult, ApiError> {
        let info = self.info();
        let force = opts.force;
        let Some(fm) = self.field_manager.clone() else {
            return Err(ApiError::unsupported_media_type(
                "application/apply-patch+yaml",
            ));
        };
        let manager = opts.field_manager.clone().unwrap_or_default();
        if !applied.is_object() {
            return Err(ApiError::bad_request(
                "the apply configuration must be an object",
            ));
        }
        // Unknown fields: Strict refuses, Warn warns; either way the
        // configuration the field manager sees has only known fields. An
        // apply is refused in the words of kube's typed converter
        // (`failed to create typed patch object (…): .spec.foo: field not
        // declared in schema`).
        if opts.field_validation == FieldValidation::Strict
            && let Some(check) = self.unknown_fields.as_ref()
        {
            let unknown = check(self.info(), &applied);
            if !unknown.is_empty() {
                let info = self.info();
                let errors: Vec<String> = unknown
                    .iter()
                    .map(|p| format!(".{p}: field not declared in schema"))
                    .collect();
                return Err(ApiError::bad_request(format!(
                    "failed to create typed patch object ({}, Kind={}): {}",
                    info.api_version(),
                    info.kind,
                    errors.join("\n")
                )));
            }
        }
        let mut warnings = self.field_validation(&applied, opts.field_validation, &[])?;
        let tracked = WriteOptions {
            fields_tracked: true,
            ..opts.clone()
        };
        let sub = subresource.unwrap_or("");
        let ctx = AdmitCtx {
            subresource,
            user: opts.user.as_ref(),
            dry_run: opts.dry_run,
            options: write_options_json("PatchOptions", opts),
        };
        for _ in 0..MAX_WRITE_ATTEMPTS {
            let mut w = Vec::new();
            let res = self
                .guaranteed_update_admitted(namespace, name, opts.dry_run, Some(&ctx), |current| {
                    let merged = fm.apply(info, Some(current), &applied, &manager, force, sub)?;
                    let (new_obj, more) =
                        self.apply_update(current, merged, namespace, subresource, &tracked)?;
                    w = more;
                    Ok(Some(new_obj))
                })
                .await;
            match res {
                Ok(mut r) => {
                    warnings.extend(w);
                    warnings.append(&mut r.warnings);
                    r.warnings = warnings;
                    return Ok(r);
                }
                Err(e) if e.code == 404 && subresource.is_none() => {
                    let mut created = fm.apply(info, None, &applied, &manager, force, sub)?;
                    // A resourceVersion in the configuration is a
                    // precondition on an object that exists; one that
                    // creates ignores it (kube-apiserver does: an apply
                    // with an impossible version only creates).
                    meta_mut(&mut created).remove("resourceVersion");
                    if meta_str(&created, "name").is_none_or(str::is_empty) {
                        meta_mut(&mut created).insert("name".into(), json!(name));
                    }
                    if meta_str(&created, "name") != Some(name) {
                        return Err(ApiError::bad_request(
                            "the name of the object does not match the name on the URL",
                        ));
                    }
                    match self.create(namespaces, namespace, created, &tracked).await {
                        Ok(mut r) => {
                            warnings.extend(r.warnings);
                            r.warnings = warnings;
                            return Ok(r);
                        }
                        // Created meanwhile: apply to it instead.
                        Err(e) if e.code == 409 && e.reason == "AlreadyExists" => continue,
                        Err(e) => return Err(e),
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Err(ApiError::conflict(
            &info.group,
            &info.resource,
            name,
            ApiError::OBJECT_MODIFIED,
        ))
    }

    /// Create (POST).
    pub async fn create(
        &self,
        namespaces: Option<&Store>,
        namespace: Option<&str>,
        mut obj: Value,
        opts: &WriteOptions,
    ) -> Result<WriteResult, ApiError> {
        let info = self.info();
        self.check_type_and_namespace(&mut obj, namespace)?;
        let warnings =
            self.field_validation(&obj, opts.field_validation, &opts.duplicate_fields)?;
        if let Some(rv) = meta_str(&obj, "resourceVersion")
            && !rv.is_empty()
        {
            return Err(ApiError::bad_request(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        // generateName
        let has_name = meta_str(&obj, "name").is_some_and(|n| !n.is_empty());
        if !has_name
            && let Some(prefix) = meta_str(&obj, "generateName").map(str::to_string)
            && !prefix.is_empty()
        {
            let name = ubernetes_apimachinery::meta::generate_name(&prefix);
            meta_mut(&mut obj).insert("name".into(), json!(name));
        }
        let name = meta_str(&obj, "name").unwrap_or_default().to_string();
        if name.is_empty() {
            let c = field::required("metadata.name", "name or generateName is required");
            return Err(ApiError::invalid(&info.group, &info.kind, "", vec![c]));
        }
        let mut obj = self.strategy.normalize(obj)?;
        // Generic create preparation (kube's BeforeCreate).
        {
            let meta = meta_mut(&mut obj);
            meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
            meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
            meta.remove("deletionTimestamp");
            meta.remove("deletionGracePeriodSeconds");
            meta.remove("resourceVersion");
            meta.remove("selfLink");
            if self.strategy.tracks_generation() {
                meta.insert("generation".into(), json!(1));
            } else {
                meta.remove("generation");
            }
        }
        if self.strategy.has_status_subresource()
            && !self.strategy.keeps_status_on_create()
            && let Some(m) = obj.as_object_mut()
        {
            m.remove("status");
        }
        self.strategy.prepare_for_create(&mut obj);
        self.check_namespace(namespaces, namespace, &name, true)
            .await?;
        let mut warnings = warnings;
        {
            let options = write_options_json("CreateOptions", opts);
            let attrs = Attributes {
                operation: Operation::Create,
                info,
                subresource: None,
                namespace,
                name: &name,
                old: None,
                user: opts.user.as_ref(),
                dry_run: opts.dry_run,
                options: Some(&options),
            };
            // kube's order: mutating admission, the kind's validation,
            // validating admission.
            let (more, changed) = self.admit_mutate(&attrs, &mut obj).await?;
            warnings.extend(more);
            self.track_fields(&mut obj, None, opts, None);
            self.validate(&obj, None, !changed)?;
            warnings.extend(self.admit_validate(&attrs, &mut obj).await?);
        }
        if opts.dry_run {
            // kube-apiserver returns the object without a resourceVersion.
            return Ok(WriteResult {
                object: obj,
                warnings,
                created: true,
            });
        }
        let bytes = serde_json::to_vec(&obj).map_err(|e| ApiError::internal(e.to_string()))?;
        let kv = self
            .storage
            .create(&self.key(namespace, &name), Bytes::from(bytes))
            .await
            .map_err(|e| storage_error(info, &name, e))?;
        self.note_write(kv.mod_revision);
        set_resource_version(&mut obj, kv.mod_revision);
        tracing::debug!(resource = %info.resource, namespace = ?namespace, %name, rev = kv.mod_revision, "created");
        Ok(WriteResult {
            object: obj,
            warnings,
            created: true,
        })
    }

    /// The guaranteed-update loop: `change` maps the current object (with its
    /// resourceVersion) to the desired one. It may return `Ok(None)` for "no
    /// change". Re-run on CAS conflicts.
    pub async fn guaranteed_update<F>(
        &self,
        namespace: Option<&str>,
        name: &str,
        dry_run: bool,
        change: F,
    ) -> Result<WriteResult, ApiError>
    where
        F: FnMut(Value) -> Result<Option<Value>, ApiError> + Send,
    {
        let mut change = change;
        self.guaranteed_update_admitted(namespace, name, dry_run, None, |current| {
            change(current.clone())
        })
        .await
    }

    /// [`Store::guaranteed_update`] with admission (`admit`) run on each
    /// attempt's new object, after `change` produced it; the result carries
    /// the plugins' warnings. `change` borrows the current object: the
    /// request paths (update, patch, apply) build a new one from it, so no
    /// copy of it is made for them.
    async fn guaranteed_update_admitted<F>(
        &self,
        namespace: Option<&str>,
        name: &str,
        dry_run: bool,
        admit: Option<&AdmitCtx<'_>>,
        mut change: F,
    ) -> Result<WriteResult, ApiError>
    where
        F: FnMut(&Value) -> Result<Option<Value>, ApiError> + Send,
    {
        let info = self.info();
        let key = self.key(namespace, name);
        // kube's cacher hands its GuaranteedUpdate the watch cache's object:
        // a request's first attempt starts from it, with no read from the
        // store (on etcd a round trip per update and patch). The write's
        // revision check catches a cached state that is behind; an attempt
        // from the cache that fails, or finds nothing to change, is
        // decided again on the state read from the store (kube's
        // `origStateIsCurrent`). A dry run reads the store.
        let mut cached = match admit {
            Some(_) if !dry_run => self.cached_current(&key),
            _ => None,
        };
        let mut attempts = 0;
        while attempts < MAX_WRITE_ATTEMPTS {
            // `stale`: the stored bytes are not in the form a write would
            // store now (e.g. encrypted with an older key): write them back
            // even if the object did not change, as kube's GuaranteedUpdate.
            let (rev, stale, cur_obj, from_cache) = match cached.take() {
                Some((rev, obj)) => (rev, false, obj, true),
                None => {
                    attempts += 1;
                    let (current, stale) = self
                        .storage
                        .get_with_staleness(&key)
                        .await
                        .map_err(|e| storage_error(info, name, e))?
                        .ok_or_else(|| ApiError::not_found(&info.group, &info.resource, name))?;
                    let obj = decode_stored(&current)?;
                    (current.mod_revision, stale, obj, false)
                }
            };
            let changed = match change(&cur_obj) {
                Ok(changed) => changed,
                Err(e) if from_cache => {
                    self.error_unless_cache_was_behind(&key, rev, name, e)
                        .await?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let Some(mut new_obj) = changed else {
                if from_cache {
                    continue;
                }
                return Ok(WriteResult {
                    object: cur_obj,
                    warnings: Vec::new(),
                    created: false,
                });
            };
            let warnings = match admit {
                Some(ctx) => {
                    match self
                        .admit_update(ctx, namespace, name, &cur_obj, &mut new_obj)
                        .await
                    {
                        Ok(warnings) => warnings,
                        Err(e) if from_cache => {
                            self.error_unless_cache_was_behind(&key, rev, name, e)
                                .await?;
                            continue;
                        }
                        Err(e) => return Err(e),
                    }
                }
                None => Vec::new(),
            };
            // Drop the resourceVersion before comparing and storing.
            meta_mut(&mut new_obj).remove("resourceVersion");
            if equal_but_resource_version(&new_obj, &cur_obj) && !stale {
                if from_cache {
                    continue;
                }
                return Ok(WriteResult {
                    object: cur_obj,
                    warnings,
                    created: false,
                });
            }
            let finalizing = new_obj.pointer("/metadata/deletionTimestamp").is_some()
                && !has_pending_finalizers(&new_obj);
            if dry_run {
                set_resource_version(&mut new_obj, rev);
                return Ok(WriteResult {
                    object: new_obj,
                    warnings,
                    created: false,
                });
            }
            if finalizing {
                // The last finalizer went: the object goes now.
                match self.storage.delete(&key, Some(rev)).await {
                    Ok(kv) => {
                        self.note_write(kv.mod_revision);
                        set_resource_version(&mut new_obj, kv.mod_revision);
                        tracing::debug!(resource = %info.resource, %name, "deleted after its last finalizer was removed");
                        return Ok(WriteResult {
                            object: new_obj,
                            warnings,
                            created: false,
                        });
                    }
                    Err(StorageError::Conflict { .. }) => continue,
                    Err(StorageError::NotFound { .. }) if from_cache => continue,
                    Err(e) => return Err(storage_error(info, name, e)),
                }
            }
            let bytes =
                serde_json::to_vec(&new_obj).map_err(|e| ApiError::internal(e.to_string()))?;
            match self.storage.update(&key, Bytes::from(bytes), rev).await {
                Ok(kv) => {
                    self.note_write(kv.mod_revision);
                    set_resource_version(&mut new_obj, kv.mod_revision);
                    return Ok(WriteResult {
                        object: new_obj,
                        warnings,
                        created: false,
                    });
                }
                Err(StorageError::Conflict { .. }) | Err(StorageError::NotFound { .. }) => continue,
                Err(e) => return Err(storage_error(info, name, e)),
            }
        }
        Err(ApiError::conflict(
            &info.group,
            &info.resource,
            name,
            ApiError::OBJECT_MODIFIED,
        ))
    }

    /// Turn a client's full object into the next stored state of `current`
    /// (shared by update and patch). `subresource`: None, `status`.
    fn apply_update(
        &self,
        current: &Value,
        mut new_obj: Value,
        namespace: Option<&str>,
        subresource: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<(Value, Vec<String>), ApiError> {
        let info = self.info();
        let name = meta_str(current, "name").unwrap_or_default().to_string();
        self.check_type_and_namespace(&mut new_obj, namespace)?;
        // resourceVersion precondition.
        if let Some(rv) = meta_str(&new_obj, "resourceVersion")
            && !rv.is_empty()
            && Some(rv) != meta_str(current, "resourceVersion")
        {
            return Err(ApiError::conflict(
                &info.group,
                &info.resource,
                &name,
                ApiError::OBJECT_MODIFIED,
            ));
        }
        match meta_str(&new_obj, "name") {
            Some(n) if n == name => {}
            None | Some("") => {
                meta_mut(&mut new_obj).insert("name".into(), json!(name));
            }
            Some(_) => {
                return Err(ApiError::bad_request(
                    "the name of the object does not match the name on the URL",
                ));
            }
        }
        let warnings =
            self.field_validation(&new_obj, opts.field_validation, &opts.duplicate_fields)?;
        let mut new_obj = self.strategy.normalize(new_obj)?;
        let write = subresource.and_then(|s| self.strategy.subresource_write(s));
        match write {
            Some(SubresourceWrite::Merge(merge)) => {
                new_obj = merge(current, &new_obj);
            }
            Some(SubresourceWrite::Status) => {
                // Status writes change only status (kube resets the rest).
                let mut merged = current.clone();
                match new_obj.get("status") {
                    Some(s) => merged["status"] = s.clone(),
                    None => {
                        if let Some(m) = merged.as_object_mut() {
                            m.remove("status");
                        }
                    }
                }
                // Labels and annotations too, where the kind's status
                // strategy lets them change.
                if self.strategy.status_writes_metadata() {
                    keep_written_labels_and_annotations(&mut merged, &new_obj);
                }
                // A server-side apply computed the managed fields already
                // (its entry for the status subresource); keep them.
                if opts.fields_tracked
                    && let Some(mf) = new_obj.pointer("/metadata/managedFields").cloned()
                {
                    meta_mut(&mut merged).insert("managedFields".into(), mf);
                }
                let refused = self
                    .strategy
                    .prepare_for_status_update(&mut merged, current);
                if !refused.is_empty() {
                    return Err(ApiError::invalid(&info.group, &info.kind, &name, refused));
                }
                new_obj = merged;
            }
            None | Some(SubresourceWrite::Unprepared) => {
                if self.strategy.has_status_subresource() {
                    match current.get("status") {
                        Some(s) => new_obj["status"] = s.clone(),
                        None => {
                            if let Some(m) = new_obj.as_object_mut() {
                                m.remove("status");
                            }
                        }
                    }
                }
                // Metadata the client cannot change.
                for field in [
                    "uid",
                    "creationTimestamp",
                    "deletionTimestamp",
                    "deletionGracePeriodSeconds",
                    "generation",
                ] {
                    match current.get("metadata").and_then(|m| m.get(field)) {
                        Some(v) => {
                            meta_mut(&mut new_obj).insert(field.into(), v.clone());
                        }
                        None => {
                            meta_mut(&mut new_obj).remove(field);
                        }
                    }
                }
                // A subresource may keep the written spec (a namespace's
                // `finalize`); every other write goes through the kind's rules.
                if write.is_none() {
                    self.strategy.prepare_for_update(&mut new_obj, current);
                }
                if self.strategy.tracks_generation() && spec_part(&new_obj) != spec_part(current) {
                    let g = current
                        .pointer("/metadata/generation")
                        .and_then(Value::as_i64)
                        .unwrap_or(0);
                    meta_mut(&mut new_obj).insert("generation".into(), json!(g + 1));
                }
            }
        }
        // An unconditional update validates as if it named the current version.
        if meta_str(&new_obj, "resourceVersion").is_none_or(str::is_empty)
            && let Some(rv) = meta_str(current, "resourceVersion").map(str::to_string)
        {
            meta_mut(&mut new_obj).insert("resourceVersion".into(), json!(rv));
        }
        self.track_fields(&mut new_obj, Some(current), opts, subresource);
        self.validate(&new_obj, Some(current), true)?;
        Ok((new_obj, warnings))
    }

    /// Update (PUT) of the object or its `status` subresource.
    pub async fn update(
        &self,
        namespace: Option<&str>,
        name: &str,
        obj: Value,
        subresource: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<WriteResult, ApiError> {
        let mut warnings = Vec::new();
        let ctx = AdmitCtx {
            subresource,
            user: opts.user.as_ref(),
            dry_run: opts.dry_run,
            options: write_options_json("UpdateOptions", opts),
        };
        let mut result = self
            .guaranteed_update_admitted(namespace, name, opts.dry_run, Some(&ctx), |current| {
                let (new_obj, w) =
                    self.apply_update(current, obj.clone(), namespace, subresource, opts)?;
                warnings = w;
                Ok(Some(new_obj))
            })
            .await?;
        warnings.append(&mut result.warnings);
        result.warnings = warnings;
        Ok(result)
    }

    /// Patch: `patch_fn` computes the patched object from the current one,
    /// inside the retry loop (never read-then-write).
    pub async fn patch<P>(
        &self,
        namespace: Option<&str>,
        name: &str,
        subresource: Option<&str>,
        opts: &WriteOptions,
        patch_fn: P,
    ) -> Result<WriteResult, ApiError>
    where
        P: Fn(&Value) -> Result<Value, ApiError> + Send + Sync,
    {
        let mut warnings = Vec::new();
        let ctx = AdmitCtx {
            subresource,
            user: opts.user.as_ref(),
            dry_run: opts.dry_run,
            options: write_options_json("PatchOptions", opts),
        };
        let mut result = self
            .guaranteed_update_admitted(namespace, name, opts.dry_run, Some(&ctx), |current| {
                let patched = patch_fn(current)?;
                // The patched object is moved, not copied: on the (rare)
                // error the patch is applied again for the error's detail.
                let (new_obj, w) = self
                    .apply_update(current, patched, namespace, subresource, opts)
                    .map_err(|e| match patch_fn(current) {
                        Ok(patched) => patched_decode_error(e, &patched),
                        Err(_) => e,
                    })?;
                warnings = w;
                Ok(Some(new_obj))
            })
            .await?;
        warnings.append(&mut result.warnings);
        result.warnings = warnings;
        Ok(result)
    }

    /// Internal write used by the server's own controllers (GC, namespace
    /// lifecycle): `change` edits the stored object directly, skipping
    /// normalization and field validation but keeping CAS and finalizer rules.
    pub async fn system_update<F>(
        &self,
        namespace: Option<&str>,
        name: &str,
        change: F,
    ) -> Result<WriteResult, ApiError>
    where
        F: FnMut(Value) -> Result<Option<Value>, ApiError> + Send,
    {
        self.guaranteed_update(namespace, name, false, change).await
    }

    /// Delete (DELETE): finalizers and propagation policy decide whether the
    /// object goes now or is marked.
    pub async fn delete(
        &self,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteResult, ApiError> {
        self.delete_with_warnings(namespace, name, opts)
            .await
            .map(|(result, _)| result)
    }

    /// [`Store::delete`], with the admission plugins' warnings (sent as
    /// `Warning: 299` headers by the HTTP layer).
    pub async fn delete_with_warnings(
        &self,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<(DeleteResult, Vec<String>), ApiError> {
        let info = self.info();
        let key = self.key(namespace, name);
        for _ in 0..MAX_WRITE_ATTEMPTS {
            let current = self
                .storage
                .get(&key)
                .await
                .map_err(|e| storage_error(info, name, e))?
                .ok_or_else(|| ApiError::not_found(&info.group, &info.resource, name))?;
            let obj = decode_stored(&current)?;
            if let Some(uid) = &opts.precondition_uid {
                let actual = meta_str(&obj, "uid").unwrap_or_default();
                if uid != actual {
                    return Err(ApiError::conflict(
                        &info.group,
                        &info.resource,
                        name,
                        &format!(
                            "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
                        ),
                    ));
                }
            }
            if let Some(rv) = &opts.precondition_resource_version {
                let actual = current.mod_revision.to_string();
                if *rv != actual {
                    return Err(ApiError::conflict(
                        &info.group,
                        &info.resource,
                        name,
                        &format!(
                            "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {actual}"
                        ),
                    ));
                }
            }
            // Admission: kube calls both phases on DELETE with the stored
            // object as the old one; a mutation is meaningless and dropped.
            let warnings = {
                let options = delete_options_json(opts);
                let attrs = Attributes {
                    operation: Operation::Delete,
                    info,
                    subresource: None,
                    namespace,
                    name,
                    old: Some(&obj),
                    user: opts.user.as_ref(),
                    dry_run: opts.dry_run,
                    options: Some(&options),
                };
                let mut scratch = obj.clone();
                let (mut warnings, _) = self.admit_mutate(&attrs, &mut scratch).await?;
                let mut scratch = obj.clone();
                warnings.extend(self.admit_validate(&attrs, &mut scratch).await?);
                warnings
            };
            let mut fins = finalizers(&obj);
            match opts.propagation_policy.as_deref() {
                Some("Orphan") => {
                    if !fins.iter().any(|f| f == "orphan") {
                        fins.push("orphan".into());
                    }
                    fins.retain(|f| f != "foregroundDeletion");
                }
                Some("Foreground") => {
                    if !fins.iter().any(|f| f == "foregroundDeletion") {
                        fins.push("foregroundDeletion".into());
                    }
                    fins.retain(|f| f != "orphan");
                }
                Some("Background") => {
                    fins.retain(|f| f != "orphan" && f != "foregroundDeletion");
                }
                // The kind's default, unless the object's own finalizers
                // chose (kube's deletionFinalizersForGarbageCollection).
                None if self.strategy.orphans_by_default()
                    && !fins
                        .iter()
                        .any(|f| f == "orphan" || f == "foregroundDeletion") =>
                {
                    fins.push("orphan".into());
                }
                _ => {}
            }
            let already_deleting = obj.pointer("/metadata/deletionTimestamp").is_some();
            if fins.is_empty() && !has_spec_finalizers(&obj) {
                if opts.dry_run {
                    return Ok((DeleteResult::Deleted(obj), warnings));
                }
                match self.storage.delete(&key, Some(current.mod_revision)).await {
                    Ok(kv) => {
                        self.note_write(kv.mod_revision);
                        let mut gone = obj;
                        set_resource_version(&mut gone, kv.mod_revision);
                        tracing::debug!(resource = %info.resource, namespace = ?namespace, %name, "deleted");
                        return Ok((DeleteResult::Deleted(gone), warnings));
                    }
                    Err(StorageError::Conflict { .. }) => continue,
                    Err(e) => return Err(storage_error(info, name, e)),
                }
            }
            // Mark for deletion.
            let mut marked = obj.clone();
            set_finalizers(&mut marked, fins);
            if !already_deleting {
                let meta = meta_mut(&mut marked);
                meta.insert("deletionTimestamp".into(), json!(now_rfc3339()));
                meta.insert("deletionGracePeriodSeconds".into(), json!(0));
                if self.strategy.tracks_generation() {
                    let g = obj
                        .pointer("/metadata/generation")
                        .and_then(Value::as_i64)
                        .unwrap_or(0);
                    meta_mut(&mut marked).insert("generation".into(), json!(g + 1));
                }
            }
            crate::lifecycle::on_delete_marked(info, &mut marked);
            meta_mut(&mut marked).remove("resourceVersion");
            if marked == {
                let mut o = obj.clone();
                meta_mut(&mut o).remove("resourceVersion");
                o
            } {
                return Ok((DeleteResult::Pending(obj), warnings));
            }
            if opts.dry_run {
                return Ok((DeleteResult::Pending(marked), warnings));
            }
            let bytes =
                serde_json::to_vec(&marked).map_err(|e| ApiError::internal(e.to_string()))?;
            match self
                .storage
                .update(&key, Bytes::from(bytes), current.mod_revision)
                .await
            {
                Ok(kv) => {
                    self.note_write(kv.mod_revision);
                    set_resource_version(&mut marked, kv.mod_revision);
                    return Ok((DeleteResult::Pending(marked), warnings));
                }
                Err(StorageError::Conflict { .. }) => continue,
                Err(e) => return Err(storage_error(info, name, e)),
            }
        }
        Err(ApiError::conflict(
            &info.group,
            &info.resource,
            name,
            ApiError::OBJECT_MODIFIED,
        ))
    }

    /// Subscribe to changes after `from` (see [`WatchCache::watch`]).
    pub async fn watch(
        &self,
        namespace: Option<&str>,
        from: Revision,
        filter: Option<FilterFn>,
    ) -> Result<ubernetes_storage::cache::CacheWatchReceiver, ApiError> {
        let prefix = self.list_prefix(namespace);
        self.cache
            .watch(&prefix, from, filter)
            .map_err(|e| storage_error(self.info(), "", e))
    }

    /// [`Store::watch`] whose live events carry the objects' heads
    /// ([`WatchCache::watch_heads`]), for a follower of metadata only.
    pub async fn watch_heads(
        &self,
        namespace: Option<&str>,
        from: Revision,
        filter: Option<FilterFn>,
    ) -> Result<ubernetes_storage::cache::CacheWatchReceiver, ApiError> {
        let prefix = self.list_prefix(namespace);
        self.cache
            .watch_heads(&prefix, from, filter)
            .map_err(|e| storage_error(self.info(), "", e))
    }

    /// Make sure reads see every write acknowledged so far, then return the
    /// cache revision (start point of a watch with no resourceVersion).
    pub async fn sync_revision(&self) -> Result<Revision, ApiError> {
        if self.consistent().await?.is_some() {
            // The cache cannot vouch for other servers' writes: start where
            // it is once it has this process's own (kube's cacher starts a
            // watch without resourceVersion at its current revision too).
            let mine = self.last_write.load(Ordering::Acquire);
            if self.cache.revision() < mine {
                self.cache
                    .wait_for_revision(mine)
                    .await
                    .map_err(|e| ApiError::timeout(format!("waiting for the watch cache: {e}")))?;
            }
        }
        Ok(self.cache.revision())
    }
}

/// `new` and `current` are the same object but for `current`'s
/// `metadata.resourceVersion` (`new` has none): the guaranteed update's
/// "nothing changed" test, without a copy of `current` to drop it from.
fn equal_but_resource_version(new: &Value, current: &Value) -> bool {
    let (Some(n), Some(c)) = (new.as_object(), current.as_object()) else {
        return new == current;
    };
    n.len() == c.len()
        && n.iter().all(|(k, nv)| match (c.get(k), k.as_str()) {
            (None, _) => false,
            (Some(cv), "metadata") => match (nv.as_object(), cv.as_object()) {
                (Some(nm), Some(cm)) => {
                    let fields = |m: &serde_json::Map<String, Value>| {
                        m.len() - usize::from(m.contains_key("resourceVersion"))
                    };
                    fields(nm) == fields(cm)
                        && nm
                            .iter()
                            .filter(|(k, _)| k.as_str() != "resourceVersion")
                            .all(|(k, v)| cm.get(k) == Some(v))
                }
                _ => nv == cv,
            },
            (Some(cv), _) => nv == cv,
        })
}

/// A patch whose result does not decode as the kind is, in kube-apiserver,
/// a 422 on the field `patch` carrying the patched JSON and the decoder's
/// complaint (`patch.go`: `field.Invalid(field.NewPath("patch"), …)`).
fn patched_decode_error(e: ApiError, patched: &Value) -> ApiError {
    const MARK: &str = " cannot be handled as a ";
    if e.code != 400 || !e.message.contains(MARK) {
        return e;
    }
    let detail = e
        .message
        .split_once(MARK)
        .and_then(|(_, rest)| rest.split_once(": "))
        .map(|(_, d)| d.to_string())
        .unwrap_or(e.message);
    ApiError::invalid(
        "",
        "",
        "",
        vec![field::invalid(
            "patch",
            &Value::String(patched.to_string()),
            &detail,
        )],
    )
}

/// Event type name on the wire.
pub fn event_type_name(t: EventType) -> &'static str {
    match t {
        EventType::Added => "ADDED",
        EventType::Modified => "MODIFIED",
        EventType::Deleted => "DELETED",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_changed_ignores_only_the_current_resource_version() {
        let cur = json!({"kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "7"}, "data": {"k": "v"}});
        let same = json!({"data": {"k": "v"}, "metadata": {"name": "a"}, "kind": "ConfigMap"});
        assert!(equal_but_resource_version(&same, &cur));
        for changed in [
            json!({"kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "w"}}),
            json!({"kind": "ConfigMap", "metadata": {"name": "a", "uid": "u"}, "data": {"k": "v"}}),
            json!({"kind": "ConfigMap", "metadata": {"name": "b"}, "data": {"k": "v"}}),
            json!({"kind": "ConfigMap", "metadata": {"name": "a"}}),
            json!({"kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}, "x": 1}),
        ] {
            assert!(!equal_but_resource_version(&changed, &cur), "{changed}");
        }
        let no_rv = json!({"metadata": {}});
        assert!(equal_but_resource_version(&json!({"metadata": {}}), &no_rv));
        assert!(equal_but_resource_version(
            &json!({"metadata": {}}),
            &json!({"metadata": {"resourceVersion": "1"}})
        ));
    }

    #[test]
    fn continue_tokens_round_trip_and_reject_garbage() {
        let t = encode_continue(42, "default/cm-7");
        assert_eq!(
            decode_continue(&t).ok(),
            Some((Some(42), "default/cm-7".to_string()))
        );
        // kube's inconsistent continue after compaction: the latest revision.
        let e = continue_expired("default/cm-7");
        assert_eq!(e.code, 410);
        let next = e.list_continue.as_deref().unwrap_or_default();
        assert_eq!(
            decode_continue(next).ok(),
            Some((None, "default/cm-7".to_string()))
        );
        assert_eq!(e.status()["metadata"]["continue"], next);
        assert_eq!(decode_continue("%%%").map_err(|e| e.code), Err(400));
        use base64::Engine;
        let other =
            base64::engine::general_purpose::STANDARD.encode(r#"{"v":"x","rv":1,"start":"a"}"#);
        assert_eq!(decode_continue(&other).map_err(|e| e.code), Err(400));
    }

    #[test]
    fn spec_part_ignores_metadata_and_status() {
        let a = json!({"metadata": {"name": "a"}, "spec": {"x": 1}, "status": {"y": 1}});
        let b = json!({"metadata": {"name": "b"}, "spec": {"x": 1}, "status": {"y": 2}});
        assert_eq!(spec_part(&a), spec_part(&b));
        let c = json!({"metadata": {"name": "a"}, "spec": {"x": 2}});
        assert_ne!(spec_part(&a), spec_part(&c));
    }
}
