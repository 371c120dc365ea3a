//! The [`Strategy`] of one version of a custom resource (kube's
//! `registry/customresource/strategy.go` with the CRD handler's
//! unstructured decoding): `normalize` checks `apiVersion`/`kind`, prunes
//! unknown fields and applies structural defaults (no typed decode);
//! validation is the schema's value validation (the store does ObjectMeta);
//! generation is tracked; status and scale subresources, field selectors
//! (`selectableFields`) and printer columns come from the CRD version.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value};
use ubernetes_apimachinery::{ApiError, Cause, ResourceInfo};
use ubernetes_registry::Strategy;
use ubernetes_registry::strategy::ScalePaths;

use crate::printer::printer_columns;
use crate::rules::Validator;
use crate::schema::Structural;
use crate::status::{resource_info, version};

/// The policy of one CRD version's custom resources.
#[derive(Debug, Clone)]
pub struct CustomResource {
    info: ResourceInfo,
    schema: Structural,
    scale: Option<ScalePaths>,
    selectable: Vec<&'static str>,
    columns: Vec<Value>,
    /// The schema's `x-kubernetes-validations`, compiled once.
    rules: Option<Arc<Validator>>,
}

/// `.spec.replicas` → `/spec/replicas`.
fn json_path_to_pointer(p: &str) -> String {
    p.split('.')
        .filter(|s| !s.is_empty())
        .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// Field-selector keys live as long as the process: interned so that
/// re-creating a CRD's strategy does not leak again.
fn intern(s: &str) -> &'static str {
    static SET: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let set = SET.get_or_init(|| Mutex::new(HashSet::new()));
    let mut guard = set.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(x) = guard.get(s) {
        return x;
    }
    let leaked: &'static str = Box::leak(s.to_string().into_boxed_str());
    guard.insert(leaked);
    leaked
}

impl CustomResource {
    /// The strategy of `crd`'s version `version_name`.
    pub fn new(crd: &Value, version_name: &str) -> Self {
        let v = version(crd, version_name);
        let schema = Structural::unchecked(
            v.and_then(|v| v.pointer("/schema/openAPIV3Schema"))
                .filter(|s| s.is_object()),
        );
        let scale = v.and_then(|v| v.pointer("/subresources/scale")).map(|s| {
            let get = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("");
            ScalePaths {
                spec_replicas: json_path_to_pointer(get("specReplicasPath")),
                status_replicas: json_path_to_pointer(get("statusReplicasPath")),
                selector: Some(get("labelSelectorPath"))
                    .filter(|p| !p.is_empty())
                    .map(json_path_to_pointer),
            }
        });
        let selectable = v
            .and_then(|v| v.get("selectableFields"))
            .and_then(Value::as_array)
            .map(|fields| {
                fields
                    .iter()
                    .filter_map(|f| f.get("jsonPath").and_then(Value::as_str))
                    .map(|p| intern(p.trim_start_matches('.')))
                    .collect()
            })
            .unwrap_or_default();
        let rules = Validator::new(schema.schema()).map(Arc::new);
        Self {
            info: resource_info(crd, version_name),
            rules,
            schema,
            scale,
            selectable,
            columns: printer_columns(crd, version_name),
        }
    }

    /// The version's structural schema.
    pub fn structural(&self) -> &Structural {
        &self.schema
    }

    /// The printer columns (see [`crate::printer::printer_columns`]).
    pub fn printer_columns(&self) -> &[Value] {
        &self.columns
    }

    /// The paths [`Strategy::normalize`] would prune from `obj`
    /// (`spec.foo`), for `fieldValidation=Warn/Strict`.
    pub fn unknown_fields(&self, obj: &Value) -> Vec<String> {
        let mut copy = obj.clone();
        self.schema.prune(&mut copy)
    }

    /// Defaulting on read, as kube applies it to objects from storage.
    pub fn default_on_read(&self, obj: &mut Value) {
        self.schema.apply_defaults(obj);
    }

    /// The CEL rules' causes, unless schema validation already found the
    /// object's shape wrong (kube's `hasBlockingErr`: a type, enum,
    /// required, length or item-count error),
    /// where rules are not run and one cause says so.
    fn rule_causes(
        &self,
        schema_causes: &[Cause],
        obj: &Value,
        old: Option<&Value>,
    ) -> Vec<(Cause, bool)> {
        let Some(rules) = &self.rules else {
            return Vec::new();
        };
        const BLOCKING: [&str; 5] = [
            "FieldValueNotSupported",
            "FieldValueRequired",
            "FieldValueTooLong",
            "FieldValueTooMany",
            "FieldValueTypeInvalid",
        ];
        if schema_causes
            .iter()
            .any(|c| BLOCKING.contains(&c.reason.as_str()))
        {
            return vec![(
                Cause::new(
                    "FieldValueInvalid",
                    "Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
                    "<nil>",
                ),
                false,
            )];
        }
        rules.validate(obj, old)
    }

    fn check_type_meta(&self, map: &mut Map<String, Value>) -> Result<(), ApiError> {
        let expected = self.info.api_version();
        if let Some(v) = map.get("apiVersion").and_then(Value::as_str)
            && !v.is_empty()
            && v != expected
        {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({expected})"
            )));
        }
        if let Some(k) = map.get("kind").and_then(Value::as_str)
            && !k.is_empty()
            && k != self.info.kind
        {
            return Err(ApiError::bad_request(format!(
                "{k} in version \"{}\" cannot be handled as a {}: no kind \"{k}\" is registered for version \"{expected}\"",
                self.info.version, self.info.kind
            )));
        }
        Ok(())
    }
}

impl Strategy for CustomResource {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn on_read(&self, obj: &mut Value) {
        self.default_on_read(obj);
    }

    fn checks_finalizer_names(&self) -> bool {
        false
    }

    fn normalize(&self, obj: Value) -> Result<Value, ApiError> {
        let Value::Object(mut map) = obj else {
            return Err(ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: json: cannot unmarshal non-object into Go value of type map[string]interface {{}}",
                self.info.kind, self.info.version, self.info.kind
            )));
        };
        self.check_type_meta(&mut map)?;
        map.remove("apiVersion");
        map.remove("kind");
        let mut out = Map::new();
        out.insert("apiVersion".into(), Value::String(self.info.api_version()));
        out.insert("kind".into(), Value::String(self.info.kind.clone()));
        out.extend(map);
        let mut obj = Value::Object(out);
        self.schema.prune(&mut obj);
        self.schema.apply_defaults(&mut obj);
        Ok(obj)
    }

    fn validate_create(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = self.schema.validate(obj);
        let rules = self.rule_causes(&causes, obj, None);
        causes.extend(rules.into_iter().map(|(c, _)| c));
        causes
    }

    /// kube's validation ratcheting (`CRDValidationRatcheting`, on by
    /// default): an error about a value the update left unchanged is
    /// dropped, so objects written under an older schema stay updatable.
    /// CEL rule failures are ratcheted the same way, except those of
    /// transition rules (kube's `UsesOldSelf`).
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let schema_causes = self.schema.validate(new);
        let rules = self.rule_causes(&schema_causes, new, Some(old));
        schema_causes
            .into_iter()
            .filter(|c| !unchanged(&c.field, &c.reason, new, old))
            .chain(
                rules
                    .into_iter()
                    .filter(|(c, transition)| {
                        *transition || !unchanged(&c.field, &c.reason, new, old)
                    })
                    .map(|(c, _)| c),
            )
            .collect()
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn selectable_fields(&self) -> &[&'static str] {
        &self.selectable
    }

    fn scale(&self) -> Option<ScalePaths> {
        self.scale.clone()
    }
}

/// `spec.a[0].b` → `/spec/a/0/b`.
fn field_pointer(field: &str) -> String {
    let mut out = String::new();
    for part in field.split('.').filter(|p| !p.is_empty()) {
        let mut rest = part;
        let name_end = rest.find('[').unwrap_or(rest.len());
        let name = &rest[..name_end];
        if !name.is_empty() {
            out.push('/');
            out.push_str(&name.replace('~', "~0").replace('/', "~1"));
        }
        rest = &rest[name_end..];
        while let Some(close) = rest.find(']') {
            out.push('/');
            out.push_str(&rest[1..close]);
            rest = &rest[close + 1..];
        }
    }
    out
}

/// Whether the value a cause is about is the same in `new` and `old` (for
/// a missing required field: its parent).
fn unchanged(field: &str, reason: &str, new: &Value, old: &Value) -> bool {
    let mut pointer = field_pointer(field);
    if reason == "FieldValueRequired" {
        pointer.truncate(pointer.rfind('/').unwrap_or(0));
    }
    match (new.pointer(&pointer), old.pointer(&pointer)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// The strategy of `crd`'s version `version_name` as a trait object.
pub fn custom_resource_strategy(crd: &Value, version_name: &str) -> Arc<dyn Strategy> {
    Arc::new(CustomResource::new(crd, version_name))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;
    use serde_json::json;

    fn crd() -> Value {
        json!({
            "metadata": {"name": "things.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "things", "singular": "thing", "kind": "Thing", "listKind": "ThingList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "selectableFields": [{"jsonPath": ".spec.color"}],
                    "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}},
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {
                            "color": {"type": "string", "default": "blue"},
                            "replicas": {"type": "integer"}}},
                        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}, "selector": {"type": "string"}}}}}}}]}
        })
    }

    #[test]
    fn normalize_sets_type_meta_prunes_and_defaults() {
        let s = custom_resource_strategy(&crd(), "v1");
        let n = s
            .normalize(json!({"metadata": {"name": "a"}, "spec": {"x": 1}, "junk": 2}))
            .unwrap();
        assert_eq!(
            n,
            json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "a"}, "spec": {"color": "blue"}})
        );
    }

    #[test]
    fn a_wrong_api_version_is_a_bad_request() {
        let s = custom_resource_strategy(&crd(), "v1");
        let e = s
            .normalize(json!({"apiVersion": "example.com/v2", "kind": "Thing"}))
            .unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "the API version in the data (example.com/v2) does not match the expected API version (example.com/v1)"
        );
    }

    #[test]
    fn subresources_scale_and_field_selectors_come_from_the_crd() {
        let s = custom_resource_strategy(&crd(), "v1");
        assert!(s.has_status_subresource());
        assert!(s.tracks_generation());
        assert_eq!(
            s.scale(),
            Some(ScalePaths {
                spec_replicas: "/spec/replicas".into(),
                status_replicas: "/status/replicas".into(),
                selector: Some("/status/selector".into()),
            })
        );
        assert_eq!(s.selectable_fields(), &["spec.color"]);
        let attrs = s.attrs(&json!({"metadata": {"name": "a"}, "spec": {"color": "red"}}));
        assert_eq!(attrs.fields.get("spec.color"), Some("red"));
    }

    #[test]
    fn unchanged_invalid_values_are_ratcheted_on_update() {
        let mut c = crd();
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["replicas"]["maximum"] = json!(5);
        let s = custom_resource_strategy(&c, "v1");
        let old = json!({"spec": {"color": "red", "replicas": 9}});
        let new = json!({"spec": {"color": "blue", "replicas": 9}});
        assert_eq!(s.validate_create(&new).len(), 1);
        assert!(s.validate_update(&new, &old).is_empty());
        let changed = json!({"spec": {"color": "blue", "replicas": 8}});
        assert_eq!(
            s.validate_update(&changed, &old)[0].message,
            "Invalid value: 8: spec.replicas in body should be less than or equal to 5"
        );
        assert_eq!(field_pointer("spec.list[2].a"), "/spec/list/2/a");
    }

    #[test]
    fn cel_rules_run_unless_the_schema_found_the_shape_wrong() {
        let mut c = crd();
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] =
            json!([{"rule": "self.color != 'red'", "message": "no red"}]);
        let s = custom_resource_strategy(&c, "v1");
        let ok = json!({"spec": {"color": "blue", "replicas": 1}});
        assert!(s.validate_create(&ok).is_empty());
        let red = json!({"spec": {"color": "red", "replicas": 1}});
        let causes = s.validate_create(&red);
        assert_eq!(
            (causes[0].field.as_str(), causes[0].message.as_str()),
            ("spec", "Invalid value: no red")
        );
        // Unchanged on update: ratcheted.
        assert!(s.validate_update(&red, &red).is_empty());
        let wrong_type = json!({"spec": {"color": "red", "replicas": "x"}});
        let causes = s.validate_create(&wrong_type);
        assert_eq!(causes.len(), 2, "{causes:?}");
        assert_eq!(
            causes[1].message,
            "Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
        );
    }

    #[test]
    fn unknown_fields_are_listed_without_touching_the_object() {
        let c = CustomResource::new(&crd(), "v1");
        let obj = json!({"spec": {"colour": "red"}});
        assert_eq!(c.unknown_fields(&obj), vec!["spec.colour"]);
        assert_eq!(obj["spec"]["colour"], "red");
    }
}
