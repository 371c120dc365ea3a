//! The `apiextensions.k8s.io/v1` `customresourcedefinitions` resource: its
//! [`ResourceInfo`] (cluster-scoped, `status` subresource, shortNames
//! `crd`/`crds`, category `api-extensions`) and its [`Strategy`], the
//! registry's [`Builtin`] over k8s-openapi's `CustomResourceDefinition` with
//! kube's defaults (`SetDefaults_CustomResourceDefinition*`), kube's
//! validation (`apis/apiextensions/validation`: names, group, scope,
//! versions, structural schemas, subresources, printer columns,
//! conversion, stored versions; immutable group/plural, and scope/kind once
//! established) and kube's `PrepareForCreate`/`PrepareForUpdate`.

use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition, CustomResourceDefinitionNames,
};
use serde_json::{Map, Value, json};
use ubernetes_apimachinery::error::field;
use ubernetes_apimachinery::{ApiError, Cause, ResourceInfo};
use ubernetes_registry::Strategy;
use ubernetes_registry::kinds::builtin::{Builtin, info};
use ubernetes_registry::kinds::names::{dns1035_label, dns1123_subdomain};
use ubernetes_registry::printers::{self, TablePrinter};

use crate::printer::is_simple_json_path;
use crate::schema::{child, index, validate_schema};
use crate::status::{is_established, storage_version};

/// Discovery facts of `customresourcedefinitions`, as kube-apiserver's.
pub fn crd_info() -> ResourceInfo {
    info::<CustomResourceDefinition>(
        "customresourcedefinition",
        &["crd", "crds"],
        &["api-extensions"],
        &["status"],
    )
}

/// The strategy of `customresourcedefinitions`.
pub fn crd_strategy() -> Arc<dyn Strategy> {
    Arc::new(CrdStrategy {
        inner: Builtin::<CustomResourceDefinition>::new(crd_info())
            .printer(printers::DEFAULT)
            .federated()
            .defaults(set_defaults)
            .validate_json(validate)
            .validate_update(validate_update)
            .generation()
            .on_create(prepare_for_create)
            .on_update(prepare_for_update),
    })
}

/// [`Builtin`] over the CRD type, except that each version's `schema` and
/// `subresources` are encoded without the registry's value-type
/// `omitempty`: in Go they are pointers (`default: ""`, `minimum: 0`,
/// `status: {}` are kept).
struct CrdStrategy {
    inner: Builtin<CustomResourceDefinition>,
}

impl Strategy for CrdStrategy {
    fn info(&self) -> &ResourceInfo {
        Strategy::info(&self.inner)
    }

    fn normalize(&self, obj: Value) -> Result<Value, ApiError> {
        let mut out = Strategy::normalize(&self.inner, obj.clone())?;
        let mut typed = self.inner.decode(obj)?;
        set_defaults(&mut typed);
        let full = serde_json::to_value(&typed).map_err(|e| ApiError::internal(e.to_string()))?;
        let full_versions = full.pointer("/spec/versions").and_then(Value::as_array);
        if let (Some(full_versions), Some(versions)) = (
            full_versions,
            out.pointer_mut("/spec/versions")
                .and_then(Value::as_array_mut),
        ) {
            for (v, f) in versions.iter_mut().zip(full_versions) {
                let Some(v) = v.as_object_mut() else { continue };
                for k in ["schema", "subresources"] {
                    if let Some(mut x) = f.get(k).cloned() {
                        go_schema_encoding(&mut x);
                        v.insert(k.into(), x);
                    }
                }
            }
        }
        Ok(out)
    }

    fn validate_create(&self, obj: &Value) -> Vec<Cause> {
        Strategy::validate_create(&self.inner, obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        Strategy::validate_update(&self.inner, new, old)
    }

    fn validate_name(&self, name: &str) -> Vec<String> {
        Strategy::validate_name(&self.inner, name)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        Strategy::prepare_for_create(&self.inner, obj);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        Strategy::prepare_for_update(&self.inner, new, old);
    }

    fn printer(&self) -> Option<TablePrinter> {
        Strategy::printer(&self.inner)
    }

    fn openapi_schema(&self) -> Option<ubernetes_registry::strategy::SchemaFn> {
        Strategy::openapi_schema(&self.inner)
    }

    fn protobuf(&self) -> Option<&str> {
        Strategy::protobuf(&self.inner)
    }

    fn federated(&self) -> bool {
        Strategy::federated(&self.inner)
    }
}

/// Go's encoding of `JSONSchemaProps` (and subresources): a whole
/// `float64` bound is `10`, not `10.0`; `omitempty` drops false booleans,
/// empty strings, lists and maps, but pointers (`default`, `minimum`,
/// `maxLength`, `items`, `x-kubernetes-preserve-unknown-fields`, …) stay.
/// Values (`default`, `example`, `enum` members) are left alone.
fn go_schema_encoding(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, x| match k.as_str() {
                "nullable"
                | "uniqueItems"
                | "exclusiveMaximum"
                | "exclusiveMinimum"
                | "x-kubernetes-embedded-resource"
                | "x-kubernetes-int-or-string" => x != &Value::Bool(false),
                "id" | "$schema" | "description" | "type" | "format" | "title" | "pattern" => {
                    x.as_str() != Some("")
                }
                "required"
                | "enum"
                | "allOf"
                | "oneOf"
                | "anyOf"
                | "x-kubernetes-list-map-keys"
                | "x-kubernetes-validations" => !x.as_array().is_some_and(Vec::is_empty),
                "properties" | "patternProperties" | "definitions" | "dependencies" => {
                    !x.as_object().is_some_and(Map::is_empty)
                }
                _ => true,
            });
            for (k, x) in m.iter_mut() {
                match k.as_str() {
                    "maximum" | "minimum" | "multipleOf" => {
                        if let Some(f) = x.as_f64()
                            && f.fract() == 0.0
                            && f.abs() < 9.0e15
                        {
                            *x = json!(f as i64);
                        }
                    }
                    "default" | "example" | "enum" => {}
                    _ => go_schema_encoding(x),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(go_schema_encoding),
        _ => {}
    }
}

/// kube's v1 defaults: `singular` = lowercased kind, `listKind` =
/// `<kind>List`, conversion strategy `None`, webhook service port 443,
/// `storedVersions` = the storage version.
fn set_defaults(crd: &mut CustomResourceDefinition) {
    let names = &mut crd.spec.names;
    if names.singular.as_deref().unwrap_or("").is_empty() {
        names.singular = Some(names.kind.to_lowercase());
    }
    if names.list_kind.as_deref().unwrap_or("").is_empty() && !names.kind.is_empty() {
        names.list_kind = Some(format!("{}List", names.kind));
    }
    let conversion = crd
        .spec
        .conversion
        .get_or_insert_with(|| CustomResourceConversion {
            strategy: "None".into(),
            webhook: None,
        });
    if let Some(svc) = conversion
        .webhook
        .as_mut()
        .and_then(|w| w.client_config.as_mut())
        .and_then(|c| c.service.as_mut())
        && svc.port.is_none()
    {
        svc.port = Some(443);
    }
    if let Some(status) = crd.status.as_mut()
        && status.stored_versions.as_ref().is_none_or(Vec::is_empty)
        && let Some(v) = crd.spec.versions.iter().find(|v| v.storage)
    {
        status.stored_versions = Some(vec![v.name.clone()]);
    }
}

fn invalid_str(path: &str, v: &str, detail: &str) -> Cause {
    field::invalid(path, &Value::String(v.into()), detail)
}

/// kube's `ValidateCustomResourceDefinition` (beyond the generic metadata
/// checks the store does).
fn validate(crd: &CustomResourceDefinition, raw: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let name = crd.metadata.name.as_deref().unwrap_or("");
    let spec = &crd.spec;
    if name != format!("{}.{}", spec.names.plural, spec.group) {
        out.push(invalid_str(
            "metadata.name",
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    out.extend(validate_spec(crd, raw));
    if let Some(acc) = crd.status.as_ref().and_then(|s| s.accepted_names.as_ref()) {
        out.extend(validate_names(acc, "status.acceptedNames"));
    }
    out.extend(validate_stored_versions(crd, raw));
    out
}

/// kube's `ValidateCustomResourceDefinitionStoredVersions` (the status is
/// prepared before validation, so a new CRD has its storage version).
fn validate_stored_versions(crd: &CustomResourceDefinition, raw: &Value) -> Vec<Cause> {
    let path = "status.storedVersions";
    let stored = crd
        .status
        .as_ref()
        .and_then(|s| s.stored_versions.clone())
        .unwrap_or_default();
    if stored.is_empty() {
        return vec![Cause::new(
            "FieldValueInvalid",
            "Invalid value: []: must have at least one stored version",
            path,
        )];
    }
    let mut out = Vec::new();
    for (i, v) in crd.spec.versions.iter().enumerate() {
        if v.storage && !stored.contains(&v.name) {
            let shown = raw
                .pointer(&format!("/spec/versions/{i}"))
                .cloned()
                .unwrap_or(Value::Null);
            out.push(Cause::new(
                "FieldValueInvalid",
                format!(
                    "Invalid value: {shown}: must have the storage version {}",
                    v.name
                ),
                path,
            ));
        }
    }
    for (i, v) in stored.iter().enumerate() {
        if !crd.spec.versions.iter().any(|x| &x.name == v) {
            out.push(invalid_str(
                &index(path, i),
                v,
                "must appear in spec.versions",
            ));
        }
    }
    out
}

fn validate_spec(crd: &CustomResourceDefinition, raw: &Value) -> Vec<Cause> {
    let spec = &crd.spec;
    let mut out = Vec::new();
    if spec.group.is_empty() {
        out.push(field::required("spec.group", ""));
    } else {
        let errs = dns1123_subdomain(&spec.group);
        if !errs.is_empty() {
            out.push(invalid_str("spec.group", &spec.group, &errs.join(",")));
        } else if spec.group.split('.').count() < 2 {
            out.push(invalid_str(
                "spec.group",
                &spec.group,
                "should be a domain with at least one dot",
            ));
        }
    }
    match spec.scope.as_str() {
        "" => out.push(field::required("spec.scope", "")),
        "Cluster" | "Namespaced" => {}
        other => out.push(field::not_supported(
            "spec.scope",
            &Value::String(other.into()),
            &["Cluster", "Namespaced"],
        )),
    }
    let mut storage = 0;
    let mut seen = std::collections::HashSet::new();
    let mut unique = true;
    let raw_versions = raw
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, v) in spec.versions.iter().enumerate() {
        let path = index("spec.versions", i);
        if v.storage {
            storage += 1;
        }
        if !seen.insert(v.name.clone()) {
            unique = false;
        }
        let errs = dns1035_label(&v.name);
        if !errs.is_empty() {
            out.push(invalid_str(&child(&path, "name"), &v.name, &errs.join(",")));
        }
        let raw_v = raw_versions.get(i).cloned().unwrap_or(Value::Null);
        out.extend(validate_version(&raw_v, &path));
    }
    if !unique {
        out.push(versions_invalid(raw, "must contain unique version names"));
    }
    if storage != 1 {
        out.push(versions_invalid(
            raw,
            "must have exactly one version marked as storage version",
        ));
    }
    if spec.preserve_unknown_fields == Some(true) {
        out.push(field::invalid(
            "spec.preserveUnknownFields",
            &Value::Bool(true),
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
    let names = &spec.names;
    if names.plural.is_empty() {
        out.push(field::required("spec.names.plural", ""));
    }
    if names.singular.as_deref().unwrap_or("").is_empty() {
        out.push(field::required("spec.names.singular", ""));
    }
    if names.kind.is_empty() {
        out.push(field::required("spec.names.kind", ""));
    }
    if names.list_kind.as_deref().unwrap_or("").is_empty() {
        out.push(field::required("spec.names.listKind", ""));
    }
    out.extend(validate_names(names, "spec.names"));
    if let Some(conv) = &spec.conversion {
        match conv.strategy.as_str() {
            "None" => {
                if conv.webhook.is_some() {
                    out.push(field::forbidden(
                        "spec.conversion.webhook",
                        "should not be set when strategy is not set to Webhook",
                    ));
                }
            }
            "Webhook" => {
                if conv
                    .webhook
                    .as_ref()
                    .and_then(|w| w.client_config.as_ref())
                    .is_none()
                {
                    out.push(field::required(
                        "spec.conversion.webhook",
                        "required when strategy is set to Webhook",
                    ));
                }
                if let Some(w) = &conv.webhook {
                    out.extend(validate_conversion_review_versions(
                        &w.conversion_review_versions,
                    ));
                }
            }
            other => out.push(field::not_supported(
                "spec.conversion.strategy",
                &Value::String(other.into()),
                &["None", "Webhook"],
            )),
        }
    }
    out
}

/// kube's `validateConversionReviewVersions` (recognised versions required,
/// as for a CRD created or updated through v1): present, no duplicates,
/// each a DNS-1035 label, one of them `v1` or `v1beta1`.
fn validate_conversion_review_versions(versions: &[String]) -> Vec<Cause> {
    const PATH: &str = "spec.conversion.webhook.conversionReviewVersions";
    let mut out = Vec::new();
    if versions.is_empty() {
        out.push(field::required(PATH, ""));
        return out;
    }
    let mut seen = std::collections::HashSet::new();
    for (i, v) in versions.iter().enumerate() {
        if !seen.insert(v.as_str()) {
            out.push(field::invalid(
                &format!("{PATH}[{i}]"),
                &Value::String(v.clone()),
                "duplicate version",
            ));
        }
        for msg in ubernetes_apimachinery::meta::is_dns1035_label(v) {
            out.push(field::invalid(
                &format!("{PATH}[{i}]"),
                &Value::String(v.clone()),
                &msg,
            ));
        }
    }
    if !versions.iter().any(|v| v == "v1" || v == "v1beta1") {
        out.push(field::invalid(
            PATH,
            &serde_json::json!(versions),
            "must include at least one of v1, v1beta1",
        ));
    }
    out
}

/// `spec.versions: Invalid value: <versions>: <detail>` (the value shown as
/// JSON; kube prints its Go struct).
fn versions_invalid(raw: &Value, detail: &str) -> Cause {
    let versions = raw.pointer("/spec/versions").cloned().unwrap_or(json!([]));
    Cause::new(
        "FieldValueInvalid",
        format!("Invalid value: {versions}: {detail}"),
        "spec.versions",
    )
}

fn validate_version(v: &Value, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    let schema_path = child(path, "schema.openAPIV3Schema");
    match v.pointer("/schema/openAPIV3Schema") {
        None | Some(Value::Null) => out.push(field::required(&schema_path, "schemas are required")),
        Some(s) => {
            let causes = validate_schema(s, &schema_path);
            // kube checks the CEL rules of structural schemas only.
            if causes.is_empty() {
                out.extend(crate::rules::check_schema_rules(s, &schema_path));
            }
            out.extend(causes);
        }
    }
    if let Some(scale) = v.pointer("/subresources/scale") {
        let sub = child(path, "subresources.scale");
        let get = |k: &str| scale.get(k).and_then(Value::as_str).unwrap_or("");
        for (k, prefixes, msg) in [
            (
                "specReplicasPath",
                &[".spec."][..],
                "should be a json path under .spec",
            ),
            (
                "statusReplicasPath",
                &[".status."][..],
                "should be a json path under .status",
            ),
        ] {
            let p = get(k);
            let fp = child(&sub, k);
            if p.is_empty() {
                out.push(field::required(&fp, ""));
            } else if !is_simple_json_path(p) {
                out.push(invalid_str(
                    &fp,
                    p,
                    "must be a simple json path starting with .",
                ));
            } else if !prefixes.iter().any(|x| p.starts_with(x)) {
                out.push(invalid_str(&fp, p, msg));
            }
        }
        let sel = get("labelSelectorPath");
        if !sel.is_empty() {
            let fp = child(&sub, "labelSelectorPath");
            if !is_simple_json_path(sel) {
                out.push(invalid_str(
                    &fp,
                    sel,
                    "must be a simple json path starting with .",
                ));
            } else if !sel.starts_with(".spec.") && !sel.starts_with(".status.") {
                out.push(invalid_str(
                    &fp,
                    sel,
                    "should be a json path under either .spec or .status",
                ));
            }
        }
    }
    if let Some(cols) = v.get("additionalPrinterColumns").and_then(Value::as_array) {
        for (j, c) in cols.iter().enumerate() {
            out.extend(validate_column(
                c,
                &index(&child(path, "additionalPrinterColumns"), j),
            ));
        }
    }
    if let Some(fields) = v.get("selectableFields").and_then(Value::as_array) {
        for (j, f) in fields.iter().enumerate() {
            let fp = child(&index(&child(path, "selectableFields"), j), "jsonPath");
            let p = f.get("jsonPath").and_then(Value::as_str).unwrap_or("");
            if p.is_empty() {
                out.push(field::required(&fp, ""));
            } else if !is_simple_json_path(p) {
                out.push(invalid_str(
                    &fp,
                    p,
                    "must be a simple json path starting with .",
                ));
            }
        }
    }
    out
}

const COLUMN_TYPES: &str = "boolean,date,integer,number,string";
const COLUMN_FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";

fn validate_column(c: &Value, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    let get = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
    if get("name").is_empty() {
        out.push(field::required(&child(path, "name"), ""));
    }
    let ty = get("type");
    let types_msg = format!("must be one of {COLUMN_TYPES}");
    if ty.is_empty() {
        out.push(field::required(&child(path, "type"), &types_msg));
    } else if !COLUMN_TYPES.split(',').any(|t| t == ty) {
        out.push(invalid_str(&child(path, "type"), ty, &types_msg));
    }
    let format = get("format");
    if !format.is_empty() && !COLUMN_FORMATS.split(',').any(|f| f == format) {
        out.push(invalid_str(
            &child(path, "format"),
            format,
            &format!("must be one of {COLUMN_FORMATS}"),
        ));
    }
    let jp = get("jsonPath");
    if jp.is_empty() {
        out.push(field::required(&child(path, "JSONPath"), ""));
    } else if !is_simple_json_path(jp) {
        out.push(invalid_str(
            &child(path, "JSONPath"),
            jp,
            "must be a simple json path starting with .",
        ));
    }
    out
}

/// kube's `ValidateCustomResourceDefinitionNames`.
fn validate_names(n: &CustomResourceDefinitionNames, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    let dns = |v: &str| dns1035_label(v).join(",");
    if !n.plural.is_empty() && !dns(&n.plural).is_empty() {
        out.push(invalid_str(
            &child(path, "plural"),
            &n.plural,
            &dns(&n.plural),
        ));
    }
    let singular = n.singular.as_deref().unwrap_or("");
    if !singular.is_empty() && !dns(singular).is_empty() {
        out.push(invalid_str(
            &child(path, "singular"),
            singular,
            &dns(singular),
        ));
    }
    let mixed = "may have mixed case, but should otherwise match: ";
    if !n.kind.is_empty() && !dns(&n.kind.to_lowercase()).is_empty() {
        out.push(invalid_str(
            &child(path, "kind"),
            &n.kind,
            &format!("{mixed}{}", dns(&n.kind.to_lowercase())),
        ));
    }
    let list_kind = n.list_kind.as_deref().unwrap_or("");
    if !list_kind.is_empty() && !dns(&list_kind.to_lowercase()).is_empty() {
        out.push(invalid_str(
            &child(path, "listKind"),
            list_kind,
            &format!("{mixed}{}", dns(&list_kind.to_lowercase())),
        ));
    }
    for (i, s) in n.short_names.iter().flatten().enumerate() {
        if !dns(s).is_empty() {
            out.push(invalid_str(
                &index(&child(path, "shortNames"), i),
                s,
                &dns(s),
            ));
        }
    }
    if !n.kind.is_empty() && n.kind == list_kind {
        out.push(invalid_str(
            &child(path, "listKind"),
            list_kind,
            "kind and listKind may not be the same",
        ));
    }
    for (i, c) in n.categories.iter().flatten().enumerate() {
        if !dns(c).is_empty() {
            out.push(invalid_str(
                &index(&child(path, "categories"), i),
                c,
                &dns(c),
            ));
        }
    }
    out
}

fn immutable(path: &str, v: &str) -> Cause {
    invalid_str(path, v, "field is immutable")
}

/// Update-only rules: group and plural never change, scope and kind not
/// once established; stored versions must stay in `spec.versions`.
fn validate_update(new: &CustomResourceDefinition, old: &CustomResourceDefinition) -> Vec<Cause> {
    let mut out = Vec::new();
    let old_raw = serde_json::to_value(old).unwrap_or(Value::Null);
    if is_established(&old_raw) {
        if new.spec.scope != old.spec.scope {
            out.push(immutable("spec.scope", &new.spec.scope));
        }
        if new.spec.names.kind != old.spec.names.kind {
            out.push(immutable("spec.names.kind", &new.spec.names.kind));
        }
    }
    if new.spec.group != old.spec.group {
        out.push(immutable("spec.group", &new.spec.group));
    }
    if new.spec.names.plural != old.spec.names.plural {
        out.push(immutable("spec.names.plural", &new.spec.names.plural));
    }
    out
}

/// `PrepareForCreate`: a fresh status with the storage version stored.
fn prepare_for_create(obj: &mut Value) {
    let stored: Vec<Value> = storage_version(obj).map(|v| json!(v)).into_iter().collect();
    if let Some(m) = obj.as_object_mut() {
        m.insert(
            "status".into(),
            json!({"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": stored}),
        );
    }
}

/// `PrepareForUpdate`: the storage version joins `status.storedVersions`.
fn prepare_for_update(new: &mut Value, _old: &Value) {
    let Some(v) = storage_version(new).map(String::from) else {
        return;
    };
    let Some(m) = new.as_object_mut() else {
        return;
    };
    let status = m.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    if let Some(st) = status.as_object_mut() {
        let stored = st.entry("storedVersions").or_insert_with(|| json!([]));
        if let Some(list) = stored.as_array_mut()
            && !list.iter().any(|x| x.as_str() == Some(v.as_str()))
        {
            list.push(json!(v));
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    fn minimal() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": {"type": "object"}}}]}
        })
    }

    fn causes(obj: Value) -> Vec<String> {
        let s = crd_strategy();
        let mut n = s.normalize(obj).unwrap();
        s.prepare_for_create(&mut n);
        s.validate_create(&n)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn info_is_kubes_discovery_entry() {
        let i = crd_info();
        assert_eq!(i.api_version(), "apiextensions.k8s.io/v1");
        assert_eq!(i.resource, "customresourcedefinitions");
        assert!(!i.namespaced);
        assert_eq!(i.short_names, vec!["crd", "crds"]);
        assert_eq!(i.categories, vec!["api-extensions"]);
        assert!(i.has_subresource("status"));
    }

    #[test]
    fn defaults_fill_singular_list_kind_and_conversion() {
        let n = crd_strategy().normalize(minimal()).unwrap();
        assert_eq!(n["spec"]["names"]["singular"], "widget");
        assert_eq!(n["spec"]["names"]["listKind"], "WidgetList");
        assert_eq!(n["spec"]["conversion"], json!({"strategy": "None"}));
        assert!(causes(minimal()).is_empty(), "{:?}", causes(minimal()));
    }

    #[test]
    fn schemas_are_encoded_as_go_encodes_json_schema_props() {
        let mut c = minimal();
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({
            "type": "object", "description": "", "required": [],
            "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 5.0, "nullable": false,
                                 "default": 0, "enum": [0, 1]},
                           "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {}}}
        });
        let n = crd_strategy().normalize(c).unwrap();
        assert_eq!(
            n["spec"]["versions"][0]["schema"]["openAPIV3Schema"],
            json!({"type": "object", "properties": {
                "n": {"type": "integer", "minimum": 0, "maximum": 5, "default": 0, "enum": [0, 1]},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
        );
    }

    #[test]
    fn a_conversion_webhook_must_speak_a_review_version_we_know() {
        let mut c = minimal();
        c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "https://127.0.0.1:9443/convert"},
            "conversionReviewVersions": ["v2", "v2"]}});
        assert_eq!(
            causes(c.clone()),
            vec![
                "spec.conversion.webhook.conversionReviewVersions[1]: Invalid value: \"v2\": duplicate version",
                "spec.conversion.webhook.conversionReviewVersions: Invalid value: [\"v2\",\"v2\"]: must include at least one of v1, v1beta1",
            ]
        );
        c["spec"]["conversion"]["webhook"]["conversionReviewVersions"] = json!(["v2", "v1"]);
        assert!(causes(c).is_empty());
    }

    #[test]
    fn the_name_must_be_plural_dot_group() {
        let mut c = minimal();
        c["metadata"]["name"] = json!("widget.example.com");
        assert_eq!(
            causes(c),
            vec![
                "metadata.name: Invalid value: \"widget.example.com\": must be spec.names.plural+\".\"+spec.group"
            ]
        );
    }

    #[test]
    fn group_needs_a_dot_and_scope_an_allowed_value() {
        let mut c = minimal();
        c["metadata"]["name"] = json!("widgets.example");
        c["spec"]["group"] = json!("example");
        c["spec"]["scope"] = json!("Global");
        assert_eq!(
            causes(c),
            vec![
                "spec.group: Invalid value: \"example\": should be a domain with at least one dot",
                "spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"",
            ]
        );
    }

    #[test]
    fn exactly_one_storage_version_and_schemas_are_required() {
        let mut c = minimal();
        c["spec"]["versions"] = json!([{"name": "v1", "served": true, "storage": false}]);
        let got = causes(c);
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(
            got[2],
            "status.storedVersions: Invalid value: []: must have at least one stored version"
        );
        assert_eq!(
            got[0],
            "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"
        );
        assert!(got[1].starts_with("spec.versions: Invalid value: "));
        assert!(got[1].ends_with(": must have exactly one version marked as storage version"));
    }

    #[test]
    fn names_must_be_dns_labels() {
        let mut c = minimal();
        c["metadata"]["name"] = json!("Widgets.example.com");
        c["spec"]["names"] = json!({"plural": "Widgets", "kind": "Wid get", "shortNames": ["w_1"]});
        let got = causes(c);
        assert!(got.contains(&"spec.names.plural: Invalid value: \"Widgets\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_string()) || got.iter().any(|m| m.starts_with("spec.names.plural: Invalid value: \"Widgets\": a DNS-1035 label")), "{got:?}");
        assert!(got.iter().any(|m| m.starts_with("spec.names.kind: Invalid value: \"Wid get\": may have mixed case, but should otherwise match: a DNS-1035 label")), "{got:?}");
        assert!(
            got.iter()
                .any(|m| m.starts_with("spec.names.shortNames[0]: Invalid value: \"w_1\"")),
            "{got:?}"
        );
    }

    #[test]
    fn non_structural_schemas_are_rejected_with_their_path() {
        let mut c = minimal();
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"] =
            json!({"type": "object", "properties": {"spec": {"properties": {}}}});
        assert_eq!(
            causes(c),
            vec![
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"
            ]
        );
    }

    #[test]
    fn printer_columns_and_scale_paths_are_checked() {
        let mut c = minimal();
        c["spec"]["versions"][0]["additionalPrinterColumns"] =
            json!([{"name": "X", "type": "text", "jsonPath": "spec.x"}]);
        c["spec"]["versions"][0]["subresources"] =
            json!({"scale": {"specReplicasPath": ".status.r", "statusReplicasPath": ".status.r"}});
        assert_eq!(
            causes(c),
            vec![
                "spec.versions[0].subresources.scale.specReplicasPath: Invalid value: \".status.r\": should be a json path under .spec",
                "spec.versions[0].additionalPrinterColumns[0].type: Invalid value: \"text\": must be one of boolean,date,integer,number,string",
                "spec.versions[0].additionalPrinterColumns[0].JSONPath: Invalid value: \"spec.x\": must be a simple json path starting with .",
            ]
        );
    }

    #[test]
    fn group_and_plural_are_immutable() {
        let s = crd_strategy();
        let mut old = s.normalize(minimal()).unwrap();
        s.prepare_for_create(&mut old);
        let mut new = old.clone();
        new["spec"]["names"]["plural"] = json!("gadgets");
        let got: Vec<String> = s
            .validate_update(&new, &old)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        assert!(
            got.contains(
                &"spec.names.plural: Invalid value: \"gadgets\": field is immutable".to_string()
            ),
            "{got:?}"
        );
    }

    #[test]
    fn create_starts_the_status_with_the_storage_version() {
        let s = crd_strategy();
        let mut n = s.normalize(minimal()).unwrap();
        s.prepare_for_create(&mut n);
        assert_eq!(
            n["status"],
            json!({"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]})
        );
        let mut upd = n.clone();
        upd["spec"]["versions"] = json!([
            {"name": "v1", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}},
            {"name": "v2", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}}
        ]);
        s.prepare_for_update(&mut upd, &n);
        assert_eq!(upd["status"]["storedVersions"], json!(["v1", "v2"]));
    }
}
