//! The resources served without storage, as discovery, the protobuf codec
//! and the OpenAPI routes list them: the review APIs (served by
//! `reviews.rs`), `bindings` (the Pod kind's binding REST, whose facts its
//! file in the registry declares) and `componentstatuses` (served by
//! `core_extras.rs`). Declarations only, importing nothing of this crate:
//! the modules that serve these resources import the handlers, which
//! import the protobuf codec, which reads these.

use ubernetes_apimachinery::ResourceInfo;
use ubernetes_registry::kinds::pod_binding;

/// The authorization reviews' group.
pub const AUTHZ: &str = "authorization.k8s.io";
/// The authentication reviews' group.
pub const AUTHN: &str = "authentication.k8s.io";

fn review_info(group: &str, resource: &str, kind: &str, namespaced: bool) -> ResourceInfo {
    ResourceInfo {
        group: group.to_string(),
        version: "v1".to_string(),
        resource: resource.to_string(),
        singular: kind.to_ascii_lowercase(),
        kind: kind.to_string(),
        namespaced,
        verbs: vec!["create".to_string()],
        short_names: Vec::new(),
        categories: Vec::new(),
        subresources: Vec::new(),
        definition: format!("io.k8s.api.{}.v1.{kind}", group.trim_end_matches(".k8s.io")),
    }
}

/// The review resources as discovery lists them (verbs `["create"]`).
pub fn review_resources() -> Vec<ResourceInfo> {
    vec![
        review_info(AUTHN, "selfsubjectreviews", "SelfSubjectReview", false),
        review_info(AUTHN, "tokenreviews", "TokenReview", false),
        review_info(
            AUTHZ,
            "localsubjectaccessreviews",
            "LocalSubjectAccessReview",
            true,
        ),
        review_info(
            AUTHZ,
            "selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
            false,
        ),
        review_info(
            AUTHZ,
            "selfsubjectrulesreviews",
            "SelfSubjectRulesReview",
            false,
        ),
        review_info(AUTHZ, "subjectaccessreviews", "SubjectAccessReview", false),
    ]
}

/// `componentstatuses` as discovery lists it (core `v1`, get and list,
/// deprecated since 1.19).
pub fn component_statuses() -> ResourceInfo {
    ResourceInfo {
        group: String::new(),
        version: "v1".to_string(),
        resource: "componentstatuses".to_string(),
        singular: "componentstatus".to_string(),
        kind: "ComponentStatus".to_string(),
        namespaced: false,
        verbs: vec!["get".to_string(), "list".to_string()],
        short_names: vec!["cs".to_string()],
        categories: Vec::new(),
        subresources: Vec::new(),
        definition: "io.k8s.api.core.v1.ComponentStatus".to_string(),
    }
}

/// The core `v1` resources served without storage: `bindings` and
/// `componentstatuses`.
pub fn core_extra_resources() -> Vec<ResourceInfo> {
    vec![pod_binding::bindings_info(), component_statuses()]
}

/// Every resource served without storage.
pub fn resources() -> Vec<ResourceInfo> {
    let mut all = review_resources();
    all.extend(core_extra_resources());
    all
}
