//! Drift (SPEC §3.4): the fields of a member copy that the federation
//! manages and whose value in the member differs from the federation's.
//!
//! The federated object chooses what happens to drift with annotation
//! [`DRIFT_POLICY_ANNOTATION`] ([`DriftPolicy`]): `Repair` (the default)
//! re-applies the copy, `Report` leaves the member's values in place and
//! lists them in the object's PropagationRecord ([`DriftedField`]s), with
//! one `DriftDetected` Event per change of that list (see [`crate::sync`]).
//!
//! What counts as drift is what [`member_object::is_subset`] checks before
//! a copy is re-applied: every field of the copy the federation applies
//! (server-side apply, field manager `ubernetes`; of the metadata only name,
//! namespace, labels and annotations) compared with the member's copy.
//! Fields the federation does not send (status, defaults, fields of other
//! managers) are never drift. Lists are compared item by item when both
//! have the same length, else as a whole. Resource quantities under
//! `limits`, `requests`, `hard`… compare by value (a member writes
//! `500m` for `0.5`).
//!
//! Pure functions, no I/O.

use serde_json::Value;
use sha2::{Digest, Sha256};
use ubernetes_api::propagation::DriftedField;
use ubernetes_apimachinery::quantity;

use crate::member_object;

/// The annotation on a federated object choosing its [`DriftPolicy`].
pub const DRIFT_POLICY_ANNOTATION: &str = "federation.kubernetes.io/drift-policy";
/// The Event reason of a new or changed drift list (one per change).
pub const DRIFT_DETECTED: &str = "DriftDetected";
/// The Event reason of an annotation value that is not a policy.
pub const INVALID_DRIFT_POLICY: &str = "InvalidDriftPolicy";
/// At most this many drifted fields are listed per cluster.
pub const MAX_LISTED: usize = 20;
/// A value's JSON longer than this is shortened in the record.
const MAX_VALUE_LEN: usize = 64;

/// What the federation does with drift in a member copy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DriftPolicy {
    /// Re-apply the copy: the member's edits of our fields are reverted.
    #[default]
    Repair,
    /// Leave the member's values and list them in the record.
    Report,
}

impl DriftPolicy {
    /// The policy of the federated object `fed`: its annotation (`Repair`
    /// or `Report`, in any case), `Repair` without one; `Err` with the
    /// value when it names no policy.
    pub fn of(fed: &Value) -> Result<Self, String> {
        let Some(v) = fed
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(DRIFT_POLICY_ANNOTATION))
            .and_then(Value::as_str)
        else {
            return Ok(Self::Repair);
        };
        match v.trim() {
            s if s.eq_ignore_ascii_case("repair") => Ok(Self::Repair),
            s if s.eq_ignore_ascii_case("report") => Ok(Self::Report),
            _ => Err(v.to_string()),
        }
    }
}

/// One drifted field: where (a JSON pointer), the federation's value and
/// the member's (`None`: the member has no such field).
#[derive(Clone, Debug, PartialEq)]
pub struct Drift {
    /// RFC 6901 JSON pointer into the copy.
    pub path: String,
    /// What the federation applies there.
    pub ours: Value,
    /// What the member has there.
    pub theirs: Option<Value>,
}

impl Drift {
    /// The record's form (values as JSON, shortened when long).
    pub fn field(&self) -> DriftedField {
        DriftedField {
            path: self.path.clone(),
            ours: show(&self.ours),
            theirs: self.theirs.as_ref().map(show),
        }
    }
}

/// The drifted fields of `actual` (the member's copy) against `desired`
/// (the copy the federation applies), in the order of `desired`.
pub fn diff(desired: &Value, actual: &Value) -> Vec<Drift> {
    let mut out = Vec::new();
    let (Value::Object(d), Value::Object(a)) = (desired, actual) else {
        walk(Some(desired), Some(actual), String::new(), &mut out);
        return out;
    };
    for (k, dv) in d {
        let path = format!("/{}", escape(k));
        if k == "metadata" {
            let Some(dm) = dv.as_object() else { continue };
            let am = a.get("metadata");
            for f in ["name", "namespace", "labels", "annotations"] {
                walk(
                    dm.get(f),
                    am.and_then(|m| m.get(f)),
                    format!("{path}/{f}"),
                    &mut out,
                );
            }
        } else {
            walk(Some(dv), a.get(k), path, &mut out);
        }
    }
    out
}

fn walk(desired: Option<&Value>, actual: Option<&Value>, path: String, out: &mut Vec<Drift>) {
    let Some(d) = desired else { return };
    match (d, actual) {
        (_, None | Some(Value::Null)) => {
            if !member_object::is_empty_value(d) {
                out.push(Drift {
                    path,
                    ours: d.clone(),
                    theirs: actual.cloned(),
                });
            }
        }
        (Value::Object(dm), Some(Value::Object(am))) => {
            for (k, dv) in dm {
                walk(Some(dv), am.get(k), format!("{path}/{}", escape(k)), out);
            }
        }
        (Value::Array(da), Some(Value::Array(aa))) if da.len() == aa.len() => {
            for (i, (dv, av)) in da.iter().zip(aa).enumerate() {
                walk(Some(dv), Some(av), format!("{path}/{i}"), out);
            }
        }
        (d, Some(a)) => {
            if !member_object::is_subset(d, a) && !same_quantity(&path, d, a) {
                out.push(Drift {
                    path,
                    ours: d.clone(),
                    theirs: Some(a.clone()),
                });
            }
        }
    }
}

/// The record's list for `drift`: at most [`MAX_LISTED`] fields.
pub fn fields(drift: &[Drift]) -> Vec<DriftedField> {
    drift.iter().take(MAX_LISTED).map(Drift::field).collect()
}

/// The drifted fields whose federation value is the one recorded before
/// (`recorded`, the record's list): the federated object did not change
/// them, so with `Report` the member's values stay even when the copy is
/// applied again for another change.
pub fn unchanged_by_source<'a>(drift: &'a [Drift], recorded: &[DriftedField]) -> Vec<&'a Drift> {
    drift
        .iter()
        .filter(|d| {
            recorded
                .iter()
                .any(|r| r.path == d.path && r.ours == show(&d.ours))
        })
        .collect()
}

/// `copy` with the member's values of `kept` put back (a field the member
/// removed is removed), so that applying it leaves them as they are.
pub fn keep_theirs(copy: &mut Value, kept: &[&Drift]) {
    for d in kept {
        let Some((parent, last)) = d.path.rsplit_once('/') else {
            continue;
        };
        let last = unescape(last);
        let Some(p) = copy.pointer_mut(parent) else {
            continue;
        };
        match (p, &d.theirs) {
            (Value::Object(m), Some(v)) => {
                m.insert(last, v.clone());
            }
            (Value::Object(m), None) => {
                m.shift_remove(&last);
            }
            (Value::Array(a), Some(v)) => {
                if let Some(slot) = last.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                    *slot = v.clone();
                }
            }
            _ => {}
        }
    }
}

/// A one-line summary of a cluster's drift for the Event and the record's
/// message: `/data/color: ours "green", theirs "red"; …`.
pub fn summary(fields: &[DriftedField], total: usize) -> String {
    let mut parts: Vec<String> = fields
        .iter()
        .map(|f| {
            format!(
                "{}: ours {}, theirs {}",
                f.path,
                f.ours,
                f.theirs.as_deref().unwrap_or("<absent>")
            )
        })
        .collect();
    if total > fields.len() {
        parts.push(format!("and {} more", total - fields.len()));
    }
    parts.join("; ")
}

/// A value as compact JSON; longer than [`MAX_VALUE_LEN`]: a prefix, the
/// length and a hash (two different long values never show the same).
pub fn show(v: &Value) -> String {
    let text = v.to_string();
    if text.len() <= MAX_VALUE_LEN {
        return text;
    }
    let mut cut = MAX_VALUE_LEN - 16;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let hash: String = Sha256::digest(text.as_bytes())
        .iter()
        .take(4)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{}… ({} bytes, sha256 {hash})", &text[..cut], text.len())
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn unescape(seg: &str) -> String {
    seg.replace("~1", "/").replace("~0", "~")
}

/// Keys whose values are resource quantities (a container's `limits` and
/// `requests`, a ResourceQuota's `hard`, a LimitRange's bounds…).
const QUANTITY_MAPS: [&str; 9] = [
    "limits",
    "requests",
    "hard",
    "default",
    "defaultRequest",
    "max",
    "min",
    "maxLimitRequestRatio",
    "capacity",
];

/// Whether `d` and `a` at `path` are the same resource quantity written
/// two ways (`0.5` and `500m`, `1000m` and `1`).
fn same_quantity(path: &str, d: &Value, a: &Value) -> bool {
    let parent = path.rsplit('/').nth(1).unwrap_or_default();
    if !QUANTITY_MAPS.contains(&parent) {
        return false;
    }
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    match (
        text(d).as_deref().and_then(quantity::parse),
        text(a).as_deref().and_then(quantity::parse),
    ) {
        (Some(x), Some(y)) => (x - y).abs() <= f64::EPSILON * x.abs().max(y.abs()).max(1.0),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn copy(color: &str) -> Value {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cfg", "namespace": "app",
                "labels": {"federation.kubernetes.io/managed": "true", "app": "web"}},
            "data": {"color": color, "size": "L"}
        })
    }

    #[test]
    fn the_policy_is_read_from_the_annotation() {
        let with = |v: &str| json!({"metadata": {"annotations": {DRIFT_POLICY_ANNOTATION: v}}});
        assert_eq!(DriftPolicy::of(&json!({})), Ok(DriftPolicy::Repair));
        assert_eq!(DriftPolicy::of(&with("Report")), Ok(DriftPolicy::Report));
        assert_eq!(DriftPolicy::of(&with("report")), Ok(DriftPolicy::Report));
        assert_eq!(DriftPolicy::of(&with("Repair")), Ok(DriftPolicy::Repair));
        assert_eq!(DriftPolicy::of(&with("Ignore")), Err("Ignore".to_string()));
    }

    #[test]
    fn only_our_fields_that_differ_are_drift() {
        let mut actual = copy("red");
        // Member-owned: status, an extra label, server metadata.
        actual["metadata"]["labels"]["team"] = json!("ops");
        actual["metadata"]["resourceVersion"] = json!("7");
        actual["status"] = json!({"x": 1});
        let d = diff(&copy("green"), &actual);
        assert_eq!(
            d,
            vec![Drift {
                path: "/data/color".into(),
                ours: json!("green"),
                theirs: Some(json!("red")),
            }]
        );
        assert!(diff(&copy("green"), &copy("green")).is_empty());
    }

    #[test]
    fn a_removed_field_and_escaped_keys_are_reported() {
        let mut actual = copy("green");
        if let Some(m) = actual["data"].as_object_mut() {
            m.shift_remove("size");
        }
        actual["metadata"]["labels"]["app"] = json!("api");
        let mut desired = copy("green");
        desired["metadata"]["labels"]["example.com/tier"] = json!("db");
        let paths: Vec<String> = diff(&desired, &actual)
            .into_iter()
            .map(|d| d.path)
            .collect();
        assert_eq!(
            paths,
            [
                "/metadata/labels/app",
                "/metadata/labels/example.com~1tier",
                "/data/size"
            ]
        );
    }

    #[test]
    fn lists_compare_by_item_when_the_lengths_match() {
        let desired = json!({"spec": {"containers": [{"name": "a", "image": "nginx:1"}]}});
        let edited = json!({"spec": {"containers": [{"name": "a", "image": "nginx:2", "x": 1}]}});
        let d = diff(&desired, &edited);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].path, "/spec/containers/0/image");
        let longer =
            json!({"spec": {"containers": [{"name": "a", "image": "nginx:1"}, {"name": "b"}]}});
        assert_eq!(diff(&desired, &longer)[0].path, "/spec/containers");
    }

    #[test]
    fn quantities_compare_by_value_where_they_are_quantities() {
        let desired = json!({"spec": {"resources": {"limits": {"cpu": "0.5", "memory": "1Gi"}}},
            "data": {"n": "1000"}});
        let member = json!({"spec": {"resources": {"limits": {"cpu": "500m", "memory": "1024Mi"}}},
            "data": {"n": "1k"}});
        let paths: Vec<String> = diff(&desired, &member)
            .into_iter()
            .map(|d| d.path)
            .collect();
        assert_eq!(paths, ["/data/n"]);
    }

    #[test]
    fn empty_values_match_an_absent_field() {
        let desired = json!({"metadata": {"name": "a", "annotations": {}}, "spec": {"x": []}});
        let actual = json!({"metadata": {"name": "a"}, "spec": {}});
        assert!(diff(&desired, &actual).is_empty());
    }

    #[test]
    fn long_values_are_shortened_with_a_hash() {
        let a = show(&json!("a".repeat(500)));
        let b = show(&json!(format!("{}b", "a".repeat(499))));
        assert!(a.len() < 100, "{a}");
        assert!(a.contains("502 bytes"), "{a}");
        assert_ne!(a, b);
        assert_eq!(show(&json!("green")), "\"green\"");
    }

    #[test]
    fn member_values_the_source_did_not_change_are_kept() {
        let before = diff(&copy("green"), &copy("red"));
        let recorded = fields(&before);
        // The source changed another field: the member's color stays.
        let mut desired = copy("green");
        desired["data"]["size"] = json!("XL");
        let now = diff(&desired, &copy("red"));
        let kept = unchanged_by_source(&now, &recorded);
        assert_eq!(kept.len(), 1);
        keep_theirs(&mut desired, &kept);
        assert_eq!(desired["data"], json!({"color": "red", "size": "XL"}));
        // The source changed the drifted field itself: ours wins.
        let now = diff(&copy("blue"), &copy("red"));
        assert!(unchanged_by_source(&now, &recorded).is_empty());
        // A field the member removed stays removed.
        let gone = Drift {
            path: "/data/size".into(),
            ours: json!("L"),
            theirs: None,
        };
        let mut c = json!({"data": {"size": "L", "color": "red"}});
        keep_theirs(&mut c, &[&gone]);
        assert_eq!(c["data"], json!({"color": "red"}));
    }

    #[test]
    fn the_summary_names_each_field() {
        let d = diff(&copy("green"), &copy("red"));
        assert_eq!(
            summary(&fields(&d), d.len() + 2),
            "/data/color: ours \"green\", theirs \"red\"; and 2 more"
        );
    }
}
