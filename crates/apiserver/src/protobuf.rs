//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`): request
//! bodies decoded into the JSON the JSON API would have received, and
//! responses (objects, `<Kind>List`s, `Status`, watch events) encoded from
//! the JSON the server serves ([`encode`], [`encode_list`],
//! [`encode_watch_event`], [`encodable`]).
//!
//! Client-go configured for protobuf (the e2e framework, Kubernetes' own
//! components) sends every body this way, `DeleteOptions` of deletes and
//! deletecollections and CustomResourceDefinitions included, and
//! kubectl 1.37's typed clients prefer protobuf for built-in kinds, so
//! `kubectl create configmap|secret|namespace|serviceaccount|service|deployment|
//! job|cronjob|role|rolebinding|clusterrole|clusterrolebinding|poddisruptionbudget|
//! ingress|quota|token`, `kubectl auth can-i` and `kubectl auth whoami` send
//! their bodies this way (and do not retry on 415).
//!
//! The wire format is kube's: the 4-byte magic `k8s\0`, then a
//! `runtime.Unknown` envelope (`typeMeta` apiVersion/kind, `raw`,
//! `contentEncoding`, `contentType`) whose `raw` is the kind's
//! `generated.proto` message without its TypeMeta.
//!
//! How: a generic protobuf walker driven by [`SCHEMA`], a compact table of
//! every message reachable from the served kinds (field number → JSON name
//! and type). The table is generated from the `k8s-pb` crate's prost types
//! (field numbers and types) and `k8s-openapi`'s JSON field names; `k8s-pb`
//! itself has no serde or reflection, so it cannot produce JSON at run time,
//! but the tests encode their bodies with it, which checks the table.
//! Special messages become their JSON forms: `Time`/`MicroTime` → RFC 3339,
//! `Quantity` → string, `IntOrString` → number or string, `RawExtension`,
//! `FieldsV1` and apiextensions' `JSON` → embedded JSON, `bytes` → base64,
//! list wrappers (`ExtraValue`) → arrays, embedded Go structs
//! (`VolumeSource`, `ProbeHandler`, `LocalObjectReference`, …) → inlined
//! fields, and JSONSchemaProps' `OrArray`/`OrBool`/`OrStringArray` → the one
//! JSON form their Go `MarshalJSON` writes. Unknown field numbers are
//! skipped as gogo-protobuf does. federation/v1beta1 (not in `k8s-pb`) is
//! written into the table from Federation v1's `generated.proto`.
//!
//! Encoding is the reverse walk: fields in tag order as gogo-protobuf
//! writes them, map entries sorted by key, absent or `null` JSON fields left
//! out, JSON fields the table does not know skipped; the envelope is
//! `Unknown{typeMeta, raw, contentEncoding: "", contentType: ""}`. Watch
//! events are `WatchEvent{type, object: RawExtension{raw: <encoded object>}}`
//! without magic or envelope, each framed by a 4-byte big-endian length.
//!
//! Decoding errors are 400 BadRequest with the wording of kube-apiserver's protobuf
//! serializer (`unexpected EOF`, `proto: wrong wireType = 2 for field Data`,
//! `no kind "Foo" is registered for version "v1" in scheme …`); use
//! [`decode_as`] for the create/update handlers' full sentence
//! (`ConfigMap in version "v1" cannot be handled as a Secret: …`).
//! Never panics on any input.

use std::collections::HashMap;
use std::sync::LazyLock;

use base64::Engine as _;
use serde_json::{Map, Value, json};
use ubernetes_apimachinery::ApiError;

/// The protobuf media type.
pub const PROTOBUF_CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// kube's protobuf magic prefix.
const MAGIC: &[u8] = b"k8s\0";

/// Deepest message nesting accepted (kube objects nest well under 30).
const MAX_DEPTH: usize = 100;

/// Whether a Content-Type header names kube's protobuf media type
/// (parameters and case ignored).
pub fn is_protobuf(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|m| m.trim().eq_ignore_ascii_case(PROTOBUF_CONTENT_TYPE))
}

/// Decode a protobuf request body into the object's JSON (with `apiVersion`
/// and `kind` from the envelope). Errors are 400 BadRequest carrying the
/// decoder's own message.
pub fn decode(body: &[u8]) -> Result<Value, ApiError> {
    decode_envelope(body, None)
        .map(|(_, v)| v)
        .map_err(|e| ApiError::bad_request(e.message))
}

/// Decode a body sent to an endpoint of kind `expected_kind`, wording a
/// failure as kube-apiserver's create/update handlers do
/// (`transformDecodeError`): `<Kind> in version "<v>" cannot be handled as a
/// <Expected>: <err>` when the envelope named a kind, else `the object
/// provided is unrecognized (must be of type <Expected>): <err> (<summary>)`.
pub fn decode_as(body: &[u8], expected_kind: &str) -> Result<Value, ApiError> {
    decode_envelope(body, Some(expected_kind)).map(|(_, v)| v).map_err(|e| {
        let msg = match e.gvk {
            Some((api_version, kind)) if !kind.is_empty() => {
                let version = api_version
                    .rsplit_once('/')
                    .map(|(_, v)| v)
                    .unwrap_or(&api_version);
                format!(
                    "{kind} in version \"{version}\" cannot be handled as a {expected_kind}: {}",
                    e.message
                )
            }
            _ => format!(
                "the object provided is unrecognized (must be of type {expected_kind}): {} ({})",
                e.message,
                summarize(body)
            ),
        };
        ApiError::bad_request(msg)
    })
}

/// `summarizeData(body, 30)`: hex of the first 30 bytes.
fn summarize(body: &[u8]) -> String {
    if body.is_empty() {
        return "<empty>".into();
    }
    let n = body.len().min(30);
    let hex: String = body[..n].iter().map(|b| format!("{b:02x}")).collect();
    if body.len() > 30 {
        format!("{hex} ...")
    } else {
        hex
    }
}

/// A decode failure: the message, and the envelope's apiVersion/kind when
/// they were read.
#[derive(Debug)]
struct Failure {
    message: String,
    gvk: Option<(String, String)>,
}

impl Failure {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            gvk: None,
        }
    }
}

/// kube's `errNotMarshalable` for the unstructured object of a custom resource.
const NOT_MARSHALABLE: &str = "object *unstructured.Unstructured does not implement the protobuf marshalling interface and cannot be encoded to a protobuf message";

/// Whether any served version of a built-in kind is named `kind`.
fn is_builtin_kind(kind: &str) -> bool {
    SCHEMA.kinds.keys().any(|(_, k)| k == kind)
}

/// Decode a body; `expected_kind` is the kind of the endpoint it was sent to
/// (a create or update), if any.
fn decode_envelope(body: &[u8], expected_kind: Option<&str>) -> Result<(String, Value), Failure> {
    // kube's protobuf.Serializer.Decode, in its order.
    if body.is_empty() {
        return Err(Failure::new("empty data"));
    }
    let Some(rest) = body.strip_prefix(MAGIC) else {
        return Err(Failure::new(
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]",
        ));
    };
    if rest.is_empty() {
        return Err(Failure::new("empty body"));
    }
    let env = read_unknown(rest).map_err(Failure::new)?;
    let gvk = Some((env.api_version.clone(), env.kind.clone()));
    let with_gvk = |message: String| Failure {
        message,
        gvk: gvk.clone(),
    };
    let type_meta = format!(
        "runtime.TypeMeta{{APIVersion:\"{}\", Kind:\"{}\"}}",
        env.api_version, env.kind
    );
    if env.kind.is_empty() {
        return Err(with_gvk(format!(
            "Object 'Kind' is missing in '{type_meta}'"
        )));
    }
    if env.api_version.is_empty() {
        return Err(with_gvk(format!(
            "Object 'apiVersion' is missing in '{type_meta}'"
        )));
    }
    let schema = &*SCHEMA;
    let message = if env.kind == "DeleteOptions" {
        Some("meta.v1.DeleteOptions")
    } else {
        schema
            .kinds
            .get(&(env.api_version.clone(), env.kind.clone()))
            .map(String::as_str)
    };
    let Some(message) = message else {
        // A custom resource's endpoint decodes into an Unstructured, which
        // protobuf cannot fill.
        if expected_kind == Some(env.kind.as_str()) && !is_builtin_kind(&env.kind) {
            return Err(with_gvk(NOT_MARSHALABLE.to_string()));
        }
        return Err(with_gvk(format!(
            "no kind \"{}\" is registered for version \"{}\" in scheme \"k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30\"",
            env.kind, env.api_version
        )));
    };
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!(env.api_version));
    out.insert("kind".into(), json!(env.kind));
    decode_fields(schema, &env.raw, message, 0, &mut out).map_err(with_gvk)?;
    Ok((message.to_string(), Value::Object(out)))
}

// ---- wire reading ------------------------------------------------------------

type DecodeResult<T> = Result<T, String>;

const UNEXPECTED_EOF: &str = "unexpected EOF";

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    fn done(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn varint(&mut self) -> DecodeResult<u64> {
        let mut value: u64 = 0;
        for shift in (0..70).step_by(7) {
            if shift >= 64 {
                return Err("proto: integer overflow".into());
            }
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(UNEXPECTED_EOF.into());
            };
            self.pos += 1;
            value |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(value);
            }
        }
        Err("proto: integer overflow".into())
    }

    fn take(&mut self, n: usize) -> DecodeResult<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .ok_or_else(|| UNEXPECTED_EOF.to_string())?;
        let s = self
            .buf
            .get(self.pos..end)
            .ok_or_else(|| UNEXPECTED_EOF.to_string())?;
        self.pos = end;
        Ok(s)
    }

    fn bytes(&mut self) -> DecodeResult<&'a [u8]> {
        let len = self.varint()?;
        let len = i64::try_from(len)
            .ok()
            .filter(|l| *l >= 0)
            .ok_or_else(|| "proto: negative length found during unmarshaling".to_string())?;
        let len = usize::try_from(len).map_err(|_| UNEXPECTED_EOF.to_string())?;
        self.take(len)
    }

    fn fixed32(&mut self) -> DecodeResult<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn fixed64(&mut self) -> DecodeResult<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// A field key: (field number, wire type).
    fn key(&mut self, message: &str) -> DecodeResult<(u64, u8)> {
        let k = self.varint()?;
        let field = k >> 3;
        let wire = (k & 7) as u8;
        if wire == 4 {
            return Err(format!(
                "proto: {message}: wiretype end group for non-group"
            ));
        }
        if field == 0 {
            return Err(format!(
                "proto: {message}: illegal tag {field} (wire type {wire})"
            ));
        }
        Ok((field, wire))
    }

    /// Skip a field's value (gogo's `skipGenerated`).
    fn skip(&mut self, wire: u8) -> DecodeResult<()> {
        match wire {
            0 => self.varint().map(|_| ()),
            1 => self.fixed64().map(|_| ()),
            2 => self.bytes().map(|_| ()),
            5 => self.fixed32().map(|_| ()),
            3 => {
                let mut depth = 1usize;
                while depth > 0 {
                    let k = self.varint()?;
                    match (k & 7) as u8 {
                        3 => depth += 1,
                        4 => depth -= 1,
                        w => self.skip(w)?,
                    }
                }
                Ok(())
            }
            4 => Err("proto: unexpected end of group".into()),
            w => Err(format!("proto: illegal wireType {w}")),
        }
    }
}

struct Envelope {
    api_version: String,
    kind: String,
    raw: Vec<u8>,
}

/// `runtime.Unknown`: typeMeta=1 {apiVersion=1, kind=2}, raw=2,
/// contentEncoding=3, contentType=4.
fn read_unknown(buf: &[u8]) -> DecodeResult<Envelope> {
    let mut env = Envelope {
        api_version: String::new(),
        kind: String::new(),
        raw: Vec::new(),
    };
    let mut r = Reader::new(buf);
    while !r.done() {
        let (field, wire) = r.key("Unknown")?;
        match (field, wire) {
            (1, 2) => {
                let mut tm = Reader::new(r.bytes()?);
                while !tm.done() {
                    let (f, w) = tm.key("TypeMeta")?;
                    match (f, w) {
                        (1, 2) => env.api_version = lossy(tm.bytes()?),
                        (2, 2) => env.kind = lossy(tm.bytes()?),
                        (1, w) => return Err(wrong_wire(w, "APIVersion")),
                        (2, w) => return Err(wrong_wire(w, "Kind")),
                        (_, w) => tm.skip(w)?,
                    }
                }
            }
            (2, 2) => env.raw = r.bytes()?.to_vec(),
            (3 | 4, 2) => {
                r.bytes()?;
            }
            (1, w) => return Err(wrong_wire(w, "TypeMeta")),
            (2, w) => return Err(wrong_wire(w, "Raw")),
            (3, w) => return Err(wrong_wire(w, "ContentEncoding")),
            (4, w) => return Err(wrong_wire(w, "ContentType")),
            (_, w) => r.skip(w)?,
        }
    }
    Ok(env)
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// gogo's wording; the Go field name is the JSON name capitalised.
fn wrong_wire(wire: u8, field: &str) -> String {
    let mut go = String::with_capacity(field.len());
    let mut chars = field.chars();
    if let Some(c) = chars.next() {
        go.extend(c.to_uppercase());
    }
    go.extend(chars);
    format!("proto: wrong wireType = {wire} for field {go}")
}

// ---- schema ------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Scalar {
    Str,
    Bool,
    I32,
    I64,
    U32,
    U64,
    F64,
    F32,
    Bytes,
    Msg(String),
}

impl Scalar {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "s" => Self::Str,
            "b" => Self::Bool,
            "i32" => Self::I32,
            "i64" => Self::I64,
            "u32" => Self::U32,
            "u64" => Self::U64,
            "f64" => Self::F64,
            "f32" => Self::F32,
            "y" => Self::Bytes,
            m => Self::Msg(m.strip_prefix('@')?.to_string()),
        })
    }

    /// The wire type a single value of this type is sent with.
    fn wire(&self) -> u8 {
        match self {
            Self::Bool | Self::I32 | Self::I64 | Self::U32 | Self::U64 => 0,
            Self::F64 => 1,
            Self::F32 => 5,
            Self::Str | Self::Bytes | Self::Msg(_) => 2,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum FieldType {
    One(Scalar),
    Repeated(Scalar),
    Map(Scalar, Scalar),
    /// An embedded Go struct: its fields are the parent's in JSON.
    Inline(String),
}

#[derive(Debug, Clone)]
struct Field {
    json: String,
    tag: u64,
    ty: FieldType,
}

#[derive(Debug, Default)]
struct Message {
    /// `repeated items = 1` rendered as a bare JSON array.
    list: bool,
    fields: Vec<Field>,
}

#[derive(Debug, Default)]
struct Schema {
    messages: HashMap<String, Message>,
    /// (apiVersion, kind) → message.
    kinds: HashMap<(String, String), String>,
    /// Lines that did not parse (a unit test keeps this empty).
    bad_lines: Vec<String>,
}

fn parse_type(s: &str) -> Option<FieldType> {
    if let Some(inner) = s.strip_prefix('^') {
        return Some(FieldType::Inline(inner.strip_prefix('@')?.to_string()));
    }
    if let Some(inner) = s.strip_prefix('*') {
        return Some(FieldType::Repeated(Scalar::parse(inner)?));
    }
    if let Some(inner) = s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
        let (k, v) = inner.split_once(',')?;
        return Some(FieldType::Map(Scalar::parse(k)?, Scalar::parse(v)?));
    }
    Some(FieldType::One(Scalar::parse(s)?))
}

fn parse_schema(text: &str) -> Schema {
    let mut schema = Schema::default();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(kind_line) = line.strip_prefix('=') {
            let parts: Vec<&str> = kind_line.split(' ').collect();
            if let [api_version, kind, message] = parts.as_slice() {
                schema.kinds.insert(
                    (api_version.to_string(), kind.to_string()),
                    message.to_string(),
                );
            } else {
                schema.bad_lines.push(line.to_string());
            }
            continue;
        }
        let mut parts = line.split(' ');
        let Some(name) = parts.next() else { continue };
        let mut msg = Message::default();
        let mut ok = true;
        for p in parts {
            if p == "!list" {
                msg.list = true;
                continue;
            }
            let parsed = p.split_once('=').and_then(|(json, rest)| {
                let (tag, ty) = rest.split_once(':')?;
                Some(Field {
                    json: json.to_string(),
                    tag: tag.parse().ok()?,
                    ty: parse_type(ty)?,
                })
            });
            match parsed {
                Some(f) => msg.fields.push(f),
                None => ok = false,
            }
        }
        if !ok {
            schema.bad_lines.push(line.to_string());
        }
        schema.messages.insert(name.to_string(), msg);
    }
    schema
}

static SCHEMA: LazyLock<Schema> = LazyLock::new(|| parse_schema(SCHEMA_TEXT));

// ---- decoding ------------------------------------------------------------------

/// Decode `buf` as `message` into `out` (the fields of an object).
fn decode_fields(
    schema: &Schema,
    buf: &[u8],
    message: &str,
    depth: usize,
    out: &mut Map<String, Value>,
) -> DecodeResult<()> {
    if depth > MAX_DEPTH {
        return Err("proto: exceeded maximum nesting depth".into());
    }
    let Some(msg) = schema.messages.get(message) else {
        return Err(format!("proto: no schema for message {message}"));
    };
    let short = message.rsplit('.').next().unwrap_or(message);
    let mut r = Reader::new(buf);
    while !r.done() {
        let (tag, wire) = r.key(short)?;
        let Some(field) = msg.fields.iter().find(|f| f.tag == tag) else {
            r.skip(wire)?;
            continue;
        };
        match &field.ty {
            FieldType::Inline(child) => {
                if wire != 2 {
                    return Err(wrong_wire(wire, &field.json));
                }
                let bytes = r.bytes()?;
                decode_fields(schema, bytes, child, depth + 1, out)?;
            }
            FieldType::One(ty) => {
                if wire != ty.wire() {
                    return Err(wrong_wire(wire, &field.json));
                }
                let v = read_value(schema, &mut r, ty, depth)?;
                // Go's gogo-protobuf writes every non-pointer string, empty
                // or not; JSON (`omitempty`) leaves empty ones out, and so do
                // we, or they would be stored (`generateName: ""`). A zero
                // time (`creationTimestamp` of a Go client) is left out too,
                // and so are the `omitempty` non-pointer bools of a
                // JSONSchemaProps (`nullable: false` in every schema node).
                if v.as_str() == Some("") || v.is_null() {
                    continue;
                }
                if v == Value::Bool(false) && omitted_when_false(message, &field.json) {
                    continue;
                }
                match (out.get_mut(&field.json), v) {
                    // A message seen twice merges, as protobuf does.
                    (Some(Value::Object(old)), Value::Object(new)) => old.extend(new),
                    (_, v) => {
                        out.insert(field.json.clone(), v);
                    }
                }
            }
            FieldType::Repeated(ty) => {
                let entry = out
                    .entry(field.json.clone())
                    .or_insert_with(|| Value::Array(Vec::new()));
                let Value::Array(items) = entry else {
                    return Err(wrong_wire(wire, &field.json));
                };
                if wire == 2 && ty.wire() != 2 {
                    // Packed scalars.
                    let mut packed = Reader::new(r.bytes()?);
                    while !packed.done() {
                        items.push(read_value(schema, &mut packed, ty, depth)?);
                    }
                } else if wire == ty.wire() {
                    items.push(read_value(schema, &mut r, ty, depth)?);
                } else {
                    return Err(wrong_wire(wire, &field.json));
                }
            }
            FieldType::Map(kt, vt) => {
                if wire != 2 {
                    return Err(wrong_wire(wire, &field.json));
                }
                let mut entry = Reader::new(r.bytes()?);
                let mut key = String::new();
                let mut value = None;
                while !entry.done() {
                    let (t, w) = entry.key(short)?;
                    match t {
                        1 if w == kt.wire() => {
                            key = match read_value(schema, &mut entry, kt, depth)? {
                                Value::String(s) => s,
                                other => other.to_string(),
                            };
                        }
                        2 if w == vt.wire() => {
                            value = Some(read_value(schema, &mut entry, vt, depth)?);
                        }
                        1 | 2 => return Err(wrong_wire(w, &field.json)),
                        _ => entry.skip(w)?,
                    }
                }
                let value = match value {
                    Some(v) => v,
                    None => default_value(schema, vt, depth)?,
                };
                let map = out
                    .entry(field.json.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(m) = map {
                    m.insert(key, value);
                }
            }
        }
    }
    Ok(())
}

/// Non-pointer `bool` fields with JSON `omitempty` that gogo-protobuf
/// writes even when false, where a stored `false` would differ from what
/// kube-apiserver stores (it decodes into the Go struct and drops it).
fn omitted_when_false(message: &str, json_name: &str) -> bool {
    message == "apiextensions.v1.JsonSchemaProps"
        && matches!(
            json_name,
            "exclusiveMaximum"
                | "exclusiveMinimum"
                | "uniqueItems"
                | "nullable"
                | "x-kubernetes-embedded-resource"
                | "x-kubernetes-int-or-string"
        )
}

/// The JSON of a map value that was absent from its entry.
fn default_value(schema: &Schema, ty: &Scalar, depth: usize) -> DecodeResult<Value> {
    Ok(match ty {
        Scalar::Str | Scalar::Bytes => json!(""),
        Scalar::Bool => json!(false),
        Scalar::F64 | Scalar::F32 => json!(0.0),
        Scalar::I32 | Scalar::I64 | Scalar::U32 | Scalar::U64 => json!(0),
        Scalar::Msg(m) => message_value(schema, &[], m, depth + 1)?,
    })
}

fn read_value(
    schema: &Schema,
    r: &mut Reader<'_>,
    ty: &Scalar,
    depth: usize,
) -> DecodeResult<Value> {
    Ok(match ty {
        Scalar::Bool => json!(r.varint()? != 0),
        // Go converts the varint with a plain cast.
        Scalar::I32 => json!(r.varint()? as i32),
        Scalar::I64 => json!(r.varint()? as i64),
        Scalar::U32 => json!(r.varint()? as u32),
        Scalar::U64 => json!(r.varint()?),
        Scalar::F64 => float(f64::from_bits(r.fixed64()?))?,
        Scalar::F32 => float(f64::from(f32::from_bits(r.fixed32()?)))?,
        Scalar::Str => json!(lossy(r.bytes()?)),
        Scalar::Bytes => json!(base64::engine::general_purpose::STANDARD.encode(r.bytes()?)),
        Scalar::Msg(m) => {
            let bytes = r.bytes()?;
            message_value(schema, bytes, m, depth + 1)?
        }
    })
}

/// A float as Go's `encoding/json` prints it: integral values without a
/// fraction (`minimum: 1`, not `1.0`).
fn float(f: f64) -> DecodeResult<Value> {
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        return Ok(json!(f as i64));
    }
    serde_json::Number::from_f64(f)
        .map(Value::Number)
        .ok_or_else(|| format!("json: unsupported value: {f}"))
}

/// A message's JSON value, special messages included.
fn message_value(schema: &Schema, buf: &[u8], message: &str, depth: usize) -> DecodeResult<Value> {
    match message {
        // Go marshals a zero time as an empty message: JSON `null`.
        "meta.v1.Time" | "meta.v1.MicroTime" if buf.is_empty() => Ok(Value::Null),
        "meta.v1.Time" => {
            let (secs, _) = seconds_nanos(buf)?;
            format_time(secs, None)
        }
        "meta.v1.MicroTime" => {
            let (secs, nanos) = seconds_nanos(buf)?;
            format_time(secs, Some(nanos))
        }
        "meta.v1.Duration" => {
            let fields = scalar_fields(buf)?;
            Ok(json!(go_duration(fields.get(&1).map_or(0, |v| *v as i64))))
        }
        "resource.Quantity" => {
            let s = string_field(buf, 1)?;
            Ok(json!(if s.is_empty() { "0".to_string() } else { s }))
        }
        "intstr.IntOrString" => {
            let mut r = Reader::new(buf);
            let (mut ty, mut int_val, mut str_val) = (0i64, 0i32, String::new());
            while !r.done() {
                match r.key("IntOrString")? {
                    (1, 0) => ty = r.varint()? as i64,
                    (2, 0) => int_val = r.varint()? as i32,
                    (3, 2) => str_val = lossy(r.bytes()?),
                    (1, w) => return Err(wrong_wire(w, "type")),
                    (2, w) => return Err(wrong_wire(w, "intVal")),
                    (3, w) => return Err(wrong_wire(w, "strVal")),
                    (_, w) => r.skip(w)?,
                }
            }
            Ok(if ty == 1 {
                json!(str_val)
            } else {
                json!(int_val)
            })
        }
        "runtime.RawExtension" | "meta.v1.FieldsV1" | "apiextensions.v1.Json" => {
            let raw = bytes_field(buf, 1)?;
            if raw.is_empty() {
                return Ok(Value::Null);
            }
            serde_json::from_slice(&raw).map_err(|e| format!("error decoding embedded JSON: {e}"))
        }
        // apiextensions' wrappers whose JSON is one of two forms (their Go
        // `MarshalJSON`): a schema or a list of schemas, a schema or a bool,
        // a schema or a list of strings.
        "apiextensions.v1.JsonSchemaPropsOrArray" => {
            let mut out = Map::new();
            decode_fields(schema, buf, message, depth, &mut out)?;
            Ok(match out.remove("jSonSchemas") {
                Some(Value::Array(a)) if !a.is_empty() => Value::Array(a),
                _ => out.remove("schema").unwrap_or(Value::Null),
            })
        }
        "apiextensions.v1.JsonSchemaPropsOrBool" => {
            let mut out = Map::new();
            decode_fields(schema, buf, message, depth, &mut out)?;
            Ok(match out.remove("schema") {
                Some(s) => s,
                None => json!(out.get("allows") == Some(&json!(true))),
            })
        }
        "apiextensions.v1.JsonSchemaPropsOrStringArray" => {
            let mut out = Map::new();
            decode_fields(schema, buf, message, depth, &mut out)?;
            Ok(match out.remove("property") {
                Some(Value::Array(a)) if !a.is_empty() => Value::Array(a),
                _ => out.remove("schema").unwrap_or(Value::Null),
            })
        }
        _ => {
            let mut out = Map::new();
            decode_fields(schema, buf, message, depth, &mut out)?;
            let is_list = schema.messages.get(message).is_some_and(|m| m.list);
            if is_list {
                return Ok(out.remove("items").unwrap_or_else(|| json!([])));
            }
            Ok(Value::Object(out))
        }
    }
}

/// Varint fields of a small message, by number (last wins).
fn scalar_fields(buf: &[u8]) -> DecodeResult<HashMap<u64, u64>> {
    let mut r = Reader::new(buf);
    let mut out = HashMap::new();
    while !r.done() {
        let (f, w) = r.key("Time")?;
        if w == 0 {
            out.insert(f, r.varint()?);
        } else {
            r.skip(w)?;
        }
    }
    Ok(out)
}

fn seconds_nanos(buf: &[u8]) -> DecodeResult<(i64, i32)> {
    let f = scalar_fields(buf)?;
    Ok((
        f.get(&1).map_or(0, |v| *v as i64),
        f.get(&2).map_or(0, |v| *v as i32),
    ))
}

fn bytes_field(buf: &[u8], tag: u64) -> DecodeResult<Vec<u8>> {
    let mut r = Reader::new(buf);
    let mut out = Vec::new();
    while !r.done() {
        let (f, w) = r.key("RawExtension")?;
        if f == tag && w == 2 {
            out = r.bytes()?.to_vec();
        } else if f == tag {
            return Err(wrong_wire(w, "raw"));
        } else {
            r.skip(w)?;
        }
    }
    Ok(out)
}

fn string_field(buf: &[u8], tag: u64) -> DecodeResult<String> {
    bytes_field(buf, tag).map(|b| lossy(&b))
}

/// RFC 3339 in UTC: `Time` to the second, `MicroTime` with 6 digits.
fn format_time(secs: i64, nanos: Option<i32>) -> DecodeResult<Value> {
    let ts = jiff::Timestamp::new(secs, nanos.unwrap_or(0).clamp(0, 999_999_999))
        .map_err(|e| format!("proto: invalid timestamp: {e}"))?;
    let fmt = if nanos.is_some() {
        "%Y-%m-%dT%H:%M:%S%.6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Ok(json!(ts.strftime(fmt).to_string()))
}

/// Go's `time.Duration.String()`.
fn go_duration(ns: i64) -> String {
    if ns == 0 {
        return "0s".into();
    }
    let neg = ns < 0;
    let u = ns.unsigned_abs();
    let sign = if neg { "-" } else { "" };
    fn frac(v: u64, unit: u64, prec: usize) -> String {
        let whole = v / unit;
        let rem = v % unit;
        if rem == 0 {
            return whole.to_string();
        }
        let s = format!("{rem:0prec$}");
        format!("{whole}.{}", s.trim_end_matches('0'))
    }
    if u < 1_000 {
        return format!("{sign}{u}ns");
    }
    if u < 1_000_000 {
        return format!("{sign}{}µs", frac(u, 1_000, 3));
    }
    if u < 1_000_000_000 {
        return format!("{sign}{}ms", frac(u, 1_000_000, 6));
    }
    let secs_part = u % 60_000_000_000;
    let total_min = u / 60_000_000_000;
    let s = format!("{}s", frac(secs_part, 1_000_000_000, 9));
    if total_min == 0 {
        return format!("{sign}{s}");
    }
    let m = total_min % 60;
    let h = total_min / 60;
    if h == 0 {
        return format!("{sign}{m}m{s}");
    }
    format!("{sign}{h}h{m}m{s}")
}

// ---- encoding ------------------------------------------------------------------

/// The Content-Type of a protobuf watch stream.
pub const PROTOBUF_WATCH_CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// Whether objects of this apiVersion/kind can be served as protobuf: the
/// built-in kinds of the table (CRDs, APIServices and federation Clusters
/// included), their `<Kind>List`s, `Status` (under any apiVersion) and
/// `meta.k8s.io/v1` `PartialObjectMetadata[List]`. Custom resources are not:
/// kube-apiserver cannot marshal an Unstructured to protobuf, so it answers
/// them in the next accepted type, or 406 NotAcceptable.
pub fn encodable(api_version: &str, kind: &str) -> bool {
    message_for(api_version, kind).is_some()
}

fn message_for(api_version: &str, kind: &str) -> Option<&'static str> {
    let schema = &*SCHEMA;
    if kind == "Status" {
        return Some("meta.v1.Status");
    }
    schema
        .kinds
        .get(&(api_version.to_string(), kind.to_string()))
        .map(String::as_str)
}

/// Encode an object's JSON (as stored and served: `apiVersion`, `kind`,
/// `metadata`, …) the way kube-apiserver writes
/// `application/vnd.kubernetes.protobuf`: the magic `k8s\0`, then
/// `runtime.Unknown{typeMeta{apiVersion, kind}, raw, contentEncoding: "",
/// contentType: ""}` (fields 1–4 in order, the two empty strings written as
/// gogo-protobuf writes every non-pointer string), `raw` being the kind's
/// message with fields in tag order. JSON fields the table does not know are
/// skipped. A kind that is not [`encodable`] (a custom resource) is kube's
/// 406 NotAcceptable `object *unstructured.Unstructured does not implement
/// the protobuf marshalling interface …`, which kube-apiserver answers when
/// protobuf was negotiated for a CR; a value of the wrong JSON type is a 500.
pub fn encode(obj: &Value) -> Result<Vec<u8>, ApiError> {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let Some(message) = message_for(api_version, kind) else {
        // kube's `errNotMarshalable` for the unstructured objects of CRs.
        let go_type = if kind.ends_with("List") {
            "*unstructured.UnstructuredList"
        } else {
            "*unstructured.Unstructured"
        };
        return Err(ApiError::not_acceptable(format!(
            "object {go_type} does not implement the protobuf marshalling interface and cannot be encoded to a protobuf message"
        )));
    };
    let Some(fields) = obj.as_object() else {
        return Err(ApiError::internal("object to encode is not a JSON object"));
    };
    let mut raw = Vec::new();
    encode_fields(&SCHEMA, fields, message, 0, &mut raw).map_err(ApiError::internal)?;
    let mut type_meta = Vec::new();
    put_bytes(&mut type_meta, 1, api_version.as_bytes());
    put_bytes(&mut type_meta, 2, kind.as_bytes());
    let mut out = Vec::with_capacity(MAGIC.len() + raw.len() + type_meta.len() + 16);
    out.extend_from_slice(MAGIC);
    put_bytes(&mut out, 1, &type_meta);
    put_bytes(&mut out, 2, &raw);
    put_bytes(&mut out, 3, b"");
    put_bytes(&mut out, 4, b"");
    Ok(out)
}

/// Encode a `<Kind>List` (`metadata` ListMeta, then every item): [`encode`]
/// after checking the kind names a list.
pub fn encode_list(list: &Value) -> Result<Vec<u8>, ApiError> {
    let kind = list.get("kind").and_then(Value::as_str).unwrap_or("");
    if !kind.ends_with("List") {
        return Err(ApiError::internal(format!(
            "object of kind {kind:?} is not a list"
        )));
    }
    encode(list)
}

/// One watch event as written on a protobuf watch stream
/// (`Content-Type: application/vnd.kubernetes.protobuf;stream=watch`): the
/// 4-byte big-endian length of the message, then
/// [`encode_watch_event_message`]'s bytes (kube's `LengthDelimitedFramer`).
/// `event_type` is `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`
/// (whose object is a `Status`).
pub fn encode_watch_event(event_type: &str, obj: &Value) -> Result<Vec<u8>, ApiError> {
    frame(&encode_watch_event_message(event_type, obj)?)
}

/// `metav1.WatchEvent{type, object: RawExtension{raw: <encode(obj)>}}`
/// written by kube's raw protobuf serializer: no magic and no `Unknown`
/// around the event itself, the object inside it carries both.
pub fn encode_watch_event_message(event_type: &str, obj: &Value) -> Result<Vec<u8>, ApiError> {
    let object = encode(obj)?;
    let mut raw_ext = Vec::with_capacity(object.len() + 8);
    put_bytes(&mut raw_ext, 1, &object);
    let mut out = Vec::with_capacity(raw_ext.len() + event_type.len() + 8);
    put_bytes(&mut out, 1, event_type.as_bytes());
    put_bytes(&mut out, 2, &raw_ext);
    Ok(out)
}

/// Length-delimited framing of a protobuf stream: 4-byte big-endian length,
/// then the message.
pub fn frame(message: &[u8]) -> Result<Vec<u8>, ApiError> {
    let len = u32::try_from(message.len())
        .map_err(|_| ApiError::internal("watch event too large to frame"))?;
    let mut out = Vec::with_capacity(message.len() + 4);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(message);
    Ok(out)
}

type EncodeResult<T> = Result<T, String>;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_key(out: &mut Vec<u8>, tag: u64, wire: u8) {
    put_varint(out, (tag << 3) | u64::from(wire));
}

fn put_bytes(out: &mut Vec<u8>, tag: u64, b: &[u8]) {
    put_key(out, tag, 2);
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn mismatch(field: &str, want: &str, v: &Value) -> String {
    format!("cannot encode field {field:?} as protobuf: expected {want}, got {v}")
}

/// Encode the fields of `message` found in the JSON object `obj`, in tag
/// order. Absent and `null` fields are left out.
fn encode_fields(
    schema: &Schema,
    obj: &Map<String, Value>,
    message: &str,
    depth: usize,
    out: &mut Vec<u8>,
) -> EncodeResult<()> {
    if depth > MAX_DEPTH {
        return Err("proto: exceeded maximum nesting depth".into());
    }
    let Some(msg) = schema.messages.get(message) else {
        return Err(format!("proto: no schema for message {message}"));
    };
    for field in &msg.fields {
        if let FieldType::Inline(child) = &field.ty {
            // Go embeds the struct by value: always written.
            let mut buf = Vec::new();
            encode_fields(schema, obj, child, depth + 1, &mut buf)?;
            put_bytes(out, field.tag, &buf);
            continue;
        }
        let Some(v) = obj.get(&field.json).filter(|v| !v.is_null()) else {
            continue;
        };
        match &field.ty {
            FieldType::Inline(_) => {}
            FieldType::One(ty) => put_value(schema, out, field.tag, ty, v, &field.json, depth)?,
            FieldType::Repeated(ty) => {
                let Value::Array(items) = v else {
                    return Err(mismatch(&field.json, "an array", v));
                };
                for item in items {
                    put_value(schema, out, field.tag, ty, item, &field.json, depth)?;
                }
            }
            FieldType::Map(kt, vt) => {
                let Value::Object(m) = v else {
                    return Err(mismatch(&field.json, "an object", v));
                };
                // Go's generated marshallers sort map keys.
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                for k in keys {
                    let mut entry = Vec::new();
                    put_value(
                        schema,
                        &mut entry,
                        1,
                        kt,
                        &Value::String(k.clone()),
                        &field.json,
                        depth,
                    )?;
                    if let Some(val) = m.get(k) {
                        put_value(schema, &mut entry, 2, vt, val, &field.json, depth)?;
                    }
                    put_bytes(out, field.tag, &entry);
                }
            }
        }
    }
    Ok(())
}

/// Write one value of type `ty` as field `tag`. A `null` is the type's zero
/// value (as Go decodes it into a non-pointer).
fn put_value(
    schema: &Schema,
    out: &mut Vec<u8>,
    tag: u64,
    ty: &Scalar,
    v: &Value,
    field: &str,
    depth: usize,
) -> EncodeResult<()> {
    match ty {
        Scalar::Str => {
            let s = match v {
                Value::String(s) => s.as_str(),
                Value::Null => "",
                _ => return Err(mismatch(field, "a string", v)),
            };
            put_bytes(out, tag, s.as_bytes());
        }
        Scalar::Bytes => {
            let b = match v {
                Value::String(s) => base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .map_err(|e| format!("cannot encode field {field:?} as protobuf: {e}"))?,
                Value::Null => Vec::new(),
                _ => return Err(mismatch(field, "a base64 string", v)),
            };
            put_bytes(out, tag, &b);
        }
        Scalar::Bool => {
            let b = match v {
                Value::Bool(b) => *b,
                Value::Null => false,
                _ => return Err(mismatch(field, "a boolean", v)),
            };
            put_key(out, tag, 0);
            put_varint(out, u64::from(b));
        }
        Scalar::I32 | Scalar::I64 => {
            let n = json_int(v).ok_or_else(|| mismatch(field, "an integer", v))?;
            let n = if *ty == Scalar::I32 {
                i64::from(i32::try_from(n).map_err(|_| mismatch(field, "an int32", v))?)
            } else {
                n
            };
            put_key(out, tag, 0);
            // Go's `uint64(x)`: negative numbers sign-extend to 10 bytes.
            put_varint(out, n as u64);
        }
        Scalar::U32 | Scalar::U64 => {
            let n = match v {
                Value::Null => 0,
                _ => v
                    .as_u64()
                    .ok_or_else(|| mismatch(field, "an unsigned integer", v))?,
            };
            if *ty == Scalar::U32 && u32::try_from(n).is_err() {
                return Err(mismatch(field, "a uint32", v));
            }
            put_key(out, tag, 0);
            put_varint(out, n);
        }
        Scalar::F64 | Scalar::F32 => {
            let f = match v {
                Value::Null => 0.0,
                _ => v.as_f64().ok_or_else(|| mismatch(field, "a number", v))?,
            };
            if *ty == Scalar::F64 {
                put_key(out, tag, 1);
                out.extend_from_slice(&f.to_bits().to_le_bytes());
            } else {
                put_key(out, tag, 5);
                out.extend_from_slice(&(f as f32).to_bits().to_le_bytes());
            }
        }
        Scalar::Msg(m) => {
            let b = message_bytes(schema, v, m, field, depth + 1)?;
            put_bytes(out, tag, &b);
        }
    }
    Ok(())
}

/// An integer JSON value (`null` is 0; integral floats are accepted as Go's
/// decoder would have read them).
fn json_int(v: &Value) -> Option<i64> {
    match v {
        Value::Null => Some(0),
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
                .map(|f| f as i64)
        }),
        _ => None,
    }
}

/// The bytes of a message value, special messages included.
fn message_bytes(
    schema: &Schema,
    v: &Value,
    message: &str,
    field: &str,
    depth: usize,
) -> EncodeResult<Vec<u8>> {
    let mut out = Vec::new();
    match message {
        "meta.v1.Time" | "meta.v1.MicroTime" => {
            // A zero time marshals to an empty message.
            let Some(s) = v.as_str() else {
                if v.is_null() {
                    return Ok(out);
                }
                return Err(mismatch(field, "an RFC 3339 time", v));
            };
            let ts: jiff::Timestamp = s
                .parse()
                .map_err(|e| format!("cannot encode field {field:?} as protobuf: {e}"))?;
            put_key(&mut out, 1, 0);
            put_varint(&mut out, ts.as_second() as u64);
            put_key(&mut out, 2, 0);
            put_varint(&mut out, i64::from(ts.subsec_nanosecond()) as u64);
        }
        "meta.v1.Duration" => {
            let ns = match v {
                Value::String(s) => {
                    parse_go_duration(s).ok_or_else(|| format!("time: invalid duration {s:?}"))?
                }
                Value::Null => 0,
                _ => return Err(mismatch(field, "a duration string", v)),
            };
            put_key(&mut out, 1, 0);
            put_varint(&mut out, ns as u64);
        }
        "resource.Quantity" => {
            let s = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Null => "0".to_string(),
                _ => return Err(mismatch(field, "a quantity", v)),
            };
            put_bytes(&mut out, 1, s.as_bytes());
        }
        "intstr.IntOrString" => {
            // gogo writes all three fields.
            let (ty, int_val, str_val) = match v {
                Value::String(s) => (1u64, 0i64, s.as_str()),
                _ => {
                    let n = json_int(v).ok_or_else(|| mismatch(field, "an int or string", v))?;
                    let n = i32::try_from(n).map_err(|_| mismatch(field, "an int32", v))?;
                    (0, i64::from(n), "")
                }
            };
            put_key(&mut out, 1, 0);
            put_varint(&mut out, ty);
            put_key(&mut out, 2, 0);
            put_varint(&mut out, int_val as u64);
            put_bytes(&mut out, 3, str_val.as_bytes());
        }
        "runtime.RawExtension" | "meta.v1.FieldsV1" | "apiextensions.v1.Json" => {
            let raw = serde_json::to_vec(v).map_err(|e| e.to_string())?;
            put_bytes(&mut out, 1, &raw);
        }
        "apiextensions.v1.JsonSchemaPropsOrArray" => {
            let props = Scalar::Msg("apiextensions.v1.JsonSchemaProps".into());
            match v {
                Value::Array(items) => {
                    for item in items {
                        put_value(schema, &mut out, 2, &props, item, field, depth)?;
                    }
                }
                _ => put_value(schema, &mut out, 1, &props, v, field, depth)?,
            }
        }
        "apiextensions.v1.JsonSchemaPropsOrBool" => {
            let props = Scalar::Msg("apiextensions.v1.JsonSchemaProps".into());
            // Go: `Allows` is true for a schema, and always written.
            put_key(&mut out, 1, 0);
            match v {
                Value::Bool(b) => put_varint(&mut out, u64::from(*b)),
                _ => {
                    put_varint(&mut out, 1);
                    put_value(schema, &mut out, 2, &props, v, field, depth)?;
                }
            }
        }
        "apiextensions.v1.JsonSchemaPropsOrStringArray" => {
            let props = Scalar::Msg("apiextensions.v1.JsonSchemaProps".into());
            match v {
                Value::Array(items) => {
                    for item in items {
                        put_value(schema, &mut out, 2, &Scalar::Str, item, field, depth)?;
                    }
                }
                _ => put_value(schema, &mut out, 1, &props, v, field, depth)?,
            }
        }
        _ => {
            let is_list = schema.messages.get(message).is_some_and(|m| m.list);
            if is_list {
                let mut wrapper = Map::new();
                wrapper.insert("items".into(), v.clone());
                encode_fields(schema, &wrapper, message, depth, &mut out)?;
            } else {
                match v {
                    Value::Object(m) => encode_fields(schema, m, message, depth, &mut out)?,
                    Value::Null => {}
                    _ => return Err(mismatch(field, "an object", v)),
                }
            }
        }
    }
    Ok(out)
}

/// Go's `time.ParseDuration` (`1h2m3.5s`, `300ms`, `-1.5µs`) in nanoseconds.
fn parse_go_duration(s: &str) -> Option<i64> {
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let num: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += num * unit;
    }
    if total > i64::MAX as f64 {
        return None;
    }
    let ns = total.round() as i64;
    Some(if neg { -ns } else { ns })
}

/// The message table (see the module doc). Lines: `=<apiVersion> <Kind>
/// <message>` maps a kind to its message; `<message> [!list]
/// <jsonName>=<field number>:<type> …` describes one message, with types
/// `s` string, `b` bool, `i32`, `i64`, `u32`, `u64`, `f64`, `f32`, `y`
/// bytes, `@<message>`, `*<type>` repeated, `{<key>,<value>}` map and
/// `^@<message>` an embedded struct whose fields are inlined.
/// Generated from k8s-pb 0.9 and k8s-openapi 0.29 (v1_37); do not edit by hand.
const SCHEMA_TEXT: &str = r#"
=v1 Namespace core.v1.Namespace
=v1 ConfigMap core.v1.ConfigMap
=v1 Secret core.v1.Secret
=v1 Service core.v1.Service
=v1 Endpoints core.v1.Endpoints
=v1 ServiceAccount core.v1.ServiceAccount
=v1 Event core.v1.Event
=v1 LimitRange core.v1.LimitRange
=v1 ResourceQuota core.v1.ResourceQuota
=v1 PersistentVolumeClaim core.v1.PersistentVolumeClaim
=v1 PersistentVolume core.v1.PersistentVolume
=v1 PodTemplate core.v1.PodTemplate
=v1 ReplicationController core.v1.ReplicationController
=v1 Pod core.v1.Pod
=v1 Node core.v1.Node
=v1 Binding core.v1.Binding
=apps/v1 Deployment apps.v1.Deployment
=apps/v1 ReplicaSet apps.v1.ReplicaSet
=apps/v1 StatefulSet apps.v1.StatefulSet
=apps/v1 DaemonSet apps.v1.DaemonSet
=apps/v1 ControllerRevision apps.v1.ControllerRevision
=batch/v1 Job batch.v1.Job
=batch/v1 CronJob batch.v1.CronJob
=autoscaling/v1 HorizontalPodAutoscaler autoscaling.v1.HorizontalPodAutoscaler
=autoscaling/v1 Scale autoscaling.v1.Scale
=autoscaling/v2 HorizontalPodAutoscaler autoscaling.v2.HorizontalPodAutoscaler
=networking.k8s.io/v1 Ingress networking.v1.Ingress
=networking.k8s.io/v1 IngressClass networking.v1.IngressClass
=networking.k8s.io/v1 NetworkPolicy networking.v1.NetworkPolicy
=policy/v1 PodDisruptionBudget policy.v1.PodDisruptionBudget
=policy/v1 Eviction policy.v1.Eviction
=rbac.authorization.k8s.io/v1 Role rbac.v1.Role
=rbac.authorization.k8s.io/v1 RoleBinding rbac.v1.RoleBinding
=rbac.authorization.k8s.io/v1 ClusterRole rbac.v1.ClusterRole
=rbac.authorization.k8s.io/v1 ClusterRoleBinding rbac.v1.ClusterRoleBinding
=coordination.k8s.io/v1 Lease coordination.v1.Lease
=events.k8s.io/v1 Event events.v1.Event
=discovery.k8s.io/v1 EndpointSlice discovery.v1.EndpointSlice
=authorization.k8s.io/v1 SelfSubjectAccessReview authorization.v1.SelfSubjectAccessReview
=authorization.k8s.io/v1 SelfSubjectRulesReview authorization.v1.SelfSubjectRulesReview
=authorization.k8s.io/v1 SubjectAccessReview authorization.v1.SubjectAccessReview
=authorization.k8s.io/v1 LocalSubjectAccessReview authorization.v1.LocalSubjectAccessReview
=authentication.k8s.io/v1 SelfSubjectReview authentication.v1.SelfSubjectReview
=authentication.k8s.io/v1 TokenReview authentication.v1.TokenReview
=authentication.k8s.io/v1 TokenRequest authentication.v1.TokenRequest
=apiextensions.k8s.io/v1 CustomResourceDefinition apiextensions.v1.CustomResourceDefinition
=apiregistration.k8s.io/v1 APIService apiregistration.v1.APIService
=v1 ComponentStatus core.v1.ComponentStatus
=resource.k8s.io/v1 DeviceClass resource.v1.DeviceClass
=resource.k8s.io/v1 ResourceClaim resource.v1.ResourceClaim
=resource.k8s.io/v1 ResourceClaimTemplate resource.v1.ResourceClaimTemplate
=resource.k8s.io/v1 ResourceSlice resource.v1.ResourceSlice
=flowcontrol.apiserver.k8s.io/v1 FlowSchema flowcontrol.v1.FlowSchema
=flowcontrol.apiserver.k8s.io/v1 PriorityLevelConfiguration flowcontrol.v1.PriorityLevelConfiguration
=networking.k8s.io/v1 IPAddress networking.v1.IPAddress
=networking.k8s.io/v1 ServiceCIDR networking.v1.ServiceCIDR
=certificates.k8s.io/v1 CertificateSigningRequest certificates.v1.CertificateSigningRequest
=scheduling.k8s.io/v1 PriorityClass scheduling.v1.PriorityClass
=node.k8s.io/v1 RuntimeClass node.v1.RuntimeClass
=storage.k8s.io/v1 StorageClass storage.v1.StorageClass
=storage.k8s.io/v1 CSIDriver storage.v1.CSIDriver
=storage.k8s.io/v1 CSINode storage.v1.CSINode
=storage.k8s.io/v1 CSIStorageCapacity storage.v1.CSIStorageCapacity
=storage.k8s.io/v1 VolumeAttachment storage.v1.VolumeAttachment
=storage.k8s.io/v1 VolumeAttributesClass storage.v1.VolumeAttributesClass
=admissionregistration.k8s.io/v1 MutatingWebhookConfiguration admissionregistration.v1.MutatingWebhookConfiguration
=admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration admissionregistration.v1.ValidatingWebhookConfiguration
=admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy admissionregistration.v1.ValidatingAdmissionPolicy
=admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding admissionregistration.v1.ValidatingAdmissionPolicyBinding
=v1 NamespaceList core.v1.NamespaceList
=v1 ConfigMapList core.v1.ConfigMapList
=v1 SecretList core.v1.SecretList
=v1 ServiceList core.v1.ServiceList
=v1 EndpointsList core.v1.EndpointsList
=v1 ServiceAccountList core.v1.ServiceAccountList
=v1 EventList core.v1.EventList
=v1 LimitRangeList core.v1.LimitRangeList
=v1 ResourceQuotaList core.v1.ResourceQuotaList
=v1 PersistentVolumeClaimList core.v1.PersistentVolumeClaimList
=v1 PersistentVolumeList core.v1.PersistentVolumeList
=v1 PodTemplateList core.v1.PodTemplateList
=v1 ReplicationControllerList core.v1.ReplicationControllerList
=v1 PodList core.v1.PodList
=v1 NodeList core.v1.NodeList
=apps/v1 DeploymentList apps.v1.DeploymentList
=apps/v1 ReplicaSetList apps.v1.ReplicaSetList
=apps/v1 StatefulSetList apps.v1.StatefulSetList
=apps/v1 DaemonSetList apps.v1.DaemonSetList
=apps/v1 ControllerRevisionList apps.v1.ControllerRevisionList
=batch/v1 JobList batch.v1.JobList
=batch/v1 CronJobList batch.v1.CronJobList
=autoscaling/v1 HorizontalPodAutoscalerList autoscaling.v1.HorizontalPodAutoscalerList
=autoscaling/v2 HorizontalPodAutoscalerList autoscaling.v2.HorizontalPodAutoscalerList
=networking.k8s.io/v1 IngressList networking.v1.IngressList
=networking.k8s.io/v1 IngressClassList networking.v1.IngressClassList
=networking.k8s.io/v1 NetworkPolicyList networking.v1.NetworkPolicyList
=policy/v1 PodDisruptionBudgetList policy.v1.PodDisruptionBudgetList
=rbac.authorization.k8s.io/v1 RoleList rbac.v1.RoleList
=rbac.authorization.k8s.io/v1 RoleBindingList rbac.v1.RoleBindingList
=rbac.authorization.k8s.io/v1 ClusterRoleList rbac.v1.ClusterRoleList
=rbac.authorization.k8s.io/v1 ClusterRoleBindingList rbac.v1.ClusterRoleBindingList
=coordination.k8s.io/v1 LeaseList coordination.v1.LeaseList
=events.k8s.io/v1 EventList events.v1.EventList
=discovery.k8s.io/v1 EndpointSliceList discovery.v1.EndpointSliceList
=apiextensions.k8s.io/v1 CustomResourceDefinitionList apiextensions.v1.CustomResourceDefinitionList
=apiregistration.k8s.io/v1 APIServiceList apiregistration.v1.APIServiceList
=v1 ComponentStatusList core.v1.ComponentStatusList
=resource.k8s.io/v1 DeviceClassList resource.v1.DeviceClassList
=resource.k8s.io/v1 ResourceClaimList resource.v1.ResourceClaimList
=resource.k8s.io/v1 ResourceClaimTemplateList resource.v1.ResourceClaimTemplateList
=resource.k8s.io/v1 ResourceSliceList resource.v1.ResourceSliceList
=flowcontrol.apiserver.k8s.io/v1 FlowSchemaList flowcontrol.v1.FlowSchemaList
=flowcontrol.apiserver.k8s.io/v1 PriorityLevelConfigurationList flowcontrol.v1.PriorityLevelConfigurationList
=networking.k8s.io/v1 IPAddressList networking.v1.IPAddressList
=networking.k8s.io/v1 ServiceCIDRList networking.v1.ServiceCIDRList
=certificates.k8s.io/v1 CertificateSigningRequestList certificates.v1.CertificateSigningRequestList
=scheduling.k8s.io/v1 PriorityClassList scheduling.v1.PriorityClassList
=node.k8s.io/v1 RuntimeClassList node.v1.RuntimeClassList
=storage.k8s.io/v1 StorageClassList storage.v1.StorageClassList
=storage.k8s.io/v1 CSIDriverList storage.v1.CSIDriverList
=storage.k8s.io/v1 CSINodeList storage.v1.CSINodeList
=storage.k8s.io/v1 CSIStorageCapacityList storage.v1.CSIStorageCapacityList
=storage.k8s.io/v1 VolumeAttachmentList storage.v1.VolumeAttachmentList
=storage.k8s.io/v1 VolumeAttributesClassList storage.v1.VolumeAttributesClassList
=admissionregistration.k8s.io/v1 MutatingWebhookConfigurationList admissionregistration.v1.MutatingWebhookConfigurationList
=admissionregistration.k8s.io/v1 ValidatingWebhookConfigurationList admissionregistration.v1.ValidatingWebhookConfigurationList
=admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyList admissionregistration.v1.ValidatingAdmissionPolicyList
=admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBindingList admissionregistration.v1.ValidatingAdmissionPolicyBindingList
=v1 Status meta.v1.Status
=meta.k8s.io/v1 PartialObjectMetadata meta.v1.PartialObjectMetadata
=meta.k8s.io/v1 PartialObjectMetadataList meta.v1.PartialObjectMetadataList
=federation/v1beta1 Cluster federation.v1beta1.Cluster
=federation/v1beta1 ClusterList federation.v1beta1.ClusterList
admissionregistration.v1.AuditAnnotation key=1:s valueExpression=2:s
admissionregistration.v1.ExpressionWarning fieldRef=2:s warning=3:s
admissionregistration.v1.MatchCondition name=1:s expression=2:s
admissionregistration.v1.MatchResources namespaceSelector=1:@meta.v1.LabelSelector objectSelector=2:@meta.v1.LabelSelector resourceRules=3:*@admissionregistration.v1.NamedRuleWithOperations excludeResourceRules=4:*@admissionregistration.v1.NamedRuleWithOperations matchPolicy=7:s
admissionregistration.v1.MutatingWebhook name=1:s clientConfig=2:@admissionregistration.v1.WebhookClientConfig rules=3:*@admissionregistration.v1.RuleWithOperations failurePolicy=4:s namespaceSelector=5:@meta.v1.LabelSelector sideEffects=6:s timeoutSeconds=7:i32 admissionReviewVersions=8:*s matchPolicy=9:s reinvocationPolicy=10:s objectSelector=11:@meta.v1.LabelSelector matchConditions=12:*@admissionregistration.v1.MatchCondition
admissionregistration.v1.MutatingWebhookConfiguration metadata=1:@meta.v1.ObjectMeta webhooks=2:*@admissionregistration.v1.MutatingWebhook
admissionregistration.v1.MutatingWebhookConfigurationList metadata=1:@meta.v1.ListMeta items=2:*@admissionregistration.v1.MutatingWebhookConfiguration
admissionregistration.v1.NamedRuleWithOperations resourceNames=1:*s rule_with_operations=2:^@admissionregistration.v1.RuleWithOperations
admissionregistration.v1.ParamKind apiVersion=1:s kind=2:s
admissionregistration.v1.ParamRef name=1:s namespace=2:s selector=3:@meta.v1.LabelSelector parameterNotFoundAction=4:s
admissionregistration.v1.Rule apiGroups=1:*s apiVersions=2:*s resources=3:*s scope=4:s
admissionregistration.v1.RuleWithOperations operations=1:*s rule=2:^@admissionregistration.v1.Rule
admissionregistration.v1.ServiceReference namespace=1:s name=2:s path=3:s port=4:i32
admissionregistration.v1.TypeChecking expressionWarnings=1:*@admissionregistration.v1.ExpressionWarning
admissionregistration.v1.ValidatingAdmissionPolicy metadata=1:@meta.v1.ObjectMeta spec=2:@admissionregistration.v1.ValidatingAdmissionPolicySpec status=3:@admissionregistration.v1.ValidatingAdmissionPolicyStatus
admissionregistration.v1.ValidatingAdmissionPolicyBinding metadata=1:@meta.v1.ObjectMeta spec=2:@admissionregistration.v1.ValidatingAdmissionPolicyBindingSpec
admissionregistration.v1.ValidatingAdmissionPolicyBindingList metadata=1:@meta.v1.ListMeta items=2:*@admissionregistration.v1.ValidatingAdmissionPolicyBinding
admissionregistration.v1.ValidatingAdmissionPolicyBindingSpec policyName=1:s paramRef=2:@admissionregistration.v1.ParamRef matchResources=3:@admissionregistration.v1.MatchResources validationActions=4:*s
admissionregistration.v1.ValidatingAdmissionPolicyList metadata=1:@meta.v1.ListMeta items=2:*@admissionregistration.v1.ValidatingAdmissionPolicy
admissionregistration.v1.ValidatingAdmissionPolicySpec paramKind=1:@admissionregistration.v1.ParamKind matchConstraints=2:@admissionregistration.v1.MatchResources validations=3:*@admissionregistration.v1.Validation failurePolicy=4:s auditAnnotations=5:*@admissionregistration.v1.AuditAnnotation matchConditions=6:*@admissionregistration.v1.MatchCondition variables=7:*@admissionregistration.v1.Variable
admissionregistration.v1.ValidatingAdmissionPolicyStatus observedGeneration=1:i64 typeChecking=2:@admissionregistration.v1.TypeChecking conditions=3:*@meta.v1.Condition
admissionregistration.v1.ValidatingWebhook name=1:s clientConfig=2:@admissionregistration.v1.WebhookClientConfig rules=3:*@admissionregistration.v1.RuleWithOperations failurePolicy=4:s namespaceSelector=5:@meta.v1.LabelSelector sideEffects=6:s timeoutSeconds=7:i32 admissionReviewVersions=8:*s matchPolicy=9:s objectSelector=10:@meta.v1.LabelSelector matchConditions=11:*@admissionregistration.v1.MatchCondition
admissionregistration.v1.ValidatingWebhookConfiguration metadata=1:@meta.v1.ObjectMeta webhooks=2:*@admissionregistration.v1.ValidatingWebhook
admissionregistration.v1.ValidatingWebhookConfigurationList metadata=1:@meta.v1.ListMeta items=2:*@admissionregistration.v1.ValidatingWebhookConfiguration
admissionregistration.v1.Validation expression=1:s message=2:s reason=3:s messageExpression=4:s
admissionregistration.v1.Variable name=1:s expression=2:s
admissionregistration.v1.WebhookClientConfig service=1:@admissionregistration.v1.ServiceReference caBundle=2:y url=3:s
apiextensions.v1.CustomResourceColumnDefinition name=1:s type=2:s format=3:s description=4:s priority=5:i32 jsonPath=6:s
apiextensions.v1.CustomResourceConversion strategy=1:s webhook=2:@apiextensions.v1.WebhookConversion
apiextensions.v1.CustomResourceDefinition metadata=1:@meta.v1.ObjectMeta spec=2:@apiextensions.v1.CustomResourceDefinitionSpec status=3:@apiextensions.v1.CustomResourceDefinitionStatus
apiextensions.v1.CustomResourceDefinitionCondition type=1:s status=2:s lastTransitionTime=3:@meta.v1.Time reason=4:s message=5:s observedGeneration=6:i64
apiextensions.v1.CustomResourceDefinitionList metadata=1:@meta.v1.ListMeta items=2:*@apiextensions.v1.CustomResourceDefinition
apiextensions.v1.CustomResourceDefinitionNames plural=1:s singular=2:s shortNames=3:*s kind=4:s listKind=5:s categories=6:*s
apiextensions.v1.CustomResourceDefinitionSpec group=1:s names=3:@apiextensions.v1.CustomResourceDefinitionNames scope=4:s versions=7:*@apiextensions.v1.CustomResourceDefinitionVersion conversion=9:@apiextensions.v1.CustomResourceConversion preserveUnknownFields=10:b
apiextensions.v1.CustomResourceDefinitionStatus conditions=1:*@apiextensions.v1.CustomResourceDefinitionCondition acceptedNames=2:@apiextensions.v1.CustomResourceDefinitionNames storedVersions=3:*s observedGeneration=4:i64
apiextensions.v1.CustomResourceDefinitionVersion name=1:s served=2:b storage=3:b schema=4:@apiextensions.v1.CustomResourceValidation subresources=5:@apiextensions.v1.CustomResourceSubresources additionalPrinterColumns=6:*@apiextensions.v1.CustomResourceColumnDefinition deprecated=7:b deprecationWarning=8:s selectableFields=9:*@apiextensions.v1.SelectableField
apiextensions.v1.CustomResourceSubresourceScale specReplicasPath=1:s statusReplicasPath=2:s labelSelectorPath=3:s
apiextensions.v1.CustomResourceSubresourceStatus
apiextensions.v1.CustomResourceSubresources status=1:@apiextensions.v1.CustomResourceSubresourceStatus scale=2:@apiextensions.v1.CustomResourceSubresourceScale
apiextensions.v1.CustomResourceValidation openAPIV3Schema=1:@apiextensions.v1.JsonSchemaProps
apiextensions.v1.ExternalDocumentation description=1:s url=2:s
apiextensions.v1.JsonSchemaProps id=1:s $schema=2:s $ref=3:s description=4:s type=5:s format=6:s title=7:s default=8:@apiextensions.v1.Json maximum=9:f64 exclusiveMaximum=10:b minimum=11:f64 exclusiveMinimum=12:b maxLength=13:i64 minLength=14:i64 pattern=15:s maxItems=16:i64 minItems=17:i64 uniqueItems=18:b multipleOf=19:f64 enum=20:*@apiextensions.v1.Json maxProperties=21:i64 minProperties=22:i64 required=23:*s items=24:@apiextensions.v1.JsonSchemaPropsOrArray allOf=25:*@apiextensions.v1.JsonSchemaProps oneOf=26:*@apiextensions.v1.JsonSchemaProps anyOf=27:*@apiextensions.v1.JsonSchemaProps not=28:@apiextensions.v1.JsonSchemaProps properties=29:{s,@apiextensions.v1.JsonSchemaProps} additionalProperties=30:@apiextensions.v1.JsonSchemaPropsOrBool patternProperties=31:{s,@apiextensions.v1.JsonSchemaProps} dependencies=32:{s,@apiextensions.v1.JsonSchemaPropsOrStringArray} additionalItems=33:@apiextensions.v1.JsonSchemaPropsOrBool definitions=34:{s,@apiextensions.v1.JsonSchemaProps} externalDocs=35:@apiextensions.v1.ExternalDocumentation example=36:@apiextensions.v1.Json nullable=37:b x-kubernetes-preserve-unknown-fields=38:b x-kubernetes-embedded-resource=39:b x-kubernetes-int-or-string=40:b x-kubernetes-list-map-keys=41:*s x-kubernetes-list-type=42:s x-kubernetes-map-type=43:s x-kubernetes-validations=44:*@apiextensions.v1.ValidationRule
apiextensions.v1.JsonSchemaPropsOrArray schema=1:@apiextensions.v1.JsonSchemaProps jSonSchemas=2:*@apiextensions.v1.JsonSchemaProps
apiextensions.v1.JsonSchemaPropsOrBool allows=1:b schema=2:@apiextensions.v1.JsonSchemaProps
apiextensions.v1.JsonSchemaPropsOrStringArray schema=1:@apiextensions.v1.JsonSchemaProps property=2:*s
apiextensions.v1.SelectableField jsonPath=1:s
apiextensions.v1.ServiceReference namespace=1:s name=2:s path=3:s port=4:i32
apiextensions.v1.ValidationRule rule=1:s message=2:s messageExpression=3:s reason=4:s fieldPath=5:s optionalOldSelf=6:b
apiextensions.v1.WebhookClientConfig service=1:@apiextensions.v1.ServiceReference caBundle=2:y url=3:s
apiextensions.v1.WebhookConversion clientConfig=2:@apiextensions.v1.WebhookClientConfig conversionReviewVersions=3:*s
apiregistration.v1.APIService metadata=1:@meta.v1.ObjectMeta spec=2:@apiregistration.v1.APIServiceSpec status=3:@apiregistration.v1.APIServiceStatus
apiregistration.v1.APIServiceCondition type=1:s status=2:s lastTransitionTime=3:@meta.v1.Time reason=4:s message=5:s
apiregistration.v1.APIServiceList metadata=1:@meta.v1.ListMeta items=2:*@apiregistration.v1.APIService
apiregistration.v1.APIServiceSpec service=1:@apiregistration.v1.ServiceReference group=2:s version=3:s insecureSkipTLSVerify=4:b caBundle=5:y groupPriorityMinimum=7:i32 versionPriority=8:i32
apiregistration.v1.APIServiceStatus conditions=1:*@apiregistration.v1.APIServiceCondition
apiregistration.v1.ServiceReference namespace=1:s name=2:s port=3:i32
apps.v1.ControllerRevision metadata=1:@meta.v1.ObjectMeta data=2:@runtime.RawExtension revision=3:i64
apps.v1.ControllerRevisionList metadata=1:@meta.v1.ListMeta items=2:*@apps.v1.ControllerRevision
apps.v1.DaemonSet metadata=1:@meta.v1.ObjectMeta spec=2:@apps.v1.DaemonSetSpec status=3:@apps.v1.DaemonSetStatus
apps.v1.DaemonSetCondition type=1:s status=2:s lastTransitionTime=3:@meta.v1.Time reason=4:s message=5:s
apps.v1.DaemonSetList metadata=1:@meta.v1.ListMeta items=2:*@apps.v1.DaemonSet
apps.v1.DaemonSetSpec selector=1:@meta.v1.LabelSelector template=2:@core.v1.PodTemplateSpec updateStrategy=3:@apps.v1.DaemonSetUpdateStrategy minReadySeconds=4:i32 revisionHistoryLimit=6:i32
apps.v1.DaemonSetStatus currentNumberScheduled=1:i32 numberMisscheduled=2:i32 desiredNumberScheduled=3:i32 numberReady=4:i32 observedGeneration=5:i64 updatedNumberScheduled=6:i32 numberAvailable=7:i32 numberUnavailable=8:i32 collisionCount=9:i32 conditions=10:*@apps.v1.DaemonSetCondition
apps.v1.DaemonSetUpdateStrategy type=1:s rollingUpdate=2:@apps.v1.RollingUpdateDaemonSet
apps.v1.Deployment metadata=1:@meta.v1.ObjectMeta spec=2:@apps.v1.DeploymentSpec status=3:@apps.v1.DeploymentStatus
apps.v1.DeploymentCondition type=1:s status=2:s reason=4:s message=5:s lastUpdateTime=6:@meta.v1.Time lastTransitionTime=7:@meta.v1.Time
apps.v1.DeploymentList metadata=1:@meta.v1.ListMeta items=2:*@apps.v1.Deployment
apps.v1.DeploymentSpec replicas=1:i32 selector=2:@meta.v1.LabelSelector template=3:@core.v1.PodTemplateSpec strategy=4:@apps.v1.DeploymentStrategy minReadySeconds=5:i32 revisionHistoryLimit=6:i32 paused=7:b progressDeadlineSeconds=9:i32
apps.v1.DeploymentStatus observedGeneration=1:i64 replicas=2:i32 updatedReplicas=3:i32 availableReplicas=4:i32 unavailableReplicas=5:i32 conditions=6:*@apps.v1.DeploymentCondition readyReplicas=7:i32 collisionCount=8:i32 terminatingReplicas=9:i32
apps.v1.DeploymentStrategy type=1:s rollingUpdate=2:@apps.v1.RollingUpdateDeployment
apps.v1.ReplicaSet metadata=1:@meta.v1.ObjectMeta spec=2:@apps.v1.ReplicaSetSpec status=3:@apps.v1.ReplicaSetStatus
apps.v1.ReplicaSetCondition type=1:s status=2:s lastTransitionTime=3:@meta.v1.Time reason=4:s message=5:s
apps.v1.ReplicaSetList metadata=1:@meta.v1.ListMeta items=2:*@apps.v1.ReplicaSet
apps.v1.ReplicaSetSpec replicas=1:i32 selector=2:@meta.v1.LabelSelector template=3:@core.v1.PodTemplateSpec minReadySeconds=4:i32
apps.v1.ReplicaSetStatus replicas=1:i32 fullyLabeledReplicas=2:i32 observedGeneration=3:i64 readyReplicas=4:i32 availableReplicas=5:i32 conditions=6:*@apps.v1.ReplicaSetCondition terminatingReplicas=7:i32
apps.v1.RollingUpdateDaemonSet maxUnavailable=1:@intstr.IntOrString maxSurge=2:@intstr.IntOrString
apps.v1.RollingUpdateDeployment maxUnavailable=1:@intstr.IntOrString maxSurge=2:@intstr.IntOrString
apps.v1.RollingUpdateStatefulSetStrategy partition=1:i32 maxUnavailable=2:@intstr.IntOrString
apps.v1.StatefulSet metadata=1:@meta.v1.ObjectMeta spec=2:@apps.v1.StatefulSetSpec status=3:@apps.v1.StatefulSetStatus
apps.v1.StatefulSetCondition type=1:s status=2:s lastTransitionTime=3:@meta.v1.Time reason=4:s message=5:s
apps.v1.StatefulSetList metadata=1:@meta.v1.ListMeta items=2:*@apps.v1.StatefulSet
apps.v1.StatefulSetOrdinals start=1:i32
apps.v1.StatefulSetPersistentVolumeClaimRetentionPolicy whenDeleted=1:s whenScaled=2:s
apps.v1.StatefulSetSpec replicas=1:i32 selector=2:@meta.v1.LabelSelector template=3:@core.v1.PodTemplateSpec volumeClaimTemplates=4:*@core.v1.PersistentVolumeClaim serviceName=5:s podManagementPolicy=6:s updateStrategy=7:@apps.v1.StatefulSetUpdateStrategy revisionHistoryLimit=8:i32 minReadySeconds=9:i32 persistentVolumeClaimRetentionPolicy=10:@apps.v1.StatefulSetPersistentVolumeClaimRetentionPolicy ordinals=11:@apps.v1.StatefulSetOrdinals
apps.v1.StatefulSetStatus observedGeneration=1:i64 replicas=2:i32 readyReplicas=3:i32 currentReplicas=4:i32 updatedReplicas=5:i32 currentRevision=6:s updateRevision=7:s collisionCount=9:i32 conditions=10:*@apps.v1.StatefulSetCondition availableReplicas=11:i32
apps.v1.StatefulSetUpdateStrategy type=1:s rollingUpdate=2:@apps.v1.RollingUpdateStatefulSetStrategy
authentication.v1.BoundObjectReference kind=1:s apiVersion=2:s name=3:s uid=4:s
authentication.v1.ExtraValue !list items=1:*s
authentication.v1.SelfSubjectReview metadata=1:@meta.v1.ObjectMeta status=2:@authentication.v1.SelfSubjectReviewStatus
authentication.v1.SelfSubjectReviewStatus userInfo=1:@authentication.v1.UserInfo
authentication.v1.TokenRequest metadata=1:@meta.v1.ObjectMeta spec=2:@authentication.v1.TokenRequestSpec status=3:@authentication.v1.TokenRequestStatus
authentication.v1.TokenRequestSpec audiences=1:*s boundObjectRef=3:@authentication.v1.BoundObjectReference expirationSeconds=4:i64
authentication.v1.TokenRequestStatus token=1:s expirationTimestamp=2:@meta.v1.Time
authentication.v1.TokenReview metadata=1:@meta.v1.ObjectMeta spec=2:@authentication.v1.TokenReviewSpec status=3:@authentication.v1.TokenReviewStatus
authentication.v1.TokenReviewSpec token=1:s audiences=2:*s
authentication.v1.TokenReviewStatus authenticated=1:b user=2:@authentication.v1.UserInfo error=3:s audiences=4:*s
authentication.v1.UserInfo username=1:s uid=2:s groups=3:*s extra=4:{s,@authentication.v1.ExtraValue}
authorization.v1.ExtraValue !list items=1:*s
authorization.v1.FieldSelectorAttributes rawSelector=1:s requirements=2:*@meta.v1.FieldSelectorRequirement
authorization.v1.LabelSelectorAttributes rawSelector=1:s requirements=2:*@meta.v1.LabelSelectorRequirement
authorization.v1.LocalSubjectAccessReview metadata=1:@meta.v1.ObjectMeta spec=2:@authorization.v1.SubjectAccessReviewSpec status=3:@authorization.v1.SubjectAccessReviewStatus
authorization.v1.NonResourceAttributes path=1:s verb=2:s
authorization.v1.NonResourceRule verbs=1:*s nonResourceURLs=2:*s
authorization.v1.ResourceAttributes namespace=1:s verb=2:s group=3:s version=4:s resource=5:s subresource=6:s name=7:s fieldSelector=8:@authorization.v1.FieldSelectorAttributes labelSelector=9:@authorization.v1.LabelSelectorAttributes
authorization.v1.ResourceRule verbs=1:*s apiGroups=2:*s resources=3:*s resourceNames=4:*s
authorization.v1.SelfSubjectAccessReview metadata=1:@meta.v1.ObjectMeta spec=2:@authorization.v1.SelfSubjectAccessReviewSpec status=3:@authorization.v1.SubjectAccessReviewStatus
authorization.v1.SelfSubjectAccessReviewSpec resourceAttributes=1:@authorization.v1.ResourceAttributes nonResourceAttributes=2:@authorization.v1.NonResourceAttributes
authorization.v1.SelfSubjectRulesReview metadata=1:@meta.v1.ObjectMeta spec=2:@authorization.v1.SelfSubjectRulesReviewSpec status=3:@authorization.v1.SubjectRulesReviewStatus
authorization.v1.SelfSubjectRulesReviewSpec namespace=1:s
authorization.v1.SubjectAccessReview metadata=1:@meta.v1.ObjectMeta spec=2:@authorization.v1.SubjectAccessReviewSpec status=3:@authorization.v1.SubjectAccessReviewStatus
authorization.v1.SubjectAccessReviewSpec resourceAttributes=1:@authorization.v1.ResourceAttributes nonResourceAttributes=2:@authorization.v1.NonResourceAttributes user=3:s groups=4:*s extra=5:{s,@authorization.v1.ExtraValue} uid=6:s
authorization.v1.SubjectAccessReviewStatus allowed=1:b reason=2:s evaluationError=3:s denied=4:b
authorization.v1.SubjectRulesReviewStatus resourceRules=1:*@authorization.v1.ResourceRule nonResourceRules=2:*@authorization.v1.NonResourceRule incomplete=3:b evaluationError=4:s
autoscaling.v1.CrossVersionObjectReference kind=1:s name=2:s apiVersion=3:s
autoscaling.v1.HorizontalPodAutoscaler metadata=1:@meta.v1.ObjectMeta spec=2:@autoscaling.v1.HorizontalPodAutoscalerSpec status=3:@autoscaling.v1.HorizontalPodAutoscalerStatus
autoscaling.v1.HorizontalPodAutoscalerList metadata=1:@meta.v1.ListMeta items=2:*@autoscaling.v1.HorizontalPodAutoscaler
autoscaling.v1.HorizontalPodAutoscalerSpec scaleTargetRef=1:@autoscaling.v1.CrossVersionObjectReference minReplicas=2:i32 maxReplicas=3:i32 targetCPUUtilizationPercentage=4:i32
autoscaling.v1.HorizontalPodAutoscalerStatus observedGeneration=1:i64 lastScaleTime=2:@meta.v1.Time currentReplicas=3:i32 desiredReplicas=4:i32 currentCPUUtilizationPercentage=5:i32
autoscaling.v1.Scale metadata=1:@meta.v1.ObjectMeta spec=2:@autoscaling.v1.ScaleSpec status=3:@autoscaling.v1.ScaleStatus
autoscaling.v1.ScaleSpec replicas=1:i32
autoscaling.v1.ScaleStatus replicas=1:i32 selector=2:s
autoscaling.v2.ContainerResourceMetricSource name=1:s target=2:@autoscaling.v2.MetricTarget container=3:s
autoscaling.v2.ContainerResourceMetricStatus name=1:s current=2:@autoscaling.v2.MetricValueStatus container=3:s
autoscaling.v2.CrossVersionObjectReference kind=1:s name=2:s apiVersion=3:s
autoscaling.v2.ExternalMetricSource metric=1:@autoscaling.v2.MetricIdentifier target=2:@autoscaling.v2.MetricTarget
autoscaling.v2.ExternalMetricStatus metric=1:@autoscaling.v2.MetricIdentifier current=2:@autoscaling.v2.MetricValueStatus
autoscaling.v2.HorizontalPodAutoscaler metadata=1:@meta.v1.ObjectMeta spec=2:@autoscaling.v2.HorizontalPodAutoscalerSpec status=3:@autoscaling.v2.HorizontalPodAutoscalerStatus
autoscaling.v2.HorizontalPodAutoscalerBehavior scaleUp=1:@autoscaling.v2.HpaScalingRules scaleDown=2:@autoscaling.v2.HpaScalingRules
autoscaling.v2.HorizontalPodAutoscalerCondition type=1:s status=2:s lastTransitionTime=3:@meta.v1.Time reason=4:s message=5:s
autoscaling.v2.HorizontalPodAutoscalerList metadata=1:@meta.v1.ListMeta items=2:*@autoscaling.v2.HorizontalPodAutoscaler
autoscaling.v2.HorizontalPodAutoscalerSpec scaleTargetRef=1:@autoscaling.v2.CrossVersionObjectReference minReplicas=2:i32 maxReplicas=3:i32 metrics=4:*@autoscaling.v2.MetricSpec behavior=5:@autoscaling.v2.HorizontalPodAutoscalerBehavior
autoscaling.v2.HorizontalPodAutoscalerStatus observedGeneration=1:i64 lastScaleTime=2:@meta.v1.Time currentReplicas=3:i32 desiredReplicas=4:i32 currentMetrics=5:*@autoscaling.v2.MetricStatus conditions=6:*@autoscaling.v2.HorizontalPodAutoscalerCondition
autoscaling.v2.HpaScalingPolicy type=1:s value=2:i32 periodSeconds=3:i32
autoscaling.v2.HpaScalingRules selectPolicy=1:s policies=2:*@autoscaling.v2.HpaScalingPolicy stabilizationWindowSeconds=3:i32 tolerance=4:@resource.Quantity
autoscaling.v2.MetricIdentifier name=1:s selector=2:@meta.v1.LabelSelector
autoscaling.v2.MetricSpec type=1:s object=2:@autoscaling.v2.ObjectMetricSource pods=3:@autoscaling.v2.PodsMetricSource resource=4:@autoscaling.v2.ResourceMetricSource external=5:@autoscaling.v2.ExternalMetricSource containerResource=7:@autoscaling.v2.ContainerResourceMetricSource
autoscaling.v2.MetricStatus type=1:s object=2:@autoscaling.v2.ObjectMetricStatus pods=3:@autoscaling.v2.PodsMetricStatus resource=4:@autoscaling.v2.ResourceMetricStatus external=5:@autoscaling.v2.ExternalMetricStatus containerResource=7:@autoscaling.v2.ContainerResourceMetricStatus
autoscaling.v2.MetricTarget type=1:s value=2:@resource.Quantity averageValue=3:@resource.Quantity averageUtilization=4:i32
autoscaling.v2.MetricValueStatus value=1:@resource.Quantity averageValue=2:@resource.Quantity averageUtilization=3:i32
autoscaling.v2.ObjectMetricSource describedObject=1:@autoscaling.v2.CrossVersionObjectReference target=2:@autoscaling.v2.MetricTarget metric=3:@autoscaling.v2.MetricIdentifier
autoscaling.v2.ObjectMetricStatus metric=1:@autoscaling.v2.MetricIdentifier current=2:@autoscaling.v2.MetricValueStatus describedObject=3:@autoscaling.v2.CrossVersionObjectReference
autoscaling.v2.PodsMetricSource metric=1:@autoscaling.v2.MetricIdentifier target=2:@autoscaling.v2.MetricTarget
autoscaling.v2.PodsMetricStatus metric=1:@autoscaling.v2.MetricIdentifier current=2:@autoscaling.v2.MetricValueStatus
autoscaling.v2.ResourceMetricSource name=1:s target=2:@autoscaling.v2.MetricTarget
autoscaling.v2.ResourceMetricStatus name=1:s current=2:@autoscaling.v2.MetricValueStatus
batch.v1.CronJob metadata=1:@meta.v1.ObjectMeta spec=2:@batch.v1.CronJobSpec status=3:@batch.v1.CronJobStatus
batch.v1.CronJobList metadata=1:@meta.v1.ListMeta items=2:*@batch.v1.CronJob
batch.v1.CronJobSpec schedule=1:s startingDeadlineSeconds=2:i64 concurrencyPolicy=3:s suspend=4:b jobTemplate=5:@batch.v1.JobTemplateSpec successfulJobsHistoryLimit=6:i32 failedJobsHistoryLimit=7:i32 timeZone=8:s
batch.v1.CronJobStatus active=1:*@core.v1.ObjectReference lastScheduleTime=4:@meta.v1.Time lastSuccessfulTime=5:@meta.v1.Time
batch.v1.Job metadata=1:@meta.v1.ObjectMeta spec=2:@batch.v1.JobSpec status=3:@batch.v1.JobStatus
batch.v1.JobCondition type=1:s status=2:s lastProbeTime=3:@meta.v1.Time lastTransitionTime=4:@meta.v1.Time reason=5:s message=6:s
batch.v1.JobList metadata=1:@meta.v1.ListMeta items=2:*@batch.v1.Job
batch.v1.JobSpec parallelism=1:i32 completions=2:i32 activeDeadlineSeconds=3:i64 selector=4:@meta.v1.LabelSelector manualSelector=5:b template=6:@core.v1.PodTemplateSpec backoffLimit=7:i32 ttlSecondsAfterFinished=8:i32 completionMode=9:s suspend=10:b podFailurePolicy=11:@batch.v1.PodFailurePolicy backoffLimitPerIndex=12:i32 maxFailedIndexes=13:i32 podReplacementPolicy=14:s managedBy=15:s successPolicy=16:@batch.v1.SuccessPolicy
batch.v1.JobStatus conditions=1:*@batch.v1.JobCondition startTime=2:@meta.v1.Time completionTime=3:@meta.v1.Time active=4:i32 succeeded=5:i32 failed=6:i32 completedIndexes=7:s uncountedTerminatedPods=8:@batch.v1.UncountedTerminatedPods ready=9:i32 failedIndexes=10:s terminating=11:i32
batch.v1.JobTemplateSpec metadata=1:@meta.v1.ObjectMeta spec=2:@batch.v1.JobSpec
batch.v1.PodFailurePolicy rules=1:*@batch.v1.PodFailurePolicyRule
batch.v1.PodFailurePolicyOnExitCodesRequirement containerName=1:s operator=2:s values=3:*i32
batch.v1.PodFailurePolicyOnPodConditionsPattern type=1:s status=2:s
batch.v1.PodFailurePolicyRule action=1:s onExitCodes=2:@batch.v1.PodFailurePolicyOnExitCodesRequirement onPodConditions=3:*@batch.v1.PodFailurePolicyOnPodConditionsPattern
batch.v1.SuccessPolicy rules=1:*@batch.v1.SuccessPolicyRule
batch.v1.SuccessPolicyRule succeededIndexes=1:s succeededCount=2:i32
batch.v1.UncountedTerminatedPods succeeded=1:*s failed=2:*s
certificates.v1.CertificateSigningRequest metadata=1:@meta.v1.ObjectMeta spec=2:@certificates.v1.CertificateSigningRequestSpec status=3:@certificates.v1.CertificateSigningRequestStatus
certificates.v1.CertificateSigningRequestCondition type=1:s reason=2:s message=3:s lastUpdateTime=4:@meta.v1.Time lastTransitionTime=5:@meta.v1.Time status=6:s
certificates.v1.CertificateSigningRequestList metadata=1:@meta.v1.ListMeta items=2:*@certificates.v1.CertificateSigningRequest
certificates.v1.CertificateSigningRequestSpec request=1:y username=2:s uid=3:s groups=4:*s usages=5:*s extra=6:{s,@certificates.v1.ExtraValue} signerName=7:s expirationSeconds=8:i32
certificates.v1.CertificateSigningRequestStatus conditions=1:*@certificates.v1.CertificateSigningRequestCondition certificate=2:y
certificates.v1.ExtraValue !list items=1:*s
coordination.v1.Lease metadata=1:@meta.v1.ObjectMeta spec=2:@coordination.v1.LeaseSpec
coordination.v1.LeaseList metadata=1:@meta.v1.ListMeta items=2:*@coordination.v1.Lease
coordination.v1.LeaseSpec holderIdentity=1:s leaseDurationSeconds=2:i32 acquireTime=3:@meta.v1.MicroTime renewTime=4:@meta.v1.MicroTime leaseTransitions=5:i32 strategy=6:s preferredHolder=7:s
core.v1.Affinity nodeAffinity=1:@core.v1.NodeAffinity podAffinity=2:@core.v1.PodAffinity podAntiAffinity=3:@core.v1.PodAntiAffinity
core.v1.AppArmorProfile type=1:s localhostProfile=2:s
core.v1.AttachedVolume name=1:s devicePath=2:s
core.v1.AwsElasticBlockStoreVolumeSource volumeID=1:s fsType=2:s partition=3:i32 readOnly=4:b
core.v1.AzureDiskVolumeSource diskName=1:s diskURI=2:s cachingMode=3:s fsType=4:s readOnly=5:b kind=6:s
core.v1.AzureFilePersistentVolumeSource secretName=1:s shareName=2:s readOnly=3:b secretNamespace=4:s
core.v1.AzureFileVolumeSource secretName=1:s shareName=2:s readOnly=3:b
core.v1.Binding metadata=1:@meta.v1.ObjectMeta target=2:@core.v1.ObjectReference
core.v1.CSIPersistentVolumeSource driver=1:s volumeHandle=2:s readOnly=3:b fsType=4:s volumeAttributes=5:{s,s} controllerPublishSecretRef=6:@core.v1.SecretReference nodeStageSecretRef=7:@core.v1.SecretReference nodePublishSecretRef=8:@core.v1.SecretReference controllerExpandSecretRef=9:@core.v1.SecretReference nodeExpandSecretRef=10:@core.v1.SecretReference
core.v1.CSIVolumeSource driver=1:s readOnly=2:b fsType=3:s volumeAttributes=4:{s,s} nodePublishSecretRef=5:@core.v1.LocalObjectReference
core.v1.Capabilities add=1:*s drop=2:*s
core.v1.CephFsPersistentVolumeSource monitors=1:*s path=2:s user=3:s secretFile=4:s secretRef=5:@core.v1.SecretReference readOnly=6:b
core.v1.CephFsVolumeSource monitors=1:*s path=2:s user=3:s secretFile=4:s secretRef=5:@core.v1.LocalObjectReference readOnly=6:b
core.v1.CinderPersistentVolumeSource volumeID=1:s fsType=2:s readOnly=3:b secretRef=4:@core.v1.SecretReference
core.v1.CinderVolumeSource volumeID=1:s fsType=2:s readOnly=3:b secretRef=4:@core.v1.LocalObjectReference
core.v1.ClientIpConfig timeoutSeconds=1:i32
core.v1.ClusterTrustBundleProjection name=1:s signerName=2:s labelSelector=3:@meta.v1.LabelSelector path=4:s optional=5:b
core.v1.ComponentCondition type=1:s status=2:s message=3:s error=4:s
core.v1.ComponentStatus metadata=1:@meta.v1.ObjectMeta conditions=2:*@core.v1.ComponentCondition
core.v1.ComponentStatusList metadata=1:@meta.v1.ListMeta items=2:*@core.v1.ComponentStatus
core.v1.ConfigMap metadata=1:@meta.v1.ObjectMeta data=2:{s,s} binaryData=3:{s,y} immutable=4:b
core.v1.ConfigMapEnvSource local_object_reference=1:^@core.v1.LocalObjectReference optional=2:b
core.v1.ConfigMapKeySelector local_object_reference=1:^@core.v1.LocalObjectReference key=2:s optional=3:b
core.v1.ConfigMapList metadata=1:@meta.v1.ListMeta items=2:*@core.v1.ConfigMap
core.v1.ConfigMapNodeConfigSource namespace=1:s name=2:s uid=3:s resourceVersion=4:s kubeletConfigKey=5:s
core.v1.ConfigMapProjection local_object_reference=1:^@core.v1.LocalObjectReference items=2:*@core.v1.KeyToPath optional=4:b
core.v1.ConfigMapVolumeSource local_object_reference=1:^@core.v1.LocalObjectReference items=2:*@core.v1.KeyToPath defaultMode=3:i32 optional=4:b
core.v1.Container name=1:s image=2:s command=3:*s args=4:*s workingDir=5:s ports=6:*@core.v1.ContainerPort env=7:*@core.v1.EnvVar resources=8:@core.v1.ResourceRequirements volumeMounts=9:*@core.v1.VolumeMount livenessProbe=10:@core.v1.Probe readinessProbe=11:@core.v1.Probe lifecycle=12:@core.v1.Lifecycle terminationMessagePath=13:s imagePullPolicy=14:s securityContext=15:@core.v1.SecurityContext stdin=16:b stdinOnce=17:b tty=18:b envFrom=19:*@core.v1.EnvFromSource terminationMessagePolicy=20:s volumeDevices=21:*@core.v1.VolumeDevice startupProbe=22:@core.v1.Probe resizePolicy=23:*@core.v1.ContainerResizePolicy restartPolicy=24:s restartPolicyRules=25:*@core.v1.ContainerRestartRule
core.v1.ContainerExtendedResourceRequest containerName=1:s resourceName=2:s requestName=3:s
core.v1.ContainerImage names=1:*s sizeBytes=2:i64
core.v1.ContainerPort name=1:s hostPort=2:i32 containerPort=3:i32 protocol=4:s hostIP=5:s
core.v1.ContainerResizePolicy resourceName=1:s restartPolicy=2:s
core.v1.ContainerRestartRule action=1:s exitCodes=2:@core.v1.ContainerRestartRuleOnExitCodes
core.v1.ContainerRestartRuleOnExitCodes operator=1:s values=2:*i32
core.v1.ContainerState waiting=1:@core.v1.ContainerStateWaiting running=2:@core.v1.ContainerStateRunning terminated=3:@core.v1.ContainerStateTerminated
core.v1.ContainerStateRunning startedAt=1:@meta.v1.Time
core.v1.ContainerStateTerminated exitCode=1:i32 signal=2:i32 reason=3:s message=4:s startedAt=5:@meta.v1.Time finishedAt=6:@meta.v1.Time containerID=7:s
core.v1.ContainerStateWaiting reason=1:s message=2:s
core.v1.ContainerStatus name=1:s state=2:@core.v1.ContainerState lastState=3:@core.v1.ContainerState ready=4:b restartCount=5:i32 image=6:s imageID=7:s containerID=8:s started=9:b allocatedResources=10:{s,@resource.Quantity} resources=11:@core.v1.ResourceRequirements volumeMounts=12:*@core.v1.VolumeMountStatus user=13:@core.v1.ContainerUser allocatedResourcesStatus=14:*@core.v1.ResourceStatus stopSignal=15:s
core.v1.ContainerUser linux=1:@core.v1.LinuxContainerUser
core.v1.DaemonEndpoint Port=1:i32
core.v1.DownwardAPIProjection items=1:*@core.v1.DownwardAPIVolumeFile
core.v1.DownwardAPIVolumeFile path=1:s fieldRef=2:@core.v1.ObjectFieldSelector resourceFieldRef=3:@core.v1.ResourceFieldSelector mode=4:i32
core.v1.DownwardAPIVolumeSource items=1:*@core.v1.DownwardAPIVolumeFile defaultMode=2:i32
core.v1.EmptyDirVolumeSource medium=1:s sizeLimit=2:@resource.Quantity
core.v1.EndpointAddress ip=1:s targetRef=2:@core.v1.ObjectReference hostname=3:s nodeName=4:s
core.v1.EndpointPort name=1:s port=2:i32 protocol=3:s appProtocol=4:s
core.v1.EndpointSubset addresses=1:*@core.v1.EndpointAddress notReadyAddresses=2:*@core.v1.EndpointAddress ports=3:*@core.v1.EndpointPort
core.v1.Endpoints metadata=1:@meta.v1.ObjectMeta subsets=2:*@core.v1.EndpointSubset
core.v1.EndpointsList metadata=1:@meta.v1.ListMeta items=2:*@core.v1.Endpoints
core.v1.EnvFromSource prefix=1:s configMapRef=2:@core.v1.ConfigMapEnvSource secretRef=3:@core.v1.SecretEnvSource
core.v1.EnvVar name=1:s value=2:s valueFrom=3:@core.v1.EnvVarSource
core.v1.EnvVarSource fieldRef=1:@core.v1.ObjectFieldSelector resourceFieldRef=2:@core.v1.ResourceFieldSelector configMapKeyRef=3:@core.v1.ConfigMapKeySelector secretKeyRef=4:@core.v1.SecretKeySelector fileKeyRef=5:@core.v1.FileKeySelector
core.v1.EphemeralContainer ephemeral_container_common=1:^@core.v1.EphemeralContainerCommon targetContainerName=2:s
core.v1.EphemeralContainerCommon name=1:s image=2:s command=3:*s args=4:*s workingDir=5:s ports=6:*@core.v1.ContainerPort env=7:*@core.v1.EnvVar resources=8:@core.v1.ResourceRequirements volumeMounts=9:*@core.v1.VolumeMount livenessProbe=10:@core.v1.Probe readinessProbe=11:@core.v1.Probe lifecycle=12:@core.v1.Lifecycle terminationMessagePath=13:s imagePullPolicy=14:s securityContext=15:@core.v1.SecurityContext stdin=16:b stdinOnce=17:b tty=18:b envFrom=19:*@core.v1.EnvFromSource terminationMessagePolicy=20:s volumeDevices=21:*@core.v1.VolumeDevice startupProbe=22:@core.v1.Probe resizePolicy=23:*@core.v1.ContainerResizePolicy restartPolicy=24:s restartPolicyRules=25:*@core.v1.ContainerRestartRule
core.v1.EphemeralVolumeSource volumeClaimTemplate=1:@core.v1.PersistentVolumeClaimTemplate
core.v1.Event metadata=1:@meta.v1.ObjectMeta involvedObject=2:@core.v1.ObjectReference reason=3:s message=4:s source=5:@core.v1.EventSource firstTimestamp=6:@meta.v1.Time lastTimestamp=7:@meta.v1.Time count=8:i32 type=9:s eventTime=10:@meta.v1.MicroTime series=11:@core.v1.EventSeries action=12:s related=13:@core.v1.ObjectReference reportingComponent=14:s reportingInstance=15:s
core.v1.EventList metadata=1:@meta.v1.ListMeta items=2:*@core.v1.Event
core.v1.EventSeries count=1:i32 lastObservedTime=2:@meta.v1.MicroTime
core.v1.EventSource component=1:s host=2:s
core.v1.ExecAction command=1:*s
core.v1.FcVolumeSource targetWWNs=1:*s lun=2:i32 fsType=3:s readOnly=4:b wwids=5:*s
core.v1.FileKeySelector volumeName=1:s path=2:s key=3:s optional=4:b
core.v1.FlexPersistentVolumeSource driver=1:s fsType=2:s secretRef=3:@core.v1.SecretReference readOnly=4:b options=5:{s,s}
core.v1.FlexVolumeSource driver=1:s fsType=2:s secretRef=3:@core.v1.LocalObjectReference readOnly=4:b options=5:{s,s}
core.v1.FlockerVolumeSource datasetName=1:s datasetUUID=2:s
core.v1.GcePersistentDiskVolumeSource pdName=1:s fsType=2:s partition=3:i32 readOnly=4:b
core.v1.GitRepoVolumeSource repository=1:s revision=2:s directory=3:s
core.v1.GlusterfsPersistentVolumeSource endpoints=1:s path=2:s readOnly=3:b endpointsNamespace=4:s
core.v1.GlusterfsVolumeSource endpoints=1:s path=2:s readOnly=3:b
core.v1.GrpcAction port=1:i32 service=2:s
core.v1.HostAlias ip=1:s hostnames=2:*s
core.v1.HostIp ip=1:s
core.v1.HostPathVolumeSource path=1:s type=2:s
core.v1.HttpGetAction path=1:s port=2:@intstr.IntOrString host=3:s scheme=4:s httpHeaders=5:*@core.v1.HttpHeader
core.v1.HttpHeader name=1:s value=2:s
core.v1.ImageVolumeSource reference=1:s pullPolicy=2:s
core.v1.IscsiPersistentVolumeSource targetPortal=1:s iqn=2:s lun=3:i32 iscsiInterface=4:s fsType=5:s readOnly=6:b portals=7:*s chapAuthDiscovery=8:b secretRef=10:@core.v1.SecretReference chapAuthSession=11:b initiatorName=12:s
core.v1.IscsiVolumeSource targetPortal=1:s iqn=2:s lun=3:i32 iscsiInterface=4:s fsType=5:s readOnly=6:b portals=7:*s chapAuthDiscovery=8:b secretRef=10:@core.v1.LocalObjectReference chapAuthSession=11:b initiatorName=12:s
core.v1.KeyToPath key=1:s path=2:s mode=3:i32
core.v1.Lifecycle postStart=1:@core.v1.LifecycleHandler preStop=2:@core.v1.LifecycleHandler stopSignal=3:s
core.v1.LifecycleHandler exec=1:@core.v1.ExecAction httpGet=2:@core.v1.HttpGetAction tcpSocket=3:@core.v1.TcpSocketAction sleep=4:@core.v1.SleepAction
core.v1.LimitRange metadata=1:@meta.v1.ObjectMeta spec=2:@core.v1.LimitRangeSpec
core.v1.LimitRangeItem type=1:s max=2:{s,@resource.Quantity} min=3:{s,@resource.Quantity} default=4:{s,@resource.Quantity} defaultRequest=5:{s,@resource.Quantity} maxLimitRequestRatio=6:{s,@resource.Quantity}
core.v1.LimitRangeList metadata=1:@meta.v1.ListMeta items=2:*@core.v1.LimitRange
core.v1.LimitRangeSpec limits=1:*@core.v1.LimitRangeItem
core.v1.LinuxContainerUser uid=1:i64 gid=2:i64 supplementalGroups=3:*i64
core.v1.LoadBalancerIngress ip=1:s hostname=2:s ipMode=3:s ports=4:*@core.v1.PortStatus
core.v1.LoadBalancerStatus ingress=1:*@core.v1.LoadBalancerIngress
core.v1.LocalObjectReference name=1:s
core.v1.LocalVolumeSource path=1:s fsType=2:s
core.v1.ModifyVolumeStatus targetVolumeAttributesClassName=1:s status=2:s
core.v1.Namespace metadata=1:@meta.v1.ObjectMeta spec=2:@core.v1.NamespaceSpec status=3:@core.v1.NamespaceStatus
core.v1.NamespaceCondition type=1:s status=2:s lastTransitionTime=4:@meta.v1.Time reason=5:s message=6:s
core.v1.NamespaceList metadata=1:@meta.v1.ListMeta items=2:*@core.v1.Namespace
core.v1.NamespaceSpec finalizers=1:*s
core.v1.NamespaceStatus phase=1:s conditions=2:*@core.v1.NamespaceCondition
core.v1.NfsVolumeSource server=1:s path=2:s readOnly=3:b
core.v1.Node metadata=1:@meta.v1.ObjectMeta spec=2:@core.v1.NodeSpec status=3:@core.v1.NodeStatus
core.v1.NodeAddress type=1:s address=2:s
core.v1.NodeAffinity requiredDuringSchedulingIgnoredDuringExecution=1:@core.v1.NodeSelector preferredDuringSchedulingIgnoredDuringExecution=2:*@core.v1.PreferredSchedulingTerm
core.v1.NodeCondition type=1:s status=2:s lastHeartbeatTime=3:@meta.v1.Time lastTransitionTime=4:@meta.v1.Time reason=5:s message=6:s
core.v1.NodeConfigSource configMap=2:@core.v1.ConfigMapNodeConfigSource
core.v1.NodeConfigStatus assigned=1:@core.v1.NodeConfigSource active=2:@core.v1.NodeConfigSource lastKnownGood=3:@core.v1.NodeConfigSource error=4:s
core.v1.NodeDaemonEndpoints kubeletEndpoint=1:@core.v1.DaemonEndpoint
core.v1.NodeFeatures supplementalGroupsPolicy=1:b
core.v1.NodeList metadata=1:@meta.v1.ListMeta items=2:*@core.v1.Node
core.v1.NodeRuntimeHandler name=1:s features=2:@core.v1.NodeRuntimeHandlerFeatures
core.v1.NodeRuntimeHandlerFeatures recursiveReadOnlyMounts=1:b userNamespaces=2:b
core.v1.NodeSelector nodeSelectorTerms=1:*@core.v1.NodeSelectorTerm
core.v1.NodeSelectorRequirement key=1:s operator=2:s values=3:*s
core.v1.NodeSelectorTerm matchExpressions=1:*@core.v1.NodeSelectorRequirement matchFields=2:*@core.v1.NodeSelectorRequirement
core.v1.NodeSpec podCIDR=1:s externalID=2:s providerID=3:s unschedulable=4:b taints=5:*@core.v1.Taint configSource=6:@core.v1.NodeConfigSource podCIDRs=7:*s
core.v1.NodeStatus capacity=1:{s,@resource.Quantity} allocatable=2:{s,@resource.Quantity} phase=3:s conditions=4:*@core.v1.NodeCondition addresses=5:*@core.v1.NodeAddress daemonEndpoints=6:@core.v1.NodeDaemonEndpoints nodeInfo=7:@core.v1.NodeSystemInfo images=8:*@core.v1.ContainerImage volumesInUse=9:*s volumesAttached=10:*@core.v1.AttachedVolume config=11:@core.v1.NodeConfigStatus runtimeHandlers=12:*@core.v1.NodeRuntimeHandler features=13:@core.v1.NodeFeatures declaredFeatures=14:*s
core.v1.NodeSwapStatus capacity=1:i64
core.v1.NodeSystemInfo machineID=1:s systemUUID=2:s bootID=3:s kernelVersion=4:s osImage=5:s containerRuntimeVersion=6:s kubeletVersion=7:s kubeProxyVersion=8:s operatingSystem=9:s architecture=10:s swap=11:@core.v1.NodeSwapStatus
core.v1.ObjectFieldSelector apiVersion=1:s fieldPath=2:s
core.v1.ObjectReference kind=1:s namespace=2:s name=3:s uid=4:s apiVersion=5:s resourceVersion=6:s fieldPath=7:s
core.v1.PersistentVolume metadata=1:@meta.v1.ObjectMeta spec=2:@core.v1.PersistentVolumeSpec status=3:@core.v1.PersistentVolumeStatus
core.v1.PersistentVolumeClaim metadata=1:@meta.v1.ObjectMeta spec=2:@core.v1.PersistentVolumeClaimSpec status=3:@core.v1.PersistentVolumeClaimStatus
core.v1.PersistentVolumeClaimCondition type=1:s status=2:s lastProbeTime=3:@meta.v1.Time lastTransitionTime=4:@meta.v1.Time reason=5:s message=6:s
core.v1.PersistentVolumeClaimList metadata=1:@meta.v1.ListMeta items=2:*@core.v1.PersistentVolumeClaim
core.v1.PersistentVolumeClaimSpec accessModes=1:*s resources=2:@core.v1.VolumeResourceRequirements volumeName=3:s selector=4:@meta.v1.LabelSelector storageClassName=5:s volumeMode=6:s dataSource=7:@core.v1.TypedLocalObjectReference dataSourceRef=8:@core.v1.TypedObjectReference volumeAttributesClassName=9:s
core.v1.PersistentVolumeClaimStatus phase=1:s accessModes=2:*s capacity=3:{s,@resource.Quantity} conditions=4:*@core.v1.PersistentVolumeClaimCondition allocatedResources=5:{s,@resource.Quantity} allocatedResourceStatuses=7:{s,s} currentVolumeAttributesClassName=8:s modifyVolumeStatus=9:@core.v1.ModifyVolumeStatus
core.v1.PersistentVolumeClaimTemplate metadata=1:@meta.v1.ObjectMeta spec=2:@core.v1.PersistentVolumeClaimSpec
core.v1.PersistentVolumeClaimVolumeSource claimName=1:s readOnly=2:b
core.v1.PersistentVolumeList metadata=1:@meta.v1.ListMeta items=2:*@core.v1.PersistentVolume
core.v1.PersistentVolumeSource gcePersistentDisk=1:@core.v1.GcePersistentDiskVolumeSource awsElasticBlockStore=2:@core.v1.AwsElasticBlockStoreVolumeSource hostPath=3:@core.v1.HostPathVolumeSource glusterfs=4:@core.v1.GlusterfsPersistentVolumeSource nfs=5:@core.v1.NfsVolumeSource rbd=6:@core.v1.RbdPersistentVolumeSource iscsi=7:@core.v1.IscsiPersistentVolumeSource cinder=8:@core.v1.CinderPersistentVolumeSource cephfs=9:@core.v1.CephFsPersistentVolumeSource fc=10:@core.v1.FcVolumeSource flocker=11:@core.v1.FlockerVolumeSource flexVolume=12:@core.v1.FlexPersistentVolumeSource azureFile=13:@core.v1.AzureFilePersistentVolumeSource vsphereVolume=14:@core.v1.VsphereVirtualDiskVolumeSource quobyte=15:@core.v1.QuobyteVolumeSource azureDisk=16:@core.v1.AzureDiskVolumeSource photonPersistentDisk=17:@core.v1.PhotonPersistentDiskVolumeSource portworxVolume=18:@core.v1.PortworxVolumeSource scaleIO=19:@core.v1.ScaleIoPersistentVolumeSource local=20:@core.v1.LocalVolumeSource storageos=21:@core.v1.StorageOsPersistentVolumeSource csi=22:@core.v1.CSIPersistentVolumeSource
core.v1.PersistentVolumeSpec capacity=1:{s,@resource.Quantity} persistent_volume_source=2:^@core.v1.PersistentVolumeSource accessModes=3:*s claimRef=4:@core.v1.ObjectReference persistentVolumeReclaimPolicy=5:s storageClassName=6:s mountOptions=7:*s volumeMode=8:s nodeAffinity=9:@core.v1.VolumeNodeAffinity volumeAttributesClassName=10:s
core.v1.PersistentVolumeStatus phase=1:s message=2:s reason=3:s lastPhaseTransitionTime=4:@meta.v1.Time
core.v1.PhotonPersistentDiskVolumeSource pdID=1:s fsType=2:s
core.v1.Pod metadata=1:@meta.v1.ObjectMeta spec=2:@core.v1.PodSpec status=3:@core.v1.PodStatus
core.v1.PodAffinity requiredDuringSchedulingIgnoredDuringExecution=1:*@core.v1.PodAffinityTerm preferredDuringSchedulingIgnoredDuringExecution=2:*@core.v1.WeightedPodAffinityTerm
core.v1.PodAffinityTerm labelSelector=1:@meta.v1.LabelSelector namespaces=2:*s topologyKey=3:s namespaceSelector=4:@meta.v1.LabelSelector matchLabelKeys=5:*s mismatchLabelKeys=6:*s
core.v1.PodAntiAffinity requiredDuringSchedulingIgnoredDuringExecution=1:*@core.v1.PodAffinityTerm preferredDuringSchedulingIgnoredDuringExecution=2:*@core.v1.WeightedPodAffinityTerm
core.v1.PodCertificateProjection signerName=1:s keyType=2:s maxExpirationSeconds=3:i32 credentialBundlePath=4:s keyPath=5:s certificateChainPath=6:s userAnnotations=7:{s,s}
core.v1.PodCondition type=1:s status=2:s lastProbeTime=3:@meta.v1.Time lastTransitionTime=4:@meta.v1.Time reason=5:s message=6:s observedGeneration=7:i64
core.v1.PodDnsConfig nameservers=1:*s searches=2:*s options=3:*@core.v1.PodDnsConfigOption
core.v1.PodDnsConfigOption name=1:s value=2:s
core.v1.PodExtendedResourceClaimStatus requestMappings=1:*@core.v1.ContainerExtendedResourceRequest resourceClaimName=2:s
core.v1.PodIp ip=1:s
core.v1.PodList metadata=1:@meta.v1.ListMeta items=2:*@core.v1.Pod
core.v1.PodOs name=1:s
core.v1.PodReadinessGate conditionType=1:s
core.v1.PodResourceClaim name=1:s resourceClaimName=3:s resourceClaimTemplateName=4:s
core.v1.PodResourceClaimStatus name=1:s resourceClaimName=2:s
core.v1.PodSchedulingGate name=1:s
core.v1.PodSecurityContext seLinuxOptions=1:@core.v1.SeLinuxOptions runAsUser=2:i64 runAsNonRoot=3:b supplementalGroups=4:*i64 fsGroup=5:i64 runAsGroup=6:i64 sysctls=7:*@core.v1.Sysctl windowsOptions=8:@core.v1.WindowsSecurityContextOptions fsGroupChangePolicy=9:s seccompProfile=10:@core.v1.SeccompProfile appArmorProfile=11:@core.v1.AppArmorProfile supplementalGroupsPolicy=12:s seLinuxChangePolicy=13:s
core.v1.PodSpec volumes=1:*@core.v1.Volume containers=2:*@core.v1.Container restartPolicy=3:s terminationGracePeriodSeconds=4:i64 activeDeadlineSeconds=5:i64 dnsPolicy=6:s nodeSelector=7:{s,s} serviceAccountName=8:s serviceAccount=9:s nodeName=10:s hostNetwork=11:b hostPID=12:b hostIPC=13:b securityContext=14:@core.v1.PodSecurityContext imagePullSecrets=15:*@core.v1.LocalObjectReference hostname=16:s subdomain=17:s affinity=18:@core.v1.Affinity schedulerName=19:s initContainers=20:*@core.v1.Container automountServiceAccountToken=21:b tolerations=22:*@core.v1.Toleration hostAliases=23:*@core.v1.HostAlias priorityClassName=24:s priority=25:i32 dnsConfig=26:@core.v1.PodDnsConfig shareProcessNamespace=27:b readinessGates=28:*@core.v1.PodReadinessGate runtimeClassName=29:s enableServiceLinks=30:b preemptionPolicy=31:s overhead=32:{s,@resource.Quantity} topologySpreadConstraints=33:*@core.v1.TopologySpreadConstraint ephemeralContainers=34:*@core.v1.EphemeralContainer setHostnameAsFQDN=35:b os=36:@core.v1.PodOs hostUsers=37:b schedulingGates=38:*@core.v1.PodSchedulingGate resourceClaims=39:*@core.v1.PodResourceClaim resources=40:@core.v1.ResourceRequirements hostnameOverride=41:s workloadRef=42:@core.v1.WorkloadReference
core.v1.PodStatus phase=1:s conditions=2:*@core.v1.PodCondition message=3:s reason=4:s hostIP=5:s podIP=6:s startTime=7:@meta.v1.Time containerStatuses=8:*@core.v1.ContainerStatus qosClass=9:s initContainerStatuses=10:*@core.v1.ContainerStatus nominatedNodeName=11:s podIPs=12:*@core.v1.PodIp ephemeralContainerStatuses=13:*@core.v1.ContainerStatus resize=14:s resourceClaimStatuses=15:*@core.v1.PodResourceClaimStatus hostIPs=16:*@core.v1.HostIp observedGeneration=17:i64 extendedResourceClaimStatus=18:@core.v1.PodExtendedResourceClaimStatus allocatedResources=19:{s,@resource.Quantity} resources=20:@core.v1.ResourceRequirements
core.v1.PodTemplate metadata=1:@meta.v1.ObjectMeta template=2:@core.v1.PodTemplateSpec
core.v1.PodTemplateList metadata=1:@meta.v1.ListMeta items=2:*@core.v1.PodTemplate
core.v1.PodTemplateSpec metadata=1:@meta.v1.ObjectMeta spec=2:@core.v1.PodSpec
core.v1.PortStatus port=1:i32 protocol=2:s error=3:s
core.v1.PortworxVolumeSource volumeID=1:s fsType=2:s readOnly=3:b
core.v1.PreferredSchedulingTerm weight=1:i32 preference=2:@core.v1.NodeSelectorTerm
core.v1.Probe handler=1:^@core.v1.ProbeHandler initialDelaySeconds=2:i32 timeoutSeconds=3:i32 periodSeconds=4:i32 successThreshold=5:i32 failureThreshold=6:i32 terminationGracePeriodSeconds=7:i64
core.v1.ProbeHandler exec=1:@core.v1.ExecAction httpGet=2:@core.v1.HttpGetAction tcpSocket=3:@core.v1.TcpSocketAction grpc=4:@core.v1.GrpcAction
core.v1.ProjectedVolumeSource sources=1:*@core.v1.VolumeProjection defaultMode=2:i32
core.v1.QuobyteVolumeSource registry=1:s volume=2:s readOnly=3:b user=4:s group=5:s tenant=6:s
core.v1.RbdPersistentVolumeSource monitors=1:*s image=2:s fsType=3:s pool=4:s user=5:s keyring=6:s secretRef=7:@core.v1.SecretReference readOnly=8:b
core.v1.RbdVolumeSource monitors=1:*s image=2:s fsType=3:s pool=4:s user=5:s keyring=6:s secretRef=7:@core.v1.LocalObjectReference readOnly=8:b
core.v1.ReplicationController metadata=1:@meta.v1.ObjectMeta spec=2:@core.v1.ReplicationControllerSpec status=3:@core.v1.ReplicationControllerStatus
core.v1.ReplicationControllerCondition type=1:s status=2:s lastTransitionTime=3:@meta.v1.Time reason=4:s message=5:s
core.v1.ReplicationControllerList metadata=1:@meta.v1.ListMeta items=2:*@core.v1.ReplicationController
core.v1.ReplicationControllerSpec replicas=1:i32 selector=2:{s,s} template=3:@core.v1.PodTemplateSpec minReadySeconds=4:i32
core.v1.ReplicationControllerStatus replicas=1:i32 fullyLabeledReplicas=2:i32 observedGeneration=3:i64 readyReplicas=4:i32 availableReplicas=5:i32 conditions=6:*@core.v1.ReplicationControllerCondition
core.v1.ResourceClaim name=1:s request=2:s
core.v1.ResourceFieldSelector containerName=1:s resource=2:s divisor=3:@resource.Quantity
core.v1.ResourceHealth resourceID=1:s health=2:s
core.v1.ResourceQuota metadata=1:@meta.v1.ObjectMeta spec=2:@core.v1.ResourceQuotaSpec status=3:@core.v1.ResourceQuotaStatus
core.v1.ResourceQuotaList metadata=1:@meta.v1.ListMeta items=2:*@core.v1.ResourceQuota
core.v1.ResourceQuotaSpec hard=1:{s,@resource.Quantity} scopes=2:*s scopeSelector=3:@core.v1.ScopeSelector
core.v1.ResourceQuotaStatus hard=1:{s,@resource.Quantity} used=2:{s,@resource.Quantity}
core.v1.ResourceRequirements limits=1:{s,@resource.Quantity} requests=2:{s,@resource.Quantity} claims=3:*@core.v1.ResourceClaim
core.v1.ResourceStatus name=1:s resources=2:*@core.v1.ResourceHealth
core.v1.ScaleIoPersistentVolumeSource gateway=1:s system=2:s secretRef=3:@core.v1.SecretReference sslEnabled=4:b protectionDomain=5:s storagePool=6:s storageMode=7:s volumeName=8:s fsType=9:s readOnly=10:b
core.v1.ScaleIoVolumeSource gateway=1:s system=2:s secretRef=3:@core.v1.LocalObjectReference sslEnabled=4:b protectionDomain=5:s storagePool=6:s storageMode=7:s volumeName=8:s fsType=9:s readOnly=10:b
core.v1.ScopeSelector matchExpressions=1:*@core.v1.ScopedResourceSelectorRequirement
core.v1.ScopedResourceSelectorRequirement scopeName=1:s operator=2:s values=3:*s
core.v1.SeLinuxOptions user=1:s role=2:s type=3:s level=4:s
core.v1.SeccompProfile type=1:s localhostProfile=2:s
core.v1.Secret metadata=1:@meta.v1.ObjectMeta data=2:{s,y} type=3:s stringData=4:{s,s} immutable=5:b
core.v1.SecretEnvSource local_object_reference=1:^@core.v1.LocalObjectReference optional=2:b
core.v1.SecretKeySelector local_object_reference=1:^@core.v1.LocalObjectReference key=2:s optional=3:b
core.v1.SecretList metadata=1:@meta.v1.ListMeta items=2:*@core.v1.Secret
core.v1.SecretProjection local_object_reference=1:^@core.v1.LocalObjectReference items=2:*@core.v1.KeyToPath optional=4:b
core.v1.SecretReference name=1:s namespace=2:s
core.v1.SecretVolumeSource secretName=1:s items=2:*@core.v1.KeyToPath defaultMode=3:i32 optional=4:b
core.v1.SecurityContext capabilities=1:@core.v1.Capabilities privileged=2:b seLinuxOptions=3:@core.v1.SeLinuxOptions runAsUser=4:i64 runAsNonRoot=5:b readOnlyRootFilesystem=6:b allowPrivilegeEscalation=7:b runAsGroup=8:i64 procMount=9:s windowsOptions=10:@core.v1.WindowsSecurityContextOptions seccompProfile=11:@core.v1.SeccompProfile appArmorProfile=12:@core.v1.AppArmorProfile
core.v1.Service metadata=1:@meta.v1.ObjectMeta spec=2:@core.v1.ServiceSpec status=3:@core.v1.ServiceStatus
core.v1.ServiceAccount metadata=1:@meta.v1.ObjectMeta secrets=2:*@core.v1.ObjectReference imagePullSecrets=3:*@core.v1.LocalObjectReference automountServiceAccountToken=4:b
core.v1.ServiceAccountList metadata=1:@meta.v1.ListMeta items=2:*@core.v1.ServiceAccount
core.v1.ServiceAccountTokenProjection audience=1:s expirationSeconds=2:i64 path=3:s
core.v1.ServiceList metadata=1:@meta.v1.ListMeta items=2:*@core.v1.Service
core.v1.ServicePort name=1:s protocol=2:s port=3:i32 targetPort=4:@intstr.IntOrString nodePort=5:i32 appProtocol=6:s
core.v1.ServiceSpec ports=1:*@core.v1.ServicePort selector=2:{s,s} clusterIP=3:s type=4:s externalIPs=5:*s sessionAffinity=7:s loadBalancerIP=8:s loadBalancerSourceRanges=9:*s externalName=10:s externalTrafficPolicy=11:s healthCheckNodePort=12:i32 publishNotReadyAddresses=13:b sessionAffinityConfig=14:@core.v1.SessionAffinityConfig ipFamilyPolicy=17:s clusterIPs=18:*s ipFamilies=19:*s allocateLoadBalancerNodePorts=20:b loadBalancerClass=21:s internalTrafficPolicy=22:s trafficDistribution=23:s
core.v1.ServiceStatus loadBalancer=1:@core.v1.LoadBalancerStatus conditions=2:*@meta.v1.Condition
core.v1.SessionAffinityConfig clientIP=1:@core.v1.ClientIpConfig
core.v1.SleepAction seconds=1:i64
core.v1.StorageOsPersistentVolumeSource volumeName=1:s volumeNamespace=2:s fsType=3:s readOnly=4:b secretRef=5:@core.v1.ObjectReference
core.v1.StorageOsVolumeSource volumeName=1:s volumeNamespace=2:s fsType=3:s readOnly=4:b secretRef=5:@core.v1.LocalObjectReference
core.v1.Sysctl name=1:s value=2:s
core.v1.Taint key=1:s value=2:s effect=3:s timeAdded=4:@meta.v1.Time
core.v1.TcpSocketAction port=1:@intstr.IntOrString host=2:s
core.v1.Toleration key=1:s operator=2:s value=3:s effect=4:s tolerationSeconds=5:i64
core.v1.TopologySelectorLabelRequirement key=1:s values=2:*s
core.v1.TopologySelectorTerm matchLabelExpressions=1:*@core.v1.TopologySelectorLabelRequirement
core.v1.TopologySpreadConstraint maxSkew=1:i32 topologyKey=2:s whenUnsatisfiable=3:s labelSelector=4:@meta.v1.LabelSelector minDomains=5:i32 nodeAffinityPolicy=6:s nodeTaintsPolicy=7:s matchLabelKeys=8:*s
core.v1.TypedLocalObjectReference apiGroup=1:s kind=2:s name=3:s
core.v1.TypedObjectReference apiGroup=1:s kind=2:s name=3:s namespace=4:s
core.v1.Volume name=1:s volume_source=2:^@core.v1.VolumeSource
core.v1.VolumeDevice name=1:s devicePath=2:s
core.v1.VolumeMount name=1:s readOnly=2:b mountPath=3:s subPath=4:s mountPropagation=5:s subPathExpr=6:s recursiveReadOnly=7:s
core.v1.VolumeMountStatus name=1:s mountPath=2:s readOnly=3:b recursiveReadOnly=4:s
core.v1.VolumeNodeAffinity required=1:@core.v1.NodeSelector
core.v1.VolumeProjection secret=1:@core.v1.SecretProjection downwardAPI=2:@core.v1.DownwardAPIProjection configMap=3:@core.v1.ConfigMapProjection serviceAccountToken=4:@core.v1.ServiceAccountTokenProjection clusterTrustBundle=5:@core.v1.ClusterTrustBundleProjection podCertificate=6:@core.v1.PodCertificateProjection
core.v1.VolumeResourceRequirements limits=1:{s,@resource.Quantity} requests=2:{s,@resource.Quantity}
core.v1.VolumeSource hostPath=1:@core.v1.HostPathVolumeSource emptyDir=2:@core.v1.EmptyDirVolumeSource gcePersistentDisk=3:@core.v1.GcePersistentDiskVolumeSource awsElasticBlockStore=4:@core.v1.AwsElasticBlockStoreVolumeSource gitRepo=5:@core.v1.GitRepoVolumeSource secret=6:@core.v1.SecretVolumeSource nfs=7:@core.v1.NfsVolumeSource iscsi=8:@core.v1.IscsiVolumeSource glusterfs=9:@core.v1.GlusterfsVolumeSource persistentVolumeClaim=10:@core.v1.PersistentVolumeClaimVolumeSource rbd=11:@core.v1.RbdVolumeSource flexVolume=12:@core.v1.FlexVolumeSource cinder=13:@core.v1.CinderVolumeSource cephfs=14:@core.v1.CephFsVolumeSource flocker=15:@core.v1.FlockerVolumeSource downwardAPI=16:@core.v1.DownwardAPIVolumeSource fc=17:@core.v1.FcVolumeSource azureFile=18:@core.v1.AzureFileVolumeSource configMap=19:@core.v1.ConfigMapVolumeSource vsphereVolume=20:@core.v1.VsphereVirtualDiskVolumeSource quobyte=21:@core.v1.QuobyteVolumeSource azureDisk=22:@core.v1.AzureDiskVolumeSource photonPersistentDisk=23:@core.v1.PhotonPersistentDiskVolumeSource portworxVolume=24:@core.v1.PortworxVolumeSource scaleIO=25:@core.v1.ScaleIoVolumeSource projected=26:@core.v1.ProjectedVolumeSource storageos=27:@core.v1.StorageOsVolumeSource csi=28:@core.v1.CSIVolumeSource ephemeral=29:@core.v1.EphemeralVolumeSource image=30:@core.v1.ImageVolumeSource
core.v1.VsphereVirtualDiskVolumeSource volumePath=1:s fsType=2:s storagePolicyName=3:s storagePolicyID=4:s
core.v1.WeightedPodAffinityTerm weight=1:i32 podAffinityTerm=2:@core.v1.PodAffinityTerm
core.v1.WindowsSecurityContextOptions gmsaCredentialSpecName=1:s gmsaCredentialSpec=2:s runAsUserName=3:s hostProcess=4:b
core.v1.WorkloadReference name=1:s podGroup=2:s podGroupReplicaKey=3:s
discovery.v1.Endpoint addresses=1:*s conditions=2:@discovery.v1.EndpointConditions hostname=3:s targetRef=4:@core.v1.ObjectReference deprecatedTopology=5:{s,s} nodeName=6:s zone=7:s hints=8:@discovery.v1.EndpointHints
discovery.v1.EndpointConditions ready=1:b serving=2:b terminating=3:b
discovery.v1.EndpointHints forZones=1:*@discovery.v1.ForZone forNodes=2:*@discovery.v1.ForNode
discovery.v1.EndpointPort name=1:s protocol=2:s port=3:i32 appProtocol=4:s
discovery.v1.EndpointSlice metadata=1:@meta.v1.ObjectMeta endpoints=2:*@discovery.v1.Endpoint ports=3:*@discovery.v1.EndpointPort addressType=4:s
discovery.v1.EndpointSliceList metadata=1:@meta.v1.ListMeta items=2:*@discovery.v1.EndpointSlice
discovery.v1.ForNode name=1:s
discovery.v1.ForZone name=1:s
events.v1.Event metadata=1:@meta.v1.ObjectMeta eventTime=2:@meta.v1.MicroTime series=3:@events.v1.EventSeries reportingController=4:s reportingInstance=5:s action=6:s reason=7:s regarding=8:@core.v1.ObjectReference related=9:@core.v1.ObjectReference note=10:s type=11:s deprecatedSource=12:@core.v1.EventSource deprecatedFirstTimestamp=13:@meta.v1.Time deprecatedLastTimestamp=14:@meta.v1.Time deprecatedCount=15:i32
events.v1.EventList metadata=1:@meta.v1.ListMeta items=2:*@events.v1.Event
events.v1.EventSeries count=1:i32 lastObservedTime=2:@meta.v1.MicroTime
flowcontrol.v1.ExemptPriorityLevelConfiguration nominalConcurrencyShares=1:i32 lendablePercent=2:i32
flowcontrol.v1.FlowDistinguisherMethod type=1:s
flowcontrol.v1.FlowSchema metadata=1:@meta.v1.ObjectMeta spec=2:@flowcontrol.v1.FlowSchemaSpec status=3:@flowcontrol.v1.FlowSchemaStatus
flowcontrol.v1.FlowSchemaCondition type=1:s status=2:s lastTransitionTime=3:@meta.v1.Time reason=4:s message=5:s
flowcontrol.v1.FlowSchemaList metadata=1:@meta.v1.ListMeta items=2:*@flowcontrol.v1.FlowSchema
flowcontrol.v1.FlowSchemaSpec priorityLevelConfiguration=1:@flowcontrol.v1.PriorityLevelConfigurationReference matchingPrecedence=2:i32 distinguisherMethod=3:@flowcontrol.v1.FlowDistinguisherMethod rules=4:*@flowcontrol.v1.PolicyRulesWithSubjects
flowcontrol.v1.FlowSchemaStatus conditions=1:*@flowcontrol.v1.FlowSchemaCondition
flowcontrol.v1.GroupSubject name=1:s
flowcontrol.v1.LimitResponse type=1:s queuing=2:@flowcontrol.v1.QueuingConfiguration
flowcontrol.v1.LimitedPriorityLevelConfiguration nominalConcurrencyShares=1:i32 limitResponse=2:@flowcontrol.v1.LimitResponse lendablePercent=3:i32 borrowingLimitPercent=4:i32
flowcontrol.v1.NonResourcePolicyRule verbs=1:*s nonResourceURLs=6:*s
flowcontrol.v1.PolicyRulesWithSubjects subjects=1:*@flowcontrol.v1.Subject resourceRules=2:*@flowcontrol.v1.ResourcePolicyRule nonResourceRules=3:*@flowcontrol.v1.NonResourcePolicyRule
flowcontrol.v1.PriorityLevelConfiguration metadata=1:@meta.v1.ObjectMeta spec=2:@flowcontrol.v1.PriorityLevelConfigurationSpec status=3:@flowcontrol.v1.PriorityLevelConfigurationStatus
flowcontrol.v1.PriorityLevelConfigurationCondition type=1:s status=2:s lastTransitionTime=3:@meta.v1.Time reason=4:s message=5:s
flowcontrol.v1.PriorityLevelConfigurationList metadata=1:@meta.v1.ListMeta items=2:*@flowcontrol.v1.PriorityLevelConfiguration
flowcontrol.v1.PriorityLevelConfigurationReference name=1:s
flowcontrol.v1.PriorityLevelConfigurationSpec type=1:s limited=2:@flowcontrol.v1.LimitedPriorityLevelConfiguration exempt=3:@flowcontrol.v1.ExemptPriorityLevelConfiguration
flowcontrol.v1.PriorityLevelConfigurationStatus conditions=1:*@flowcontrol.v1.PriorityLevelConfigurationCondition
flowcontrol.v1.QueuingConfiguration queues=1:i32 handSize=2:i32 queueLengthLimit=3:i32
flowcontrol.v1.ResourcePolicyRule verbs=1:*s apiGroups=2:*s resources=3:*s clusterScope=4:b namespaces=5:*s
flowcontrol.v1.ServiceAccountSubject namespace=1:s name=2:s
flowcontrol.v1.Subject kind=1:s user=2:@flowcontrol.v1.UserSubject group=3:@flowcontrol.v1.GroupSubject serviceAccount=4:@flowcontrol.v1.ServiceAccountSubject
flowcontrol.v1.UserSubject name=1:s
meta.v1.Condition type=1:s status=2:s observedGeneration=3:i64 lastTransitionTime=4:@meta.v1.Time reason=5:s message=6:s
meta.v1.DeleteOptions gracePeriodSeconds=1:i64 preconditions=2:@meta.v1.Preconditions orphanDependents=3:b propagationPolicy=4:s dryRun=5:*s ignoreStoreReadErrorWithClusterBreakingPotential=6:b
meta.v1.FieldSelectorRequirement key=1:s operator=2:s values=3:*s
meta.v1.LabelSelector matchLabels=1:{s,s} matchExpressions=2:*@meta.v1.LabelSelectorRequirement
meta.v1.LabelSelectorRequirement key=1:s operator=2:s values=3:*s
meta.v1.ListMeta selfLink=1:s resourceVersion=2:s continue=3:s remainingItemCount=4:i64
meta.v1.ManagedFieldsEntry manager=1:s operation=2:s apiVersion=3:s time=4:@meta.v1.Time fieldsType=6:s fieldsV1=7:@meta.v1.FieldsV1 subresource=8:s
meta.v1.ObjectMeta name=1:s generateName=2:s namespace=3:s selfLink=4:s uid=5:s resourceVersion=6:s generation=7:i64 creationTimestamp=8:@meta.v1.Time deletionTimestamp=9:@meta.v1.Time deletionGracePeriodSeconds=10:i64 labels=11:{s,s} annotations=12:{s,s} ownerReferences=13:*@meta.v1.OwnerReference finalizers=14:*s managedFields=17:*@meta.v1.ManagedFieldsEntry
meta.v1.OwnerReference kind=1:s name=3:s uid=4:s apiVersion=5:s controller=6:b blockOwnerDeletion=7:b
meta.v1.PartialObjectMetadata metadata=1:@meta.v1.ObjectMeta
meta.v1.PartialObjectMetadataList metadata=1:@meta.v1.ListMeta items=2:*@meta.v1.PartialObjectMetadata
meta.v1.Preconditions uid=1:s resourceVersion=2:s
meta.v1.Status metadata=1:@meta.v1.ListMeta status=2:s message=3:s reason=4:s details=5:@meta.v1.StatusDetails code=6:i32
meta.v1.StatusCause reason=1:s message=2:s field=3:s
meta.v1.StatusDetails name=1:s group=2:s kind=3:s causes=4:*@meta.v1.StatusCause retryAfterSeconds=5:i32 uid=6:s
meta.v1.WatchEvent type=1:s object=2:@runtime.RawExtension
networking.v1.HttpIngressPath path=1:s backend=2:@networking.v1.IngressBackend pathType=3:s
networking.v1.HttpIngressRuleValue paths=1:*@networking.v1.HttpIngressPath
networking.v1.IPAddress metadata=1:@meta.v1.ObjectMeta spec=2:@networking.v1.IPAddressSpec
networking.v1.IPAddressList metadata=1:@meta.v1.ListMeta items=2:*@networking.v1.IPAddress
networking.v1.IPAddressSpec parentRef=1:@networking.v1.ParentReference
networking.v1.Ingress metadata=1:@meta.v1.ObjectMeta spec=2:@networking.v1.IngressSpec status=3:@networking.v1.IngressStatus
networking.v1.IngressBackend resource=3:@core.v1.TypedLocalObjectReference service=4:@networking.v1.IngressServiceBackend
networking.v1.IngressClass metadata=1:@meta.v1.ObjectMeta spec=2:@networking.v1.IngressClassSpec
networking.v1.IngressClassList metadata=1:@meta.v1.ListMeta items=2:*@networking.v1.IngressClass
networking.v1.IngressClassParametersReference apiGroup=1:s kind=2:s name=3:s scope=4:s namespace=5:s
networking.v1.IngressClassSpec controller=1:s parameters=2:@networking.v1.IngressClassParametersReference
networking.v1.IngressList metadata=1:@meta.v1.ListMeta items=2:*@networking.v1.Ingress
networking.v1.IngressLoadBalancerIngress ip=1:s hostname=2:s ports=4:*@networking.v1.IngressPortStatus
networking.v1.IngressLoadBalancerStatus ingress=1:*@networking.v1.IngressLoadBalancerIngress
networking.v1.IngressPortStatus port=1:i32 protocol=2:s error=3:s
networking.v1.IngressRule host=1:s ingress_rule_value=2:^@networking.v1.IngressRuleValue
networking.v1.IngressRuleValue http=1:@networking.v1.HttpIngressRuleValue
networking.v1.IngressServiceBackend name=1:s port=2:@networking.v1.ServiceBackendPort
networking.v1.IngressSpec defaultBackend=1:@networking.v1.IngressBackend tls=2:*@networking.v1.IngressTls rules=3:*@networking.v1.IngressRule ingressClassName=4:s
networking.v1.IngressStatus loadBalancer=1:@networking.v1.IngressLoadBalancerStatus
networking.v1.IngressTls hosts=1:*s secretName=2:s
networking.v1.IpBlock cidr=1:s except=2:*s
networking.v1.NetworkPolicy metadata=1:@meta.v1.ObjectMeta spec=2:@networking.v1.NetworkPolicySpec
networking.v1.NetworkPolicyEgressRule ports=1:*@networking.v1.NetworkPolicyPort to=2:*@networking.v1.NetworkPolicyPeer
networking.v1.NetworkPolicyIngressRule ports=1:*@networking.v1.NetworkPolicyPort from=2:*@networking.v1.NetworkPolicyPeer
networking.v1.NetworkPolicyList metadata=1:@meta.v1.ListMeta items=2:*@networking.v1.NetworkPolicy
networking.v1.NetworkPolicyPeer podSelector=1:@meta.v1.LabelSelector namespaceSelector=2:@meta.v1.LabelSelector ipBlock=3:@networking.v1.IpBlock
networking.v1.NetworkPolicyPort protocol=1:s port=2:@intstr.IntOrString endPort=3:i32
networking.v1.NetworkPolicySpec podSelector=1:@meta.v1.LabelSelector ingress=2:*@networking.v1.NetworkPolicyIngressRule egress=3:*@networking.v1.NetworkPolicyEgressRule policyTypes=4:*s
networking.v1.ParentReference group=1:s resource=2:s namespace=3:s name=4:s
networking.v1.ServiceBackendPort name=1:s number=2:i32
networking.v1.ServiceCIDR metadata=1:@meta.v1.ObjectMeta spec=2:@networking.v1.ServiceCIDRSpec status=3:@networking.v1.ServiceCIDRStatus
networking.v1.ServiceCIDRList metadata=1:@meta.v1.ListMeta items=2:*@networking.v1.ServiceCIDR
networking.v1.ServiceCIDRSpec cidrs=1:*s
networking.v1.ServiceCIDRStatus conditions=1:*@meta.v1.Condition
node.v1.Overhead podFixed=1:{s,@resource.Quantity}
node.v1.RuntimeClass metadata=1:@meta.v1.ObjectMeta handler=2:s overhead=3:@node.v1.Overhead scheduling=4:@node.v1.Scheduling
node.v1.RuntimeClassList metadata=1:@meta.v1.ListMeta items=2:*@node.v1.RuntimeClass
node.v1.Scheduling nodeSelector=1:{s,s} tolerations=2:*@core.v1.Toleration
policy.v1.Eviction metadata=1:@meta.v1.ObjectMeta deleteOptions=2:@meta.v1.DeleteOptions
policy.v1.PodDisruptionBudget metadata=1:@meta.v1.ObjectMeta spec=2:@policy.v1.PodDisruptionBudgetSpec status=3:@policy.v1.PodDisruptionBudgetStatus
policy.v1.PodDisruptionBudgetList metadata=1:@meta.v1.ListMeta items=2:*@policy.v1.PodDisruptionBudget
policy.v1.PodDisruptionBudgetSpec minAvailable=1:@intstr.IntOrString selector=2:@meta.v1.LabelSelector maxUnavailable=3:@intstr.IntOrString unhealthyPodEvictionPolicy=4:s
policy.v1.PodDisruptionBudgetStatus observedGeneration=1:i64 disruptedPods=2:{s,@meta.v1.Time} disruptionsAllowed=3:i32 currentHealthy=4:i32 desiredHealthy=5:i32 expectedPods=6:i32 conditions=7:*@meta.v1.Condition
rbac.v1.AggregationRule clusterRoleSelectors=1:*@meta.v1.LabelSelector
rbac.v1.ClusterRole metadata=1:@meta.v1.ObjectMeta rules=2:*@rbac.v1.PolicyRule aggregationRule=3:@rbac.v1.AggregationRule
rbac.v1.ClusterRoleBinding metadata=1:@meta.v1.ObjectMeta subjects=2:*@rbac.v1.Subject roleRef=3:@rbac.v1.RoleRef
rbac.v1.ClusterRoleBindingList metadata=1:@meta.v1.ListMeta items=2:*@rbac.v1.ClusterRoleBinding
rbac.v1.ClusterRoleList metadata=1:@meta.v1.ListMeta items=2:*@rbac.v1.ClusterRole
rbac.v1.PolicyRule verbs=1:*s apiGroups=2:*s resources=3:*s resourceNames=4:*s nonResourceURLs=5:*s
rbac.v1.Role metadata=1:@meta.v1.ObjectMeta rules=2:*@rbac.v1.PolicyRule
rbac.v1.RoleBinding metadata=1:@meta.v1.ObjectMeta subjects=2:*@rbac.v1.Subject roleRef=3:@rbac.v1.RoleRef
rbac.v1.RoleBindingList metadata=1:@meta.v1.ListMeta items=2:*@rbac.v1.RoleBinding
rbac.v1.RoleList metadata=1:@meta.v1.ListMeta items=2:*@rbac.v1.Role
rbac.v1.RoleRef apiGroup=1:s kind=2:s name=3:s
rbac.v1.Subject kind=1:s apiGroup=2:s name=3:s namespace=4:s
resource.v1.AllocatedDeviceStatus driver=1:s pool=2:s device=3:s conditions=4:*@meta.v1.Condition data=5:@runtime.RawExtension networkData=6:@resource.v1.NetworkDeviceData shareID=7:s
resource.v1.AllocationResult devices=1:@resource.v1.DeviceAllocationResult nodeSelector=3:@core.v1.NodeSelector allocationTimestamp=5:@meta.v1.Time
resource.v1.CapacityRequestPolicy default=1:@resource.Quantity validValues=3:*@resource.Quantity validRange=4:@resource.v1.CapacityRequestPolicyRange
resource.v1.CapacityRequestPolicyRange min=1:@resource.Quantity max=2:@resource.Quantity step=3:@resource.Quantity
resource.v1.CapacityRequirements requests=1:{s,@resource.Quantity}
resource.v1.CelDeviceSelector expression=1:s
resource.v1.Counter value=1:@resource.Quantity
resource.v1.CounterSet name=1:s counters=2:{s,@resource.v1.Counter}
resource.v1.Device name=1:s attributes=2:{s,@resource.v1.DeviceAttribute} capacity=3:{s,@resource.v1.DeviceCapacity} consumesCounters=4:*@resource.v1.DeviceCounterConsumption nodeName=5:s nodeSelector=6:@core.v1.NodeSelector allNodes=7:b taints=8:*@resource.v1.DeviceTaint bindsToNode=9:b bindingConditions=10:*s bindingFailureConditions=11:*s allowMultipleAllocations=12:b
resource.v1.DeviceAllocationConfiguration source=1:s requests=2:*s device_configuration=3:^@resource.v1.DeviceConfiguration
resource.v1.DeviceAllocationResult results=1:*@resource.v1.DeviceRequestAllocationResult config=2:*@resource.v1.DeviceAllocationConfiguration
resource.v1.DeviceAttribute int=2:i64 bool=3:b string=4:s version=5:s
resource.v1.DeviceCapacity value=1:@resource.Quantity requestPolicy=2:@resource.v1.CapacityRequestPolicy
resource.v1.DeviceClaim requests=1:*@resource.v1.DeviceRequest constraints=2:*@resource.v1.DeviceConstraint config=3:*@resource.v1.DeviceClaimConfiguration
resource.v1.DeviceClaimConfiguration requests=1:*s device_configuration=2:^@resource.v1.DeviceConfiguration
resource.v1.DeviceClass metadata=1:@meta.v1.ObjectMeta spec=2:@resource.v1.DeviceClassSpec
resource.v1.DeviceClassConfiguration device_configuration=1:^@resource.v1.DeviceConfiguration
resource.v1.DeviceClassList metadata=1:@meta.v1.ListMeta items=2:*@resource.v1.DeviceClass
resource.v1.DeviceClassSpec selectors=1:*@resource.v1.DeviceSelector config=2:*@resource.v1.DeviceClassConfiguration extendedResourceName=4:s
resource.v1.DeviceConfiguration opaque=1:@resource.v1.OpaqueDeviceConfiguration
resource.v1.DeviceConstraint requests=1:*s matchAttribute=2:s distinctAttribute=3:s
resource.v1.DeviceCounterConsumption counterSet=1:s counters=2:{s,@resource.v1.Counter}
resource.v1.DeviceRequest name=1:s exactly=2:@resource.v1.ExactDeviceRequest firstAvailable=3:*@resource.v1.DeviceSubRequest
resource.v1.DeviceRequestAllocationResult request=1:s driver=2:s pool=3:s device=4:s adminAccess=5:b tolerations=6:*@resource.v1.DeviceToleration bindingConditions=7:*s bindingFailureConditions=8:*s shareID=9:s consumedCapacity=10:{s,@resource.Quantity}
resource.v1.DeviceSelector cel=1:@resource.v1.CelDeviceSelector
resource.v1.DeviceSubRequest name=1:s deviceClassName=2:s selectors=3:*@resource.v1.DeviceSelector allocationMode=4:s count=5:i64 tolerations=6:*@resource.v1.DeviceToleration capacity=7:@resource.v1.CapacityRequirements
resource.v1.DeviceTaint key=1:s value=2:s effect=3:s timeAdded=4:@meta.v1.Time
resource.v1.DeviceToleration key=1:s operator=2:s value=3:s effect=4:s tolerationSeconds=5:i64
resource.v1.ExactDeviceRequest deviceClassName=1:s selectors=2:*@resource.v1.DeviceSelector allocationMode=3:s count=4:i64 adminAccess=5:b tolerations=6:*@resource.v1.DeviceToleration capacity=7:@resource.v1.CapacityRequirements
resource.v1.NetworkDeviceData interfaceName=1:s ips=2:*s hardwareAddress=3:s
resource.v1.OpaqueDeviceConfiguration driver=1:s parameters=2:@runtime.RawExtension
resource.v1.ResourceClaim metadata=1:@meta.v1.ObjectMeta spec=2:@resource.v1.ResourceClaimSpec status=3:@resource.v1.ResourceClaimStatus
resource.v1.ResourceClaimConsumerReference apiGroup=1:s resource=3:s name=4:s uid=5:s
resource.v1.ResourceClaimList metadata=1:@meta.v1.ListMeta items=2:*@resource.v1.ResourceClaim
resource.v1.ResourceClaimSpec devices=1:@resource.v1.DeviceClaim
resource.v1.ResourceClaimStatus allocation=1:@resource.v1.AllocationResult reservedFor=2:*@resource.v1.ResourceClaimConsumerReference devices=4:*@resource.v1.AllocatedDeviceStatus
resource.v1.ResourceClaimTemplate metadata=1:@meta.v1.ObjectMeta spec=2:@resource.v1.ResourceClaimTemplateSpec
resource.v1.ResourceClaimTemplateList metadata=1:@meta.v1.ListMeta items=2:*@resource.v1.ResourceClaimTemplate
resource.v1.ResourceClaimTemplateSpec metadata=1:@meta.v1.ObjectMeta spec=2:@resource.v1.ResourceClaimSpec
resource.v1.ResourcePool name=1:s generation=2:i64 resourceSliceCount=3:i64
resource.v1.ResourceSlice metadata=1:@meta.v1.ObjectMeta spec=2:@resource.v1.ResourceSliceSpec
resource.v1.ResourceSliceList metadata=1:@meta.v1.ListMeta items=2:*@resource.v1.ResourceSlice
resource.v1.ResourceSliceSpec driver=1:s pool=2:@resource.v1.ResourcePool nodeName=3:s nodeSelector=4:@core.v1.NodeSelector allNodes=5:b devices=6:*@resource.v1.Device perDeviceNodeSelection=7:b sharedCounters=8:*@resource.v1.CounterSet
scheduling.v1.PriorityClass metadata=1:@meta.v1.ObjectMeta value=2:i32 globalDefault=3:b description=4:s preemptionPolicy=5:s
scheduling.v1.PriorityClassList metadata=1:@meta.v1.ListMeta items=2:*@scheduling.v1.PriorityClass
storage.v1.CSIDriver metadata=1:@meta.v1.ObjectMeta spec=2:@storage.v1.CSIDriverSpec
storage.v1.CSIDriverList metadata=1:@meta.v1.ListMeta items=2:*@storage.v1.CSIDriver
storage.v1.CSIDriverSpec attachRequired=1:b podInfoOnMount=2:b volumeLifecycleModes=3:*s storageCapacity=4:b fsGroupPolicy=5:s tokenRequests=6:*@storage.v1.TokenRequest requiresRepublish=7:b seLinuxMount=8:b nodeAllocatableUpdatePeriodSeconds=9:i64 serviceAccountTokenInSecrets=10:b
storage.v1.CSINode metadata=1:@meta.v1.ObjectMeta spec=2:@storage.v1.CSINodeSpec
storage.v1.CSINodeDriver name=1:s nodeID=2:s topologyKeys=3:*s allocatable=4:@storage.v1.VolumeNodeResources
storage.v1.CSINodeList metadata=1:@meta.v1.ListMeta items=2:*@storage.v1.CSINode
storage.v1.CSINodeSpec drivers=1:*@storage.v1.CSINodeDriver
storage.v1.CSIStorageCapacity metadata=1:@meta.v1.ObjectMeta nodeTopology=2:@meta.v1.LabelSelector storageClassName=3:s capacity=4:@resource.Quantity maximumVolumeSize=5:@resource.Quantity
storage.v1.CSIStorageCapacityList metadata=1:@meta.v1.ListMeta items=2:*@storage.v1.CSIStorageCapacity
storage.v1.StorageClass metadata=1:@meta.v1.ObjectMeta provisioner=2:s parameters=3:{s,s} reclaimPolicy=4:s mountOptions=5:*s allowVolumeExpansion=6:b volumeBindingMode=7:s allowedTopologies=8:*@core.v1.TopologySelectorTerm
storage.v1.StorageClassList metadata=1:@meta.v1.ListMeta items=2:*@storage.v1.StorageClass
storage.v1.TokenRequest audience=1:s expirationSeconds=2:i64
storage.v1.VolumeAttachment metadata=1:@meta.v1.ObjectMeta spec=2:@storage.v1.VolumeAttachmentSpec status=3:@storage.v1.VolumeAttachmentStatus
storage.v1.VolumeAttachmentList metadata=1:@meta.v1.ListMeta items=2:*@storage.v1.VolumeAttachment
storage.v1.VolumeAttachmentSource persistentVolumeName=1:s inlineVolumeSpec=2:@core.v1.PersistentVolumeSpec
storage.v1.VolumeAttachmentSpec attacher=1:s source=2:@storage.v1.VolumeAttachmentSource nodeName=3:s
storage.v1.VolumeAttachmentStatus attached=1:b attachmentMetadata=2:{s,s} attachError=3:@storage.v1.VolumeError detachError=4:@storage.v1.VolumeError
storage.v1.VolumeAttributesClass metadata=1:@meta.v1.ObjectMeta driverName=2:s parameters=3:{s,s}
storage.v1.VolumeAttributesClassList metadata=1:@meta.v1.ListMeta items=2:*@storage.v1.VolumeAttributesClass
storage.v1.VolumeError time=1:@meta.v1.Time message=2:s errorCode=3:i32
storage.v1.VolumeNodeResources count=1:i32
federation.v1beta1.Cluster metadata=1:@meta.v1.ObjectMeta spec=2:@federation.v1beta1.ClusterSpec status=3:@federation.v1beta1.ClusterStatus
federation.v1beta1.ClusterCondition type=1:s status=2:s lastProbeTime=3:@meta.v1.Time lastTransitionTime=4:@meta.v1.Time reason=5:s message=6:s
federation.v1beta1.ClusterList metadata=1:@meta.v1.ListMeta items=2:*@federation.v1beta1.Cluster
federation.v1beta1.ClusterSpec serverAddressByClientCIDRs=1:*@federation.v1beta1.ServerAddressByClientCIDR secretRef=2:@core.v1.LocalObjectReference
federation.v1beta1.ClusterStatus conditions=1:*@federation.v1beta1.ClusterCondition zones=5:*s region=6:s kubernetesVersion=7:s
federation.v1beta1.ServerAddressByClientCIDR clientCIDR=1:s serverAddress=2:s
"#;

#[cfg(test)]
mod tests {
    // Tests fail by panicking: unwrap is the assertion.
    #![allow(clippy::unwrap_used)]

    use super::*;
    use k8s_pb::api::apps::v1 as apps;
    use k8s_pb::api::authentication::v1 as authn;
    use k8s_pb::api::authorization::v1 as authz;
    use k8s_pb::api::core::v1 as core;
    use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
    use k8s_pb::apimachinery::pkg::api::resource::Quantity;
    use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
    use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
    use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
    use prost::Message as _;
    use std::collections::BTreeMap;

    fn body<M: prost::Message>(api_version: &str, kind: &str, msg: &M) -> Vec<u8> {
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some(api_version.into()),
                kind: Some(kind.into()),
            }),
            raw: Some(msg.encode_to_vec()),
            content_encoding: Some(String::new()),
            content_type: Some(String::new()),
        };
        let mut b = MAGIC.to_vec();
        b.extend(unknown.encode_to_vec());
        b
    }

    fn meta(name: &str) -> Option<meta::ObjectMeta> {
        Some(meta::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        })
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// A CRD as a Go client writes it: every non-pointer string and bool
    /// of each schema node present (empty / false), the JSON-valued
    /// wrappers in both of their forms.
    fn go_written_crd() -> apiext::CustomResourceDefinition {
        fn props(ty: &str) -> apiext::JsonSchemaProps {
            apiext::JsonSchemaProps {
                r#type: Some(ty.into()),
                id: Some(String::new()),
                schema: Some(String::new()),
                r#ref: Some(String::new()),
                description: Some(String::new()),
                format: Some(String::new()),
                title: Some(String::new()),
                pattern: Some(String::new()),
                exclusive_maximum: Some(false),
                exclusive_minimum: Some(false),
                unique_items: Some(false),
                nullable: Some(false),
                x_kubernetes_embedded_resource: Some(false),
                x_kubernetes_int_or_string: Some(false),
                ..Default::default()
            }
        }
        let raw = |v: Value| apiext::Json {
            raw: Some(serde_json::to_vec(&v).unwrap()),
        };
        let mut size = props("integer");
        size.minimum = Some(1.0);
        size.default = Some(raw(json!(3)));
        let mut color = props("string");
        color.r#enum = vec![raw(json!("red")), raw(json!("blue"))];
        let mut tags = props("array");
        tags.items = Some(Box::new(apiext::JsonSchemaPropsOrArray {
            schema: Some(Box::new(props("string"))),
            j_son_schemas: vec![],
        }));
        tags.x_kubernetes_list_type = Some("set".into());
        let mut labels = props("object");
        labels.additional_properties = Some(Box::new(apiext::JsonSchemaPropsOrBool {
            allows: Some(true),
            schema: Some(Box::new(props("string"))),
        }));
        let mut closed = props("object");
        closed.additional_properties = Some(Box::new(apiext::JsonSchemaPropsOrBool {
            allows: Some(false),
            schema: None,
        }));
        let mut extra = props("object");
        extra.x_kubernetes_preserve_unknown_fields = Some(true);
        let mut spec = props("object");
        spec.required = vec!["size".into()];
        spec.properties = [
            ("size".to_string(), size),
            ("color".to_string(), color),
            ("tags".to_string(), tags),
            ("labels".to_string(), labels),
            ("closed".to_string(), closed),
            ("extra".to_string(), extra),
        ]
        .into();
        spec.x_kubernetes_validations = vec![apiext::ValidationRule {
            rule: Some("self.size <= 10".into()),
            message: Some("too big".into()),
            ..Default::default()
        }];
        let mut root = props("object");
        root.properties = [("spec".to_string(), spec)].into();
        apiext::CustomResourceDefinition {
            metadata: meta("widgets.example.com"),
            spec: Some(apiext::CustomResourceDefinitionSpec {
                group: Some("example.com".into()),
                names: Some(apiext::CustomResourceDefinitionNames {
                    plural: Some("widgets".into()),
                    singular: Some("widget".into()),
                    kind: Some("Widget".into()),
                    list_kind: Some("WidgetList".into()),
                    short_names: vec!["wd".into()],
                    categories: vec![],
                }),
                scope: Some("Namespaced".into()),
                versions: vec![apiext::CustomResourceDefinitionVersion {
                    name: Some("v1".into()),
                    served: Some(true),
                    storage: Some(true),
                    schema: Some(apiext::CustomResourceValidation {
                        open_apiv3_schema: Some(root),
                    }),
                    subresources: Some(apiext::CustomResourceSubresources {
                        status: Some(apiext::CustomResourceSubresourceStatus {}),
                        scale: None,
                    }),
                    ..Default::default()
                }],
                conversion: None,
                preserve_unknown_fields: None,
            }),
            status: None,
        }
    }

    #[test]
    fn a_custom_resource_definition_decodes_to_its_json_form() {
        let v = decode(&body(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            &go_written_crd(),
        ))
        .unwrap();
        let schema = &v["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        assert_eq!(
            schema["properties"]["spec"],
            json!({
                "type": "object",
                "required": ["size"],
                "properties": {
                    "size": {"type": "integer", "minimum": 1, "default": 3},
                    "color": {"type": "string", "enum": ["red", "blue"]},
                    "tags": {"type": "array", "items": {"type": "string"},
                             "x-kubernetes-list-type": "set"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "closed": {"type": "object", "additionalProperties": false},
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                },
                "x-kubernetes-validations": [{"rule": "self.size <= 10", "message": "too big"}]
            })
        );
        assert_eq!(
            v["spec"]["versions"][0]["subresources"],
            json!({"status": {}})
        );
        assert_eq!(v["spec"]["names"]["shortNames"], json!(["wd"]));
    }

    #[test]
    fn a_custom_resource_definition_round_trips_through_the_generated_types() {
        let v = decode(&body(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            &go_written_crd(),
        ))
        .unwrap();
        let bytes = encode(&v).unwrap();
        assert_eq!(decode(&bytes).unwrap(), v);
        let unknown = Unknown::decode(&bytes[MAGIC.len()..]).unwrap();
        let crd =
            apiext::CustomResourceDefinition::decode(unknown.raw.unwrap().as_slice()).unwrap();
        let version = &crd.spec.unwrap().versions[0];
        let root = version
            .schema
            .as_ref()
            .unwrap()
            .open_apiv3_schema
            .as_ref()
            .unwrap();
        let spec = &root.properties["spec"];
        let labels = spec.properties["labels"]
            .additional_properties
            .as_ref()
            .unwrap();
        assert_eq!(labels.allows, Some(true));
        assert_eq!(
            labels.schema.as_ref().unwrap().r#type.as_deref(),
            Some("string")
        );
        let closed = spec.properties["closed"]
            .additional_properties
            .as_ref()
            .unwrap();
        assert_eq!(
            (closed.allows, closed.schema.is_none()),
            (Some(false), true)
        );
        let tags = spec.properties["tags"].items.as_ref().unwrap();
        assert_eq!(
            tags.schema.as_ref().unwrap().r#type.as_deref(),
            Some("string")
        );
        let color = &spec.properties["color"];
        assert_eq!(color.r#enum[1].raw.as_deref(), Some(&b"\"blue\""[..]));
        assert_eq!(
            spec.properties["size"]
                .default
                .as_ref()
                .unwrap()
                .raw
                .as_deref(),
            Some(&b"3"[..])
        );
        assert_eq!(
            spec.properties["extra"].x_kubernetes_preserve_unknown_fields,
            Some(true)
        );
        assert_eq!(version.served, Some(true));
    }

    #[test]
    fn schemas_or_arrays_and_string_arrays_keep_their_array_forms() {
        let v = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "a.b"},
            "spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
                "type": "array",
                "items": [{"type": "string"}, {"type": "integer"}],
                "dependencies": {"a": ["b", "c"], "d": {"type": "object"}},
                "additionalItems": true
            }}}]}
        });
        let bytes = encode(&v).unwrap();
        assert_eq!(decode(&bytes).unwrap(), v);
    }

    #[test]
    fn the_schema_parses_and_every_referenced_message_exists() {
        let s = &*SCHEMA;
        assert!(s.bad_lines.is_empty(), "{:?}", s.bad_lines);
        let special = [
            "meta.v1.Time",
            "meta.v1.MicroTime",
            "meta.v1.Duration",
            "meta.v1.FieldsV1",
            "resource.Quantity",
            "intstr.IntOrString",
            "runtime.RawExtension",
            "apiextensions.v1.Json",
        ];
        let known = |m: &str| s.messages.contains_key(m) || special.contains(&m);
        for (name, msg) in &s.messages {
            for f in &msg.fields {
                let refs: Vec<&String> = match &f.ty {
                    FieldType::One(Scalar::Msg(m)) | FieldType::Repeated(Scalar::Msg(m)) => {
                        vec![m]
                    }
                    FieldType::Map(_, Scalar::Msg(m)) | FieldType::Inline(m) => vec![m],
                    _ => vec![],
                };
                for r in refs {
                    assert!(known(r), "{name}.{} refers to unknown {r}", f.json);
                }
            }
        }
        for m in s.kinds.values() {
            assert!(s.messages.contains_key(m), "{m}");
        }
        assert!(s.kinds.len() >= 40);
    }

    /// The table holds a kind (and its list) exactly when the kind's
    /// declaration says it is served as protobuf: a kind added without its
    /// messages in the table, or a table entry for a kind that says it is
    /// not, fails here.
    #[test]
    fn the_table_has_exactly_the_kinds_declared_as_protobuf() {
        let mut kinds = ubernetes_registry::kinds::builtin();
        kinds.push(ubernetes_apiextensions::crd_strategy());
        let mut problems = Vec::new();
        for s in &kinds {
            let info = s.info();
            for kind in [info.kind.clone(), format!("{}List", info.kind)] {
                let in_table = SCHEMA
                    .kinds
                    .contains_key(&(info.api_version(), kind.clone()));
                if in_table != s.protobuf() {
                    problems.push(format!(
                        "{} {kind}: declared protobuf {}, in the table {in_table}",
                        info.api_version(),
                        s.protobuf()
                    ));
                }
            }
        }
        assert!(problems.is_empty(), "{problems:#?}");
    }

    #[test]
    fn configmap_decodes_to_the_json_the_json_api_takes() {
        let cm = core::ConfigMap {
            metadata: Some(meta::ObjectMeta {
                name: Some("app-config".into()),
                namespace: Some("default".into()),
                labels: map(&[("app", "web")]),
                creation_timestamp: Some(meta::Time {
                    seconds: Some(1_700_000_000),
                    nanos: Some(0),
                }),
                ..Default::default()
            }),
            data: map(&[("APP_COLOR", "blue"), ("MODE", "prod")]),
            binary_data: [("bin".to_string(), vec![0u8, 1, 2, 255])].into(),
            immutable: None,
        };
        let v = decode(&body("v1", "ConfigMap", &cm)).unwrap();
        assert_eq!(
            v,
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": "app-config",
                    "namespace": "default",
                    "creationTimestamp": "2023-11-14T22:13:20Z",
                    "labels": {"app": "web"}
                },
                "data": {"APP_COLOR": "blue", "MODE": "prod"},
                "binaryData": {"bin": "AAEC/w=="}
            })
        );
    }

    #[test]
    fn secret_bytes_become_base64_and_namespace_decodes() {
        let s = core::Secret {
            metadata: meta("creds"),
            data: [("password".to_string(), b"s3cr3t".to_vec())].into(),
            r#type: Some("Opaque".into()),
            ..Default::default()
        };
        let v = decode(&body("v1", "Secret", &s)).unwrap();
        assert_eq!(v["data"]["password"], "czNjcjN0");
        assert_eq!(v["type"], "Opaque");

        let ns = core::Namespace {
            metadata: meta("team-a"),
            ..Default::default()
        };
        let v = decode(&body("v1", "Namespace", &ns)).unwrap();
        assert_eq!(
            v,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
        );
    }

    #[test]
    fn self_subject_access_review_decodes_for_auth_can_i() {
        let ssar = authz::SelfSubjectAccessReview {
            metadata: Some(meta::ObjectMeta::default()),
            spec: Some(authz::SelfSubjectAccessReviewSpec {
                resource_attributes: Some(authz::ResourceAttributes {
                    namespace: Some("default".into()),
                    verb: Some("create".into()),
                    group: Some("apps".into()),
                    resource: Some("deployments".into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            status: None,
        };
        let v = decode(&body(
            "authorization.k8s.io/v1",
            "SelfSubjectAccessReview",
            &ssar,
        ))
        .unwrap();
        assert_eq!(
            v["spec"],
            json!({"resourceAttributes": {"namespace": "default", "verb": "create", "group": "apps", "resource": "deployments"}})
        );
        assert_eq!(v["metadata"], json!({}));
    }

    #[test]
    fn list_wrapper_extra_values_become_arrays() {
        let sar = authz::SubjectAccessReview {
            metadata: meta(""),
            spec: Some(authz::SubjectAccessReviewSpec {
                user: Some("alice".into()),
                groups: vec!["devs".into(), "ops".into()],
                extra: [(
                    "scopes".to_string(),
                    authz::ExtraValue {
                        items: vec!["a".into(), "b".into()],
                    },
                )]
                .into(),
                non_resource_attributes: Some(authz::NonResourceAttributes {
                    path: Some("/healthz".into()),
                    verb: Some("get".into()),
                }),
                ..Default::default()
            }),
            status: None,
        };
        let v = decode(&body(
            "authorization.k8s.io/v1",
            "SubjectAccessReview",
            &sar,
        ))
        .unwrap();
        assert_eq!(v["spec"]["extra"], json!({"scopes": ["a", "b"]}));
        assert_eq!(v["spec"]["groups"], json!(["devs", "ops"]));
        assert_eq!(v["spec"]["nonResourceAttributes"]["path"], "/healthz");
    }

    #[test]
    fn deployment_decodes_int_or_string_quantities_and_inlined_structs() {
        let container = core::Container {
            name: Some("nginx".into()),
            image: Some("nginx:1.27".into()),
            ports: vec![core::ContainerPort {
                container_port: Some(80),
                protocol: Some("TCP".into()),
                ..Default::default()
            }],
            resources: Some(core::ResourceRequirements {
                limits: [(
                    "memory".to_string(),
                    Quantity {
                        string: Some("128Mi".into()),
                    },
                )]
                .into(),
                ..Default::default()
            }),
            readiness_probe: Some(core::Probe {
                handler: Some(core::ProbeHandler {
                    http_get: Some(core::HttpGetAction {
                        path: Some("/healthz".into()),
                        port: Some(IntOrString {
                            r#type: Some(0),
                            int_val: Some(8080),
                            str_val: None,
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                period_seconds: Some(5),
                ..Default::default()
            }),
            ..Default::default()
        };
        let d = apps::Deployment {
            metadata: meta("web"),
            spec: Some(apps::DeploymentSpec {
                replicas: Some(3),
                selector: Some(meta::LabelSelector {
                    match_labels: map(&[("app", "web")]),
                    match_expressions: vec![],
                }),
                template: Some(core::PodTemplateSpec {
                    metadata: Some(meta::ObjectMeta {
                        labels: map(&[("app", "web")]),
                        ..Default::default()
                    }),
                    spec: Some(core::PodSpec {
                        containers: vec![container],
                        volumes: vec![core::Volume {
                            name: Some("cfg".into()),
                            volume_source: Some(core::VolumeSource {
                                config_map: Some(core::ConfigMapVolumeSource {
                                    local_object_reference: Some(core::LocalObjectReference {
                                        name: Some("app-config".into()),
                                    }),
                                    ..Default::default()
                                }),
                                ..Default::default()
                            }),
                        }],
                        ..Default::default()
                    }),
                }),
                strategy: Some(apps::DeploymentStrategy {
                    r#type: Some("RollingUpdate".into()),
                    rolling_update: Some(apps::RollingUpdateDeployment {
                        max_surge: Some(IntOrString {
                            r#type: Some(1),
                            int_val: None,
                            str_val: Some("25%".into()),
                        }),
                        max_unavailable: Some(IntOrString {
                            r#type: Some(0),
                            int_val: Some(0),
                            str_val: None,
                        }),
                    }),
                }),
                ..Default::default()
            }),
            status: None,
        };
        let v = decode(&body("apps/v1", "Deployment", &d)).unwrap();
        let spec = &v["spec"];
        assert_eq!(spec["replicas"], 3);
        assert_eq!(spec["selector"], json!({"matchLabels": {"app": "web"}}));
        assert_eq!(
            spec["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"}})
        );
        let pod = &spec["template"]["spec"];
        assert_eq!(
            pod["volumes"],
            json!([{"name": "cfg", "configMap": {"name": "app-config"}}])
        );
        let c = &pod["containers"][0];
        assert_eq!(c["name"], "nginx");
        assert_eq!(
            c["ports"],
            json!([{"containerPort": 80, "protocol": "TCP"}])
        );
        assert_eq!(c["resources"], json!({"limits": {"memory": "128Mi"}}));
        assert_eq!(
            c["readinessProbe"],
            json!({"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 5})
        );
    }

    #[test]
    fn service_target_port_and_token_request_decode() {
        let svc = core::Service {
            metadata: meta("web"),
            spec: Some(core::ServiceSpec {
                r#type: Some("NodePort".into()),
                selector: map(&[("app", "web")]),
                ports: vec![core::ServicePort {
                    port: Some(80),
                    target_port: Some(IntOrString {
                        r#type: Some(1),
                        int_val: None,
                        str_val: Some("http".into()),
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            status: None,
        };
        let v = decode(&body("v1", "Service", &svc)).unwrap();
        assert_eq!(
            v["spec"]["ports"],
            json!([{"port": 80, "targetPort": "http"}])
        );
        assert_eq!(v["spec"]["type"], "NodePort");

        let tr = authn::TokenRequest {
            metadata: meta("default"),
            spec: Some(authn::TokenRequestSpec {
                audiences: vec!["https://kubernetes.default.svc".into()],
                expiration_seconds: Some(3600),
                bound_object_ref: None,
            }),
            status: None,
        };
        let v = decode(&body("authentication.k8s.io/v1", "TokenRequest", &tr)).unwrap();
        assert_eq!(
            v["spec"],
            json!({"audiences": ["https://kubernetes.default.svc"], "expirationSeconds": 3600})
        );
    }

    #[test]
    fn delete_options_decode_under_any_group_version() {
        let opts = meta::DeleteOptions {
            propagation_policy: Some("Foreground".into()),
            preconditions: Some(meta::Preconditions {
                uid: Some("u-1".into()),
                resource_version: None,
            }),
            grace_period_seconds: Some(0),
            ..Default::default()
        };
        for av in ["v1", "apps/v1", "meta.k8s.io/v1"] {
            let v = decode(&body(av, "DeleteOptions", &opts)).unwrap();
            assert_eq!(v["propagationPolicy"], "Foreground");
            assert_eq!(v["preconditions"], json!({"uid": "u-1"}));
            assert_eq!(v["gracePeriodSeconds"], 0);
        }
    }

    /// `kubectl certificate approve` PUTs the CSR as protobuf.
    #[test]
    fn csr_approval_decodes_with_bytes_as_base64() {
        use k8s_pb::api::certificates::v1 as cert;
        let csr = cert::CertificateSigningRequest {
            metadata: meta("alice"),
            spec: Some(cert::CertificateSigningRequestSpec {
                request: Some(b"-----BEGIN".to_vec()),
                signer_name: Some("kubernetes.io/kube-apiserver-client".into()),
                expiration_seconds: Some(3600),
                usages: vec!["client auth".into()],
                ..Default::default()
            }),
            status: Some(cert::CertificateSigningRequestStatus {
                conditions: vec![cert::CertificateSigningRequestCondition {
                    r#type: Some("Approved".into()),
                    status: Some("True".into()),
                    reason: Some("KubectlApprove".into()),
                    ..Default::default()
                }],
                certificate: None,
            }),
        };
        let v = decode(&body(
            "certificates.k8s.io/v1",
            "CertificateSigningRequest",
            &csr,
        ))
        .unwrap();
        assert_eq!(v["spec"]["request"], "LS0tLS1CRUdJTg==");
        assert_eq!(v["spec"]["expirationSeconds"], 3600);
        assert_eq!(v["spec"]["usages"], json!(["client auth"]));
        assert_eq!(v["status"]["conditions"][0]["type"], "Approved");
        assert_eq!(v["status"]["conditions"][0]["status"], "True");
    }

    #[test]
    fn micro_time_keeps_microseconds() {
        let ev = k8s_pb::api::events::v1::Event {
            metadata: meta("e"),
            event_time: Some(meta::MicroTime {
                seconds: Some(1_700_000_000),
                nanos: Some(123_456_000),
            }),
            ..Default::default()
        };
        let v = decode(&body("events.k8s.io/v1", "Event", &ev)).unwrap();
        assert_eq!(v["eventTime"], "2023-11-14T22:13:20.123456Z");
    }

    #[test]
    fn a_body_without_the_magic_is_a_bad_request() {
        let e = decode(b"{\"kind\":\"ConfigMap\"}").unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(e.reason, "BadRequest");
        assert_eq!(
            e.message,
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
        );
        // protobuf.Serializer.Decode's first two checks.
        let e = decode_as(b"", "ConfigMap").unwrap_err();
        assert_eq!(
            e.message,
            "the object provided is unrecognized (must be of type ConfigMap): empty data (<empty>)"
        );
        let e = decode_as(MAGIC, "ConfigMap").unwrap_err();
        assert_eq!(
            e.message,
            "the object provided is unrecognized (must be of type ConfigMap): empty body (6b387300)"
        );
    }

    #[test]
    fn a_custom_resource_in_protobuf_cannot_be_decoded_as_kube_says() {
        let e = decode_as(
            &body("example.com/v1", "Widget", &core::ConfigMap::default()),
            "Widget",
        )
        .unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "Widget in version \"v1\" cannot be handled as a Widget: object *unstructured.Unstructured does not implement the protobuf marshalling interface and cannot be encoded to a protobuf message"
        );
        // A built-in kind's name keeps kube's scheme error.
        let e = decode_as(
            &body("apps/v1beta1", "Deployment", &apps::Deployment::default()),
            "Deployment",
        )
        .unwrap_err();
        assert!(
            e.message
                .contains("no kind \"Deployment\" is registered for version \"apps/v1beta1\""),
            "{}",
            e.message
        );
    }

    #[test]
    fn every_truncation_of_a_valid_body_fails_cleanly() {
        let cm = core::ConfigMap {
            metadata: meta("c"),
            data: map(&[("k", "v")]),
            ..Default::default()
        };
        let full = body("v1", "ConfigMap", &cm);
        assert!(decode(&full).is_ok());
        for n in 0..full.len() {
            match decode(&full[..n]) {
                Ok(v) => assert_eq!(v["kind"].as_str().map(|_| ()), Some(())),
                Err(e) => assert_eq!(e.code, 400),
            }
        }
        let e = decode(&full[..full.len() - 1]).unwrap_err();
        assert_eq!(e.message, "unexpected EOF");
    }

    #[test]
    fn garbage_after_the_magic_never_panics() {
        // A fixed xorshift stream: reproducible pseudo-random bodies.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let valid = body(
            "v1",
            "ConfigMap",
            &core::ConfigMap {
                metadata: meta("c"),
                ..Default::default()
            },
        );
        for round in 0..3000 {
            let len = (next() % 64) as usize;
            let mut b = if round % 2 == 0 {
                MAGIC.to_vec()
            } else {
                valid.clone()
            };
            for _ in 0..len {
                let byte = (next() & 0xff) as u8;
                if round % 2 == 0 || b.len() < 8 {
                    b.push(byte);
                } else {
                    let at = (next() as usize) % b.len();
                    b[at] = byte;
                }
            }
            if let Err(e) = decode(&b) {
                assert_eq!(e.code, 400);
            }
        }
    }

    #[test]
    fn unknown_and_missing_kinds_are_bad_requests_worded_as_kube() {
        let cm = core::ConfigMap::default();
        let e = decode(&body("v1", "Widget", &cm)).unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "no kind \"Widget\" is registered for version \"v1\" in scheme \"k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30\""
        );
        let e = decode_as(&body("v1", "Widget", &cm), "ConfigMap").unwrap_err();
        assert!(
            e.message
                .starts_with("Widget in version \"v1\" cannot be handled as a ConfigMap: no kind")
        );
        let e = decode(&body("v1", "", &cm)).unwrap_err();
        assert_eq!(
            e.message,
            "Object 'Kind' is missing in 'runtime.TypeMeta{APIVersion:\"v1\", Kind:\"\"}'"
        );
    }

    #[test]
    fn a_wrong_wire_type_names_the_field() {
        // ConfigMap field 2 (data) sent as a varint.
        let mut raw = Vec::new();
        raw.extend([0x10, 0x01]);
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some("v1".into()),
                kind: Some("ConfigMap".into()),
            }),
            raw: Some(raw),
            ..Default::default()
        };
        let mut b = MAGIC.to_vec();
        b.extend(unknown.encode_to_vec());
        let e = decode(&b).unwrap_err();
        assert_eq!(e.message, "proto: wrong wireType = 0 for field Data");
    }

    #[test]
    fn unknown_fields_are_skipped() {
        let mut raw = core::Namespace {
            metadata: meta("n"),
            ..Default::default()
        }
        .encode_to_vec();
        // Field 99, varint 7.
        raw.extend([0x98, 0x06, 0x07]);
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some("v1".into()),
                kind: Some("Namespace".into()),
            }),
            raw: Some(raw),
            ..Default::default()
        };
        let mut b = MAGIC.to_vec();
        b.extend(unknown.encode_to_vec());
        assert_eq!(decode(&b).unwrap()["metadata"]["name"], "n");
    }

    #[test]
    fn protobuf_content_types_are_recognised() {
        assert!(is_protobuf("application/vnd.kubernetes.protobuf"));
        assert!(is_protobuf(
            "Application/VND.kubernetes.protobuf; charset=binary"
        ));
        assert!(!is_protobuf("application/json"));
        assert!(!is_protobuf(""));
    }

    #[test]
    fn go_durations_print_like_time_duration() {
        assert_eq!(go_duration(0), "0s");
        assert_eq!(go_duration(1_500), "1.5µs");
        assert_eq!(go_duration(2_000_000), "2ms");
        assert_eq!(go_duration(1_500_000_000), "1.5s");
        assert_eq!(go_duration(3_600_000_000_000), "1h0m0s");
        assert_eq!(go_duration(90_000_000_000), "1m30s");
        assert_eq!(go_duration(-5_000_000_000), "-5s");
    }

    // ---- encoding ----

    /// encode → decode gives back the JSON, and the envelope is kube's.
    fn round_trip(v: &Value) -> Vec<u8> {
        let b = encode(v).unwrap();
        assert_eq!(decode(&b).unwrap(), *v);
        b
    }

    /// The `raw` of an encoded object, read back with k8s-pb's `Unknown`.
    fn raw_of(b: &[u8], api_version: &str, kind: &str) -> Vec<u8> {
        let u = Unknown::decode(b.strip_prefix(MAGIC).unwrap()).unwrap();
        let tm = u.type_meta.unwrap();
        assert_eq!(tm.api_version.as_deref(), Some(api_version));
        assert_eq!(tm.kind.as_deref(), Some(kind));
        assert_eq!(u.content_encoding.as_deref(), Some(""));
        assert_eq!(u.content_type.as_deref(), Some(""));
        u.raw.unwrap()
    }

    #[test]
    fn config_map_encodes_byte_for_byte_as_kube_writes_it() {
        let v = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cfg", "namespace": "default", "labels": {"b": "2", "a": "1"}},
            "data": {"z": "last", "k": "v"},
            "immutable": true
        });
        let b = round_trip(&v);
        let cm = core::ConfigMap {
            metadata: Some(meta::ObjectMeta {
                name: Some("cfg".into()),
                namespace: Some("default".into()),
                labels: map(&[("a", "1"), ("b", "2")]),
                ..Default::default()
            }),
            data: map(&[("k", "v"), ("z", "last")]),
            binary_data: BTreeMap::new(),
            immutable: Some(true),
        };
        // Magic, Unknown{typeMeta, raw, "", ""} with fields in tag order.
        assert_eq!(b, body("v1", "ConfigMap", &cm));
        assert_eq!(&b[..4], b"k8s\0");
        assert_eq!(&b[b.len() - 4..], &[0x1a, 0x00, 0x22, 0x00]);
        let decoded = core::ConfigMap::decode(raw_of(&b, "v1", "ConfigMap").as_slice()).unwrap();
        assert_eq!(decoded, cm);
    }

    #[test]
    fn secret_bytes_are_base64_decoded_on_the_wire() {
        let v = json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "creationTimestamp": "2024-05-06T07:08:09Z", "uid": "u-1", "resourceVersion": "12"},
            "data": {"password": "c2VjcmV0", "empty": ""},
            "type": "Opaque"
        });
        let b = round_trip(&v);
        let s = core::Secret::decode(raw_of(&b, "v1", "Secret").as_slice()).unwrap();
        assert_eq!(s.data["password"], b"secret".to_vec());
        assert_eq!(s.data["empty"], Vec::<u8>::new());
        assert_eq!(s.r#type.as_deref(), Some("Opaque"));
        let m = s.metadata.unwrap();
        assert_eq!(
            m.creation_timestamp,
            Some(meta::Time {
                seconds: Some(1_714_979_289),
                nanos: Some(0)
            })
        );
        assert_eq!(m.resource_version.as_deref(), Some("12"));
    }

    #[test]
    fn deployment_encodes_int_or_string_quantities_and_inlined_structs() {
        let v = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "generation": 2,
                "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1",
                    "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {"f:replicas": {}}}}]},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [{
                            "name": "nginx", "image": "nginx:1.27",
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "resources": {"limits": {"memory": "128Mi", "cpu": "500m"}},
                            "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 5},
                            "livenessProbe": {"tcpSocket": {"port": "http"}}
                        }],
                        "volumes": [{"name": "cfg", "configMap": {"name": "app-config", "defaultMode": 420}}],
                        "terminationGracePeriodSeconds": 30
                    }
                },
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"}}
            },
            "status": {"observedGeneration": 2, "replicas": 3,
                "conditions": [{"type": "Available", "status": "True", "lastUpdateTime": "2024-01-01T00:00:01Z"}]}
        });
        let b = round_trip(&v);
        let d = apps::Deployment::decode(raw_of(&b, "apps/v1", "Deployment").as_slice()).unwrap();
        let spec = d.spec.unwrap();
        assert_eq!(spec.replicas, Some(3));
        let ru = spec.strategy.unwrap().rolling_update.unwrap();
        assert_eq!(
            ru.max_surge,
            Some(IntOrString {
                r#type: Some(1),
                int_val: Some(0),
                str_val: Some("25%".into())
            })
        );
        assert_eq!(
            ru.max_unavailable,
            Some(IntOrString {
                r#type: Some(0),
                int_val: Some(0),
                str_val: Some(String::new())
            })
        );
        let pod = spec.template.unwrap().spec.unwrap();
        let c = &pod.containers[0];
        assert_eq!(
            c.resources.as_ref().unwrap().limits["cpu"],
            Quantity {
                string: Some("500m".into())
            }
        );
        let probe = c.readiness_probe.as_ref().unwrap();
        let http = probe.handler.as_ref().unwrap().http_get.as_ref().unwrap();
        assert_eq!(http.port.as_ref().unwrap().int_val, Some(8080));
        let cm = pod.volumes[0]
            .volume_source
            .as_ref()
            .unwrap()
            .config_map
            .as_ref()
            .unwrap();
        assert_eq!(
            cm.local_object_reference.as_ref().unwrap().name.as_deref(),
            Some("app-config")
        );
        assert_eq!(cm.default_mode, Some(420));
        let mf = &d.metadata.unwrap().managed_fields[0];
        assert_eq!(
            mf.fields_v1.as_ref().unwrap().raw.as_deref(),
            Some(br#"{"f:spec":{"f:replicas":{}}}"#.as_slice())
        );
        assert_eq!(d.status.unwrap().replicas, Some(3));
    }

    #[test]
    fn service_and_namespace_round_trip() {
        let svc = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "default", "annotations": {"a": "b"}},
            "spec": {"type": "NodePort", "selector": {"app": "web"}, "clusterIP": "10.0.0.10",
                "clusterIPs": ["10.0.0.10"], "ipFamilies": ["IPv4"],
                "ports": [{"name": "http", "port": 80, "targetPort": "http", "nodePort": 30080, "protocol": "TCP"}],
                "sessionAffinity": "None"},
            "status": {"loadBalancer": {}}
        });
        let b = round_trip(&svc);
        let s = core::Service::decode(raw_of(&b, "v1", "Service").as_slice()).unwrap();
        let spec = s.spec.unwrap();
        assert_eq!(spec.cluster_ips, vec!["10.0.0.10".to_string()]);
        assert_eq!(spec.ports[0].node_port, Some(30080));
        assert_eq!(
            spec.ports[0]
                .target_port
                .as_ref()
                .unwrap()
                .str_val
                .as_deref(),
            Some("http")
        );

        let ns = json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "team-a"},
                "deletionTimestamp": "2025-02-03T04:05:06Z", "finalizers": ["x/y"]},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Terminating"}
        });
        let b = round_trip(&ns);
        let n = core::Namespace::decode(raw_of(&b, "v1", "Namespace").as_slice()).unwrap();
        assert_eq!(n.spec.unwrap().finalizers, vec!["kubernetes".to_string()]);
        assert_eq!(n.status.unwrap().phase.as_deref(), Some("Terminating"));
    }

    #[test]
    fn event_micro_time_keeps_microseconds_on_the_wire() {
        let v = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "e.1", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "reason": "Started", "message": "Started container", "type": "Normal",
            "count": 2,
            "firstTimestamp": "2023-11-14T22:13:20Z",
            "eventTime": "2023-11-14T22:13:20.123456Z",
            "reportingComponent": "kubelet"
        });
        let b = round_trip(&v);
        let e = core::Event::decode(raw_of(&b, "v1", "Event").as_slice()).unwrap();
        assert_eq!(
            e.event_time,
            Some(meta::MicroTime {
                seconds: Some(1_700_000_000),
                nanos: Some(123_456_000)
            })
        );
        assert_eq!(e.count, Some(2));
    }

    #[test]
    fn a_list_encodes_its_list_meta_and_items() {
        let v = json!({
            "apiVersion": "v1", "kind": "ConfigMapList",
            "metadata": {"resourceVersion": "42", "continue": "tok", "remainingItemCount": 3},
            "items": [
                {"metadata": {"name": "a", "namespace": "default"}, "data": {"k": "1"}},
                {"metadata": {"name": "b", "namespace": "default"}, "binaryData": {"bin": "AAEC"}}
            ]
        });
        let b = encode_list(&v).unwrap();
        assert_eq!(decode(&b).unwrap(), v);
        let l = core::ConfigMapList::decode(raw_of(&b, "v1", "ConfigMapList").as_slice()).unwrap();
        let m = l.metadata.unwrap();
        assert_eq!(m.resource_version.as_deref(), Some("42"));
        assert_eq!(m.r#continue.as_deref(), Some("tok"));
        assert_eq!(m.remaining_item_count, Some(3));
        assert_eq!(l.items.len(), 2);
        assert_eq!(l.items[1].binary_data["bin"], vec![0u8, 1, 2]);
        // An empty list still writes its (empty) ListMeta.
        let empty =
            json!({"apiVersion": "apps/v1", "kind": "DeploymentList", "metadata": {}, "items": []});
        let b = encode_list(&empty).unwrap();
        let l = apps::DeploymentList::decode(raw_of(&b, "apps/v1", "DeploymentList").as_slice())
            .unwrap();
        assert!(l.items.is_empty());
        assert!(l.metadata.is_some());
        assert!(encode_list(&json!({"apiVersion": "v1", "kind": "ConfigMap"})).is_err());
    }

    #[test]
    fn a_status_encodes_under_any_group_version() {
        let v = ApiError::not_found("apps", "deployments", "web").status();
        let b = round_trip(&v);
        let s = meta::Status::decode(raw_of(&b, "v1", "Status").as_slice()).unwrap();
        assert_eq!(s.code, Some(404));
        assert_eq!(s.reason.as_deref(), Some("NotFound"));
        assert_eq!(
            s.message.as_deref(),
            Some("deployments.apps \"web\" not found")
        );
        let d = s.details.unwrap();
        assert_eq!(d.name.as_deref(), Some("web"));
        assert_eq!(d.group.as_deref(), Some("apps"));
        assert_eq!(d.kind.as_deref(), Some("deployments"));

        let invalid = json!({
            "apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
            "message": "bad", "reason": "Invalid", "code": 422,
            "details": {"name": "x", "kind": "ConfigMap", "causes": [
                {"reason": "FieldValueRequired", "message": "Required value", "field": "data"}]}
        });
        let b = round_trip(&invalid);
        let s = meta::Status::decode(raw_of(&b, "v1", "Status").as_slice()).unwrap();
        assert_eq!(
            s.details.unwrap().causes[0].reason.as_deref(),
            Some("FieldValueRequired")
        );
        assert!(encodable("apps/v1", "Status"));
    }

    #[test]
    fn a_watch_event_is_length_framed_with_the_object_enveloped_inside() {
        let obj = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "default", "resourceVersion": "7"},
            "data": {"k": "v"}
        });
        let framed = encode_watch_event("ADDED", &obj).unwrap();
        let len = u32::from_be_bytes([framed[0], framed[1], framed[2], framed[3]]) as usize;
        assert_eq!(len, framed.len() - 4);
        let ev = meta::WatchEvent::decode(&framed[4..]).unwrap();
        assert_eq!(ev.r#type.as_deref(), Some("ADDED"));
        let raw = ev.object.unwrap().raw.unwrap();
        assert_eq!(raw, encode(&obj).unwrap());
        assert_eq!(decode(&raw).unwrap(), obj);
        assert_eq!(
            &framed[4..],
            encode_watch_event_message("ADDED", &obj)
                .unwrap()
                .as_slice()
        );

        let err = ApiError::gone("too old resource version: 1 (5)").status();
        let framed = encode_watch_event("ERROR", &err).unwrap();
        let ev = meta::WatchEvent::decode(&framed[4..]).unwrap();
        assert_eq!(ev.r#type.as_deref(), Some("ERROR"));
        let raw = ev.object.unwrap().raw.unwrap();
        assert_eq!(decode(&raw).unwrap()["code"], 410);
    }

    #[test]
    fn only_built_in_kinds_are_encodable() {
        assert!(encodable("v1", "ConfigMap"));
        assert!(encodable("v1", "ConfigMapList"));
        assert!(encodable("apps/v1", "Deployment"));
        assert!(encodable("meta.k8s.io/v1", "PartialObjectMetadataList"));
        assert!(!encodable("apps/v1", "ConfigMap"));
        assert!(!encodable("stable.example.com/v1", "CronTab"));
        assert!(encodable("federation/v1beta1", "Cluster"));
        assert!(encodable("federation/v1beta1", "ClusterList"));
        assert!(encodable(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinitionList"
        ));
        let e =
            encode(&json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab"})).unwrap_err();
        assert_eq!(e.code, 406);
        assert_eq!(e.reason, "NotAcceptable");
        assert_eq!(
            e.message,
            "object *unstructured.Unstructured does not implement the protobuf marshalling interface and cannot be encoded to a protobuf message"
        );
        let e = encode(&json!({"apiVersion": "stable.example.com/v1", "kind": "CronTabList"}))
            .unwrap_err();
        assert!(
            e.message
                .starts_with("object *unstructured.UnstructuredList does not")
        );
    }

    #[test]
    fn unknown_json_fields_are_skipped_and_wrong_types_are_errors() {
        let v = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "unknownField": {"x": 1}},
            "extra": [1, 2, 3]
        });
        let b = encode(&v).unwrap();
        assert_eq!(
            decode(&b).unwrap(),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
        );
        let bad = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": "nope"});
        assert_eq!(encode(&bad).unwrap_err().code, 500);
        let bad = json!({"apiVersion": "v1", "kind": "Secret", "data": {"k": "!!"}});
        assert_eq!(encode(&bad).unwrap_err().code, 500);
    }

    #[test]
    fn negative_integers_sign_extend_as_go_does() {
        let v = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "i"}], "priority": -5}
        });
        let b = round_trip(&v);
        let p = core::Pod::decode(raw_of(&b, "v1", "Pod").as_slice()).unwrap();
        assert_eq!(p.spec.unwrap().priority, Some(-5));
    }

    #[test]
    fn durations_parse_like_time_parse_duration_and_round_trip() {
        assert_eq!(parse_go_duration("1h0m0s"), Some(3_600_000_000_000));
        assert_eq!(parse_go_duration("1.5s"), Some(1_500_000_000));
        assert_eq!(parse_go_duration("-5s"), Some(-5_000_000_000));
        assert_eq!(parse_go_duration("1.5µs"), Some(1_500));
        assert_eq!(parse_go_duration("0"), Some(0));
        assert_eq!(parse_go_duration("5"), None);
        assert_eq!(parse_go_duration("1x"), None);
        for ns in [
            0,
            1_500,
            2_000_000,
            90_000_000_000,
            3_600_000_000_000,
            -5_000_000_000,
        ] {
            assert_eq!(parse_go_duration(&go_duration(ns)), Some(ns));
        }
    }

    #[test]
    fn a_zero_creation_timestamp_from_a_go_client_is_left_out() {
        // ObjectMeta{name: "c", creationTimestamp: <empty Time message>}.
        let mut raw = Vec::new();
        let mut om = Vec::new();
        put_bytes(&mut om, 1, b"c");
        put_bytes(&mut om, 8, b"");
        put_bytes(&mut raw, 1, &om);
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some("v1".into()),
                kind: Some("ConfigMap".into()),
            }),
            raw: Some(raw),
            ..Default::default()
        };
        let mut b = MAGIC.to_vec();
        b.extend(unknown.encode_to_vec());
        assert_eq!(decode(&b).unwrap()["metadata"], json!({"name": "c"}));
    }

    #[test]
    fn every_message_lists_its_fields_in_tag_order_for_the_encoder() {
        for (name, msg) in &SCHEMA.messages {
            assert!(
                msg.fields.windows(2).all(|w| w[0].tag < w[1].tag),
                "{name} fields out of tag order"
            );
        }
    }
}
