//! The `clusterset.local` names of the Multi-cluster Services API
//! (KEP-1645, SPEC §3.14), served by the embedded DNS server of
//! `--dns-bind` in its second zone (`--clusterset-zone`, default
//! `clusterset.local`).
//!
//! For every ServiceExport `ns/svc` in the federation, the name
//! `svc.ns.svc.<clusterset-zone>` answers A / AAAA with the **ready
//! endpoint addresses of every exporting cluster**: the members that hold
//! a copy of the federated Service `ns/svc` and are Ready (the Cluster
//! controller's probe), their EndpointSlices in `ns` labelled
//! `kubernetes.io/service-name=svc`, the endpoints whose `conditions.ready`
//! is not false (unset counts as ready, as Kubernetes reads it).
//!
//! The EndpointSlices the MCS controller writes into members (the other
//! members' endpoints, labelled `multicluster.kubernetes.io/source-cluster`)
//! are left out by the watch's label selector, so no endpoint is counted
//! twice.
//!
//! Inside a cluster, KEP-1645 resolves a `ClusterSetIP` ServiceImport to its
//! VIP, an address the cluster's own proxy routes. The federation has no
//! data plane and so no VIP to answer: its name answers the endpoints
//! themselves, as a headless clusterset Service's name does. A ServiceExport
//! whose exporting clusters have no ready endpoint, and a name with no
//! ServiceExport, answer NXDOMAIN (with the zone's SOA).
//!
//! Inputs are shared caches, no watch of its own: the ServiceExports through
//! the federation's shared reflector ([`crate::objects`]), the member copies
//! of Services through the federated informer of Services, and the members'
//! EndpointSlices through an informer of member objects
//! ([`crate::informer::Informers::for_member_objects`]), started at the
//! first ServiceExport (a federation without MCS watches nothing more). The
//! table is rebuilt whole on any change of these or of the member set, and
//! swapped into the zone at once.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use kube::ResourceExt as _;
use kube::api::DynamicObject;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use ubernetes_dns::{RecordSet, RecordStore};

use crate::Context;
use crate::dns_records::SERVICE_NAME_LABEL;
use crate::informer::{FederatedInformer, ObjectKey, Selection};
use crate::kinds::FederatedKind;

// The label the MCS controller puts on the EndpointSlices it writes into
// a member (the cluster their endpoints come from).
use ubernetes_api::mcs::LABEL_SOURCE_CLUSTER as SOURCE_CLUSTER_LABEL;

/// An exported Service as its clusterset name needs it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportedService {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Per exporting cluster (Ready, with a copy), its ready endpoint
    /// addresses.
    pub clusters: BTreeMap<String, BTreeSet<IpAddr>>,
}

/// The clusterset name of Service `ns/svc` in `zone` (with or without the
/// final dot): `svc.ns.svc.<zone>.`, lower case.
pub fn clusterset_name(namespace: &str, name: &str, zone: &str) -> String {
    format!("{name}.{namespace}.svc.{}.", zone.trim_end_matches('.')).to_ascii_lowercase()
}

/// The records of every exported Service: its clusterset name answers
/// every exporting cluster's ready addresses; one without any has no
/// record (NXDOMAIN).
pub fn build_records(zone: &str, exports: &[ExportedService]) -> BTreeMap<String, RecordSet> {
    exports
        .iter()
        .filter_map(|e| {
            let addresses: BTreeSet<IpAddr> = e.clusters.values().flatten().copied().collect();
            (!addresses.is_empty()).then(|| {
                (
                    clusterset_name(&e.namespace, &e.name, zone),
                    RecordSet::Addresses(addresses.into_iter().collect()),
                )
            })
        })
        .collect()
}

/// The ready endpoint addresses of an EndpointSlice's `endpoints` (an
/// endpoint whose `conditions.ready` is false is left out; an address that
/// is no IP, as in an `FQDN` slice, too).
pub fn ready_addresses(slice: &serde_json::Value) -> Vec<IpAddr> {
    let Some(endpoints) = slice.get("endpoints").and_then(|e| e.as_array()) else {
        return Vec::new();
    };
    let not_ready = |e: &&serde_json::Value| {
        e.pointer("/conditions/ready") == Some(&serde_json::Value::Bool(false))
    };
    endpoints
        .iter()
        .filter(|e| !not_ready(e))
        .filter_map(|e| e.get("addresses")?.as_array())
        .flatten()
        .filter_map(|a| a.as_str()?.parse().ok())
        .collect()
}

/// Where the lean cache keeps a slice's ready addresses.
const READY_FIELD: &str = "readyAddresses";

/// What the EndpointSlice informer keeps of a slice: its name, namespace
/// and labels, and its ready addresses (as text, under `readyAddresses`).
fn lean_slice(slice: &mut DynamicObject) {
    let meta = &mut slice.metadata;
    meta.managed_fields = None;
    meta.annotations = None;
    meta.owner_references = None;
    let ready: Vec<String> = ready_addresses(&slice.data)
        .iter()
        .map(IpAddr::to_string)
        .collect();
    slice.data = serde_json::json!({ READY_FIELD: ready });
}

/// The members' own EndpointSlices of Services, without those the MCS
/// controller writes (`source-cluster`), lean.
fn endpoint_slices(ctx: &Context) -> Arc<FederatedInformer> {
    let kind = FederatedKind::new(
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        "endpointslices",
        true,
    );
    let labels = format!("{SERVICE_NAME_LABEL},!{SOURCE_CLUSTER_LABEL}");
    let modify = lean_slice;
    ctx.informers
        .for_member_objects(&kind, Selection { labels, modify })
}

/// Per member and Service, the ready addresses of its slices there, in one
/// pass over the informer's caches.
fn addresses_by_service(
    slices: &FederatedInformer,
) -> HashMap<(String, ObjectKey), BTreeSet<IpAddr>> {
    let mut out: HashMap<(String, ObjectKey), BTreeSet<IpAddr>> = HashMap::new();
    for member in slices.clusters() {
        for s in slices.list(&member.name) {
            // The selector excludes them; a cache filled before is checked too.
            if s.labels().contains_key(SOURCE_CLUSTER_LABEL) {
                continue;
            }
            let Some(svc) = s.labels().get(SERVICE_NAME_LABEL) else {
                continue;
            };
            let ready = s
                .data
                .get(READY_FIELD)
                .and_then(serde_json::Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|a| a.as_str()?.parse::<IpAddr>().ok());
            out.entry((
                member.name.clone(),
                ObjectKey::new(s.namespace().as_deref(), svc),
            ))
            .or_default()
            .extend(ready);
        }
    }
    out
}

/// Wake `changed` on every item of `stream` until `stop`.
fn forward<T: Send + 'static>(
    stream: impl futures::Stream<Item = T> + Send + 'static,
    changed: Arc<Notify>,
    stop: CancellationToken,
) {
    tokio::spawn(
        stream
            .take_until(stop.cancelled_owned())
            .for_each(move |_| {
                changed.notify_one();
                std::future::ready(())
            }),
    );
}

/// Keep the zone `--clusterset-zone` of `store` filled with the names of
/// every ServiceExport until `stop`. Returns at once (with an error in the
/// log) if the store has no such zone.
pub async fn run(ctx: Arc<Context>, store: Arc<RecordStore>, stop: CancellationToken) {
    let zone = ctx.options.dns.clusterset_zone.clone();
    if store.snapshot_of(&zone).is_none() {
        tracing::error!(%zone, "the DNS server has no clusterset zone; its names are not served");
        return;
    }
    let changed = Arc::new(Notify::new());
    let exports = ctx.objects.for_kind(&crate::mcs::export_kind());
    forward(exports.triggers(), changed.clone(), stop.clone());
    let services = ctx
        .informers
        .for_kind(&FederatedKind::new("", "v1", "Service", "services", true));
    forward(services.subscribe(), changed.clone(), stop.clone());
    let mut slices: Option<Arc<FederatedInformer>> = None;
    let mut member_changes = ctx.members.subscribe();
    tracing::info!(%zone, "clusterset DNS records controller started");
    loop {
        let exported: Vec<ObjectKey> = exports
            .store()
            .state()
            .iter()
            .filter(|e| e.metadata.deletion_timestamp.is_none())
            .map(|e| ObjectKey::new(e.namespace().as_deref(), &e.name_any()))
            .collect();
        if slices.is_none() && !exported.is_empty() {
            let informer = endpoint_slices(&ctx);
            forward(informer.subscribe(), changed.clone(), stop.clone());
            slices = Some(informer);
        }
        let addresses = slices
            .as_deref()
            .map(addresses_by_service)
            .unwrap_or_default();
        let services: Vec<ExportedService> = exported
            .into_iter()
            .map(|key| {
                let clusters = services
                    .copies(&key)
                    .into_keys()
                    .filter(|c| ctx.members.get(c).is_some_and(|m| m.ready))
                    .map(|c| {
                        let ready = addresses
                            .get(&(c.clone(), key.clone()))
                            .cloned()
                            .unwrap_or_default();
                        (c, ready)
                    })
                    .collect();
                ExportedService {
                    namespace: key.namespace.unwrap_or_default(),
                    name: key.name,
                    clusters,
                }
            })
            .collect();
        let records = build_records(&zone, &services);
        let names = records.len();
        if let Some(rejected) = store.replace_in(&zone, records)
            && rejected > 0
        {
            tracing::warn!(
                rejected,
                "clusterset DNS names not valid in the zone were left out"
            );
        }
        tracing::trace!(names, "clusterset DNS records rebuilt");
        tokio::select! {
            () = stop.cancelled() => break,
            () = changed.notified() => {}
            r = member_changes.changed() => if r.is_err() { break },
            // A resync now and then, whatever was missed.
            () = tokio::time::sleep(Duration::from_secs(30)) => {}
        }
        // Let a burst of changes settle into one rebuild.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))
    }

    #[test]
    fn ready_addresses_leave_out_endpoints_not_ready_and_names() {
        let slice = json!({"endpoints": [
            {"addresses": ["10.1.0.1"], "conditions": {"ready": true}},
            {"addresses": ["10.1.0.2"]},
            {"addresses": ["10.1.0.3"], "conditions": {"ready": false}},
            {"addresses": ["fd00::4", "10.1.0.4"], "conditions": {}},
            {"addresses": ["db.example.com"]},
            {"conditions": {"ready": true}},
        ]});
        assert_eq!(
            ready_addresses(&slice),
            [
                ip("10.1.0.1"),
                ip("10.1.0.2"),
                ip("fd00::4"),
                ip("10.1.0.4")
            ]
        );
        assert!(ready_addresses(&json!({})).is_empty());
        assert!(ready_addresses(&json!({"endpoints": "x"})).is_empty());
    }

    #[test]
    fn the_lean_slice_keeps_the_labels_and_the_ready_addresses() {
        let Ok(mut slice) = serde_json::from_value::<DynamicObject>(json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web-1", "namespace": "shop",
                "labels": {SERVICE_NAME_LABEL: "web"},
                "annotations": {"a": "b"}},
            "addressType": "IPv4",
            "endpoints": [
                {"addresses": ["10.1.0.1"], "conditions": {"ready": true}, "nodeName": "n1"},
                {"addresses": ["10.1.0.2"], "conditions": {"ready": false}},
            ],
            "ports": [{"port": 8080}],
        })) else {
            panic!("a slice parses")
        };
        lean_slice(&mut slice);
        assert_eq!(slice.data, json!({READY_FIELD: ["10.1.0.1"]}));
        assert_eq!(
            slice.labels().get(SERVICE_NAME_LABEL).map(String::as_str),
            Some("web")
        );
        assert!(slice.metadata.annotations.is_none());
    }

    #[test]
    fn an_exported_service_answers_every_exporting_cluster_s_addresses() {
        let exports = [
            ExportedService {
                namespace: "Shop".into(),
                name: "web".into(),
                clusters: BTreeMap::from([
                    (
                        "east".into(),
                        BTreeSet::from([ip("10.1.0.1"), ip("10.1.0.2")]),
                    ),
                    (
                        "west".into(),
                        BTreeSet::from([ip("10.2.0.1"), ip("10.1.0.1")]),
                    ),
                ]),
            },
            // Exported, nothing ready anywhere: no record.
            ExportedService {
                namespace: "shop".into(),
                name: "db".into(),
                clusters: BTreeMap::from([("east".into(), BTreeSet::new())]),
            },
            ExportedService {
                namespace: "shop".into(),
                name: "cache".into(),
                clusters: BTreeMap::new(),
            },
        ];
        let records = build_records("clusterset.local", &exports);
        assert_eq!(
            records,
            BTreeMap::from([(
                "web.shop.svc.clusterset.local.".to_string(),
                RecordSet::Addresses(vec![ip("10.1.0.1"), ip("10.1.0.2"), ip("10.2.0.1")]),
            )])
        );
        assert_eq!(
            clusterset_name("ns", "svc", "mcs.example."),
            "svc.ns.svc.mcs.example."
        );
    }
}
