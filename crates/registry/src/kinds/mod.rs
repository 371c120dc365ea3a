//! Built-in kinds: their [`ResourceInfo`](ubernetes_apimachinery::ResourceInfo)
//! (discovery facts exactly as kube-apiserver 1.37 shows them) and their
//! [`Strategy`]: decode through the `k8s-openapi` type, kube-apiserver's
//! defaults, validation, field selectors, scale paths and preparation.
//!
//! Start with [`builtin()`], then [`builtin::Builtin`] (the one generic
//! strategy), then a group module (`core`, `apps`, `batch`, `groups`,
//! `federation`). Shared pieces: `defaults` (pod specs, containers…),
//! `validation` (selectors, pod specs, Go-style value rendering), `names`
//! (DNS-1123/1035 checks with kube's messages), `quantity`.

use std::sync::Arc;

use crate::strategy::Strategy;

pub mod apiregistration;
pub mod apps;
pub mod batch;
pub mod builtin;
pub mod core;
pub mod defaults;
pub mod federation;
pub mod flowcontrol;
pub mod groups;
pub mod ipaddress;
pub mod names;
pub mod omitempty;
pub mod platform;
pub mod quantity;
pub mod resource;
pub mod validation;

pub use builtin::Builtin;
pub use names::NameValidation;

/// One strategy per built-in resource served (SPEC §2.2, CRDs and the
/// review/token APIs excepted) plus `federation/v1beta1` clusters and the
/// aggregator's `apiregistration.k8s.io/v1` APIServices. Within a
/// group, a preferred version comes first (`autoscaling/v2` before `v1`).
pub fn builtin() -> Vec<Arc<dyn Strategy>> {
    let mut all = core::strategies();
    all.extend(apps::strategies());
    all.extend(batch::strategies());
    all.extend(groups::strategies());
    all.extend(federation::strategies());
    all.extend(apiregistration::strategies());
    all.extend(platform::strategies());
    all.extend(resource::strategies());
    all.extend(flowcontrol::strategies());
    all.extend(ipaddress::strategies());
    all
}
