//! `additionalPrinterColumns` (kube's
//! `apiextensions-apiserver/pkg/registry/customresource/tableconvertor`):
//! the columns of a CRD version (an `Age` column on
//! `.metadata.creationTimestamp` when none are declared), their Table
//! `columnDefinitions` (a `Name` column first), and the cells of an object:
//! the simple JSONPath forms kube allows (`.spec.a`, `.spec.list[0].b`,
//! `.metadata.labels['x.y/z']`) evaluated, then formatted by type as kube's
//! `cellForJSONValue` (integers, numbers, booleans, strings, dates as ages).

use jiff::Timestamp;
use serde_json::{Value, json};
use ubernetes_registry::printers::human_duration;

use crate::status::version;

const NAME_DESC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const CREATION_DESC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// The printer columns of a CRD version as declared
/// (`{name, type, format?, description?, priority?, jsonPath}`), or kube's
/// default `Age` column when there are none.
pub fn printer_columns(crd: &Value, version_name: &str) -> Vec<Value> {
    let declared = version(crd, version_name)
        .and_then(|v| v.get("additionalPrinterColumns"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if declared.is_empty() {
        return vec![json!({
            "name": "Age",
            "type": "date",
            "description": CREATION_DESC,
            "jsonPath": ".metadata.creationTimestamp",
        })];
    }
    declared
}

/// The Table `columnDefinitions` for `columns` (from [`printer_columns`]):
/// `Name` first, then each column.
pub fn column_definitions(columns: &[Value]) -> Vec<Value> {
    let mut out = vec![json!({
        "name": "Name", "type": "string", "format": "name",
        "description": NAME_DESC, "priority": 0,
    })];
    for c in columns {
        let str_of = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        out.push(json!({
            "name": str_of("name"),
            "type": str_of("type"),
            "format": str_of("format"),
            "description": match str_of("description") {
                d if d.is_empty() => format!(
                    "Custom resource definition column (in JSONPath format): {}",
                    str_of("jsonPath")
                ),
                d => d,
            },
            "priority": c.get("priority").and_then(Value::as_i64).unwrap_or(0),
        }));
    }
    out
}

/// [`table_cells_at`] as of now.
pub fn table_cells(columns: &[Value], obj: &Value) -> Vec<Value> {
    table_cells_at(columns, obj, Timestamp::now())
}

/// The cells of `obj`'s row: its name, then each column's value (`null`
/// where the path finds nothing or the value does not fit the type).
pub fn table_cells_at(columns: &[Value], obj: &Value, now: Timestamp) -> Vec<Value> {
    let mut cells = vec![
        obj.pointer("/metadata/name")
            .cloned()
            .unwrap_or_else(|| json!("")),
    ];
    for c in columns {
        let path = c.get("jsonPath").and_then(Value::as_str).unwrap_or("");
        let ty = c.get("type").and_then(Value::as_str).unwrap_or("string");
        let cell = match parse_path(path).and_then(|segs| lookup(obj, &segs)) {
            None | Some(Value::Null) => Value::Null,
            Some(v) => cell_for(ty, v, now),
        };
        cells.push(cell);
    }
    cells
}

fn cell_for(ty: &str, v: &Value, now: Timestamp) -> Value {
    match ty {
        "integer" => match v {
            Value::Number(n) if n.is_i64() => v.clone(),
            Value::Number(n) => n.as_f64().map(|f| json!(f as i64)).unwrap_or(Value::Null),
            _ => Value::Null,
        },
        "number" => v.as_f64().map(|f| json!(f)).unwrap_or(Value::Null),
        "boolean" => v.as_bool().map(Value::Bool).unwrap_or(Value::Null),
        "date" => match v.as_str() {
            Some(s) => match s.parse::<Timestamp>() {
                Ok(t) => json!(human_duration(now.duration_since(t))),
                Err(_) => json!("<invalid>"),
            },
            None => Value::Null,
        },
        // "string" (and anything else): JSONPath's text output.
        _ => json!(crate::values::go_value(v)),
    }
}

/// A segment of a simple JSONPath.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Field(String),
    Index(usize),
}

/// Parse `.a.b[0]['c.d']` (optionally wrapped in `{}`); `None` when it is
/// not one of those simple forms.
fn parse_path(path: &str) -> Option<Vec<Seg>> {
    let p = path.trim();
    let p = p
        .strip_prefix('{')
        .and_then(|x| x.strip_suffix('}'))
        .unwrap_or(p);
    let mut segs = Vec::new();
    let chars: Vec<char> = p.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '.' => {
                i += 1;
                let start = i;
                while i < chars.len() && chars[i] != '.' && chars[i] != '[' {
                    i += 1;
                }
                let name: String = chars[start..i].iter().collect();
                if !name.is_empty() {
                    segs.push(Seg::Field(name));
                }
            }
            '[' => {
                let end = chars[i..].iter().position(|&c| c == ']')? + i;
                let inner: String = chars[i + 1..end].iter().collect();
                let inner = inner.trim();
                if let Some(q) = inner
                    .strip_prefix('\'')
                    .and_then(|x| x.strip_suffix('\''))
                    .or_else(|| inner.strip_prefix('"').and_then(|x| x.strip_suffix('"')))
                {
                    segs.push(Seg::Field(q.to_string()));
                } else {
                    segs.push(Seg::Index(inner.parse().ok()?));
                }
                i = end + 1;
            }
            _ => return None,
        }
    }
    Some(segs)
}

fn lookup<'a>(v: &'a Value, segs: &[Seg]) -> Option<&'a Value> {
    segs.iter().try_fold(v, |cur, seg| match seg {
        Seg::Field(f) => cur.get(f.as_str()),
        Seg::Index(i) => cur.get(*i),
    })
}

/// Whether kube accepts `path` as a printer column `jsonPath`.
pub fn is_simple_json_path(path: &str) -> bool {
    path.starts_with('.') && parse_path(path).is_some_and(|s| !s.is_empty())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    #[test]
    fn cells_follow_the_column_types() {
        let cols = vec![
            json!({"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"}),
            json!({"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}),
            json!({"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio"}),
            json!({"name": "On", "type": "boolean", "jsonPath": ".spec.on"}),
            json!({"name": "Missing", "type": "string", "jsonPath": ".spec.nothing"}),
            json!({"name": "Label", "type": "string", "jsonPath": ".metadata.labels['app.kubernetes.io/name']"}),
            json!({"name": "First", "type": "string", "jsonPath": ".spec.list[1]"}),
            json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}),
        ];
        let obj = json!({"metadata": {"name": "a", "creationTimestamp": "2024-01-01T00:00:00Z",
                                      "labels": {"app.kubernetes.io/name": "web"}},
                         "spec": {"cronSpec": "* * * * */5", "replicas": 3, "ratio": 1, "on": true, "list": ["x", "y"]}});
        let now: Timestamp = "2024-01-01T00:05:00Z".parse().unwrap();
        assert_eq!(
            table_cells_at(&cols, &obj, now),
            vec![
                json!("a"),
                json!("* * * * */5"),
                json!(3),
                json!(1.0),
                json!(true),
                Value::Null,
                json!("web"),
                json!("y"),
                json!("5m")
            ]
        );
    }

    #[test]
    fn no_declared_columns_means_an_age_column() {
        let crd = json!({"spec": {"versions": [{"name": "v1"}]}});
        let cols = printer_columns(&crd, "v1");
        assert_eq!(cols.len(), 1);
        assert_eq!(cols[0]["name"], "Age");
        let defs = column_definitions(&cols);
        assert_eq!(defs[0]["name"], "Name");
        assert_eq!(defs[0]["format"], "name");
        assert_eq!(defs[1]["type"], "date");
        let undescribed =
            column_definitions(&[json!({"name": "X", "type": "string", "jsonPath": ".spec.x"})]);
        assert_eq!(
            undescribed[1]["description"],
            "Custom resource definition column (in JSONPath format): .spec.x"
        );
    }

    #[test]
    fn only_simple_paths_are_accepted() {
        assert!(is_simple_json_path(".spec.a[0].b"));
        assert!(!is_simple_json_path("spec.a"));
        assert!(!is_simple_json_path(".spec.a[?(@.x)]"));
    }
}
