//! The kinds whose Rust types and schemas live in `ubernetes-api` rather
//! than `k8s-openapi`: the federation kinds (`federation/v1beta1`) and the
//! kube-aggregator's `apiregistration.k8s.io/v1` APIService. Registered next
//! to the built-in kinds.

use schemars::generate::SchemaGenerator;

use crate::definitions::{Builtin, kind};

/// Generate the schemas of these kinds into `generator` and say how
/// they are served.
pub(crate) fn register(generator: &mut SchemaGenerator) -> Vec<Builtin> {
    vec![
        kind::<ubernetes_api::Cluster>(generator, true),
        kind::<ubernetes_api::apiregistration::APIService>(generator, true),
        kind::<ubernetes_api::PropagationRecord>(generator, true),
    ]
}
