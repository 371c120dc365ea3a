//! The federation kinds (`federation/v1beta1`), whose Rust types and schemas
//! live in `ubernetes-api`. Registered next to the built-in kinds.

use schemars::generate::SchemaGenerator;

use crate::definitions::{Builtin, kind};

/// Generate the schemas of the federation kinds into `generator` and say how
/// they are served.
pub(crate) fn register(generator: &mut SchemaGenerator) -> Vec<Builtin> {
    vec![
        kind::<ubernetes_api::Cluster>(generator, true),
        kind::<ubernetes_api::PropagationRecord>(generator, true),
    ]
}
