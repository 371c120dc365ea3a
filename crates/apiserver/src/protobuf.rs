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
//! How: a generic protobuf walker driven by [`SCHEMA`]: the messages (field
//! number → JSON name and type) generated beside the kinds, one file per
//! proto package ([`ubernetes_registry::kinds::protobuf`]), and the kinds
//! served as protobuf, each named by its own declaration
//! ([`Strategy::protobuf`], its subresources' bodies, the reviews); this
//! module names no kind. The messages are generated from the `k8s-pb`
//! crate's prost types (field numbers and types) and `k8s-openapi`'s JSON
//! field names; `k8s-pb` itself has no serde or reflection, so it cannot
//! produce JSON at run time, but the tests encode their bodies with it,
//! which checks the messages.
//! Special messages become their JSON forms: `Time`/`MicroTime` → RFC 3339,
//! `Quantity` → string, `IntOrString` → number or string, `RawExtension`,
//! `FieldsV1` and apiextensions' `JSON` → embedded JSON, `bytes` → base64,
//! list wrappers (`ExtraValue`) → arrays, embedded Go structs
//! (`VolumeSource`, `ProbeHandler`, `LocalObjectReference`, …) → inlined
//! fields, and JSONSchemaProps' `OrArray`/`OrBool`/`OrStringArray` → the one
//! JSON form their Go `MarshalJSON` writes. Unknown field numbers are
//! skipped as gogo-protobuf does. federation/v1beta1 (not in `k8s-pb`) is
//! generated from Federation v1's `generated.proto`.
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
#[cfg(not(fuzzing))]
use std::sync::Arc;
use std::sync::LazyLock;

use base64::Engine as _;
use serde_json::{Map, Value, json};
use ubernetes_apimachinery::ApiError;
#[cfg(not(fuzzing))]
use ubernetes_registry::Strategy;

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

/// Read message lines (the format of
/// [`ubernetes_registry::kinds::protobuf`]) into `schema`; `#` lines are
/// comments.
fn parse_messages(schema: &mut Schema, text: &str) {
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
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
}

/// The kinds served as protobuf with their messages, as the kinds declare
/// them: every built-in kind's own ([`Strategy::protobuf`]) and its
/// `<Kind>List`'s, the bodies of its subresources (a `Scale`, a
/// `TokenRequest`, a `Binding`, named by the subresource's discovery
/// facts), and the kinds the API server serves itself (the reviews,
/// `bindings`, `componentstatuses`, as discovery lists them). A kind whose
/// message is not generated is left out (JSON only).
///
/// [`Strategy::protobuf`]: ubernetes_registry::Strategy::protobuf
#[cfg(not(fuzzing))]
fn declared_kinds(kinds: &[Arc<dyn Strategy>]) -> Vec<(String, String, String)> {
    use ubernetes_registry::kinds::protobuf::message_name;
    fn with_list(
        out: &mut Vec<(String, String, String)>,
        api_version: String,
        kind: &str,
        message: String,
    ) {
        out.push((
            api_version.clone(),
            format!("{kind}List"),
            format!("{message}List"),
        ));
        out.push((api_version, kind.to_string(), message));
    }
    let mut out = Vec::new();
    for s in kinds {
        let info = s.info();
        if let Some(message) = s.protobuf() {
            with_list(
                &mut out,
                info.api_version(),
                &info.kind,
                message.to_string(),
            );
        }
        for sub in info.subresources.iter().filter(|sub| sub.kind != info.kind) {
            let api_version = if sub.group.is_empty() {
                sub.version.clone()
            } else {
                format!("{}/{}", sub.group, sub.version)
            };
            let message = message_name(&sub.group, &sub.version, &sub.kind);
            out.push((api_version, sub.kind.clone(), message));
        }
    }
    for info in crate::unstored::review_resources()
        .into_iter()
        .chain(crate::unstored::core_extra_resources())
    {
        let message = message_name(&info.group, &info.version, &info.kind);
        with_list(&mut out, info.api_version(), &info.kind, message);
    }
    // meta.k8s.io's own (`Status` is served as v1 under every group).
    for (api_version, kind) in [
        ("v1", "Status"),
        ("meta.k8s.io/v1", "PartialObjectMetadata"),
        ("meta.k8s.io/v1", "PartialObjectMetadataList"),
    ] {
        out.push((api_version.into(), kind.into(), format!("meta.v1.{kind}")));
    }
    out
}

/// The schema: every generated message, and the declared kinds whose
/// message is among them.
#[cfg(not(fuzzing))]
fn build_schema(kinds: &[Arc<dyn Strategy>]) -> Schema {
    let mut schema = Schema::default();
    for (_, text) in ubernetes_registry::kinds::protobuf::PACKAGES {
        parse_messages(&mut schema, text);
    }
    for (api_version, kind, message) in declared_kinds(kinds) {
        if schema.messages.contains_key(&message) {
            schema.kinds.insert((api_version, kind), message);
        }
    }
    schema
}

#[cfg(not(fuzzing))]
static SCHEMA: LazyLock<Schema> = LazyLock::new(|| {
    let mut kinds = ubernetes_registry::kinds::builtin();
    kinds.push(ubernetes_apiextensions::crd_strategy());
    build_schema(&kinds)
});

/// The fuzz crate (`fuzz/`) compiles this file without the registry: its
/// schema is every generated message (the registry's generated files,
/// which the fuzz crate includes as `pb_generated`), each served as the
/// kind its name says under the apiVersion its package suggests (exact for
/// the core group and for groups named by their first label), so the
/// walker is fuzzed over every message.
#[cfg(fuzzing)]
static SCHEMA: LazyLock<Schema> = LazyLock::new(|| {
    let mut schema = Schema::default();
    for (_, text) in crate::pb_generated::PACKAGES {
        parse_messages(&mut schema, text);
    }
    let names: Vec<String> = schema.messages.keys().cloned().collect();
    for message in names {
        let mut parts = message.splitn(3, '.');
        if let (Some(package), Some(version), Some(kind)) =
            (parts.next(), parts.next(), parts.next())
        {
            let api_version = if package == "core" {
                version.to_string()
            } else {
                format!("{package}/{version}")
            };
            schema
                .kinds
                .insert((api_version, kind.to_string()), message);
        }
    }
    schema
});

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

    fn builtin_and_crd() -> Vec<Arc<dyn Strategy>> {
        let mut kinds = ubernetes_registry::kinds::builtin();
        kinds.push(ubernetes_apiextensions::crd_strategy());
        kinds
    }

    /// Every kind that declares a protobuf message is served as protobuf,
    /// its list too, and one that declares none is not: the kinds come from
    /// their declarations, not from a table here.
    #[test]
    fn the_schema_has_exactly_the_kinds_declared_as_protobuf() {
        let mut problems = Vec::new();
        for s in &builtin_and_crd() {
            let info = s.info();
            for kind in [info.kind.clone(), format!("{}List", info.kind)] {
                let served = encodable(&info.api_version(), &kind);
                if served != s.protobuf().is_some() {
                    problems.push(format!(
                        "{} {kind}: declares {:?}, served as protobuf: {served}",
                        info.api_version(),
                        s.protobuf()
                    ));
                }
            }
        }
        assert!(problems.is_empty(), "{problems:#?}");
        // Subresource bodies and the API server's own kinds.
        for (api_version, kind) in [
            ("autoscaling/v1", "Scale"),
            ("authentication.k8s.io/v1", "TokenRequest"),
            ("v1", "Binding"),
            ("authorization.k8s.io/v1", "SubjectAccessReview"),
            ("authentication.k8s.io/v1", "TokenReview"),
            ("v1", "ComponentStatusList"),
            ("meta.k8s.io/v1", "PartialObjectMetadataList"),
        ] {
            assert!(encodable(api_version, kind), "{api_version} {kind}");
        }
    }

    /// A kind is found through its declaration: the same kinds with one
    /// declaring no message leave that kind (and its list) out.
    #[test]
    fn a_kind_that_declares_no_message_is_not_served_as_protobuf() {
        use k8s_openapi::api::core::v1::ConfigMap;
        use ubernetes_registry::kinds::{Builtin, builtin::info};
        let kinds: Vec<Arc<dyn Strategy>> = builtin_and_crd()
            .into_iter()
            .map(|s| -> Arc<dyn Strategy> {
                if s.info().kind == "ConfigMap" {
                    let info = info::<ConfigMap>("configmap", &["cm"], &[], &[]);
                    Arc::new(Builtin::<ConfigMap>::new(info).without_protobuf())
                } else {
                    s
                }
            })
            .collect();
        let schema = build_schema(&kinds);
        let has = |kind: &str| schema.kinds.contains_key(&("v1".into(), kind.into()));
        assert!(!has("ConfigMap") && !has("ConfigMapList"));
        assert!(has("Secret") && has("SecretList"));
        assert!(
            SCHEMA
                .kinds
                .contains_key(&("v1".into(), "ConfigMap".into()))
        );
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
