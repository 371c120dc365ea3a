//! The live set of joined member clusters, shared between the Cluster
//! health controller (which writes it) and the propagation controllers
//! (which read it and subscribe to its changes).
//!
//! A [`Member`] is an immutable snapshot: when anything about a cluster
//! changes (credentials, address, labels, readiness) the health controller
//! replaces it with a new `Arc<Member>` with a higher `generation`, and
//! every subscriber is woken.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::RwLock;
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

/// Follow the federation's Clusters from a process of one's own (a user's
/// federated controller, `examples/foo_controller.rs`): a member set kept
/// in step with the `federation/v1beta1` Clusters that `fed` sees, each
/// reached with the kubeconfig of the Secret its `secretRef` names (as the
/// built-in Cluster controller does, see [`crate::clusters`]) and Ready
/// when its `Ready` condition, written by the federation's own Cluster
/// controller, is `True`. Stops with `stop`.
///
/// The server embeds the same set filled by its Cluster controller, which
/// also probes health; this follower only reads.
pub fn follow(
    fed: kube::Client,
    options: crate::FederationOptions,
    stop: tokio_util::sync::CancellationToken,
) -> Arc<Members> {
    let members = Members::new();
    tokio::spawn(follow_clusters(fed, options, members.clone(), stop));
    members
}

async fn follow_clusters(
    fed: kube::Client,
    options: crate::FederationOptions,
    members: Arc<Members>,
    stop: tokio_util::sync::CancellationToken,
) {
    use futures::StreamExt as _;
    use k8s_openapi::api::core::v1::Secret;
    use kube::ResourceExt as _;
    use kube::runtime::watcher::{self, Event};
    use kube::runtime::{WatchStreamExt as _, watcher as watch_fn};
    use ubernetes_api::Cluster;

    let api: kube::Api<Cluster> = kube::Api::all(fed.clone());
    let secrets: kube::Api<Secret> =
        kube::Api::namespaced(fed.clone(), crate::clusters::FEDERATION_NAMESPACE);
    let mut stream = watch_fn(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    // name → (uid, secret resourceVersion, server) of the client built.
    let mut built: BTreeMap<String, (String, String, Option<String>)> = BTreeMap::new();
    let mut listing: Option<Vec<String>> = None;
    loop {
        let event = tokio::select! {
            () = stop.cancelled() => break,
            e = stream.next() => e,
        };
        let cluster = match event {
            None => break,
            Some(Err(e)) => {
                tracing::debug!(error = %e, "watch of Clusters");
                continue;
            }
            Some(Ok(Event::Init)) => {
                listing = Some(Vec::new());
                continue;
            }
            Some(Ok(Event::InitDone)) => {
                if let Some(seen) = listing.take() {
                    for m in members.snapshot() {
                        if !seen.contains(&m.name) {
                            members.remove(&m.name);
                            built.remove(&m.name);
                        }
                    }
                }
                continue;
            }
            Some(Ok(Event::Delete(c))) => {
                members.remove(&c.name_any());
                built.remove(&c.name_any());
                continue;
            }
            Some(Ok(Event::Apply(c) | Event::InitApply(c))) => c,
        };
        let name = cluster.name_any();
        if let Some(seen) = listing.as_mut() {
            seen.push(name.clone());
        }
        let ready = cluster.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == crate::clusters::CONDITION_READY && c.status == "True")
        });
        let Some(secret_name) = cluster.spec.secret_ref.as_ref().map(|r| r.name.clone()) else {
            members.remove(&name);
            continue;
        };
        let Ok(Some(secret)) = secrets.get_opt(&secret_name).await else {
            members.remove(&name);
            continue;
        };
        let server = crate::clusters::pick_server(&cluster.spec);
        let uid = cluster.uid().unwrap_or_default();
        let key = (
            uid.clone(),
            secret.resource_version().unwrap_or_default(),
            server.clone(),
        );
        let current = members.get(&name);
        let (client, proxy_client, url) = match (&current, built.get(&name) == Some(&key)) {
            (Some(m), true) => (m.client.clone(), m.proxy_client.clone(), m.server.clone()),
            _ => match crate::clusters::member_client(
                &secret,
                &secret_name,
                server.as_deref(),
                options.member_request_timeout,
            )
            .await
            {
                Ok(c) => (c.client, c.proxy_client, c.server),
                Err(e) => {
                    tracing::warn!(cluster = %name, error = %e, "cannot reach the member");
                    members.remove(&name);
                    continue;
                }
            },
        };
        let labels = cluster.labels().clone();
        let unchanged = current.as_ref().is_some_and(|m| {
            m.uid == uid && m.ready == ready && m.labels == labels && m.server == url
        }) && built.get(&name) == Some(&key);
        if unchanged {
            continue;
        }
        built.insert(name.clone(), key);
        members.upsert(Member {
            generation: current.map_or(0, |m| m.generation) + 1,
            name,
            uid,
            client,
            proxy_client,
            server: url,
            labels,
            ready,
        });
    }
}
