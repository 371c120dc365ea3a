//! [`Strategy`]: the per-kind policy the generic store consults, as
//! kube-apiserver's `rest.RESTCreateStrategy` / `RESTUpdateStrategy`. Only
//! policy lives here (scope, defaults, validation, status/spec split,
//! selectable fields); every kind-independent rule is in the generic store.
//!
//! Built-in kinds implement it through [`crate::kinds`], decoding the JSON
//! into their `k8s-openapi` type (which checks field types and drops unknown
//! fields, as kube-apiserver's typed decode does), defaulting and validating.

use serde_json::Value;
use ubernetes_apimachinery::{ApiError, Cause, ResourceInfo};
use ubernetes_storage::cache::Attrs;

/// Where the scale subresource reads and writes (JSON pointers into the object).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    /// e.g. `/spec/replicas`.
    pub spec_replicas: String,
    /// e.g. `/status/replicas`.
    pub status_replicas: String,
    /// The label selector, e.g. `/spec/selector` (a LabelSelector object or a
    /// map, rendered as a string into `Scale.status.selector`).
    pub selector: Option<String>,
}

/// Per-kind policy.
pub trait Strategy: Send + Sync {
    /// What is served.
    fn info(&self) -> &ResourceInfo;

    /// Decode the incoming JSON as the kind's type and back (type errors →
    /// 400 BadRequest worded as kube-apiserver's decoder; unknown fields are
    /// dropped), then apply kube-apiserver's defaults for the kind. Called
    /// on every create/update/patch result before validation.
    fn normalize(&self, obj: Value) -> Result<Value, ApiError>;

    /// Validation of a new object (beyond the generic metadata checks the
    /// store does): required fields, formats, enums. Field paths as
    /// kube-apiserver prints them (`spec.template.spec.containers[0].image`).
    fn validate_create(&self, obj: &Value) -> Vec<Cause>;

    /// Validation of an update, including immutable fields.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let _ = old;
        self.validate_create(new)
    }

    /// [`Strategy::validate_create`] (`old` `None`) or
    /// [`Strategy::validate_update`] of an object that is
    /// [`Strategy::normalize`]'s output changed since only by the store's
    /// own steps, the kind's preparation and the field manager (no client
    /// and no admission plugin changed it), so its types are the kind's: a
    /// kind whose rules read the JSON need not decode it again. The store
    /// calls the full validation instead when admission changed the object.
    fn validate_normalized(&self, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        match old {
            None => self.validate_create(obj),
            Some(old) => self.validate_update(obj, old),
        }
    }

    /// kube-apiserver's messages for an invalid `metadata.name` of this kind
    /// (empty when valid). The default is `NameIsDNSSubdomain`; namespaces
    /// use a DNS-1123 label, services a DNS-1035 label, RBAC kinds a path
    /// segment. The store reports each message as
    /// `metadata.name: Invalid value: "<name>": <message>`.
    fn validate_name(&self, name: &str) -> Vec<String> {
        crate::kinds::names::dns1123_subdomain(name)
    }

    /// Whether `metadata.generation` is maintained (1 at create, +1 when the
    /// spec changes or deletion starts), as kube-apiserver does for this kind.
    fn tracks_generation(&self) -> bool {
        false
    }

    /// Whether the kind has a `status` subresource: then main-resource writes
    /// keep the stored status and status writes change only status.
    fn has_status_subresource(&self) -> bool {
        self.info().has_subresource("status")
    }

    /// Whether a create keeps the status it is given although the kind
    /// has a `status` subresource (the federation's PropagationRecord: its
    /// only writer creates it with its first state in one write).
    fn keeps_status_on_create(&self) -> bool {
        false
    }

    /// Kind-specific preparation at create (after the store's generic part:
    /// uid, timestamps, generation; status already cleared if the kind has a
    /// status subresource). E.g. a namespace's `status.phase: Active`.
    fn prepare_for_create(&self, obj: &mut Value) {
        let _ = obj;
    }

    /// Whether finalizer names must be standard or fully qualified (kube's
    /// `ValidateObjectMeta` for built-in kinds); custom resources take any
    /// name that is a qualified name (kube only warns about them).
    fn checks_finalizer_names(&self) -> bool {
        true
    }

    /// What is done to an object read from storage before it is served or
    /// updated, as kube's decoding from etcd does (a custom resource's
    /// schema defaults). Only for resources stored through
    /// [`crate::Registry::add_shared_version`] (custom resources).
    fn on_read(&self, obj: &mut Value) {
        let _ = obj;
    }

    /// Whether a write of the `status` subresource may also change the
    /// object's labels and annotations. kube's status strategies differ per
    /// kind: most reset the metadata (`ResetObjectMetaForStatus`), some
    /// (namespaces) reset only the spec.
    fn status_writes_metadata(&self) -> bool {
        false
    }

    /// Kind-specific preparation at update (main resource).
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        let _ = (new, old);
    }

    /// Kind-specific preparation of a `status` write (kube's status
    /// strategy's `PrepareForUpdate`), `new` being the object with the
    /// written status; the causes refuse the write (422).
    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) -> Vec<Cause> {
        let _ = (new, old);
        Vec::new()
    }

    /// Field-selector keys this kind accepts beyond `metadata.name` and
    /// `metadata.namespace` (e.g. `type` for secrets, `status.phase` for
    /// namespaces, `involvedObject.kind` for events).
    fn selectable_fields(&self) -> &[&'static str] {
        &[]
    }

    /// Label and field values for selector matching. The default covers
    /// labels, `metadata.name` and `metadata.namespace`, and reads each of
    /// [`Strategy::selectable_fields`] as a dotted path into the object.
    fn attrs(&self, obj: &Value) -> Attrs {
        default_attrs(obj, self.selectable_fields())
    }

    /// Where the scale subresource reads and writes, if served.
    fn scale(&self) -> Option<ScalePaths> {
        None
    }

    /// What a DELETE that removed the object answers with: the deleted
    /// object (true) or a `Status` of kind Success naming it (false, the
    /// default). kube-apiserver's `genericregistry.Store.ReturnDeletedObject`,
    /// set per kind in `pkg/registry/<group>/<kind>/storage/storage.go`. A
    /// delete that only marks the object (finalizers pending) answers with
    /// the object whatever this says.
    fn returns_deleted_object(&self) -> bool {
        false
    }

    /// A deprecation warning sent with every answer about this resource
    /// (kube-apiserver's for a deprecated resource, e.g. `v1 Endpoints is
    /// deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice`).
    fn deprecation_warning(&self) -> Option<&'static str> {
        None
    }

    /// A delete that names no propagation policy orphans the dependents
    /// (kube's `DefaultGarbageCollectionPolicy` of `OrphanDependents`:
    /// ReplicationControllers and batch/v1 Jobs); otherwise it is
    /// Background.
    fn orphans_by_default(&self) -> bool {
        false
    }

    // What else a built-in kind declares about itself. Every list the server
    // keeps per kind (Table printers, OpenAPI definitions, protobuf kinds,
    // federated kinds) is derived from these, and `kinds::check` fails on a
    // kind that leaves one undeclared.

    /// The kind's Table printer: its columns and the function printing an
    /// object's cells together (kube's `TableHandler(columns, printFunc)`,
    /// registered by Go type). `None`: not declared.
    fn printer(&self) -> Option<crate::printers::TablePrinter> {
        None
    }

    /// The kind's OpenAPI schema: generates it (and what it reaches) into a
    /// generator and names its definition. Without it `fieldValidation`
    /// could not find the kind's fields. `None`: not declared.
    fn openapi_schema(&self) -> Option<SchemaFn> {
        None
    }

    /// The kind's protobuf message (kube's `generated.proto`, e.g.
    /// `apps.v1.Deployment`; its `<message>List` serves the kind's lists),
    /// one of [`crate::kinds::protobuf::PACKAGES`]: bodies and answers of
    /// the kind are then served as kube's protobuf. `None`: JSON only (a
    /// protobuf body is refused as kube refuses an unregistered kind).
    fn protobuf(&self) -> Option<&str> {
        None
    }

    /// Whether the federation propagates objects of this kind to member
    /// clusters (one version per kind).
    fn federated(&self) -> bool {
        false
    }

    /// A check of every write against the writer's own permissions, run by
    /// the API server (which holds the authorizer) on the final object.
    fn write_authority(&self) -> WriteAuthority {
        WriteAuthority::None
    }

    /// The `finalize` subresource's update (kube's namespace finalize REST):
    /// the next object from the stored one and the request's body. `None`:
    /// the kind has no such handler.
    fn finalize(&self) -> Option<FinalizeFn> {
        None
    }

    /// How a write of `subresource` makes the next object (kube wires one
    /// REST with its own update strategy per subresource in each kind's
    /// `storage.go`). `None`: the main resource's rules. The default: a
    /// declared `status` subresource is [`SubresourceWrite::Status`].
    fn subresource_write(&self, subresource: &str) -> Option<SubresourceWrite> {
        (subresource == "status" && self.has_status_subresource())
            .then_some(SubresourceWrite::Status)
    }

    /// The version this one is stored as, when it is not its own (kube's
    /// storage versions: HPA `autoscaling/v1` as `v2`, `events.k8s.io`
    /// Events as core `v1`). `None`: stored as served.
    fn stored_as(&self) -> Option<StoredAs> {
        None
    }

    /// The subresources whose request and response bodies carry secrets
    /// (`""`: the resource itself, with every subresource): an audit log
    /// records them at `Metadata` at most, whatever its policy (kube's
    /// Secrets, ServiceAccount tokens). Empty: none.
    fn secret_bodies(&self) -> &'static [&'static str] {
        &[]
    }

    /// What the kind's subresource `name` is, for the handlers to dispatch on
    /// (kube wires one REST per subresource in each kind's `storage.go`).
    /// `None`: not one of the kind's, or served by code of its own elsewhere
    /// (a `proxy`). The default: a declared
    /// subresource with a [`Strategy::subresource_write`] is an object, and
    /// `scale` where [`Strategy::scale`] says where.
    fn subresource(&self, name: &str) -> Option<Subresource> {
        if !self.info().has_subresource(name) {
            return None;
        }
        if let Some(w) = self.subresource_write(name) {
            return Some(Subresource::Object(w));
        }
        (name == "scale" && self.scale().is_some()).then_some(Subresource::Scale)
    }

    /// The kind's own admission plugins, run on its store before the
    /// registry-wide chain (kube's per-kind REST logic that runs as part of a
    /// write: a Service's ClusterIP allocation). Built when the kind's store
    /// is made. Empty: none.
    fn admission(&self) -> Vec<AdmissionFn> {
        Vec::new()
    }
}

/// See [`Strategy::admission`]: builds one plugin from the registry the kind
/// is served by (its storage and options).
pub type AdmissionFn = fn(
    &crate::registry::Registry,
) -> Result<std::sync::Arc<dyn crate::admission::Admission>, ApiError>;

/// See [`Strategy::stored_as`]: the storage version of a version served
/// from another one's storage, and how to convert.
#[derive(Debug, Clone, Copy)]
pub struct StoredAs {
    /// The storage version's group (`""` for core).
    pub group: &'static str,
    /// The storage version.
    pub version: &'static str,
    /// The storage version's kind.
    pub kind: &'static str,
    /// The storage version's resource (its storage prefix is that
    /// resource's).
    pub resource: &'static str,
    /// The converter between the stored form and this version.
    pub converter: fn() -> std::sync::Arc<dyn crate::conversion::Converter>,
    /// Where an older release kept this version's objects apart (moved into
    /// the stored form's prefix at start, [`crate::conversion::migrate`]).
    pub legacy_prefix: &'static str,
}

/// See [`Strategy::subresource_write`]: what a subresource write changes.
#[derive(Debug, Clone, Copy)]
pub enum SubresourceWrite {
    /// kube's status strategies: only `status` changes (labels and
    /// annotations too where [`Strategy::status_writes_metadata`]), then
    /// [`Strategy::prepare_for_status_update`].
    Status,
    /// The main resource's rules without the kind's
    /// [`Strategy::prepare_for_update`] (kube's namespace finalize strategy
    /// keeps the written spec).
    Unprepared,
    /// The kind's own: `(stored, written) -> next` (the written object
    /// decoded and defaulted), e.g. a CSR's `approval` changing only
    /// `status.conditions`.
    Merge(fn(&Value, &Value) -> Value),
}

/// See [`Strategy::subresource`]: what a subresource is and does.
#[derive(Debug, Clone, Copy)]
pub enum Subresource {
    /// GET answers the object; PUT and PATCH make the next object as
    /// declared (`status`, a CSR's `approval`).
    Object(SubresourceWrite),
    /// `autoscaling/v1` `Scale`, read and written at [`Strategy::scale`]'s
    /// paths.
    Scale,
    /// GET answers the object; PUT runs this update (a namespace's
    /// `finalize`), then the write keeps the written spec.
    Finalize(FinalizeFn),
    /// POST runs the kind's own REST on the named object (kube's
    /// subresource REST types wired in the kind's `storage.go`: a
    /// ServiceAccount's `token`, a Pod's `binding`). The body is decoded as the kind its
    /// discovery facts name; the answer is 201 with what the REST made.
    Create(&'static dyn CreateRest),
}

/// See [`Subresource::Create`]: a subresource served by code of its kind's
/// own, which creates something from the request's body.
#[async_trait::async_trait]
pub trait CreateRest: Send + Sync {
    /// Create from `body` (the request's body as JSON, of the kind the
    /// subresource's discovery facts name) for the object `ctx` names.
    async fn create(&self, ctx: RestContext<'_>, body: Value) -> Result<Created, ApiError>;
}

/// What the API server hands a kind's own subresource REST: the object's
/// store, every other store (through the registry), the service-account
/// token issuer, and which object.
pub struct RestContext<'a> {
    /// Every store of the server.
    pub registry: &'a crate::registry::Registry,
    /// The store of the object the subresource is of.
    pub store: &'a crate::store::Store,
    /// Signs service-account tokens.
    pub service_accounts: &'a crate::jwt::ServiceAccountJwt,
    /// The object's namespace (`None`: cluster-scoped).
    pub namespace: Option<&'a str>,
    /// The object's name.
    pub name: &'a str,
    /// The request's write options (`dryRun`, `fieldManager`, the user).
    pub options: &'a crate::store::WriteOptions,
}

/// What a [`CreateRest`] made: the answer's object and the warnings sent
/// with it.
pub struct Created {
    /// The answer (with its `apiVersion` and `kind`).
    pub object: Value,
    /// `Warning` headers.
    pub warnings: Vec<String>,
}

impl std::fmt::Debug for dyn CreateRest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CreateRest")
    }
}

/// See [`Strategy::finalize`]: `(current, requested) -> next`.
pub type FinalizeFn = fn(&Value, &Value) -> Value;

/// A check of a kind's writes against the writer's own permissions (kube
/// does these in the kind's REST storage, which holds the authorizer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WriteAuthority {
    /// No check beyond authorization of the request.
    #[default]
    None,
    /// RBAC escalation prevention for Roles and ClusterRoles: the writer
    /// must hold every permission the role grants (or may `escalate`).
    RoleEscalation,
    /// RBAC escalation prevention for RoleBindings and ClusterRoleBindings:
    /// the writer must hold the referenced role's permissions (or may
    /// `bind` it).
    BindingEscalation,
    /// kube's CertificateApproval and CertificateSigning admission for
    /// CertificateSigningRequests: the subresource writes the kind names
    /// need a verb on `certificates.k8s.io` `signers` named the object's
    /// signer or its `<domain>/*` (a CSR's `approval` needs `approve`, a
    /// `status` write that changes `status.certificate` needs `sign`).
    SignerPermission(&'static SignerChecks),
}

/// See [`WriteAuthority::SignerPermission`]: where an object names its
/// signer, and which subresource writes need which verb on it.
#[derive(Debug, PartialEq, Eq)]
pub struct SignerChecks {
    /// The JSON pointer of the signer's name (`/spec/signerName`).
    pub signer: &'static str,
    /// The checked writes.
    pub writes: &'static [SignerWrite],
}

/// One write [`SignerChecks`] checks.
#[derive(Debug, PartialEq, Eq)]
pub struct SignerWrite {
    /// The subresource written.
    pub subresource: &'static str,
    /// The verb the writer needs on the signer.
    pub verb: &'static str,
    /// Checked only when the write changes the value at this JSON pointer;
    /// `None`: every write.
    pub when_changed: Option<&'static str>,
}

impl SignerChecks {
    /// Whether a write of `subresource` (`None`: the object itself) is
    /// checked at all.
    pub fn checks(&self, subresource: Option<&str>) -> bool {
        self.write(subresource).is_some()
    }

    /// The verb a write of `subresource` from `old` to `new` needs, if any.
    pub fn verb(
        &self,
        subresource: Option<&str>,
        new: &Value,
        old: Option<&Value>,
    ) -> Option<&'static str> {
        let w = self.write(subresource)?;
        match w.when_changed {
            Some(p) if new.pointer(p) == old.and_then(|o| o.pointer(p)) => None,
            _ => Some(w.verb),
        }
    }

    /// The object's signer.
    pub fn signer<'a>(&self, obj: &'a Value) -> &'a str {
        obj.pointer(self.signer)
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    fn write(&self, subresource: Option<&str>) -> Option<&'static SignerWrite> {
        let sub = subresource?;
        self.writes.iter().find(|w| w.subresource == sub)
    }
}

/// Generates a kind's OpenAPI schema into a generator; returns its
/// definition name (`io.k8s.api.apps.v1.Deployment`).
pub type SchemaFn = fn(&mut schemars::generate::SchemaGenerator) -> String;

/// Labels, name, namespace and the given dotted-path fields of an object.
pub fn default_attrs(obj: &Value, fields: &[&str]) -> Attrs {
    let mut attrs = Attrs::default();
    if let Some(labels) = obj.pointer("/metadata/labels").and_then(Value::as_object) {
        for (k, v) in labels {
            if let Some(v) = v.as_str() {
                attrs.labels.insert(k.clone(), v.to_string());
            }
        }
    }
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let ns = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    attrs.fields.insert("metadata.name".into(), name.into());
    attrs.fields.insert("metadata.namespace".into(), ns.into());
    for f in fields {
        let pointer = format!("/{}", f.replace('.', "/"));
        let value = match obj.pointer(&pointer) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => n.to_string(),
            _ => String::new(),
        };
        attrs.fields.insert((*f).to_string(), value);
    }
    attrs
}
