//! The Cluster health controller (SPEC §3.3; Federation v1's
//! `federation-controller/cluster`): a kube-runtime controller over the
//! `federation/v1beta1` Clusters that reaches each member with the
//! credentials its Secret holds, probes its health every
//! `--cluster-monitor-period`, writes the Cluster's status and keeps the
//! shared [`Members`] set in step.
//!
//! # Reaching a member
//! The Secret `federation-system/<spec.secretRef.name>`, key `kubeconfig`,
//! holds a kubeconfig (its current context is used), read by
//! [`crate::member_kubeconfig`]: inline credentials only (server, CA data,
//! token, client certificate and key data, as `ubernetes join` writes
//! them); `exec`, `auth-provider`, file paths, `tokenFile`, `proxy-url`,
//! basic auth and impersonation fields are refused with a fixed message,
//! and no client library error reaches the status or an Event. The server is picked
//! from `spec.serverAddressByClientCIDRs`: the controller runs inside the
//! server process and cannot know which of its addresses a member sees, so
//! it matches the CIDRs against the loopback address `127.0.0.1` (IPv6
//! CIDRs against `::1`) and the longest matching prefix wins; `0.0.0.0/0`
//! (or `::/0`) matches everything. With no match, the kubeconfig's own
//! server is used (Federation v1 matched the host's first interface and
//! ignored a cluster without a match). The picked address must be on the
//! host of one of the kubeconfig's servers (any port), else the Cluster is
//! refused before any connection: who may edit a Cluster must not be able
//! to send the member's credentials elsewhere. The member client has connect and
//! write timeouts of `--member-request-timeout` and no read timeout (the
//! kube crate sets none), so watches on members stay open: callers bound
//! each request themselves. The client is built again only
//! when the Secret, the picked server or the Cluster's uid change.
//!
//! A Cluster with `spec.syncMode: Pull` has neither address nor Secret:
//! its client sends over the tunnel its agent opened ([`crate::pull`]),
//! and its health is the same probe sent that way, `Unreachable` at once
//! when no tunnel is open or when the agent's Lease lapsed.
//!
//! # Health (Federation v1's `GetClusterHealthStatus`)
//! `GET /readyz` (`/healthz` if the member answers 404), bounded by
//! `--cluster-probe-timeout`:
//! - body `ok` with a 2xx: `Ready=True` (`ClusterReady`, "/healthz
//!   responded with ok");
//! - any other answer: `Ready=False` (`ClusterNotReady`, "/healthz responded
//!   without ok") and `Offline=False` (`ClusterReachable`, "cluster is
//!   reachable");
//! - no answer: `Offline=True` (`ClusterNotReachable`, "cluster is not
//!   reachable") and, as the spec adds to v1, `Ready=Unknown` with the same
//!   reason and message.
//!
//! A Cluster without usable credentials (no `secretRef`, no Secret, no
//! `kubeconfig` key, a kubeconfig that does not parse, holds a refused
//! field or builds no client, a server address on another host)
//! gets `Ready=False` with reason `ClusterCredentialsInvalid` and a message
//! naming the Secret, a Warning event (once per distinct problem), and is
//! removed from the member set.
//!
//! `lastProbeTime` is the time of the probe; `lastTransitionTime` changes
//! only when a condition's status does. Zones and region come from the
//! member's Node labels `topology.kubernetes.io/zone` / `…/region` (else the
//! deprecated `failure-domain.beta.kubernetes.io/*`): zones sorted and
//! unique, region of the first node that has one. `status.kubernetesVersion`
//! is the member's `/version` `gitVersion`. While a member cannot be asked
//! (unreachable, or the Node list fails) the last known zones, region and
//! version are kept (Federation v1 cleared them).
//!
//! # Writes
//! Federation v1 wrote the status on every probe. To keep the store quiet,
//! this controller writes (a merge patch of the status subresource, field
//! manager `ubernetes`) only when a condition's type, status, reason or
//! message, the zones, the region or the Kubernetes version changed, or when
//! the stored `lastProbeTime` is at least one monitor period old; so an
//! unchanged cluster gets about one write per period, a changed one at once.
//! A reconcile that comes sooner than half a period after the last probe
//! with nothing new about the Cluster (its own status writes wake the
//! controller) probes nothing and waits for the next period.
//!
//! # The member set
//! A member is upserted (generation + 1) when its client, its labels or
//! its readiness change, and removed when its Cluster is deleted (a second
//! watch on Clusters sees deletions at once, and a re-list forgets members
//! whose Cluster is gone) or has no usable credentials. No finalizer: the
//! objects propagated to a member stay there when it leaves.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use http::StatusCode;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt as _;
use kube::api::{Api, ListParams, Patch, PatchParams, ValidationDirective};
use kube::runtime::controller::{Action, Controller, Error as ControllerError};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt as _, watcher as watch_fn};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use ubernetes_api::{Cluster, ClusterCondition, ClusterSpec, ClusterStatus};

use crate::FederationOptions;
use crate::events::{EventType, Recorder};
use crate::members::{Member, Members};

/// Where the Secrets with member credentials live.
pub use ubernetes_api::FEDERATION_NAMESPACE;
/// The Secret key holding the member's kubeconfig.
pub const KUBECONFIG_KEY: &str = "kubeconfig";
/// The field manager of the status writes.
pub const FIELD_MANAGER: &str = "ubernetes";

/// Condition type: the member answers its health check with ok.
pub const CONDITION_READY: &str = "Ready";
/// Condition type: the member cannot be reached.
pub const CONDITION_OFFLINE: &str = "Offline";
/// Reason of `Ready=True`.
pub const REASON_READY: &str = "ClusterReady";
/// Reason of `Ready=False` when the member answered without ok.
pub const REASON_NOT_READY: &str = "ClusterNotReady";
/// Reason of `Offline=True` (and `Ready=Unknown`).
pub const REASON_NOT_REACHABLE: &str = "ClusterNotReachable";
/// Reason of `Offline=False`.
pub const REASON_REACHABLE: &str = "ClusterReachable";
/// Reason of `Ready=False` when no client can be built for the member.
pub const REASON_CREDENTIALS_INVALID: &str = "ClusterCredentialsInvalid";

const MESSAGE_READY: &str = "/healthz responded with ok";
const MESSAGE_NOT_READY: &str = "/healthz responded without ok";
const MESSAGE_NOT_REACHABLE: &str = "cluster is not reachable";
const MESSAGE_REACHABLE: &str = "cluster is reachable";

const ZONE_LABELS: [&str; 2] = [
    "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/zone",
];
const REGION_LABELS: [&str; 2] = [
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/region",
];

/// What went wrong in a reconcile (retried with a short backoff).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the credentials Secret failed (other than not found).
    #[error("reading Secret {FEDERATION_NAMESPACE}/{name}: {source}")]
    ReadSecret {
        name: String,
        #[source]
        source: kube::Error,
    },
    /// Writing the Cluster's status failed.
    #[error("writing the status of Cluster {name}: {source}")]
    WriteStatus {
        name: String,
        #[source]
        source: kube::Error,
    },
}

/// What a health probe found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Health {
    /// `/readyz` (or `/healthz`) answered `ok`.
    Ready,
    /// The member answered, but not `ok`.
    NotReady,
    /// No answer within the probe timeout.
    Unreachable,
}

/// Run the Cluster controller until `stop`.
pub async fn run(
    client: kube::Client,
    members: Arc<Members>,
    options: FederationOptions,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let clusters: Api<Cluster> = Api::all(client.clone());
    let secrets: Api<Secret> = Api::namespaced(client.clone(), FEDERATION_NAMESPACE);
    let controller = Controller::new(clusters.clone(), watcher::Config::default());
    let store = controller.store();
    let ctx = Arc::new(Context {
        client: client.clone(),
        members: members.clone(),
        options: options.clone(),
        recorder: Recorder::new(client),
        store: store.clone(),
        state: Mutex::new(HashMap::new()),
        serial: AtomicU64::new(0),
    });

    let deletions = tokio::spawn(forget_deleted(clusters, ctx.clone(), stop.clone()));

    let mapper_store = store;
    let retry = options.cluster_monitor_period.min(Duration::from_secs(5));
    // A pull member's tunnel opening or closing is probed at once.
    let tunnel_changes = futures::stream::unfold(
        crate::pull::tunnels().subscribe(),
        |mut changes| async move {
            changes.changed().await.ok()?;
            let name = changes.borrow_and_update().1.clone();
            Some((ObjectRef::<Cluster>::new(&name), changes))
        },
    );
    let outcomes = controller
        .watches(secrets, watcher::Config::default(), move |secret: Secret| {
            clusters_naming(&mapper_store, &secret.name_any())
        })
        .reconcile_on(tunnel_changes)
        .graceful_shutdown_on(stop.clone().cancelled_owned())
        .run(
            reconcile,
            move |cluster: Arc<Cluster>, err: &Error, _| {
                tracing::warn!(cluster = %cluster.name_any(), error = %err, "cluster reconcile failed");
                Action::requeue(retry)
            },
            ctx.clone(),
        );
    outcomes
        .for_each(|outcome| {
            if let Err(ControllerError::ObjectNotFound(obj)) = &outcome {
                // A requeue of a Cluster that is gone.
                ctx.forget(&obj.name, None);
            } else if let Err(err) = &outcome {
                tracing::debug!(error = %err, "cluster controller");
            }
            futures::future::ready(())
        })
        .await;
    deletions.abort();
    let _ = deletions.await;
    Ok(())
}

/// The Clusters whose `secretRef` names `secret`.
fn clusters_naming(store: &Store<Cluster>, secret: &str) -> Vec<ObjectRef<Cluster>> {
    store
        .state()
        .iter()
        .filter(|c| c.spec.secret_ref.as_ref().is_some_and(|r| r.name == secret))
        .map(|c| ObjectRef::from_obj(c.as_ref()))
        .collect()
}

/// Remove members whose Cluster is deleted, as soon as the deletion is
/// seen (the controller itself only hears of it at the next requeue).
async fn forget_deleted(api: Api<Cluster>, ctx: Arc<Context>, stop: CancellationToken) {
    let mut listed: HashSet<String> = HashSet::new();
    let events = watch_fn(api, watcher::Config::default())
        .default_backoff()
        .take_until(stop.cancelled_owned());
    futures::pin_mut!(events);
    while let Some(event) = events.next().await {
        match event {
            Ok(Event::Delete(cluster)) => ctx.forget(&cluster.name_any(), cluster.uid().as_deref()),
            Ok(Event::Init) => listed.clear(),
            Ok(Event::InitApply(cluster)) => {
                listed.insert(cluster.name_any());
            }
            Ok(Event::InitDone) => {
                for member in ctx.members.snapshot() {
                    if !listed.contains(&member.name) {
                        ctx.forget(&member.name, None);
                    }
                }
            }
            Ok(Event::Apply(_)) => {}
            Err(err) => tracing::debug!(error = %err, "watching clusters for deletions"),
        }
    }
}

struct Context {
    client: kube::Client,
    members: Arc<Members>,
    options: FederationOptions,
    recorder: Recorder,
    store: Store<Cluster>,
    state: Mutex<HashMap<String, ClusterState>>,
    serial: AtomicU64,
}

/// What the controller remembers of one Cluster between reconciles.
#[derive(Default)]
struct ClusterState {
    conn: Option<Conn>,
    /// When the last probe ran, and with what inputs.
    last_probe: Option<(Instant, ProbeInputs)>,
    /// The Kubernetes version last written (the API type has no field for
    /// it to read back from).
    written_version: Option<Option<String>>,
    /// The last known facts (kept while the member cannot be asked).
    zones: Vec<String>,
    region: Option<String>,
    version: Option<String>,
    /// The credentials problem last reported by an event.
    reported: Option<String>,
    /// What the member set was last given: (conn serial, labels, ready).
    published: Option<(u64, BTreeMap<String, String>, bool)>,
}

/// A member client and what it was built from.
#[derive(Clone)]
struct Conn {
    key: ConnKey,
    client: kube::Client,
    proxy_client: kube::Client,
    server: String,
    serial: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct ConnKey {
    cluster_uid: String,
    secret_uid: String,
    secret_version: String,
    server: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct ProbeInputs {
    cluster_uid: String,
    generation: Option<i64>,
    labels: BTreeMap<String, String>,
    conn_serial: u64,
    /// A pull member's current tunnel (a new one is probed at once).
    tunnel: Option<u64>,
}

impl Context {
    /// Drop what is known of a Cluster and its member (if `uid` is given,
    /// only if the member is that Cluster).
    fn forget(&self, name: &str, uid: Option<&str>) {
        if let Some(uid) = uid
            && self.members.get(name).is_some_and(|m| m.uid != uid)
        {
            return;
        }
        self.state.lock().remove(name);
        self.members.remove(name);
        crate::metrics::metrics().forget(name);
    }

    /// The member client for `cluster`, built again only when its inputs
    /// changed.
    async fn connection(&self, cluster: &Cluster) -> Result<Result<Conn, String>, Error> {
        let name = cluster.name_any();
        if cluster.spec.is_pull() {
            return Ok(Ok(self.pull_connection(cluster)));
        }
        let Some(secret_name) = cluster
            .spec
            .secret_ref
            .as_ref()
            .map(|r| r.name.clone())
            .filter(|n| !n.is_empty())
        else {
            return Ok(Err(
                "spec.secretRef is not set: no credentials to reach the cluster".to_string(),
            ));
        };
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), FEDERATION_NAMESPACE);
        let secret = match secrets.get_opt(&secret_name).await {
            Ok(Some(secret)) => secret,
            Ok(None) => {
                return Ok(Err(format!(
                    "Secret {FEDERATION_NAMESPACE}/{secret_name} not found"
                )));
            }
            Err(source) => {
                return Err(Error::ReadSecret {
                    name: secret_name,
                    source,
                });
            }
        };
        let server = pick_server(&cluster.spec);
        let key = ConnKey {
            cluster_uid: cluster.uid().unwrap_or_default(),
            secret_uid: secret.uid().unwrap_or_default(),
            secret_version: secret.resource_version().unwrap_or_default(),
            server: server.clone(),
        };
        if let Some(conn) = self
            .state
            .lock()
            .get(&name)
            .and_then(|s| s.conn.clone())
            .filter(|c| c.key == key)
        {
            return Ok(Ok(conn));
        }
        let built = member_client(
            &secret,
            &secret_name,
            server.as_deref(),
            self.options.member_request_timeout,
        )
        .await;
        Ok(built.map(|built| {
            let conn = Conn {
                key,
                client: built.client,
                proxy_client: built.proxy_client,
                server: built.server,
                serial: self.serial.fetch_add(1, Ordering::Relaxed) + 1,
            };
            self.state.lock().entry(name).or_default().conn = Some(conn.clone());
            conn
        }))
    }

    /// A pull member's client: over its agent's tunnel, whichever is open
    /// (the same client across reconnects, so the member set does not
    /// change when the agent reconnects).
    fn pull_connection(&self, cluster: &Cluster) -> Conn {
        let name = cluster.name_any();
        let key = ConnKey {
            cluster_uid: cluster.uid().unwrap_or_default(),
            secret_uid: String::new(),
            secret_version: String::new(),
            server: Some(crate::pull::server_of(&name)),
        };
        let mut state = self.state.lock();
        let s = state.entry(name.clone()).or_default();
        if let Some(conn) = s.conn.clone().filter(|c| c.key == key) {
            return conn;
        }
        let client = crate::pull::tunnels().client(&name);
        let conn = Conn {
            key,
            client: client.clone(),
            proxy_client: client,
            server: crate::pull::server_of(&name),
            serial: self.serial.fetch_add(1, Ordering::Relaxed) + 1,
        };
        s.conn = Some(conn.clone());
        conn
    }

    /// Whether `cluster` (the same object, still in the store) is current.
    fn still_exists(&self, cluster: &Cluster) -> bool {
        self.store
            .get(&ObjectRef::from_obj(cluster))
            .is_some_and(|c| c.uid() == cluster.uid())
    }
}

/// The clients [`member_client`] builds for one member.
pub(crate) struct MemberClients {
    /// The controllers' client.
    pub client: kube::Client,
    /// The same configuration without kube's retry of 429/503/504, for the
    /// cluster proxy, which hands the member's answers back as they are.
    pub proxy_client: kube::Client,
    /// The server URL both talk to (no trailing slash).
    pub server: String,
}

/// Build a client to the member from the kubeconfig in `secret`, talking
/// to `server` if given. Errors are messages for the Cluster's condition.
pub(crate) async fn member_client(
    secret: &Secret,
    secret_name: &str,
    server: Option<&str>,
    timeout: Duration,
) -> Result<MemberClients, String> {
    let what = format!("Secret {FEDERATION_NAMESPACE}/{secret_name}");
    let text = secret
        .data
        .as_ref()
        .and_then(|d| d.get(KUBECONFIG_KEY))
        .map(|b| b.0.clone())
        .or_else(|| {
            secret
                .string_data
                .as_ref()
                .and_then(|d| d.get(KUBECONFIG_KEY))
                .map(|s| s.clone().into_bytes())
        })
        .ok_or_else(|| format!("{what} has no key \"{KUBECONFIG_KEY}\""))?;
    let text = String::from_utf8(text)
        .map_err(|_| format!("{what} key \"{KUBECONFIG_KEY}\" is not UTF-8 text"))?;
    // Our own reading: inline credentials only, nothing run, no file read.
    let kubeconfig = crate::member_kubeconfig::parse(&text, secret_name)?;
    // Item 7 of issue 28: the picked address must be on the kubeconfig's
    // host, checked before any connection.
    let server = server.map(|s| kubeconfig.check_server(s)).transpose()?;
    let mut config = kubeconfig.config(server);
    config.connect_timeout = Some(timeout);
    config.write_timeout = Some(timeout);
    let url = config.cluster_url.to_string();
    let mut proxy_config = config.clone();
    proxy_config.default_retry = false;
    // Requests (sync's gets and applies, status, probes) share one HTTP/2
    // connection per member (`MemberKubeconfig::h2_client`): over HTTP/1.1
    // every request in flight held a connection of its own (~30 per member
    // in a bulk at 100 members, each with its TLS state, read and write
    // buffers and dispatch channel: ~0.2 KiB per member copy of host RSS).
    // The federated informer's watches and lists go over `proxy_client`
    // (kube-client's HTTP/1.1 connector, one connection per watch): all of
    // them over the one HTTP/2 connection made a host restart 3-5x slower
    // (docs/benchmarks-federation.md, "HTTP/2 to members, measured and set
    // aside"). The proxy's client stays HTTP/1.1 anyway (upgrades).
    let client = kubeconfig.h2_client(config)?;
    let proxy_client = kubeconfig.client(proxy_config)?;
    Ok(MemberClients {
        client,
        proxy_client,
        server: url.trim_end_matches('/').to_string(),
    })
}

/// The server address to use from `serverAddressByClientCIDRs`: the entry
/// whose CIDR contains the loopback address of its family with the longest
/// prefix (see the module documentation); `None` when none matches.
pub fn pick_server(spec: &ClusterSpec) -> Option<String> {
    spec.server_address_by_client_cidrs
        .iter()
        .filter(|a| !a.server_address.trim().is_empty())
        .filter_map(|a| {
            let (ip, prefix) = a.client_cidr.split_once('/')?;
            let ip: IpAddr = ip.trim().parse().ok()?;
            let prefix: u8 = prefix.trim().parse().ok()?;
            let contains = match ip {
                IpAddr::V4(net) => {
                    prefix <= 32 && {
                        let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
                        u32::from(net) & mask == u32::from(std::net::Ipv4Addr::LOCALHOST) & mask
                    }
                }
                IpAddr::V6(net) => {
                    prefix <= 128 && {
                        let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
                        u128::from(net) & mask == u128::from(std::net::Ipv6Addr::LOCALHOST) & mask
                    }
                }
            };
            contains.then_some((prefix, a.server_address.trim().to_string()))
        })
        // The first of equally long prefixes wins.
        .fold(None::<(u8, String)>, |best, (p, s)| match best {
            Some((bp, _)) if bp >= p => best,
            _ => Some((p, s)),
        })
        .map(|(_, s)| s)
}

/// `now`, to the second (the precision of a stored `Time`).
fn now() -> Timestamp {
    Timestamp::from_second(Timestamp::now().as_second()).unwrap_or(Timestamp::UNIX_EPOCH)
}

fn condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    at: Timestamp,
) -> ClusterCondition {
    ClusterCondition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: Some(reason.to_string()),
        message: Some(message.to_string()),
        last_probe_time: Some(Time(at)),
        last_transition_time: Some(Time(at)),
    }
}

/// The conditions a probe result gives (see the module documentation).
pub fn health_conditions(health: Health, at: Timestamp) -> Vec<ClusterCondition> {
    match health {
        Health::Ready => vec![condition(
            CONDITION_READY,
            "True",
            REASON_READY,
            MESSAGE_READY,
            at,
        )],
        Health::NotReady => vec![
            condition(
                CONDITION_READY,
                "False",
                REASON_NOT_READY,
                MESSAGE_NOT_READY,
                at,
            ),
            condition(
                CONDITION_OFFLINE,
                "False",
                REASON_REACHABLE,
                MESSAGE_REACHABLE,
                at,
            ),
        ],
        Health::Unreachable => vec![
            condition(
                CONDITION_READY,
                "Unknown",
                REASON_NOT_REACHABLE,
                MESSAGE_NOT_REACHABLE,
                at,
            ),
            condition(
                CONDITION_OFFLINE,
                "True",
                REASON_NOT_REACHABLE,
                MESSAGE_NOT_REACHABLE,
                at,
            ),
        ],
    }
}

/// The condition of a Cluster whose member client cannot be built.
pub fn credentials_invalid_conditions(message: &str, at: Timestamp) -> Vec<ClusterCondition> {
    vec![condition(
        CONDITION_READY,
        "False",
        REASON_CREDENTIALS_INVALID,
        message,
        at,
    )]
}

/// Keep each condition's `lastTransitionTime` from `old` when a condition
/// of the same type had the same status.
pub fn carry_transition_times(new: &mut [ClusterCondition], old: &[ClusterCondition]) {
    for c in new.iter_mut() {
        if let Some(prev) = old.iter().find(|o| o.type_ == c.type_)
            && prev.status == c.status
            && prev.last_transition_time.is_some()
        {
            c.last_transition_time = prev.last_transition_time.clone();
        }
    }
}

/// Sorted unique zones and the region of the first node that has one.
pub fn zones_and_region(nodes: &[Node]) -> (Vec<String>, Option<String>) {
    let label = |node: &Node, keys: &[&str]| -> Option<String> {
        let labels = node.metadata.labels.as_ref()?;
        keys.iter()
            .find_map(|k| labels.get(*k))
            .filter(|v| !v.is_empty())
            .cloned()
    };
    let zones: BTreeSet<String> = nodes
        .iter()
        .filter_map(|n| label(n, &ZONE_LABELS))
        .collect();
    let region = nodes.iter().find_map(|n| label(n, &REGION_LABELS));
    (zones.into_iter().collect(), region)
}

/// Whether `new` must be written over `current` (see the module
/// documentation): a condition's type, status, reason or message, the
/// zones or region changed, or the stored probe time is `period` old.
pub fn needs_write(
    current: Option<&ClusterStatus>,
    new: &ClusterStatus,
    at: Timestamp,
    period: Duration,
) -> bool {
    let Some(current) = current else {
        return true;
    };
    let essence =
        |cs: &[ClusterCondition]| -> Vec<(String, String, Option<String>, Option<String>)> {
            cs.iter()
                .map(|c| {
                    (
                        c.type_.clone(),
                        c.status.clone(),
                        c.reason.clone(),
                        c.message.clone(),
                    )
                })
                .collect()
        };
    if essence(&current.conditions) != essence(&new.conditions)
        || current.zones != new.zones
        || current.region != new.region
    {
        return true;
    }
    let probed = current
        .conditions
        .iter()
        .filter_map(|c| c.last_probe_time.as_ref())
        .map(|t| t.0)
        .max();
    match probed {
        None => true,
        Some(t) => at.duration_since(t).as_secs_f64() >= period.as_secs_f64(),
    }
}

/// GET `path` on the member; the status and the body.
async fn get_raw(client: &kube::Client, path: &str) -> Result<(StatusCode, String), String> {
    let request = http::Request::get(path)
        .body(kube::client::Body::empty())
        .map_err(|e| e.to_string())?;
    let response = client.send(request).await.map_err(|e| e.to_string())?;
    let status = response.status();
    let body = response
        .into_body()
        .collect_bytes()
        .await
        .map_err(|e| e.to_string())?;
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// Probe the member's health: `/readyz`, else `/healthz` when that is 404,
/// within `timeout`.
pub async fn probe(client: &kube::Client, timeout: Duration) -> Health {
    let attempt = async {
        let (status, body) = get_raw(client, "/readyz").await?;
        if status == StatusCode::NOT_FOUND {
            get_raw(client, "/healthz").await
        } else {
            Ok((status, body))
        }
    };
    match tokio::time::timeout(timeout, attempt).await {
        Ok(Ok((status, body))) if status.is_success() && body.trim().eq_ignore_ascii_case("ok") => {
            Health::Ready
        }
        Ok(Ok((status, _))) => {
            tracing::debug!(%status, "member answered its health check without ok");
            Health::NotReady
        }
        Ok(Err(err)) => {
            tracing::debug!(error = %err, "member health check failed");
            Health::Unreachable
        }
        Err(_) => Health::Unreachable,
    }
}

/// Zones, region and version of a reachable member; `None` for what
/// could not be read in time.
async fn member_facts(
    client: &kube::Client,
    timeout: Duration,
) -> (Option<(Vec<String>, Option<String>)>, Option<String>) {
    let nodes = async {
        let nodes: Api<Node> = Api::all(client.clone());
        match tokio::time::timeout(timeout, nodes.list(&ListParams::default())).await {
            Ok(Ok(list)) => Some(zones_and_region(&list.items)),
            Ok(Err(err)) => {
                tracing::debug!(error = %err, "cannot list the member's nodes");
                None
            }
            Err(_) => None,
        }
    };
    let version = async {
        match tokio::time::timeout(timeout, client.apiserver_version()).await {
            Ok(Ok(info)) => Some(info.git_version),
            _ => None,
        }
    };
    tokio::join!(nodes, version)
}

async fn reconcile(cluster: Arc<Cluster>, ctx: Arc<Context>) -> Result<Action, Error> {
    let period = ctx.options.cluster_monitor_period;
    let name = cluster.name_any();
    let conn = match ctx.connection(&cluster).await? {
        Ok(conn) => conn,
        Err(problem) => {
            credentials_invalid(&cluster, &ctx, &problem).await?;
            return Ok(Action::requeue(period));
        }
    };

    let inputs = ProbeInputs {
        cluster_uid: cluster.uid().unwrap_or_default(),
        generation: cluster.metadata.generation,
        labels: cluster.labels().clone(),
        conn_serial: conn.serial,
        tunnel: if cluster.spec.is_pull() {
            crate::pull::tunnels().current(&name)
        } else {
            None
        },
    };
    let recent = ctx.state.lock().get(&name).and_then(|s| {
        s.last_probe
            .as_ref()
            .filter(|(_, i)| *i == inputs)
            .map(|(at, _)| at.elapsed())
            .filter(|e| *e < period / 2)
    });
    if let Some(elapsed) = recent {
        return Ok(Action::requeue(period.saturating_sub(elapsed)));
    }

    let at = now();
    let probe_started = Instant::now();
    // A pull member whose agent stopped renewing its Lease is unreachable,
    // even while a dead tunnel lingers; one whose agent is reconnecting
    // (no tunnel, the Lease still fresh) keeps its conditions, so an agent
    // restart moves no replica and writes nothing.
    let pull = cluster.spec.is_pull();
    let lapse = ctx.options.cluster_lease_duration;
    let health = if pull && crate::pull::lease_of_cluster_lapsed(&ctx.client, &name, lapse).await {
        tracing::debug!(cluster = %name, "the agent's Lease lapsed");
        Health::Unreachable
    } else if pull && crate::pull::tunnels().current(&name).is_none() {
        tracing::debug!(cluster = %name, "no tunnel: waiting for the agent or its Lease to lapse");
        return Ok(Action::requeue(period.min(lapse / 4)));
    } else {
        probe(&conn.client, ctx.options.cluster_probe_timeout).await
    };
    crate::metrics::metrics().probed(&name, health == Health::Ready, probe_started.elapsed());
    let (facts, version) = if health == Health::Unreachable {
        (None, None)
    } else {
        member_facts(&conn.client, ctx.options.cluster_probe_timeout).await
    };

    let (zones, region, version, written_version) = {
        let mut state = ctx.state.lock();
        let s = state.entry(name.clone()).or_default();
        s.last_probe = Some((Instant::now(), inputs));
        s.reported = None;
        if let Some((zones, region)) = facts {
            s.zones = zones;
            s.region = region;
        }
        if version.is_some() {
            s.version = version;
        }
        (
            s.zones.clone(),
            s.region.clone(),
            s.version.clone(),
            s.written_version.clone(),
        )
    };

    let old = cluster.status.as_ref();
    let mut conditions = health_conditions(health, at);
    carry_transition_times(
        &mut conditions,
        old.map(|s| s.conditions.as_slice()).unwrap_or(&[]),
    );
    let status = ClusterStatus {
        conditions,
        zones,
        region,
        kubernetes_version: version.clone(),
        ..ClusterStatus::default()
    };
    if needs_write(old, &status, at, period) || written_version.as_ref() != Some(&version) {
        write_status(&ctx, &name, &status, version.as_deref()).await?;
        ctx.state
            .lock()
            .entry(name.clone())
            .or_default()
            .written_version = Some(version);
    }

    publish_member(&cluster, &ctx, &conn, health == Health::Ready);
    Ok(Action::requeue(period))
}

/// A Cluster with no usable credentials: condition, event, not a member.
async fn credentials_invalid(cluster: &Cluster, ctx: &Context, problem: &str) -> Result<(), Error> {
    let name = cluster.name_any();
    ctx.members.remove(&name);
    crate::metrics::metrics().not_ready(&name);
    let at = now();
    let old = cluster.status.clone().unwrap_or_default();
    let mut conditions = credentials_invalid_conditions(problem, at);
    carry_transition_times(&mut conditions, &old.conditions);
    let status = ClusterStatus {
        conditions,
        zones: old.zones.clone(),
        region: old.region.clone(),
        kubernetes_version: old.kubernetes_version.clone(),
        ..ClusterStatus::default()
    };
    let report = {
        let mut state = ctx.state.lock();
        let s = state.entry(name.clone()).or_default();
        s.conn = None;
        s.last_probe = None;
        s.published = None;
        let report = s.reported.as_deref() != Some(problem);
        s.reported = Some(problem.to_string());
        report
    };
    if report {
        tracing::warn!(cluster = %name, "{problem}");
        if let Ok(obj) = serde_json::to_value(cluster) {
            ctx.recorder.record(
                &obj,
                EventType::Warning,
                REASON_CREDENTIALS_INVALID,
                problem.to_string(),
            );
        }
    }
    if needs_write(Some(&old), &status, at, ctx.options.cluster_monitor_period) {
        let version = ctx.state.lock().get(&name).and_then(|s| s.version.clone());
        write_status(ctx, &name, &status, version.as_deref()).await?;
    }
    Ok(())
}

/// Merge-patch the status subresource.
async fn write_status(
    ctx: &Context,
    name: &str,
    status: &ClusterStatus,
    version: Option<&str>,
) -> Result<(), Error> {
    let patch = status_patch(status, version);
    let api: Api<Cluster> = Api::all(ctx.client.clone());
    // `Ignore`: `status.kubernetesVersion` is dropped, not refused, while
    // the API type has no field for it.
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        field_validation: Some(ValidationDirective::Ignore),
        ..PatchParams::default()
    };
    match api.patch_status(name, &params, &Patch::Merge(&patch)).await {
        Ok(_) => Ok(()),
        // Deleted meanwhile: nothing to write to.
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(source) => Err(Error::WriteStatus {
            name: name.to_string(),
            source,
        }),
    }
}

/// The merge patch that sets `status` (absent fields removed).
fn status_patch(status: &ClusterStatus, version: Option<&str>) -> Value {
    let zones = if status.zones.is_empty() {
        Value::Null
    } else {
        json!(status.zones)
    };
    json!({
        "status": {
            "conditions": status.conditions,
            "zones": zones,
            "region": status.region,
            "kubernetesVersion": version,
        }
    })
}

/// Upsert the member when its client, labels or readiness changed.
fn publish_member(cluster: &Cluster, ctx: &Context, conn: &Conn, ready: bool) {
    let name = cluster.name_any();
    if !ctx.still_exists(cluster) {
        return;
    }
    let uid = cluster.uid().unwrap_or_default();
    let labels = cluster.labels().clone();
    let wanted = (conn.serial, labels.clone(), ready);
    let current = ctx.members.get(&name);
    let mut state = ctx.state.lock();
    let s = state.entry(name.clone()).or_default();
    if current.as_ref().is_some_and(|m| m.uid == uid) && s.published.as_ref() == Some(&wanted) {
        return;
    }
    let generation = current.map_or(0, |m| m.generation) + 1;
    s.published = Some(wanted);
    drop(state);
    tracing::info!(cluster = %name, server = %conn.server, ready, generation, "member updated");
    ctx.members.upsert(Member {
        name,
        uid,
        client: conn.client.clone(),
        proxy_client: conn.proxy_client.clone(),
        server: conn.server.clone(),
        labels,
        ready,
        generation,
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)] // a failing test may panic
pub(crate) mod tests {
    use k8s_openapi::ByteString;
    use ubernetes_api::ServerAddressByClientCIDR;

    use super::*;

    fn spec(entries: &[(&str, &str)]) -> ClusterSpec {
        ClusterSpec {
            server_address_by_client_cidrs: entries
                .iter()
                .map(|(cidr, addr)| ServerAddressByClientCIDR {
                    client_cidr: cidr.to_string(),
                    server_address: addr.to_string(),
                })
                .collect(),
            secret_ref: None,
            sync_mode: None,
        }
    }

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn the_longest_cidr_containing_loopback_picks_the_server() {
        let s = spec(&[
            ("0.0.0.0/0", "https://public:6443"),
            ("127.0.0.0/8", "https://loopback:6443"),
            ("10.0.0.0/8", "https://private:6443"),
        ]);
        assert_eq!(pick_server(&s).as_deref(), Some("https://loopback:6443"));
    }

    #[test]
    fn the_catch_all_cidr_is_used_when_nothing_longer_matches() {
        let s = spec(&[
            ("10.0.0.0/8", "https://private:6443"),
            ("0.0.0.0/0", "https://public:6443"),
        ]);
        assert_eq!(pick_server(&s).as_deref(), Some("https://public:6443"));
        let v6 = spec(&[("::/0", "https://[2001:db8::1]:6443")]);
        assert_eq!(
            pick_server(&v6).as_deref(),
            Some("https://[2001:db8::1]:6443")
        );
    }

    #[test]
    fn no_matching_cidr_leaves_the_kubeconfig_server() {
        let s = spec(&[
            ("10.0.0.0/8", "https://private:6443"),
            ("bogus", "https://x"),
        ]);
        assert_eq!(pick_server(&s), None);
        assert_eq!(pick_server(&spec(&[])), None);
    }

    #[test]
    fn a_ready_member_has_one_ready_condition_as_federation_v1() {
        let at = ts("2024-01-01T00:00:00Z");
        let c = health_conditions(Health::Ready, at);
        assert_eq!(c.len(), 1);
        assert_eq!(
            (c[0].type_.as_str(), c[0].status.as_str()),
            ("Ready", "True")
        );
        assert_eq!(c[0].reason.as_deref(), Some("ClusterReady"));
        assert_eq!(c[0].message.as_deref(), Some("/healthz responded with ok"));
        assert_eq!(c[0].last_probe_time, Some(Time(at)));
    }

    #[test]
    fn a_member_answering_without_ok_is_not_ready_and_not_offline() {
        let c = health_conditions(Health::NotReady, ts("2024-01-01T00:00:00Z"));
        let got: Vec<_> = c
            .iter()
            .map(|c| {
                (
                    c.type_.as_str(),
                    c.status.as_str(),
                    c.reason.as_deref().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("Ready", "False", "ClusterNotReady"),
                ("Offline", "False", "ClusterReachable")
            ]
        );
        assert_eq!(
            c[0].message.as_deref(),
            Some("/healthz responded without ok")
        );
    }

    #[test]
    fn an_unreachable_member_is_offline_and_of_unknown_readiness() {
        let c = health_conditions(Health::Unreachable, ts("2024-01-01T00:00:00Z"));
        let got: Vec<_> = c
            .iter()
            .map(|c| {
                (
                    c.type_.as_str(),
                    c.status.as_str(),
                    c.reason.as_deref().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("Ready", "Unknown", "ClusterNotReachable"),
                ("Offline", "True", "ClusterNotReachable")
            ]
        );
        assert_eq!(c[1].message.as_deref(), Some("cluster is not reachable"));
    }

    #[test]
    fn the_transition_time_changes_only_with_the_status() {
        let t0 = ts("2024-01-01T00:00:00Z");
        let t1 = ts("2024-01-01T00:01:00Z");
        let old = health_conditions(Health::NotReady, t0);
        let mut same = health_conditions(Health::NotReady, t1);
        carry_transition_times(&mut same, &old);
        assert_eq!(same[0].last_transition_time, Some(Time(t0)));
        assert_eq!(same[0].last_probe_time, Some(Time(t1)));

        let mut changed = health_conditions(Health::Unreachable, t1);
        carry_transition_times(&mut changed, &old);
        assert_eq!(
            changed[0].last_transition_time,
            Some(Time(t1)),
            "Ready went False → Unknown"
        );
        assert_eq!(
            changed[1].last_transition_time,
            Some(Time(t1)),
            "Offline went False → True"
        );
    }

    fn node(name: &str, labels: &[(&str, &str)]) -> Node {
        let mut n = Node::default();
        n.metadata.name = Some(name.into());
        n.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        n
    }

    #[test]
    fn zones_are_sorted_and_unique_and_the_region_is_the_first_nodes() {
        let nodes = vec![
            node("a", &[("topology.kubernetes.io/zone", "us-east-1b")]),
            node(
                "b",
                &[
                    ("topology.kubernetes.io/zone", "us-east-1a"),
                    ("topology.kubernetes.io/region", "us-east-1"),
                ],
            ),
            node(
                "c",
                &[
                    ("failure-domain.beta.kubernetes.io/zone", "us-east-1b"),
                    ("failure-domain.beta.kubernetes.io/region", "us-west-2"),
                ],
            ),
            node("d", &[]),
        ];
        let (zones, region) = zones_and_region(&nodes);
        assert_eq!(zones, vec!["us-east-1a", "us-east-1b"]);
        assert_eq!(region.as_deref(), Some("us-east-1"));
        assert_eq!(zones_and_region(&[]), (vec![], None));
    }

    fn status(health: Health, at: Timestamp) -> ClusterStatus {
        ClusterStatus {
            conditions: health_conditions(health, at),
            zones: vec!["z".into()],
            region: Some("r".into()),
            kubernetes_version: None,
            ..ClusterStatus::default()
        }
    }

    #[test]
    fn an_unchanged_status_is_written_again_only_after_a_period() {
        let period = Duration::from_secs(40);
        let t0 = ts("2024-01-01T00:00:00Z");
        let old = status(Health::Ready, t0);
        let soon = ts("2024-01-01T00:00:10Z");
        assert!(!needs_write(
            Some(&old),
            &status(Health::Ready, soon),
            soon,
            period
        ));
        let later = ts("2024-01-01T00:00:40Z");
        assert!(needs_write(
            Some(&old),
            &status(Health::Ready, later),
            later,
            period
        ));
        assert!(needs_write(
            None,
            &status(Health::Ready, soon),
            soon,
            period
        ));
    }

    #[test]
    fn a_changed_condition_zone_or_region_is_written_at_once() {
        let period = Duration::from_secs(40);
        let t0 = ts("2024-01-01T00:00:00Z");
        let soon = ts("2024-01-01T00:00:01Z");
        let old = status(Health::Ready, t0);
        assert!(needs_write(
            Some(&old),
            &status(Health::Unreachable, soon),
            soon,
            period
        ));
        let mut zones = status(Health::Ready, soon);
        zones.zones.push("y".into());
        assert!(needs_write(Some(&old), &zones, soon, period));
        let mut region = status(Health::Ready, soon);
        region.region = None;
        assert!(needs_write(Some(&old), &region, soon, period));
    }

    #[test]
    fn the_status_patch_removes_what_is_gone() {
        let at = ts("2024-01-01T00:00:00Z");
        let s = ClusterStatus {
            conditions: health_conditions(Health::Ready, at),
            zones: vec![],
            region: None,
            kubernetes_version: None,
            ..ClusterStatus::default()
        };
        let patch = status_patch(&s, Some("v1.37.0"));
        assert_eq!(patch["status"]["zones"], Value::Null);
        assert_eq!(patch["status"]["region"], Value::Null);
        assert_eq!(patch["status"]["kubernetesVersion"], "v1.37.0");
        assert_eq!(patch["status"]["conditions"][0]["type"], "Ready");
        assert_eq!(
            patch["status"]["conditions"][0]["lastProbeTime"],
            "2024-01-01T00:00:00Z"
        );
    }

    /// A plain-HTTP member on a real socket that answers every request
    /// with `answer(path)` (or never, for `None`).
    async fn fake_member(answer: fn(&str) -> Option<(u16, &'static str)>) -> kube::Client {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match conn.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&head).into_owned();
                    let path = head.split(' ').nth(1).unwrap_or("/").to_string();
                    match answer(&path) {
                        Some((code, body)) => {
                            let reply = format!(
                                "HTTP/1.1 {code} X\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                                body.len()
                            );
                            let _ = conn.write_all(reply.as_bytes()).await;
                        }
                        None => std::future::pending::<()>().await,
                    }
                });
            }
        });
        kube::Client::try_from(kube::Config::new(url.parse().unwrap())).unwrap()
    }

    #[tokio::test]
    async fn a_readyz_ok_is_ready() {
        let c = fake_member(|p| (p == "/readyz").then_some((200, "ok"))).await;
        assert_eq!(probe(&c, Duration::from_secs(5)).await, Health::Ready);
    }

    #[tokio::test]
    async fn a_member_without_readyz_is_probed_on_healthz() {
        let c = fake_member(|p| match p {
            "/readyz" => Some((404, "404 page not found")),
            "/healthz" => Some((200, "ok")),
            _ => None,
        })
        .await;
        assert_eq!(probe(&c, Duration::from_secs(5)).await, Health::Ready);
    }

    #[tokio::test]
    async fn a_failing_readyz_is_not_ready() {
        let c =
            fake_member(|_| Some((500, "[-]etcd failed: reason withheld\nreadyz check failed")))
                .await;
        assert_eq!(probe(&c, Duration::from_secs(5)).await, Health::NotReady);
    }

    #[tokio::test]
    async fn a_member_that_refuses_connections_is_unreachable() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let url = format!("http://127.0.0.1:{port}");
        let c = kube::Client::try_from(kube::Config::new(url.parse().unwrap())).unwrap();
        assert_eq!(probe(&c, Duration::from_secs(5)).await, Health::Unreachable);
    }

    #[tokio::test]
    async fn a_member_answering_too_late_is_unreachable() {
        let c = fake_member(|_| None).await;
        let started = Instant::now();
        assert_eq!(
            probe(&c, Duration::from_millis(300)).await,
            Health::Unreachable
        );
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    fn secret(key: &str, value: &str) -> Secret {
        let mut s = Secret::default();
        s.metadata.name = Some("m1".into());
        s.data = Some(
            [(key.to_string(), ByteString(value.as_bytes().to_vec()))]
                .into_iter()
                .collect(),
        );
        s
    }

    /// A kubeconfig with inline credentials for `https://127.0.0.1:1`.
    pub(crate) const KUBECONFIG: &str = r#"
apiVersion: v1
kind: Config
clusters:
- name: m
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: abc}
contexts:
- name: m
  context: {cluster: m, user: u}
current-context: m
"#;

    #[tokio::test]
    async fn a_kubeconfig_secret_builds_a_client_for_the_picked_server() {
        let url = member_client(
            &secret("kubeconfig", KUBECONFIG),
            "m1",
            Some("https://127.0.0.1:2"),
            Duration::from_secs(1),
        )
        .await
        .unwrap()
        .server;
        assert_eq!(url, "https://127.0.0.1:2");
        let url = member_client(
            &secret("kubeconfig", KUBECONFIG),
            "m1",
            None,
            Duration::from_secs(1),
        )
        .await
        .unwrap()
        .server;
        assert_eq!(url, "https://127.0.0.1:1");
    }

    #[tokio::test]
    async fn unusable_credentials_name_the_secret_and_the_problem() {
        let err = member_client(
            &secret("other", KUBECONFIG),
            "m1",
            None,
            Duration::from_secs(1),
        )
        .await
        .err()
        .unwrap();
        assert_eq!(err, "Secret federation-system/m1 has no key \"kubeconfig\"");
        let err = member_client(
            &secret("kubeconfig", "{nope"),
            "m1",
            None,
            Duration::from_secs(1),
        )
        .await
        .err()
        .unwrap();
        assert!(
            err.starts_with(
                "Secret federation-system/m1 key \"kubeconfig\" is not a valid kubeconfig"
            ),
            "{err}"
        );
        let err = member_client(
            &secret("kubeconfig", KUBECONFIG),
            "m1",
            Some("not a url"),
            Duration::from_secs(1),
        )
        .await
        .err()
        .unwrap();
        assert_eq!(
            err,
            "the server address \"not a url\" (spec.serverAddressByClientCIDRs) is not a URL \
             (https://HOST:PORT)"
        );
        // Another host than the kubeconfig's: refused before any connection.
        let err = member_client(
            &secret("kubeconfig", KUBECONFIG),
            "m1",
            Some("https://127.0.0.2:1"),
            Duration::from_secs(1),
        )
        .await
        .err()
        .unwrap();
        assert!(
            err.contains("is not on the host of the kubeconfig's server"),
            "{err}"
        );
    }
}
