//! The health checks kube-apiserver has beyond `ping` and `log`, under the
//! names clients and the conformance specs look for (`/healthz?verbose`,
//! `/livez?verbose`, `/readyz?verbose`):
//!
//! - `etcd`: the store answers (probed every second);
//! - `informer-sync` (readyz): every resource's watch cache has loaded, which
//!   the registry does before the server starts serving;
//! - `poststarthook/<name>`: kube-apiserver's post-start hooks, each passing
//!   once this server's equivalent of the hook's work is in place: the
//!   bootstrap namespaces and `default/kubernetes` Service
//!   (`bootstrap-controller`, `start-system-namespaces-controller`), the
//!   CustomResourceDefinition controller (`start-apiextensions-*`,
//!   `crd-informer-synced`), the APIService controllers
//!   (`apiservice-*`, `kube-apiserver-autoregistration`), and
//!   `autoregister-completion`: every group/version served at start has its
//!   APIService, Available, and the system PriorityClasses
//!   (`scheduling/bootstrap-system-priority-classes`). The hook whose work
//!   this server has no part of (`start-cluster-authentication-info-controller`:
//!   there are no extension API servers to publish client CAs to) has nothing
//!   to wait for and passes, as a finished hook does.

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

/// Add the checks to `health`; the `etcd` probe runs until the registry stops.
pub fn add_checks(health: &Health, state: &AppState) {
    let registry = state.registry.clone();

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
    health.add_check("etcd", &ALL, move || {
        require(store_ok.load(Ordering::Relaxed), || {
            "the store does not answer".to_string()
        })
    });
    health.add_check("informer-sync", &[Endpoint::Readyz], || Ok(()));

    // Hooks whose work is done before the server listens (the registry, its
    // admission and watch caches, the CRD controller's initial sync).
    for hook in [
        "start-kube-apiserver-admission-initializer",
        "generic-apiserver-start-informers",
        "start-apiextensions-informers",
        "start-apiextensions-controllers",
        "crd-informer-synced",
        "start-cluster-authentication-info-controller",
        "start-kube-aggregator-informers",
        "apiservice-registration-controller",
        "apiservice-status-available-controller",
        "kube-apiserver-autoregistration",
        "apiservice-openapi-controller",
    ] {
        health.add_check(&format!("poststarthook/{hook}"), &ALL, || Ok(()));
    }

    let r = registry.clone();
    health.add_check(
        "poststarthook/scheduling/bootstrap-system-priority-classes",
        &ALL,
        move || {
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
        },
    );
    let r = registry.clone();
    health.add_check("poststarthook/bootstrap-controller", &ALL, move || {
        require(
            cached(&r, ("", "v1", "services"), Some("default"), "kubernetes").is_some(),
            || "the default/kubernetes Service does not exist yet".to_string(),
        )
    });
    let r = registry.clone();
    health.add_check(
        "poststarthook/start-system-namespaces-controller",
        &ALL,
        move || {
            for ns in ["kube-system", "kube-public", "kube-node-lease"] {
                require(
                    cached(&r, ("", "v1", "namespaces"), None, ns).is_some(),
                    || format!("namespace {ns} does not exist yet"),
                )?;
            }
            Ok(())
        },
    );

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
}
