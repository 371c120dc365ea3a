//! Field paths: [`PathElement`] (one step into a value) and [`Path`] (a
//! sequence of them), with structured-merge-diff's total order, its
//! `FieldsV1` key encoding (`f:name`, `k:{"name":"c"}`, `v:"x"`, `i:0`) and
//! its human form (`.spec.containers[name="c"].image`) used in conflict
//! messages.

use std::cmp::Ordering;
use std::fmt;

use serde_json::{Map, Value};

/// One step into a value (`fieldpath.PathElement`).
#[derive(Debug, Clone)]
pub enum PathElement {
    /// A field of a struct or a key of a map: `f:<name>`.
    Field(String),
    /// An item of a map-list, by its key fields (sorted by name): `k:{…}`.
    Key(Vec<(String, Value)>),
    /// An item of a set-list, by its value: `v:<json>`.
    Value(Value),
    /// An item of a list by position: `i:<index>`.
    Index(i64),
}

/// Escape JSON text as Go's `encoding/json` does: `<`, `>`, `&`, U+2028 and
/// U+2029 become `\u` escapes (they only occur inside strings).
pub fn go_escape(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// A sequence of [`PathElement`]s from the root of an object.
pub type Path = Vec<PathElement>;

impl PathElement {
    /// A field element.
    pub fn field(name: impl Into<String>) -> Self {
        Self::Field(name.into())
    }

    /// A key element; the fields are sorted by name, as upstream keeps them.
    pub fn key(mut fields: Vec<(String, Value)>) -> Self {
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        Self::Key(fields)
    }

    /// The `FieldsV1` object key of this element (`f:name`, `k:{…}`, …).
    pub fn to_fields_key(&self) -> String {
        match self {
            Self::Field(name) => format!("f:{name}"),
            Self::Key(fields) => {
                let object: Map<String, Value> = fields.iter().cloned().collect();
                format!("k:{}", go_escape(&Value::Object(object).to_string()))
            }
            Self::Value(v) => format!("v:{}", go_escape(&v.to_string())),
            Self::Index(i) => format!("i:{i}"),
        }
    }

    /// Parse a `FieldsV1` object key; `None` for a malformed one.
    pub fn from_fields_key(key: &str) -> Option<Self> {
        let (prefix, rest) = key.split_once(':')?;
        match prefix {
            "f" => Some(Self::Field(rest.to_string())),
            "k" => match serde_json::from_str::<Value>(rest).ok()? {
                Value::Object(object) => Some(Self::key(object.into_iter().collect())),
                _ => None,
            },
            "v" => serde_json::from_str(rest).ok().map(Self::Value),
            "i" => rest.parse().ok().map(Self::Index),
            _ => None,
        }
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PathElement {
    /// Upstream's `PathElement.Compare`: fields < keys < values < indices,
    /// then by content.
    fn cmp(&self, other: &Self) -> Ordering {
        fn rank(e: &PathElement) -> u8 {
            match e {
                PathElement::Field(_) => 0,
                PathElement::Key(_) => 1,
                PathElement::Value(_) => 2,
                PathElement::Index(_) => 3,
            }
        }
        match (self, other) {
            (Self::Field(a), Self::Field(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Self::Key(a), Self::Key(b)) => compare_fields(a, b),
            (Self::Value(a), Self::Value(b)) => compare_values(a, b),
            (Self::Index(a), Self::Index(b)) => a.cmp(b),
            _ => rank(self).cmp(&rank(other)),
        }
    }
}

fn compare_fields(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for ((an, av), (bn, bv)) in a.iter().zip(b) {
        let c = an
            .as_bytes()
            .cmp(bn.as_bytes())
            .then_with(|| compare_values(av, bv));
        if c != Ordering::Equal {
            return c;
        }
    }
    a.len().cmp(&b.len())
}

/// Upstream's `value.Compare`: numbers < strings < booleans < lists < maps <
/// null, then by content.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => {
                let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
                x.partial_cmp(&y).unwrap_or(Ordering::Equal)
            }
        },
        (Value::String(x), Value::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (p, q) in x.iter().zip(y) {
                let c = compare_values(p, q);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            let mut xs: Vec<_> = x.iter().collect();
            let mut ys: Vec<_> = y.iter().collect();
            xs.sort_by(|p, q| p.0.cmp(q.0));
            ys.sort_by(|p, q| p.0.cmp(q.0));
            for ((xk, xv), (yk, yv)) in xs.iter().zip(&ys) {
                let c = xk.cmp(yk).then_with(|| compare_values(xv, yv));
                if c != Ordering::Equal {
                    return c;
                }
            }
            xs.len().cmp(&ys.len())
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

/// Upstream's `value.ToString`: strings quoted, everything else as JSON-ish.
fn value_string(v: &Value) -> String {
    match v {
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(value_string).collect();
            format!("[{}]", parts.join(","))
        }
        Value::Object(map) => {
            let parts: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k}={}", value_string(v)))
                .collect();
            format!("{{{}}}", parts.join(";"))
        }
        other => other.to_string(),
    }
}

impl fmt::Display for PathElement {
    /// Upstream's `PathElement.String`: `.name`, `[k=v,k2=v2]`, `[=v]`, `[0]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Field(name) => write!(f, ".{name}"),
            Self::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(k, v)| format!("{k}={}", value_string(v)))
                    .collect();
                write!(f, "[{}]", parts.join(","))
            }
            Self::Value(v) => write!(f, "[={}]", value_string(v)),
            Self::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path as upstream prints it: its elements concatenated.
pub fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_keys_round_trip() {
        for key in [
            "f:metadata",
            r#"k:{"name":"c"}"#,
            r#"k:{"containerPort":80,"protocol":"TCP"}"#,
            r#"v:"foregroundDeletion""#,
            "v:5",
            "i:3",
        ] {
            let pe = PathElement::from_fields_key(key).expect(key);
            assert_eq!(pe.to_fields_key(), key);
        }
    }

    #[test]
    fn key_fields_are_sorted_by_name() {
        let pe = PathElement::key(vec![
            ("protocol".into(), json!("TCP")),
            ("containerPort".into(), json!(80)),
        ]);
        assert_eq!(
            pe.to_fields_key(),
            r#"k:{"containerPort":80,"protocol":"TCP"}"#
        );
    }

    #[test]
    fn keys_escape_html_characters_as_go_does() {
        let pe = PathElement::key(vec![("name".into(), json!("a&b<c>"))]);
        let key = pe.to_fields_key();
        assert_eq!(key, r#"k:{"name":"a\u0026b\u003cc\u003e"}"#);
        assert_eq!(PathElement::from_fields_key(&key), Some(pe));
    }

    #[test]
    fn malformed_keys_are_rejected() {
        assert!(PathElement::from_fields_key("x:y").is_none());
        assert!(PathElement::from_fields_key("k:[1]").is_none());
        assert!(PathElement::from_fields_key("i:a").is_none());
        assert!(PathElement::from_fields_key("nocolon").is_none());
    }

    #[test]
    fn fields_sort_before_keys_values_and_indices() {
        let mut v = [
            PathElement::Index(0),
            PathElement::Value(json!("a")),
            PathElement::key(vec![("name".into(), json!("a"))]),
            PathElement::field("z"),
            PathElement::field("a"),
        ];
        v.sort();
        let keys: Vec<String> = v.iter().map(PathElement::to_fields_key).collect();
        assert_eq!(keys, ["f:a", "f:z", r#"k:{"name":"a"}"#, r#"v:"a""#, "i:0"]);
    }

    #[test]
    fn paths_print_as_upstream_does() {
        let path = vec![
            PathElement::field("spec"),
            PathElement::field("containers"),
            PathElement::key(vec![("name".into(), json!("c"))]),
            PathElement::field("image"),
        ];
        assert_eq!(path_string(&path), r#".spec.containers[name="c"].image"#);
        let set = vec![
            PathElement::field("metadata"),
            PathElement::field("finalizers"),
            PathElement::Value(json!("x")),
        ];
        assert_eq!(path_string(&set), r#".metadata.finalizers[="x"]"#);
    }
}
