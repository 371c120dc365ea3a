//! The members' Events on the federated objects (SPEC §3.13, last bullet):
//! an Event in a member about the federation's copy of an object, or
//! about a child kube made of that copy, is mirrored into the federation
//! as a core v1 Event about the **federated** object, so `kubectl
//! describe` on the federation shows it beside the federation's own
//! Events, naming the cluster.
//!
//! - **What is watched**: one watch of core v1 Events per member (all
//!   namespaces; events.k8s.io Events are the same objects). Nothing is
//!   cached per member Event: each is matched as it arrives.
//! - **What is mirrored**: an Event whose `involvedObject` is a copy (found
//!   in the kind's federated informer by namespace/name, its uid the
//!   copy's when the Event names one; the federated object is the copy's
//!   `origin-uid`), or a child of a copy: a Pod, ReplicaSet or Job whose
//!   controller (ownerReferences) is a copy, or whose controller's
//!   controller is (two levels: a Deployment copy's ReplicaSets and their
//!   Pods, a CronJob copy's Jobs and their Pods; a StatefulSet's,
//!   DaemonSet's or Job's Pods). A child is looked at only when its name
//!   starts with `<copy name>-` of a copy in its namespace (as kube names
//!   children), then confirmed with at most two metadata GETs in the member,
//!   whose answer is remembered (a bounded map).
//! - **Never mirrored**: the federation's own Events and mirrors
//!   ([`mirror::is_federations_own`]), so nothing loops; Events older than
//!   the TTL. Mirrors never propagate (Events are each cluster's own,
//!   [`crate::policy`]).
//! - **Deduplicated**: one mirror per (cluster, member Event uid), named
//!   [`mirror::mirror_name`] and server-side applied, so a count or
//!   `lastTimestamp` change of the member's Event updates it, and a restart
//!   or another leader writes the same object.
//! - **Rate-limited**: a token bucket per (cluster, federated object),
//!   client-go's spam filter defaults ([`limiter`]); a write over the limit
//!   waits (latest state only) until a token comes.
//! - **Expiring**: a mirror is deleted once its `lastTimestamp` is older
//!   than `--member-event-ttl` (default 1 h, kube-apiserver's
//!   `--event-ttl`), by a sweep of the mirrors (label
//!   [`mirror::MIRROR_LABEL`]). Mirrors are Events of the federation's
//!   store, so its `--event-ttl` also deletes each one TTL after its last
//!   write (`ubernetes_registry::event_ttl`); this sweep is kept because it
//!   counts from the *member's* `lastTimestamp` (a stale member Event
//!   mirrored late goes at once, not a TTL later), honours
//!   `--member-event-ttl` when it is set apart, and forgets the limiter's
//!   and the pending writes' state of expired mirrors.
//!
//! It writes, so it runs on the leader ([`crate::run_with`]).

pub mod limiter;
pub mod mirror;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Event, ObjectReference};
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::discovery::ApiResource;
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, Event as WatchEvent};
use parking_lot::Mutex;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::Context;
use crate::informer::{FederatedInformer, ObjectKey};
use crate::member_object::ORIGIN_UID_ANNOTATION;
use crate::members::Member;
use mirror::{FedRef, Target};

/// The kinds whose objects kube makes of a workload and names after it,
/// looked at as children of a copy: (group, kind, version, plural).
const CHILD_KINDS: [(&str, &str, &str, &str); 3] = [
    ("", "Pod", "v1", "pods"),
    ("apps", "ReplicaSet", "v1", "replicasets"),
    ("batch", "Job", "v1", "jobs"),
];

/// The kinds whose copies have children in [`CHILD_KINDS`].
const PARENT_KINDS: [(&str, &str); 6] = [
    ("apps", "Deployment"),
    ("apps", "ReplicaSet"),
    ("apps", "StatefulSet"),
    ("apps", "DaemonSet"),
    ("batch", "Job"),
    ("batch", "CronJob"),
];

/// How many controller levels above a child are looked at.
const MAX_DEPTH: usize = 2;
/// How many child → copy answers are remembered (cleared when full).
const MAX_OWNERS: usize = 4096;
/// How many writes may wait for a token (the newest dropped past it).
const MAX_PENDING: usize = 10_000;
/// How often waiting writes are retried.
const FLUSH_EVERY: Duration = Duration::from_secs(5);
/// How long a member's watch waits for the copy caches before matching.
const SYNC_WAIT: Duration = Duration::from_secs(30);

type BucketKey = (String, String);

/// A write that waits for a token (or for a retry after a failure).
struct Pending {
    namespace: String,
    value: Value,
    stamp: Stamp,
    bucket: BucketKey,
}

/// What was last written of a mirror: its count and last sighting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    count: i32,
    last: Timestamp,
}

/// A child's controller chain, as last resolved: the federated object it
/// belongs to, if any.
type OwnerKey = (String, String, String, String, String);

#[derive(Default)]
struct State {
    written: HashMap<String, Stamp>,
    pending: HashMap<String, Pending>,
    owners: HashMap<OwnerKey, Option<FedRef>>,
}

/// The mirror of one leader term.
struct Mirror {
    ctx: Arc<Context>,
    ttl: Duration,
    state: Mutex<State>,
    limiter: Mutex<limiter::Limiter<BucketKey>>,
}

/// Mirror the members' Events about copies until `stop` (a no-op when
/// `--mirror-member-events=false`).
pub async fn run(ctx: Arc<Context>, stop: CancellationToken) -> anyhow::Result<()> {
    if !ctx.options.mirror_member_events {
        return Ok(());
    }
    let this = Arc::new(Mirror {
        ttl: ctx.options.member_event_ttl,
        ctx,
        state: Mutex::new(State::default()),
        limiter: Mutex::new(limiter::Limiter::new(limiter::BURST, limiter::REFILL_EVERY)),
    });
    let ticker = tokio::spawn(this.clone().tick(stop.clone()));
    let mut watches: BTreeMap<String, (Arc<Member>, CancellationToken)> = BTreeMap::new();
    let mut changes = this.ctx.members.subscribe();
    loop {
        let members = this.ctx.members.snapshot();
        watches.retain(|name, (_, token)| {
            let keep = members.iter().any(|m| &m.name == name);
            if !keep {
                token.cancel();
            }
            keep
        });
        for m in members {
            let restart = match watches.get(&m.name) {
                None => true,
                Some((old, _)) => {
                    old.uid != m.uid || old.server != m.server || (!old.ready && m.ready)
                }
            };
            if restart {
                let token = stop.child_token();
                if let Some((_, old)) = watches.insert(m.name.clone(), (m.clone(), token.clone())) {
                    old.cancel();
                }
                tokio::spawn(this.clone().watch_member(m, token));
            } else if let Some(entry) = watches.get_mut(&m.name) {
                entry.0 = m;
            }
        }
        tokio::select! {
            () = stop.cancelled() => break,
            r = changes.changed() => if r.is_err() { stop.cancelled().await; break },
        }
    }
    for (_, (_, token)) in watches {
        token.cancel();
    }
    ticker.await?;
    Ok(())
}

impl Mirror {
    /// The federated informers of copies of `group`/`kind` (one, or none
    /// when the kind is not federated).
    fn informer_of(&self, group: &str, kind: &str) -> Option<Arc<FederatedInformer>> {
        self.ctx
            .informers
            .copy_informers()
            .into_iter()
            .find(|i| i.kind().resource.group == group && i.kind().resource.kind == kind)
    }

    /// Wait (bounded) until every copy cache of `cluster` holds a full
    /// list, so the first list of Events finds the copies.
    async fn wait_for_copies(&self, cluster: &str, stop: &CancellationToken) {
        let deadline = tokio::time::Instant::now() + SYNC_WAIT;
        loop {
            let informers = self.ctx.informers.copy_informers();
            let synced = !informers.is_empty()
                && informers
                    .iter()
                    .all(|i| i.is_synced(cluster).unwrap_or(false));
            if synced || tokio::time::Instant::now() >= deadline {
                return;
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(Duration::from_millis(200)) => {}
            }
        }
    }

    async fn watch_member(self: Arc<Self>, member: Arc<Member>, stop: CancellationToken) {
        self.wait_for_copies(&member.name, &stop).await;
        let api: Api<Event> = Api::all(member.client.clone());
        let mut stream = watcher::watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        tracing::debug!(cluster = %member.name, "watching the member's Events");
        loop {
            let next = tokio::select! {
                () = stop.cancelled() => break,
                e = stream.next() => e,
            };
            match next {
                None => break,
                Some(Ok(WatchEvent::Apply(ev) | WatchEvent::InitApply(ev))) => {
                    self.observe(&member, &ev).await;
                }
                Some(Ok(_)) => {}
                Some(Err(err)) => {
                    tracing::debug!(cluster = %member.name, error = %err, "member Event watch failed; retrying");
                }
            }
        }
    }

    /// Mirror `ev` of `member` if it is about a copy or a copy's child.
    async fn observe(&self, member: &Member, ev: &Event) {
        if mirror::is_federations_own(ev) {
            return;
        }
        let Some(last) = mirror::last_seen(ev) else {
            return;
        };
        if mirror::expired(last, self.ttl, Timestamp::now()) {
            return;
        }
        let Some(target) = self.resolve(member, &ev.involved_object).await else {
            return;
        };
        let value = mirror::mirror(&member.name, ev, &target);
        let Some(name) = value["metadata"]["name"].as_str().map(str::to_string) else {
            return;
        };
        let pending = Pending {
            namespace: mirror::mirror_namespace(&target.fed).to_string(),
            stamp: Stamp {
                count: mirror::count(ev),
                last,
            },
            bucket: (member.name.clone(), target.fed.uid.clone()),
            value,
        };
        if self.state.lock().written.get(&name) == Some(&pending.stamp) {
            return;
        }
        if !self
            .limiter
            .lock()
            .try_take(&pending.bucket, Instant::now())
        {
            tracing::debug!(cluster = %member.name, %name, "member Event rate-limited; written when a token comes");
            self.wait(name, pending);
            return;
        }
        self.write(name, pending).await;
    }

    fn wait(&self, name: String, pending: Pending) {
        let mut state = self.state.lock();
        if state.pending.len() < MAX_PENDING || state.pending.contains_key(&name) {
            state.pending.insert(name, pending);
        }
    }

    async fn write(&self, name: String, p: Pending) {
        let api: Api<Event> = Api::namespaced(self.ctx.fed.clone(), &p.namespace);
        let params = PatchParams::apply(mirror::FIELD_MANAGER).force();
        match api.patch(&name, &params, &Patch::Apply(&p.value)).await {
            Ok(_) => {
                let mut state = self.state.lock();
                state.written.insert(name.clone(), p.stamp);
                // A newer state may be waiting already; an older one not.
                if state.pending.get(&name).is_some_and(|w| w.stamp == p.stamp) {
                    state.pending.remove(&name);
                }
            }
            Err(err) => {
                tracing::debug!(%name, error = %err, "cannot mirror a member Event; retrying");
                self.wait(name, p);
            }
        }
    }

    /// The federated object (and child) `obj`, an Event's subject in
    /// `member`, belongs to.
    async fn resolve(&self, member: &Member, obj: &ObjectReference) -> Option<Target> {
        let kind = obj.kind.as_deref().filter(|k| !k.is_empty())?;
        let name = obj.name.as_deref().filter(|n| !n.is_empty())?;
        let group = mirror::group_of(obj.api_version.as_deref().unwrap_or_default());
        let namespace = obj.namespace.as_deref().filter(|n| !n.is_empty());
        if let Some(fed) = self.copy_of(
            &member.name,
            group,
            kind,
            namespace,
            name,
            obj.uid.as_deref(),
        ) {
            return Some(Target { fed, child: None });
        }
        let namespace = namespace?;
        child_kind(group, kind)?;
        if !self.may_be_child(&member.name, namespace, name) {
            return None;
        }
        let key: OwnerKey = (
            member.name.clone(),
            format!("{group}/{kind}"),
            namespace.to_string(),
            name.to_string(),
            obj.uid.clone().unwrap_or_default(),
        );
        let cached = self.state.lock().owners.get(&key).cloned();
        let fed = match cached {
            Some(fed) => fed,
            None => {
                let found = self
                    .owner_copy(member, group, kind, namespace, name, obj.uid.as_deref())
                    .await
                    .ok()?;
                let mut state = self.state.lock();
                if state.owners.len() >= MAX_OWNERS {
                    state.owners.clear();
                }
                state.owners.insert(key, found.clone());
                found
            }
        }?;
        Some(Target {
            fed,
            child: Some((kind.to_string(), name.to_string())),
        })
    }

    /// The federated object whose copy in `cluster` is `group/kind`
    /// `namespace/name` (of uid `uid` when given).
    fn copy_of(
        &self,
        cluster: &str,
        group: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
        uid: Option<&str>,
    ) -> Option<FedRef> {
        let informer = self.informer_of(group, kind)?;
        let copy = informer.get(cluster, &ObjectKey::new(namespace, name))?;
        if let (Some(want), Some(have)) =
            (uid.filter(|u| !u.is_empty()), copy.metadata.uid.as_deref())
            && want != have
        {
            return None;
        }
        let origin = copy.annotations().get(ORIGIN_UID_ANNOTATION)?.clone();
        Some(FedRef {
            api_version: informer.kind().resource.api_version.clone(),
            kind: kind.to_string(),
            name: name.to_string(),
            namespace: namespace.map(str::to_string),
            uid: origin,
        })
    }

    /// Whether `name` in `namespace` of `cluster` is named as a child of a
    /// copy there (`<copy>-…`), before any GET.
    fn may_be_child(&self, cluster: &str, namespace: &str, name: &str) -> bool {
        let parents: Vec<_> = PARENT_KINDS
            .iter()
            .filter_map(|(g, k)| self.informer_of(g, k))
            .collect();
        mirror::owner_name_candidates(name).any(|prefix| {
            let key = ObjectKey::new(Some(namespace), prefix);
            parents.iter().any(|i| i.get(cluster, &key).is_some())
        })
    }

    /// Follow the controller ownerReferences of a child in `member` up to
    /// [`MAX_DEPTH`] levels to a copy. `Err` when the member could not be
    /// asked (the answer is not remembered).
    async fn owner_copy(
        &self,
        member: &Member,
        group: &str,
        kind: &str,
        namespace: &str,
        name: &str,
        uid: Option<&str>,
    ) -> Result<Option<FedRef>, kube::Error> {
        let (mut group, mut kind, mut name) =
            (group.to_string(), kind.to_string(), name.to_string());
        let mut uid = uid.map(str::to_string);
        for _ in 0..MAX_DEPTH {
            let Some(ar) = child_kind(&group, &kind) else {
                return Ok(None);
            };
            let api: Api<DynamicObject> =
                Api::namespaced_with(member.client.clone(), namespace, &ar);
            let meta = match api.get_metadata_opt(&name).await? {
                Some(m) => m.metadata,
                None => return Ok(None),
            };
            if let (Some(want), Some(have)) = (
                uid.as_deref().filter(|u| !u.is_empty()),
                meta.uid.as_deref(),
            ) && want != have
            {
                return Ok(None);
            }
            let Some(owner) = meta
                .owner_references
                .unwrap_or_default()
                .into_iter()
                .find(|o| o.controller == Some(true))
            else {
                return Ok(None);
            };
            let owner_group = mirror::group_of(&owner.api_version).to_string();
            if let Some(fed) = self.copy_of(
                &member.name,
                &owner_group,
                &owner.kind,
                Some(namespace),
                &owner.name,
                Some(&owner.uid),
            ) {
                return Ok(Some(fed));
            }
            (group, kind, name, uid) = (owner_group, owner.kind, owner.name, Some(owner.uid));
        }
        Ok(None)
    }

    /// Retry waiting writes as tokens come, and delete expired mirrors.
    async fn tick(self: Arc<Self>, stop: CancellationToken) {
        let sweep_every = (self.ttl / 10).clamp(Duration::from_secs(1), Duration::from_secs(60));
        let mut last_sweep = Instant::now();
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(FLUSH_EVERY.min(sweep_every)) => {}
            }
            self.flush().await;
            if last_sweep.elapsed() >= sweep_every {
                last_sweep = Instant::now();
                self.sweep().await;
            }
        }
    }

    async fn flush(&self) {
        let now = Instant::now();
        let ready: Vec<(String, Pending)> = {
            let mut state = self.state.lock();
            let mut limiter = self.limiter.lock();
            let names: Vec<String> = state
                .pending
                .iter()
                .filter(|(_, p)| limiter.try_take(&p.bucket, now))
                .map(|(n, _)| n.clone())
                .collect();
            names
                .into_iter()
                .filter_map(|n| state.pending.remove(&n).map(|p| (n, p)))
                .collect()
        };
        for (name, p) in ready {
            self.write(name, p).await;
        }
    }

    /// Delete the mirrors last seen longer than the TTL ago; forget what
    /// was written of them.
    async fn sweep(&self) {
        let now = Timestamp::now();
        let ttl = self.ttl;
        {
            let mut state = self.state.lock();
            state
                .written
                .retain(|_, s| !mirror::expired(s.last, ttl, now));
            state
                .pending
                .retain(|_, p| !mirror::expired(p.stamp.last, ttl, now));
        }
        self.limiter.lock().prune(Instant::now());
        let api: Api<Event> = Api::all(self.ctx.fed.clone());
        let list = match api
            .list(&ListParams::default().labels(mirror::MIRROR_LABEL))
            .await
        {
            Ok(l) => l,
            Err(err) => {
                tracing::debug!(error = %err, "cannot list the mirrored member Events");
                return;
            }
        };
        for ev in list {
            if !mirror::last_seen(&ev).is_some_and(|t| mirror::expired(t, ttl, now)) {
                continue;
            }
            let (Some(ns), name) = (ev.namespace(), ev.name_any()) else {
                continue;
            };
            let api: Api<Event> = Api::namespaced(self.ctx.fed.clone(), &ns);
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => tracing::debug!(%ns, %name, "a mirrored member Event expired"),
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(err) => {
                    tracing::debug!(%ns, %name, error = %err, "cannot delete an expired mirror")
                }
            }
        }
    }
}

/// The API resource of a child kind, if `group`/`kind` is one.
fn child_kind(group: &str, kind: &str) -> Option<ApiResource> {
    CHILD_KINDS
        .iter()
        .find(|(g, k, _, _)| *g == group && *k == kind)
        .map(|(g, k, v, p)| ApiResource {
            group: g.to_string(),
            version: v.to_string(),
            api_version: if g.is_empty() {
                v.to_string()
            } else {
                format!("{g}/{v}")
            },
            kind: k.to_string(),
            plural: p.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_kinds_are_pods_replicasets_and_jobs() {
        let pod = child_kind("", "Pod").map(|a| (a.api_version, a.plural));
        assert_eq!(pod, Some(("v1".into(), "pods".into())));
        let rs = child_kind("apps", "ReplicaSet").map(|a| a.api_version);
        assert_eq!(rs.as_deref(), Some("apps/v1"));
        assert!(child_kind("batch", "Job").is_some());
        assert!(child_kind("apps", "Deployment").is_none());
        assert!(child_kind("", "ConfigMap").is_none());
    }
}
