//! The DNS records of federated Services (SPEC §3.9; Federation v1's
//! `federation-controller/service/dns`), served by the embedded DNS server
//! (`ubernetes-dns`) when `ubernetes serve --dns-bind` is given.
//!
//! For every federated Service of type LoadBalancer `svc` in namespace
//! `ns`, with the federation's name `fed` and the zone `suffix`
//! (`--federation-name`, `--dns-zone`):
//! - global `svc.ns.fed.svc.suffix`: every healthy address;
//! - per region `r` of a cluster holding a copy,
//!   `svc.ns.fed.svc.r.suffix`: the healthy addresses of the clusters in
//!   `r`, or a CNAME to the global name when there are none;
//! - per zone `z` of such a cluster, `svc.ns.fed.svc.z.r.suffix`: the
//!   healthy addresses of the clusters in `z` (of region `r`), or a CNAME to
//!   the region's name. Every zone of a cluster spanning several gets its
//!   records (Federation v1 wrote only the first: kubernetes#50529).
//!
//! A cluster's zones and region are its Cluster's `status.zones` /
//! `status.region`, which the Cluster controller fills from its Nodes'
//! `topology.kubernetes.io/zone` / `…/region` labels (see [`crate::clusters`]).
//! A cluster without a region has only the global level; one without zones
//! has no zone level.
//!
//! An address is a member copy's `status.loadBalancer.ingress[].ip` (A or
//! AAAA) or `.hostname`; it is **healthy** while its cluster is Ready (the
//! Cluster controller's probe) and the member's Service has a ready
//! endpoint: an EndpointSlice of the member labelled
//! `kubernetes.io/service-name=<svc>` with an endpoint whose
//! `conditions.ready` is not false (Kubernetes reads an unset `ready` as
//! true). So an address leaves every answer within one
//! `--cluster-monitor-period` of its cluster failing, or as soon as the
//! member reports no ready endpoint. Hostnames: a level whose healthy
//! addresses are all hostnames answers a CNAME to one of them (the one of
//! the cluster with most ready endpoints, then by name); where IPs and
//! hostnames mix, the IPs answer (Federation v1 resolved hostnames to A
//! records through the host's resolver at write time; a CNAME keeps the
//! cloud's own, changing, addresses).
//!
//! A level with no healthy address and nothing above it (the global name)
//! has no record: NXDOMAIN. A deleted Service's names go at once (v1 left
//! its CNAMEs behind).
//!
//! Per Service, annotation `federation.kubernetes.io/dns-policy`:
//! - `all` (default): every healthy address;
//! - `weighted`: every healthy address, ordered per answer at random in
//!   proportion to its cluster's **ready endpoints** for the Service (the
//!   replicas that serve it there, as the member reports them, so what the
//!   scheduler placed and what actually became ready), so the first
//!   address, which clients take, follows the replicas;
//! - `failover`: only the clusters named by
//!   `federation.kubernetes.io/dns-primary-cluster` (a comma list allows
//!   several) while one of them has a healthy address, else every other
//!   healthy cluster; at every level, so a zone without the primary
//!   CNAMEs up to where it is.
//!
//! Who owns a name (issue 28: no tenant takes over another's name):
//! - a Service's names (every name with a `svc` label below the zone, the
//!   shape of Federation v1's service names) belong to Services: an
//!   Ingress host there is never served nor published;
//! - an Ingress host claimed by several Ingresses belongs to the **oldest
//!   claim** (`creationTimestamp`, then namespace/name), which keeps it
//!   while it exists, also while it has no healthy address (then the name
//!   has no record: the newer claim's addresses are never served);
//! - a losing claim gets a Warning event `DNSNameConflict` on its Ingress,
//!   naming the winner (ExternalDNS's ownership rule is the same: a name
//!   it does not own is never written).
//!
//! The table is rebuilt whole (it is small: a few names per Service and
//! region) on any change of the federated Services, their member copies,
//! the members' EndpointSlices, the Clusters or their health, and swapped
//! into the server's [`RecordStore`] at once.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::Ingress;
use kube::ResourceExt as _;
use kube::api::{Api, DynamicObject};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt as _, watcher as watch_fn};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use ubernetes_api::Cluster;
use ubernetes_dns::{RecordSet, RecordStore};

use crate::Context;
use crate::informer::{FederatedInformer, ObjectKey, Selection};
use crate::kinds::FederatedKind;
use crate::members::Members;

/// The annotation choosing how a Service's answers are drawn.
pub const POLICY_ANNOTATION: &str = "federation.kubernetes.io/dns-policy";
/// The primary cluster(s) of the `failover` policy.
pub const PRIMARY_ANNOTATION: &str = "federation.kubernetes.io/dns-primary-cluster";
/// The label tying an EndpointSlice to its Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// How a Service's healthy addresses become answers.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Policy {
    /// Every healthy address.
    #[default]
    All,
    /// Every healthy address, first in proportion to ready endpoints.
    Weighted,
    /// The primary clusters while one is healthy, else the others.
    Failover(BTreeSet<String>),
}

impl Policy {
    /// The policy of a Service from its annotations (unknown values and a
    /// failover without a primary are `all`).
    pub fn of(annotations: &BTreeMap<String, String>) -> Self {
        match annotations.get(POLICY_ANNOTATION).map(|s| s.trim()) {
            Some("weighted") => Self::Weighted,
            Some("failover") => {
                let primary: BTreeSet<String> = annotations
                    .get(PRIMARY_ANNOTATION)
                    .map(|p| {
                        p.split(',')
                            .map(|s| s.trim().to_string())
                            .filter(|s| !s.is_empty())
                            .collect()
                    })
                    .unwrap_or_default();
                if primary.is_empty() {
                    Self::All
                } else {
                    Self::Failover(primary)
                }
            }
            _ => Self::All,
        }
    }
}

/// What the records need of a member cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterInfo {
    /// Its zones (Cluster `status.zones`).
    pub zones: Vec<String>,
    /// Its region (Cluster `status.region`).
    pub region: Option<String>,
    /// Whether the Cluster controller finds it Ready.
    pub ready: bool,
}

/// A load-balancer address of a member copy.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Address {
    /// `ingress[].ip`.
    Ip(IpAddr),
    /// `ingress[].hostname`.
    Hostname(String),
}

/// A member copy of a federated Service, as the records need it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceCopy {
    /// Its `status.loadBalancer.ingress`.
    pub addresses: Vec<Address>,
    /// The ready endpoints of its EndpointSlices in the member.
    pub ready_endpoints: u32,
}

/// A federated LoadBalancer Service and its member copies.
#[derive(Clone, Debug, Default)]
pub struct FederatedService {
    /// Its uid (the owner of its DNSEndpoint).
    pub uid: String,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its `dns-policy`.
    pub policy: Policy,
    /// Its copies, by cluster name.
    pub copies: BTreeMap<String, ServiceCopy>,
}

/// The DNS names of one Service.
struct Names {
    prefix: String,
    suffix: String,
}

impl Names {
    fn global(&self) -> String {
        format!("{}.{}", self.prefix, self.suffix)
    }
    fn region(&self, region: &str) -> String {
        format!("{}.{region}.{}", self.prefix, self.suffix)
    }
    fn zone(&self, zone: &str, region: &str) -> String {
        format!("{}.{zone}.{region}.{}", self.prefix, self.suffix)
    }
}

/// Whether `s` can be one DNS label (what a zone or region name must be to
/// appear in a name; anything else is left out of the levels).
fn is_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The records of every Service: name (absolute, lower case) → records.
/// `suffix` is the DNS zone (with or without the final dot).
pub fn build_records(
    federation: &str,
    suffix: &str,
    clusters: &BTreeMap<String, ClusterInfo>,
    services: &[FederatedService],
) -> BTreeMap<String, RecordSet> {
    let suffix = format!("{}.", suffix.trim_end_matches('.')).to_ascii_lowercase();
    let mut out = BTreeMap::new();
    for svc in services {
        let names = Names {
            prefix: format!("{}.{}.{federation}.svc", svc.name, svc.namespace).to_ascii_lowercase(),
            suffix: suffix.clone(),
        };
        // The clusters with a copy that we know (the others: no levels).
        let placed: BTreeMap<&str, (&ClusterInfo, &ServiceCopy)> = svc
            .copies
            .iter()
            .filter_map(|(c, copy)| clusters.get(c).map(|info| (c.as_str(), (info, copy))))
            .collect();
        let healthy: Vec<&str> = placed
            .iter()
            .filter(|(_, (info, copy))| {
                info.ready && copy.ready_endpoints > 0 && !copy.addresses.is_empty()
            })
            .map(|(c, _)| *c)
            .collect();
        let serving: Vec<&str> = match &svc.policy {
            Policy::Failover(primary) => {
                let (p, rest): (Vec<&str>, Vec<&str>) =
                    healthy.iter().partition(|c| primary.contains(**c));
                if p.is_empty() { rest } else { p }
            }
            _ => healthy,
        };
        let weighted = svc.policy == Policy::Weighted;
        let level = |members: &mut dyn Iterator<Item = &str>| -> Option<RecordSet> {
            addresses_of(members.map(|c| placed[c].1), weighted)
        };
        let mut set =
            |name: String, records: Option<RecordSet>, up: Option<String>| match (records, up) {
                (Some(r), _) => {
                    out.insert(name, r);
                }
                (None, Some(up)) => {
                    out.insert(name, RecordSet::Cname(up));
                }
                (None, None) => {}
            };
        set(names.global(), level(&mut serving.iter().copied()), None);
        let mut regions: BTreeSet<&str> = BTreeSet::new();
        let mut zones: BTreeSet<(&str, &str)> = BTreeSet::new();
        for (info, _) in placed.values() {
            let Some(region) = info.region.as_deref().filter(|r| is_label(r)) else {
                continue;
            };
            regions.insert(region);
            for z in info.zones.iter().filter(|z| is_label(z)) {
                zones.insert((z, region));
            }
        }
        for region in &regions {
            let in_region = serving
                .iter()
                .copied()
                .filter(|c| placed[c].0.region.as_deref() == Some(*region));
            set(
                names.region(region),
                level(&mut { in_region }),
                Some(names.global()),
            );
        }
        for (zone, region) in &zones {
            let in_zone = serving.iter().copied().filter(|c| {
                let info = placed[c].0;
                info.region.as_deref() == Some(*region) && info.zones.iter().any(|z| z == zone)
            });
            set(
                names.zone(zone, region),
                level(&mut { in_zone }),
                Some(names.region(region)),
            );
        }
    }
    out
}

/// A federated Ingress and its member copies (`ServiceCopy::ready_endpoints`
/// of a copy: the ready endpoints, in that member, of the Services its
/// rules send to; 1 for an Ingress that names no Service).
#[derive(Clone, Debug, Default)]
pub struct FederatedIngress {
    /// Its uid (the owner of its DNSEndpoint).
    pub uid: String,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its `spec.rules[].host`s.
    pub hosts: Vec<String>,
    /// Its `metadata.creationTimestamp` (the age of its claims).
    pub created: Option<jiff::Timestamp>,
    /// Its `dns-policy`.
    pub policy: Policy,
    /// Its copies, by cluster name.
    pub copies: BTreeMap<String, ServiceCopy>,
}

/// Whether `host` (lower case, no final dot) is a name strictly inside the
/// zone `suffix` (lower case, final dot) that one record can serve (no
/// wildcard).
pub(crate) fn host_in_zone(host: &str, suffix: &str) -> bool {
    let zone = suffix.trim_end_matches('.');
    host.len() > zone.len() + 1
        && host.ends_with(zone)
        && host.as_bytes()[host.len() - zone.len() - 1] == b'.'
        && host.split('.').all(is_label)
}

/// Whether the in-zone `host` has the shape of a Service's name (a `svc`
/// label below the zone `suffix`): such names belong to Services.
pub(crate) fn is_service_name(host: &str, suffix: &str) -> bool {
    let zone = suffix.trim_end_matches('.');
    host.strip_suffix(zone)
        .and_then(|h| h.strip_suffix('.'))
        .is_some_and(|rel| rel.split('.').any(|l| l == "svc"))
}

/// A claim on an Ingress host that does not win.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostConflict {
    /// The losing Ingress (index into the claimants).
    pub loser: usize,
    /// The host (lower case, final dot).
    pub host: String,
    /// The winning Ingress (index), or `None`: a Service's name.
    pub winner: Option<usize>,
}

/// Who serves each Ingress host.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostClaims {
    /// Host (lower case, final dot; inside the zone or not) → the index of
    /// the Ingress that owns it.
    pub owners: BTreeMap<String, usize>,
    /// The claims that lose, by loser then host.
    pub conflicts: Vec<HostConflict>,
}

/// Decide who owns each host of `ingresses` (zone `suffix`): the oldest
/// claim (`creationTimestamp`, unknown last, then namespace and name) wins
/// and keeps it whatever its health; a Service's name
/// (`is_service_name`) is never an Ingress's. Wildcards and empty hosts
/// are not claims.
pub fn claim_hosts(suffix: &str, ingresses: &[FederatedIngress]) -> HostClaims {
    let zone = format!("{}.", suffix.trim_end_matches('.')).to_ascii_lowercase();
    let mut order: Vec<usize> = (0..ingresses.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&ingresses[a], &ingresses[b]);
        (x.created.is_none(), x.created, &x.namespace, &x.name).cmp(&(
            y.created.is_none(),
            y.created,
            &y.namespace,
            &y.name,
        ))
    });
    let mut claims = HostClaims::default();
    for i in order {
        for host in &ingresses[i].hosts {
            let host = host.trim_end_matches('.').to_ascii_lowercase();
            if host.is_empty() || host.starts_with("*.") {
                continue;
            }
            let fqdn = format!("{host}.");
            let winner = if host_in_zone(&host, &zone) && is_service_name(&host, &zone) {
                None
            } else {
                match claims.owners.get(&fqdn) {
                    None => {
                        claims.owners.insert(fqdn, i);
                        continue;
                    }
                    Some(&w) if w == i => continue,
                    Some(&w) => Some(w),
                }
            };
            let conflict = HostConflict {
                loser: i,
                host: fqdn,
                winner,
            };
            if !claims.conflicts.contains(&conflict) {
                claims.conflicts.push(conflict);
            }
        }
    }
    claims
        .conflicts
        .sort_by(|a, b| (a.loser, &a.host).cmp(&(b.loser, &b.host)));
    claims
}

/// The records of the hosts of every Ingress: each `spec.rules[].host`
/// inside the zone answers the healthy addresses of the Ingress's copies,
/// drawn by its policy, like a Service's global name (a host has no zone or
/// region level); nothing healthy, no record. Hosts outside the zone and
/// wildcards are not served; a host claimed twice is served from its owner
/// only ([`claim_hosts`]: the oldest claim; never a Service's name).
pub fn build_ingress_records(
    suffix: &str,
    clusters: &BTreeMap<String, ClusterInfo>,
    ingresses: &[FederatedIngress],
) -> BTreeMap<String, RecordSet> {
    let suffix = format!("{}.", suffix.trim_end_matches('.')).to_ascii_lowercase();
    let claims = claim_hosts(&suffix, ingresses);
    let mut out = BTreeMap::new();
    for (i, ing) in ingresses.iter().enumerate() {
        let healthy: Vec<(&str, &ServiceCopy)> = ing
            .copies
            .iter()
            .filter(|(c, copy)| {
                clusters.get(*c).is_some_and(|i| i.ready)
                    && copy.ready_endpoints > 0
                    && !copy.addresses.is_empty()
            })
            .map(|(c, copy)| (c.as_str(), copy))
            .collect();
        let serving: Vec<&ServiceCopy> = match &ing.policy {
            Policy::Failover(primary) => {
                let (p, rest): (Vec<_>, Vec<_>) =
                    healthy.iter().partition(|(c, _)| primary.contains(*c));
                (if p.is_empty() { rest } else { p })
                    .into_iter()
                    .map(|(_, copy)| copy)
                    .collect()
            }
            _ => healthy.iter().map(|(_, copy)| *copy).collect(),
        };
        let Some(records) = addresses_of(serving.into_iter(), ing.policy == Policy::Weighted)
        else {
            continue;
        };
        for (host, _) in claims.owners.iter().filter(|(_, o)| **o == i) {
            if host_in_zone(host.trim_end_matches('.'), &suffix) {
                out.insert(host.clone(), records.clone());
            }
        }
    }
    out
}

/// The message of a losing claim's `DNSNameConflict` event.
pub fn conflict_message(c: &HostConflict, ingresses: &[FederatedIngress], suffix: &str) -> String {
    let host = c.host.trim_end_matches('.');
    match c.winner.and_then(|w| ingresses.get(w)) {
        Some(w) => format!(
            "host {host} is claimed by Ingress {}/{}, whose claim is older; the oldest claim \
             keeps the name, so this Ingress's addresses are neither served nor published \
             for it (choose another host, or delete the other Ingress)",
            w.namespace, w.name
        ),
        None => format!(
            "host {host} has the shape of a federated Service's DNS name (a \"svc\" label in \
             zone {}); such names belong to Services, so this Ingress's addresses are neither \
             served nor published for it",
            suffix.trim_end_matches('.')
        ),
    }
}

/// The records of one level from its serving copies: the IPs (weighted by
/// ready endpoints, shared out over a copy's IPs), else a CNAME to the
/// hostname of the copy with most ready endpoints; `None` when empty.
fn addresses_of<'a>(
    copies: impl Iterator<Item = &'a ServiceCopy>,
    weighted: bool,
) -> Option<RecordSet> {
    let mut ips: BTreeMap<IpAddr, u32> = BTreeMap::new();
    let mut hostnames: Vec<(u32, &str)> = Vec::new();
    for copy in copies {
        let n_ips = copy
            .addresses
            .iter()
            .filter(|a| matches!(a, Address::Ip(_)))
            .count()
            .max(1);
        // 60 divides evenly among 1..6 addresses.
        let share = copy
            .ready_endpoints
            .saturating_mul(60)
            .checked_div(u32::try_from(n_ips).unwrap_or(u32::MAX))
            .unwrap_or(0);
        for a in &copy.addresses {
            match a {
                Address::Ip(ip) => {
                    let w = ips.entry(*ip).or_default();
                    *w = w.saturating_add(share);
                }
                Address::Hostname(h) => hostnames.push((copy.ready_endpoints, h)),
            }
        }
    }
    if !ips.is_empty() {
        return Some(if weighted {
            RecordSet::Weighted(ips.into_iter().collect())
        } else {
            RecordSet::Addresses(ips.into_keys().collect())
        });
    }
    hostnames.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    hostnames
        .first()
        .map(|(_, h)| RecordSet::Cname(h.to_string()))
}

/// The load-balancer addresses in a Service object's status.
pub fn load_balancer_addresses(status: Option<&serde_json::Value>) -> Vec<Address> {
    let mut out: Vec<Address> = status
        .and_then(|s| s.pointer("/loadBalancer/ingress"))
        .and_then(|i| i.as_array())
        .map(|items| {
            items
                .iter()
                .filter_map(|i| {
                    if let Some(ip) = i
                        .get("ip")
                        .and_then(|v| v.as_str())
                        .and_then(|s| s.parse().ok())
                    {
                        Some(Address::Ip(ip))
                    } else {
                        i.get("hostname")
                            .and_then(|v| v.as_str())
                            .filter(|h| !h.is_empty())
                            .map(|h| Address::Hostname(h.trim_end_matches('.').to_string()))
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out.dedup();
    out
}

/// The ready endpoints of one EndpointSlice (`conditions.ready` unset
/// counts as ready, as Kubernetes reads it).
pub fn ready_endpoints(slice: &DynamicObject) -> u32 {
    let n = slice
        .data
        .get("endpoints")
        .and_then(serde_json::Value::as_array)
        .map_or(0, |eps| {
            eps.iter()
                .filter(|e| {
                    e.pointer("/conditions/ready")
                        .and_then(serde_json::Value::as_bool)
                        .unwrap_or(true)
                })
                .count()
        });
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// What the EndpointSlice informer keeps of a slice: its name, namespace
/// and labels (the Service it belongs to), and each endpoint's readiness.
fn lean_slice(slice: &mut DynamicObject) {
    let meta = &mut slice.metadata;
    meta.managed_fields = None;
    meta.annotations = None;
    meta.owner_references = None;
    let endpoints: Vec<serde_json::Value> = slice
        .data
        .get("endpoints")
        .and_then(serde_json::Value::as_array)
        .map(|eps| {
            eps.iter()
                .map(|e| match e.pointer("/conditions/ready") {
                    Some(ready) => serde_json::json!({"conditions": {"ready": ready}}),
                    None => serde_json::json!({}),
                })
                .collect()
        })
        .unwrap_or_default();
    slice.data = serde_json::json!({ "endpoints": endpoints });
}

/// The members' EndpointSlices that belong to a Service (they carry the
/// service-name label): not copies of the federation's, so an informer of
/// their own ([`crate::informer::Informers::for_member_objects`]).
fn endpoint_slices(ctx: &Context) -> Arc<FederatedInformer> {
    ctx.informers.for_member_objects(
        &FederatedKind::new(
            "discovery.k8s.io",
            "v1",
            "EndpointSlice",
            "endpointslices",
            true,
        ),
        Selection {
            labels: SERVICE_NAME_LABEL.to_string(),
            modify: lean_slice,
        },
    )
}

/// Per member and Service (namespace/name), the ready endpoints of its
/// EndpointSlices there, counted in one pass over the informer's caches.
struct EndpointCounts(HashMap<(String, ObjectKey), u32>);

impl EndpointCounts {
    fn of(slices: &FederatedInformer) -> Self {
        let mut counts: HashMap<(String, ObjectKey), u32> = HashMap::new();
        for member in slices.clusters() {
            for s in slices.list(&member.name) {
                let Some(svc) = s.labels().get(SERVICE_NAME_LABEL) else {
                    continue;
                };
                let key = ObjectKey::new(s.namespace().as_deref(), svc);
                let n = counts.entry((member.name.clone(), key)).or_default();
                *n = n.saturating_add(ready_endpoints(&s));
            }
        }
        Self(counts)
    }

    fn ready(&self, cluster: &str, service: &ObjectKey) -> u32 {
        self.0
            .get(&(cluster.to_string(), service.clone()))
            .copied()
            .unwrap_or(0)
    }
}

/// The Service kind of the federated informers.
fn service_kind() -> FederatedKind {
    FederatedKind::new("", "v1", "Service", "services", true)
}

/// The Ingress kind of the federated informers.
fn ingress_kind() -> FederatedKind {
    FederatedKind::new("networking.k8s.io", "v1", "Ingress", "ingresses", true)
}

/// Keep `store` filled with the records of every federated LoadBalancer
/// Service until `stop`. Every replica runs it (the table it fills is the
/// replica's own DNS server's); what it writes to the API (the
/// DNSEndpoints, the `DNSNameConflict` Events and conditions) it writes
/// only while `leading` says this replica leads, starting afresh (listing
/// what is there) at each term.
pub async fn run(
    ctx: Arc<Context>,
    store: Arc<RecordStore>,
    mut leading: crate::Leading,
    stop: CancellationToken,
) {
    let changed = Arc::new(Notify::new());
    let options = ctx.options.dns.clone();
    let suffix = store.origin();

    // The federated Services, Ingresses and the Clusters, from the federation.
    let services = reflect(Api::<Service>::all(ctx.fed.clone()), &changed, &stop);
    let clusters = reflect(Api::<Cluster>::all(ctx.fed.clone()), &changed, &stop);
    let ingresses = reflect(Api::<Ingress>::all(ctx.fed.clone()), &changed, &stop);
    // The member copies (with status), shared with the other controllers.
    let informer = ctx.informers.for_kind(&service_kind());
    let ingress_informer = ctx.informers.for_kind(&ingress_kind());
    // The members' EndpointSlices.
    let slices = endpoint_slices(&ctx);
    for informer in [&informer, &ingress_informer, &slices] {
        let mut events = informer.subscribe();
        let changed = changed.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => break,
                    e = events.next() => match e {
                        None => break,
                        Some(_) => changed.notify_one(),
                    },
                }
            }
        });
    }
    let mut member_changes = ctx.members.subscribe();
    // The writers of the current term (none while another replica leads).
    let mut publish: Option<(crate::dns_endpoints::Writer, ConflictReporter)> = None;

    tracing::info!(zone = %suffix, federation = %options.federation_name, "DNS records controller started");
    loop {
        let counts = EndpointCounts::of(&slices);
        let infos = cluster_infos(&clusters, &ctx.members);
        let fed_ingresses = federated_ingresses(&ingresses, &ingress_informer, &counts);
        let fed_services = federated_services(&services, &informer, &counts);
        let mut records = build_ingress_records(&suffix, &infos, &fed_ingresses);
        // A Service's names win over an Ingress host spelled the same.
        records.extend(build_records(
            &options.federation_name,
            &suffix,
            &infos,
            &fed_services,
        ));
        let wanted = crate::dns_endpoints::desired(
            &options.federation_name,
            &suffix,
            store.zone().ttl,
            &infos,
            &fed_services,
            &fed_ingresses,
            &records,
        );
        let names = records.len();
        // Served first, on every replica; published after, by the leader.
        let rejected = store.replace(records);
        if rejected > 0 {
            tracing::warn!(rejected, "DNS names not valid in the zone were left out");
        }
        tracing::trace!(
            names,
            serial = store.snapshot().serial,
            "DNS records rebuilt"
        );
        if !leading.is_leader() {
            publish = None;
        } else if publish.is_none() {
            publish = Some((
                crate::dns_endpoints::Writer::start(ctx.fed.clone()).await,
                ConflictReporter::default(),
            ));
        }
        let mut ended = false;
        if let Some((endpoints, conflicts)) = publish.as_mut() {
            let work = async {
                conflicts
                    .report(&ctx.fed, &ctx.recorder, &suffix, &fed_ingresses)
                    .await;
                endpoints.sync(wanted).await;
            };
            // A term that ends mid-way stops its writes at once.
            let mut watching = leading.clone();
            ended = tokio::select! {
                () = work => false,
                () = watching.lost() => true,
            };
        }
        if ended {
            publish = None;
        }
        tokio::select! {
            () = stop.cancelled() => break,
            () = changed.notified() => {}
            r = member_changes.changed() => if r.is_err() { break },
            () = leading.changed() => {}
            // A resync now and then, whatever was missed.
            () = tokio::time::sleep(Duration::from_secs(30)) => {}
        }
        // Let a burst of changes settle into one rebuild.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What losing Ingress claims are told: a Warning event `DNSNameConflict`
/// each time what an Ingress loses changes (not on every rebuild), and the
/// condition `DNSNameConflict` on its PropagationRecord (removed once it
/// loses nothing; the user's object is never written, SPEC §3.8).
#[derive(Default)]
struct ConflictReporter {
    /// Ingress uid → the message of its last event.
    evented: HashMap<String, String>,
    /// Ingress uid → (namespace, name, message) its record's condition says.
    recorded: HashMap<String, (String, String, String)>,
}

impl ConflictReporter {
    async fn report(
        &mut self,
        fed: &kube::Client,
        recorder: &crate::events::Recorder,
        suffix: &str,
        ingresses: &[FederatedIngress],
    ) {
        let claims = claim_hosts(suffix, ingresses);
        let mut now: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for c in &claims.conflicts {
            now.entry(c.loser)
                .or_default()
                .push(conflict_message(c, ingresses, suffix));
        }
        let mut evented = HashMap::new();
        let mut losing: HashMap<String, (String, String, String)> = HashMap::new();
        for (i, messages) in now {
            let Some(ing) = ingresses.get(i) else {
                continue;
            };
            let message = messages.join("; ");
            if self.evented.get(&ing.uid) != Some(&message) {
                tracing::info!(namespace = %ing.namespace, name = %ing.name, %message, "DNS name conflict");
                recorder.record(
                    &serde_json::json!({
                        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                        "metadata": {"name": ing.name, "namespace": ing.namespace, "uid": ing.uid},
                    }),
                    crate::events::EventType::Warning,
                    crate::version::DNS_NAME_CONFLICT,
                    message.clone(),
                );
            }
            evented.insert(ing.uid.clone(), message.clone());
            losing.insert(
                ing.uid.clone(),
                (ing.namespace.clone(), ing.name.clone(), message),
            );
        }
        self.evented = evented;
        // The records: set where the message changed, clear where the
        // Ingress no longer loses (or is gone: its record goes with it).
        let mut writes: Vec<(String, (String, String, String), bool)> = Vec::new();
        for (uid, v) in &losing {
            if self.recorded.get(uid) != Some(v) {
                writes.push((uid.clone(), v.clone(), true));
            }
        }
        for (uid, v) in &self.recorded {
            if !losing.contains_key(uid) && ingresses.iter().any(|i| &i.uid == uid) {
                writes.push((uid.clone(), v.clone(), false));
            }
        }
        self.recorded.retain(|uid, _| losing.contains_key(uid));
        for (uid, (ns, name, message), set) in writes {
            let ok = write_condition(fed, &ns, &name, &uid, set.then_some(message.as_str())).await;
            match (ok, set) {
                (true, true) => {
                    self.recorded.insert(uid, (ns, name, message));
                }
                (false, false) => {
                    // Retried on the next rebuild.
                    self.recorded.insert(uid, (ns, name, message));
                }
                _ => {}
            }
        }
    }
}

/// Set (`Some(message)`) or clear the `DNSNameConflict` condition on the
/// PropagationRecord of Ingress `ns/name` (uid `uid`). True when the record
/// says so now; false when it could not be written (or does not exist yet:
/// the sync creates it) and should be tried again.
async fn write_condition(
    fed: &kube::Client,
    ns: &str,
    name: &str,
    uid: &str,
    message: Option<&str>,
) -> bool {
    use crate::version::{self, PropagationRecord};
    let api: Api<PropagationRecord> = Api::namespaced(fed.clone(), ns);
    let record_name = version::record_name(&ingress_kind(), name);
    let record = match api.get_opt(&record_name).await {
        Ok(Some(r)) if r.spec.resource.uid == uid => r,
        Ok(_) => return message.is_none(),
        Err(e) => {
            tracing::debug!(namespace = ns, name, error = %e, "reading the Ingress's record");
            return false;
        }
    };
    let set = message.map(|m| ("HostClaimedElsewhere", m));
    let Some(patch) = version::conditions_patch(
        &record,
        version::DNS_NAME_CONFLICT,
        set,
        jiff::Timestamp::now(),
    ) else {
        return true;
    };
    let params = kube::api::PatchParams::default();
    match api
        .patch_status(&record_name, &params, &kube::api::Patch::Merge(&patch))
        .await
    {
        Ok(_) => true,
        Err(e) => {
            tracing::debug!(namespace = ns, name, error = %e, "writing the Ingress's record condition");
            false
        }
    }
}

/// A reflector of `api` kept up to date in the background (until `stop`),
/// each change waking `changed` (also the followed member set's,
/// [`crate::members::follow`]).
pub(crate) fn reflect<K>(api: Api<K>, changed: &Arc<Notify>, stop: &CancellationToken) -> Store<K>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let (store, writer) = reflector::store::<K>();
    let stream =
        reflector::reflector(writer, watch_fn(api, watcher::Config::default())).default_backoff();
    tokio::spawn(drain(stream, changed.clone(), stop.clone()));
    store
}

async fn drain<K, S>(stream: S, changed: Arc<Notify>, stop: CancellationToken)
where
    S: futures::Stream<Item = Result<Event<K>, watcher::Error>> + Send,
{
    let mut stream = std::pin::pin!(stream);
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            e = stream.next() => match e {
                None => break,
                Some(Ok(_)) => changed.notify_one(),
                Some(Err(e)) => tracing::debug!(error = %e, "watch of the federation"),
            },
        }
    }
}

fn cluster_infos(clusters: &Store<Cluster>, members: &Members) -> BTreeMap<String, ClusterInfo> {
    clusters
        .state()
        .iter()
        .map(|c| {
            let name = c.name_any();
            let status = c.status.clone().unwrap_or_default();
            let ready = members.get(&name).is_some_and(|m| m.ready);
            (
                name,
                ClusterInfo {
                    zones: status.zones,
                    region: status.region.filter(|r| !r.is_empty()),
                    ready,
                },
            )
        })
        .collect()
}

fn federated_services(
    services: &Store<Service>,
    informer: &crate::informer::FederatedInformer,
    counts: &EndpointCounts,
) -> Vec<FederatedService> {
    services
        .state()
        .iter()
        .filter(|s| {
            s.metadata.deletion_timestamp.is_none()
                && s.spec.as_ref().and_then(|s| s.type_.as_deref()) == Some("LoadBalancer")
        })
        .map(|s| {
            let key = ObjectKey::new(s.namespace().as_deref(), &s.name_any());
            let copies = informer
                .copies(&key)
                .into_iter()
                .map(|(cluster, copy)| {
                    let copy = ServiceCopy {
                        addresses: load_balancer_addresses(copy.data.get("status")),
                        ready_endpoints: counts.ready(&cluster, &key),
                    };
                    (cluster, copy)
                })
                .collect();
            FederatedService {
                uid: s.uid().unwrap_or_default(),
                namespace: key.namespace.clone().unwrap_or_default(),
                name: key.name.clone(),
                policy: Policy::of(s.annotations()),
                copies,
            }
        })
        .collect()
}

/// The Services an Ingress sends to (`spec.defaultBackend` and every
/// path's `backend.service.name`).
pub fn ingress_backend_services(spec: Option<&serde_json::Value>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let Some(spec) = spec else { return out };
    if let Some(n) = spec
        .pointer("/defaultBackend/service/name")
        .and_then(|v| v.as_str())
    {
        out.insert(n.to_string());
    }
    for rule in spec
        .get("rules")
        .and_then(|r| r.as_array())
        .into_iter()
        .flatten()
    {
        for path in rule
            .pointer("/http/paths")
            .and_then(|p| p.as_array())
            .into_iter()
            .flatten()
        {
            if let Some(n) = path
                .pointer("/backend/service/name")
                .and_then(|v| v.as_str())
            {
                out.insert(n.to_string());
            }
        }
    }
    out
}

fn federated_ingresses(
    ingresses: &Store<Ingress>,
    informer: &crate::informer::FederatedInformer,
    counts: &EndpointCounts,
) -> Vec<FederatedIngress> {
    ingresses
        .state()
        .iter()
        .filter(|i| i.metadata.deletion_timestamp.is_none())
        .map(|i| {
            let key = ObjectKey::new(i.namespace().as_deref(), &i.name_any());
            let hosts: Vec<String> = i
                .spec
                .iter()
                .flat_map(|s| s.rules.iter().flatten())
                .filter_map(|r| r.host.clone())
                .collect();
            let copies = informer
                .copies(&key)
                .into_iter()
                .map(|(cluster, copy)| {
                    let backends = ingress_backend_services(copy.data.get("spec"));
                    let ready_endpoints = if backends.is_empty() {
                        1
                    } else {
                        backends
                            .iter()
                            .map(|b| {
                                counts.ready(&cluster, &ObjectKey::new(key.namespace.as_deref(), b))
                            })
                            .fold(0u32, u32::saturating_add)
                    };
                    let copy = ServiceCopy {
                        addresses: load_balancer_addresses(copy.data.get("status")),
                        ready_endpoints,
                    };
                    (cluster, copy)
                })
                .collect();
            FederatedIngress {
                uid: i.uid().unwrap_or_default(),
                namespace: key.namespace.clone().unwrap_or_default(),
                name: key.name.clone(),
                hosts,
                created: i.metadata.creation_timestamp.as_ref().map(|t| t.0),
                policy: Policy::of(i.annotations()),
                copies,
            }
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    /// Every replica runs the controller; one that does not lead sends
    /// nothing but reads (no DNSEndpoint CRD, no DNSEndpoint, no Event), and
    /// starts writing (the CRD first) when its term begins.
    #[tokio::test]
    async fn only_the_leading_replica_writes() {
        let writes = Arc::new(parking_lot::Mutex::new(Vec::<String>::new()));
        let seen = writes.clone();
        let api = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            let seen = seen.clone();
            async move {
                let (code, body) = if req.method() == http::Method::GET {
                    (
                        200,
                        r#"{"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":"1"},"items":[]}"#,
                    )
                } else {
                    seen.lock()
                        .push(format!("{} {}", req.method(), req.uri().path()));
                    (
                        409,
                        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"AlreadyExists","code":409}"#,
                    )
                };
                http::Response::builder()
                    .status(code)
                    .header("content-type", "application/json")
                    .body(kube::client::Body::from(body.as_bytes().to_vec()))
                    .map_err(std::io::Error::other)
            }
        });
        let client = kube::Client::new(api, "default");
        let stop = CancellationToken::new();
        let ctx = Arc::new(Context::new(
            client,
            crate::FederationOptions::default(),
            &stop,
        ));
        let store = RecordStore::new(ubernetes_dns::ZoneConfig::new("example.com", 30).unwrap());
        let (leads, leading) = crate::Leading::channel();
        let task = tokio::spawn(run(ctx, store, leading, stop.clone()));
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(*writes.lock(), Vec::<String>::new(), "a follower wrote");
        leads.send_replace(true);
        let crd = "POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions";
        for _ in 0..100 {
            if writes.lock().iter().any(|w| w == crd) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            writes.lock().iter().any(|w| w == crd),
            "{:?}",
            writes.lock()
        );
        stop.cancel();
        task.await.unwrap();
    }

    // Federation v1's dns_test.go: zone example.com, federation "ufp",
    // Service test/nginx, c1 in fooregion/foozone, c2 in barregion/barzone.
    const GLOBAL: &str = "nginx.test.ufp.svc.example.com.";
    const FOO_REGION: &str = "nginx.test.ufp.svc.fooregion.example.com.";
    const FOO_ZONE: &str = "nginx.test.ufp.svc.foozone.fooregion.example.com.";
    const BAR_REGION: &str = "nginx.test.ufp.svc.barregion.example.com.";
    const BAR_ZONE: &str = "nginx.test.ufp.svc.barzone.barregion.example.com.";

    fn cluster(region: &str, zones: &[&str], ready: bool) -> ClusterInfo {
        ClusterInfo {
            zones: zones.iter().map(|z| z.to_string()).collect(),
            region: Some(region.to_string()),
            ready,
        }
    }

    fn clusters() -> BTreeMap<String, ClusterInfo> {
        BTreeMap::from([
            ("c1".to_string(), cluster("fooregion", &["foozone"], true)),
            ("c2".to_string(), cluster("barregion", &["barzone"], true)),
        ])
    }

    fn ip(s: &str) -> Address {
        Address::Ip(s.parse().unwrap())
    }

    fn copy(addresses: &[Address], ready: u32) -> ServiceCopy {
        ServiceCopy {
            addresses: addresses.to_vec(),
            ready_endpoints: ready,
        }
    }

    fn service(copies: &[(&str, ServiceCopy)]) -> FederatedService {
        FederatedService {
            uid: "u-svc".into(),
            namespace: "test".into(),
            name: "nginx".into(),
            policy: Policy::All,
            copies: copies
                .iter()
                .map(|(c, s)| (c.to_string(), s.clone()))
                .collect(),
        }
    }

    fn a(ips: &[&str]) -> RecordSet {
        RecordSet::Addresses(ips.iter().map(|s| s.parse().unwrap()).collect())
    }

    fn cname(to: &str) -> RecordSet {
        RecordSet::Cname(to.to_string())
    }

    fn records(services: &[FederatedService]) -> BTreeMap<String, RecordSet> {
        build_records("ufp", "example.com", &clusters(), services)
    }

    fn expect(pairs: &[(&str, RecordSet)]) -> BTreeMap<String, RecordSet> {
        pairs
            .iter()
            .map(|(n, r)| (n.to_string(), r.clone()))
            .collect()
    }

    #[test]
    fn v1_service_with_no_ingress() {
        // No copy anywhere (v1: no ingress annotation): no records.
        assert!(records(&[service(&[])]).is_empty());
    }

    #[test]
    fn v1_service_with_single_lb_ingress() {
        let svc = service(&[("c1", copy(&[ip("198.51.100.1")], 1)), ("c2", copy(&[], 1))]);
        assert_eq!(
            records(&[svc]),
            expect(&[
                (GLOBAL, a(&["198.51.100.1"])),
                (FOO_REGION, a(&["198.51.100.1"])),
                (FOO_ZONE, a(&["198.51.100.1"])),
                (BAR_REGION, cname(GLOBAL)),
                (BAR_ZONE, cname(BAR_REGION)),
            ])
        );
    }

    #[test]
    fn v1_service_with_aws_and_gcp_lb_ingress() {
        // v1 resolved the AWS hostname to A records; here a level with only
        // a hostname is a CNAME to it and a mixed level answers its IPs.
        let svc = service(&[
            (
                "c1",
                copy(
                    &[Address::Hostname("a9.us-west-2.elb.amazonaws.com".into())],
                    1,
                ),
            ),
            ("c2", copy(&[ip("198.51.200.1")], 1)),
        ]);
        assert_eq!(
            records(&[svc]),
            expect(&[
                (GLOBAL, a(&["198.51.200.1"])),
                (FOO_REGION, cname("a9.us-west-2.elb.amazonaws.com")),
                (FOO_ZONE, cname("a9.us-west-2.elb.amazonaws.com")),
                (BAR_REGION, a(&["198.51.200.1"])),
                (BAR_ZONE, a(&["198.51.200.1"])),
            ])
        );
    }

    #[test]
    fn v1_service_with_no_lb_ingress() {
        let svc = service(&[("c1", copy(&[], 1)), ("c2", copy(&[], 1))]);
        assert_eq!(
            records(&[svc]),
            expect(&[
                (FOO_REGION, cname(GLOBAL)),
                (FOO_ZONE, cname(FOO_REGION)),
                (BAR_REGION, cname(GLOBAL)),
                (BAR_ZONE, cname(BAR_REGION)),
            ])
        );
    }

    fn both() -> BTreeMap<String, RecordSet> {
        expect(&[
            (GLOBAL, a(&["198.51.100.1", "198.51.200.1"])),
            (FOO_REGION, a(&["198.51.100.1"])),
            (FOO_ZONE, a(&["198.51.100.1"])),
            (BAR_REGION, a(&["198.51.200.1"])),
            (BAR_ZONE, a(&["198.51.200.1"])),
        ])
    }

    #[test]
    fn v1_service_with_multiple_lb_ingress() {
        let svc = service(&[
            ("c1", copy(&[ip("198.51.100.1")], 1)),
            ("c2", copy(&[ip("198.51.200.1")], 1)),
        ]);
        assert_eq!(records(&[svc]), both());
    }

    #[test]
    fn v1_service_deleted_removes_every_record() {
        // v1 left the CNAMEs behind ("TODO ... remove these leaks"); a
        // deleted Service is not in the list at all here.
        assert!(records(&[]).is_empty());
    }

    #[test]
    fn v1_lb_ingress_modified_over_time() {
        let mut svc = service(&[
            ("c1", copy(&[ip("198.51.100.1")], 1)),
            ("c2", copy(&[ip("198.51.200.1")], 1)),
        ]);
        assert_eq!(records(&[svc.clone()]), both());
        svc.copies
            .insert("c1".into(), copy(&[ip("198.51.150.1")], 1));
        assert_eq!(
            records(&[svc]),
            expect(&[
                (GLOBAL, a(&["198.51.150.1", "198.51.200.1"])),
                (FOO_REGION, a(&["198.51.150.1"])),
                (FOO_ZONE, a(&["198.51.150.1"])),
                (BAR_REGION, a(&["198.51.200.1"])),
                (BAR_ZONE, a(&["198.51.200.1"])),
            ])
        );
    }

    #[test]
    fn unhealthy_copies_are_left_out() {
        // c2 not Ready; then c2 Ready with no ready endpoints: the same.
        let svc = service(&[
            ("c1", copy(&[ip("198.51.100.1")], 1)),
            ("c2", copy(&[ip("198.51.200.1")], 1)),
        ]);
        let want = expect(&[
            (GLOBAL, a(&["198.51.100.1"])),
            (FOO_REGION, a(&["198.51.100.1"])),
            (FOO_ZONE, a(&["198.51.100.1"])),
            (BAR_REGION, cname(GLOBAL)),
            (BAR_ZONE, cname(BAR_REGION)),
        ]);
        let mut cs = clusters();
        cs.get_mut("c2").unwrap().ready = false;
        assert_eq!(
            build_records("ufp", "example.com.", &cs, std::slice::from_ref(&svc)),
            want
        );
        let mut svc = svc;
        svc.copies.get_mut("c2").unwrap().ready_endpoints = 0;
        assert_eq!(records(&[svc.clone()]), want);
        // Nothing healthy: CNAMEs up, no global record.
        svc.copies.get_mut("c1").unwrap().ready_endpoints = 0;
        assert_eq!(
            records(&[svc]),
            expect(&[
                (FOO_REGION, cname(GLOBAL)),
                (FOO_ZONE, cname(FOO_REGION)),
                (BAR_REGION, cname(GLOBAL)),
                (BAR_ZONE, cname(BAR_REGION)),
            ])
        );
    }

    #[test]
    fn a_cluster_spanning_zones_gets_records_in_each() {
        // kubernetes#50529: v1 wrote only the first zone of a cluster.
        let cs = BTreeMap::from([
            (
                "c1".to_string(),
                cluster("east", &["east-1", "east-2"], true),
            ),
            ("c2".to_string(), cluster("east", &["east-2"], true)),
            ("c3".to_string(), cluster("west", &["west-1"], true)),
        ]);
        let svc = service(&[
            ("c1", copy(&[ip("192.0.2.1")], 2)),
            ("c2", copy(&[ip("192.0.2.2"), ip("2001:db8::2")], 1)),
            ("c3", copy(&[], 1)),
        ]);
        let r = build_records("ufp", "example.com", &cs, &[svc]);
        let p = "nginx.test.ufp.svc";
        let n = |s: &str| format!("{p}.{s}example.com.");
        assert_eq!(
            r,
            BTreeMap::from([
                (n(""), a(&["192.0.2.1", "192.0.2.2", "2001:db8::2"])),
                (n("east."), a(&["192.0.2.1", "192.0.2.2", "2001:db8::2"])),
                (n("east-1.east."), a(&["192.0.2.1"])),
                (
                    n("east-2.east."),
                    a(&["192.0.2.1", "192.0.2.2", "2001:db8::2"])
                ),
                (n("west."), cname(&n(""))),
                (n("west-1.west."), cname(&n("west."))),
            ])
        );
    }

    #[test]
    fn clusters_without_region_or_with_odd_labels_have_only_the_levels_they_can() {
        let cs = BTreeMap::from([
            (
                "c1".to_string(),
                ClusterInfo {
                    zones: vec!["z1".into()],
                    region: None,
                    ready: true,
                },
            ),
            ("c2".to_string(), cluster("r2", &["bad.zone"], true)),
        ]);
        let svc = service(&[
            ("c1", copy(&[ip("192.0.2.1")], 1)),
            ("c2", copy(&[ip("192.0.2.2")], 1)),
            ("gone", copy(&[ip("192.0.2.3")], 1)),
        ]);
        let r = build_records("ufp", "example.com", &cs, &[svc]);
        assert_eq!(
            r,
            BTreeMap::from([
                (
                    "nginx.test.ufp.svc.example.com.".to_string(),
                    a(&["192.0.2.1", "192.0.2.2"])
                ),
                (
                    "nginx.test.ufp.svc.r2.example.com.".to_string(),
                    a(&["192.0.2.2"])
                ),
            ])
        );
    }

    #[test]
    fn weighted_follows_ready_endpoints() {
        let mut svc = service(&[
            ("c1", copy(&[ip("198.51.100.1")], 3)),
            ("c2", copy(&[ip("198.51.200.1"), ip("198.51.200.2")], 1)),
        ]);
        svc.policy = Policy::Weighted;
        let r = records(&[svc]);
        assert_eq!(
            r[GLOBAL],
            RecordSet::Weighted(vec![
                ("198.51.100.1".parse().unwrap(), 180),
                ("198.51.200.1".parse().unwrap(), 30),
                ("198.51.200.2".parse().unwrap(), 30),
            ])
        );
    }

    #[test]
    fn failover_answers_the_primary_until_it_has_no_healthy_endpoint() {
        let mut svc = service(&[
            ("c1", copy(&[ip("198.51.100.1")], 1)),
            ("c2", copy(&[ip("198.51.200.1")], 1)),
        ]);
        svc.policy = Policy::Failover(BTreeSet::from(["c2".to_string()]));
        assert_eq!(
            records(&[svc.clone()]),
            expect(&[
                (GLOBAL, a(&["198.51.200.1"])),
                (FOO_REGION, cname(GLOBAL)),
                (FOO_ZONE, cname(FOO_REGION)),
                (BAR_REGION, a(&["198.51.200.1"])),
                (BAR_ZONE, a(&["198.51.200.1"])),
            ])
        );
        svc.copies.get_mut("c2").unwrap().ready_endpoints = 0;
        assert_eq!(
            records(&[svc]),
            expect(&[
                (GLOBAL, a(&["198.51.100.1"])),
                (FOO_REGION, a(&["198.51.100.1"])),
                (FOO_ZONE, a(&["198.51.100.1"])),
                (BAR_REGION, cname(GLOBAL)),
                (BAR_ZONE, cname(BAR_REGION)),
            ])
        );
    }

    #[test]
    fn policies_parse_from_annotations() {
        let ann = |p: &[(&str, &str)]| -> BTreeMap<String, String> {
            p.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(Policy::of(&ann(&[])), Policy::All);
        assert_eq!(
            Policy::of(&ann(&[(POLICY_ANNOTATION, "weighted")])),
            Policy::Weighted
        );
        assert_eq!(
            Policy::of(&ann(&[(POLICY_ANNOTATION, "failover")])),
            Policy::All
        );
        assert_eq!(
            Policy::of(&ann(&[
                (POLICY_ANNOTATION, "failover"),
                (PRIMARY_ANNOTATION, "east, west")
            ])),
            Policy::Failover(BTreeSet::from(["east".into(), "west".into()]))
        );
        assert_eq!(
            Policy::of(&ann(&[(POLICY_ANNOTATION, "nonsense")])),
            Policy::All
        );
    }

    #[test]
    fn statuses_and_slices_are_read_as_kubernetes_writes_them() {
        let status = serde_json::json!({"loadBalancer": {"ingress": [
            {"ip": "192.0.2.1"}, {"hostname": "lb.example.net."}, {"ip": "not-an-ip"}, {}
        ]}});
        assert_eq!(
            load_balancer_addresses(Some(&status)),
            [ip("192.0.2.1"), Address::Hostname("lb.example.net".into())]
        );
        assert!(load_balancer_addresses(None).is_empty());
        let mut slice: DynamicObject = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web-abc", "namespace": "shop",
                "labels": {SERVICE_NAME_LABEL: "web"}},
            "addressType": "IPv4",
            "endpoints": [
                {"addresses": ["10.0.0.1"], "conditions": {"ready": true}},
                {"addresses": ["10.0.0.2"], "conditions": {"ready": false}},
                {"addresses": ["10.0.0.3"]}
            ]
        }))
        .unwrap();
        assert_eq!(ready_endpoints(&slice), 2);
        // What the informer keeps of it counts the same.
        lean_slice(&mut slice);
        assert_eq!(ready_endpoints(&slice), 2);
        assert_eq!(
            slice.labels().get(SERVICE_NAME_LABEL).map(String::as_str),
            Some("web")
        );
        assert!(slice.data.get("addressType").is_none());
    }

    fn ingress(hosts: &[&str], copies: &[(&str, ServiceCopy)]) -> FederatedIngress {
        FederatedIngress {
            uid: "u-ing".into(),
            namespace: "test".into(),
            name: "shop".into(),
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            created: None,
            policy: Policy::All,
            copies: copies
                .iter()
                .map(|(c, s)| (c.to_string(), s.clone()))
                .collect(),
        }
    }

    #[test]
    fn ingress_hosts_in_the_zone_get_the_healthy_addresses() {
        let ing = ingress(
            &[
                "Shop.example.com",
                "www.shop.example.com.",
                "shop.example.org",
                "*.example.com",
                "example.com",
            ],
            &[
                ("c1", copy(&[ip("198.51.100.1")], 1)),
                ("c2", copy(&[ip("198.51.200.1")], 2)),
            ],
        );
        let both = a(&["198.51.100.1", "198.51.200.1"]);
        assert_eq!(
            build_ingress_records("example.com", &clusters(), std::slice::from_ref(&ing)),
            expect(&[
                ("shop.example.com.", both.clone()),
                ("www.shop.example.com.", both),
            ])
        );
        // Not Ready, or no ready endpoint behind it, or no address: left out.
        let mut cs = clusters();
        cs.get_mut("c1").unwrap().ready = false;
        let mut ing2 = ing.clone();
        ing2.hosts = vec!["shop.example.com".into()];
        assert_eq!(
            build_ingress_records("example.com", &cs, std::slice::from_ref(&ing2)),
            expect(&[("shop.example.com.", a(&["198.51.200.1"]))])
        );
        ing2.copies.get_mut("c2").unwrap().ready_endpoints = 0;
        assert!(build_ingress_records("example.com", &cs, &[ing2.clone()]).is_empty());
        ing2.copies.get_mut("c2").unwrap().ready_endpoints = 1;
        ing2.copies.get_mut("c2").unwrap().addresses.clear();
        assert!(build_ingress_records("example.com", &cs, &[ing2]).is_empty());
        // Failover and weighted as for Services.
        let mut f = ing.clone();
        f.policy = Policy::Failover(BTreeSet::from(["c2".to_string()]));
        assert_eq!(
            build_ingress_records("example.com", &clusters(), &[f])["shop.example.com."],
            a(&["198.51.200.1"])
        );
        let mut w = ing;
        w.policy = Policy::Weighted;
        assert_eq!(
            build_ingress_records("example.com", &clusters(), &[w])["shop.example.com."],
            RecordSet::Weighted(vec![
                ("198.51.100.1".parse().unwrap(), 60),
                ("198.51.200.1".parse().unwrap(), 120),
            ])
        );
    }

    fn at(secs: i64) -> Option<jiff::Timestamp> {
        Some(jiff::Timestamp::from_second(1_700_000_000 + secs).unwrap())
    }

    #[test]
    fn a_host_claimed_twice_is_served_from_the_oldest_claim() {
        // The newer claim sorts first by namespace: age decides, not names.
        let mut old = ingress(
            &["shop.example.com"],
            &[("c1", copy(&[ip("192.0.2.1")], 1))],
        );
        (old.namespace, old.name, old.uid, old.created) =
            ("zzz".into(), "owner".into(), "u-old".into(), at(0));
        let mut new = ingress(
            &["shop.example.com", "new.example.com"],
            &[("c2", copy(&[ip("192.0.2.2")], 1))],
        );
        (new.namespace, new.name, new.uid, new.created) =
            ("aaa".into(), "taker".into(), "u-new".into(), at(5));
        let both = [new.clone(), old.clone()];
        assert_eq!(
            build_ingress_records("example.com", &clusters(), &both),
            expect(&[
                ("new.example.com.", a(&["192.0.2.2"])),
                ("shop.example.com.", a(&["192.0.2.1"])),
            ])
        );
        let claims = claim_hosts("example.com", &both);
        assert_eq!(
            claims.conflicts,
            vec![HostConflict {
                loser: 0,
                host: "shop.example.com.".into(),
                winner: Some(1)
            }]
        );
        let msg = conflict_message(&claims.conflicts[0], &both, "example.com");
        assert!(
            msg.contains("host shop.example.com is claimed by Ingress zzz/owner"),
            "{msg}"
        );
        // The owner keeps the name while it has no healthy address: no
        // record, never the newer claim's addresses.
        let mut sick = old.clone();
        sick.copies.get_mut("c1").unwrap().ready_endpoints = 0;
        let records = build_ingress_records("example.com", &clusters(), &[new.clone(), sick]);
        assert!(!records.contains_key("shop.example.com."), "{records:?}");
        // Same second: namespace/name breaks the tie; unknown age is newest.
        new.created = old.created;
        assert_eq!(
            claim_hosts("example.com", &[old.clone(), new.clone()]).owners["shop.example.com."],
            1
        );
        new.created = None;
        assert_eq!(
            claim_hosts("example.com", &[old, new]).owners["shop.example.com."],
            0
        );
    }

    #[test]
    fn service_names_are_never_an_ingress_host() {
        let ing = ingress(
            &[
                "nginx.test.ufp.svc.example.com",
                "x.svc.example.com",
                "svc.example.com",
                "shop.example.com",
            ],
            &[("c1", copy(&[ip("192.0.2.1")], 1))],
        );
        let hosts = build_ingress_records("example.com", &clusters(), std::slice::from_ref(&ing));
        assert_eq!(hosts.keys().collect::<Vec<_>>(), ["shop.example.com."]);
        let claims = claim_hosts("example.com.", std::slice::from_ref(&ing));
        let lost: Vec<_> = claims
            .conflicts
            .iter()
            .map(|c| (c.host.as_str(), c.winner))
            .collect();
        assert_eq!(
            lost,
            [
                ("nginx.test.ufp.svc.example.com.", None),
                ("svc.example.com.", None),
                ("x.svc.example.com.", None)
            ]
        );
        assert!(
            conflict_message(&claims.conflicts[0], &[ing], "example.com.")
                .contains("belong to Services")
        );
        // A Service's name without records is still not the Ingress's.
        let svc = service(&[("c1", copy(&[], 0))]);
        let mut served = build_ingress_records(
            "example.com",
            &clusters(),
            &[ingress(&[GLOBAL], &[("c1", copy(&[ip("192.0.2.9")], 1))])],
        );
        served.extend(records(&[svc]));
        assert!(!served.contains_key(GLOBAL), "{served:?}");
    }

    #[test]
    fn ingress_backends_are_read_from_its_spec() {
        let spec = serde_json::json!({
            "defaultBackend": {"service": {"name": "fallback", "port": {"number": 80}}},
            "rules": [{"host": "shop.example.com", "http": {"paths": [
                {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}},
                {"path": "/r", "pathType": "Prefix", "backend": {"resource": {"kind": "Bucket", "name": "b"}}}
            ]}}, {"host": "x.example.com"}]
        });
        assert_eq!(
            ingress_backend_services(Some(&spec)),
            BTreeSet::from(["fallback".to_string(), "web".to_string()])
        );
        assert!(ingress_backend_services(None).is_empty());
    }
}
