//! [`Definitions`]: the OpenAPI schema of every kind this server serves, keyed
//! by definition name (`io.k8s.api.apps.v1.Deployment`).
//!
//! The built-in schemas are generated once with schemars from `k8s-openapi`'s
//! `JsonSchema` impls, then completed with what those lack: list kinds
//! (`DeploymentList`), `x-kubernetes-group-version-kind`, and the
//! patch/list/map vendor extensions of [`crate::facts`]. Custom resources add
//! theirs at run time ([`Definitions::insert_kind`]); every change bumps the
//! [`Snapshot::generation`], which is what the document caches key on.
//!
//! Schemas are stored in one canonical form: `$ref`s point at
//! `#/components/schemas/<name>` and may have siblings (`description`), as
//! kube-apiserver's swagger 2.0 has them. The v3 writer wraps a `$ref` with
//! siblings in `allOf`; the v2 writer rewrites the prefix to `#/definitions/`.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;
use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

use crate::facts;

/// The prefix of every `$ref` in the stored schemas.
pub const REF_PREFIX: &str = "#/components/schemas/";

/// A group/version/kind, as `x-kubernetes-group-version-kind` lists it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Gvk {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl Gvk {
    pub fn new(group: &str, version: &str, kind: &str) -> Self {
        Self {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
        }
    }

    fn to_json(&self) -> Value {
        json!({"group": self.group, "kind": self.kind, "version": self.version})
    }
}

/// `#/components/schemas/<name>`.
pub fn schema_ref(name: &str) -> String {
    format!("{REF_PREFIX}{name}")
}

/// The definition a `$ref` points at, for either document flavour.
pub fn ref_target(reference: &str) -> Option<&str> {
    reference
        .strip_prefix(REF_PREFIX)
        .or_else(|| reference.strip_prefix("#/definitions/"))
}

/// An immutable view of all definitions at one generation.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Bumped by every change; document caches key on it.
    pub generation: u64,
    schemas: BTreeMap<String, Arc<Value>>,
    by_gvk: BTreeMap<Gvk, String>,
}

impl Snapshot {
    /// The schema of a definition.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.schemas.get(name).map(|v| v.as_ref())
    }

    /// Every definition, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.schemas.iter().map(|(k, v)| (k.as_str(), v.as_ref()))
    }

    /// How many definitions there are.
    pub fn len(&self) -> usize {
        self.schemas.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.schemas.is_empty()
    }

    /// The definition whose `x-kubernetes-group-version-kind` names `gvk`.
    pub fn definition_for(&self, gvk: &Gvk) -> Option<&str> {
        self.by_gvk.get(gvk).map(String::as_str)
    }

    /// Follow `$ref`s (and a single-element `allOf`) from `schema` to the
    /// schema that describes the value. Stops after a few hops on cycles.
    pub fn resolve<'a>(&'a self, mut schema: &'a Value) -> &'a Value {
        for _ in 0..16 {
            if let Some(target) = schema
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(ref_target)
                .and_then(|name| self.get(name))
            {
                schema = target;
                continue;
            }
            if schema.get("properties").is_none()
                && let Some([only]) = schema
                    .get("allOf")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
            {
                schema = only;
                continue;
            }
            break;
        }
        schema
    }

    fn index(&mut self) {
        self.by_gvk.clear();
        for (name, schema) in &self.schemas {
            for gvk in gvks_of(schema) {
                self.by_gvk.entry(gvk).or_insert_with(|| name.clone());
            }
        }
    }
}

fn gvks_of(schema: &Value) -> Vec<Gvk> {
    schema
        .get("x-kubernetes-group-version-kind")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|g| {
                    Some(Gvk::new(
                        g.get("group")?.as_str()?,
                        g.get("version")?.as_str()?,
                        g.get("kind")?.as_str()?,
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// All definitions: the built-in base plus what was added at run time.
#[derive(Debug)]
pub struct Definitions {
    current: RwLock<Arc<Snapshot>>,
}

/// The process-wide definitions (built on first use).
pub fn definitions() -> &'static Definitions {
    static DEFS: OnceLock<Definitions> = OnceLock::new();
    DEFS.get_or_init(|| {
        let defs = Definitions {
            current: RwLock::new(Arc::new(builtin_snapshot())),
        };
        #[cfg(any(test, feature = "test-kinds"))]
        defs.add_kinds(&test_kinds());
        defs
    })
}

/// For the tests of this crate and of crates below the registry (which
/// cannot ask the registry for its kinds): a few served kinds. The server
/// itself gets every kind from the registry's declarations.
#[cfg(any(test, feature = "test-kinds"))]
fn test_kinds() -> Vec<KindSchema> {
    use k8s_openapi::api::{apps, autoscaling, batch, core, policy, rbac};
    #[allow(unused_mut)] // only this crate's tests add the federation kinds
    let mut kinds = vec![
        KindSchema::of::<core::v1::ConfigMap>(),
        KindSchema::of::<core::v1::Pod>(),
        KindSchema::of::<core::v1::Secret>(),
        KindSchema::of::<core::v1::Service>(),
        KindSchema::of::<core::v1::Namespace>(),
        KindSchema::of::<core::v1::LimitRange>(),
        KindSchema::of::<apps::v1::Deployment>(),
        KindSchema::of::<apps::v1::StatefulSet>(),
        KindSchema::of::<batch::v1::Job>(),
        KindSchema::of::<autoscaling::v2::HorizontalPodAutoscaler>(),
        KindSchema::of::<policy::v1::PodDisruptionBudget>(),
        KindSchema::of::<rbac::v1::Role>(),
    ];
    #[cfg(test)]
    kinds.push(KindSchema::of::<ubernetes_api::Cluster>());
    kinds
}

impl Definitions {
    /// The current view; cheap (an `Arc` clone).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.read().clone()
    }

    /// The schema of one definition (cloned).
    pub fn get(&self, name: &str) -> Option<Value> {
        self.snapshot().get(name).cloned()
    }

    /// Add or replace a definition as is.
    pub fn insert(&self, name: &str, schema: Value) {
        self.update(|schemas| {
            schemas.insert(name.to_string(), Arc::new(schema));
        });
    }

    /// Add or replace the schema of a kind (e.g. a CRD version): stamps
    /// `x-kubernetes-group-version-kind` on it and adds `<definition>List`.
    pub fn insert_kind(&self, definition: &str, mut schema: Value, gvk: Gvk) {
        set_gvk(&mut schema, &gvk);
        let list = list_schema(definition, &gvk);
        self.update(|schemas| {
            schemas.insert(definition.to_string(), Arc::new(schema));
            schemas.insert(format!("{definition}List"), Arc::new(list));
        });
    }

    /// Remove a definition (and its `List`, as [`Self::insert_kind`] adds it).
    pub fn remove_kind(&self, definition: &str) {
        self.update(|schemas| {
            schemas.remove(definition);
            schemas.remove(&format!("{definition}List"));
        });
    }

    fn update(&self, change: impl FnOnce(&mut BTreeMap<String, Arc<Value>>)) {
        let mut guard = self.current.write();
        let mut schemas = guard.schemas.clone();
        change(&mut schemas);
        let mut next = Snapshot {
            generation: guard.generation + 1,
            schemas,
            by_gvk: BTreeMap::new(),
        };
        next.index();
        *guard = Arc::new(next);
    }
}

/// A built-in kind: its Rust type registers its schema, the rest says how
/// it is served.
pub(crate) struct Builtin {
    pub(crate) definition: String,
    pub(crate) gvk: Gvk,
    pub(crate) list: bool,
}

pub(crate) fn kind<T: JsonSchema + k8s_openapi::Resource>(
    generator: &mut SchemaGenerator,
    list: bool,
) -> Builtin {
    generator.subschema_for::<T>();
    Builtin {
        definition: T::schema_name().into_owned(),
        gvk: Gvk::new(T::GROUP, T::VERSION, T::KIND),
        list,
    }
}

/// The group/versions whose `DeleteOptions` and `WatchEvent` kube-apiserver
/// lists in their `x-kubernetes-group-version-kind`.
const SERVED_GROUP_VERSIONS: &[(&str, &str)] = &[
    ("", "v1"),
    ("admissionregistration.k8s.io", "v1"),
    ("apiextensions.k8s.io", "v1"),
    ("apiregistration.k8s.io", "v1"),
    ("apps", "v1"),
    ("authentication.k8s.io", "v1"),
    ("authorization.k8s.io", "v1"),
    ("autoscaling", "v1"),
    ("autoscaling", "v2"),
    ("batch", "v1"),
    ("certificates.k8s.io", "v1"),
    ("coordination.k8s.io", "v1"),
    ("discovery.k8s.io", "v1"),
    ("events.k8s.io", "v1"),
    ("federation", "v1beta1"),
    ("flowcontrol.apiserver.k8s.io", "v1"),
    ("networking.k8s.io", "v1"),
    ("node.k8s.io", "v1"),
    ("policy", "v1"),
    ("rbac.authorization.k8s.io", "v1"),
    ("resource.k8s.io", "v1"),
    ("scheduling.k8s.io", "v1"),
    ("storage.k8s.io", "v1"),
];

fn builtin_snapshot() -> Snapshot {
    use k8s_openapi::api::{authentication, authorization, autoscaling, core, policy};
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions;
    use k8s_openapi::apimachinery::pkg::apis::meta;

    let mut generator = SchemaGenerator::new(settings());
    let kinds = vec![
        kind::<core::v1::Binding>(&mut generator, false),
        kind::<autoscaling::v1::Scale>(&mut generator, false),
        kind::<policy::v1::Eviction>(&mut generator, false),
        kind::<authorization::v1::LocalSubjectAccessReview>(&mut generator, false),
        kind::<authorization::v1::SelfSubjectAccessReview>(&mut generator, false),
        kind::<authorization::v1::SelfSubjectRulesReview>(&mut generator, false),
        kind::<authorization::v1::SubjectAccessReview>(&mut generator, false),
        kind::<authentication::v1::SelfSubjectReview>(&mut generator, false),
        kind::<authentication::v1::TokenRequest>(&mut generator, false),
        kind::<authentication::v1::TokenReview>(&mut generator, false),
        kind::<apiextensions::v1::CustomResourceDefinition>(&mut generator, true),
        kind::<core::v1::ComponentStatus>(&mut generator, true),
        kind::<meta::v1::Status>(&mut generator, false),
        kind::<meta::v1::APIResourceList>(&mut generator, false),
        kind::<meta::v1::APIGroup>(&mut generator, false),
        kind::<meta::v1::APIGroupList>(&mut generator, false),
        kind::<meta::v1::APIVersions>(&mut generator, false),
    ];
    generator.subschema_for::<meta::v1::DeleteOptions>();
    generator.subschema_for::<meta::v1::WatchEvent<k8s_openapi::api::core::v1::Pod>>();
    generator.subschema_for::<meta::v1::ListMeta>();
    generator.subschema_for::<meta::v1::Patch>();
    generator.subschema_for::<k8s_openapi::apimachinery::pkg::version::Info>();
    let mut schemas: BTreeMap<String, Value> =
        generator.take_definitions(false).into_iter().collect();

    // One shared GVK list for the option kinds, as kube-apiserver has it.
    let shared_gvks = |kind: &str| -> Vec<Gvk> {
        SERVED_GROUP_VERSIONS
            .iter()
            .map(|(g, v)| Gvk::new(g, v, kind))
            .collect()
    };
    for (name, kind) in [
        (
            "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
            "DeleteOptions",
        ),
        (
            "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
            "WatchEvent",
        ),
    ] {
        if let Some(schema) = schemas.get_mut(name) {
            let list: Vec<Value> = shared_gvks(kind).iter().map(Gvk::to_json).collect();
            if let Some(obj) = schema.as_object_mut() {
                obj.insert("x-kubernetes-group-version-kind".into(), Value::Array(list));
            }
        }
    }

    finish(&mut schemas, kinds);

    let mut snapshot = Snapshot {
        generation: 1,
        schemas: schemas.into_iter().map(|(k, v)| (k, Arc::new(v))).collect(),
        by_gvk: BTreeMap::new(),
    };
    snapshot.index();
    snapshot
}

/// How every schema is generated (OpenAPI 3 flavour, no transforms: the
/// writers do their own).
fn settings() -> SchemaSettings {
    SchemaSettings::openapi3().with(|s| {
        s.transforms = Vec::new();
        s.meta_schema = None;
    })
}

/// What the generator alone does not give: each kind's
/// `x-kubernetes-group-version-kind` and `<Kind>List`, metadata not
/// required, the nullable forms folded, the facts injected.
fn finish(schemas: &mut BTreeMap<String, Value>, kinds: Vec<Builtin>) {
    for Builtin {
        definition,
        gvk,
        list,
    } in kinds
    {
        if let Some(schema) = schemas.get_mut(&definition) {
            set_gvk(schema, &gvk);
            drop_required_metadata(schema);
        }
        if list {
            let list_schema = list_schema(&definition, &gvk);
            schemas.insert(format!("{definition}List"), list_schema);
        }
    }
    for schema in schemas.values_mut() {
        normalize(schema);
    }
    apply_facts(schemas);
}

/// A served kind's schema, as the kind's declaration gives it: a function
/// that generates the schema of its Rust type (and everything it reaches)
/// into a generator and returns its definition name. The registry's kind
/// declarations carry such a function (this crate does not know the
/// registry); the API server hands them to [`Definitions::add_kinds`].
#[derive(Clone)]
pub struct KindSchema {
    /// Generates the schema; returns the definition name
    /// (`io.k8s.api.apps.v1.Deployment`).
    pub register: fn(&mut SchemaGenerator) -> String,
    /// The kind's group/version/kind (for `x-kubernetes-group-version-kind`).
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl std::fmt::Debug for KindSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "KindSchema({}/{} {})",
            self.group, self.version, self.kind
        )
    }
}

fn register_type<T: JsonSchema>(generator: &mut SchemaGenerator) -> String {
    generator.subschema_for::<T>();
    T::schema_name().into_owned()
}

impl KindSchema {
    /// The schema of a `k8s-openapi`-style type.
    pub fn of<T: JsonSchema + k8s_openapi::Resource>() -> Self {
        Self {
            register: register_type::<T>,
            group: T::GROUP.to_string(),
            version: T::VERSION.to_string(),
            kind: T::KIND.to_string(),
        }
    }

    fn gvk(&self) -> Gvk {
        Gvk::new(&self.group, &self.version, &self.kind)
    }
}

impl Definitions {
    /// Add the schemas of served kinds (each with its `<Kind>List`) and of
    /// everything they reach, completed as the built-in base is. The API
    /// server calls this with every kind its registry declares, so a kind's
    /// definition comes from its one declaration. Kinds already present
    /// (under their GVK) are not generated again.
    pub fn add_kinds(&self, kinds: &[KindSchema]) {
        let snapshot = self.snapshot();
        let missing: Vec<&KindSchema> = kinds
            .iter()
            .filter(|k| snapshot.definition_for(&k.gvk()).is_none())
            .collect();
        if missing.is_empty() {
            return;
        }
        let mut generator = SchemaGenerator::new(settings());
        let builtins: Vec<Builtin> = missing
            .iter()
            .map(|k| Builtin {
                definition: (k.register)(&mut generator),
                gvk: k.gvk(),
                list: true,
            })
            .collect();
        let mut kind_names: Vec<String> = Vec::new();
        for b in &builtins {
            kind_names.push(b.definition.clone());
            kind_names.push(format!("{}List", b.definition));
        }
        let mut schemas: BTreeMap<String, Value> =
            generator.take_definitions(false).into_iter().collect();
        finish(&mut schemas, builtins);
        self.update(|all| {
            for (name, schema) in schemas {
                // A kind (and its list) gets its GVK; what it merely reaches
                // and the base already has (with the base's own additions,
                // e.g. DeleteOptions' GVK list) stays as it is.
                if kind_names.contains(&name) {
                    all.insert(name, Arc::new(schema));
                } else {
                    all.entry(name).or_insert_with(|| Arc::new(schema));
                }
            }
        });
    }
}

fn set_gvk(schema: &mut Value, gvk: &Gvk) {
    if let Some(obj) = schema.as_object_mut() {
        obj.insert(
            "x-kubernetes-group-version-kind".into(),
            Value::Array(vec![gvk.to_json()]),
        );
    }
}

/// `k8s-openapi` marks `metadata` required on every kind (it is not an
/// `Option` in Rust); kube-apiserver's schemas do not.
fn drop_required_metadata(schema: &mut Value) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    let empty = match obj.get_mut("required").and_then(Value::as_array_mut) {
        Some(required) => {
            required.retain(|r| r != "metadata");
            required.is_empty()
        }
        None => false,
    };
    if empty {
        obj.remove("required");
    }
}

/// The `<Kind>List` schema kube-apiserver publishes next to each kind.
fn list_schema(definition: &str, gvk: &Gvk) -> Value {
    let kind = &gvk.kind;
    json!({
        "description": format!("{kind}List is a list of {kind} objects."),
        "type": "object",
        "properties": {
            "apiVersion": {
                "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
                "type": "string"
            },
            "items": {
                "description": format!("items is the list of {kind} objects."),
                "type": "array",
                "items": {"$ref": schema_ref(definition)}
            },
            "kind": {
                "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
                "type": "string"
            },
            "metadata": {
                "$ref": schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"),
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
            }
        },
        "required": ["items"],
        "x-kubernetes-group-version-kind": [
            {"group": gvk.group, "kind": format!("{kind}List"), "version": gvk.version}
        ]
    })
}

/// Make every schema well formed for both document flavours and for
/// kubectl's v2 parser (which rejects an array without `items`).
///
/// Also folds schemars' nullable forms (our own kinds derive `JsonSchema`),
/// which neither OpenAPI 3.0 nor swagger 2.0 has: `"type": [T, "null"]`
/// becomes `"type": T` and `"anyOf": [X, {"type": "null"}]` becomes `X`.
fn normalize(schema: &mut Value) {
    match schema {
        Value::Object(obj) => {
            if let Some(Value::Array(types)) = obj.get("type") {
                let non_null: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                if let [only] = non_null.as_slice() {
                    obj.insert("type".into(), only.clone());
                }
            }
            let folded = match obj
                .get("anyOf")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
            {
                Some([x, null] | [null, x]) if null == &json!({"type": "null"}) => {
                    x.as_object().cloned()
                }
                _ => None,
            };
            if let Some(inner) = folded {
                obj.remove("anyOf");
                for (k, v) in inner {
                    obj.entry(k).or_insert(v);
                }
            }
            if obj.get("type").and_then(Value::as_str) == Some("array")
                && !obj.contains_key("items")
            {
                obj.insert("items".into(), json!({}));
            }
            for value in obj.values_mut() {
                normalize(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize),
        _ => {}
    }
}

/// Inject the vendor extensions of [`facts`] into the properties they describe.
fn apply_facts(schemas: &mut BTreeMap<String, Value>) {
    for fact in facts::FIELD_FACTS {
        let Some(property) = schemas
            .get_mut(fact.definition)
            .and_then(|s| s.get_mut("properties"))
            .and_then(|p| p.get_mut(fact.field))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        insert_facts(property, fact);
    }
    for name in facts::ATOMIC_DEFINITIONS {
        if let Some(obj) = schemas.get_mut(*name).and_then(Value::as_object_mut) {
            obj.insert("x-kubernetes-map-type".into(), json!("atomic"));
        }
    }
}

fn insert_facts(property: &mut Map<String, Value>, fact: &facts::FieldFact) {
    if let Some(keys) = (!fact.list_map_keys.is_empty()).then_some(fact.list_map_keys) {
        property.insert("x-kubernetes-list-map-keys".into(), json!(keys));
    }
    if let Some(t) = fact.list_type {
        property.insert("x-kubernetes-list-type".into(), json!(t));
    }
    if let Some(t) = fact.map_type {
        property.insert("x-kubernetes-map-type".into(), json!(t));
    }
    if let Some(k) = fact.patch_merge_key {
        property.insert("x-kubernetes-patch-merge-key".into(), json!(k));
    }
    if let Some(s) = fact.patch_strategy {
        property.insert("x-kubernetes-patch-strategy".into(), json!(s));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_schema_carries_its_gvk() {
        let d = definitions()
            .get("io.k8s.api.apps.v1.Deployment")
            .expect("Deployment");
        assert_eq!(
            d["x-kubernetes-group-version-kind"],
            json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
        );
        assert_eq!(
            d["properties"]["spec"]["$ref"],
            json!("#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec")
        );
    }

    #[test]
    fn list_kinds_are_generated_with_their_own_gvk() {
        let l = definitions()
            .get("io.k8s.api.core.v1.ConfigMapList")
            .expect("ConfigMapList");
        assert_eq!(
            l["x-kubernetes-group-version-kind"][0]["kind"],
            json!("ConfigMapList")
        );
        assert_eq!(
            l["properties"]["items"]["items"]["$ref"],
            json!("#/components/schemas/io.k8s.api.core.v1.ConfigMap")
        );
    }

    #[test]
    fn kinds_do_not_require_metadata() {
        let cm = definitions()
            .get("io.k8s.api.core.v1.ConfigMap")
            .expect("ConfigMap");
        assert!(cm.get("required").is_none(), "{:?}", cm.get("required"));
    }

    #[test]
    fn patch_extensions_are_injected() {
        let spec = definitions()
            .get("io.k8s.api.core.v1.PodSpec")
            .expect("PodSpec");
        let containers = &spec["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-patch-strategy"], json!("merge"));
        assert_eq!(containers["x-kubernetes-patch-merge-key"], json!("name"));
        assert_eq!(containers["x-kubernetes-list-type"], json!("map"));
    }

    #[test]
    fn federation_cluster_is_served_without_nullable_forms() {
        let snap = definitions().snapshot();
        let cluster = snap
            .get("io.ubernetes.federation.v1beta1.Cluster")
            .expect("Cluster");
        assert_eq!(
            cluster["x-kubernetes-group-version-kind"],
            json!([{"group": "federation", "kind": "Cluster", "version": "v1beta1"}])
        );
        assert!(
            snap.get("io.ubernetes.federation.v1beta1.ClusterList")
                .is_some()
        );
        fn walk(v: &Value, at: &str) {
            if let Value::Object(o) = v {
                assert!(
                    !o.get("type").is_some_and(Value::is_array),
                    "type list at {at}"
                );
                assert!(!o.contains_key("anyOf"), "anyOf at {at}");
                o.iter().for_each(|(k, x)| walk(x, &format!("{at}/{k}")));
            }
        }
        for (name, schema) in snap.iter().filter(|(n, _)| n.starts_with("io.ubernetes.")) {
            walk(schema, name);
        }
    }

    #[test]
    fn every_ref_points_at_a_definition() {
        let snap = definitions().snapshot();
        fn walk(v: &Value, snap: &Snapshot, from: &str) {
            match v {
                Value::Object(o) => {
                    if let Some(r) = o.get("$ref").and_then(Value::as_str) {
                        let target = ref_target(r).expect("known prefix");
                        assert!(snap.get(target).is_some(), "{from}: dangling {r}");
                    }
                    o.values().for_each(|x| walk(x, snap, from));
                }
                Value::Array(a) => a.iter().for_each(|x| walk(x, snap, from)),
                _ => {}
            }
        }
        for (name, schema) in snap.iter() {
            walk(schema, &snap, name);
        }
    }

    #[test]
    fn inserting_a_kind_bumps_the_generation_and_indexes_its_gvk() {
        let defs = Definitions {
            current: RwLock::new(Arc::new(Snapshot::default())),
        };
        let before = defs.snapshot().generation;
        defs.insert_kind(
            "com.example.v1.Widget",
            json!({"type": "object", "properties": {"spec": {"type": "object"}}}),
            Gvk::new("example.com", "v1", "Widget"),
        );
        let snap = defs.snapshot();
        assert_eq!(snap.generation, before + 1);
        assert_eq!(
            snap.definition_for(&Gvk::new("example.com", "v1", "Widget")),
            Some("com.example.v1.Widget")
        );
        assert!(snap.get("com.example.v1.WidgetList").is_some());
        defs.remove_kind("com.example.v1.Widget");
        assert!(defs.snapshot().get("com.example.v1.Widget").is_none());
    }
}
