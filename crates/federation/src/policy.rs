//! The federation's per-kind rules, one [`KindPolicy`] per kind, keyed by
//! [`GroupKind`] (group and kind, never a plural name: a CRD named
//! `services.example.com` is not core's Service and gets the
//! [`DEFAULT`] policy of custom resources).
//!
//! A policy says, for its kind:
//! - what propagates: the kind's own never-propagated rule
//!   ([`KindPolicy::keep_home`]; the generic rules — no name, the control
//!   plane's own, the member namespace denylist — are
//!   [`crate::member_object`]'s), and that rule in the words a refused
//!   override is told ([`KindPolicy::override_rule`]);
//! - what is stripped from a member copy: the fields the federation's own
//!   server assigned ([`KindPolicy::strip`]: a Service's cluster IPs and
//!   node ports, a Job's generated selector, …);
//! - what of a federated object decides whether it propagates, beside its
//!   metadata ([`KindPolicy::decision_fields`]: a Secret's `type`), which
//!   the controllers' caches keep;
//! - how the members' statuses sum ([`KindPolicy::status`], see
//!   [`crate::status_aggregate`]);
//! - where replicas live ([`KindPolicy::replicas`]: a workload's
//!   `/spec/replicas` and its preferences annotation, an HPA's min/max).
//!
//! Generic code looks the policy up ([`of`], [`GroupKind::policy`],
//! [`crate::kinds::FederatedKind::policy`]) and never matches on a kind
//! itself. Kinds without an entry (custom resources, and built-in kinds
//! with no rule of their own, such as ConfigMap's siblings) get
//! [`DEFAULT`]: propagated as they are, status not summed, no replicas.
//!
//! Pure data and functions, no I/O.

use serde_json::Value;

use crate::planner::{DEPLOYMENT_PREFERENCES_ANNOTATION, REPLICA_SET_PREFERENCES_ANNOTATION};
use crate::status_aggregate::StatusSum;

/// An API group and kind (`""` is the core group).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupKind {
    /// The API group, `""` for the core group.
    pub group: String,
    /// The kind.
    pub kind: String,
}

impl GroupKind {
    /// A group and kind from their parts.
    pub fn new(group: &str, kind: &str) -> Self {
        Self {
            group: group.to_string(),
            kind: kind.to_string(),
        }
    }

    /// The group and kind an object says it is (`apiVersion`, `kind`);
    /// `None` when it does not say.
    pub fn of_object(obj: &Value) -> Option<Self> {
        let api_version = obj.get("apiVersion")?.as_str()?;
        let kind = obj.get("kind")?.as_str().filter(|k| !k.is_empty())?;
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        Some(Self::new(group, kind))
    }

    /// This kind's policy ([`DEFAULT`] when it has none of its own).
    pub fn policy(&self) -> &'static KindPolicy {
        of(&self.group, &self.kind)
    }
}

impl std::fmt::Display for GroupKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.kind)
        } else {
            write!(f, "{}.{}", self.kind, self.group)
        }
    }
}

/// What a kind's never-propagated rule reads of a federated object (or of
/// a member copy: an override must not make it into something kept home).
#[derive(Clone, Copy, Debug)]
pub struct Candidate<'a> {
    /// `metadata.name` (never empty: nameless objects are refused first).
    pub name: &'a str,
    /// `metadata.namespace` (`""` for cluster-scoped objects).
    pub namespace: &'a str,
    /// The whole object.
    pub object: &'a Value,
}

impl Candidate<'_> {
    fn label(&self, key: &str) -> Option<&str> {
        self.object.pointer("/metadata/labels")?.get(key)?.as_str()
    }

    fn annotation(&self, key: &str) -> Option<&str> {
        self.object
            .pointer("/metadata/annotations")?
            .get(key)?
            .as_str()
    }
}

/// Where a kind's replicas live (SPEC §3.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replicas {
    /// The kind has no replicas the federation schedules.
    None,
    /// A workload: its total at `pointer` is split over the clusters by
    /// [`crate::planner`], with the preferences of annotation `preferences`.
    Workload {
        /// JSON pointer of the replica count (`/spec/replicas`).
        pointer: &'static str,
        /// The replica preferences annotation the kind reads.
        preferences: &'static str,
    },
    /// A HorizontalPodAutoscaler: its `minReplicas` / `maxReplicas` are
    /// split over the clusters ([`crate::hpa`]), and the workload it scales
    /// has its replicas left to the members.
    Autoscaler,
}

/// The federation's rules for one kind (see the module docs).
#[derive(Clone, Copy, Debug)]
pub struct KindPolicy {
    /// The API group (`""` core; `"*"` in [`DEFAULT`]).
    pub group: &'static str,
    /// The kind (`"*"` in [`DEFAULT`]).
    pub kind: &'static str,
    /// Why an object of the kind stays in the federation (a sentence), by
    /// the kind's own rule; `None`: this rule lets it go.
    pub keep_home: fn(&Candidate<'_>) -> Option<String>,
    /// The kind's rule that an override could make a copy break, in the
    /// words of admission's refusal (`None`: the generic sentence).
    pub override_rule: Option<&'static str>,
    /// Whether the object is itself a namespace (the member namespace
    /// denylist then reads its name, not its namespace).
    pub is_namespace: bool,
    /// Remove from a member copy the fields the federation's own server
    /// assigned (the members assign their own).
    pub strip: fn(&mut Value),
    /// Top-level fields beside metadata that [`KindPolicy::keep_home`]
    /// reads (caches that keep metadata only keep these too).
    pub decision_fields: &'static [&'static str],
    /// How the members' statuses sum (`None`: not aggregated).
    pub status: Option<StatusSum>,
    /// Where the kind's replicas live.
    pub replicas: Replicas,
}

impl KindPolicy {
    /// The policy of `group`/`kind` with no rule of its own (as
    /// [`DEFAULT`]).
    pub const fn new(group: &'static str, kind: &'static str) -> Self {
        Self {
            group,
            kind,
            keep_home: propagates,
            override_rule: None,
            is_namespace: false,
            strip: keep_all,
            decision_fields: &[],
            status: None,
            replicas: Replicas::None,
        }
    }

    const fn with_keep_home(mut self, rule: fn(&Candidate<'_>) -> Option<String>) -> Self {
        self.keep_home = rule;
        self
    }

    const fn with_override_rule(mut self, words: &'static str) -> Self {
        self.override_rule = Some(words);
        self
    }

    const fn with_strip(mut self, strip: fn(&mut Value)) -> Self {
        self.strip = strip;
        self
    }

    const fn with_status(mut self, sum: StatusSum) -> Self {
        self.status = Some(sum);
        self
    }

    const fn workload(mut self, preferences: &'static str) -> Self {
        self.replicas = Replicas::Workload {
            pointer: "/spec/replicas",
            preferences,
        };
        self
    }

    /// Its group and kind.
    pub fn group_kind(&self) -> GroupKind {
        GroupKind::new(self.group, self.kind)
    }

    /// Whether this is the [`DEFAULT`] policy.
    pub fn is_default(&self) -> bool {
        self.group == DEFAULT.group && self.kind == DEFAULT.kind
    }
}

/// The policy of every kind without one of its own, custom resources
/// included: propagated as it is (the generic rules only), nothing
/// stripped, status not summed, no replicas scheduled.
pub static DEFAULT: KindPolicy = KindPolicy::new("*", "*");

const RBAC: &str = "rbac.authorization.k8s.io";
const APF: &str = "flowcontrol.apiserver.k8s.io";

const RBAC_RULE: &str = "bootstrap RBAC objects (labelled kubernetes.io/bootstrapping) are each \
                         cluster's own and never propagated";
const APF_RULE: &str = "API Priority and Fairness objects annotated apf.kubernetes.io/autoupdate-spec \
                        are each cluster's own (its kube-apiserver maintains them)";

/// Every kind with rules of its own.
static POLICIES: &[KindPolicy] = &[
    // Per-cluster by nature (SPEC §3.4: events, leases, clusters).
    KindPolicy::new("", "Event").with_keep_home(each_clusters_own),
    KindPolicy::new("events.k8s.io", "Event").with_keep_home(each_clusters_own),
    KindPolicy::new("coordination.k8s.io", "Lease").with_keep_home(each_clusters_own),
    KindPolicy::new(ubernetes_api::GROUP, "Cluster").with_keep_home(each_clusters_own),
    // The Multi-cluster Services API: the MCS controller (`crate::mcs`)
    // derives each member's ServiceImport and EndpointSlices from the
    // federation's ServiceExports; the objects themselves never propagate.
    KindPolicy::new(ubernetes_api::mcs::GROUP, "ServiceExport")
        .with_keep_home(multicluster_services)
        .with_override_rule(MCS_RULE),
    KindPolicy::new(ubernetes_api::mcs::GROUP, "ServiceImport")
        .with_keep_home(multicluster_services)
        .with_override_rule(MCS_RULE),
    // The cluster inventory: one ClusterProfile per Cluster, written by
    // `crate::cluster_profiles`; it describes the federation's members and
    // never propagates to them.
    KindPolicy::new(ubernetes_api::mcs::GROUP, "ClusterProfile")
        .with_keep_home(cluster_inventory)
        .with_override_rule(CLUSTER_INVENTORY_RULE),
    KindPolicy {
        is_namespace: true,
        ..KindPolicy::new("", "Namespace")
            .with_keep_home(default_namespace)
            .with_strip(strip_namespace)
    },
    KindPolicy::new("", "ConfigMap").with_keep_home(root_ca),
    KindPolicy::new("", "ServiceAccount")
        .with_keep_home(default_service_account)
        .with_strip(strip_service_account),
    KindPolicy::new("", "Service")
        .with_keep_home(kubernetes_service)
        .with_strip(strip_service)
        .with_status(StatusSum::LoadBalancer),
    // What kube-controller-manager's endpoints, endpointslice and mirroring
    // controllers (and kube-apiserver's endpoint reconciler) write: the
    // federation runs them over its own Services
    // (`ubernetes_registry::controllers::endpoints`), each member's make
    // its own. A user's hand-written Endpoints or EndpointSlice carries no
    // such mark (neither kind is in the federated list of SPEC §3.4, so
    // this is the second line: it holds if one ever is).
    KindPolicy::new("", "Endpoints")
        .with_keep_home(controller_endpoints)
        .with_override_rule(ENDPOINTS_RULE),
    KindPolicy::new("discovery.k8s.io", "EndpointSlice")
        .with_keep_home(controller_endpoint_slices)
        .with_override_rule(ENDPOINTS_RULE),
    KindPolicy {
        decision_fields: &["type"],
        ..KindPolicy::new("", "Secret")
            .with_keep_home(service_account_token)
            .with_override_rule(
                "Secrets of type kubernetes.io/service-account-token are never propagated (each \
                 cluster issues its own service-account tokens; a token stays in the cluster that \
                 issued it)",
            )
    },
    KindPolicy::new(RBAC, "Role")
        .with_keep_home(bootstrap_rbac)
        .with_override_rule(RBAC_RULE),
    KindPolicy::new(RBAC, "RoleBinding")
        .with_keep_home(bootstrap_rbac)
        .with_override_rule(RBAC_RULE),
    KindPolicy::new(RBAC, "ClusterRole")
        .with_keep_home(bootstrap_rbac)
        .with_override_rule(RBAC_RULE),
    KindPolicy::new(RBAC, "ClusterRoleBinding")
        .with_keep_home(bootstrap_rbac)
        .with_override_rule(RBAC_RULE),
    KindPolicy::new("apiextensions.k8s.io", "CustomResourceDefinition")
        .with_keep_home(unfederated_crd)
        .with_override_rule(
            "CustomResourceDefinitions are propagated only while labelled \
             federation.kubernetes.io/federated=true",
        ),
    // Every cluster has its own: kube-apiserver creates the system
    // PriorityClasses and the API Priority and Fairness bootstrap objects
    // (annotated `apf.kubernetes.io/autoupdate-spec`) itself.
    KindPolicy::new("scheduling.k8s.io", "PriorityClass").with_keep_home(system_priority_class),
    KindPolicy::new(APF, "FlowSchema")
        .with_keep_home(apf_bootstrap)
        .with_override_rule(APF_RULE),
    KindPolicy::new(APF, "PriorityLevelConfiguration")
        .with_keep_home(apf_bootstrap)
        .with_override_rule(APF_RULE),
    // Workloads: status summed, replicas scheduled.
    KindPolicy::new("apps", "Deployment")
        .with_status(StatusSum::Deployment)
        .workload(DEPLOYMENT_PREFERENCES_ANNOTATION),
    KindPolicy::new("apps", "ReplicaSet")
        .with_keep_home(workload_revision)
        .with_override_rule(REVISION_RULE)
        .with_status(StatusSum::ReplicaSet)
        .workload(REPLICA_SET_PREFERENCES_ANNOTATION),
    // A StatefulSet's or DaemonSet's history (`crate::revisions`).
    KindPolicy::new("apps", "ControllerRevision")
        .with_keep_home(workload_revision)
        .with_override_rule(REVISION_RULE),
    KindPolicy::new("apps", "StatefulSet")
        .with_status(StatusSum::StatefulSet)
        .workload(DEPLOYMENT_PREFERENCES_ANNOTATION),
    KindPolicy::new("apps", "DaemonSet").with_status(StatusSum::DaemonSet),
    KindPolicy::new("batch", "Job")
        .with_strip(strip_job)
        .with_status(StatusSum::Job),
    KindPolicy::new("networking.k8s.io", "Ingress").with_status(StatusSum::LoadBalancer),
    KindPolicy {
        replicas: Replicas::Autoscaler,
        ..KindPolicy::new("autoscaling", "HorizontalPodAutoscaler")
    },
];

/// The policy of `group`/`kind` ([`DEFAULT`] when it has none of its own).
pub fn of(group: &str, kind: &str) -> &'static KindPolicy {
    POLICIES
        .iter()
        .find(|p| p.kind == kind && p.group == group)
        .unwrap_or(&DEFAULT)
}

/// The policy of the kind an object says it is (`apiVersion`, `kind`);
/// [`DEFAULT`] when it does not say.
pub fn of_object(obj: &Value) -> &'static KindPolicy {
    GroupKind::of_object(obj).map_or(&DEFAULT, |gk| gk.policy())
}

/// Every kind with a policy of its own.
pub fn all() -> &'static [KindPolicy] {
    POLICIES
}

// --- what propagates ---------------------------------------------------

fn propagates(_: &Candidate<'_>) -> Option<String> {
    None
}

/// `what is each cluster's own` when `cond` holds.
fn own_if(cond: bool, what: &str) -> Option<String> {
    cond.then(|| format!("{what} is each cluster's own"))
}

const MCS_RULE: &str = "ServiceExports and ServiceImports are never propagated as objects: the \
                        Multi-cluster Services controller writes each member's ServiceImport and \
                        EndpointSlices";

/// ServiceExports and ServiceImports: the MCS controller's input and output.
fn multicluster_services(c: &Candidate<'_>) -> Option<String> {
    let kind = c.object.get("kind").and_then(Value::as_str).unwrap_or("");
    Some(format!(
        "every {kind} is the Multi-cluster Services controller's (it writes the members' \
         ServiceImports and EndpointSlices)"
    ))
}

const CLUSTER_INVENTORY_RULE: &str = "ClusterProfiles are never propagated: they are the \
                                      federation's inventory of its member clusters";

/// ClusterProfiles: the federation's inventory of its members.
fn cluster_inventory(_: &Candidate<'_>) -> Option<String> {
    Some(
        "every ClusterProfile is the federation's inventory of its member clusters (one per \
         Cluster, written by the ClusterProfile controller)"
            .into(),
    )
}

const REVISION_RULE: &str = "ReplicaSets and ControllerRevisions controlled by a federated \
                             Deployment, StatefulSet or DaemonSet are its revision history, kept \
                             in the federation (each member's controllers keep their own)";

/// A ReplicaSet or ControllerRevision controlled by an `apps` workload (a
/// federated Deployment's, StatefulSet's or DaemonSet's revision history,
/// `crate::revisions`) stays in the federation.
fn workload_revision(c: &Candidate<'_>) -> Option<String> {
    let (owner, _) = crate::revisions::controller_of(c.object)?;
    matches!(owner, "Deployment" | "StatefulSet" | "DaemonSet").then(|| {
        let kind = c.object.get("kind").and_then(Value::as_str).unwrap_or("");
        format!("a {kind} controlled by a {owner} is the {owner}'s revision history, kept in the federation")
    })
}

fn each_clusters_own(c: &Candidate<'_>) -> Option<String> {
    let kind = c.object.get("kind").and_then(Value::as_str).unwrap_or("");
    own_if(true, &format!("every {kind}"))
}

/// Each cluster has its own `default`; its content propagates.
fn default_namespace(c: &Candidate<'_>) -> Option<String> {
    own_if(c.name == "default", "namespace default")
}

fn root_ca(c: &Candidate<'_>) -> Option<String> {
    own_if(c.name == "kube-root-ca.crt", "ConfigMap kube-root-ca.crt")
}

fn default_service_account(c: &Candidate<'_>) -> Option<String> {
    own_if(c.name == "default", "ServiceAccount default")
}

fn kubernetes_service(c: &Candidate<'_>) -> Option<String> {
    own_if(
        c.namespace == "default" && c.name == "kubernetes",
        "Service default/kubernetes",
    )
}

const ENDPOINTS_RULE: &str = "Endpoints and EndpointSlices written by a cluster's endpoints, \
                              endpointslice or mirroring controller (or its API server's endpoint \
                              reconciler) are each cluster's own and never propagated";

/// The endpoints controller's Endpoints (its trigger-time annotation) and
/// the API server's `kubernetes` Endpoints (labelled skip-mirror).
fn controller_endpoints(c: &Candidate<'_>) -> Option<String> {
    own_if(
        c.annotation("endpoints.kubernetes.io/last-change-trigger-time")
            .is_some()
            || c.label("endpointslice.kubernetes.io/skip-mirror") == Some("true"),
        "an Endpoints written by the endpoints controller or the API server",
    )
}

/// EndpointSlices managed by the endpointslice or mirroring controller, and
/// the API server's `kubernetes` slice.
fn controller_endpoint_slices(c: &Candidate<'_>) -> Option<String> {
    let managed = matches!(
        c.label("endpointslice.kubernetes.io/managed-by"),
        Some("endpointslice-controller.k8s.io" | "endpointslicemirroring-controller.k8s.io")
    );
    own_if(
        managed || (c.namespace == "default" && c.name == "kubernetes"),
        "an EndpointSlice written by the endpointslice or mirroring controller",
    )
}

fn service_account_token(c: &Candidate<'_>) -> Option<String> {
    (c.object.get("type").and_then(Value::as_str) == Some("kubernetes.io/service-account-token"))
        .then(|| {
            "a Secret of type kubernetes.io/service-account-token stays in the cluster that issued it"
                .to_string()
        })
}

fn bootstrap_rbac(c: &Candidate<'_>) -> Option<String> {
    own_if(
        c.name.starts_with("system:") || c.label("kubernetes.io/bootstrapping").is_some(),
        "bootstrap RBAC (a system: name or the kubernetes.io/bootstrapping label)",
    )
}

fn unfederated_crd(c: &Candidate<'_>) -> Option<String> {
    use crate::member_object::FEDERATED_CRD_LABEL;
    (c.label(FEDERATED_CRD_LABEL) != Some("true")).then(|| {
        format!(
            "a CustomResourceDefinition propagates only when labelled {FEDERATED_CRD_LABEL}=true"
        )
    })
}

fn system_priority_class(c: &Candidate<'_>) -> Option<String> {
    own_if(c.name.starts_with("system-"), "a system- PriorityClass")
}

fn apf_bootstrap(c: &Candidate<'_>) -> Option<String> {
    own_if(
        c.annotation("apf.kubernetes.io/autoupdate-spec").is_some(),
        "an API Priority and Fairness bootstrap object",
    )
}

// --- what is stripped --------------------------------------------------

fn keep_all(_: &mut Value) {}

/// The template labels the job strategy generates (legacy and current).
const JOB_GENERATED_LABELS: [&str; 4] = [
    "controller-uid",
    "batch.kubernetes.io/controller-uid",
    "job-name",
    "batch.kubernetes.io/job-name",
];

/// Services: clusterIP(s) (unless headless), node ports and the health-check
/// node port are the federation server's allocations.
fn strip_service(copy: &mut Value) {
    let Some(spec) = copy.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec.get("clusterIP").and_then(Value::as_str) != Some("None") {
        spec.shift_remove("clusterIP");
    }
    let headless_ips = spec
        .get("clusterIPs")
        .and_then(Value::as_array)
        .is_some_and(|ips| !ips.is_empty() && ips.iter().all(|ip| ip.as_str() == Some("None")));
    if !headless_ips {
        spec.shift_remove("clusterIPs");
    }
    spec.shift_remove("healthCheckNodePort");
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            p.shift_remove("nodePort");
        }
    }
}

/// Jobs without a manual selector: the selector and template labels the
/// job strategy generated from the federated object's uid.
fn strip_job(copy: &mut Value) {
    let Some(spec) = copy.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec.get("manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    spec.shift_remove("selector");
    let Some(meta) = spec
        .get_mut("template")
        .and_then(|t| t.get_mut("metadata"))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    if let Some(labels) = meta.get_mut("labels").and_then(Value::as_object_mut) {
        for l in JOB_GENERATED_LABELS {
            labels.shift_remove(l);
        }
        if labels.is_empty() {
            meta.shift_remove("labels");
        }
    }
}

/// Namespaces: `spec.finalizers` (`kubernetes`) is each cluster's own.
fn strip_namespace(copy: &mut Value) {
    let Some(obj) = copy.as_object_mut() else {
        return;
    };
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        spec.shift_remove("finalizers");
        if spec.is_empty() {
            obj.shift_remove("spec");
        }
    }
}

/// ServiceAccounts: `secrets` lists the token Secrets of the federation's
/// own server.
fn strip_service_account(copy: &mut Value) {
    if let Some(o) = copy.as_object_mut() {
        o.shift_remove("secrets");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lookups_are_by_group_and_kind() {
        assert_eq!(of("", "Service").kind, "Service");
        assert_eq!(of("apps", "Deployment").status, Some(StatusSum::Deployment));
        // Same kind, another group: not core's rules.
        assert!(of("example.com", "Service").is_default());
        assert!(of("example.com", "Deployment").is_default());
        assert!(of("apps", "Service").is_default());
        assert!(of("", "Foo").is_default());
        let gk = GroupKind::of_object(&json!({"apiVersion": "apps/v1", "kind": "Deployment"}));
        assert_eq!(gk, Some(GroupKind::new("apps", "Deployment")));
        let gk = GroupKind::of_object(&json!({"apiVersion": "v1", "kind": "Secret"}));
        assert_eq!(
            gk.as_ref().map(ToString::to_string).as_deref(),
            Some("Secret")
        );
        assert_eq!(GroupKind::of_object(&json!({"kind": "Secret"})), None);
        assert!(of_object(&json!({"metadata": {}})).is_default());
    }

    #[test]
    fn service_exports_and_imports_never_propagate() {
        for kind in ["ServiceExport", "ServiceImport"] {
            let obj = json!({"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": kind,
                "metadata": {"name": "web", "namespace": "app"}});
            let p = of_object(&obj);
            assert_eq!(p.kind, kind);
            let c = Candidate {
                name: "web",
                namespace: "app",
                object: &obj,
            };
            assert!((p.keep_home)(&c).is_some_and(|why| why.contains(kind)));
        }
    }

    #[test]
    fn cluster_profiles_never_propagate() {
        let obj = json!({"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
            "metadata": {"name": "east", "namespace": "federation-system"}});
        let p = of_object(&obj);
        assert_eq!(p.kind, "ClusterProfile");
        let c = Candidate {
            name: "east",
            namespace: "federation-system",
            object: &obj,
        };
        assert!((p.keep_home)(&c).is_some_and(|why| why.contains("ClusterProfile")));
    }

    #[test]
    fn controller_endpoints_never_propagate_and_hand_written_ones_are_not_marked() {
        let home = |api_version: &str, kind: &str, meta: serde_json::Value| {
            let obj = json!({"apiVersion": api_version, "kind": kind, "metadata": meta});
            let p = of_object(&obj);
            assert_eq!(p.kind, kind);
            let c = Candidate {
                name: obj["metadata"]["name"].as_str().unwrap_or_default(),
                namespace: obj["metadata"]["namespace"].as_str().unwrap_or_default(),
                object: &obj,
            };
            (p.keep_home)(&c)
        };
        for managed_by in [
            "endpointslice-controller.k8s.io",
            "endpointslicemirroring-controller.k8s.io",
        ] {
            let why = home(
                "discovery.k8s.io/v1",
                "EndpointSlice",
                json!({"name": "web-abcde",
                "namespace": "app", "labels": {"kubernetes.io/service-name": "web",
                "endpointslice.kubernetes.io/managed-by": managed_by}}),
            );
            assert!(why.is_some_and(|w| w.contains("each cluster's own")));
        }
        assert!(
            home(
                "discovery.k8s.io/v1",
                "EndpointSlice",
                json!({"name": "kubernetes", "namespace": "default"})
            )
            .is_some()
        );
        // A slice someone else manages (the MCS controller's, a user's) is not this rule's.
        assert!(
            home(
                "discovery.k8s.io/v1",
                "EndpointSlice",
                json!({"name": "web-x",
            "namespace": "app", "labels": {"endpointslice.kubernetes.io/managed-by": "me"}})
            )
            .is_none()
        );
        assert!(home("v1", "Endpoints", json!({"name": "web", "namespace": "app",
            "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": "2026-01-01T00:00:00Z"}})).is_some());
        assert!(
            home(
                "v1",
                "Endpoints",
                json!({"name": "kubernetes", "namespace": "default",
            "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}})
            )
            .is_some()
        );
        // A user's Endpoints for a Service without a selector: no mark.
        assert!(home("v1", "Endpoints", json!({"name": "db", "namespace": "app"})).is_none());
    }

    #[test]
    fn revisions_of_federated_workloads_stay_home() {
        for (kind, owner, home) in [
            ("ReplicaSet", "Deployment", true),
            ("ControllerRevision", "StatefulSet", true),
            ("ControllerRevision", "DaemonSet", true),
            ("ReplicaSet", "Foo", false),
        ] {
            let obj = json!({"apiVersion": "apps/v1", "kind": kind,
                "metadata": {"name": "web-1", "namespace": "app", "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": owner, "name": "web", "uid": "u", "controller": true}]}});
            let c = Candidate {
                name: "web-1",
                namespace: "app",
                object: &obj,
            };
            assert_eq!(
                (of_object(&obj).keep_home)(&c).is_some(),
                home,
                "{kind} of {owner}"
            );
        }
        // A ReplicaSet of its own propagates.
        let rs =
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"}});
        let c = Candidate {
            name: "web",
            namespace: "app",
            object: &rs,
        };
        assert!((of_object(&rs).keep_home)(&c).is_none());
    }

    #[test]
    fn every_kind_has_one_policy() {
        let mut seen = std::collections::BTreeSet::new();
        for p in all() {
            assert!(seen.insert(p.group_kind()), "{} twice", p.group_kind());
            assert!(!p.is_default());
        }
    }

    #[test]
    fn only_workloads_and_autoscalers_have_replicas() {
        let workloads: Vec<String> = all()
            .iter()
            .filter(|p| matches!(p.replicas, Replicas::Workload { .. }))
            .map(|p| p.group_kind().to_string())
            .collect();
        assert_eq!(
            workloads,
            ["Deployment.apps", "ReplicaSet.apps", "StatefulSet.apps"]
        );
        assert_eq!(
            of("autoscaling", "HorizontalPodAutoscaler").replicas,
            Replicas::Autoscaler
        );
        assert_eq!(DEFAULT.replicas, Replicas::None);
    }
}
