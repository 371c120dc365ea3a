//! What must differ between two servers, taken out of an answer before it is
//! compared: resourceVersions, uids, timestamps, generated name suffixes,
//! allocated ClusterIPs, the per-request headers. Each format keeps its own
//! bytes otherwise: JSON is re-serialised in the server's field order (so an
//! order difference shows), YAML is compared line by line, protobuf through
//! its `runtime.Unknown` envelope and the object's `ObjectMeta` decoded with
//! the `k8s-pb` types (the rest of the message compared as bytes).

use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message;
use serde_json::Value;

/// The prefix every generated name in the harness starts with.
pub const GENERATE_NAME: &str = "diff-gen-";

/// Headers that differ per request or per connection and are not compared:
/// kube-apiserver's audit id and APF identifiers, the date, and the framing
/// (Go's server picks Content-Length or chunked by body size).
pub const VOLATILE_HEADERS: &[&str] = &[
    "audit-id",
    "date",
    "x-kubernetes-pf-flowschema-uid",
    "x-kubernetes-pf-prioritylevel-uid",
    "content-length",
    "transfer-encoding",
];

fn is_timestamp(s: &str) -> bool {
    // RFC 3339 as Kubernetes writes it: 2026-01-01T00:00:00Z or with a fraction.
    let b = s.as_bytes();
    b.len() >= 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && (s.ends_with('Z') || s.len() >= 25)
        && b[..4].iter().all(u8::is_ascii_digit)
}

fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && [8, 13, 18, 23].iter().all(|&i| b[i] == b'-')
        && b.iter()
            .enumerate()
            .all(|(i, c)| [8, 13, 18, 23].contains(&i) || c.is_ascii_hexdigit())
}

fn is_generated_name(s: &str) -> bool {
    s.strip_prefix(GENERATE_NAME)
        .is_some_and(|rest| rest.len() == 5 && rest.bytes().all(|c| c.is_ascii_alphanumeric()))
}

/// The stand-in for a string that must differ, or `None` to keep it.
fn mask(key: Option<&str>, s: &str) -> Option<&'static str> {
    match key {
        Some("resourceVersion") if !s.is_empty() => return Some("<rv>"),
        Some("continue") if !s.is_empty() => return Some("<continue>"),
        Some("clusterIP" | "clusterIPs") if s != "None" && !s.is_empty() => {
            return Some("<clusterIP>");
        }
        _ => {}
    }
    if is_timestamp(s) {
        Some("<time>")
    } else if is_uuid(s) {
        Some("<uid>")
    } else if is_generated_name(s) {
        Some("diff-gen-<suffix>")
    } else {
        None
    }
}

/// Masks what must differ in a JSON value, in place; an object keeps its
/// field order.
pub fn json(v: &mut Value) {
    walk(v, None);
}

fn walk(v: &mut Value, key: Option<&str>) {
    match v {
        Value::String(s) => {
            if let Some(m) = mask(key, s) {
                *s = m.to_string();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| walk(i, key)),
        Value::Object(map) => {
            for (k, item) in map.iter_mut() {
                walk(item, Some(k));
            }
        }
        _ => {}
    }
}

/// A Table (`meta.k8s.io/v1`) with the cells of its `Age`/`Created At`
/// column masked (the rest through [`json`]).
pub fn table(v: &mut Value) {
    let age = v["columnDefinitions"].as_array().and_then(|cols| {
        cols.iter()
            .position(|c| c["name"] == "Age" || c["name"] == "Created At")
    });
    if let (Some(i), Some(rows)) = (age, v.get_mut("rows").and_then(Value::as_array_mut)) {
        for row in rows {
            if let Some(cell) = row.pointer_mut(&format!("/cells/{i}")) {
                *cell = Value::String("<age>".into());
            }
        }
    }
    json(v);
}

/// YAML compared line by line, each `key: value` (or list item) whose value
/// must differ masked as in [`json`].
pub fn yaml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut list_key: Option<String> = None;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let trimmed = body.trim_start();
        let (lead, rest) = match trimmed.strip_prefix("- ") {
            Some(r) => (&body[..body.len() - r.len()], r),
            None => (&body[..body.len() - trimmed.len()], trimmed),
        };
        let (prefix, key, value) = match rest.split_once(": ") {
            Some((k, v)) => (format!("{lead}{k}: "), Some(k.to_string()), v),
            None if lead.ends_with("- ") => (lead.to_string(), list_key.clone(), rest),
            None => {
                if let Some(k) = rest.strip_suffix(':') {
                    list_key = Some(k.to_string());
                }
                out.push_str(line);
                continue;
            }
        };
        let unquoted = value.trim_matches(|c| c == '"' || c == '\'');
        match mask(key.as_deref(), unquoted) {
            Some(m) => {
                out.push_str(&prefix);
                out.push_str(m);
                if line.ends_with('\n') {
                    out.push('\n');
                }
            }
            None => out.push_str(line),
        }
    }
    out
}

/// One protobuf field of a message, as its number and raw bytes (the tag
/// and value as sent).
fn fields(mut b: &[u8]) -> Result<Vec<(u64, Vec<u8>)>, String> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let start = b;
        let key = prost::encoding::decode_varint(&mut b).map_err(|e| e.to_string())?;
        let (no, wire) = (key >> 3, key & 7);
        match wire {
            0 => {
                prost::encoding::decode_varint(&mut b).map_err(|e| e.to_string())?;
            }
            1 => b = b.get(8..).ok_or("short fixed64")?,
            5 => b = b.get(4..).ok_or("short fixed32")?,
            2 => {
                let len = prost::encoding::decode_varint(&mut b).map_err(|e| e.to_string())?;
                b = b
                    .get(usize::try_from(len).map_err(|e| e.to_string())?..)
                    .ok_or("short bytes")?;
            }
            w => return Err(format!("wire type {w}")),
        }
        let used = start.len() - b.len();
        out.push((no, start[..used].to_vec()));
    }
    Ok(out)
}

/// The payload of a length-delimited field's bytes (after tag and length).
fn payload(field: &[u8]) -> &[u8] {
    let mut b = field;
    let _ = prost::encoding::decode_varint(&mut b);
    let _ = prost::encoding::decode_varint(&mut b);
    b
}

fn object_meta(raw: &[u8]) -> String {
    match meta::ObjectMeta::decode(raw) {
        Ok(mut m) => {
            let epoch = || {
                Some(meta::Time {
                    seconds: Some(0),
                    nanos: Some(0),
                })
            };
            if m.uid.is_some() {
                m.uid = Some("<uid>".into());
            }
            if m.resource_version.is_some() {
                m.resource_version = Some("<rv>".into());
            }
            if m.name.as_deref().is_some_and(is_generated_name) {
                m.name = Some("diff-gen-<suffix>".into());
            }
            if m.creation_timestamp.is_some() {
                m.creation_timestamp = epoch();
            }
            if m.deletion_timestamp.is_some() {
                m.deletion_timestamp = epoch();
            }
            for f in &mut m.managed_fields {
                if f.time.is_some() {
                    f.time = epoch();
                }
            }
            format!("{m:?}")
        }
        Err(e) => format!("<ObjectMeta not decoded: {e}>"),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|c| format!("{c:02x}")).collect()
}

/// An object's message: its `ObjectMeta` (field 1) decoded and masked, every
/// other field as bytes; with `skip_spec` the spec (field 2) is left out (a
/// Service's holds its allocated ClusterIP).
fn object(raw: &[u8], skip_spec: bool) -> String {
    match fields(raw) {
        Ok(fs) => fs
            .iter()
            .map(|(no, bytes)| match no {
                1 => format!("1:{}", object_meta(payload(bytes))),
                2 if skip_spec => "2:<spec>".to_string(),
                _ => format!("{no}:{}", hex(bytes)),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Err(e) => format!("<not a message: {e}> {}", hex(raw)),
    }
}

/// A protobuf answer (`k8s\0` + `runtime.Unknown`) as comparable text: the
/// envelope's fields, then the object (or each item of a list, or a
/// `Status`) with what must differ masked.
pub fn protobuf(body: &[u8], skip_spec: bool) -> String {
    let Some(rest) = body.strip_prefix(b"k8s\0") else {
        return format!("<no k8s\\0 magic> {}", String::from_utf8_lossy(body));
    };
    let unknown = match Unknown::decode(rest) {
        Ok(u) => u,
        Err(e) => return format!("<not a runtime.Unknown: {e}>"),
    };
    let tm = unknown.type_meta.clone().unwrap_or_default();
    let kind = tm.kind.clone().unwrap_or_default();
    let raw = unknown.raw.clone().unwrap_or_default();
    let head = format!(
        "typeMeta={:?}/{:?} contentEncoding={:?} contentType={:?}",
        tm.api_version, tm.kind, unknown.content_encoding, unknown.content_type
    );
    let inner = if kind == "Status" {
        match meta::Status::decode(raw.as_slice()) {
            Ok(mut s) => {
                if let Some(d) = s.details.as_mut()
                    && d.uid.is_some()
                {
                    d.uid = Some("<uid>".into());
                }
                format!("{s:?}")
            }
            Err(e) => format!("<Status not decoded: {e}>"),
        }
    } else if kind.ends_with("List") {
        match fields(&raw) {
            Ok(fs) => fs
                .iter()
                .map(|(no, bytes)| match no {
                    1 => match meta::ListMeta::decode(payload(bytes)) {
                        Ok(mut m) => {
                            if m.resource_version.is_some() {
                                m.resource_version = Some("<rv>".into());
                            }
                            format!("1:{m:?}")
                        }
                        Err(e) => format!("1:<ListMeta not decoded: {e}>"),
                    },
                    2 => format!("2:item[\n{}\n]", object(payload(bytes), skip_spec)),
                    _ => format!("{no}:{}", hex(bytes)),
                })
                .collect::<Vec<_>>()
                .join("\n"),
            Err(e) => format!("<not a message: {e}>"),
        }
    } else {
        object(&raw, skip_spec)
    };
    format!("{head}\n{inner}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_what_differs_and_keeps_the_rest() {
        let mut v = serde_json::json!({"metadata": {"name": "diff-gen-ab3x9", "uid": "0e4a1f6c-2b7d-4a51-9c3e-5f6a7b8c9d0e",
            "resourceVersion": "42", "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"a": "b"}},
            "spec": {"clusterIP": "10.0.0.4", "clusterIPs": ["10.0.0.4"]}});
        json(&mut v);
        assert_eq!(
            v.to_string(),
            r#"{"metadata":{"name":"diff-gen-<suffix>","uid":"<uid>","resourceVersion":"<rv>","creationTimestamp":"<time>","labels":{"a":"b"}},"spec":{"clusterIP":"<clusterIP>","clusterIPs":["<clusterIP>"]}}"#
        );
        let y = yaml(
            "metadata:\n  resourceVersion: \"42\"\n  name: x\nspec:\n  clusterIPs:\n  - 10.0.0.4\n",
        );
        assert_eq!(
            y,
            "metadata:\n  resourceVersion: <rv>\n  name: x\nspec:\n  clusterIPs:\n  - <clusterIP>\n"
        );
    }
}
