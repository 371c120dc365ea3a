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
