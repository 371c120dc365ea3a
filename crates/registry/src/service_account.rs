//! kube-apiserver's `ServiceAccount` admission plugin
//! (`plugin/pkg/admission/serviceaccount/admission.go`), declared by the Pod
//! kind (`Builtin::admission`). On a pod's create (not a mirror pod):
//! - the pod's service account (`default` when unnamed; the pod strategy
//!   names it) is read, and when the token is automounted — the pod's
//!   `automountServiceAccountToken` wins, then the ServiceAccount's, then
//!   `true` — every container and init container without a mount at
//!   `/var/run/secrets/kubernetes.io/serviceaccount` gets one of the
//!   projected `kube-api-access-<5 random>` volume (a bound token of 3607 s,
//!   the namespace's `kube-root-ca.crt` and the namespace), which is added
//!   unless the pod already has a `kube-api-access-*` volume;
//! - a pod without `imagePullSecrets` gets the ServiceAccount's.
//!
//! Unlike kube's plugin a pod whose ServiceAccount does not exist (yet) is
//! not refused: the federation's ServiceAccount controller makes `default`
//! asynchronously, and a pod written in the same breath as its namespace
//! must not fail for it; such a pod is treated as under a ServiceAccount
//! that says nothing (automount on).
//!
//! As kube's plugin it mutates before the mutating webhooks and policies.

use std::sync::{Arc, Weak};

use serde_json::{Map, Value, json};
use ubernetes_apimachinery::ApiError;
use ubernetes_apimachinery::meta::generate_name;

use crate::admission::{Admission, Attributes};
use crate::registry::Registry;

/// `DefaultAPITokenMountPath`.
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// `ServiceAccountVolumeName`: the token volume is this plus `-` and five
/// random characters.
pub const TOKEN_VOLUME_PREFIX: &str = "kube-api-access";
/// `serviceaccount.WarnOnlyBoundTokenExpirationSeconds`.
const TOKEN_EXPIRATION_SECONDS: i64 = 3607;
/// `MirrorPodAnnotationKey`: a kubelet's static pod, left as it is.
const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// The Pod kind's plugin.
pub fn pod_plugin(registry: &Registry) -> Result<Arc<dyn Admission>, ApiError> {
    Ok(Arc::new(ServiceAccountAdmission {
        registry: registry.weak(),
    }))
}

struct ServiceAccountAdmission {
    registry: Weak<Registry>,
}

#[async_trait::async_trait]
impl Admission for ServiceAccountAdmission {
    async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        obj: &mut Value,
    ) -> Result<Vec<String>, ApiError> {
        let mirror_pod = obj
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .is_some_and(|a| a.contains_key(MIRROR_POD_ANNOTATION));
        if !attrs.creates_object() || mirror_pod {
            return Ok(Vec::new());
        }
        let name = obj
            .get("spec")
            .and_then(Value::as_object)
            .map_or("default", service_account_name)
            .to_string();
        let sa = match (attrs.namespace, self.registry.upgrade()) {
            (Some(ns), Some(registry)) => match registry.get("", "v1", "serviceaccounts") {
                Some(store) => match store.get_value(Some(ns), &name).await {
                    Ok(sa) => Some(sa),
                    Err(e) if e.code == 404 => {
                        tracing::debug!(namespace = ns, service_account = %name, "pod admitted before its ServiceAccount exists");
                        None
                    }
                    Err(e) => return Err(e),
                },
                None => None,
            },
            _ => None,
        };
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            admit_pod_spec(spec, sa.as_ref(), &generate_name);
        }
        Ok(Vec::new())
    }

    fn mutates_before_webhooks(&self) -> bool {
        true
    }
}

/// The ServiceAccount a pod's spec runs under: `serviceAccountName`, or
/// `default` when it names none (kube's plugin, and the pod strategy here).
pub fn service_account_name(spec: &Map<String, Value>) -> &str {
    spec.get("serviceAccountName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .unwrap_or("default")
}

/// kube's `shouldAutomount`: the pod's choice, then the ServiceAccount's,
/// then `true`.
fn should_automount(spec: &Map<String, Value>, sa: Option<&Value>) -> bool {
    spec.get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| {
            sa.and_then(|sa| sa.get("automountServiceAccountToken"))
                .and_then(Value::as_bool)
        })
        .unwrap_or(true)
}

/// kube's `TokenVolumeSource`.
fn token_volume_source() -> Value {
    json!({
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace",
                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
        ],
    })
}

/// What the plugin does to a pod's spec under `sa` (kube's `Admit` after
/// the lookup): the token mount and volume, then the image pull secrets.
/// `generate` makes the volume's name from its prefix.
fn admit_pod_spec(
    spec: &mut Map<String, Value>,
    sa: Option<&Value>,
    generate: &dyn Fn(&str) -> String,
) {
    if should_automount(spec, sa) {
        mount_token(spec, generate);
    }
    let has_pull_secrets = spec
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .is_some_and(|s| !s.is_empty());
    if !has_pull_secrets
        && let Some(secrets) = sa
            .and_then(|sa| sa.get("imagePullSecrets"))
            .and_then(Value::as_array)
            .filter(|s| !s.is_empty())
    {
        let refs: Vec<Value> = secrets
            .iter()
            .map(|s| json!({"name": s.get("name").and_then(Value::as_str).unwrap_or("")}))
            .collect();
        spec.insert("imagePullSecrets".into(), Value::Array(refs));
    }
}

/// kube's `mountServiceAccountToken`.
fn mount_token(spec: &mut Map<String, Value>, generate: &dyn Fn(&str) -> String) {
    let prefix = format!("{TOKEN_VOLUME_PREFIX}-");
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .find(|n| n.starts_with(&prefix))
        .map(str::to_string);
    let has_volume = existing.is_some();
    let volume_name = existing.unwrap_or_else(|| generate(&prefix));
    let mount = json!({"name": volume_name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
    let mut needs_volume = false;
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in containers.iter_mut().filter_map(Value::as_object_mut) {
            let mounts = c
                .entry("volumeMounts")
                .or_insert_with(|| Value::Array(Vec::new()));
            let Some(mounts) = mounts.as_array_mut() else {
                continue;
            };
            let mounted = mounts
                .iter()
                .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(TOKEN_MOUNT_PATH));
            if !mounted {
                mounts.push(mount.clone());
                needs_volume = true;
            }
        }
    }
    if !has_volume && needs_volume {
        let volumes = spec
            .entry("volumes")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(volumes) = volumes.as_array_mut() {
            volumes.push(json!({"name": volume_name, "projected": token_volume_source()}));
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    fn spec(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    fn fixed(prefix: &str) -> String {
        format!("{prefix}abcde")
    }

    #[test]
    fn automount_adds_the_projected_volume_and_a_mount_to_every_container() {
        let mut s = spec(json!({"initContainers": [{"name": "i"}],
            "containers": [{"name": "a"}, {"name": "b", "volumeMounts": [{"name": "x", "mountPath": "/x"}]}]}));
        admit_pod_spec(&mut s, Some(&json!({})), &fixed);
        let mount = json!({"name": "kube-api-access-abcde", "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
        assert_eq!(s["initContainers"][0]["volumeMounts"], json!([mount]));
        assert_eq!(s["containers"][0]["volumeMounts"], json!([mount]));
        assert_eq!(s["containers"][1]["volumeMounts"][1], mount);
        assert_eq!(
            s["volumes"],
            json!([{"name": "kube-api-access-abcde", "projected": token_volume_source()}])
        );
        assert_eq!(
            s["volumes"][0]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
            3607
        );
        // A generated name has kube's shape.
        let name = generate_name("kube-api-access-");
        assert_eq!(name.len(), "kube-api-access-".len() + 5, "{name}");
    }

    #[test]
    fn the_pod_then_the_service_account_may_opt_out() {
        let no = json!({"automountServiceAccountToken": false});
        let yes = json!({"automountServiceAccountToken": true});
        let pod = |automount: Value| {
            let mut p = json!({"containers": [{"name": "c"}]});
            if !automount.is_null() {
                p["automountServiceAccountToken"] = automount;
            }
            spec(p)
        };
        for (pod_says, sa, mounted) in [
            (Value::Null, None, true),
            (Value::Null, Some(&no), false),
            (Value::Null, Some(&yes), true),
            (json!(true), Some(&no), true),
            (json!(false), Some(&yes), false),
        ] {
            let mut s = pod(pod_says.clone());
            admit_pod_spec(&mut s, sa, &fixed);
            assert_eq!(
                s.contains_key("volumes"),
                mounted,
                "pod {pod_says}, sa {sa:?}"
            );
        }
    }

    #[test]
    fn an_existing_mount_or_token_volume_is_kept_and_pull_secrets_come_from_the_sa() {
        let mut s = spec(json!({
            "containers": [{"name": "c", "volumeMounts": [{"name": "own", "mountPath": TOKEN_MOUNT_PATH}]}]}));
        admit_pod_spec(&mut s, None, &fixed);
        assert!(!s.contains_key("volumes"), "{s:?}");
        let mut s = spec(
            json!({"volumes": [{"name": "kube-api-access-zzzzz", "emptyDir": {}}],
            "containers": [{"name": "c"}]}),
        );
        let sa = json!({"imagePullSecrets": [{"name": "reg"}]});
        admit_pod_spec(&mut s, Some(&sa), &fixed);
        assert_eq!(s["volumes"].as_array().map(Vec::len), Some(1));
        assert_eq!(
            s["containers"][0]["volumeMounts"][0]["name"],
            "kube-api-access-zzzzz"
        );
        assert_eq!(s["imagePullSecrets"], json!([{"name": "reg"}]));
    }
}
