//! The live set of joined member clusters, shared between the Cluster
//! health controller (which writes it) and the propagation controllers
//! (which read it and subscribe to its changes).
//!
//! A [`Member`] is an immutable snapshot: when anything about a cluster
//! changes (credentials, address, labels, readiness) the health controller
//! replaces it with a new `Arc<Member>` with a higher `generation`, and
//! every subscriber is woken.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kube::runtime::reflector::{self, ObjectRef, Store};
use parking_lot::{Mutex, RwLock};
use tokio::sync::watch;

/// One joined member cluster as the controllers see it now.
#[derive(Clone)]
pub struct Member {
    /// The Cluster object's name.
    pub name: String,
    /// The Cluster object's uid (a re-created Cluster is a new member).
    pub uid: String,
    /// The client to the member's API (credentials from the Secret the
    /// Cluster names; server from `serverAddressByClientCIDRs`).
    pub client: kube::Client,
    /// The same credentials and server without kube's retry of 429, 503
    /// and 504: the cluster proxy (`clusters/<name>/proxy`) forwards with
    /// it, so the member's answers come back as they are.
    pub proxy_client: kube::Client,
    /// The server URL the client talks to.
    pub server: String,
    /// The Cluster object's labels (placement selects on them).
    pub labels: BTreeMap<String, String>,
    /// Whether the last probe said Ready.
    pub ready: bool,
    /// Bumped on every change of this member (new client, labels, readiness).
    pub generation: u64,
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member")
            .field("name", &self.name)
            .field("server", &self.server)
            .field("labels", &self.labels)
            .field("ready", &self.ready)
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

/// The shared member set.
#[derive(Debug)]
pub struct Members {
    inner: RwLock<BTreeMap<String, Arc<Member>>>,
    changes: watch::Sender<u64>,
}

impl Members {
    /// An empty set.
    pub fn new() -> Arc<Self> {
        let (changes, _) = watch::channel(0);
        Arc::new(Self {
            inner: RwLock::new(BTreeMap::new()),
            changes,
        })
    }

    /// Every joined member, by name.
    pub fn snapshot(&self) -> Vec<Arc<Member>> {
        self.inner.read().values().cloned().collect()
    }

    /// No member is joined.
    pub fn is_empty(&self) -> bool {
        self.inner.read().is_empty()
    }

    /// One member by Cluster name.
    pub fn get(&self, name: &str) -> Option<Arc<Member>> {
        self.inner.read().get(name).cloned()
    }

    /// Insert or replace a member and wake subscribers.
    pub fn upsert(&self, member: Member) {
        self.inner
            .write()
            .insert(member.name.clone(), Arc::new(member));
        self.changes.send_modify(|n| *n += 1);
    }

    /// Remove a member (its Cluster was deleted) and wake subscribers.
    pub fn remove(&self, name: &str) {
        if self.inner.write().remove(name).is_some() {
            self.changes.send_modify(|n| *n += 1);
        }
    }

    /// A receiver that sees a new value on every change of the set.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

/// Follow the federation's Clusters read-only: a member set kept in step
/// with the `federation/v1beta1` Clusters that `fed` sees, each reached with
/// the kubeconfig of the Secret its `secretRef` names (the built-in Cluster
/// controller's checks, [`crate::clusters`]: inline credentials only, the
/// picked server on the kubeconfig's host) and Ready when its `Ready`
/// condition, written by the federation's own Cluster controller, is
/// `True`. A Cluster without usable credentials is no member. Follows the
/// Secrets of `federation-system` too, so rotated credentials take effect
/// without a Cluster change. Writes nothing; stops with `stop`.
///
/// `ubernetes serve` runs it on every replica (the cluster proxy and the
/// DNS computation use it, [`crate::run_replica`]); a user's federated
/// controller in a process of its own uses it through
/// [`crate::Context::follow`]. The leader's Cluster controller, which probes
/// the members and writes the condition, fills a set of its own.
pub fn follow(
    fed: kube::Client,
    options: crate::FederationOptions,
    stop: tokio_util::sync::CancellationToken,
) -> Arc<Members> {
    let members = Members::new();
    tokio::spawn(follow_clusters(fed, options, members.clone(), stop));
    members
}

/// Whether the Cluster's `Ready` condition is `True`.
fn condition_ready(cluster: &ubernetes_api::Cluster) -> bool {
    cluster.status.as_ref().is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == crate::clusters::CONDITION_READY && c.status == "True")
    })
}

/// What a follower's member client was built from: the Cluster's uid, the
/// Secret's uid and resourceVersion, the picked server.
type BuiltFrom = (String, String, String, Option<String>);

/// What changed since the follower last looked: the Clusters and Secrets
/// named by watch events, or everything after a (re-)list.
#[derive(Debug, Default)]
struct Pending {
    /// A watch (re-)listed: look at every Cluster, forget the ones gone.
    all: bool,
    /// Clusters added, modified or deleted.
    clusters: BTreeSet<String>,
    /// Secrets of `federation-system` added, modified or deleted.
    secrets: BTreeSet<String>,
}

/// The changes the two watches report, and the wake-up of the follower.
#[derive(Debug, Default)]
struct Changes {
    pending: Mutex<Pending>,
    wake: tokio::sync::Notify,
}

impl Changes {
    fn mark(&self, f: impl FnOnce(&mut Pending)) {
        f(&mut self.pending.lock());
        self.wake.notify_one();
    }

    fn take(&self) -> Pending {
        std::mem::take(&mut *self.pending.lock())
    }
}

/// What a watched federation object must be to be reflected.
trait Watched:
    kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned
{
}

impl<K> Watched for K where
    K: kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned
{
}

/// A reflector of `api` whose events name what changed in `changes`
/// (`mark` files an added, modified or deleted object; a finished
/// (re-)list marks everything).
fn reflect_changes<K>(
    api: kube::Api<K>,
    changes: &Arc<Changes>,
    mark: fn(&mut Pending, &K),
    stop: &tokio_util::sync::CancellationToken,
) -> Store<K>
where
    K: Watched + Send + Sync + 'static,
{
    use futures::StreamExt as _;
    use kube::runtime::WatchStreamExt as _;
    use kube::runtime::watcher::{Config, Event};

    let (store, writer) = reflector::store::<K>();
    let stream = reflector::reflector(writer, kube::runtime::watcher(api, Config::default()))
        .default_backoff()
        .take_until(stop.clone().cancelled_owned());
    let changes = changes.clone();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(Event::Apply(o) | Event::Delete(o)) => changes.mark(|p| mark(p, &o)),
                Ok(Event::InitDone) => changes.mark(|p| p.all = true),
                Ok(Event::Init | Event::InitApply(_)) => {}
                Err(e) => tracing::debug!(error = %e, "watch of the federation"),
            }
        }
    });
    store
}

async fn follow_clusters(
    fed: kube::Client,
    options: crate::FederationOptions,
    members: Arc<Members>,
    stop: tokio_util::sync::CancellationToken,
) {
    use k8s_openapi::api::core::v1::Secret;
    use ubernetes_api::Cluster;

    let changes = Arc::new(Changes::default());
    let clusters = reflect_changes(
        kube::Api::<Cluster>::all(fed.clone()),
        &changes,
        |p, c: &Cluster| {
            p.clusters.insert(kube::ResourceExt::name_any(c));
        },
        &stop,
    );
    let secrets = reflect_changes(
        kube::Api::<Secret>::namespaced(fed, crate::clusters::FEDERATION_NAMESPACE),
        &changes,
        |p, s: &Secret| {
            p.secrets.insert(kube::ResourceExt::name_any(s));
        },
        &stop,
    );
    // Nothing is removed before both lists are known.
    tokio::select! {
        () = stop.cancelled() => return,
        _ = async {
            tokio::join!(crate::ready::wait_listed(&clusters), crate::ready::wait_listed(&secrets))
        } => {}
    }
    let mut follower = Follower::new(options.member_request_timeout);
    let _ = changes.take();
    follower.all(&clusters, &secrets, &members).await;
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            () = changes.wake.notified() => {}
        }
        follower
            .changed(changes.take(), &clusters, &secrets, &members)
            .await;
    }
}

/// Keeps a member set in step with the Clusters and Secrets it is shown:
/// one Cluster at a time, the ones that changed.
struct Follower {
    timeout: std::time::Duration,
    /// name → what its member client was built from.
    built: BTreeMap<String, BuiltFrom>,
    /// name → what its member client failed to be built from.
    failed: BTreeMap<String, BuiltFrom>,
    /// Clusters looked at so far (the tests count them).
    looked_at: u64,
    /// Member clients built so far (the tests count them).
    clients_built: u64,
}

impl Follower {
    fn new(timeout: std::time::Duration) -> Self {
        Self {
            timeout,
            built: BTreeMap::new(),
            failed: BTreeMap::new(),
            looked_at: 0,
            clients_built: 0,
        }
    }

    /// Look at the Clusters that `pending` names (or that name a Secret it
    /// names), or at all of them after a (re-)list.
    async fn changed(
        &mut self,
        pending: Pending,
        clusters: &Store<ubernetes_api::Cluster>,
        secrets: &Store<k8s_openapi::api::core::v1::Secret>,
        members: &Members,
    ) {
        if pending.all {
            return self.all(clusters, secrets, members).await;
        }
        let mut names = pending.clusters;
        if !pending.secrets.is_empty() {
            names.extend(
                clusters
                    .state()
                    .iter()
                    .filter(|c| {
                        c.spec
                            .secret_ref
                            .as_ref()
                            .is_some_and(|r| pending.secrets.contains(&r.name))
                    })
                    .map(|c| kube::ResourceExt::name_any(c.as_ref())),
            );
        }
        for name in names {
            match clusters.get(&ObjectRef::new(&name)) {
                Some(cluster) => self.one(&cluster, secrets, members).await,
                None => {
                    members.remove(&name);
                    self.built.remove(&name);
                    self.failed.remove(&name);
                }
            }
        }
    }

    /// Look at every Cluster; forget the members whose Cluster is gone.
    async fn all(
        &mut self,
        clusters: &Store<ubernetes_api::Cluster>,
        secrets: &Store<k8s_openapi::api::core::v1::Secret>,
        members: &Members,
    ) {
        let mut seen = BTreeSet::new();
        for cluster in clusters.state() {
            seen.insert(kube::ResourceExt::name_any(cluster.as_ref()));
            self.one(&cluster, secrets, members).await;
        }
        for m in members.snapshot() {
            if !seen.contains(&m.name) {
                members.remove(&m.name);
            }
        }
        self.built.retain(|n, _| seen.contains(n));
        self.failed.retain(|n, _| seen.contains(n));
    }

    /// Bring one Cluster's member up to date: a new client only when the
    /// Cluster's uid, its Secret or the picked server changed, a new
    /// generation only when the client, the labels or the readiness did
    /// (a status write that leaves `Ready` as it was changes nothing).
    async fn one(
        &mut self,
        cluster: &ubernetes_api::Cluster,
        secrets: &Store<k8s_openapi::api::core::v1::Secret>,
        members: &Members,
    ) {
        self.looked_at += 1;
        let name = kube::ResourceExt::name_any(cluster);
        if cluster.spec.is_pull() {
            // Reached over its agent's tunnel (`crate::pull`), whichever
            // is open: no Secret, one client for the Cluster's life.
            let key: BuiltFrom = (
                kube::ResourceExt::uid(cluster).unwrap_or_default(),
                String::new(),
                String::new(),
                Some(crate::pull::server_of(&name)),
            );
            let ready = condition_ready(cluster);
            let labels = kube::ResourceExt::labels(cluster).clone();
            let current = members
                .get(&name)
                .filter(|_| self.built.get(&name) == Some(&key));
            let client = match &current {
                Some(m) if m.ready == ready && m.labels == labels => return,
                Some(m) => m.client.clone(),
                None => crate::pull::tunnels().client(&name),
            };
            self.failed.remove(&name);
            self.built.insert(name.clone(), key.clone());
            let generation = members.get(&name).map_or(0, |m| m.generation) + 1;
            members.upsert(Member {
                server: crate::pull::server_of(&name),
                name,
                uid: key.0,
                proxy_client: client.clone(),
                client,
                labels,
                ready,
                generation,
            });
            return;
        }
        let secret = cluster
            .spec
            .secret_ref
            .as_ref()
            .map(|r| r.name.clone())
            .filter(|n| !n.is_empty())
            .and_then(|n| {
                let at = ObjectRef::new(&n).within(crate::clusters::FEDERATION_NAMESPACE);
                secrets.get(&at).map(|s| (n, s))
            });
        let Some((secret_name, secret)) = secret else {
            members.remove(&name);
            self.built.remove(&name);
            return;
        };
        let server = crate::clusters::pick_server(&cluster.spec);
        let key: BuiltFrom = (
            kube::ResourceExt::uid(cluster).unwrap_or_default(),
            kube::ResourceExt::uid(secret.as_ref()).unwrap_or_default(),
            kube::ResourceExt::resource_version(secret.as_ref()).unwrap_or_default(),
            server.clone(),
        );
        if self.failed.get(&name) == Some(&key) {
            return;
        }
        let ready = condition_ready(cluster);
        let labels = kube::ResourceExt::labels(cluster).clone();
        let current = members
            .get(&name)
            .filter(|_| self.built.get(&name) == Some(&key));
        let (client, proxy_client, url) = match &current {
            Some(m) if m.ready == ready && m.labels == labels => return,
            Some(m) => (m.client.clone(), m.proxy_client.clone(), m.server.clone()),
            None => {
                self.clients_built += 1;
                match crate::clusters::member_client(
                    &secret,
                    &secret_name,
                    server.as_deref(),
                    self.timeout,
                )
                .await
                {
                    Ok(c) => (c.client, c.proxy_client, c.server),
                    Err(e) => {
                        // The leader's Cluster controller reports it.
                        tracing::debug!(cluster = %name, error = %e, "no member client");
                        members.remove(&name);
                        self.built.remove(&name);
                        self.failed.insert(name, key);
                        return;
                    }
                }
            }
        };
        self.failed.remove(&name);
        self.built.insert(name.clone(), key.clone());
        let generation = members.get(&name).map_or(0, |m| m.generation) + 1;
        members.upsert(Member {
            name,
            uid: key.0,
            client,
            proxy_client,
            server: url,
            labels,
            ready,
            generation,
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)] // a failing test may panic
mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use k8s_openapi::api::core::v1::Secret;
    use kube::runtime::reflector::store::Writer;
    use kube::runtime::watcher::Event;
    use ubernetes_api::{Cluster, ClusterCondition, ClusterStatus};

    use crate::clusters::tests::KUBECONFIG;

    fn secret(name: &str, version: &str) -> Secret {
        let mut s = Secret::default();
        s.metadata.name = Some(name.into());
        s.metadata.namespace = Some(crate::clusters::FEDERATION_NAMESPACE.into());
        s.metadata.uid = Some(format!("uid-{name}"));
        s.metadata.resource_version = Some(version.into());
        s.data = Some(
            [(
                crate::clusters::KUBECONFIG_KEY.to_string(),
                ByteString(KUBECONFIG.as_bytes().to_vec()),
            )]
            .into_iter()
            .collect(),
        );
        s
    }

    fn cluster(name: &str, ready: &str, probed: &str) -> Cluster {
        let mut c: Cluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "federation/v1beta1",
            "kind": "Cluster",
            "metadata": {"name": name, "uid": format!("uid-{name}")},
            "spec": {"secretRef": {"name": format!("s-{name}")}},
        }))
        .unwrap();
        c.status = Some(ClusterStatus {
            conditions: vec![ClusterCondition {
                type_: crate::clusters::CONDITION_READY.into(),
                status: ready.into(),
                last_probe_time: serde_json::from_value(serde_json::json!(probed)).unwrap(),
                ..ClusterCondition::default()
            }],
            ..ClusterStatus::default()
        });
        c
    }

    fn apply<K>(writer: &mut Writer<K>, o: K)
    where
        K: kube::Resource<DynamicType = ()> + Clone,
    {
        writer.apply_watcher_event(&Event::Apply(o));
    }

    /// What the watches report: these Clusters and Secrets changed.
    fn pending(clusters: &[&str], secrets: &[&str]) -> Pending {
        let names = |n: &[&str]| n.iter().map(|n| n.to_string()).collect();
        Pending {
            all: false,
            clusters: names(clusters),
            secrets: names(secrets),
        }
    }

    /// A Cluster's event looks at that Cluster only; its probe's status
    /// write (`Ready` unchanged) neither rebuilds its client nor bumps its
    /// generation; a Secret's event looks at the Clusters naming it.
    #[tokio::test]
    async fn only_the_changed_cluster_is_looked_at_and_a_probe_write_changes_nothing() {
        let (clusters, mut cw) = reflector::store::<Cluster>();
        let (secrets, mut sw) = reflector::store::<Secret>();
        for n in ["a", "b", "c"] {
            apply(&mut cw, cluster(n, "True", "2026-01-01T00:00:00Z"));
            apply(&mut sw, secret(&format!("s-{n}"), "1"));
        }
        let members = Members::new();
        let mut f = Follower::new(std::time::Duration::from_secs(1));
        f.all(&clusters, &secrets, &members).await;
        assert_eq!((f.looked_at, f.clients_built), (3, 3));
        let before: Vec<Arc<Member>> = members.snapshot();
        assert!(before.iter().all(|m| m.ready && m.generation == 1));

        // The probe's own status write: only lastProbeTime moves.
        apply(&mut cw, cluster("a", "True", "2026-01-01T00:00:40Z"));
        f.changed(pending(&["a"], &[]), &clusters, &secrets, &members)
            .await;
        assert_eq!((f.looked_at, f.clients_built), (4, 3));
        for (m, was) in members.snapshot().iter().zip(&before) {
            assert!(Arc::ptr_eq(m, was), "{} was replaced", m.name);
        }

        // Readiness flips: a new generation with the same client.
        apply(&mut cw, cluster("a", "False", "2026-01-01T00:01:20Z"));
        f.changed(pending(&["a"], &[]), &clusters, &secrets, &members)
            .await;
        assert_eq!((f.looked_at, f.clients_built), (5, 3));
        let a = members.get("a").unwrap();
        assert!(!a.ready);
        assert_eq!(a.generation, 2);
        assert!(Arc::ptr_eq(&members.get("b").unwrap(), &before[1]));

        // Rotated credentials of b: b alone is looked at and rebuilt.
        apply(&mut sw, secret("s-b", "2"));
        f.changed(pending(&[], &["s-b"]), &clusters, &secrets, &members)
            .await;
        assert_eq!((f.looked_at, f.clients_built), (6, 4));
        assert_eq!(members.get("b").unwrap().generation, 2);
        assert!(Arc::ptr_eq(&members.get("c").unwrap(), &before[2]));

        // A deleted Cluster leaves the set.
        cw.apply_watcher_event(&Event::Delete(cluster("c", "True", "2026-01-01T00:00:00Z")));
        f.changed(pending(&["c"], &[]), &clusters, &secrets, &members)
            .await;
        assert!(members.get("c").is_none());
        assert_eq!(members.snapshot().len(), 2);
    }
}
