//! Object metadata over JSON, as `k8s.io/apimachinery/pkg/api/meta` and
//! `pkg/api/validation` do it over typed objects: accessors for the
//! `metadata` fields of a `serde_json::Value` object, the name and label
//! format checks of `pkg/util/validation` (with kube's exact messages), the
//! `ObjectMeta` validation on create and update, and `generateName`.
//!
//! Validation returns [`Cause`]s with kube-apiserver's field paths and
//! wording; the caller wraps them in [`crate::ApiError::invalid`].

use std::collections::{BTreeMap, BTreeSet};

use rand::Rng;
use serde_json::{Map, Value, json};

use crate::error::{Cause, field};
use crate::quote::go_quote;

// ---------------------------------------------------------------------------
// Format checks (`k8s.io/apimachinery/pkg/util/validation`, `api/validate/content`).

/// `DNS1123LabelMaxLength`.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// `DNS1123SubdomainMaxLength`.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// `LabelValueMaxLength` (and the name part of a qualified name).
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// `TotalAnnotationSizeLimitB`: 256 KiB of keys and values together.
pub const TOTAL_ANNOTATION_SIZE_LIMIT_B: usize = 256 * 1024;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// `MaxLenError`.
pub fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} bytes")
}

/// `RegexError`: `msg (e.g. 'a',  or 'b', regex used for validation is 'fmt')` (the double
/// space is kube's).
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut s = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            s.push_str(" or ");
        }
        s.push('\'');
        s.push_str(e);
        s.push_str("', ");
    }
    s.push_str("regex used for validation is '");
    s.push_str(fmt);
    s.push_str("')");
    s
}

fn is_lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// Matches `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => {
            is_lower_alnum(f)
                && is_lower_alnum(l)
                && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
        }
        _ => false,
    }
}

/// Matches the DNS-1123 subdomain regex (labels joined by dots).
fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// Matches `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
fn matches_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter()
                    .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `IsDNS1123Label`: empty when valid, else kube's messages.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `IsDNS1123Subdomain`: empty when valid, else kube's messages.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `IsDNS1035Label`: empty when valid, else kube's messages.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    let ok = value.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
        && matches_dns1123_label(value);
    if !ok {
        errs.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// `IsQualifiedName` / `IsLabelKey`: `[prefix/]name`, the prefix a DNS-1123
/// subdomain, the name at most 63 characters of `[-A-Za-z0-9_.]` starting
/// and ending alphanumeric. Label keys, annotation keys and finalizers.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_error(LABEL_VALUE_MAX_LENGTH)
        ));
    }
    if !matches_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Alias of [`is_qualified_name`] under the name the brief uses.
pub fn is_valid_label_key(value: &str) -> Vec<String> {
    is_qualified_name(value)
}

/// `IsValidLabelValue`: empty, or a qualified-name part of at most 63 bytes.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !matches_qualified_name_part(value) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `path.IsValidPathSegmentName` (names of RBAC objects and others): not
/// `.` or `..`, no `/` or `%`.
pub fn is_valid_path_segment_name(name: &str) -> Vec<String> {
    for bad in [".", ".."] {
        if name == bad {
            return vec![format!("may not be '{bad}'")];
        }
    }
    is_valid_path_segment_prefix(name)
}

/// `path.IsValidPathSegmentPrefix`.
pub fn is_valid_path_segment_prefix(name: &str) -> Vec<String> {
    ["/", "%"]
        .iter()
        .filter(|bad| name.contains(*bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// `maskTrailingDash` as kube writes it (the last two characters become `a`).
fn mask_trailing_dash(name: &str) -> String {
    if name.ends_with('-') {
        let keep = name.len().saturating_sub(2);
        let mut cut = keep;
        while cut > 0 && !name.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}a", &name[..cut])
    } else {
        name.to_string()
    }
}

/// A `ValidateNameFunc`: messages for an invalid name; `prefix` is true
/// when validating a `generateName` (a trailing dash is then allowed).
pub type NameValidator = dyn Fn(&str, bool) -> Vec<String> + Send + Sync;

/// `NameIsDNSSubdomain` (the default for most kinds).
pub fn name_is_dns_subdomain(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_dns1123_subdomain(&mask_trailing_dash(name))
    } else {
        is_dns1123_subdomain(name)
    }
}

/// `NameIsDNSLabel` (namespaces).
pub fn name_is_dns_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_dns1123_label(&mask_trailing_dash(name))
    } else {
        is_dns1123_label(name)
    }
}

/// `NameIsDNS1035Label` (services).
pub fn name_is_dns1035_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_dns1035_label(&mask_trailing_dash(name))
    } else {
        is_dns1035_label(name)
    }
}

/// `path.ValidatePathSegmentName` (RBAC kinds).
pub fn validate_path_segment_name(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_valid_path_segment_prefix(name)
    } else {
        is_valid_path_segment_name(name)
    }
}

// ---------------------------------------------------------------------------
// generateName (`names.SimpleNameGenerator`).

/// The alphabet of `k8s.io/apimachinery/pkg/util/rand.String` (no vowels,
/// no confusable characters).
const RAND_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
const MAX_NAME_LENGTH: usize = 63;
const RANDOM_LENGTH: usize = 5;
/// `MaxGeneratedNameLength`: longest prefix kept.
pub const MAX_GENERATED_NAME_LENGTH: usize = MAX_NAME_LENGTH - RANDOM_LENGTH;

/// `prefix` (cut to 58 bytes) followed by 5 random characters of kube's alphabet.
pub fn generate_name(prefix: &str) -> String {
    let mut cut = prefix.len().min(MAX_GENERATED_NAME_LENGTH);
    while !prefix.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut rng = rand::rng();
    let mut out = String::with_capacity(cut + RANDOM_LENGTH);
    out.push_str(&prefix[..cut]);
    for _ in 0..RANDOM_LENGTH {
        let i = rng.random_range(0..RAND_ALPHABET.len());
        out.push(char::from(RAND_ALPHABET[i]));
    }
    out
}

// ---------------------------------------------------------------------------
// Accessors.

/// `metadata` of an object, if present and an object.
pub fn metadata(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata")?.as_object()
}

/// `metadata` for writing; created (or replaced, if not an object) when
/// needed. `None` only when `obj` itself is not a JSON object.
pub fn metadata_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let o = obj.as_object_mut()?;
    let m = o.entry("metadata").or_insert_with(|| json!({}));
    if !m.is_object() {
        *m = json!({});
    }
    m.as_object_mut()
}

fn meta_str<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    metadata(obj)?.get(key)?.as_str()
}

fn set_meta(obj: &mut Value, key: &str, v: Option<Value>) {
    if let Some(m) = metadata_mut(obj) {
        match v {
            Some(v) => {
                m.insert(key.to_string(), v);
            }
            None => {
                m.remove(key);
            }
        }
    }
}

fn str_map(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

macro_rules! str_accessors {
    ($($get:ident, $set:ident, $key:literal;)*) => {$(
        #[doc = concat!("`metadata.", $key, "`, if set (and a string).")]
        pub fn $get(obj: &Value) -> Option<&str> {
            meta_str(obj, $key)
        }
        #[doc = concat!("Set `metadata.", $key, "` (`None` removes it). No-op if `obj` is not an object.")]
        pub fn $set(obj: &mut Value, v: Option<&str>) {
            set_meta(obj, $key, v.map(|s| Value::String(s.to_string())));
        }
    )*};
}

str_accessors! {
    name, set_name, "name";
    namespace, set_namespace, "namespace";
    generate_name_prefix, set_generate_name, "generateName";
    uid, set_uid, "uid";
    resource_version, set_resource_version, "resourceVersion";
    creation_timestamp, set_creation_timestamp, "creationTimestamp";
    deletion_timestamp, set_deletion_timestamp, "deletionTimestamp";
    self_link, set_self_link, "selfLink";
}

/// `metadata.generation` (0 when unset, as Go's zero value).
pub fn generation(obj: &Value) -> i64 {
    metadata(obj)
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// Set `metadata.generation` (0 removes it, as `omitempty` would).
pub fn set_generation(obj: &mut Value, g: i64) {
    set_meta(obj, "generation", (g != 0).then(|| json!(g)));
}

/// `metadata.deletionGracePeriodSeconds`.
pub fn deletion_grace_period_seconds(obj: &Value) -> Option<i64> {
    metadata(obj)?.get("deletionGracePeriodSeconds")?.as_i64()
}

/// Set `metadata.deletionGracePeriodSeconds` (`None` removes it).
pub fn set_deletion_grace_period_seconds(obj: &mut Value, s: Option<i64>) {
    set_meta(obj, "deletionGracePeriodSeconds", s.map(|s| json!(s)));
}

/// `metadata.labels` (string values only).
pub fn labels(obj: &Value) -> BTreeMap<String, String> {
    str_map(metadata(obj).and_then(|m| m.get("labels")))
}

/// Set `metadata.labels` (empty removes the field).
pub fn set_labels(obj: &mut Value, labels: &BTreeMap<String, String>) {
    set_meta(obj, "labels", (!labels.is_empty()).then(|| json!(labels)));
}

/// `metadata.annotations` (string values only).
pub fn annotations(obj: &Value) -> BTreeMap<String, String> {
    str_map(metadata(obj).and_then(|m| m.get("annotations")))
}

/// Set `metadata.annotations` (empty removes the field).
pub fn set_annotations(obj: &mut Value, annotations: &BTreeMap<String, String>) {
    set_meta(
        obj,
        "annotations",
        (!annotations.is_empty()).then(|| json!(annotations)),
    );
}

/// One annotation.
pub fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    metadata(obj)?.get("annotations")?.get(key)?.as_str()
}

/// Set one annotation (`None` removes it; an emptied map is removed).
pub fn set_annotation(obj: &mut Value, key: &str, value: Option<&str>) {
    let mut a = annotations(obj);
    match value {
        Some(v) => {
            a.insert(key.to_string(), v.to_string());
        }
        None => {
            a.remove(key);
        }
    }
    set_annotations(obj, &a);
}

/// One label.
pub fn label<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    metadata(obj)?.get("labels")?.get(key)?.as_str()
}

/// `metadata.finalizers` (string entries only, in order).
pub fn finalizers(obj: &Value) -> Vec<String> {
    metadata(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Set `metadata.finalizers` (empty removes the field).
pub fn set_finalizers(obj: &mut Value, finalizers: &[String]) {
    set_meta(
        obj,
        "finalizers",
        (!finalizers.is_empty()).then(|| json!(finalizers)),
    );
}

/// `metadata.ownerReferences` as raw JSON objects.
pub fn owner_references(obj: &Value) -> &[Value] {
    metadata(obj)
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Set `metadata.ownerReferences` (empty removes the field).
pub fn set_owner_references(obj: &mut Value, refs: Vec<Value>) {
    set_meta(
        obj,
        "ownerReferences",
        (!refs.is_empty()).then_some(Value::Array(refs)),
    );
}

// ---------------------------------------------------------------------------
// Validation (`k8s.io/apimachinery/pkg/api/validation/objectmeta.go`).

/// `Invalid value: <shown>: detail` with a value already rendered as Go would.
fn invalid_shown(path: &str, shown: &str, detail: &str) -> Cause {
    Cause::new(
        "FieldValueInvalid",
        format!("Invalid value: {shown}: {detail}"),
        path,
    )
}

fn invalid_str(path: &str, v: &str, detail: &str) -> Cause {
    field::invalid(path, &Value::String(v.to_string()), detail)
}

/// Go's `%#v` of a `[]string`.
fn go_string_slice(v: &[String]) -> String {
    format!(
        "[]string{{{}}}",
        v.iter().map(|s| go_quote(s)).collect::<Vec<_>>().join(", ")
    )
}

/// `ValidateLabels` of a `labels` JSON value at `path`.
pub fn validate_labels(labels: Option<&Value>, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let Some(map) = labels.and_then(Value::as_object) else {
        return errs;
    };
    for (k, v) in map {
        for msg in is_qualified_name(k) {
            errs.push(invalid_str(path, k, &msg));
        }
        let v = v.as_str().unwrap_or_default();
        for msg in is_valid_label_value(v) {
            errs.push(invalid_str(path, v, &msg));
        }
    }
    errs
}

/// `ValidateAnnotations`: keys are qualified names (case-insensitively),
/// total size of keys and values at most 256 KiB.
pub fn validate_annotations(annotations: Option<&Value>, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let Some(map) = annotations.and_then(Value::as_object) else {
        return errs;
    };
    let mut total = 0usize;
    for (k, v) in map {
        for msg in is_qualified_name(&k.to_lowercase()) {
            errs.push(invalid_str(path, k, &msg));
        }
        total += k.len() + v.as_str().map_or(0, str::len);
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_B {
        errs.push(field::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT_B));
    }
    errs
}

/// Go's `%#v` of a `metav1.OwnerReference` built from JSON.
fn go_owner_ref(r: &Value) -> String {
    let s = |k: &str| go_quote(r.get(k).and_then(Value::as_str).unwrap_or_default());
    let b = |k: &str| match r.get(k).and_then(Value::as_bool) {
        Some(b) => format!("(*bool)({b})"),
        None => "(*bool)(nil)".to_string(),
    };
    format!(
        "v1.OwnerReference{{APIVersion:{}, Kind:{}, Name:{}, UID:{}, Controller:{}, BlockOwnerDeletion:{}}}",
        s("apiVersion"),
        s("kind"),
        s("name"),
        s("uid"),
        b("controller"),
        b("blockOwnerDeletion")
    )
}

/// `schema.ParseGroupVersion` as used by `FromAPIVersionAndKind`: (group, version).
fn parse_group_version(api_version: &str) -> (String, String) {
    if api_version.is_empty() || api_version == "/" {
        return (String::new(), String::new());
    }
    match api_version.matches('/').count() {
        0 => (String::new(), api_version.to_string()),
        1 => {
            let (g, v) = api_version.split_once('/').unwrap_or_default();
            (g.to_string(), v.to_string())
        }
        _ => (String::new(), String::new()),
    }
}

/// `ValidateOwnerReferences`: apiVersion (with a version), kind, name, uid
/// required; Events may not own; at most one controller.
pub fn validate_owner_references(refs: Option<&Value>, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let Some(list) = refs.and_then(Value::as_array) else {
        return errs;
    };
    let mut first_controller = String::new();
    for r in list {
        let get = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default();
        let api_version = get("apiVersion");
        let kind = get("kind");
        let (group, version) = parse_group_version(api_version);
        if version.is_empty() {
            errs.push(invalid_str(
                &format!("{path}.apiVersion"),
                api_version,
                "version must not be empty",
            ));
        }
        if kind.is_empty() {
            errs.push(invalid_str(
                &format!("{path}.kind"),
                kind,
                "must not be empty",
            ));
        }
        if get("name").is_empty() {
            errs.push(invalid_str(
                &format!("{path}.name"),
                "",
                "must not be empty",
            ));
        }
        if get("uid").is_empty() {
            errs.push(invalid_str(&format!("{path}.uid"), "", "must not be empty"));
        }
        if group.is_empty() && version == "v1" && kind == "Event" {
            errs.push(invalid_shown(
                path,
                &go_owner_ref(r),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if r.get("controller").and_then(Value::as_bool) == Some(true) {
            let cur = format!("{kind}/{}", get("name"));
            if first_controller.is_empty() {
                first_controller = cur;
            } else {
                let shown = format!(
                    "[]v1.OwnerReference{{{}}}",
                    list.iter().map(go_owner_ref).collect::<Vec<_>>().join(", ")
                );
                errs.push(invalid_shown(
                    path,
                    &shown,
                    &format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first_controller} and {cur}"
                    ),
                ));
            }
        }
    }
    errs
}

/// `ValidateFinalizers` (apimachinery part): qualified names, and not both
/// `orphan` and `foregroundDeletion`.
pub fn validate_finalizers(finalizers: &[String], path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    for f in finalizers {
        for msg in is_qualified_name(f) {
            errs.push(invalid_str(path, f, &msg));
        }
    }
    if finalizers.iter().any(|f| f == "orphan")
        && finalizers.iter().any(|f| f == "foregroundDeletion")
    {
        errs.push(invalid_shown(
            path,
            &go_string_slice(finalizers),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    errs
}

/// The extra check kube's core validation (`validateKubeFinalizerName`)
/// applies to built-in kinds: a finalizer without a `/` must be one of the
/// standard ones.
pub fn validate_kube_finalizer_names(finalizers: &[String], path: &str) -> Vec<Cause> {
    finalizers
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            !f.contains('/')
                && !matches!(
                    f.as_str(),
                    "kubernetes"
                        | "orphan"
                        | "foregroundDeletion"
                        | "customresourcecleanup.apiextensions.k8s.io"
                )
        })
        .map(|(i, f)| {
            invalid_str(
                &format!("{path}[{i}]"),
                f,
                "name is neither a standard finalizer name nor is it fully qualified",
            )
        })
        .collect()
}

/// Go's `%#U` of a rune (`U+0007`, or `U+0041 'A'` when printable).
fn go_sharp_u(c: char) -> String {
    if c.is_control() {
        format!("U+{:04X}", u32::from(c))
    } else {
        format!("U+{:04X} '{c}'", u32::from(c))
    }
}

/// `ValidateManagedFields`.
pub fn validate_managed_fields(entries: Option<&Value>, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let Some(list) = entries.and_then(Value::as_array) else {
        return errs;
    };
    for (i, e) in list.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let get = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
        let op = get("operation");
        if op != "Apply" && op != "Update" {
            errs.push(invalid_str(
                &format!("{p}.operation"),
                op,
                "must be `Apply` or `Update`",
            ));
        }
        let ft = get("fieldsType");
        if !ft.is_empty() && ft != "FieldsV1" {
            errs.push(invalid_str(
                &format!("{p}.fieldsType"),
                ft,
                "must be `FieldsV1`",
            ));
        }
        let manager = get("manager");
        if manager.len() > 128 {
            errs.push(field::too_long(&format!("{p}.manager"), 128));
        }
        for (pos, c) in manager.char_indices() {
            if c.is_control() || c == '\u{FFFD}' {
                errs.push(invalid_str(
                    &format!("{p}.manager"),
                    manager,
                    &format!("invalid character {} (at position {pos})", go_sharp_u(c)),
                ));
            }
        }
        if get("subresource").len() > 256 {
            errs.push(field::too_long(&format!("{p}.subresource"), 256));
        }
    }
    errs
}

/// The parts of `ValidateObjectMeta` shared by create and the generic path.
fn validate_common(obj: &Value, namespaced: bool) -> Vec<Cause> {
    let mut errs = Vec::new();
    let m = metadata(obj);
    let get = |k: &str| m.and_then(|m| m.get(k));
    let ns = namespace(obj).unwrap_or_default();
    if namespaced {
        if ns.is_empty() {
            errs.push(field::required("metadata.namespace", ""));
        } else {
            for msg in name_is_dns_label(ns, false) {
                errs.push(invalid_str("metadata.namespace", ns, &msg));
            }
        }
    } else if !ns.is_empty() {
        errs.push(field::forbidden(
            "metadata.namespace",
            "not allowed on this type",
        ));
    }
    let g = generation(obj);
    if g < 0 {
        errs.push(field::invalid(
            "metadata.generation",
            &json!(g),
            "must be greater than or equal to 0",
        ));
    }
    errs.extend(validate_labels(get("labels"), "metadata.labels"));
    errs.extend(validate_annotations(
        get("annotations"),
        "metadata.annotations",
    ));
    errs.extend(validate_owner_references(
        get("ownerReferences"),
        "metadata.ownerReferences",
    ));
    errs.extend(validate_finalizers(&finalizers(obj), "metadata.finalizers"));
    errs.extend(validate_managed_fields(
        get("managedFields"),
        "metadata.managedFields",
    ));
    errs
}

/// apimachinery's `ValidateObjectMetaAccessor` (what custom resources get):
/// generateName and name checked with `name_fn`, name required unless
/// generated, namespace required for namespaced kinds and forbidden for
/// cluster-scoped ones, generation, labels, annotations, ownerReferences,
/// finalizers, managedFields. Run it after name generation.
pub fn validate_object_meta_generic(
    obj: &Value,
    namespaced: bool,
    name_fn: &NameValidator,
) -> Vec<Cause> {
    let mut errs = Vec::new();
    let gen_name = generate_name_prefix(obj).unwrap_or_default();
    if !gen_name.is_empty() {
        for msg in name_fn(gen_name, true) {
            errs.push(invalid_str("metadata.generateName", gen_name, &msg));
        }
    }
    let n = name(obj).unwrap_or_default();
    if n.is_empty() {
        errs.push(field::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for msg in name_fn(n, false) {
            errs.push(invalid_str("metadata.name", n, &msg));
        }
    }
    errs.extend(validate_common(obj, namespaced));
    errs
}

/// kube-apiserver's `ValidateObjectMeta` for built-in kinds
/// (`pkg/apis/core/validation`): [`validate_object_meta_generic`] plus the
/// standard-finalizer check on each finalizer.
pub fn validate_object_meta(obj: &Value, namespaced: bool, name_fn: &NameValidator) -> Vec<Cause> {
    let mut errs = validate_object_meta_generic(obj, namespaced, name_fn);
    errs.extend(validate_kube_finalizer_names(
        &finalizers(obj),
        "metadata.finalizers",
    ));
    errs
}

/// Go's `time.Time.String()` of an RFC 3339 timestamp
/// (`2024-01-02 03:04:05 +0000 UTC`); the zero time when absent.
fn go_time(ts: Option<&str>) -> String {
    let Some(ts) = ts else {
        return "0001-01-01 00:00:00 +0000 UTC".to_string();
    };
    match ts.strip_suffix('Z').and_then(|t| t.split_once('T')) {
        Some((d, t)) => format!("{d} {t} +0000 UTC"),
        None => ts.to_string(),
    }
}

fn immutable(
    errs: &mut Vec<Cause>,
    path: &str,
    new: Option<&Value>,
    old: Option<&Value>,
    shown: String,
) {
    let norm = |v: Option<&Value>| v.filter(|v| !v.is_null()).cloned();
    if norm(new) != norm(old) {
        errs.push(invalid_shown(path, &shown, "field is immutable"));
    }
}

/// apimachinery's `ValidateObjectMetaAccessorUpdate`: no new finalizers once
/// deletion started, resourceVersion present, generation not decremented,
/// name/namespace/uid/creationTimestamp/deletionTimestamp/
/// deletionGracePeriodSeconds immutable (`field is immutable`), then labels,
/// annotations, ownerReferences, managedFields of the new object. The
/// store must have filled in the resourceVersion of an unconditional update.
pub fn validate_object_meta_update_generic(new: &Value, old: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let nm = metadata(new);
    let om = metadata(old);
    let nget = |k: &str| nm.and_then(|m| m.get(k));
    let oget = |k: &str| om.and_then(|m| m.get(k));

    if deletion_timestamp(old).is_some() {
        let old_f: BTreeSet<String> = finalizers(old).into_iter().collect();
        let extra: Vec<String> = finalizers(new)
            .into_iter()
            .filter(|f| !old_f.contains(f))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if !extra.is_empty() {
            errs.push(field::forbidden(
                "metadata.finalizers",
                &format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {}",
                    go_string_slice(&extra)
                ),
            ));
        }
    }
    if resource_version(new).unwrap_or_default().is_empty() {
        errs.push(invalid_str(
            "metadata.resourceVersion",
            "",
            "must be specified for an update",
        ));
    }
    if generation(new) < generation(old) {
        errs.push(field::invalid(
            "metadata.generation",
            &json!(generation(new)),
            "must not be decremented",
        ));
    }
    for key in ["name", "namespace", "uid"] {
        let shown = go_quote(nget(key).and_then(Value::as_str).unwrap_or_default());
        immutable(
            &mut errs,
            &format!("metadata.{key}"),
            nget(key),
            oget(key),
            shown,
        );
    }
    immutable(
        &mut errs,
        "metadata.creationTimestamp",
        nget("creationTimestamp"),
        oget("creationTimestamp"),
        go_time(creation_timestamp(new)),
    );
    immutable(
        &mut errs,
        "metadata.deletionTimestamp",
        nget("deletionTimestamp"),
        oget("deletionTimestamp"),
        deletion_timestamp(new).map_or_else(|| "null".to_string(), |t| go_time(Some(t))),
    );
    immutable(
        &mut errs,
        "metadata.deletionGracePeriodSeconds",
        nget("deletionGracePeriodSeconds"),
        oget("deletionGracePeriodSeconds"),
        deletion_grace_period_seconds(new).map_or_else(|| "null".to_string(), |s| s.to_string()),
    );
    errs.extend(validate_labels(nget("labels"), "metadata.labels"));
    errs.extend(validate_annotations(
        nget("annotations"),
        "metadata.annotations",
    ));
    errs.extend(validate_owner_references(
        nget("ownerReferences"),
        "metadata.ownerReferences",
    ));
    errs.extend(validate_managed_fields(
        nget("managedFields"),
        "metadata.managedFields",
    ));
    errs
}

/// kube-apiserver's `ValidateObjectMetaUpdate` for built-in kinds:
/// [`validate_object_meta_update_generic`] plus the standard-finalizer check.
pub fn validate_object_meta_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut errs = validate_object_meta_update_generic(new, old);
    errs.extend(validate_kube_finalizer_names(
        &finalizers(new),
        "metadata.finalizers",
    ));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(c: &[Cause]) -> Vec<String> {
        c.iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

    #[test]
    fn configmap_name_with_underscore_gets_kubes_subdomain_message() {
        assert_eq!(
            name_is_dns_subdomain("Foo_bar", false),
            vec![SUBDOMAIN_MSG.to_string()]
        );
        let obj = json!({"metadata": {"name": "Foo_bar", "namespace": "default"}});
        let errs = validate_object_meta(&obj, true, &name_is_dns_subdomain);
        assert_eq!(
            msgs(&errs),
            vec![format!(
                "metadata.name: Invalid value: \"Foo_bar\": {SUBDOMAIN_MSG}"
            )]
        );
    }

    #[test]
    fn dns_checks_accept_and_reject_like_kube() {
        assert!(is_dns1123_label("a-1").is_empty());
        assert_eq!(is_dns1123_label("a.b"), vec!["must not contain dots"]);
        assert!(is_dns1123_label("-a")[0].starts_with("a lowercase RFC 1123 label"));
        assert_eq!(
            is_dns1123_label(&"a".repeat(64))[0],
            "must be no more than 63 bytes"
        );
        assert!(is_dns1123_subdomain("a.b-c.d").is_empty());
        assert!(!is_dns1123_subdomain("a..b").is_empty());
        assert!(!is_dns1123_subdomain("").is_empty());
        assert!(is_dns1035_label("abc-1").is_empty());
        assert!(is_dns1035_label("1abc")[0].starts_with("a DNS-1035 label"));
    }

    #[test]
    fn qualified_names_check_prefix_and_name_parts() {
        assert!(is_qualified_name("example.com/My_name.1").is_empty());
        assert_eq!(
            is_qualified_name("/a"),
            vec!["prefix part must be non-empty"]
        );
        assert!(
            is_qualified_name("Ex.com/a")[0]
                .starts_with("prefix part a lowercase RFC 1123 subdomain")
        );
        let e = is_qualified_name("a/");
        assert_eq!(e.len(), 2);
        assert_eq!(e[0], "name part must be non-empty");
        assert!(is_qualified_name("a/b/c")[0].starts_with("a valid label key must consist"));
        assert!(is_valid_label_value("").is_empty());
        assert!(!is_valid_label_value("-a").is_empty());
    }

    #[test]
    fn generate_name_keeps_prefix_and_adds_five_chars_of_kubes_alphabet() {
        let n = generate_name("web-");
        assert_eq!(n.len(), 9);
        assert!(n.starts_with("web-"));
        assert!(n[4..].bytes().all(|b| RAND_ALPHABET.contains(&b)));
        let long = generate_name(&"x".repeat(100));
        assert_eq!(long.len(), 63);
        assert!(long.starts_with(&"x".repeat(58)));
    }

    #[test]
    fn accessors_read_and_write_metadata() {
        let mut o = json!({"kind": "ConfigMap"});
        set_name(&mut o, Some("a"));
        set_namespace(&mut o, Some("ns"));
        set_generation(&mut o, 2);
        set_annotation(&mut o, "k", Some("v"));
        set_finalizers(&mut o, &["x/y".to_string()]);
        assert_eq!(name(&o), Some("a"));
        assert_eq!(namespace(&o), Some("ns"));
        assert_eq!(generation(&o), 2);
        assert_eq!(annotation(&o, "k"), Some("v"));
        assert_eq!(finalizers(&o), vec!["x/y"]);
        set_annotation(&mut o, "k", None);
        assert!(o["metadata"].get("annotations").is_none());
        set_finalizers(&mut o, &[]);
        assert!(o["metadata"].get("finalizers").is_none());
    }

    #[test]
    fn name_or_generate_name_is_required_and_namespace_rules_follow_scope() {
        let errs = validate_object_meta(&json!({"metadata": {}}), true, &name_is_dns_subdomain);
        assert_eq!(
            msgs(&errs),
            vec![
                "metadata.name: Required value: name or generateName is required",
                "metadata.namespace: Required value"
            ]
        );
        let errs = validate_object_meta(
            &json!({"metadata": {"name": "a", "namespace": "x"}}),
            false,
            &name_is_dns_subdomain,
        );
        assert_eq!(
            msgs(&errs),
            vec!["metadata.namespace: Forbidden: not allowed on this type"]
        );
    }

    #[test]
    fn generate_name_prefix_may_end_with_a_dash() {
        let obj =
            json!({"metadata": {"generateName": "web-", "name": "web-abcde", "namespace": "d"}});
        assert!(validate_object_meta(&obj, true, &name_is_dns_subdomain).is_empty());
        let obj =
            json!({"metadata": {"generateName": "Web-", "name": "web-abcde", "namespace": "d"}});
        let errs = validate_object_meta(&obj, true, &name_is_dns_subdomain);
        assert_eq!(errs[0].field, "metadata.generateName");
    }

    #[test]
    fn labels_annotations_finalizers_and_owner_references_are_checked() {
        let obj = json!({"metadata": {
            "name": "a",
            "labels": {"ok": "v", "bad key": "v"},
            "annotations": {"Example.com/X": "fine"},
            "finalizers": ["example.com/f", "plain"],
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "1", "controller": true},
                {"apiVersion": "apps", "kind": "", "name": "", "uid": "", "controller": true}
            ]
        }});
        let errs = msgs(&validate_object_meta(&obj, false, &name_is_dns_subdomain));
        assert!(errs.iter().any(|e| {
            e.starts_with("metadata.labels: Invalid value: \"bad key\": name part must consist")
        }));
        assert!(!errs.iter().any(|e| e.starts_with("metadata.annotations")));
        assert!(errs.contains(&"metadata.finalizers[1]: Invalid value: \"plain\": name is neither a standard finalizer name nor is it fully qualified".to_string()));
        assert!(errs.contains(
            &"metadata.ownerReferences.kind: Invalid value: \"\": must not be empty".to_string()
        ));
        assert!(errs.contains(
            &"metadata.ownerReferences.uid: Invalid value: \"\": must not be empty".to_string()
        ));
        assert!(errs.iter().any(|e| e.contains("Only one reference can have Controller set to true. Found \"true\" in references for ReplicaSet/r and /")));
    }

    #[test]
    fn annotations_over_256_kib_are_too_long() {
        let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_B);
        let obj = json!({"metadata": {"name": "a", "annotations": {"k": big}}});
        let errs = msgs(&validate_object_meta(&obj, false, &name_is_dns_subdomain));
        assert_eq!(
            errs,
            vec!["metadata.annotations: Too long: may not be more than 262144 bytes"]
        );
    }

    #[test]
    fn updates_keep_identity_fields_immutable() {
        let old = json!({"metadata": {"name": "a", "namespace": "n", "uid": "u1", "resourceVersion": "5",
            "creationTimestamp": "2024-01-02T03:04:05Z", "generation": 2}});
        let new = json!({"metadata": {"name": "b", "namespace": "n", "uid": "u2", "resourceVersion": "5",
            "creationTimestamp": "2024-01-02T03:04:06Z", "generation": 1}});
        assert_eq!(
            msgs(&validate_object_meta_update(&new, &old)),
            vec![
                "metadata.generation: Invalid value: 1: must not be decremented",
                "metadata.name: Invalid value: \"b\": field is immutable",
                "metadata.uid: Invalid value: \"u2\": field is immutable",
                "metadata.creationTimestamp: Invalid value: 2024-01-02 03:04:06 +0000 UTC: field is immutable",
            ]
        );
    }

    #[test]
    fn no_new_finalizers_once_deleting_and_resource_version_required() {
        let old = json!({"metadata": {"name": "a", "resourceVersion": "1", "deletionTimestamp": "2024-01-01T00:00:00Z", "finalizers": ["a/b"]}});
        let new = json!({"metadata": {"name": "a", "deletionTimestamp": "2024-01-01T00:00:00Z", "finalizers": ["a/b", "c/d"]}});
        assert_eq!(
            msgs(&validate_object_meta_update(&new, &old)),
            vec![
                "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"c/d\"}",
                "metadata.resourceVersion: Invalid value: \"\": must be specified for an update",
            ]
        );
    }
}
