//! What a mirrored Event is (pure, no I/O): a member's core v1 Event about
//! a copy (or a child of a copy) turned into a core v1 Event of the
//! federation about the **federated** object, so `kubectl describe` on the
//! federation (which selects Events by `involvedObject` name, namespace,
//! kind and uid) shows it, naming the cluster in its `From` column and in
//! its message (`cluster m1: …`, `cluster m1: ReplicaSet web-5d0c: …` for
//! a child). kubectl's describe prints `source.component` alone in From
//! (`source.host` only in `get events -o wide`), so the component is
//! `<cluster>/<member component>`; `source.host` and `reportingInstance`
//! are the cluster, `reportingComponent` the member's component.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Event;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::events::COMPONENT;

/// Label (value `"true"`) on every mirrored Event in the federation: what
/// the expiry sweep lists, and what is never mirrored again.
pub const MIRROR_LABEL: &str = "federation.kubernetes.io/member-event";
/// Annotation on a mirrored Event: the cluster it came from (the same key
/// the `federation@all` view annotates member items with).
pub const CLUSTER_ANNOTATION: &str = "federation.kubernetes.io/cluster";
/// Annotation on a mirrored Event: the member Event's `namespace/name`.
pub const SOURCE_ANNOTATION: &str = "federation.kubernetes.io/member-event-name";
/// The field manager of the mirror's server-side applies.
pub const FIELD_MANAGER: &str = "ubernetes-member-events";

/// The longest name part kept from the federated object (a mirrored
/// Event's name is `<that>.<16 hex digits>`, within 253 characters).
const MAX_NAME_PREFIX: usize = 200;

/// The federated object a member Event is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FedRef {
    /// Its apiVersion in the federation.
    pub api_version: String,
    /// Its kind.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its namespace (none: cluster-scoped).
    pub namespace: Option<String>,
    /// Its uid in the federation (the copy's `origin-uid`).
    pub uid: String,
}

/// What a member Event is about, as the federation sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The federated object.
    pub fed: FedRef,
    /// The copy's child the Event is about (kind, name), if not the copy.
    pub child: Option<(String, String)>,
}

/// Whether `ev` is one the federation wrote itself (reported by the
/// federation's component, or a mirrored Event): never mirrored, so
/// nothing loops.
pub fn is_federations_own(ev: &Event) -> bool {
    let source = ev.source.as_ref().and_then(|s| s.component.as_deref());
    source == Some(COMPONENT)
        || ev.reporting_component.as_deref() == Some(COMPONENT)
        || ev
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key(MIRROR_LABEL))
}

/// When `ev` was last seen: its series' last observation, else
/// `lastTimestamp`, `eventTime`, `firstTimestamp`, its creation.
pub fn last_seen(ev: &Event) -> Option<Timestamp> {
    ev.series
        .as_ref()
        .and_then(|s| s.last_observed_time.as_ref().map(|t| t.0))
        .or_else(|| ev.last_timestamp.as_ref().map(|t| t.0))
        .or_else(|| ev.event_time.as_ref().map(|t| t.0))
        .or_else(|| ev.first_timestamp.as_ref().map(|t| t.0))
        .or_else(|| ev.metadata.creation_timestamp.as_ref().map(|t| t.0))
}

/// When `ev` was first seen: `firstTimestamp`, else `eventTime`, else its
/// last sighting.
pub fn first_seen(ev: &Event) -> Option<Timestamp> {
    ev.first_timestamp
        .as_ref()
        .map(|t| t.0)
        .or_else(|| ev.event_time.as_ref().map(|t| t.0))
        .or_else(|| last_seen(ev))
}

/// How many times `ev` happened: the larger of `count` and the series'
/// count, at least 1 (an events.k8s.io Event read as core v1 carries its
/// series).
pub fn count(ev: &Event) -> i32 {
    let series = ev.series.as_ref().and_then(|s| s.count).unwrap_or(0);
    ev.count.unwrap_or(0).max(series).max(1)
}

/// Whether an Event last seen at `last` has outlived `ttl` at `now`.
pub fn expired(last: Timestamp, ttl: std::time::Duration, now: Timestamp) -> bool {
    let age = now.duration_since(last);
    age.is_positive() && age.unsigned_abs() > ttl
}

/// The group of an `apiVersion` (`apps/v1` → `apps`, `v1` → ``).
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// The names `name` may be a generated child of: every prefix that ends
/// before a `-` (`web-5d0c-x7k2p` → `web`, `web-5d0c`). Kube names a
/// Deployment's ReplicaSets `<deployment>-<hash>` and generates Pods, Jobs
/// of a CronJob and StatefulSet Pods as `<owner>-<suffix>`.
pub fn owner_name_candidates(name: &str) -> impl Iterator<Item = &str> {
    name.match_indices('-')
        .map(move |(i, _)| &name[..i])
        .filter(|p| !p.is_empty())
}

/// The deterministic name of the mirror of member Event `source` (its uid,
/// else `namespace/name`) from `cluster` about `fed`: the same on every
/// replica, after a restart and across a leader change, so a second
/// mirror is an update of the first.
pub fn mirror_name(fed: &FedRef, cluster: &str, source: &str) -> String {
    let mut h = Sha256::new();
    h.update(cluster.as_bytes());
    h.update([0]);
    h.update(source.as_bytes());
    let digest = h.finalize();
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let mut prefix = fed.name.as_str();
    if prefix.len() > MAX_NAME_PREFIX {
        let mut end = MAX_NAME_PREFIX;
        while !prefix.is_char_boundary(end) {
            end -= 1;
        }
        prefix = prefix[..end].trim_end_matches(['.', '-']);
    }
    format!("{prefix}.{hex}")
}

/// What identifies member Event `ev` for [`mirror_name`]: its uid, else
/// `namespace/name`.
pub fn source_key(ev: &Event) -> String {
    ev.metadata.uid.clone().unwrap_or_else(|| {
        format!(
            "{}/{}",
            ev.metadata.namespace.as_deref().unwrap_or_default(),
            ev.metadata.name.as_deref().unwrap_or_default()
        )
    })
}

/// The namespace of the mirror: the federated object's, `default` for a
/// cluster-scoped one (as kube's recorders and [`crate::events`] do).
pub fn mirror_namespace(fed: &FedRef) -> &str {
    fed.namespace.as_deref().unwrap_or("default")
}

fn rfc3339(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The mirror of member Event `ev` from `cluster` about `target`, as the
/// object to server-side apply (name from [`mirror_name`]).
pub fn mirror(cluster: &str, ev: &Event, target: &Target) -> Value {
    let fed = &target.fed;
    let component = ev
        .source
        .as_ref()
        .and_then(|s| s.component.clone())
        .filter(|c| !c.is_empty())
        .or_else(|| ev.reporting_component.clone().filter(|c| !c.is_empty()))
        .unwrap_or_else(|| "unknown".to_string());
    let text = ev.message.as_deref().unwrap_or_default();
    let message = match &target.child {
        Some((kind, name)) => format!("cluster {cluster}: {kind} {name}: {text}"),
        None => format!("cluster {cluster}: {text}"),
    };
    let mut involved = Map::new();
    involved.insert("apiVersion".into(), json!(fed.api_version));
    involved.insert("kind".into(), json!(fed.kind));
    involved.insert("name".into(), json!(fed.name));
    if let Some(ns) = &fed.namespace {
        involved.insert("namespace".into(), json!(ns));
    }
    involved.insert("uid".into(), json!(fed.uid));
    if target.child.is_none()
        && let Some(path) = ev.involved_object.field_path.as_deref()
    {
        involved.insert("fieldPath".into(), json!(path));
    }
    let last = last_seen(ev).unwrap_or_else(Timestamp::now);
    let first = first_seen(ev).unwrap_or(last);
    let source = format!(
        "{}/{}",
        ev.metadata.namespace.as_deref().unwrap_or_default(),
        ev.metadata.name.as_deref().unwrap_or_default()
    );
    let mut out = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": mirror_name(fed, cluster, &source_key(ev)),
            "namespace": mirror_namespace(fed),
            "labels": {MIRROR_LABEL: "true"},
            "annotations": {CLUSTER_ANNOTATION: cluster, SOURCE_ANNOTATION: source},
        },
        "involvedObject": involved,
        "reason": ev.reason.as_deref().unwrap_or_default(),
        "message": message,
        "type": ev.type_.as_deref().unwrap_or("Normal"),
        "source": {"component": format!("{cluster}/{component}"), "host": cluster},
        "reportingComponent": component,
        "reportingInstance": cluster,
        "firstTimestamp": rfc3339(first),
        "lastTimestamp": rfc3339(last),
        "count": count(ev),
    });
    if let (Some(action), Some(m)) = (
        ev.action.as_deref().filter(|a| !a.is_empty()),
        out.as_object_mut(),
    ) {
        m.insert("action".into(), json!(action));
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    fn member_event(uid: &str, count: i32, last: &str) -> Event {
        serde_json::from_value(json!({
            "metadata": {"name": "web.17f", "namespace": "app", "uid": uid},
            "involvedObject": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                "namespace": "app", "uid": "member-uid"},
            "reason": "ScalingReplicaSet", "message": "Scaled up replica set web-5d0c to 3",
            "type": "Normal", "source": {"component": "deployment-controller"},
            "firstTimestamp": "2026-01-01T10:00:00Z", "lastTimestamp": last, "count": count,
        }))
        .unwrap()
    }

    fn target(child: Option<(&str, &str)>) -> Target {
        Target {
            fed: FedRef {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                name: "web".into(),
                namespace: Some("app".into()),
                uid: "fed-uid".into(),
            },
            child: child.map(|(k, n)| (k.into(), n.into())),
        }
    }

    #[test]
    fn the_mirror_is_about_the_federated_object_and_names_the_cluster() {
        let ev = member_event("e1", 3, "2026-01-01T10:05:00Z");
        let m = mirror("m1", &ev, &target(None));
        assert_eq!(m["metadata"]["namespace"], "app");
        assert!(m["metadata"]["name"].as_str().unwrap().starts_with("web."));
        assert_eq!(m["metadata"]["labels"][MIRROR_LABEL], "true");
        assert_eq!(m["metadata"]["annotations"][CLUSTER_ANNOTATION], "m1");
        assert_eq!(
            m["metadata"]["annotations"][SOURCE_ANNOTATION],
            "app/web.17f"
        );
        assert_eq!(
            m["involvedObject"],
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                   "namespace": "app", "uid": "fed-uid"})
        );
        assert_eq!(
            m["message"],
            "cluster m1: Scaled up replica set web-5d0c to 3"
        );
        assert_eq!(
            m["source"],
            json!({"component": "m1/deployment-controller", "host": "m1"})
        );
        assert_eq!(m["reportingInstance"], "m1");
        assert_eq!(m["reportingComponent"], "deployment-controller");
        assert_eq!(m["reason"], "ScalingReplicaSet");
        assert_eq!(m["count"], 3);
        assert_eq!(m["firstTimestamp"], "2026-01-01T10:00:00Z");
        assert_eq!(m["lastTimestamp"], "2026-01-01T10:05:00Z");
        // A valid core v1 Event.
        let typed: Event = serde_json::from_value(m.clone()).unwrap();
        assert_eq!(typed.involved_object.uid.as_deref(), Some("fed-uid"));

        let child = mirror("m1", &ev, &target(Some(("ReplicaSet", "web-5d0c"))));
        assert_eq!(
            child["message"],
            "cluster m1: ReplicaSet web-5d0c: Scaled up replica set web-5d0c to 3"
        );
    }

    #[test]
    fn one_name_per_cluster_and_member_event_whatever_its_count() {
        let t = target(None);
        let a = mirror("m1", &member_event("e1", 1, "2026-01-01T10:00:00Z"), &t);
        let b = mirror("m1", &member_event("e1", 7, "2026-01-01T11:00:00Z"), &t);
        assert_eq!(a["metadata"]["name"], b["metadata"]["name"]);
        assert_eq!(b["count"], 7);
        let other_event = mirror("m1", &member_event("e2", 1, "2026-01-01T10:00:00Z"), &t);
        let other_cluster = mirror("m2", &member_event("e1", 1, "2026-01-01T10:00:00Z"), &t);
        assert_ne!(a["metadata"]["name"], other_event["metadata"]["name"]);
        assert_ne!(a["metadata"]["name"], other_cluster["metadata"]["name"]);
        let long = FedRef {
            name: "x".repeat(253),
            ..t.fed.clone()
        };
        assert!(mirror_name(&long, "m1", "e1").len() <= 253);
    }

    #[test]
    fn the_federations_own_events_and_mirrors_are_never_mirrored() {
        let ev = member_event("e1", 1, "2026-01-01T10:00:00Z");
        assert!(!is_federations_own(&ev));
        let mut own = ev.clone();
        own.source = Some(k8s_openapi::api::core::v1::EventSource {
            component: Some(COMPONENT.into()),
            host: None,
        });
        assert!(is_federations_own(&own));
        let mirrored: Event = serde_json::from_value(mirror("m1", &ev, &target(None))).unwrap();
        assert!(is_federations_own(&mirrored));
    }

    #[test]
    fn a_mirror_is_never_propagated() {
        let m = mirror(
            "m1",
            &member_event("e1", 1, "2026-01-01T10:00:00Z"),
            &target(None),
        );
        for group in ["", "events.k8s.io"] {
            assert!(!crate::member_object::is_propagated(
                crate::policy::of(group, "Event"),
                &m
            ));
        }
    }

    #[test]
    fn series_counts_times_expiry_and_candidates() {
        let ev: Event = serde_json::from_value(json!({
            "metadata": {"name": "e", "namespace": "app"},
            "involvedObject": {"kind": "Pod", "name": "p"},
            "eventTime": "2026-01-01T10:00:00.000000Z",
            "series": {"count": 4, "lastObservedTime": "2026-01-01T10:09:00.000000Z"},
        }))
        .unwrap();
        assert_eq!(count(&ev), 4);
        let last = last_seen(&ev).unwrap();
        assert_eq!(rfc3339(last), "2026-01-01T10:09:00Z");
        assert_eq!(rfc3339(first_seen(&ev).unwrap()), "2026-01-01T10:00:00Z");
        let hour = std::time::Duration::from_secs(3600);
        assert!(!expired(
            last,
            hour,
            "2026-01-01T11:08:00Z".parse().unwrap()
        ));
        assert!(expired(last, hour, "2026-01-01T11:10:00Z".parse().unwrap()));
        assert!(!expired(
            last,
            hour,
            "2026-01-01T09:00:00Z".parse().unwrap()
        ));
        assert_eq!(group_of("apps/v1"), "apps");
        assert_eq!(group_of("v1"), "");
        let c: Vec<_> = owner_name_candidates("web-5d0c-x7k2p").collect();
        assert_eq!(c, ["web", "web-5d0c"]);
        assert_eq!(owner_name_candidates("web").count(), 0);
    }
}
