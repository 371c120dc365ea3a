//! [`Builtin`]: the one [`Strategy`] implementation every built-in kind uses,
//! parameterised by the kind's `k8s-openapi` type and a handful of plain
//! functions (defaults, validation, preparation). Also the helpers that
//! build a kind's [`ResourceInfo`] from its type, and the decoder-error
//! wording of kube-apiserver (`<Kind> in version "v1" cannot be handled as a
//! <Kind>: json: cannot unmarshal …`).

use std::marker::PhantomData;

use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope, Resource};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use ubernetes_apimachinery::{ApiError, Cause, ResourceInfo, SubresourceInfo};
use ubernetes_storage::cache::Attrs;

use super::names::NameValidation;
use crate::printers;
use crate::strategy::{
    AdmissionFn, FinalizeFn, ScalePaths, SchemaFn, StoredAs, Strategy, Subresource,
    SubresourceWrite, WriteAuthority, default_attrs,
};

/// Whether a `k8s-openapi` scope marker is namespaced.
pub trait Scope {
    const NAMESPACED: bool;
}
impl Scope for NamespaceResourceScope {
    const NAMESPACED: bool = true;
}
impl Scope for ClusterResourceScope {
    const NAMESPACED: bool = false;
}

/// The verbs kube-apiserver serves on `status` and `scale` subresources.
fn sub_verbs() -> Vec<String> {
    ["get", "patch", "update"].map(String::from).to_vec()
}

/// Discovery facts of a resource of type `T`: group, version, kind, plural,
/// scope and OpenAPI definition come from the type; the rest is given.
/// `subresources` lists `status`, `scale`, `finalize`, `proxy` by name.
pub fn info<T>(
    singular: &str,
    short: &[&str],
    categories: &[&str],
    subresources: &[&str],
) -> ResourceInfo
where
    T: Resource + JsonSchema,
    T::Scope: Scope,
{
    let subresources = subresources
        .iter()
        .map(|name| match *name {
            "scale" => SubresourceInfo {
                name: "scale".into(),
                kind: "Scale".into(),
                group: "autoscaling".into(),
                version: "v1".into(),
                verbs: sub_verbs(),
            },
            // The TokenRequest subresource of serviceaccounts.
            "token" => SubresourceInfo {
                name: "token".into(),
                kind: "TokenRequest".into(),
                group: "authentication.k8s.io".into(),
                version: "v1".into(),
                verbs: vec!["create".into()],
            },
            // A proxy to what the object stands for (kube's `nodes/proxy`,
            // kind `NodeProxyOptions`; here `clusters/proxy`).
            "proxy" => SubresourceInfo {
                name: "proxy".into(),
                kind: format!("{}ProxyOptions", T::KIND),
                group: T::GROUP.into(),
                version: T::VERSION.into(),
                verbs: ["create", "delete", "get", "patch", "update"]
                    .map(String::from)
                    .to_vec(),
            },
            // Pods' `binding` (kube's BindingREST: `kinds/pod_binding.rs`).
            "binding" => SubresourceInfo {
                name: "binding".into(),
                kind: "Binding".into(),
                group: String::new(),
                version: "v1".into(),
                verbs: vec!["create".into()],
            },
            "finalize" => SubresourceInfo {
                name: "finalize".into(),
                kind: T::KIND.into(),
                group: T::GROUP.into(),
                version: T::VERSION.into(),
                verbs: vec!["update".into()],
            },
            other => SubresourceInfo {
                name: other.into(),
                kind: T::KIND.into(),
                group: T::GROUP.into(),
                version: T::VERSION.into(),
                verbs: sub_verbs(),
            },
        })
        .collect();
    ResourceInfo {
        group: T::GROUP.into(),
        version: T::VERSION.into(),
        resource: T::URL_PATH_SEGMENT.into(),
        singular: singular.into(),
        kind: T::KIND.into(),
        namespaced: <T::Scope as Scope>::NAMESPACED,
        verbs: ResourceInfo::standard_verbs(),
        short_names: short.iter().map(|s| s.to_string()).collect(),
        categories: categories.iter().map(|s| s.to_string()).collect(),
        subresources,
        definition: T::schema_name().into_owned(),
    }
}

/// A built-in kind's strategy over its typed representation `T`.
pub struct Builtin<T> {
    info: ResourceInfo,
    names: NameValidation,
    defaults: fn(&mut T),
    validate: fn(&T) -> Vec<Cause>,
    validate_raw: Option<fn(&T, &Value) -> Vec<Cause>>,
    validate_update: Option<fn(&T, &T) -> Vec<Cause>>,
    /// The kind's rules over the JSON (see [`Builtin::validate_value`]).
    value_rules: Option<ValueRules>,
    /// On update only `validate_update` runs (see [`Builtin::update_validation_only`]).
    update_validation_only: bool,
    tracks_generation: bool,
    selectable: &'static [&'static str],
    attrs: Option<fn(&Value) -> Attrs>,
    scale: Option<ScalePaths>,
    prepare_create: Option<fn(&mut Value)>,
    post_normalize: Option<fn(&mut Value)>,
    prepare_update: Option<fn(&mut Value, &Value)>,
    prepare_status_update: Option<fn(&mut Value, &Value) -> Vec<Cause>>,
    returns_deleted_object: bool,
    deprecation_warning: Option<&'static str>,
    orphans_by_default: bool,
    secret_bodies: &'static [&'static str],
    stored_as: Option<StoredAs>,
    status_writes_metadata: bool,
    keeps_status_on_create: bool,
    printer: Option<printers::TablePrinter>,
    protobuf: Option<String>,
    federated: bool,
    write_authority: WriteAuthority,
    finalize: Option<FinalizeFn>,
    subresources: Vec<(&'static str, Subresource)>,
    admission: Vec<AdmissionFn>,
    /// The kind's schema, for Go's `omitempty` after encoding.
    schema: std::sync::Arc<super::omitempty::SchemaTree>,
    _type: PhantomData<fn() -> T>,
}

/// A kind's validation written over the JSON rather than its typed form.
#[derive(Clone, Copy)]
struct ValueRules {
    create: fn(&Value) -> Vec<Cause>,
    update: Option<fn(&Value, &Value) -> Vec<Cause>>,
}

fn no_defaults<T>(_: &mut T) {}
fn no_validation<T>(_: &T) -> Vec<Cause> {
    Vec::new()
}

impl<T> Builtin<T>
where
    T: Resource + DeserializeOwned + Serialize + JsonSchema + 'static,
{
    /// A kind with no defaults, no spec validation, DNS-1123 subdomain names.
    pub fn new(info: ResourceInfo) -> Self {
        let protobuf = Some(super::protobuf::message_name(
            &info.group,
            &info.version,
            &info.kind,
        ));
        Self {
            info,
            names: NameValidation::Dns1123Subdomain,
            defaults: no_defaults::<T>,
            validate: no_validation::<T>,
            validate_raw: None,
            validate_update: None,
            value_rules: None,
            update_validation_only: false,
            tracks_generation: false,
            selectable: &[],
            attrs: None,
            scale: None,
            prepare_create: None,
            post_normalize: None,
            prepare_update: None,
            prepare_status_update: None,
            returns_deleted_object: false,
            deprecation_warning: None,
            orphans_by_default: false,
            secret_bodies: &[],
            stored_as: None,
            status_writes_metadata: false,
            keeps_status_on_create: false,
            printer: None,
            protobuf,
            federated: false,
            write_authority: WriteAuthority::None,
            finalize: None,
            subresources: Vec::new(),
            admission: Vec::new(),
            schema: std::sync::Arc::new(super::omitempty::SchemaTree::of::<T>()),
            _type: PhantomData,
        }
    }

    /// kube-apiserver's defaulting for the kind.
    pub fn defaults(mut self, f: fn(&mut T)) -> Self {
        self.defaults = f;
        self
    }

    /// Validation of the object (create and update).
    pub fn validate(mut self, f: fn(&T) -> Vec<Cause>) -> Self {
        self.validate = f;
        self
    }

    /// Validation that also needs the JSON (e.g. to tell a missing field
    /// from an empty one, which the typed form cannot); replaces
    /// [`Builtin::validate`].
    pub fn validate_json(mut self, f: fn(&T, &Value) -> Vec<Cause>) -> Self {
        self.validate_raw = Some(f);
        self
    }

    fn run_validate(&self, typed: &T, raw: &Value) -> Vec<Cause> {
        match self.validate_raw {
            Some(f) => f(typed, raw),
            None => (self.validate)(typed),
        }
    }

    /// Validation written over the JSON (create and update; `update`, if
    /// any: extra rules on update, new then old), replacing the typed
    /// [`Builtin::validate`] and [`Builtin::validate_update`]. An object
    /// that is `normalize`'s output (no client and no admission plugin
    /// changed it since) is then validated without being decoded again:
    /// the write's one typed decode is `normalize`'s. Otherwise the object
    /// is still decoded first, for its types.
    pub fn validate_value(
        mut self,
        create: fn(&Value) -> Vec<Cause>,
        update: Option<fn(&Value, &Value) -> Vec<Cause>>,
    ) -> Self {
        self.value_rules = Some(ValueRules { create, update });
        self
    }

    /// [`Builtin::validate_value`]'s rules: on update, the create rules
    /// (unless [`Builtin::update_validation_only`]) and the update rules.
    fn run_value_rules(&self, rules: ValueRules, new: &Value, old: Option<&Value>) -> Vec<Cause> {
        let mut causes = match old {
            Some(_) if self.update_validation_only => Vec::new(),
            _ => (rules.create)(new),
        };
        if let (Some(f), Some(old)) = (rules.update, old) {
            causes.extend(f(new, old));
        }
        causes
    }

    /// Extra validation on update (immutable fields), new then old.
    pub fn validate_update(mut self, f: fn(&T, &T) -> Vec<Cause>) -> Self {
        self.validate_update = Some(f);
        self
    }

    /// Updates are checked by [`Builtin::validate_update`] alone, not by the
    /// create validation too (kube's events.k8s.io Events: an update is
    /// held to immutability, not to what a create must carry, so an old core
    /// Event can be updated through events.k8s.io).
    pub fn update_validation_only(mut self) -> Self {
        self.update_validation_only = true;
        self
    }

    /// Which name format `metadata.name` must have.
    pub fn names(mut self, n: NameValidation) -> Self {
        self.names = n;
        self
    }

    /// `metadata.generation` is maintained.
    pub fn generation(mut self) -> Self {
        self.tracks_generation = true;
        self
    }

    /// Field-selector keys beyond `metadata.name` / `metadata.namespace`.
    pub fn fields(mut self, f: &'static [&'static str]) -> Self {
        self.selectable = f;
        self
    }

    /// Custom label/field extraction (when a field is not a plain path).
    pub fn attrs(mut self, f: fn(&Value) -> Attrs) -> Self {
        self.attrs = Some(f);
        self
    }

    /// Scale subresource paths.
    pub fn scale(mut self, spec: &str, status: &str, selector: Option<&str>) -> Self {
        self.scale = Some(ScalePaths {
            spec_replicas: spec.into(),
            status_replicas: status.into(),
            selector: selector.map(String::from),
        });
        self.subresources.push(("scale", Subresource::Scale));
        self
    }

    /// A last touch on the encoded form (e.g. dropping a member the typed
    /// form cannot leave out).
    pub fn after_normalize(mut self, f: fn(&mut Value)) -> Self {
        self.post_normalize = Some(f);
        self
    }

    /// Kind-specific preparation at create.
    pub fn on_create(mut self, f: fn(&mut Value)) -> Self {
        self.prepare_create = Some(f);
        self
    }

    /// Kind-specific preparation at update.
    pub fn on_update(mut self, f: fn(&mut Value, &Value)) -> Self {
        self.prepare_update = Some(f);
        self
    }

    /// Kind-specific preparation of a `status` write, which may refuse it
    /// (see [`Strategy::prepare_for_status_update`]).
    pub fn on_status_update(mut self, f: fn(&mut Value, &Value) -> Vec<Cause>) -> Self {
        self.prepare_status_update = Some(f);
        self
    }

    /// A delete answers with the deleted object rather than a `Status`
    /// (kube's `ReturnDeletedObject: true` in the kind's storage.go).
    pub fn returns_deleted_object(mut self) -> Self {
        self.returns_deleted_object = true;
        self
    }

    /// Every answer about the resource carries this warning (see
    /// [`Strategy::deprecation_warning`]).
    pub fn deprecated(mut self, warning: &'static str) -> Self {
        self.deprecation_warning = Some(warning);
        self
    }

    /// A delete without a propagation policy orphans the dependents (see
    /// [`Strategy::orphans_by_default`]).
    pub fn orphans_by_default(mut self) -> Self {
        self.orphans_by_default = true;
        self
    }

    /// This version is stored as `S` (kube's storage version), converted by
    /// `converter`; `legacy_prefix`: where an older release kept it apart.
    pub fn stored_as<S: Resource>(
        mut self,
        converter: fn() -> std::sync::Arc<dyn crate::conversion::Converter>,
        legacy_prefix: &'static str,
    ) -> Self {
        self.stored_as = Some(StoredAs {
            group: S::GROUP,
            version: S::VERSION,
            kind: S::KIND,
            resource: S::URL_PATH_SEGMENT,
            converter,
            legacy_prefix,
        });
        self
    }

    /// These subresources' bodies (`""`: all the kind's) carry secrets: never
    /// audited above `Metadata` (see [`Strategy::secret_bodies`]).
    pub fn secret_bodies(mut self, subresources: &'static [&'static str]) -> Self {
        self.secret_bodies = subresources;
        self
    }

    /// A create keeps the status it is given (see
    /// [`Strategy::keeps_status_on_create`]).
    pub fn keep_status_on_create(mut self) -> Self {
        self.keeps_status_on_create = true;
        self
    }

    /// A `status` write may change labels and annotations too (kube's
    /// status strategy of the kind resets only the spec).
    pub fn status_writes_metadata(mut self) -> Self {
        self.status_writes_metadata = true;
        self
    }

    /// The kind's Table columns (kube-apiserver's printer for its Go type;
    /// [`printers::DEFAULT`] for `Name, Created At`).
    pub fn printer(mut self, p: printers::TablePrinter) -> Self {
        self.printer = Some(p);
        self
    }

    /// The kind is not served as protobuf (it has no message in
    /// [`super::protobuf::PACKAGES`]; a protobuf body is refused as kube
    /// refuses an unregistered kind). Without this a kind's message is
    /// [`super::protobuf::message_name`]'s, which
    /// `kinds::check` finds among the generated ones.
    pub fn without_protobuf(mut self) -> Self {
        self.protobuf = None;
        self
    }

    /// The federation propagates the kind's objects to member clusters.
    pub fn federated(mut self) -> Self {
        self.federated = true;
        self
    }

    /// Writes are checked against the writer's own permissions.
    pub fn write_authority(mut self, w: WriteAuthority) -> Self {
        self.write_authority = w;
        self
    }

    /// The `finalize` subresource's update: `(current, requested) -> next`.
    /// Its write keeps the written spec (kube's namespace finalize
    /// strategy: [`SubresourceWrite::Unprepared`]).
    pub fn on_finalize(mut self, f: FinalizeFn) -> Self {
        self.finalize = Some(f);
        self.subresources
            .push(("finalize", Subresource::Finalize(f)));
        self
    }

    /// A subresource served by the kind's own REST, which creates from the
    /// request's body (a ServiceAccount's `token`): [`Subresource::Create`].
    pub fn create_subresource(
        mut self,
        subresource: &'static str,
        rest: &'static dyn crate::strategy::CreateRest,
    ) -> Self {
        self.subresources
            .push((subresource, Subresource::Create(rest)));
        self
    }

    /// How a write of `subresource` makes the next object (see
    /// [`Strategy::subresource_write`]); a declared `status` is
    /// [`SubresourceWrite::Status`] without this.
    pub fn subresource_write(mut self, subresource: &'static str, w: SubresourceWrite) -> Self {
        self.subresources
            .push((subresource, Subresource::Object(w)));
        self
    }

    /// One more admission plugin of the kind's own (see
    /// [`Strategy::admission`]).
    pub fn admission(mut self, f: AdmissionFn) -> Self {
        self.admission.push(f);
        self
    }

    /// The name format `metadata.name` must have.
    pub fn name_validation(&self) -> NameValidation {
        self.names
    }

    /// Decode as `T` with kube-apiserver's error wording.
    pub fn decode(&self, mut obj: Value) -> Result<T, ApiError> {
        let Some(map) = obj.as_object_mut() else {
            return Err(self.decode_error(
                "json: cannot unmarshal ".to_string()
                    + go_json_type(&obj)
                    + " into Go value of type "
                    + &go_package_type(&T::schema_name()),
            ));
        };
        let expected = self.info.api_version();
        if let Some(v) = map.remove("apiVersion")
            && let Some(v) = v.as_str().filter(|v| !v.is_empty())
            && v != expected
        {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({expected})"
            )));
        }
        if let Some(k) = map.remove("kind")
            && let Some(k) = k.as_str().filter(|k| !k.is_empty())
            && k != self.info.kind
        {
            return Err(ApiError::bad_request(format!(
                "{k} in version \"{}\" cannot be handled as a {}: no kind \"{k}\" is registered for version \"{expected}\"",
                self.info.version, self.info.kind
            )));
        }
        strip_nulls(&mut obj);
        self.schema.fill_zero_times(&mut obj);
        serde_path_to_error::deserialize::<_, T>(obj).map_err(|e| {
            let detail = go_unmarshal_detail::<T>(e.path(), &e.inner().to_string());
            self.decode_error(detail)
        })
    }

    /// [`Builtin::decode`] of a borrowed value (validation's input, the
    /// object `normalize` produced or the stored one) without copying it
    /// first: `T` is read straight from `obj` when the owned decode would
    /// not change it before reading (no `null` member to strip, no Go zero
    /// time to fill, `apiVersion` and `kind` absent or the kind's own, which
    /// `T`'s deserializer accepts). Otherwise, and on any error (so that
    /// the message is the owned decode's), it decodes a copy.
    fn decode_ref(&self, obj: &Value) -> Result<T, ApiError> {
        if self.decodes_in_place(obj)
            && let Ok(typed) = serde_path_to_error::deserialize::<_, T>(obj)
        {
            return Ok(typed);
        }
        self.decode(obj.clone())
    }

    /// Whether [`Builtin::decode_ref`] may read `obj` as it is.
    fn decodes_in_place(&self, obj: &Value) -> bool {
        let Some(map) = obj.as_object() else {
            return false;
        };
        let info = &self.info;
        // The served group/version and kind are `T`'s (what its
        // deserializer checks the members against).
        let served_version = if info.group.is_empty() {
            T::API_VERSION == info.version
        } else {
            T::API_VERSION
                .strip_prefix(info.group.as_str())
                .and_then(|v| v.strip_prefix('/'))
                == Some(info.version.as_str())
        };
        let own = |key: &str, expected: &str| match map.get(key) {
            None => true,
            Some(Value::String(v)) => v == expected,
            Some(_) => false,
        };
        served_version
            && info.kind == T::KIND
            && !self.schema.fills_zero_times()
            && own("apiVersion", T::API_VERSION)
            && own("kind", T::KIND)
            && !holds_null(obj)
    }

    fn decode_error(&self, detail: String) -> ApiError {
        ApiError::bad_request(format!(
            "{kind} in version \"{v}\" cannot be handled as a {kind}: {detail}",
            kind = self.info.kind,
            v = self.info.version
        ))
    }

    fn encode(&self, typed: &T) -> Result<Value, ApiError> {
        serde_json::to_value(typed).map_err(|e| ApiError::internal(e.to_string()))
    }
}

impl<T> Strategy for Builtin<T>
where
    T: Resource + DeserializeOwned + Serialize + JsonSchema + 'static,
{
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn normalize(&self, obj: Value) -> Result<Value, ApiError> {
        let mut typed = self.decode(obj)?;
        (self.defaults)(&mut typed);
        let mut out = self.encode(&typed)?;
        self.schema.omit_empty(&mut out);
        self.schema.null_zero_times(&mut out);
        if let Some(f) = self.post_normalize {
            f(&mut out);
        }
        Ok(out)
    }

    fn validate_create(&self, obj: &Value) -> Vec<Cause> {
        match (self.decode_ref(obj), self.value_rules) {
            (Ok(_), Some(rules)) => self.run_value_rules(rules, obj, None),
            (Ok(t), None) => self.run_validate(&t, obj),
            (Err(e), _) => vec![Cause::new("FieldValueInvalid", e.message, "")],
        }
    }

    fn validate_normalized(&self, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        match (self.value_rules, old) {
            (Some(rules), _) => self.run_value_rules(rules, obj, old),
            (None, None) => self.validate_create(obj),
            (None, Some(old)) => self.validate_update(obj, old),
        }
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let new_t = match self.decode_ref(new) {
            Ok(t) => t,
            Err(e) => return vec![Cause::new("FieldValueInvalid", e.message, "")],
        };
        if let Some(rules) = self.value_rules {
            return self.run_value_rules(rules, new, Some(old));
        }
        let mut causes = if self.update_validation_only {
            Vec::new()
        } else {
            self.run_validate(&new_t, new)
        };
        if let Some(f) = self.validate_update
            && let Ok(old_t) = self.decode_ref(old)
        {
            causes.extend(f(&new_t, &old_t));
        }
        causes
    }

    fn validate_name(&self, name: &str) -> Vec<String> {
        self.names.check(name)
    }

    fn tracks_generation(&self) -> bool {
        self.tracks_generation
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(f) = self.prepare_create {
            f(obj);
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        if let Some(f) = self.prepare_update {
            f(new, old);
        }
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) -> Vec<Cause> {
        match self.prepare_status_update {
            Some(f) => f(new, old),
            None => Vec::new(),
        }
    }

    fn selectable_fields(&self) -> &[&'static str] {
        self.selectable
    }

    fn attrs(&self, obj: &Value) -> Attrs {
        match self.attrs {
            Some(f) => f(obj),
            None => default_attrs(obj, self.selectable),
        }
    }

    fn scale(&self) -> Option<ScalePaths> {
        self.scale.clone()
    }

    fn returns_deleted_object(&self) -> bool {
        self.returns_deleted_object
    }

    fn deprecation_warning(&self) -> Option<&'static str> {
        self.deprecation_warning
    }

    fn orphans_by_default(&self) -> bool {
        self.orphans_by_default
    }

    fn secret_bodies(&self) -> &'static [&'static str] {
        self.secret_bodies
    }

    fn stored_as(&self) -> Option<StoredAs> {
        self.stored_as
    }

    fn status_writes_metadata(&self) -> bool {
        self.status_writes_metadata
    }

    fn keeps_status_on_create(&self) -> bool {
        self.keeps_status_on_create
    }

    fn printer(&self) -> Option<printers::TablePrinter> {
        self.printer
    }

    fn openapi_schema(&self) -> Option<SchemaFn> {
        Some(schema_of::<T>)
    }

    fn protobuf(&self) -> Option<&str> {
        self.protobuf.as_deref()
    }

    fn federated(&self) -> bool {
        self.federated
    }

    fn write_authority(&self) -> WriteAuthority {
        self.write_authority
    }

    fn finalize(&self) -> Option<FinalizeFn> {
        self.finalize
    }

    fn subresource(&self, name: &str) -> Option<Subresource> {
        if !self.info.has_subresource(name) {
            return None;
        }
        match self.subresources.iter().find(|(s, _)| *s == name) {
            Some((_, sub)) => Some(*sub),
            None => (name == "status").then_some(Subresource::Object(SubresourceWrite::Status)),
        }
    }

    fn subresource_write(&self, subresource: &str) -> Option<SubresourceWrite> {
        match self.subresource(subresource)? {
            Subresource::Object(w) => Some(w),
            Subresource::Finalize(_) => Some(SubresourceWrite::Unprepared),
            Subresource::Scale | Subresource::Create(_) => None,
        }
    }

    fn admission(&self) -> Vec<AdmissionFn> {
        self.admission.clone()
    }
}

/// The [`SchemaFn`] of a kind's type: its schema comes from the type itself.
fn schema_of<T: JsonSchema>(generator: &mut schemars::generate::SchemaGenerator) -> String {
    generator.subschema_for::<T>();
    T::schema_name().into_owned()
}

/// Whether a `null` is a member of any object in `v` (what [`strip_nulls`]
/// would remove).
fn holds_null(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.values().any(|v| v.is_null() || holds_null(v)),
        Value::Array(a) => a.iter().any(holds_null),
        _ => false,
    }
}

/// Go's `encoding/json` treats `null` as "leave the zero value": drop null
/// members so the typed decode accepts them too.
fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(strip_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

fn go_json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `io.k8s.api.apps.v1.DeploymentSpec` → `v1.DeploymentSpec`.
fn go_package_type(def: &str) -> String {
    let mut parts = def.rsplit('.');
    let name = parts.next().unwrap_or(def);
    match parts.next() {
        Some(pkg) => format!("{pkg}.{name}"),
        None => name.to_string(),
    }
}

fn short_name(def: &str) -> &str {
    def.rsplit('.').next().unwrap_or(def)
}

/// Go's wording of a type error, from serde's message and the error path,
/// with struct and field types taken from `T`'s OpenAPI schema:
/// `json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32`.
fn go_unmarshal_detail<T: JsonSchema>(path: &serde_path_to_error::Path, msg: &str) -> String {
    let mut generator = schemars::SchemaGenerator::default();
    let root = generator.subschema_for::<T>();
    let defs = generator.definitions().clone();
    let resolve = |s: &Value| -> (Value, Option<String>) {
        let mut s = s.clone();
        let mut name = None;
        for _ in 0..8 {
            let Some(r) = s.get("$ref").and_then(Value::as_str) else {
                break;
            };
            let def = r.rsplit('/').next().unwrap_or(r).to_string();
            let Some(next) = defs.get(&def) else { break };
            name = Some(def);
            s = next.clone();
        }
        (s, name)
    };
    let (mut cur, mut cur_name) = resolve(root.as_value());
    let mut struct_name = cur_name
        .clone()
        .unwrap_or_else(|| T::schema_name().into_owned());
    let mut fields: Vec<String> = Vec::new();
    for seg in path.iter() {
        use serde_path_to_error::Segment;
        let next = match seg {
            Segment::Seq { .. } => cur.get("items").cloned(),
            Segment::Map { key } => {
                if let Some(p) = cur.get("properties").and_then(|p| p.get(key.as_str())) {
                    struct_name = cur_name.clone().unwrap_or(struct_name);
                    fields.push(key.clone());
                    Some(p.clone())
                } else {
                    cur.get("additionalProperties").cloned()
                }
            }
            _ => None,
        };
        let Some(next) = next else { break };
        let (resolved, name) = resolve(&next);
        cur = resolved;
        cur_name = name;
    }
    let go_type = go_type_of(&cur, cur_name.as_deref(), &defs);
    let value_kind = serde_value_kind(msg);
    let value_kind = match value_kind {
        Some(k) => k,
        None => return format!("json: {msg}"),
    };
    if fields.is_empty() {
        return format!("json: cannot unmarshal {value_kind} into Go value of type {go_type}");
    }
    format!(
        "json: cannot unmarshal {value_kind} into Go struct field {}.{} of type {go_type}",
        short_name(&struct_name),
        fields.join(".")
    )
}

/// `invalid type: string "x", expected i32` → `string`; out-of-range and
/// fractional numbers print their literal, as Go does (`number 1.5`).
fn serde_value_kind(msg: &str) -> Option<String> {
    let rest = msg
        .strip_prefix("invalid type: ")
        .or_else(|| msg.strip_prefix("invalid value: "))?;
    let what = rest.split(", expected").next().unwrap_or(rest);
    let kind = if what.starts_with("string") {
        "string".to_string()
    } else if what.starts_with("boolean") {
        "bool".to_string()
    } else if what.starts_with("sequence") {
        "array".to_string()
    } else if what.starts_with("map") {
        "object".to_string()
    } else if let Some(lit) = what
        .strip_prefix("integer `")
        .or_else(|| what.strip_prefix("floating point `"))
    {
        let lit = lit.trim_end_matches('`');
        if msg.starts_with("invalid value") || what.starts_with("floating") {
            format!("number {lit}")
        } else {
            "number".to_string()
        }
    } else {
        return None;
    };
    Some(kind)
}

fn go_type_of(s: &Value, name: Option<&str>, defs: &Map<String, Value>) -> String {
    if let Some(n) = name
        && (s.get("properties").is_some()
            || s.get("type").and_then(Value::as_str) == Some("object"))
    {
        return go_package_type(n);
    }
    let ty = s.get("type").and_then(Value::as_str).unwrap_or("");
    match ty {
        "string" => "string".into(),
        "boolean" => "bool".into(),
        "number" => "float64".into(),
        "integer" => match s.get("format").and_then(Value::as_str) {
            Some("int64") => "int64".into(),
            _ => "int32".into(),
        },
        "array" => {
            let items = s.get("items").cloned().unwrap_or(Value::Null);
            let (inner, inner_name) = match items.get("$ref").and_then(Value::as_str) {
                Some(r) => {
                    let d = r.rsplit('/').next().unwrap_or(r);
                    (
                        defs.get(d).cloned().unwrap_or(Value::Null),
                        Some(d.to_string()),
                    )
                }
                None => (items, None),
            };
            format!("[]{}", go_type_of(&inner, inner_name.as_deref(), defs))
        }
        "object" => {
            let items = s
                .get("additionalProperties")
                .cloned()
                .unwrap_or(Value::Null);
            format!("map[string]{}", go_type_of(&items, None, defs))
        }
        _ => name
            .map(go_package_type)
            .unwrap_or_else(|| "interface {}".into()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use serde_json::json;

    fn deployments() -> Builtin<Deployment> {
        Builtin::new(info::<Deployment>(
            "deployment",
            &["deploy"],
            &["all"],
            &["status", "scale"],
        ))
    }

    #[test]
    fn info_takes_group_version_scope_and_definition_from_the_type() {
        let i = deployments().info;
        assert_eq!(i.group, "apps");
        assert_eq!(i.resource, "deployments");
        assert!(i.namespaced);
        assert_eq!(i.definition, "io.k8s.api.apps.v1.Deployment");
        assert_eq!(i.subresources[1].kind, "Scale");
        assert_eq!(i.subresources[1].group, "autoscaling");
    }

    #[test]
    fn a_string_where_an_int32_belongs_is_worded_as_gos_decoder() {
        let e = deployments()
            .normalize(json!({"spec": {"replicas": "three"}}))
            .unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
        );
    }

    #[test]
    fn nested_array_paths_name_the_innermost_struct() {
        let e = deployments()
            .normalize(json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "image": 5}]}}}}))
            .unwrap_err();
        assert!(e.message.ends_with(
            "json: cannot unmarshal number into Go struct field Container.spec.template.spec.containers.image of type string"
        ), "{}", e.message);
    }

    #[test]
    fn wrong_api_version_is_a_bad_request() {
        let e = deployments()
            .normalize(json!({"apiVersion": "apps/v1beta1", "kind": "Deployment"}))
            .unwrap_err();
        assert_eq!(
            e.message,
            "the API version in the data (apps/v1beta1) does not match the expected API version (apps/v1)"
        );
    }

    #[test]
    fn normalize_drops_unknown_fields_and_sets_type_meta() {
        let v = deployments()
            .normalize(json!({"metadata": {"name": "a", "bogus": 1}, "spec": {}, "extra": true}))
            .unwrap();
        assert_eq!(v["apiVersion"], "apps/v1");
        assert_eq!(v["kind"], "Deployment");
        assert!(v.get("extra").is_none());
        assert!(v["metadata"].get("bogus").is_none());
    }

    #[test]
    fn the_borrowed_decode_reads_what_the_owned_one_reads() {
        let d = deployments();
        let plain = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "a", "labels": {"x": "y"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"x": "y"}}}});
        assert!(d.decodes_in_place(&plain));
        // Inputs the owned decode changes first: read from a copy.
        let with_null = json!({"metadata": {"name": "a", "labels": null}, "spec": {"replicas": 1}});
        let empty_version = json!({"apiVersion": "", "kind": "Deployment", "spec": {}});
        let no_type_meta = json!({"metadata": {"name": "b"}});
        assert!(!d.decodes_in_place(&with_null));
        assert!(!d.decodes_in_place(&empty_version));
        assert!(d.decodes_in_place(&no_type_meta));
        for v in [&plain, &with_null, &empty_version, &no_type_meta] {
            assert_eq!(
                d.decode_ref(v).unwrap(),
                d.decode(v.clone()).unwrap(),
                "{v}"
            );
        }
        // Errors are the owned decode's, word for word.
        for bad in [
            json!({"spec": {"replicas": "three"}}),
            json!({"apiVersion": "apps/v1beta1", "kind": "Deployment"}),
            json!({"kind": "StatefulSet"}),
        ] {
            assert_eq!(
                d.decode_ref(&bad).unwrap_err().message,
                d.decode(bad.clone()).unwrap_err().message
            );
        }
    }

    #[test]
    fn nulls_are_accepted_as_go_does() {
        let v = deployments()
            .normalize(
                json!({"metadata": {"name": "a", "labels": null}, "spec": {"replicas": null}}),
            )
            .unwrap();
        assert!(v["metadata"].get("labels").is_none());
    }
}
