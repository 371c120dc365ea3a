//! The CEL types of the values a rule sees, as kube's
//! `apiserver/pkg/cel/common.SchemaDeclType` derives them from a structural
//! schema: objects with their (escaped) properties, maps from
//! `additionalProperties`, lists, strings with `format`s turned into
//! `bytes`/`duration`/`timestamp`, and `x-kubernetes-int-or-string` as
//! `dyn`. Every list, map and string carries the most elements it may have
//! (`maxItems`/`maxProperties`/`maxLength`, or what fits in a request),
//! which is what cost estimation multiplies by; [`Type::measured`] puts the
//! sizes of actual data in their place for the runtime cost.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value as Json;

/// kube-apiserver's largest request body (`MaxRequestSizeBytes`, 3 MiB):
/// bounds the size of anything a schema leaves unbounded.
pub const MAX_REQUEST_SIZE_BYTES: u64 = 3 * 1024 * 1024;

/// Runtime type names of the opaque Kubernetes types.
pub const QUANTITY: &str = "kubernetes.Quantity";
pub const URL: &str = "kubernetes.URL";
pub const FORMAT: &str = "kubernetes.NamedFormat";

/// A CEL type with size bounds.
#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    Dyn,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    /// Most characters.
    String(u64),
    /// Most bytes.
    Bytes(u64),
    Duration,
    Timestamp,
    /// Element type, most elements.
    List(Box<Type>, u64),
    /// Key type, value type, most entries.
    Map(Box<Type>, Box<Type>, u64),
    Object(Arc<Object>),
    Optional(Box<Type>),
    Opaque(&'static str),
    /// The type of type values (`int`, `type(x)`).
    TypeValue,
}

/// A schema object: its properties by escaped CEL name.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Object {
    pub fields: BTreeMap<String, Field>,
}

/// One property of an [`Object`].
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The JSON name (unescaped).
    pub name: String,
    pub ty: Type,
}

const RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// kube's `cel.Escape`: the CEL name of a property, `None` when it has
/// none (the property is then invisible to rules).
pub fn escape(ident: &str) -> Option<String> {
    let first = ident.chars().next()?;
    if first.is_ascii_digit() {
        return None;
    }
    if RESERVED.contains(&ident) {
        return Some(format!("__{ident}__"));
    }
    let mut out = String::with_capacity(ident.len());
    let mut chars = ident.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                out.push_str("__underscores__");
            }
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}

fn flag(s: &Json, k: &str) -> bool {
    s.get(k).and_then(Json::as_bool).unwrap_or(false)
}

fn bound(s: &Json, k: &str) -> Option<u64> {
    s.get(k).and_then(Json::as_i64).map(|n| n.max(0) as u64)
}

impl Type {
    /// The type kube gives values of schema `s` (`None`: no CEL type, the
    /// value is invisible to rules). `resource_root`: the root of a custom
    /// resource or an embedded resource, which gets `apiVersion`, `kind`
    /// and `metadata.name`/`metadata.generateName`.
    pub fn from_schema(s: &Json, resource_root: bool) -> Option<Type> {
        if flag(s, "x-kubernetes-int-or-string") {
            return Some(Type::Dyn);
        }
        let ty = s.get("type").and_then(Json::as_str).unwrap_or("");
        let root = resource_root || flag(s, "x-kubernetes-embedded-resource");
        let ty = if ty.is_empty() && root { "object" } else { ty };
        Some(match ty {
            "object" => {
                if let Some(ap) = s.get("additionalProperties").filter(|a| a.is_object()) {
                    let v = Type::from_schema(ap, false)?;
                    let max = bound(s, "maxProperties").unwrap_or_else(|| {
                        (MAX_REQUEST_SIZE_BYTES - 2) / (v.min_serialized_size() + 5)
                    });
                    return Some(Type::Map(
                        Box::new(Type::String(MAX_REQUEST_SIZE_BYTES)),
                        Box::new(v),
                        max,
                    ));
                }
                let mut obj = Object::default();
                if let Some(props) = s.get("properties").and_then(Json::as_object) {
                    for (name, p) in props {
                        if root && name == "metadata" {
                            continue;
                        }
                        let embedded = flag(p, "x-kubernetes-embedded-resource");
                        if let (Some(esc), Some(t)) = (escape(name), Type::from_schema(p, embedded))
                        {
                            obj.fields.insert(
                                esc,
                                Field {
                                    name: name.clone(),
                                    ty: t,
                                },
                            );
                        }
                    }
                }
                if root {
                    let string = |n: &str| {
                        (
                            n.to_string(),
                            Field {
                                name: n.to_string(),
                                ty: Type::String(MAX_REQUEST_SIZE_BYTES),
                            },
                        )
                    };
                    obj.fields.extend([string("apiVersion"), string("kind")]);
                    let meta = Object {
                        fields: [string("name"), string("generateName")]
                            .into_iter()
                            .collect(),
                    };
                    obj.fields.insert(
                        "metadata".into(),
                        Field {
                            name: "metadata".into(),
                            ty: Type::Object(Arc::new(meta)),
                        },
                    );
                }
                Type::Object(Arc::new(obj))
            }
            "array" => {
                let item = s.get("items").and_then(|i| Type::from_schema(i, false))?;
                let max = bound(s, "maxItems").unwrap_or_else(|| {
                    (MAX_REQUEST_SIZE_BYTES - 2) / (item.min_serialized_size() + 1)
                });
                Type::List(Box::new(item), max)
            }
            "string" => {
                let max = bound(s, "maxLength").unwrap_or(MAX_REQUEST_SIZE_BYTES - 2);
                match s.get("format").and_then(Json::as_str).unwrap_or("") {
                    "byte" => Type::Bytes(max),
                    "duration" => Type::Duration,
                    "date" | "date-time" => Type::Timestamp,
                    _ => Type::String(max),
                }
            }
            "integer" => Type::Int,
            "number" => Type::Double,
            "boolean" => Type::Bool,
            _ => return None,
        })
    }

    /// The fewest bytes a value of this type takes in JSON (kube's
    /// `MinSerializedSize`).
    pub fn min_serialized_size(&self) -> u64 {
        match self {
            Type::Bool => 4,
            Type::Int | Type::Uint | Type::Double | Type::Dyn => 1,
            _ => 2,
        }
    }

    /// The most elements (list, map), characters (string) or bytes.
    pub fn max_size(&self) -> u64 {
        match self {
            Type::String(n) | Type::Bytes(n) | Type::List(_, n) | Type::Map(_, _, n) => *n,
            Type::Object(o) => o.fields.len() as u64,
            Type::Dyn => MAX_REQUEST_SIZE_BYTES,
            _ => 1,
        }
    }

    /// The element type of a list, the key type of a map (what a
    /// comprehension iterates over).
    pub fn iter_elem(&self) -> Type {
        match self {
            Type::List(e, _) => (**e).clone(),
            Type::Map(k, _, _) => (**k).clone(),
            Type::Object(_) => Type::String(MAX_REQUEST_SIZE_BYTES),
            _ => Type::Dyn,
        }
    }

    /// The CEL name of the type, for messages.
    pub fn name(&self) -> String {
        match self {
            Type::Dyn => "dyn".into(),
            Type::Null => "null_type".into(),
            Type::Bool => "bool".into(),
            Type::Int => "int".into(),
            Type::Uint => "uint".into(),
            Type::Double => "double".into(),
            Type::String(_) => "string".into(),
            Type::Bytes(_) => "bytes".into(),
            Type::Duration => "google.protobuf.Duration".into(),
            Type::Timestamp => "google.protobuf.Timestamp".into(),
            Type::List(e, _) => format!("list({})", e.name()),
            Type::Map(k, v, _) => format!("map({}, {})", k.name(), v.name()),
            Type::Object(_) => "object".into(),
            Type::Optional(t) => format!("optional_type({})", t.name()),
            Type::Opaque(n) => (*n).into(),
            Type::TypeValue => "type".into(),
        }
    }

    /// The same type with every size taken from `v`, the value it types
    /// (absent: sizes zero), for the cost of evaluating against `v`.
    pub fn measured(&self, v: Option<&Json>) -> Type {
        let Some(v) = v else {
            return self.zeroed();
        };
        match (self, v) {
            (Type::String(_), Json::String(s)) => Type::String(s.chars().count() as u64),
            (Type::Bytes(_), Json::String(s)) => Type::Bytes(s.len() as u64),
            (Type::List(e, _), Json::Array(a)) => {
                let mut elem = e.zeroed();
                for item in a {
                    elem = elem.merged(&e.measured(Some(item)));
                }
                Type::List(Box::new(elem), a.len() as u64)
            }
            (Type::Map(_, val, _), Json::Object(m)) => {
                let mut vt = val.zeroed();
                let mut key = 0;
                for (k, item) in m {
                    key = key.max(k.chars().count() as u64);
                    vt = vt.merged(&val.measured(Some(item)));
                }
                Type::Map(Box::new(Type::String(key)), Box::new(vt), m.len() as u64)
            }
            (Type::Object(o), Json::Object(m)) => {
                let fields = o
                    .fields
                    .iter()
                    .map(|(esc, f)| {
                        (
                            esc.clone(),
                            Field {
                                name: f.name.clone(),
                                ty: f.ty.measured(m.get(&f.name)),
                            },
                        )
                    })
                    .collect();
                Type::Object(Arc::new(Object { fields }))
            }
            (Type::Dyn, v) => Type::of_json(v),
            (Type::Optional(t), v) => Type::Optional(Box::new(t.measured(Some(v)))),
            _ => self.clone(),
        }
    }

    /// The exact type of a JSON value: objects are object types with each
    /// field's own type (rather than [`Type::of_json`]'s map of the merged
    /// value type), so that selecting a field costs what that field costs.
    pub fn structural(v: &Json) -> Type {
        match v {
            Json::Object(m) => Type::Object(Arc::new(Object {
                fields: m
                    .iter()
                    .map(|(k, x)| {
                        (
                            escape(k).unwrap_or_else(|| k.clone()),
                            Field {
                                name: k.clone(),
                                ty: Type::structural(x),
                            },
                        )
                    })
                    .collect(),
            })),
            Json::Array(a) => {
                let elem = a
                    .iter()
                    .map(Type::structural)
                    .reduce(|a, b| if a == b { a } else { a.merged(&b) })
                    .unwrap_or(Type::Dyn);
                Type::List(Box::new(elem), a.len() as u64)
            }
            other => Type::of_json(other),
        }
    }

    /// The type (with sizes) of an untyped JSON value.
    pub fn of_json(v: &Json) -> Type {
        match v {
            Json::Null => Type::Null,
            Json::Bool(_) => Type::Bool,
            Json::Number(n) if n.is_i64() || n.is_u64() => Type::Int,
            Json::Number(_) => Type::Double,
            Json::String(s) => Type::String(s.chars().count() as u64),
            Json::Array(a) => {
                let elem = a
                    .iter()
                    .map(Type::of_json)
                    .reduce(|a, b| if a == b { a } else { a.merged(&b) })
                    .unwrap_or(Type::Dyn);
                Type::List(Box::new(elem), a.len() as u64)
            }
            Json::Object(m) => {
                let key = m
                    .keys()
                    .map(|k| k.chars().count() as u64)
                    .max()
                    .unwrap_or(0);
                let val = m
                    .values()
                    .map(Type::of_json)
                    .reduce(|a, b| a.merged(&b))
                    .unwrap_or(Type::Dyn);
                Type::Map(Box::new(Type::String(key)), Box::new(val), m.len() as u64)
            }
        }
    }

    /// Every size zero: the type of a value that is not there.
    pub fn zeroed(&self) -> Type {
        match self {
            Type::String(_) => Type::String(0),
            Type::Bytes(_) => Type::Bytes(0),
            Type::List(e, _) => Type::List(Box::new(e.zeroed()), 0),
            Type::Map(k, v, _) => Type::Map(Box::new(k.zeroed()), Box::new(v.zeroed()), 0),
            Type::Object(o) => Type::Object(Arc::new(Object {
                fields: o
                    .fields
                    .iter()
                    .map(|(k, f)| {
                        (
                            k.clone(),
                            Field {
                                name: f.name.clone(),
                                ty: f.ty.zeroed(),
                            },
                        )
                    })
                    .collect(),
            })),
            Type::Optional(t) => Type::Optional(Box::new(t.zeroed())),
            Type::Dyn => Type::Null,
            other => other.clone(),
        }
    }

    /// The larger sizes of two measurements of one type (of another: `dyn`
    /// with the larger size bound kept in a list of it).
    pub fn merged(&self, other: &Type) -> Type {
        match (self, other) {
            (Type::String(a), Type::String(b)) => Type::String(*a.max(b)),
            (Type::Bytes(a), Type::Bytes(b)) => Type::Bytes(*a.max(b)),
            (Type::List(a, n), Type::List(b, m)) => Type::List(Box::new(a.merged(b)), *n.max(m)),
            (Type::Map(k1, v1, n), Type::Map(k2, v2, m)) => {
                Type::Map(Box::new(k1.merged(k2)), Box::new(v1.merged(v2)), *n.max(m))
            }
            (Type::Object(a), Type::Object(b)) => {
                let mut fields = a.fields.clone();
                for (k, f) in &b.fields {
                    match fields.get_mut(k) {
                        Some(existing) => existing.ty = existing.ty.merged(&f.ty),
                        None => {
                            fields.insert(k.clone(), f.clone());
                        }
                    }
                }
                Type::Object(Arc::new(Object { fields }))
            }
            (Type::Optional(a), Type::Optional(b)) => Type::Optional(Box::new(a.merged(b))),
            (Type::Null, t) | (t, Type::Null) => t.clone(),
            (a, b) if a == b => a.clone(),
            (a, b) => {
                // Different shapes (a `dyn` list of mixed values): keep the
                // bigger one, so the cost stays an upper bound.
                if b.max_size() > a.max_size() {
                    b.clone()
                } else {
                    a.clone()
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_escaped_as_kube_escapes_them() {
        assert_eq!(escape("foo-bar").as_deref(), Some("foo__dash__bar"));
        assert_eq!(escape("a.b/c").as_deref(), Some("a__dot__b__slash__c"));
        assert_eq!(escape("a__b").as_deref(), Some("a__underscores__b"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("1a"), None);
        assert_eq!(escape("a b"), None);
    }

    #[test]
    fn schemas_become_sized_types() {
        let s = json!({"type": "object", "properties": {
            "l": {"type": "array", "maxItems": 5, "items": {"type": "string", "maxLength": 3}},
            "m": {"type": "object", "additionalProperties": {"type": "integer"}},
            "d": {"type": "string", "format": "duration"}}});
        let Some(Type::Object(o)) = Type::from_schema(&s, true) else {
            panic!("object expected");
        };
        assert_eq!(o.fields["l"].ty, Type::List(Box::new(Type::String(3)), 5));
        assert!(
            matches!(o.fields["m"].ty, Type::Map(_, _, n) if n == (MAX_REQUEST_SIZE_BYTES - 2) / 6)
        );
        assert_eq!(o.fields["d"].ty, Type::Duration);
        assert!(o.fields.contains_key("metadata") && o.fields.contains_key("kind"));
    }

    #[test]
    fn measured_types_carry_the_sizes_of_the_data() {
        let t = Type::List(Box::new(Type::String(100)), 1000);
        assert_eq!(
            t.measured(Some(&json!(["ab", "abcd"]))),
            Type::List(Box::new(Type::String(4)), 2)
        );
        assert_eq!(t.measured(None), Type::List(Box::new(Type::String(0)), 0));
    }
}
