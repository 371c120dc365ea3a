//! # ubernetes-federation
//!
//! The federation controllers that `ubernetes serve` embeds, and the
//! library a user writes their own federated controllers with (seed 000's
//! picture; `examples/foo_controller.rs`). They watch the federation's API
//! (in `serve`, through an in-process `kube::Client`) and keep the joined
//! member clusters in step, each reached with its own `kube::Client`.
//!
//! Where to start reading:
//! - [`run`]: starts every built-in controller and stops them with the token;
//! - the public API a federated controller is built on:
//!   - [`members`]: the live set of member clusters ([`members::Members`];
//!     [`members::follow`] builds one in a process of its own);
//!   - [`informer`]: the federated informer, one per kind, shared: per
//!     member, a lean cache of our copies (versions, a content hash, the
//!     federation's labels and annotations, status), indexed by origin,
//!     and an event stream (a copy changed → re-queue its federated object;
//!     cluster added / ready / not ready / removed / synced), also as
//!     kube-runtime triggers ([`informer::Federated`]);
//!   - [`objects`]: the federation side of each kind, one shared reflector
//!     per kind for every controller;
//!   - [`deletion`]: the deletion helper, which keeps each federated
//!     object's [`version::PropagationRecord`] and through it follows
//!     Kubernetes' Background / Foreground / Orphan deletion in the members;
//!   - [`dispatch`]: the member writes (apply, delete, orphan);
//!   - [`member_object`]: what is sent to a member and what never is;
//!   - [`policy`]: the per-kind rules, one [`policy::KindPolicy`] per
//!     group and kind (what propagates, what is stripped from a copy, how
//!     status sums, where replicas live), with a default for custom
//!     resources;
//! - the built-in controllers, one concern each (as kubefed splits them):
//!   [`clusters`] (Cluster health, fills the member set), [`sync`]
//!   (propagation: create/update/delete, drift, adoption, placement), with
//!   its extension point for scheduling ([`sync::ReplicaScheduler`]),
//!   [`scheduling`] (fills it: each cluster's share of a workload's
//!   replicas, failover, federated HPAs) and [`status`] (member statuses
//!   summed onto the federated object's status subresource) and
//!   [`dns_records`] (the DNS records of federated LoadBalancer Services,
//!   served by the embedded DNS server of `--dns-bind`) and
//!   [`member_events`] (the members' Events about copies, mirrored onto
//!   the federated objects for `kubectl describe`);
//! - pure policy, no I/O: [`planner`] (Federation v1's replica planner),
//!   [`failover`] (capacity-safe handover), [`hpa`] (HPA min/max split),
//!   [`status_aggregate`] (member statuses → federated status),
//!   [`placement`] (cluster-selector annotation),
//!   [`overrides`] (per-cluster JSON patches), [`version`] (the record
//!   object and its per-cluster state).
//!
//! - [`metrics`]: the federation's Prometheus metrics (per cluster:
//!   ready, probe latency, objects in sync, replicas placed, propagation
//!   latency and errors).
//!
//! # Writing a federated controller
//!
//! A controller of one federated kind is a kube-runtime `Controller` over
//! the kind's shared federation-side cache, triggered by its own changes
//! and by its member copies' (`examples/foo_controller.rs` is a whole one,
//! run against two members by `e2e/tests/federation_foo_controller.rs`):
//!
//! ```no_run
//! # use std::{sync::Arc, time::Duration};
//! # use futures::StreamExt as _;
//! # use kube::api::DynamicObject;
//! # use kube::runtime::controller::Action;
//! use ubernetes_federation::informer::Federated as _;
//! use ubernetes_federation::kinds::FederatedKind;
//! use ubernetes_federation::{Context, FederationOptions, member_object};
//!
//! async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<Context>) -> kube::Result<Action> {
//!     let kind = FederatedKind::new("example.com", "v1", "Foo", "foos", true).custom();
//!     // The cache keeps metadata: read the content to write it.
//!     let Some(full) = ctx.objects.for_kind(&kind).fetch(&obj).await? else {
//!         return Ok(Action::await_change());
//!     };
//!     let fed = serde_json::to_value(&full).unwrap_or_default();
//!     let informer = ctx.informers.for_kind(&kind);
//!     for member in ctx.members.snapshot() {
//!         let desired = member_object::member_copy(kind.policy(), &fed, &member.name);
//!         let actual = informer.get(&member.name, &ubernetes_federation::informer::ObjectKey::of(&full));
//!         // compare, then `dispatch::apply_with_namespace` …
//!         # let _ = (desired, actual);
//!     }
//!     Ok(Action::await_change())
//! }
//!
//! # async fn run() -> anyhow::Result<()> {
//! let stop = tokio_util::sync::CancellationToken::new();
//! // The member set follows the federation's Clusters.
//! let ctx = Context::follow(kube::Client::try_default().await?, FederationOptions::default(), &stop);
//! let kind = FederatedKind::new("example.com", "v1", "Foo", "foos", true).custom();
//! let informer = ctx.informers.for_kind(&kind); // the member side, shared
//! ctx.objects
//!     .for_kind(&kind) // the federation side, watched once per process
//!     .controller() // a Foo changed
//!     .federated(&informer) // a copy changed (→ its Foo), a cluster came or went (→ all)
//!     .run(reconcile, |_, _, _| Action::requeue(Duration::from_secs(2)), Arc::new(ctx))
//!     .for_each(|_| async {})
//!     .await;
//! # Ok(())
//! # }
//! ```
//!
//! Other triggers map a copy change to other objects
//! ([`informer::FederatedInformer::watches`], kube-rs's `watches`); the
//! rules of a kind (what propagates, what a copy drops, how status sums,
//! where replicas live) are its [`policy::KindPolicy`], looked up by group
//! and kind; member objects that are not copies get an informer of their
//! own ([`informer::Informers::for_member_objects`]).
//!
//! What it is not: it never touches the store directly, and never writes
//! the user's objects (SPEC §3.8): its bookkeeping lives in objects of its
//! own. Everything goes through the public Kubernetes API, as any user's
//! controller would.
#![forbid(unsafe_code)]

pub mod cluster_profiles;
pub mod clusters;
pub mod copy_checks;
pub mod deletion;
pub mod dispatch;
pub mod dns_endpoints;
pub mod dns_records;
pub mod events;
pub mod failover;
pub mod hpa;
pub mod informer;
pub mod kinds;
pub mod mcs;
pub mod mcs_dns;
pub mod member_events;
pub mod member_kubeconfig;
pub mod member_object;
pub mod members;
pub mod metrics;
pub mod objects;
pub mod options;
pub mod overrides;
pub mod placement;
pub mod planner;
pub mod policy;
pub mod pull;
pub mod ready;
mod record_status;
pub mod revisions;
pub mod rollout;
pub mod scheduling;
pub mod status;
pub mod status_aggregate;
pub mod sync;
pub mod version;

use std::sync::Arc;

pub use options::FederationOptions;

use tokio_util::sync::CancellationToken;

/// What every built-in controller shares: the federation client, the
/// member set, the federated informers and the event recorder, and the
/// extension points other controllers fill.
pub struct Context {
    /// The client to the federation's own API.
    pub fed: kube::Client,
    /// The joined members (filled by the Cluster controller).
    pub members: Arc<members::Members>,
    /// One federated informer per kind (the member side).
    pub informers: Arc<informer::Informers>,
    /// One shared reflector per kind (the federation side).
    pub objects: Arc<objects::FederationObjects>,
    /// Events on federated objects.
    pub recorder: events::Recorder,
    /// The flags.
    pub options: FederationOptions,
    /// Scheduling's per-cluster fields (e.g. `spec.replicas`), if set.
    pub scheduler: Option<Arc<dyn sync::ReplicaScheduler>>,
    /// The federated workloads' revisions (ReplicaSets, ControllerRevisions).
    pub revisions: Arc<revisions::History>,
}

impl Context {
    /// A context over `client` with an empty member set and no scheduler.
    pub fn new(client: kube::Client, options: FederationOptions, stop: &CancellationToken) -> Self {
        Self::with_members(client, options, members::Members::new(), stop)
    }

    /// A context for a controller in a process of its own: its member set
    /// follows the federation's Clusters ([`members::follow`]) until `stop`.
    pub fn follow(
        client: kube::Client,
        options: FederationOptions,
        stop: &CancellationToken,
    ) -> Self {
        let members = members::follow(client.clone(), options.clone(), stop.clone());
        Self::with_members(client, options, members, stop)
    }

    /// A context over `client` whose Cluster controller fills `members`
    /// (shared with the server's cluster proxy), with no scheduler.
    pub fn with_members(
        client: kube::Client,
        options: FederationOptions,
        members: Arc<members::Members>,
        stop: &CancellationToken,
    ) -> Self {
        Self {
            recorder: events::Recorder::new(client.clone()),
            informers: informer::Informers::new(members.clone(), stop.clone()),
            objects: objects::FederationObjects::new(client.clone(), stop.clone()),
            revisions: revisions::History::new(client.clone(), stop.clone()),
            fed: client,
            members,
            options,
            scheduler: None,
        }
    }
}

/// Run every federation controller until `stop` is cancelled. `client` is
/// the in-process client to the federation's own API, authenticated as
/// `system:ubernetes:federation-controller`.
pub async fn run(
    client: kube::Client,
    options: FederationOptions,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    run_with_members(client, options, members::Members::new(), stop).await
}

/// [`run`] filling `members`, a set the caller shares.
pub async fn run_with_members(
    client: kube::Client,
    options: FederationOptions,
    members: Arc<members::Members>,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    run_with(client, options, members, stop).await
}

/// Whether this replica may write: it holds the controllers' Lease (or is
/// the only process of its store). The per-replica part ([`run_replica`])
/// computes on every replica and writes only while this says so. Cheap to
/// clone; [`Leading::channel`] gives the sender the server drives from its
/// leader election.
#[derive(Clone, Debug)]
pub struct Leading(tokio::sync::watch::Receiver<bool>);

impl Leading {
    /// Always leading (one process, or a test).
    pub fn always() -> Self {
        Self(tokio::sync::watch::Sender::new(true).subscribe())
    }

    /// Not leading until the sender says so.
    pub fn channel() -> (tokio::sync::watch::Sender<bool>, Self) {
        let (tx, rx) = tokio::sync::watch::channel(false);
        (tx, Self(rx))
    }

    /// Whether this replica leads now.
    pub fn is_leader(&self) -> bool {
        *self.0.borrow()
    }

    /// Wait until this replica does not lead (at once if it does not now;
    /// forever once the sender is gone while leading).
    pub async fn lost(&mut self) {
        if self.0.wait_for(|leads| !*leads).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Wait for the next change of leadership (forever once the sender is
    /// gone).
    pub async fn changed(&mut self) {
        if self.0.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// What **every** replica runs, from the same informers, writing nothing
/// while it does not lead: the DNS computation ([`dns_records`]) into the
/// local `dns` record table of the embedded DNS server (`--dns-bind`), so
/// every replica answers the same names with the same addresses, through a
/// leader change too. `members` is this replica's read-only member set
/// ([`members::follow`]: built from each Cluster and its credentials
/// Secret with the Cluster controller's checks, Ready from the Cluster's
/// `Ready` condition the leader writes), which the cluster proxy also
/// uses. The DNS controller's writes (DNSEndpoints, conflict Events and
/// conditions) happen only while `leading` says so.
pub async fn run_replica(
    client: kube::Client,
    options: FederationOptions,
    members: Arc<members::Members>,
    dns: Option<Arc<ubernetes_dns::RecordStore>>,
    leading: Leading,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let ctx = Arc::new(Context::with_members(client, options, members, &stop));
    let mut tasks = Vec::new();
    if let Some(store) = dns {
        // Everything that fills the record table runs here.
        tasks.push(tokio::spawn(dns_records::run(
            ctx.clone(),
            store.clone(),
            leading.clone(),
            stop.clone(),
        )));
        // The clusterset zone's names (writes nothing to the API).
        tasks.push(tokio::spawn(mcs_dns::run(ctx.clone(), store, stop.clone())));
    }
    for task in tasks {
        task.await?;
    }
    Ok(())
}

/// The controllers that write, run by the leader only (the whole term,
/// cancelled with `stop` when it ends): the Cluster controller (probes,
/// Cluster status, filling `members`), propagation, scheduling and status.
/// `ubernetes serve` runs [`run_replica`] beside it on every replica.
pub async fn run_with(
    client: kube::Client,
    options: FederationOptions,
    members: Arc<members::Members>,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let mut ctx = Context::with_members(client, options, members, &stop);
    ctx.scheduler = Some(scheduling::Scheduler::start(
        ctx.fed.clone(),
        ctx.recorder.clone(),
        ctx.options.unschedulable_threshold,
        stop.clone(),
    ));
    let ctx = Arc::new(ctx);
    let clusters = tokio::spawn(clusters::run(
        ctx.fed.clone(),
        ctx.members.clone(),
        ctx.options.clone(),
        stop.clone(),
    ));
    let status = tokio::spawn(status::run(ctx.clone(), stop.clone()));
    let mcs = tokio::spawn(mcs::run(ctx.clone(), stop.clone()));
    let profiles = tokio::spawn(cluster_profiles::run(ctx.clone(), stop.clone()));
    let revisions = tokio::spawn(revisions::run(ctx.clone(), stop.clone()));
    let member_events = tokio::spawn(member_events::run(ctx.clone(), stop.clone()));
    let sync = tokio::spawn(sync::run(ctx, stop));
    let (c, st, s) = tokio::join!(clusters, status, sync);
    c??;
    st??;
    s??;
    mcs.await??;
    profiles.await??;
    revisions.await??;
    member_events.await??;
    Ok(())
}
