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

async fn follow_clusters(
    fed: kube::Client,
    options: crate::FederationOptions,
    members: Arc<Members>,
    stop: tokio_util::sync::CancellationToken,
) {
    use crate::dns_records::reflect;
    use k8s_openapi::api::core::v1::Secret;
    use kube::runtime::reflector::ObjectRef;
    use ubernetes_api::Cluster;

    let changed = Arc::new(tokio::sync::Notify::new());
    let clusters = reflect(kube::Api::<Cluster>::all(fed.clone()), &changed, &stop);
    let secrets = reflect(
        kube::Api::<Secret>::namespaced(fed, crate::clusters::FEDERATION_NAMESPACE),
        &changed,
        &stop,
    );
    // Nothing is removed before both lists are known.
    tokio::select! {
        () = stop.cancelled() => return,
        _ = async { tokio::join!(clusters.wait_until_ready(), secrets.wait_until_ready()) } => {}
    }
    // name → what its member client was built from (or failed to be).
    let mut built: BTreeMap<String, BuiltFrom> = BTreeMap::new();
    let mut failed: BTreeMap<String, BuiltFrom> = BTreeMap::new();
    loop {
        let mut seen = std::collections::BTreeSet::new();
        for cluster in clusters.state() {
            let name = kube::ResourceExt::name_any(cluster.as_ref());
            seen.insert(name.clone());
            if cluster.spec.is_pull() {
                // Reached over its agent's tunnel (`crate::pull`), whichever
                // is open: no Secret, one client for the Cluster's life.
                let key: BuiltFrom = (
                    kube::ResourceExt::uid(cluster.as_ref()).unwrap_or_default(),
                    String::new(),
                    String::new(),
                    Some(crate::pull::server_of(&name)),
                );
                let ready = condition_ready(&cluster);
                let labels = kube::ResourceExt::labels(cluster.as_ref()).clone();
                let current = members
                    .get(&name)
                    .filter(|_| built.get(&name) == Some(&key));
                let client = match &current {
                    Some(m) if m.ready == ready && m.labels == labels => continue,
                    Some(m) => m.client.clone(),
                    None => crate::pull::tunnels().client(&name),
                };
                failed.remove(&name);
                built.insert(name.clone(), key.clone());
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
                continue;
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
                built.remove(&name);
                continue;
            };
            let server = crate::clusters::pick_server(&cluster.spec);
            let key: BuiltFrom = (
                kube::ResourceExt::uid(cluster.as_ref()).unwrap_or_default(),
                kube::ResourceExt::uid(secret.as_ref()).unwrap_or_default(),
                kube::ResourceExt::resource_version(secret.as_ref()).unwrap_or_default(),
                server.clone(),
            );
            if failed.get(&name) == Some(&key) {
                continue;
            }
            let ready = condition_ready(&cluster);
            let labels = kube::ResourceExt::labels(cluster.as_ref()).clone();
            let current = members
                .get(&name)
                .filter(|_| built.get(&name) == Some(&key));
            let (client, proxy_client, url) = match &current {
                Some(m) if m.ready == ready && m.labels == labels => continue,
                Some(m) => (m.client.clone(), m.proxy_client.clone(), m.server.clone()),
                None => match crate::clusters::member_client(
                    &secret,
                    &secret_name,
                    server.as_deref(),
                    options.member_request_timeout,
                )
                .await
                {
                    Ok(c) => (c.client, c.proxy_client, c.server),
                    Err(e) => {
                        // The leader's Cluster controller reports it.
                        tracing::debug!(cluster = %name, error = %e, "no member client");
                        members.remove(&name);
                        built.remove(&name);
                        failed.insert(name, key);
                        continue;
                    }
                },
            };
            failed.remove(&name);
            built.insert(name.clone(), key.clone());
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
        for m in members.snapshot() {
            if !seen.contains(&m.name) {
                members.remove(&m.name);
            }
        }
        built.retain(|n, _| seen.contains(n));
        failed.retain(|n, _| seen.contains(n));
        tokio::select! {
            () = stop.cancelled() => break,
            () = changed.notified() => {}
        }
    }
}
