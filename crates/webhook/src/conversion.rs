//! CRD conversion webhooks (`spec.conversion.strategy: Webhook`), as
//! kube's apiextensions-apiserver `webhookConverter`: the objects to convert
//! go to the CRD's `webhook.clientConfig` in one `ConversionReview`
//! (`apiextensions.k8s.io/v1`, or `v1beta1` when that is the first version
//! of `conversionReviewVersions` we speak), and the answer is checked as kube
//! checks it: the review's kind and `response.uid`, `result.status`, as many
//! objects as were sent, each in the desired group/version with the same
//! kind, name, namespace and uid. Only the labels and annotations of a
//! converted object's metadata are taken; the rest of its metadata is the
//! original's. Errors carry kube's wording (`conversion webhook for
//! example.com/v1, Kind=Widget failed: Post "https://…": …`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use ubernetes_registry::Registry;
use ubernetes_registry::conversion::review::{ConversionWebhooks, ObjectConverter};

use crate::client::{self, ClientConfig, ServiceResolver};

/// kube calls a conversion webhook with its REST client's 30 s timeout.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Builds the converter of each CRD's conversion webhook; Services resolve
/// through the registry's Endpoints ([`crate::RegistryServiceResolver`]).
pub struct Webhooks {
    resolver: Arc<dyn ServiceResolver>,
}

impl Webhooks {
    pub fn new(registry: &Arc<Registry>) -> Arc<Self> {
        Arc::new(Self {
            resolver: Arc::new(crate::RegistryServiceResolver::new(registry)),
        })
    }
}

impl ConversionWebhooks for Webhooks {
    fn converter(&self, webhook: &Value) -> Result<Arc<dyn ObjectConverter>, String> {
        let config = ClientConfig::from_json(webhook.get("clientConfig").unwrap_or(&Value::Null))?;
        let review_versions = webhook
            .get("conversionReviewVersions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Ok(Arc::new(WebhookConverter {
            config,
            review_versions,
            resolver: self.resolver.clone(),
        }))
    }
}

/// One CRD's conversion webhook.
pub struct WebhookConverter {
    config: ClientConfig,
    review_versions: Vec<String>,
    resolver: Arc<dyn ServiceResolver>,
}

#[async_trait::async_trait]
impl ObjectConverter for WebhookConverter {
    async fn convert(
        &self,
        input_gvk: &str,
        objects: Vec<Value>,
        desired_api_version: &str,
    ) -> Result<Vec<Value>, String> {
        // The first version we speak, in the CRD's order (kube's
        // createConversionReviewObjects).
        let Some(review_version) = self
            .review_versions
            .iter()
            .find(|v| *v == "v1" || *v == "v1beta1")
            .cloned()
        else {
            return Err("no supported conversion review versions".into());
        };
        if objects.is_empty() {
            return Ok(objects);
        }
        let uid = uuid::Uuid::new_v4().to_string();
        let request = json!({
            "apiVersion": format!("apiextensions.k8s.io/{review_version}"),
            "kind": "ConversionReview",
            "request": {
                "uid": uid,
                "desiredAPIVersion": desired_api_version,
                "objects": &objects,
            },
        });
        tracing::debug!(input = %input_gvk, desired = %desired_api_version, count = objects.len(), %uid, "calling a conversion webhook");
        let answer = client::post_json(&self.config, &*self.resolver, &request, TIMEOUT)
            .await
            .map_err(|e| {
                tracing::warn!(input = %input_gvk, desired = %desired_api_version, error = %e, "conversion webhook call failed");
                format!("conversion webhook for {input_gvk} failed: {e}")
            })?;
        let converted = converted_objects(&uid, &review_version, &answer)
            .map_err(|e| format!("conversion webhook for {input_gvk} failed: {e}"))?;
        check(input_gvk, &objects, converted, desired_api_version)
    }
}

/// `getConvertedObjectsFromResponse`: the response's objects, or why not.
fn converted_objects(
    uid: &str,
    review_version: &str,
    answer: &Value,
) -> Result<Vec<Value>, String> {
    if review_version == "v1" {
        let api_version = answer
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = answer.get("kind").and_then(Value::as_str).unwrap_or("");
        if api_version != "apiextensions.k8s.io/v1" || kind != "ConversionReview" {
            return Err(format!(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {}",
                go_gvk(api_version, kind)
            ));
        }
    }
    let Some(response) = answer.get("response").filter(|r| r.is_object()) else {
        return Err("no response provided".into());
    };
    if review_version == "v1" {
        let got = response.get("uid").and_then(Value::as_str).unwrap_or("");
        if got != uid {
            return Err(format!("expected response.uid={uid:?}, got {got:?}"));
        }
    }
    let status = response
        .pointer("/result/status")
        .and_then(Value::as_str)
        .unwrap_or("");
    if status != "Success" {
        let message = response
            .pointer("/result/message")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !message.is_empty() {
            return Err(message.to_string());
        }
        return Err(format!(
            "response.result.status was '{status}', not 'Success'"
        ));
    }
    Ok(response
        .get("convertedObjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

/// Go's `GroupVersionKind.String()`.
fn go_gvk(api_version: &str, kind: &str) -> String {
    if api_version.contains('/') {
        format!("{api_version}, Kind={kind}")
    } else {
        format!("/{api_version}, Kind={kind}")
    }
}

fn meta_str<'a>(v: &'a Value, field: &str) -> &'a str {
    v.pointer(&format!("/metadata/{field}"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// kube's checks of each converted object and `restoreObjectMeta`.
fn check(
    input_gvk: &str,
    originals: &[Value],
    converted: Vec<Value>,
    desired: &str,
) -> Result<Vec<Value>, String> {
    if converted.len() != originals.len() {
        return Err(format!(
            "conversion webhook for {input_gvk} returned {} objects, expected {}",
            converted.len(),
            originals.len()
        ));
    }
    let list = originals.len() > 1 || input_gvk.ends_with("List");
    let what = |i: usize| {
        if list {
            format!("invalid converted object at index {i}")
        } else {
            format!("invalid object at index {i}")
        }
    };
    let mut out = Vec::with_capacity(converted.len());
    for (i, (original, mut c)) in originals.iter().zip(converted).enumerate() {
        if !c.is_object() {
            return Err(format!(
                "conversion webhook for {input_gvk} returned {}: not an object",
                what(i)
            ));
        }
        let got = c.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        if got != desired {
            return Err(format!(
                "conversion webhook for {input_gvk} returned {}: invalid groupVersion (expected {desired}, received {got})",
                what(i)
            ));
        }
        let (want_kind, got_kind) = (
            original.get("kind").and_then(Value::as_str).unwrap_or(""),
            c.get("kind").and_then(Value::as_str).unwrap_or(""),
        );
        if want_kind != got_kind {
            return Err(format!(
                "conversion webhook for {input_gvk} returned {}: invalid kind (expected {want_kind}, received {got_kind})",
                what(i)
            ));
        }
        for field in ["name", "namespace", "uid"] {
            let (e, a) = (meta_str(original, field), meta_str(&c, field));
            if e != a {
                let label = if field == "uid" { "UID" } else { field };
                let invalid = if list {
                    format!("invalid converted object at index {i}")
                } else {
                    "invalid object".to_string()
                };
                return Err(format!(
                    "conversion webhook for {input_gvk} returned {invalid}: must have the same {label}: {e} != {a}"
                ));
            }
        }
        restore_object_meta(original, &mut c).map_err(|e| {
            if list {
                format!(
                    "conversion webhook for {input_gvk} returned invalid metadata in object at index {i}: {e}"
                )
            } else {
                format!("conversion webhook for {input_gvk} returned invalid metadata: {e}")
            }
        })?;
        out.push(c);
    }
    Ok(out)
}

/// The original's metadata, with the converted object's labels and
/// annotations (which must be string maps of valid keys and values).
fn restore_object_meta(original: &Value, converted: &mut Value) -> Result<(), String> {
    let Some(response_meta) = converted.get("metadata") else {
        return Err("missing metadata in converted object".into());
    };
    let Some(response_meta) = response_meta.as_object().cloned() else {
        return Err("invalid metadata in converted object".into());
    };
    let mut meta = original
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for field in ["labels", "annotations"] {
        match response_meta.get(field) {
            None | Some(Value::Null) => {
                meta.remove(field);
            }
            Some(Value::Object(m)) => {
                let mut errors = Vec::new();
                for (k, v) in m {
                    let Some(s) = v.as_str() else {
                        return Err(format!(
                            "metadata.{field}[{k}] must be a string in converted object"
                        ));
                    };
                    let path = if field == "labels" {
                        "metadata.labels"
                    } else {
                        "metadata.annotation"
                    };
                    for msg in ubernetes_apimachinery::meta::is_valid_label_key(k) {
                        errors.push(format!("{path}: Invalid value: {k:?}: {msg}"));
                    }
                    if field == "labels" {
                        for msg in ubernetes_apimachinery::meta::is_valid_label_value(s) {
                            errors.push(format!("{path}: Invalid value: {s:?}: {msg}"));
                        }
                    }
                }
                if !errors.is_empty() {
                    return Err(if errors.len() == 1 {
                        errors.remove(0)
                    } else {
                        format!("[{}]", errors.join(", "))
                    });
                }
                meta.insert(field.into(), Value::Object(m.clone()));
            }
            Some(_) => {
                return Err(format!(
                    "invalid metadata.{field} in converted object: not a map"
                ));
            }
        }
    }
    if let Some(m) = converted.as_object_mut() {
        m.insert("metadata".into(), Value::Object(meta));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    fn widget(api_version: &str) -> Value {
        json!({"apiVersion": api_version, "kind": "Widget",
               "metadata": {"name": "a", "namespace": "default", "uid": "u1",
                            "labels": {"x": "1"}, "creationTimestamp": "2024-01-01T00:00:00Z"},
               "spec": {"size": "3"}})
    }

    #[test]
    fn a_converted_object_keeps_the_original_metadata_but_its_own_labels() {
        let mut c = widget("example.com/v2");
        c["metadata"]["labels"] = json!({"y": "2"});
        c["metadata"]["creationTimestamp"] = json!("1999-01-01T00:00:00Z");
        let out = check(
            "example.com/v1, Kind=Widget",
            &[widget("example.com/v1")],
            vec![c],
            "example.com/v2",
        )
        .unwrap();
        assert_eq!(out[0]["metadata"]["labels"], json!({"y": "2"}));
        assert_eq!(
            out[0]["metadata"]["creationTimestamp"],
            "2024-01-01T00:00:00Z"
        );
    }

    #[test]
    fn answers_kube_refuses_are_refused_with_its_words() {
        let gvk = "example.com/v1, Kind=Widget";
        let orig = [widget("example.com/v1")];
        let e = check(gvk, &orig, vec![widget("example.com/v1")], "example.com/v2").unwrap_err();
        assert_eq!(
            e,
            "conversion webhook for example.com/v1, Kind=Widget returned invalid object at index 0: invalid groupVersion (expected example.com/v2, received example.com/v1)"
        );
        let mut renamed = widget("example.com/v2");
        renamed["metadata"]["name"] = json!("b");
        let e = check(gvk, &orig, vec![renamed], "example.com/v2").unwrap_err();
        assert_eq!(
            e,
            "conversion webhook for example.com/v1, Kind=Widget returned invalid object: must have the same name: a != b"
        );
        let e = check(gvk, &orig, vec![], "example.com/v2").unwrap_err();
        assert_eq!(
            e,
            "conversion webhook for example.com/v1, Kind=Widget returned 0 objects, expected 1"
        );
        let mut bad_label = widget("example.com/v2");
        bad_label["metadata"]["labels"] = json!({"x": 1});
        assert!(
            check(gvk, &orig, vec![bad_label], "example.com/v2")
                .unwrap_err()
                .contains("returned invalid metadata: metadata.labels[x] must be a string")
        );
    }

    #[test]
    fn a_review_answer_is_checked_for_kind_uid_and_status() {
        let ok = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u", "result": {"status": "Success"}, "convertedObjects": [{"a": 1}]}});
        assert_eq!(
            converted_objects("u", "v1", &ok).unwrap(),
            vec![json!({"a": 1})]
        );
        assert_eq!(
            converted_objects("other", "v1", &ok).unwrap_err(),
            r#"expected response.uid="other", got "u""#
        );
        let failed = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u", "result": {"status": "Failure", "message": "size too big"}}});
        assert_eq!(
            converted_objects("u", "v1", &failed).unwrap_err(),
            "size too big"
        );
        let wrong = json!({"apiVersion": "v1", "kind": "Status"});
        assert_eq!(
            converted_objects("u", "v1", &wrong).unwrap_err(),
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got /v1, Kind=Status"
        );
        assert_eq!(
            converted_objects("u", "v1beta1", &json!({})).unwrap_err(),
            "no response provided"
        );
    }
}
