//! Content negotiation and query parameters, as kube-apiserver's
//! `endpoints/handlers/negotiation`: which representation the client accepts
//! (JSON, YAML, Table, PartialObjectMetadata), what the body is (JSON, YAML,
//! protobuf), and the common query parameters of every verb.

use std::collections::HashMap;

use axum::http::HeaderMap;
use serde_json::Value;
use ubernetes_apimachinery::ApiError;
use ubernetes_registry::store::{FieldValidation, ReadAt};

/// How an object (or list) is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Json,
    Yaml,
    /// `as=Table;g=meta.k8s.io` (v1 or v1beta1).
    Table,
    /// `as=PartialObjectMetadata` / `as=PartialObjectMetadataList`.
    PartialMetadata,
    /// `application/vnd.kubernetes.protobuf`, with JSON also accepted
    /// (client-go's `application/vnd.kubernetes.protobuf,application/json`):
    /// kinds without a protobuf form are answered in JSON, see [`for_kind`].
    Protobuf,
    /// `application/vnd.kubernetes.protobuf` and nothing JSON can answer:
    /// kinds without a protobuf form are 406 NotAcceptable.
    ProtobufOnly,
}

/// The representation actually used for `apiVersion`/`kind`, as
/// kube-apiserver's writers try the accepted media types in order: protobuf
/// for kinds that have a protobuf form; for the others (custom resources)
/// JSON when the client also accepts it, else kube's 406 NotAcceptable
/// (`object *unstructured.Unstructured does not implement the protobuf
/// marshalling interface …`).
pub fn for_kind(output: Output, api_version: &str, kind: &str) -> Result<Output, ApiError> {
    match output {
        Output::Protobuf | Output::ProtobufOnly
            if crate::protobuf::encodable(api_version, kind) =>
        {
            Ok(Output::Protobuf)
        }
        Output::Protobuf => Ok(Output::Json),
        Output::ProtobufOnly => crate::protobuf::encode(&serde_json::json!({
            "apiVersion": api_version, "kind": kind
        }))
        .map(|_| Output::Protobuf),
        other => Ok(other),
    }
}

/// The media type of an Output.
pub fn content_type(output: Output) -> &'static str {
    match output {
        Output::Yaml => "application/yaml",
        Output::Protobuf | Output::ProtobufOnly => crate::protobuf::PROTOBUF_CONTENT_TYPE,
        _ => "application/json",
    }
}

/// Pick the first representation in `Accept` that we serve. No Accept, or
/// `*/*`: JSON. Only unserved types → 406.
pub fn output(headers: &HeaderMap) -> Result<Output, ApiError> {
    let Some(accept) = headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
    else {
        return Ok(Output::Json);
    };
    if accept.trim().is_empty() {
        return Ok(Output::Json);
    }
    let clauses: Vec<&str> = accept.split(',').collect();
    for (i, part) in clauses.iter().enumerate() {
        let mut pieces = part.split(';').map(str::trim);
        let media = pieces.next().unwrap_or_default().to_ascii_lowercase();
        let params: HashMap<String, String> = pieces
            .filter_map(|p| {
                let (k, v) = p.split_once('=')?;
                Some((k.trim().to_ascii_lowercase(), v.trim().to_string()))
            })
            .collect();
        let as_kind = params.get("as").map(String::as_str);
        match media.as_str() {
            "application/json" | "application/*" | "*/*" => match as_kind {
                None => return Ok(Output::Json),
                Some("Table")
                    if params.get("g").map(String::as_str) == Some("meta.k8s.io")
                        && matches!(
                            params.get("v").map(String::as_str),
                            Some("v1") | Some("v1beta1")
                        ) =>
                {
                    return Ok(Output::Table);
                }
                Some("PartialObjectMetadata") | Some("PartialObjectMetadataList")
                    if params.get("g").map(String::as_str) == Some("meta.k8s.io") =>
                {
                    return Ok(Output::PartialMetadata);
                }
                _ => continue,
            },
            "application/yaml" if as_kind.is_none() => return Ok(Output::Yaml),
            "application/vnd.kubernetes.protobuf" if as_kind.is_none() => {
                let json_later = clauses[i + 1..].iter().any(|c| {
                    let mut p = c.split(';').map(str::trim);
                    let media = p.next().unwrap_or_default().to_ascii_lowercase();
                    matches!(media.as_str(), "application/json" | "application/*" | "*/*")
                        && !p.any(|param| param.to_ascii_lowercase().starts_with("as="))
                });
                return Ok(if json_later {
                    Output::Protobuf
                } else {
                    Output::ProtobufOnly
                });
            }
            _ => continue,
        }
    }
    Err(ApiError::not_acceptable(format!(
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf; got {accept}"
    )))
}

/// Whether error `Status` answers to this request go out as protobuf:
/// kube-apiserver negotiates them as it negotiates objects
/// (`responsewriters.ErrorNegotiated`), so a client whose first choice is
/// protobuf (client-go configured for it) gets a protobuf `Status`.
pub fn protobuf_errors(headers: &HeaderMap) -> bool {
    matches!(output(headers), Ok(Output::Protobuf | Output::ProtobufOnly))
}

/// A handler's answer with its error, if any, rendered as protobuf when
/// [`protobuf_errors`] said so (JSON otherwise, by [`super::ErrorResponse`]).
pub fn negotiate_error(protobuf: bool, result: super::HandlerResult) -> super::HandlerResult {
    match result {
        Err(super::ErrorResponse(e)) if protobuf => {
            let Ok(body) = crate::protobuf::encode(&e.status()) else {
                return Err(super::ErrorResponse(e));
            };
            let mut resp = super::bytes_response(
                e.status_code(),
                crate::protobuf::PROTOBUF_CONTENT_TYPE,
                body,
                &[],
            );
            if let Some(secs) = e.retry_after {
                resp.headers_mut()
                    .insert(http::header::RETRY_AFTER, http::HeaderValue::from(secs));
            }
            Ok(resp)
        }
        other => other,
    }
}

/// The request body as JSON, from JSON, YAML or Kubernetes protobuf, for a
/// request to a resource of `kind` (named in protobuf decode errors, as
/// kube-apiserver does).
pub fn decode_body(headers: &HeaderMap, body: &[u8], kind: &str) -> Result<Value, ApiError> {
    let ct = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let media = ct
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match media.as_str() {
        "application/json" | "" => decode_json(body),
        "application/yaml" | "application/x-yaml" | "text/yaml" => decode_yaml(body),
        "application/vnd.kubernetes.protobuf" => crate::protobuf::decode_as(body, kind),
        _ => Err(ApiError::unsupported_media_type(ct)),
    }
}

/// The `DeleteOptions` body of a delete or deletecollection as JSON, from
/// JSON, YAML or Kubernetes protobuf (client-go configured for protobuf
/// sends `meta.k8s.io/v1` — or `<group>/<version>` — `DeleteOptions` in the
/// `runtime.Unknown` envelope). `None` for an empty body.
///
/// kube-apiserver's delete handlers pass the decoder's error on as it is
/// (`scope.err(err)`), not through `transformDecodeError`: a body that does
/// not decode is a 500 `Status` with no reason and the decoder's message
/// (`couldn't get version/kind; json parse error: …`, `unexpected EOF`), and
/// a body of another kind is `decoded object cannot be converted to
/// DeleteOptions`. An unsupported media type is 415 as for every body.
pub fn decode_delete_options(headers: &HeaderMap, body: &[u8]) -> Result<Option<Value>, ApiError> {
    if body.is_empty() {
        return Ok(None);
    }
    let ct = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let media = ct
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    // A decoder error, passed on as kube-apiserver's `scope.err` does.
    let plain =
        |message: String| ApiError::new(http::StatusCode::INTERNAL_SERVER_ERROR, "", message);
    let value = match media.as_str() {
        "application/json" | "" => {
            // kubectl and older clients send a whitespace-only body.
            if body.iter().all(u8::is_ascii_whitespace) {
                return Ok(None);
            }
            serde_json::from_slice::<Value>(body)
                .map_err(|e| plain(format!("couldn't get version/kind; json parse error: {e}")))?
        }
        "application/yaml" | "application/x-yaml" | "text/yaml" => {
            decode_yaml(body).map_err(|e| plain(e.message))?
        }
        "application/vnd.kubernetes.protobuf" => {
            crate::protobuf::decode(body).map_err(|e| plain(e.message))?
        }
        _ => return Err(ApiError::unsupported_media_type(ct)),
    };
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    if !value.is_object() || !matches!(kind, "" | "DeleteOptions") {
        return Err(plain(
            "decoded object cannot be converted to DeleteOptions".into(),
        ));
    }
    Ok(Some(value))
}

/// Parse a JSON body; errors worded as kube-apiserver's decoder.
pub fn decode_json(body: &[u8]) -> Result<Value, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request(
            "the body of the request was empty or not valid JSON",
        ));
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
    })
}

pub use crate::yaml::decode_yaml;

/// Render a JSON value in the negotiated format (JSON or YAML).
pub fn encode(value: &Value, output: Output) -> Result<Vec<u8>, ApiError> {
    match output {
        Output::Yaml => serde_saphyr::to_string(value)
            .map(String::into_bytes)
            .map_err(|e| ApiError::internal(format!("encoding YAML: {e}"))),
        Output::Protobuf | Output::ProtobufOnly => crate::protobuf::encode(value),
        _ => crate::response::json_bytes(value),
    }
}

/// Query parameters, parsed once.
#[derive(Debug, Default, Clone)]
pub struct Query {
    params: Vec<(String, String)>,
}

impl Query {
    pub fn parse(raw: Option<&str>) -> Self {
        let params = raw
            .map(|q| {
                form_urlencoded::parse(q.as_bytes())
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        Self { params }
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn all(&self, key: &str) -> Vec<&str> {
        self.params
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true") | Some("1") | Some(""))
    }

    /// `dryRun`: only `All` is valid.
    pub fn dry_run(&self) -> Result<bool, ApiError> {
        let values = self.all("dryRun");
        for v in &values {
            if *v != "All" {
                return Err(ApiError::bad_request(format!(
                    "Invalid dry run value: {v}; supported values: All"
                )));
            }
        }
        Ok(!values.is_empty())
    }

    /// `fieldValidation` (default Strict, as kube-apiserver).
    /// `fieldValidation`; absent or empty is `Warn`, kube-apiserver's
    /// default (kubectl always sends the parameter, `Strict` by default).
    pub fn field_validation(&self) -> Result<FieldValidation, ApiError> {
        match self.get("fieldValidation") {
            Some("Strict") => Ok(FieldValidation::Strict),
            None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got \"{other}\""
            ))),
        }
    }

    /// `resourceVersion` + `resourceVersionMatch` of a list.
    pub fn read_at(&self) -> Result<ReadAt, ApiError> {
        let rv = self.get("resourceVersion").unwrap_or("");
        let matching = self.get("resourceVersionMatch").unwrap_or("");
        let parse = |rv: &str| {
            rv.parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!("invalid resource version: {rv:?}"))
                    .with_causes(Vec::new())
            })
        };
        match (rv, matching) {
            ("", "") => Ok(ReadAt::Latest),
            ("", m) => Err(ApiError::invalid(
                "meta.k8s.io",
                "ListOptions",
                "",
                vec![ubernetes_apimachinery::error::field::forbidden(
                    "resourceVersionMatch",
                    &format!(
                        "resourceVersionMatch is forbidden unless resourceVersion is provided (got {m})"
                    ),
                )],
            )),
            ("0", "") | ("0", "NotOlderThan") => Ok(ReadAt::Any),
            (rv, "") | (rv, "NotOlderThan") => Ok(ReadAt::NotOlderThan(parse(rv)?)),
            (rv, "Exact") => {
                if rv == "0" {
                    return Err(ApiError::invalid(
                        "meta.k8s.io",
                        "ListOptions",
                        "",
                        vec![ubernetes_apimachinery::error::field::forbidden(
                            "resourceVersionMatch",
                            "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                        )],
                    ));
                }
                Ok(ReadAt::Exact(parse(rv)?))
            }
            (_, m) => Err(ApiError::invalid(
                "meta.k8s.io",
                "ListOptions",
                "",
                vec![ubernetes_apimachinery::error::field::not_supported(
                    "resourceVersionMatch",
                    &Value::String(m.to_string()),
                    &["Exact", "NotOlderThan", ""],
                )],
            )),
        }
    }

    /// `limit` (0 = none).
    pub fn limit(&self) -> Result<usize, ApiError> {
        match self.get("limit") {
            None | Some("") => Ok(0),
            Some(l) => l
                .parse::<i64>()
                .map(|n| n.max(0) as usize)
                .map_err(|_| ApiError::bad_request(format!("invalid limit: {l:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn accept(v: &str) -> Result<Output, ApiError> {
        let mut h = HeaderMap::new();
        h.insert(
            http::header::ACCEPT,
            HeaderValue::from_str(v).unwrap_or(HeaderValue::from_static("")),
        );
        output(&h)
    }

    #[test]
    fn kubectl_get_accept_header_negotiates_a_table() {
        assert_eq!(
            accept("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json").ok(),
            Some(Output::Table)
        );
    }

    #[test]
    fn client_go_protobuf_preference_negotiates_protobuf() {
        assert_eq!(
            accept("application/vnd.kubernetes.protobuf, application/json").ok(),
            Some(Output::Protobuf)
        );
        assert_eq!(
            for_kind(Output::Protobuf, "v1", "ConfigMap").ok(),
            Some(Output::Protobuf)
        );
        assert_eq!(
            for_kind(Output::Protobuf, "stable.example.com/v1", "CronTab").ok(),
            Some(Output::Json)
        );
    }

    #[test]
    fn protobuf_only_clients_get_406_for_custom_resources() {
        assert_eq!(
            accept("application/vnd.kubernetes.protobuf").ok(),
            Some(Output::ProtobufOnly)
        );
        assert_eq!(
            accept(
                "application/vnd.kubernetes.protobuf, application/json;as=Table;g=meta.k8s.io;v=v1"
            )
            .ok(),
            Some(Output::ProtobufOnly)
        );
        assert_eq!(
            accept("application/vnd.kubernetes.protobuf, */*").ok(),
            Some(Output::Protobuf)
        );
        assert_eq!(
            for_kind(Output::ProtobufOnly, "v1", "ConfigMapList").ok(),
            Some(Output::Protobuf)
        );
        let e = for_kind(Output::ProtobufOnly, "stable.example.com/v1", "CronTabList")
            .err()
            .map(|e| (e.code, e.message));
        assert_eq!(
            e,
            Some((406, "object *unstructured.UnstructuredList does not implement the protobuf marshalling interface and cannot be encoded to a protobuf message".to_string()))
        );
    }

    #[test]
    fn only_unserved_types_are_not_acceptable() {
        assert_eq!(accept("text/html").map_err(|e| e.code), Err(406));
    }

    #[test]
    fn unknown_as_kind_is_skipped() {
        assert_eq!(
            accept("application/json;as=Foo;v=v1;g=x, application/yaml").ok(),
            Some(Output::Yaml)
        );
    }

    #[test]
    fn dry_run_only_accepts_all() {
        assert!(Query::parse(Some("dryRun=All")).dry_run().unwrap_or(false));
        assert_eq!(
            Query::parse(Some("dryRun=Some"))
                .dry_run()
                .map_err(|e| e.code),
            Err(400)
        );
    }

    #[test]
    fn resource_version_match_needs_a_resource_version() {
        assert_eq!(
            Query::parse(Some("resourceVersionMatch=Exact"))
                .read_at()
                .map_err(|e| e.code),
            Err(422)
        );
        assert_eq!(
            Query::parse(Some("resourceVersion=5&resourceVersionMatch=Exact"))
                .read_at()
                .ok(),
            Some(ReadAt::Exact(5))
        );
    }
}
