//! The registry's [`FieldManager`] over the `ubernetes-fieldmanager` crate
//! and the OpenAPI definitions of every served kind (built-in kinds and, once
//! published, custom resources): field ownership for every write and
//! server-side apply.

use serde_json::Value;
use ubernetes_apimachinery::{ApiError, ResourceInfo};
use ubernetes_fieldmanager::{Context, FieldSet, PathElement, Schema};
use ubernetes_registry::managed_fields::FieldManager;
use ubernetes_registry::store::now_rfc3339;

/// Field ownership over the served kinds' schemas.
#[derive(Debug, Default, Clone, Copy)]
pub struct SchemaFieldManager;

/// What an endpoint resets, so no manager can own it through that endpoint
/// (kube's reset fields): `status` on the main resource of a kind with a
/// status subresource, `spec` on `/status`.
fn ignored(info: &ResourceInfo, subresource: &str) -> Option<FieldSet> {
    let field = match subresource {
        "" if info.has_subresource("status") => "status",
        "status" => "spec",
        _ => return None,
    };
    let path = vec![PathElement::field(field)];
    Some(FieldSet::from_paths([&path]))
}

impl FieldManager for SchemaFieldManager {
    fn update(
        &self,
        info: &ResourceInfo,
        old: Option<&Value>,
        new: Value,
        manager: &str,
        subresource: &str,
    ) -> Value {
        let snapshot = ubernetes_openapi::definitions().snapshot();
        let now = now_rfc3339();
        let api_version = info.api_version();
        let ignored = ignored(info, subresource);
        let ctx = Context {
            manager,
            api_version: &api_version,
            subresource,
            now: &now,
            schema: Schema::definition(&snapshot, &info.definition),
            ignored: ignored.as_ref(),
        };
        ubernetes_fieldmanager::update_owned(old, new, &ctx)
    }

    fn apply(
        &self,
        info: &ResourceInfo,
        live: Option<&Value>,
        applied: &Value,
        manager: &str,
        force: bool,
        subresource: &str,
    ) -> Result<Value, ApiError> {
        let snapshot = ubernetes_openapi::definitions().snapshot();
        // Unknown fields were already refused or warned about by the store
        // per fieldValidation; the field manager only sees known ones.
        let mut applied = applied.clone();
        ubernetes_openapi::prune_unknown_fields(&info.definition, &mut applied);
        let now = now_rfc3339();
        let api_version = info.api_version();
        let ignored = ignored(info, subresource);
        let ctx = Context {
            manager,
            api_version: &api_version,
            subresource,
            now: &now,
            schema: Schema::definition(&snapshot, &info.definition),
            ignored: ignored.as_ref(),
        };
        ubernetes_fieldmanager::apply(live, &applied, force, &ctx).map_err(ApiError::from)
    }

    fn merge_applied(
        &self,
        info: &ResourceInfo,
        live: &Value,
        applied: &Value,
    ) -> Result<Value, String> {
        let snapshot = ubernetes_openapi::definitions().snapshot();
        let schema = Schema::definition(&snapshot, &info.definition);
        ubernetes_fieldmanager::typed::validate(applied, schema)
            .map_err(|e| format!("failed to convert patch object to typed object: {e}"))?;
        let mut atomics = Vec::new();
        find_atomics(applied, schema, &mut String::new(), &mut atomics);
        if !atomics.is_empty() {
            return Err(format!(
                "invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: {}",
                atomics.join(", ")
            ));
        }
        Ok(ubernetes_fieldmanager::typed::merge(live, applied, schema))
    }
}

/// kube's `findAtomics` (mutating policy `patch/smd.go`): the paths
/// (`.spec.selector`, `.spec.list[0]`) of the atomic structs, maps and
/// lists an applied configuration sets, which a merge would replace whole.
fn find_atomics(value: &Value, schema: Schema<'_>, path: &mut String, out: &mut Vec<String>) {
    use ubernetes_fieldmanager::{ListType, Shape};
    match (schema.shape(), value) {
        (Shape::Struct { atomic } | Shape::Map { atomic }, Value::Object(m)) => {
            if atomic {
                out.push(path.clone());
            }
            for (k, v) in m {
                // Only declared fields are walked (upstream's `FindField`).
                if let Some((child, true)) = schema.field(k) {
                    let len = path.len();
                    path.push('.');
                    path.push_str(k);
                    find_atomics(v, child, path, out);
                    path.truncate(len);
                }
            }
        }
        (Shape::List(t), Value::Array(items)) => {
            if t == ListType::Atomic {
                out.push(path.clone());
            }
            for (i, v) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                find_atomics(v, schema.items(), path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}
