//! The health checks kube-apiserver has beyond `ping` and `log`, under the
//! names clients and the conformance specs look for (`/healthz?verbose`,
//! `/livez?verbose`, `/readyz?verbose`):
//!
//! - `etcd` (healthz, livez): the store answers (probed every second);
//! - `informer-sync` (readyz): every resource's watch cache has loaded, which
//!   the registry does before the server starts serving;
//! - `loopback-serving-certificate` (healthz, livez): nothing to wait for;
//! - `poststarthook/<name>`: kube-apiserver's post-start hooks, each passing
//!   once this server's equivalent of the hook's work is in place: the
//!   bootstrap namespaces and `default/kubernetes` Service
//!   (`bootstrap-controller`, `start-system-namespaces-controller`), the
//!   CustomResourceDefinition controller (`start-apiextensions-*`,
//!   `crd-informer-synced`), the APIService controllers
//!   (`apiservice-*`, `kube-apiserver-autoregistration`), the bootstrap RBAC
//!   policy (`rbac/bootstrap-roles`), the system PriorityClasses
//!   (`scheduling/bootstrap-system-priority-classes`), kube's bootstrap
//!   FlowSchemas and PriorityLevelConfigurations
//!   (`priority-and-fairness-config-producer`), the default ServiceCIDR
//!   (`start-kubernetes-service-cidr-controller`), and
//!   `autoregister-completion`: every group/version served at start has its
//!   APIService, Available. The hooks of components this server does not
//!   have (request throttling by priority and fairness, identity leases,
//!   the aggregator's proxy client certificate, …) have nothing to wait for
//!   and pass, as a finished hook does.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::Value;
use ubernetes_registry::Registry;
use ubernetes_registry::kinds::apiregistration::{GROUP, api_service_name};

use crate::health::{Endpoint, Health};
use crate::state::AppState;

const ALL: [Endpoint; 3] = [Endpoint::Healthz, Endpoint::Livez, Endpoint::Readyz];

/// Whether the object `namespace/name` of `group/version/resource` is in its
/// watch cache (a synchronous read, as health checks are).
fn cached(
    registry: &Registry,
    gvr: (&str, &str, &str),
    namespace: Option<&str>,
    name: &str,
) -> Option<Value> {
    let store = registry.get(gvr.0, gvr.1, gvr.2)?;
    let obj = store.cache().get(&store.key(namespace, name))?;
    serde_json::from_slice(&obj.json).ok()
}

fn require(ok: bool, why: impl FnOnce() -> String) -> Result<(), String> {
    if ok { Ok(()) } else { Err(why()) }
}

/// kube-apiserver 1.36's post-start hooks, in its order. `None`: the hook's
/// work has nothing to wait for here (done before the server listens, or
/// part of a component this server does not have: priority and fairness,
/// identity leases, a loopback client certificate, extension API servers).
const HOOKS: &[&str] = &[
    "start-apiserver-admission-initializer",
    "generic-apiserver-start-informers",
    "priority-and-fairness-config-consumer",
    "priority-and-fairness-filter",
    "storage-object-count-tracker-hook",
    "start-apiextensions-informers",
    "start-apiextensions-controllers",
    "crd-informer-synced",
    "start-system-namespaces-controller",
    "peer-endpoint-reconciler-controller",
    "start-cluster-authentication-info-controller",
    "start-kube-apiserver-identity-lease-controller",
    "start-kube-apiserver-identity-lease-garbage-collector",
    "storage-readiness",
    "start-legacy-token-tracking-controller",
    "start-service-ip-repair-controllers",
    "rbac/bootstrap-roles",
    "scheduling/bootstrap-system-priority-classes",
    "priority-and-fairness-config-producer",
    "bootstrap-controller",
    "start-kubernetes-service-cidr-controller",
    "aggregator-reload-proxy-client-cert",
    "start-kube-aggregator-informers",
    "apiservice-status-local-available-controller",
    "apiservice-status-remote-available-controller",
    "apiservice-registration-controller",
    "apiservice-wait-for-first-sync",
    "apiservice-discovery-controller",
    "kube-apiserver-autoregistration",
];

type Check = Box<dyn Fn() -> Result<(), String> + Send + Sync>;

/// What a hook waits for here, if anything.
fn hook_check(registry: &Arc<Registry>, hook: &str) -> Option<Check> {
    let r = registry.clone();
    let check: Check = match hook {
        "start-system-namespaces-controller" => Box::new(move || {
            for ns in ["kube-system", "kube-public", "kube-node-lease"] {
                require(
                    cached(&r, ("", "v1", "namespaces"), None, ns).is_some(),
                    || format!("namespace {ns} does not exist yet"),
                )?;
            }
            Ok(())
        }),
        "rbac/bootstrap-roles" => Box::new(move || {
            require(
                cached(&r, (RBAC, "v1", "clusterroles"), None, "cluster-admin").is_some(),
                || "the bootstrap ClusterRoles do not exist yet".to_string(),
            )
        }),
        "scheduling/bootstrap-system-priority-classes" => Box::new(move || {
            for (name, _, _) in ubernetes_registry::kinds::platform::SYSTEM_PRIORITY_CLASSES {
                require(
                    cached(
                        &r,
                        ("scheduling.k8s.io", "v1", "priorityclasses"),
                        None,
                        name,
                    )
                    .is_some(),
                    || format!("PriorityClass {name} does not exist yet"),
                )?;
            }
            Ok(())
        }),
        "priority-and-fairness-config-producer" => Box::new(move || {
            let (pls, fss) = ubernetes_registry::kinds::flowcontrol::bootstrap_names();
            let group = "flowcontrol.apiserver.k8s.io";
            for (resource, names) in [("prioritylevelconfigurations", pls), ("flowschemas", fss)] {
                for name in names {
                    require(
                        cached(&r, (group, "v1", resource), None, &name).is_some(),
                        || format!("{resource} {name} does not exist yet"),
                    )?;
                }
            }
            Ok(())
        }),
        "start-kubernetes-service-cidr-controller" => Box::new(move || {
            let name = ubernetes_registry::kinds::ipaddress::DEFAULT_SERVICE_CIDR;
            require(
                cached(&r, ("networking.k8s.io", "v1", "servicecidrs"), None, name).is_some(),
                || format!("the default ServiceCIDR {name} does not exist yet"),
            )
        }),
        "bootstrap-controller" => Box::new(move || {
            require(
                cached(&r, ("", "v1", "services"), Some("default"), "kubernetes").is_some(),
                || "the default/kubernetes Service does not exist yet".to_string(),
            )
        }),
        _ => return None,
    };
    Some(check)
}

const RBAC: &str = "rbac.authorization.k8s.io";

/// Add the checks to `health`, in kube-apiserver's order; the `etcd` probe
/// runs until the registry stops.
pub fn add_checks(health: &Health, state: &AppState) {
    let registry = state.registry.clone();
    let live = [Endpoint::Healthz, Endpoint::Livez];

    health.add_check("loopback-serving-certificate", &live, || Ok(()));
    let store_ok = Arc::new(AtomicBool::new(true));
    {
        let store_ok = store_ok.clone();
        let storage = registry.storage().clone();
        let stop = registry.stop_token();
        tokio::spawn(async move {
            let probe = async {
                loop {
                    let answered =
                        tokio::time::timeout(Duration::from_secs(2), storage.current_revision())
                            .await;
                    store_ok.store(matches!(answered, Ok(Ok(_))), Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            };
            tokio::select! {
                () = stop.cancelled() => {}
                () = probe => {}
            }
        });
    }
    health.add_check("etcd", &live, move || {
        require(store_ok.load(Ordering::Relaxed), || {
            "the store does not answer".to_string()
        })
    });
    health.add_check("informer-sync", &[Endpoint::Readyz], || Ok(()));

    for hook in HOOKS {
        let name = format!("poststarthook/{hook}");
        match hook_check(&registry, hook) {
            Some(check) => health.add_check(&name, &ALL, check),
            None => health.add_check(&name, &ALL, || Ok(())),
        }
    }

    // kube: every APIService registered at start is Available.
    let mut at_start: Vec<String> = state
        .resources()
        .iter()
        .filter(|r| r.group != GROUP)
        .map(|r| api_service_name(&r.group, &r.version))
        .collect();
    at_start.sort();
    at_start.dedup();
    let r = registry.clone();
    health.add_check("autoregister-completion", &ALL, move || {
        let missing: Vec<&str> = at_start
            .iter()
            .filter(|name| {
                let available = cached(&r, (GROUP, "v1", "apiservices"), None, name)
                    .and_then(|a| {
                        a.pointer("/status/conditions")?
                            .as_array()?
                            .iter()
                            .find(|c| c["type"] == "Available")
                            .map(|c| c["status"] == "True")
                    })
                    .unwrap_or(false);
                !available
            })
            .map(String::as_str)
            .collect();
        require(missing.is_empty(), || {
            format!("missing APIService: {missing:?}")
        })
    });
    for hook in [
        "apiservice-openapi-controller",
        "apiservice-openapiv3-controller",
    ] {
        health.add_check(&format!("poststarthook/{hook}"), &ALL, || Ok(()));
    }
}
