//! Placement: which member clusters a federated object goes to, from the
//! Federation v1 annotation `federation.alpha.kubernetes.io/cluster-selector`
//! (SPEC §3.5).
//!
//! The annotation holds a JSON array of `{"key", "operator", "values"}`
//! requirements over the Cluster objects' labels, ANDed together, as
//! Federation v1's `clusterselector.SendToCluster` read it: the operator
//! spellings of its `ConvertOperator`, the checks of `labels.NewRequirement`
//! (key and values are label keys/values, value counts per operator,
//! integers for `Gt`/`Lt`) and the matching of `Requirement.Matches`.
//! No annotation or an empty array selects every cluster; an annotation that
//! does not parse selects none ([`Placement::Invalid`], whose message is
//! meant for an event on the federated object).
//!
//! The requirement itself (checks, matching, printing) is apimachinery's
//! port of `labels.Requirement`; only the operator spellings and the JSON
//! shape are Federation v1's own.
//!
//! Pure functions, no I/O.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;
use ubernetes_apimachinery::labels::json_kind;
pub use ubernetes_apimachinery::labels::{Operator, Requirement};

/// The annotation on a federated object that restricts its placement.
pub const CLUSTER_SELECTOR_ANNOTATION: &str = "federation.alpha.kubernetes.io/cluster-selector";

/// Where a federated object goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// No selector annotation: every cluster.
    All,
    /// The clusters whose labels match the selector.
    Selector(ClusterSelector),
    /// The annotation does not parse: no cluster; the message says why.
    Invalid(String),
}

impl Placement {
    /// Whether a cluster with these labels is selected (`All` → true,
    /// `Invalid` → false).
    pub fn selects(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Placement::All => true,
            Placement::Selector(s) => s.matches(labels),
            Placement::Invalid(_) => false,
        }
    }
}

/// Federation v1's `ConvertOperator`: the spellings the annotation accepts,
/// as kube's selection operators.
pub fn parse_operator(s: &str) -> Option<Operator> {
    Some(match s {
        "in" | "In" => Operator::In,
        "notin" | "NotIn" => Operator::NotIn,
        "=" => Operator::Equals,
        "==" => Operator::DoubleEquals,
        "!=" => Operator::NotEquals,
        "exists" | "Exists" => Operator::Exists,
        "!" | "DoesNotExist" => Operator::DoesNotExist,
        "gt" | "Gt" | ">" => Operator::GreaterThan,
        "lt" | "Lt" | "<" => Operator::LessThan,
        _ => return None,
    })
}

/// The spellings listed when an operator is refused.
const SUPPORTED_OPERATORS: &str = "\"in\", \"In\", \"notin\", \"NotIn\", \"=\", \"==\", \"!=\", \"exists\", \"Exists\", \"!\", \"DoesNotExist\", \"gt\", \"Gt\", \">\", \"lt\", \"Lt\", \"<\"";

/// A cluster selector: the AND of its requirements (none: every cluster).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterSelector {
    /// The requirements, in annotation order.
    pub requirements: Vec<Requirement>,
}

impl ClusterSelector {
    /// Whether a cluster with these labels satisfies every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }
}

impl fmt::Display for ClusterSelector {
    /// The selector in label-selector syntax (`region in (a,b),!legacy`),
    /// for messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// The placement of a federated object, from its annotations.
pub fn placement_of(obj: &Value) -> Placement {
    let Some(raw) = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(CLUSTER_SELECTOR_ANNOTATION))
    else {
        return Placement::All;
    };
    let Some(text) = raw.as_str() else {
        return Placement::Invalid(format!(
            "annotation {CLUSTER_SELECTOR_ANNOTATION} must be a string"
        ));
    };
    match parse_cluster_selector(text) {
        Ok(s) => Placement::Selector(s),
        Err(e) => Placement::Invalid(format!(
            "invalid annotation {CLUSTER_SELECTOR_ANNOTATION}: {e}"
        )),
    }
}

/// Parse the annotation's value: a JSON array of
/// `{"key", "operator", "values"}` (field names matched case-insensitively
/// and unknown fields ignored, as Go's `encoding/json` does; `null` is an
/// empty array).
pub fn parse_cluster_selector(text: &str) -> Result<ClusterSelector, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
    let items = match v {
        Value::Null => Vec::new(),
        Value::Array(items) => items,
        other => {
            return Err(format!(
                "cannot unmarshal {} into a list of cluster selector requirements",
                json_kind(&other)
            ));
        }
    };
    let mut requirements = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let r = requirement_of(item).map_err(|e| format!("requirement [{i}]: {e}"))?;
        requirements.push(r);
    }
    Ok(ClusterSelector { requirements })
}

/// One array element → a checked requirement.
fn requirement_of(item: &Value) -> Result<Requirement, String> {
    let obj = match item {
        Value::Object(o) => o,
        Value::Null => return Requirement::new("", Operator::In, Vec::new()),
        other => {
            return Err(format!(
                "cannot unmarshal {} into a cluster selector requirement",
                json_kind(other)
            ));
        }
    };
    // Go's encoding/json: an exact name first, else a case-insensitive one.
    let field = |name: &str| {
        obj.get(name).or_else(|| {
            obj.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v)
        })
    };
    let string = |name: &str| -> Result<String, String> {
        match field(name) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(format!(
                "cannot unmarshal {} into field {name} of type string",
                json_kind(other)
            )),
        }
    };
    let key = string("key")?;
    let op_text = string("operator")?;
    let values = match field("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(vs)) => vs
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                Value::Null => Ok(String::new()),
                other => Err(format!(
                    "cannot unmarshal {} into field values of type string",
                    json_kind(other)
                )),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(other) => {
            return Err(format!(
                "cannot unmarshal {} into field values of type []string",
                json_kind(other)
            ));
        }
    };
    let Some(operator) = parse_operator(&op_text) else {
        return Err(format!(
            "operator: Unsupported value: {}: supported values: {SUPPORTED_OPERATORS}",
            quote(&op_text)
        ));
    };
    Requirement::new(&key, operator, values)
}

/// A string quoted as Go's `%q` would (JSON escaping is close enough).
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn sel(text: &str) -> ClusterSelector {
        match parse_cluster_selector(text) {
            Ok(s) => s,
            Err(e) => panic!("{text} should parse: {e}"),
        }
    }

    fn err(text: &str) -> String {
        match parse_cluster_selector(text) {
            Ok(s) => panic!("{text} should not parse, got {s:?}"),
            Err(e) => e,
        }
    }

    fn one(op: &str, values: &[&str]) -> ClusterSelector {
        sel(&json!([{"key": "k", "operator": op, "values": values}]).to_string())
    }

    fn annotated(value: &str) -> Value {
        json!({"metadata": {"name": "x", "annotations": {CLUSTER_SELECTOR_ANNOTATION: value}}})
    }

    #[test]
    fn no_annotation_selects_every_cluster() {
        let p = placement_of(&json!({"metadata": {"name": "x"}}));
        assert_eq!(p, Placement::All);
        assert!(p.selects(&labels(&[])));
        assert!(p.selects(&labels(&[("region", "eu")])));
    }

    #[test]
    fn empty_array_selects_every_cluster() {
        let p = placement_of(&annotated("[]"));
        assert!(p.selects(&labels(&[])));
        assert!(p.selects(&labels(&[("a", "b")])));
        assert!(sel("null").matches(&labels(&[])));
    }

    #[test]
    fn in_operator_matches_listed_values_in_both_spellings() {
        for op in ["in", "In"] {
            let s = one(op, &["a", "b"]);
            assert!(s.matches(&labels(&[("k", "a")])), "{op}");
            assert!(s.matches(&labels(&[("k", "b")])), "{op}");
            assert!(!s.matches(&labels(&[("k", "c")])), "{op}");
            assert!(!s.matches(&labels(&[])), "{op}");
        }
    }

    #[test]
    fn notin_operator_matches_absent_or_unlisted_values_in_both_spellings() {
        for op in ["notin", "NotIn"] {
            let s = one(op, &["a"]);
            assert!(!s.matches(&labels(&[("k", "a")])), "{op}");
            assert!(s.matches(&labels(&[("k", "c")])), "{op}");
            assert!(s.matches(&labels(&[])), "{op}");
        }
    }

    #[test]
    fn exists_operator_needs_the_key_in_both_spellings() {
        for op in ["exists", "Exists"] {
            let s = one(op, &[]);
            assert!(s.matches(&labels(&[("k", "")])), "{op}");
            assert!(!s.matches(&labels(&[("other", "x")])), "{op}");
        }
    }

    #[test]
    fn does_not_exist_operator_needs_the_key_absent_in_both_spellings() {
        for op in ["!", "DoesNotExist"] {
            let s = one(op, &[]);
            assert!(!s.matches(&labels(&[("k", "x")])), "{op}");
            assert!(s.matches(&labels(&[("other", "x")])), "{op}");
        }
    }

    #[test]
    fn equality_operators_match_the_single_value() {
        for op in ["=", "=="] {
            let s = one(op, &["a"]);
            assert!(s.matches(&labels(&[("k", "a")])), "{op}");
            assert!(!s.matches(&labels(&[("k", "b")])), "{op}");
            assert!(!s.matches(&labels(&[])), "{op}");
        }
    }

    #[test]
    fn not_equals_matches_other_values_and_absence() {
        let s = one("!=", &["a"]);
        assert!(!s.matches(&labels(&[("k", "a")])));
        assert!(s.matches(&labels(&[("k", "b")])));
        assert!(s.matches(&labels(&[])));
    }

    #[test]
    fn gt_compares_integers_in_every_spelling() {
        for op in ["gt", "Gt", ">"] {
            let s = one(op, &["5"]);
            assert!(s.matches(&labels(&[("k", "6")])), "{op}");
            assert!(!s.matches(&labels(&[("k", "5")])), "{op}");
            assert!(!s.matches(&labels(&[("k", "10a")])), "{op}");
            assert!(!s.matches(&labels(&[])), "{op}");
        }
        // Integer, not string, comparison.
        assert!(one(">", &["9"]).matches(&labels(&[("k", "10")])));
    }

    #[test]
    fn lt_compares_integers_in_every_spelling() {
        for op in ["lt", "Lt", "<"] {
            let s = one(op, &["5"]);
            assert!(s.matches(&labels(&[("k", "-1")])), "{op}");
            assert!(!s.matches(&labels(&[("k", "5")])), "{op}");
            assert!(!s.matches(&labels(&[])), "{op}");
        }
    }

    #[test]
    fn every_requirement_must_match() {
        let s = sel(r#"[{"key":"region","operator":"in","values":["eu","us"]},
                {"key":"legacy","operator":"!"}]"#);
        assert!(s.matches(&labels(&[("region", "eu")])));
        assert!(!s.matches(&labels(&[("region", "eu"), ("legacy", "yes")])));
        assert!(!s.matches(&labels(&[("region", "asia")])));
    }

    #[test]
    fn non_integer_gt_value_is_a_parse_error() {
        let e = err(r#"[{"key":"k","operator":"gt","values":["five"]}]"#);
        assert!(e.contains("must be an integer"), "{e}");
        assert!(e.contains("\"five\""), "{e}");
        let e = err(r#"[{"key":"k","operator":"lt","values":["1","2"]}]"#);
        assert!(e.contains("exactly one value"), "{e}");
    }

    #[test]
    fn unknown_operator_is_invalid_and_named() {
        let p = placement_of(&annotated(
            r#"[{"key":"k","operator":"like","values":["a"]}]"#,
        ));
        let Placement::Invalid(msg) = &p else {
            panic!("expected Invalid, got {p:?}");
        };
        assert!(msg.contains("\"like\""), "{msg}");
        assert!(msg.contains(CLUSTER_SELECTOR_ANNOTATION), "{msg}");
        assert!(!p.selects(&labels(&[("k", "a")])));
    }

    #[test]
    fn unparseable_json_is_invalid_and_selects_nothing() {
        let p = placement_of(&annotated("[{"));
        let Placement::Invalid(msg) = &p else {
            panic!("expected Invalid, got {p:?}");
        };
        assert!(msg.contains("invalid JSON"), "{msg}");
        assert!(!p.selects(&labels(&[])));
        assert!(err(r#"{"key":"k"}"#).contains("cannot unmarshal object"));
        assert!(err(r#"[{"key":"k","operator":"in","values":[1]}]"#).contains("number"));
    }

    #[test]
    fn value_counts_are_checked_per_operator() {
        assert!(err(r#"[{"key":"k","operator":"in","values":[]}]"#).contains("can't be empty"));
        assert!(
            err(r#"[{"key":"k","operator":"=","values":["a","b"]}]"#).contains("one single value")
        );
        assert!(
            err(r#"[{"key":"k","operator":"exists","values":["a"]}]"#).contains("must be empty")
        );
    }

    #[test]
    fn keys_and_values_must_be_label_syntax() {
        assert!(
            err(r#"[{"key":"bad key","operator":"exists"}]"#).starts_with("requirement [0]: key:")
        );
        assert!(err(r#"[{"key":"","operator":"exists"}]"#).contains("name part must be non-empty"));
        assert!(err(r#"[{"key":"Bad_Prefix/x","operator":"exists"}]"#).contains("prefix part"));
        assert!(err(r#"[{"key":"k","operator":"in","values":["not ok"]}]"#).contains("values[0]"));
        // A prefixed key and an empty value are fine.
        let s = sel(r#"[{"key":"topology.kubernetes.io/region","operator":"=","values":[""]}]"#);
        assert!(s.matches(&labels(&[("topology.kubernetes.io/region", "")])));
    }

    #[test]
    fn field_names_match_case_insensitively_as_go_json_does() {
        let s = sel(r#"[{"Key":"k","Operator":"In","Values":["a"],"extra":1}]"#);
        assert!(s.matches(&labels(&[("k", "a")])));
    }

    #[test]
    fn non_string_annotation_value_is_invalid() {
        let obj = json!({"metadata": {"annotations": {CLUSTER_SELECTOR_ANNOTATION: 3}}});
        assert!(matches!(placement_of(&obj), Placement::Invalid(_)));
    }

    #[test]
    fn selector_displays_in_label_selector_syntax() {
        let s = sel(
            r#"[{"key":"a","operator":"in","values":["x","y"]},{"key":"b","operator":"!"},{"key":"c","operator":">","values":["3"]}]"#,
        );
        assert_eq!(s.to_string(), "a in (x,y),!b,c>3");
    }
}
