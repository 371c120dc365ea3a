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
        ubernetes_fieldmanager::update(old, &new, &ctx)
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
}
