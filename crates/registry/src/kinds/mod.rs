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
pub mod cluster_inventory;
pub mod core;
pub mod csr;
pub mod defaults;
pub mod federation;
pub mod flowcontrol;
pub mod groups;
pub mod ipaddress;
pub mod mcs;
pub mod names;
pub mod omitempty;
pub mod platform;
pub mod pod_binding;
pub mod priorityclass;
pub mod protobuf;
pub mod quantity;
pub mod resource;
pub mod serviceaccount_token;
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
    all.extend(mcs::strategies());
    all.extend(cluster_inventory::strategies());
    all.extend(apiregistration::strategies());
    all.extend(platform::strategies());
    all.extend(resource::strategies());
    all.extend(flowcontrol::strategies());
    all.extend(ipaddress::strategies());
    all
}

/// The Table printer of a group and kind (kube registers printers by Go
/// type, i.e. by group and kind, whatever the version served), as the
/// built-in kinds declare it ([`Strategy::printer`]);
/// [`printers::DEFAULT`](crate::printers::DEFAULT) (`Name, Created At`) for
/// anything else (custom resources, the CRD kind).
pub fn printer_for(group: &str, kind: &str) -> crate::printers::TablePrinter {
    use std::collections::HashMap;
    use std::sync::LazyLock;

    static BY_KIND: LazyLock<HashMap<(String, String), crate::printers::TablePrinter>> =
        LazyLock::new(|| {
            let mut by_kind: HashMap<_, _> = builtin()
                .iter()
                .filter_map(|s| {
                    let info = s.info();
                    Some(((info.group.clone(), info.kind.clone()), s.printer()?))
                })
                .collect();
            // Served by the API server itself, not stored: no strategy.
            by_kind.insert(
                (String::new(), "ComponentStatus".into()),
                crate::printers::COMPONENT_STATUS,
            );
            by_kind
        });
    BY_KIND
        .get(&(group.to_string(), kind.to_string()))
        .copied()
        .unwrap_or(crate::printers::DEFAULT)
}

/// The storage version a built-in group's resource in one version declares
/// ([`Strategy::stored_as`]), when it is not stored as served.
pub fn stored_as(group: &str, version: &str, resource: &str) -> Option<crate::strategy::StoredAs> {
    use std::collections::HashMap;
    use std::sync::LazyLock;

    static STORED_AS: LazyLock<HashMap<(String, String, String), crate::strategy::StoredAs>> =
        LazyLock::new(|| {
            builtin()
                .iter()
                .filter_map(|s| {
                    let info = s.info();
                    let key = (
                        info.group.clone(),
                        info.version.clone(),
                        info.resource.clone(),
                    );
                    Some((key, s.stored_as()?))
                })
                .collect()
        });
    STORED_AS
        .get(&(group.to_string(), version.to_string(), resource.to_string()))
        .copied()
}

/// Everything wrong with a set of kind declarations, one message each:
/// a resource or kind declared twice, a kind that leaves a piece
/// undeclared (printer, OpenAPI schema), a protobuf message that is not
/// generated, an OpenAPI schema that is not the
/// kind's own definition, two versions of a kind that disagree on their
/// printer, a kind federated in two versions. The lists the server keeps per
/// kind are derived from these declarations, so a kind that passes this
/// check is in every one of them.
pub fn check(kinds: &[Arc<dyn Strategy>]) -> Vec<String> {
    use std::collections::HashMap;

    let mut problems = Vec::new();
    let mut resources: HashMap<String, usize> = HashMap::new();
    let mut gvks: HashMap<String, usize> = HashMap::new();
    let mut printers: HashMap<(String, String), crate::printers::TablePrinter> = HashMap::new();
    let mut federated: HashMap<(String, String), String> = HashMap::new();
    for s in kinds {
        let info = s.info();
        let gvr = format!("{}/{}/{}", info.group, info.version, info.resource);
        let gvk = format!("{}/{} {}", info.group, info.version, info.kind);
        *resources.entry(gvr.clone()).or_default() += 1;
        *gvks.entry(gvk).or_default() += 1;
        match s.openapi_schema() {
            None => problems.push(format!("{gvr}: no OpenAPI schema declared")),
            Some(schema) => {
                let mut generator = schemars::generate::SchemaGenerator::default();
                let definition = schema(&mut generator);
                if definition != info.definition {
                    problems.push(format!(
                        "{gvr}: OpenAPI schema {definition} is not its definition {}",
                        info.definition
                    ));
                }
            }
        }
        let group_kind = (info.group.clone(), info.kind.clone());
        match s.printer() {
            None => problems.push(format!("{gvr}: no printer declared")),
            Some(p) => match printers.get(&group_kind) {
                Some(other) if other.columns() != p.columns() => problems.push(format!(
                    "{gvr}: printer {p:?}, but another version of {} declares {other:?}",
                    info.kind
                )),
                _ => {
                    printers.insert(group_kind.clone(), p);
                }
            },
        }
        if let Some(message) = s.protobuf()
            && !protobuf::has_message(message)
        {
            problems.push(format!(
                "{gvr}: protobuf message {message} is not generated (scripts/gen_pb_schema.py)"
            ));
        }
        if s.federated()
            && let Some(other) = federated.insert(group_kind, info.version.clone())
        {
            problems.push(format!(
                "{gvr}: federated, and so is version {other} of {}",
                info.kind
            ));
        }
    }
    for (what, counts) in [("resource", resources), ("kind", gvks)] {
        let mut twice: Vec<String> = counts
            .into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(k, n)| format!("{what} {k} declared {n} times"))
            .collect();
        twice.sort();
        problems.extend(twice);
    }
    problems
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use serde_json::Value;
    use ubernetes_apimachinery::{ApiError, Cause, ResourceInfo};

    use super::*;

    #[test]
    fn every_builtin_kind_declares_everything_once() {
        let problems = check(&builtin());
        assert!(problems.is_empty(), "{problems:#?}");
    }

    /// A kind declared by hand (not through [`Builtin`]) that gets one
    /// declaration wrong: everything else is the wrapped kind's.
    struct Misdeclared {
        inner: Arc<dyn Strategy>,
        /// Forgets its OpenAPI schema.
        no_openapi: bool,
        /// Names this protobuf message instead of its own.
        protobuf: Option<&'static str>,
    }

    impl Strategy for Misdeclared {
        fn info(&self) -> &ResourceInfo {
            self.inner.info()
        }
        fn normalize(&self, obj: Value) -> Result<Value, ApiError> {
            self.inner.normalize(obj)
        }
        fn validate_create(&self, obj: &Value) -> Vec<Cause> {
            self.inner.validate_create(obj)
        }
        fn printer(&self) -> Option<crate::printers::TablePrinter> {
            self.inner.printer()
        }
        fn openapi_schema(&self) -> Option<crate::strategy::SchemaFn> {
            self.inner.openapi_schema().filter(|_| !self.no_openapi)
        }
        fn protobuf(&self) -> Option<&str> {
            self.protobuf.or_else(|| self.inner.protobuf())
        }
        fn federated(&self) -> bool {
            self.inner.federated()
        }
    }

    /// The built-in kinds with ConfigMap's declaration replaced.
    fn with_configmap(
        misdeclared: impl Fn(Arc<dyn Strategy>) -> Misdeclared,
    ) -> Vec<Arc<dyn Strategy>> {
        builtin()
            .into_iter()
            .map(|s| -> Arc<dyn Strategy> {
                if s.info().resource == "configmaps" {
                    Arc::new(misdeclared(s))
                } else {
                    s
                }
            })
            .collect()
    }

    #[test]
    fn a_kind_missing_its_openapi_schema_fails_the_check() {
        let kinds = with_configmap(|inner| Misdeclared {
            inner,
            no_openapi: true,
            protobuf: None,
        });
        assert_eq!(
            check(&kinds),
            ["/v1/configmaps: no OpenAPI schema declared"]
        );
    }

    #[test]
    fn a_kind_naming_an_ungenerated_protobuf_message_fails_the_check() {
        assert!(protobuf::has_message("core.v1.ConfigMap"));
        let kinds = with_configmap(|inner| Misdeclared {
            inner,
            no_openapi: false,
            protobuf: Some("core.v1.NoSuchMessage"),
        });
        assert_eq!(
            check(&kinds),
            [
                "/v1/configmaps: protobuf message core.v1.NoSuchMessage is not generated (scripts/gen_pb_schema.py)"
            ]
        );
    }

    #[test]
    fn a_kind_without_a_printer_or_declared_twice_fails_the_check() {
        let mut kinds = builtin();
        kinds.push(Arc::new(
            Builtin::<k8s_openapi::api::core::v1::ConfigMap>::new(builtin::info::<
                k8s_openapi::api::core::v1::ConfigMap,
            >(
                "configmap", &["cm"], &[], &[]
            )),
        ));
        assert_eq!(
            check(&kinds),
            [
                "/v1/configmaps: no printer declared",
                "resource /v1/configmaps declared 2 times",
                "kind /v1 ConfigMap declared 2 times",
            ]
        );
    }

    #[test]
    fn two_federated_versions_of_a_kind_fail_the_check() {
        use k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscaler;
        let mut kinds: Vec<Arc<dyn Strategy>> = builtin()
            .into_iter()
            .filter(|s| !(s.info().group == "autoscaling" && s.info().version == "v1"))
            .collect();
        kinds.push(Arc::new(
            Builtin::<HorizontalPodAutoscaler>::new(builtin::info::<HorizontalPodAutoscaler>(
                "horizontalpodautoscaler",
                &["hpa"],
                &["all"],
                &["status"],
            ))
            .printer(crate::printers::HORIZONTAL_POD_AUTOSCALER)
            .federated(),
        ));
        assert_eq!(
            check(&kinds),
            [
                "autoscaling/v1/horizontalpodautoscalers: federated, and so is version v2 of HorizontalPodAutoscaler"
            ]
        );
    }
}
