//! [`ApiError`]: every failure the API can report, with kube-apiserver's
//! reason, code and message wording (`k8s.io/apimachinery/pkg/api/errors`).
//! It becomes a `metav1.Status` body in exactly one place: [`ApiError::status`],
//! which the HTTP layer serialises.

use http::StatusCode;
use serde_json::{Value, json};

/// One cause of an error (`metav1.StatusCause`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// e.g. `FieldValueInvalid`, `FieldValueRequired`, `FieldManagerConflict`.
    pub reason: String,
    pub message: String,
    /// e.g. `metadata.name`, `spec.template.spec.containers[0].image`.
    pub field: String,
}

impl Cause {
    pub fn new(
        reason: impl Into<String>,
        message: impl Into<String>,
        field: impl Into<String>,
    ) -> Self {
        Self {
            reason: reason.into(),
            message: message.into(),
            field: field.into(),
        }
    }
}

/// Which object an error is about (`metav1.StatusDetails` minus causes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subject {
    pub group: String,
    /// In NotFound/AlreadyExists/Conflict/Forbidden: the resource (plural),
    /// as kube-apiserver puts it; in Invalid: the Kind.
    pub kind: String,
    pub name: String,
}

/// An API failure. Construct with the helpers so wording matches kube-apiserver.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub code: u16,
    /// `metav1.StatusReason`, e.g. `NotFound`; empty for plain errors.
    pub reason: String,
    pub message: String,
    /// Boxed: it is rarely read, and keeping `ApiError` small keeps every
    /// `Result<_, ApiError>` small.
    pub subject: Option<Box<Subject>>,
    pub causes: Vec<Cause>,
    /// Seconds a client should wait before retrying (`details.retryAfterSeconds`).
    pub retry_after: Option<u32>,
    /// `metadata.continue` of the Status: the token to go on listing with
    /// after a 410 for a continue token whose revision was compacted.
    pub list_continue: Option<Box<str>>,
}

fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

impl ApiError {
    pub fn new(code: StatusCode, reason: &str, message: impl Into<String>) -> Self {
        Self {
            code: code.as_u16(),
            reason: reason.to_string(),
            message: message.into(),
            subject: None,
            causes: Vec::new(),
            retry_after: None,
            list_continue: None,
        }
    }

    fn with_subject(mut self, group: &str, kind: &str, name: &str) -> Self {
        self.subject = Some(Box::new(Subject {
            group: group.to_string(),
            kind: kind.to_string(),
            name: name.to_string(),
        }));
        self
    }

    /// Add causes (builder style).
    pub fn with_causes(mut self, causes: Vec<Cause>) -> Self {
        self.causes = causes;
        self
    }

    /// 404: `configmaps "x" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, resource)),
        )
        .with_subject(group, resource, name)
    }

    /// 404 for a path that names no resource (`the server could not find the requested resource`).
    pub fn no_route() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// 409: `configmaps "x" already exists`.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, resource)),
        )
        .with_subject(group, resource, name)
    }

    /// 409 on a stale resourceVersion or failed precondition.
    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(group, resource)
            ),
        )
        .with_subject(group, resource, name)
    }

    /// The message kube-apiserver gives for a resourceVersion mismatch.
    pub const OBJECT_MODIFIED: &'static str = "the object has been modified; please apply your changes to the latest version and try again";

    /// 422: `ConfigMap "x" is invalid: <cause>, <cause>` with causes.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        let detail = match causes.len() {
            0 => String::new(),
            1 => format!(": {}", causes.iter().map(cause_text).collect::<String>()),
            _ => format!(
                ": [{}]",
                causes.iter().map(cause_text).collect::<Vec<_>>().join(", ")
            ),
        };
        let gk = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            format!("{gk} \"{name}\" is invalid{detail}"),
        )
        .with_subject(group, kind, name)
        .with_causes(causes)
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "BadRequest", message)
    }

    /// 403: `configmaps "x" is forbidden: <why>`.
    pub fn forbidden(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let target = if name.is_empty() {
            qualified(group, resource)
        } else {
            format!("{} \"{name}\"", qualified(group, resource))
        };
        Self::new(
            StatusCode::FORBIDDEN,
            "Forbidden",
            format!("{target} is forbidden: {why}"),
        )
        .with_subject(group, resource, name)
    }

    /// 401.
    pub fn unauthorized() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized")
    }

    /// 405.
    pub fn method_not_supported(group: &str, resource: &str, verb: &str) -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            format!(
                "{verb} is not supported on resources of kind \"{}\"",
                qualified(group, resource)
            ),
        )
        .with_subject(group, resource, "")
    }

    /// 406.
    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_ACCEPTABLE, "NotAcceptable", message)
    }

    /// 415.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf; got {content_type}"
            ),
        )
    }

    /// 413.
    pub fn too_large() -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "RequestEntityTooLarge",
            "Request entity too large: limit is 3145728",
        )
    }

    /// 410 with reason `Expired` (too-old resourceVersion, expired continue token).
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(StatusCode::GONE, "Expired", message)
    }

    /// 410 with reason `Gone`.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(StatusCode::GONE, "Gone", message)
    }

    /// 500.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalError",
            format!("Internal error occurred: {}", message.into()),
        )
    }

    /// 503 `ServiceUnavailable` (kube's `NewServiceUnavailable`).
    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailable",
            message,
        )
    }

    /// 504.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(StatusCode::GATEWAY_TIMEOUT, "Timeout", message)
    }

    /// 429.
    pub fn too_many_requests(message: impl Into<String>, retry_after: u32) -> Self {
        let mut e = Self::new(StatusCode::TOO_MANY_REQUESTS, "TooManyRequests", message);
        e.retry_after = Some(retry_after);
        e
    }

    /// The HTTP status code.
    pub fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// The `metav1.Status` body, exactly as kube-apiserver shapes it.
    pub fn status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        });
        if let Some(token) = &self.list_continue {
            status["metadata"]["continue"] = json!(token);
        }
        if !self.reason.is_empty() {
            status["reason"] = json!(self.reason);
        }
        if self.subject.is_some() || !self.causes.is_empty() || self.retry_after.is_some() {
            let mut details = serde_json::Map::new();
            if let Some(s) = &self.subject {
                if !s.name.is_empty() {
                    details.insert("name".into(), json!(s.name));
                }
                if !s.group.is_empty() {
                    details.insert("group".into(), json!(s.group));
                }
                if !s.kind.is_empty() {
                    details.insert("kind".into(), json!(s.kind));
                }
            }
            if !self.causes.is_empty() {
                let causes: Vec<Value> = self
                    .causes
                    .iter()
                    .map(|c| {
                        let mut m = serde_json::Map::new();
                        // `metav1.StatusCause` omits an empty reason
                        // (ValidatingAdmissionPolicy's cause has only a message).
                        if !c.reason.is_empty() {
                            m.insert("reason".into(), json!(c.reason));
                        }
                        m.insert("message".into(), json!(c.message));
                        if !c.field.is_empty() {
                            m.insert("field".into(), json!(c.field));
                        }
                        Value::Object(m)
                    })
                    .collect();
                details.insert("causes".into(), Value::Array(causes));
            }
            if let Some(r) = self.retry_after {
                details.insert("retryAfterSeconds".into(), json!(r));
            }
            status["details"] = Value::Object(details);
        }
        status["code"] = json!(self.code);
        status
    }
}

/// `field: message` as kube-apiserver's field.Error.Error() prints it.
fn cause_text(c: &Cause) -> String {
    if c.field.is_empty() {
        c.message.clone()
    } else {
        format!("{}: {}", c.field, c.message)
    }
}

/// Field-validation cause helpers with kube-apiserver's wording
/// (`k8s.io/apimachinery/pkg/util/validation/field`).
pub mod field {
    use super::Cause;

    /// `Invalid value: "x": detail`.
    pub fn invalid(path: &str, value: &serde_json::Value, detail: &str) -> Cause {
        let shown = match value {
            serde_json::Value::String(s) => format!("\"{s}\""),
            other => other.to_string(),
        };
        let msg = if detail.is_empty() {
            format!("Invalid value: {shown}")
        } else {
            format!("Invalid value: {shown}: {detail}")
        };
        Cause::new("FieldValueInvalid", msg, path)
    }

    /// `Required value` (with an optional detail).
    pub fn required(path: &str, detail: &str) -> Cause {
        let msg = if detail.is_empty() {
            "Required value".to_string()
        } else {
            format!("Required value: {detail}")
        };
        Cause::new("FieldValueRequired", msg, path)
    }

    /// `Forbidden: detail`.
    pub fn forbidden(path: &str, detail: &str) -> Cause {
        Cause::new("FieldValueForbidden", format!("Forbidden: {detail}"), path)
    }

    /// `Unsupported value: "x": supported values: "a", "b"`.
    pub fn not_supported(path: &str, value: &serde_json::Value, supported: &[&str]) -> Cause {
        let shown = match value {
            serde_json::Value::String(s) => format!("\"{s}\""),
            other => other.to_string(),
        };
        let list = supported
            .iter()
            .map(|s| format!("\"{s}\""))
            .collect::<Vec<_>>()
            .join(", ");
        Cause::new(
            "FieldValueNotSupported",
            format!("Unsupported value: {shown}: supported values: {list}"),
            path,
        )
    }

    /// `Duplicate value: "x"`.
    pub fn duplicate(path: &str, value: &serde_json::Value) -> Cause {
        let shown = match value {
            serde_json::Value::String(s) => format!("\"{s}\""),
            other => other.to_string(),
        };
        Cause::new(
            "FieldValueDuplicate",
            format!("Duplicate value: {shown}"),
            path,
        )
    }

    /// `Too long: may not be more than N bytes` (kube-apiserver's TooLong wording).
    pub fn too_long(path: &str, max: usize) -> Cause {
        Cause::new(
            "FieldValueTooLong",
            format!("Too long: may not be more than {max} bytes"),
            path,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_error_stays_small_enough_to_return_by_value() {
        assert!(std::mem::size_of::<ApiError>() <= 128);
    }

    #[test]
    fn not_found_names_the_qualified_resource() {
        let s = ApiError::not_found("apps", "deployments", "web").status();
        assert_eq!(s["message"], "deployments.apps \"web\" not found");
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(s["code"], 404);
        assert_eq!(s["details"]["kind"], "deployments");
        assert_eq!(s["details"]["group"], "apps");
    }

    #[test]
    fn invalid_with_one_cause_prints_the_field_and_message() {
        let c = field::invalid("metadata.name", &serde_json::json!("A_b"), "bad");
        let s = ApiError::invalid("", "ConfigMap", "A_b", vec![c]).status();
        assert_eq!(
            s["message"],
            "ConfigMap \"A_b\" is invalid: metadata.name: Invalid value: \"A_b\": bad"
        );
        assert_eq!(s["details"]["causes"][0]["field"], "metadata.name");
        assert_eq!(s["code"], 422);
    }

    #[test]
    fn invalid_with_several_causes_lists_them_in_brackets() {
        let a = field::required("spec.selector", "");
        let b = field::required("spec.template", "");
        let s = ApiError::invalid("apps", "Deployment", "w", vec![a, b]).status();
        assert_eq!(
            s["message"],
            "Deployment.apps \"w\" is invalid: [spec.selector: Required value, spec.template: Required value]"
        );
    }

    #[test]
    fn conflict_uses_the_kube_apiserver_sentence() {
        let s = ApiError::conflict("", "configmaps", "c", ApiError::OBJECT_MODIFIED).status();
        assert_eq!(
            s["message"],
            "Operation cannot be fulfilled on configmaps \"c\": the object has been modified; please apply your changes to the latest version and try again"
        );
    }
}
