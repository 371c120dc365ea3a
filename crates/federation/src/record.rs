//! The `federation.kubernetes.io/propagation` annotation (SPEC §3.4): per
//! member cluster, the propagation state of a federated object as kubectl
//! users see it (`state`, `observedGeneration`, `message`) and the record
//! of what was last applied there (`hash` of the member copy and the member
//! object's `resourceVersion` right after), kubefed's version cache kept on
//! the object itself so that a restart sends no writes for objects in sync.
//!
//! Reading tolerates anything (a missing, hand-edited or garbage annotation
//! is an empty record, an unreadable entry is skipped); writing is compact
//! JSON in a stable order (clusters sorted by name, fields in declaration
//! order), so rewriting an unchanged record is a no-op.
//!
//! Pure functions, no I/O.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The annotation holding the propagation record.
pub const PROPAGATION_ANNOTATION: &str = "federation.kubernetes.io/propagation";

/// Where propagation to one cluster stands.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SyncState {
    /// The member object carries what was last applied.
    InSync,
    /// Not applied yet (or being applied).
    #[default]
    Pending,
    /// The last attempt failed; `message` says why.
    Failed,
}

/// The record of one member cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterRecord {
    /// Where propagation stands (Default: Pending).
    #[serde(default)]
    pub state: SyncState,
    /// The federated object's `metadata.generation` this state is about.
    #[serde(default)]
    pub observed_generation: i64,
    /// Why it failed or is pending (empty when in sync).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// content_hash of the member copy last applied successfully.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// the member object's resourceVersion right after that apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

/// Cluster name → record.
pub type PropagationRecord = BTreeMap<String, ClusterRecord>;

/// The record in `obj`'s annotation; missing or garbage → empty, and an
/// entry that does not read as a record is left out.
pub fn read_record(obj: &Value) -> PropagationRecord {
    let Some(text) = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(PROPAGATION_ANNOTATION))
        .and_then(Value::as_str)
    else {
        return PropagationRecord::new();
    };
    parse_record(text)
}

/// Parse the annotation's value with the same tolerance as [`read_record`].
pub fn parse_record(text: &str) -> PropagationRecord {
    let Ok(Value::Object(entries)) = serde_json::from_str::<Value>(text) else {
        return PropagationRecord::new();
    };
    entries
        .into_iter()
        .filter_map(|(cluster, v)| {
            serde_json::from_value::<ClusterRecord>(v)
                .ok()
                .map(|r| (cluster, r))
        })
        .collect()
}

/// The annotation value: compact JSON, clusters sorted, fields in a fixed
/// order.
pub fn record_json(record: &PropagationRecord) -> String {
    // A map of strings to plain structs always serializes; keep the fallback
    // total anyway.
    serde_json::to_string(record).unwrap_or_else(|_| "{}".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with_annotation(v: &str) -> Value {
        json!({"metadata": {"name": "x", "annotations": {PROPAGATION_ANNOTATION: v}}})
    }

    fn sample() -> PropagationRecord {
        let mut r = PropagationRecord::new();
        r.insert(
            "west".into(),
            ClusterRecord {
                state: SyncState::Failed,
                observed_generation: 2,
                message: "forbidden: nope".into(),
                hash: None,
                resource_version: None,
            },
        );
        r.insert(
            "east".into(),
            ClusterRecord {
                state: SyncState::InSync,
                observed_generation: 3,
                message: String::new(),
                hash: Some("abc123".into()),
                resource_version: Some("42".into()),
            },
        );
        r
    }

    #[test]
    fn record_round_trips_through_the_annotation() {
        let r = sample();
        let text = record_json(&r);
        assert_eq!(read_record(&with_annotation(&text)), r);
    }

    #[test]
    fn record_json_is_compact_sorted_and_omits_empty_fields() {
        assert_eq!(
            record_json(&sample()),
            r#"{"east":{"state":"InSync","observedGeneration":3,"hash":"abc123","resourceVersion":"42"},"west":{"state":"Failed","observedGeneration":2,"message":"forbidden: nope"}}"#
        );
        assert_eq!(record_json(&PropagationRecord::new()), "{}");
    }

    #[test]
    fn default_state_is_pending() {
        assert_eq!(ClusterRecord::default().state, SyncState::Pending);
        let r = parse_record(r#"{"east": {}}"#);
        assert_eq!(r.get("east").map(|c| &c.state), Some(&SyncState::Pending));
        assert_eq!(r.get("east").map(|c| c.observed_generation), Some(0));
    }

    #[test]
    fn missing_annotation_is_an_empty_record() {
        assert!(read_record(&json!({"metadata": {"name": "x"}})).is_empty());
        assert!(read_record(&json!({})).is_empty());
        assert!(
            read_record(&json!({"metadata": {"annotations": {PROPAGATION_ANNOTATION: 5}}}))
                .is_empty()
        );
    }

    #[test]
    fn garbage_annotation_is_an_empty_record() {
        for text in ["", "{", "[]", "null", "\"InSync\"", "42"] {
            assert!(read_record(&with_annotation(text)).is_empty(), "{text:?}");
        }
    }

    #[test]
    fn unreadable_entries_are_skipped_and_the_rest_kept() {
        let r = parse_record(
            r#"{"east": {"state": "InSync", "observedGeneration": 1},
                "west": {"state": "Sleeping"},
                "north": 7,
                "south": {"state": "Pending", "observedGeneration": "x"}}"#,
        );
        assert_eq!(r.keys().collect::<Vec<_>>(), vec!["east"]);
    }

    #[test]
    fn unknown_fields_in_an_entry_are_ignored() {
        let r = parse_record(r#"{"east": {"state": "Failed", "extra": true, "message": "m"}}"#);
        assert_eq!(r.get("east").map(|c| c.message.as_str()), Some("m"));
        assert_eq!(r.get("east").map(|c| &c.state), Some(&SyncState::Failed));
    }
}
