//! The vendor-extension facts that `k8s-openapi`'s schemas do not carry:
//! per field, the strategic-merge-patch strategy and merge key (Go struct tags
//! `patchStrategy` / `patchMergeKey` in `k8s.io/api` and
//! `k8s.io/apimachinery`), and the server-side-apply list and map types
//! (`+listType`, `+listMapKey`, `+mapType`, `+structType` markers).
//!
//! Sources: the struct tags as compiled into kubectl (`k8s.io/api` types),
//! the upstream OpenAPI documents (`api/openapi-spec/v3/*.json`), and the
//! merge strategies `k8s-openapi` derives from the same upstream spec for its
//! `DeepMerge` impls. Only definitions this server serves are listed.
//!
//! Lists without a `list_type` here are atomic (the default of both server-side
//! apply and strategic merge patch); maps without a `map_type` are granular.

/// What upstream says about one property of one definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldFact {
    /// OpenAPI definition name, e.g. `io.k8s.api.core.v1.PodSpec`.
    pub definition: &'static str,
    /// JSON property name, e.g. `containers`.
    pub field: &'static str,
    /// `x-kubernetes-patch-strategy`: `merge`, `retainKeys`, `merge,retainKeys`, `replace`.
    pub patch_strategy: Option<&'static str>,
    /// `x-kubernetes-patch-merge-key`, e.g. `name`.
    pub patch_merge_key: Option<&'static str>,
    /// `x-kubernetes-list-type`: `atomic`, `set` or `map`.
    pub list_type: Option<&'static str>,
    /// `x-kubernetes-list-map-keys` (with `list_type` `map`).
    pub list_map_keys: &'static [&'static str],
    /// `x-kubernetes-map-type`: `atomic` or `granular`.
    pub map_type: Option<&'static str>,
}

impl FieldFact {
    const fn new(definition: &'static str, field: &'static str) -> Self {
        Self {
            definition,
            field,
            patch_strategy: None,
            patch_merge_key: None,
            list_type: None,
            list_map_keys: &[],
            map_type: None,
        }
    }

    /// `patchStrategy:"merge" patchMergeKey:"<key>"` on a list of objects,
    /// which is also `+listType=map` keyed by `keys`.
    const fn merge_by(self, key: &'static str, keys: &'static [&'static str]) -> Self {
        Self {
            patch_strategy: Some("merge"),
            patch_merge_key: Some(key),
            list_type: Some("map"),
            list_map_keys: keys,
            ..self
        }
    }

    const fn strategy(self, strategy: &'static str) -> Self {
        Self {
            patch_strategy: Some(strategy),
            ..self
        }
    }

    const fn list_map(self, keys: &'static [&'static str]) -> Self {
        Self {
            list_type: Some("map"),
            list_map_keys: keys,
            ..self
        }
    }

    const fn list(self, list_type: &'static str) -> Self {
        Self {
            list_type: Some(list_type),
            ..self
        }
    }

    const fn map(self, map_type: &'static str) -> Self {
        Self {
            map_type: Some(map_type),
            ..self
        }
    }
}

macro_rules! core {
    ($name:literal) => {
        concat!("io.k8s.api.core.v1.", $name)
    };
}
macro_rules! apps {
    ($name:literal) => {
        concat!("io.k8s.api.apps.v1.", $name)
    };
}
macro_rules! batch {
    ($name:literal) => {
        concat!("io.k8s.api.batch.v1.", $name)
    };
}
macro_rules! meta {
    ($name:literal) => {
        concat!("io.k8s.apimachinery.pkg.apis.meta.v1.", $name)
    };
}

const fn fact(definition: &'static str, field: &'static str) -> FieldFact {
    FieldFact::new(definition, field)
}

/// Every field fact, in no particular order.
pub static FIELD_FACTS: &[FieldFact] = &[
    // meta/v1
    fact(meta!("ObjectMeta"), "finalizers")
        .strategy("merge")
        .list("set"),
    fact(meta!("ObjectMeta"), "ownerReferences").merge_by("uid", &["uid"]),
    // core/v1: pods and their templates
    fact(core!("PodSpec"), "containers").merge_by("name", &["name"]),
    fact(core!("PodSpec"), "initContainers").merge_by("name", &["name"]),
    fact(core!("PodSpec"), "ephemeralContainers").merge_by("name", &["name"]),
    fact(core!("PodSpec"), "imagePullSecrets").merge_by("name", &["name"]),
    fact(core!("PodSpec"), "hostAliases").merge_by("ip", &["ip"]),
    fact(core!("PodSpec"), "volumes")
        .merge_by("name", &["name"])
        .strategy("merge,retainKeys"),
    fact(core!("PodSpec"), "resourceClaims")
        .merge_by("name", &["name"])
        .strategy("merge,retainKeys"),
    fact(core!("PodSpec"), "schedulingGates").merge_by("name", &["name"]),
    fact(core!("PodSpec"), "topologySpreadConstraints")
        .merge_by("topologyKey", &["topologyKey", "whenUnsatisfiable"]),
    fact(core!("PodSpec"), "evictionResponders").list_map(&["name"]),
    fact(core!("PodSpec"), "nodeSelector").map("atomic"),
    fact(core!("Container"), "env").merge_by("name", &["name"]),
    fact(core!("Container"), "ports").merge_by("containerPort", &["containerPort", "protocol"]),
    fact(core!("Container"), "volumeMounts").merge_by("mountPath", &["mountPath"]),
    fact(core!("Container"), "volumeDevices").merge_by("devicePath", &["devicePath"]),
    fact(core!("EphemeralContainer"), "env").merge_by("name", &["name"]),
    fact(core!("EphemeralContainer"), "ports")
        .merge_by("containerPort", &["containerPort", "protocol"]),
    fact(core!("EphemeralContainer"), "volumeMounts").merge_by("mountPath", &["mountPath"]),
    fact(core!("EphemeralContainer"), "volumeDevices").merge_by("devicePath", &["devicePath"]),
    fact(core!("ContainerRestartRuleOnExitCodes"), "values").list("set"),
    fact(core!("VolumeMount"), "bindMountOptions").list("set"),
    fact(core!("ResourceRequirements"), "claims").list_map(&["name"]),
    fact(core!("PodStatus"), "conditions").merge_by("type", &["type"]),
    fact(core!("PodStatus"), "podIPs").merge_by("ip", &["ip"]),
    fact(core!("PodStatus"), "hostIPs").merge_by("ip", &["ip"]),
    fact(core!("PodStatus"), "resourceClaimStatuses")
        .merge_by("name", &["name"])
        .strategy("merge,retainKeys"),
    fact(core!("PodStatus"), "nodeAllocatableResourceClaimStatuses")
        .list_map(&["resourceClaimName"]),
    fact(core!("PodStatus"), "volumeHealth").list_map(&["name"]),
    fact(core!("PodVolumeHealth"), "healthConditions").list_map(&["status"]),
    fact(core!("VolumeHealthStatus"), "healthConditions").list_map(&["status"]),
    fact(core!("ContainerStatus"), "volumeMounts").merge_by("mountPath", &["mountPath"]),
    fact(core!("ContainerStatus"), "allocatedResourcesStatus").merge_by("name", &["name"]),
    fact(core!("ResourceStatus"), "resources").list_map(&["resourceID"]),
    fact(core!("NodeAllocatableResourceClaimStatus"), "containers").list("set"),
    fact(core!("NodeAllocatableResourceClaimStatus"), "mapping").list_map(&["name"]),
    fact(core!("NodeAllocatableResourceClaimStatus"), "overhead").list_map(&["name"]),
    // core/v1: other kinds
    fact(core!("ServiceSpec"), "ports").merge_by("port", &["port", "protocol"]),
    fact(core!("ServiceSpec"), "selector").map("atomic"),
    fact(core!("ServiceStatus"), "conditions").merge_by("type", &["type"]),
    fact(core!("ServiceAccount"), "secrets").merge_by("name", &["name"]),
    fact(core!("NamespaceStatus"), "conditions").merge_by("type", &["type"]),
    fact(core!("NodeSpec"), "podCIDRs")
        .strategy("merge")
        .list("set"),
    fact(core!("NodeStatus"), "addresses").merge_by("type", &["type"]),
    fact(core!("NodeStatus"), "conditions").merge_by("type", &["type"]),
    fact(core!("NodePodPreemptionPolicy"), "disableResizePreemption").list("set"),
    fact(core!("PersistentVolumeClaimStatus"), "conditions").merge_by("type", &["type"]),
    fact(core!("ReplicationControllerSpec"), "selector").map("atomic"),
    fact(core!("ReplicationControllerStatus"), "conditions").merge_by("type", &["type"]),
    fact(core!("ComponentStatus"), "conditions").merge_by("type", &["type"]),
    // apps/v1
    fact(apps!("DeploymentSpec"), "strategy").strategy("retainKeys"),
    fact(apps!("DeploymentStatus"), "conditions").merge_by("type", &["type"]),
    fact(apps!("ReplicaSetStatus"), "conditions").merge_by("type", &["type"]),
    fact(apps!("StatefulSetStatus"), "conditions").merge_by("type", &["type"]),
    fact(apps!("DaemonSetStatus"), "conditions").merge_by("type", &["type"]),
    // batch/v1: Job conditions merge by type for SMP but are an atomic list for SSA.
    fact(batch!("JobStatus"), "conditions")
        .merge_by("type", &[])
        .list("atomic"),
    fact(batch!("JobSchedulingConfiguration"), "resourceClaims").list_map(&["name"]),
    fact(batch!("PodFailurePolicyOnExitCodesRequirement"), "values").list("set"),
    fact(batch!("UncountedTerminatedPods"), "failed").list("set"),
    fact(batch!("UncountedTerminatedPods"), "succeeded").list("set"),
    // autoscaling/v2
    fact(
        "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus",
        "conditions",
    )
    .merge_by("type", &["type"]),
    // policy/v1
    fact("io.k8s.api.policy.v1.PodDisruptionBudgetSpec", "selector").strategy("replace"),
    fact(
        "io.k8s.api.policy.v1.PodDisruptionBudgetStatus",
        "conditions",
    )
    .merge_by("type", &["type"]),
    // discovery.k8s.io/v1
    fact("io.k8s.api.discovery.v1.Endpoint", "addresses").list("set"),
    // networking.k8s.io/v1
    fact("io.k8s.api.networking.v1.ServiceCIDRStatus", "conditions").list_map(&["type"]),
    // apiextensions.k8s.io/v1
    fact(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus",
        "conditions",
    )
    .list_map(&["type"]),
    fact(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
        "x-kubernetes-validations",
    )
    .list_map(&["rule"]),
    // apiregistration.k8s.io/v1
    fact(
        "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceStatus",
        "conditions",
    )
    .merge_by("type", &["type"]),
    // federation/v1beta1
    fact(
        "io.ubernetes.federation.v1beta1.ClusterStatus",
        "conditions",
    )
    .merge_by("type", &["type"]),
];

/// Definitions that are atomic as a whole (`+structType=atomic`, emitted as
/// `x-kubernetes-map-type: atomic` on the definition).
pub static ATOMIC_DEFINITIONS: &[&str] = &[
    meta!("LabelSelector"),
    core!("ObjectReference"),
    core!("LocalObjectReference"),
    core!("TypedLocalObjectReference"),
    core!("NodeSelector"),
    core!("NodeSelectorTerm"),
    core!("ConfigMapKeySelector"),
    core!("SecretKeySelector"),
    core!("ObjectFieldSelector"),
    core!("ResourceFieldSelector"),
    core!("SecretReference"),
];

/// The facts about `field` of `definition`, if upstream states any.
pub fn field_fact(definition: &str, field: &str) -> Option<&'static FieldFact> {
    FIELD_FACTS
        .iter()
        .find(|f| f.definition == definition && f.field == field)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_merge_by_name() {
        let f = field_fact("io.k8s.api.core.v1.PodSpec", "containers").expect("fact");
        assert_eq!(f.patch_strategy, Some("merge"));
        assert_eq!(f.patch_merge_key, Some("name"));
        assert_eq!(f.list_type, Some("map"));
        assert_eq!(f.list_map_keys, &["name"]);
    }

    #[test]
    fn volumes_retain_keys_and_merge() {
        let f = field_fact("io.k8s.api.core.v1.PodSpec", "volumes").expect("fact");
        assert_eq!(f.patch_strategy, Some("merge,retainKeys"));
        assert_eq!(f.patch_merge_key, Some("name"));
    }

    #[test]
    fn job_conditions_are_atomic_for_apply_but_merge_for_patch() {
        let f = field_fact("io.k8s.api.batch.v1.JobStatus", "conditions").expect("fact");
        assert_eq!(f.patch_strategy, Some("merge"));
        assert_eq!(f.list_type, Some("atomic"));
        assert!(f.list_map_keys.is_empty());
    }

    #[test]
    fn no_fact_is_listed_twice() {
        for (i, a) in FIELD_FACTS.iter().enumerate() {
            for b in &FIELD_FACTS[i + 1..] {
                assert!(
                    !(a.definition == b.definition && a.field == b.field),
                    "{} {} listed twice",
                    a.definition,
                    a.field
                );
            }
        }
    }
}
