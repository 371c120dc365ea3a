//! Table rendering (`as=Table;g=meta.k8s.io`): the registry's printers give
//! each kind kube-apiserver's columns; this adapts them to the handlers.

use serde_json::Value;
use ubernetes_apimachinery::ResourceInfo;

/// A `meta.k8s.io/v1` Table of `objects`, rows carrying their
/// PartialObjectMetadata (`includeObject=Metadata`, kubectl's default).
pub fn table(
    info: &ResourceInfo,
    objects: &[Value],
    list_meta: Option<Value>,
    include_metadata: bool,
) -> Value {
    let include = if include_metadata {
        ubernetes_registry::printers::IncludeObject::Metadata
    } else {
        ubernetes_registry::printers::IncludeObject::None
    };
    ubernetes_registry::printers::to_table(info, objects, true, include, list_meta)
}
