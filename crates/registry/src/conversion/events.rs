//! Core `v1` Event (the stored form) ⇄ `events.k8s.io/v1` Event, as kube's
//! `pkg/apis/events/v1/conversion.go`: `involvedObject` ⇄ `regarding`,
//! `message` ⇄ `note`, `source` ⇄ `deprecatedSource`, `firstTimestamp`,
//! `lastTimestamp` and `count` ⇄ their `deprecated…` fields, and
//! `reportingComponent` ⇄ `reportingController` (the internal type's
//! `ReportingController`, which core v1 spells `reportingComponent`). The
//! rest (`metadata`, `reason`, `type`, `action`, `eventTime`, `series`,
//! `related`, `reportingInstance`) has the same name in both.

use serde_json::{Map, Value};

use super::Converter;
use super::json::{carry, into_map};

/// (core v1 name, events.k8s.io/v1 name) of the renamed fields.
const RENAMED: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
];

/// Fields both versions share.
const SAME: &[&str] = &[
    "metadata",
    "reason",
    "type",
    "action",
    "eventTime",
    "series",
    "related",
    "reportingInstance",
];

/// `events.k8s.io/v1` served from core `v1` storage.
pub struct EventsV1;

fn convert(mut src: Map<String, Value>, api_version: &str, to_events: bool) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::String(api_version.into()));
    out.insert("kind".into(), Value::String("Event".into()));
    for f in SAME {
        carry(&mut src, f, &mut out, f);
    }
    for (core, events) in RENAMED {
        let (from, to) = if to_events {
            (core, events)
        } else {
            (events, core)
        };
        carry(&mut src, from, &mut out, to);
    }
    // Go's omitempty on the strings both sides declare optional (an empty
    // `reportingComponent` of a core event is not an events.k8s.io field).
    out.retain(|_, v| !matches!(v, Value::String(s) if s.is_empty()) && !v.is_null());
    Value::Object(out)
}

impl Converter for EventsV1 {
    fn to_served(&self, stored: Value) -> Result<Value, String> {
        Ok(convert(into_map(stored), "events.k8s.io/v1", true))
    }

    fn to_stored(&self, served: Value) -> Result<Value, String> {
        Ok(convert(into_map(served), "v1", false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn core_event() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "e1", "namespace": "ns", "uid": "u1"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "ns"},
            "reason": "Started", "message": "started container", "type": "Normal",
            "source": {"component": "kubelet", "host": "n1"},
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:01:00Z",
            "count": 3, "reportingComponent": "kubelet", "reportingInstance": "n1",
            "action": "Start", "eventTime": "2026-01-01T00:00:00.000000Z",
            "series": {"count": 2, "lastObservedTime": "2026-01-01T00:01:00.000000Z"},
            "related": {"kind": "Node", "name": "n1"}
        })
    }

    #[test]
    fn core_fields_map_to_events_k8s_io_names() {
        let ev = EventsV1.to_served(core_event()).unwrap_or_default();
        assert_eq!(ev["apiVersion"], "events.k8s.io/v1");
        assert_eq!(ev["regarding"]["name"], "p");
        assert_eq!(ev["note"], "started container");
        assert_eq!(ev["deprecatedSource"]["component"], "kubelet");
        assert_eq!(ev["deprecatedFirstTimestamp"], "2026-01-01T00:00:00Z");
        assert_eq!(ev["deprecatedLastTimestamp"], "2026-01-01T00:01:00Z");
        assert_eq!(ev["deprecatedCount"], 3);
        assert_eq!(ev["reportingController"], "kubelet");
        assert_eq!(ev["reportingInstance"], "n1");
        assert_eq!(ev["series"]["count"], 2);
        assert_eq!(ev["related"]["kind"], "Node");
        for gone in [
            "involvedObject",
            "message",
            "source",
            "count",
            "reportingComponent",
        ] {
            assert!(ev.get(gone).is_none(), "{gone} left in {ev}");
        }
    }

    #[test]
    fn round_trip_is_lossless() {
        let back = EventsV1
            .to_stored(EventsV1.to_served(core_event()).unwrap_or_default())
            .unwrap_or_default();
        assert_eq!(back, core_event());
    }

    #[test]
    fn empty_reporting_component_is_omitted() {
        let mut e = core_event();
        e["reportingComponent"] = json!("");
        let ev = EventsV1.to_served(e).unwrap_or_default();
        assert!(ev.get("reportingController").is_none());
    }
}
