//! The bootstrap policy: the ClusterRoles and ClusterRoleBindings
//! kube-apiserver creates at start (`bootstrappolicy/policy.go`, as its
//! `testdata/cluster-roles.yaml` renders them; the user-facing and discovery
//! roles, not the per-component ones), plus the federation controller's own
//! role.
//!
//! # The federation controller's role
//!
//! The embedded federation controllers call this API as the user
//! [`FEDERATION_CONTROLLER_USER`]. What they may do:
//! - `ubernetes:federation-controller` (ClusterRole, aggregated from every
//!   ClusterRole labelled [`AGGREGATE_TO_FEDERATION_CONTROLLER`]` = "true"`),
//!   bound cluster-wide by the ClusterRoleBinding of the same name;
//! - `ubernetes:aggregate-to-federation-controller` carries the built-in
//!   rights: read/write of every federated kind (namespaces, configmaps,
//!   secrets, services, serviceaccounts, limitranges, resourcequotas,
//!   deployments, replicasets, statefulsets, daemonsets, jobs, cronjobs,
//!   horizontalpodautoscalers, ingresses, networkpolicies,
//!   poddisruptionbudgets, roles, rolebindings, clusterroles,
//!   clusterrolebindings), read and update (finalizers) of
//!   customresourcedefinitions, read of `clusters` (group `federation`) and
//!   write of `clusters/status`, events, and leases for leader election;
//! - custom resources of a federated CRD: they can be of any group and are
//!   propagated as soon as their CRD is labelled, so the role grants
//!   read/write of every resource of every group (`*`/`*`), as Karmada's and
//!   KubeFed's controller managers run with cluster-admin; a
//!   ClusterRole labelled for aggregation can still add more;
//! - the Role `ubernetes:federation-controller` in `federation-system`
//!   (bound by a RoleBinding of the same name) reads the Secrets holding
//!   member credentials. Secrets are federated too, so the ClusterRole
//!   already covers them; the Role keeps that right explicit should secrets
//!   ever leave the federated set.
//!
//! # The federation's own kinds in `view` and `edit`
//!
//! As a CRD's author labels ClusterRoles to aggregate into kube's
//! user-facing roles (and as Karmada's `karmada-view` / `karmada-edit` do),
//! two bootstrap ClusterRoles add the federation's kinds:
//! - [`AGGREGATE_FEDERATION_TO_VIEW`] (labelled [`AGGREGATE_TO_VIEW`]): read
//!   (`get`, `list`, `watch`) of `clusters` and `clusters/status` (a Cluster
//!   holds no credentials: they stay in its Secret, which `view` never
//!   reads), `propagationrecords` and their `status` (group `federation`),
//!   `dnsendpoints` (`externaldns.k8s.io`), and `serviceexports`,
//!   `serviceimports`, `clusterprofiles` with their `status`
//!   (`multicluster.x-k8s.io`). Clusters are cluster-scoped: as in kube, a
//!   RoleBinding to `view` does not reach them, a ClusterRoleBinding does.
//! - [`AGGREGATE_FEDERATION_TO_EDIT`] (labelled [`AGGREGATE_TO_EDIT`]): the
//!   write verbs on `serviceexports` only, the one federation kind a tenant
//!   writes (exporting their Service). Clusters (joining names a credentials
//!   Secret) stay cluster-admin's; propagation records, DNSEndpoints,
//!   ServiceImports and ClusterProfiles are written by the federation's
//!   controllers, and a tenant's write would only be overwritten or, for
//!   DNSEndpoints, bypass the oldest-claim rule. `admin` gets both through
//!   `edit` (it aggregates `edit`), so it needs no role of its own.
//! - `clusters/proxy` is in neither (nor in `admin`): see
//!   `docs/security.md`, rule 4 (through the proxy a caller acts in a member
//!   under their federation name, so whoever may mint a federation identity
//!   named like a powerful member one must not hold the proxy by default).

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::{
    AggregationRule, ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef,
    Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use crate::authorizer::RBAC_GROUP;
use crate::rules::{rule, url_rule};
use crate::user::{
    ALL_AUTHENTICATED, ALL_SERVICE_ACCOUNTS_GROUP, ALL_UNAUTHENTICATED, SYSTEM_PRIVILEGED_GROUP,
};

/// Read and write verbs (`bootstrappolicy.ReadWrite`).
pub const READ_WRITE: [&str; 8] = [
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];
/// Write verbs without reads (`bootstrappolicy.Write`), as the aggregate-to-edit role lists them.
pub const WRITE: [&str; 5] = ["create", "delete", "deletecollection", "patch", "update"];
/// Read verbs (`bootstrappolicy.Read`).
pub const READ: [&str; 3] = ["get", "list", "watch"];

/// The label every bootstrap object carries.
pub const BOOTSTRAPPING_LABEL: (&str, &str) = ("kubernetes.io/bootstrapping", "rbac-defaults");
/// The annotation that lets the server reconcile bootstrap objects at start.
pub const AUTOUPDATE_ANNOTATION: (&str, &str) =
    ("rbac.authorization.kubernetes.io/autoupdate", "true");
/// Label that aggregates a ClusterRole into `admin`.
pub const AGGREGATE_TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
/// Label that aggregates a ClusterRole into `edit`.
pub const AGGREGATE_TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
/// Label that aggregates a ClusterRole into `view`.
pub const AGGREGATE_TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

/// The user the embedded federation controllers act as.
pub const FEDERATION_CONTROLLER_USER: &str = "system:ubernetes:federation-controller";
/// The federation controller's ClusterRole, ClusterRoleBinding, Role and RoleBinding name.
pub const FEDERATION_CONTROLLER_ROLE: &str = "ubernetes:federation-controller";
/// Label that aggregates a ClusterRole into the federation controller's role.
pub const AGGREGATE_TO_FEDERATION_CONTROLLER: &str =
    "ubernetes.io/aggregate-to-federation-controller";
/// The ClusterRole adding read of the federation's own kinds to `view`.
pub const AGGREGATE_FEDERATION_TO_VIEW: &str = "ubernetes:aggregate-to-view";
/// The ClusterRole adding write of the tenant-written federation kinds to `edit`.
pub const AGGREGATE_FEDERATION_TO_EDIT: &str = "ubernetes:aggregate-to-edit";
/// The Multi-cluster Services and Cluster Inventory API group.
pub const MULTICLUSTER_GROUP: &str = "multicluster.x-k8s.io";
/// The DNSEndpoint API group (external-dns's).
pub const EXTERNALDNS_GROUP: &str = "externaldns.k8s.io";
/// The namespace holding member credentials.
pub use ubernetes_api::FEDERATION_NAMESPACE;
/// The Cluster API group.
pub const FEDERATION_GROUP: &str = "federation";

fn meta(name: &str, namespace: Option<&str>, labels: &[(&str, &str)]) -> ObjectMeta {
    let mut all: BTreeMap<String, String> = BTreeMap::new();
    all.insert(BOOTSTRAPPING_LABEL.0.into(), BOOTSTRAPPING_LABEL.1.into());
    for (k, v) in labels {
        all.insert(k.to_string(), v.to_string());
    }
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: namespace.map(String::from),
        labels: Some(all),
        annotations: Some(
            [(
                AUTOUPDATE_ANNOTATION.0.to_string(),
                AUTOUPDATE_ANNOTATION.1.to_string(),
            )]
            .into(),
        ),
        ..ObjectMeta::default()
    }
}

fn cluster_role(name: &str, labels: &[(&str, &str)], rules: Vec<PolicyRule>) -> ClusterRole {
    ClusterRole {
        metadata: meta(name, None, labels),
        rules: Some(rules),
        aggregation_rule: None,
    }
}

fn aggregated_role(name: &str, labels: &[(&str, &str)], selector_label: &str) -> ClusterRole {
    ClusterRole {
        metadata: meta(name, None, labels),
        rules: None,
        aggregation_rule: Some(AggregationRule {
            cluster_role_selectors: Some(vec![LabelSelector {
                match_labels: Some([(selector_label.to_string(), "true".to_string())].into()),
                ..LabelSelector::default()
            }]),
        }),
    }
}

/// The bootstrap ClusterRoles (aggregated ones with no rules yet: run
/// [`crate::aggregate_cluster_roles`] to fill them in).
pub fn bootstrap_cluster_roles() -> Vec<ClusterRole> {
    let t = "true";
    vec![
        aggregated_role("admin", &[], AGGREGATE_TO_ADMIN),
        cluster_role(
            "cluster-admin",
            &[],
            vec![rule(&["*"], &["*"], &["*"]), url_rule(&["*"], &["*"])],
        ),
        aggregated_role("edit", &[(AGGREGATE_TO_ADMIN, t)], AGGREGATE_TO_EDIT),
        cluster_role(
            "system:aggregate-to-admin",
            &[(AGGREGATE_TO_ADMIN, t)],
            vec![
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews"],
                ),
                rule(
                    &READ_WRITE_SORTED,
                    &[RBAC_GROUP],
                    &["rolebindings", "roles"],
                ),
            ],
        ),
        cluster_role(
            "system:aggregate-to-edit",
            &[(AGGREGATE_TO_EDIT, t)],
            vec![
                rule(
                    &READ,
                    &[""],
                    &[
                        "pods/attach",
                        "pods/exec",
                        "pods/portforward",
                        "pods/proxy",
                        "secrets",
                        "services/proxy",
                    ],
                ),
                rule(&["impersonate"], &[""], &["serviceaccounts"]),
                rule(
                    &WRITE,
                    &[""],
                    &[
                        "pods",
                        "pods/attach",
                        "pods/exec",
                        "pods/portforward",
                        "pods/proxy",
                    ],
                ),
                rule(&["create"], &[""], &["pods/eviction"]),
                rule(
                    &WRITE,
                    &[""],
                    &[
                        "configmaps",
                        "events",
                        "persistentvolumeclaims",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "secrets",
                        "serviceaccounts",
                        "services",
                        "services/proxy",
                    ],
                ),
                rule(&["create"], &[""], &["serviceaccounts/token"]),
                rule(
                    &WRITE,
                    &["apps"],
                    &[
                        "daemonsets",
                        "deployments",
                        "deployments/rollback",
                        "deployments/scale",
                        "replicasets",
                        "replicasets/scale",
                        "statefulsets",
                        "statefulsets/scale",
                    ],
                ),
                rule(&WRITE, &["autoscaling"], &["horizontalpodautoscalers"]),
                rule(&WRITE, &["batch"], &["cronjobs", "jobs"]),
                rule(
                    &WRITE,
                    &["extensions"],
                    &[
                        "daemonsets",
                        "deployments",
                        "deployments/rollback",
                        "deployments/scale",
                        "ingresses",
                        "networkpolicies",
                        "replicasets",
                        "replicasets/scale",
                        "replicationcontrollers/scale",
                    ],
                ),
                rule(&WRITE, &["policy"], &["poddisruptionbudgets"]),
                rule(
                    &WRITE,
                    &["networking.k8s.io"],
                    &["ingresses", "networkpolicies"],
                ),
                rule(&READ_WRITE_SORTED, &["coordination.k8s.io"], &["leases"]),
            ],
        ),
        cluster_role(
            "system:aggregate-to-view",
            &[(AGGREGATE_TO_VIEW, t)],
            vec![
                rule(
                    &READ,
                    &[""],
                    &[
                        "configmaps",
                        "endpoints",
                        "persistentvolumeclaims",
                        "persistentvolumeclaims/status",
                        "pods",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/status",
                    ],
                ),
                rule(
                    &READ,
                    &[""],
                    &[
                        "bindings",
                        "events",
                        "limitranges",
                        "namespaces/status",
                        "pods/log",
                        "pods/status",
                        "replicationcontrollers/status",
                        "resourcequotas",
                        "resourcequotas/status",
                    ],
                ),
                rule(&READ, &[""], &["namespaces"]),
                rule(&READ, &["discovery.k8s.io"], &["endpointslices"]),
                rule(
                    &READ,
                    &["apps"],
                    &[
                        "controllerrevisions",
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "statefulsets",
                        "statefulsets/scale",
                        "statefulsets/status",
                    ],
                ),
                rule(
                    &READ,
                    &["autoscaling"],
                    &[
                        "horizontalpodautoscalers",
                        "horizontalpodautoscalers/status",
                    ],
                ),
                rule(
                    &READ,
                    &["batch"],
                    &["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
                ),
                rule(
                    &READ,
                    &["extensions"],
                    &[
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "ingresses",
                        "ingresses/status",
                        "networkpolicies",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "replicationcontrollers/scale",
                    ],
                ),
                rule(
                    &READ,
                    &["policy"],
                    &["poddisruptionbudgets", "poddisruptionbudgets/status"],
                ),
                rule(
                    &READ,
                    &["networking.k8s.io"],
                    &["ingresses", "ingresses/status", "networkpolicies"],
                ),
            ],
        ),
        cluster_role(
            "system:auth-delegator",
            &[],
            vec![
                rule(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                ),
            ],
        ),
        cluster_role(
            "system:basic-user",
            &[],
            vec![
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                rule(
                    &["create"],
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                ),
            ],
        ),
        cluster_role(
            "system:discovery",
            &[],
            vec![url_rule(
                &["get"],
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
            )],
        ),
        cluster_role(
            "system:kube-aggregator",
            &[],
            vec![rule(&READ, &[""], &["endpoints", "services"])],
        ),
        cluster_role(
            "system:monitoring",
            &[],
            vec![url_rule(
                &["get"],
                &[
                    "/healthz",
                    "/healthz/*",
                    "/livez",
                    "/livez/*",
                    "/metrics",
                    "/metrics/slis",
                    "/readyz",
                    "/readyz/*",
                ],
            )],
        ),
        cluster_role(
            "system:public-info-viewer",
            &[],
            vec![url_rule(
                &["get"],
                &["/healthz", "/livez", "/readyz", "/version", "/version/"],
            )],
        ),
        cluster_role(
            "system:service-account-issuer-discovery",
            &[],
            vec![url_rule(
                &["get"],
                &["/.well-known/openid-configuration", "/openid/v1/jwks"],
            )],
        ),
        aggregated_role("view", &[(AGGREGATE_TO_EDIT, t)], AGGREGATE_TO_VIEW),
        aggregated_role(
            FEDERATION_CONTROLLER_ROLE,
            &[],
            AGGREGATE_TO_FEDERATION_CONTROLLER,
        ),
        cluster_role(
            "ubernetes:aggregate-to-federation-controller",
            &[(AGGREGATE_TO_FEDERATION_CONTROLLER, t)],
            federation_controller_rules(),
        ),
        cluster_role(
            AGGREGATE_FEDERATION_TO_VIEW,
            &[(AGGREGATE_TO_VIEW, t)],
            vec![
                rule(
                    &READ,
                    &[FEDERATION_GROUP],
                    &[
                        "clusters",
                        "clusters/status",
                        "propagationrecords",
                        "propagationrecords/status",
                    ],
                ),
                rule(&READ, &[EXTERNALDNS_GROUP], &["dnsendpoints"]),
                rule(
                    &READ,
                    &[MULTICLUSTER_GROUP],
                    &[
                        "clusterprofiles",
                        "clusterprofiles/status",
                        "serviceexports",
                        "serviceexports/status",
                        "serviceimports",
                        "serviceimports/status",
                    ],
                ),
            ],
        ),
        cluster_role(
            AGGREGATE_FEDERATION_TO_EDIT,
            &[(AGGREGATE_TO_EDIT, t)],
            vec![rule(&WRITE, &[MULTICLUSTER_GROUP], &["serviceexports"])],
        ),
    ]
}

/// Read/write verbs in the sorted order kube prints them.
const READ_WRITE_SORTED: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

fn federation_controller_rules() -> Vec<PolicyRule> {
    vec![
        rule(
            &READ_WRITE,
            &[""],
            &[
                "namespaces",
                "configmaps",
                "secrets",
                "services",
                "serviceaccounts",
                "limitranges",
                "resourcequotas",
            ],
        ),
        rule(
            &READ_WRITE,
            &["apps"],
            &["deployments", "replicasets", "statefulsets", "daemonsets"],
        ),
        rule(&READ_WRITE, &["batch"], &["jobs", "cronjobs"]),
        rule(&READ_WRITE, &["autoscaling"], &["horizontalpodautoscalers"]),
        rule(
            &READ_WRITE,
            &["networking.k8s.io"],
            &["ingresses", "networkpolicies"],
        ),
        rule(&READ_WRITE, &["policy"], &["poddisruptionbudgets"]),
        rule(
            &READ_WRITE,
            &[RBAC_GROUP],
            &[
                "roles",
                "rolebindings",
                "clusterroles",
                "clusterrolebindings",
            ],
        ),
        rule(
            &["get", "list", "watch", "update", "patch"],
            &["apiextensions.k8s.io"],
            &["customresourcedefinitions"],
        ),
        // Custom resources of federated CRDs, whatever their group.
        rule(&READ_WRITE, &["*"], &["*"]),
        rule(&READ, &[FEDERATION_GROUP], &["clusters"]),
        rule(
            &["get", "update", "patch"],
            &[FEDERATION_GROUP],
            &["clusters/status"],
        ),
        rule(
            &["create", "update", "patch"],
            &["", "events.k8s.io"],
            &["events"],
        ),
        rule(&READ_WRITE, &["coordination.k8s.io"], &["leases"]),
    ]
}

fn subject(kind: &str, name: &str) -> Subject {
    Subject {
        api_group: Some(RBAC_GROUP.to_string()),
        kind: kind.to_string(),
        name: name.to_string(),
        namespace: None,
    }
}

fn cluster_binding(role: &str, subjects: Vec<Subject>) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: meta(role, None, &[]),
        role_ref: RoleRef {
            api_group: Some(RBAC_GROUP.to_string()),
            kind: "ClusterRole".to_string(),
            name: role.to_string(),
        },
        subjects: Some(subjects),
    }
}

/// The bootstrap ClusterRoleBindings.
pub fn bootstrap_cluster_role_bindings() -> Vec<ClusterRoleBinding> {
    vec![
        cluster_binding(
            "cluster-admin",
            vec![subject("Group", SYSTEM_PRIVILEGED_GROUP)],
        ),
        cluster_binding(
            "system:basic-user",
            vec![subject("Group", ALL_AUTHENTICATED)],
        ),
        cluster_binding(
            "system:discovery",
            vec![subject("Group", ALL_AUTHENTICATED)],
        ),
        cluster_binding(
            "system:monitoring",
            vec![subject("Group", "system:monitoring")],
        ),
        cluster_binding(
            "system:public-info-viewer",
            vec![
                subject("Group", ALL_AUTHENTICATED),
                subject("Group", ALL_UNAUTHENTICATED),
            ],
        ),
        cluster_binding(
            "system:service-account-issuer-discovery",
            vec![subject("Group", ALL_SERVICE_ACCOUNTS_GROUP)],
        ),
        cluster_binding(
            FEDERATION_CONTROLLER_ROLE,
            vec![subject("User", FEDERATION_CONTROLLER_USER)],
        ),
    ]
}

/// The bootstrap Roles: the federation controller's read of member
/// credentials in `federation-system`.
pub fn bootstrap_roles() -> Vec<Role> {
    vec![Role {
        metadata: meta(FEDERATION_CONTROLLER_ROLE, Some(FEDERATION_NAMESPACE), &[]),
        rules: Some(vec![rule(&READ, &[""], &["secrets"])]),
    }]
}

/// The bootstrap RoleBindings.
pub fn bootstrap_role_bindings() -> Vec<RoleBinding> {
    vec![RoleBinding {
        metadata: meta(FEDERATION_CONTROLLER_ROLE, Some(FEDERATION_NAMESPACE), &[]),
        role_ref: RoleRef {
            api_group: Some(RBAC_GROUP.to_string()),
            kind: "Role".to_string(),
            name: FEDERATION_CONTROLLER_ROLE.to_string(),
        },
        subjects: Some(vec![subject("User", FEDERATION_CONTROLLER_USER)]),
    }]
}

/// A bootstrap object as API JSON with `apiVersion` and `kind`, ready to
/// store (`ClusterRole`, `ClusterRoleBinding`, `Role`, `RoleBinding`).
pub fn to_api_json<T: serde::Serialize>(kind: &str, obj: &T) -> serde_json::Value {
    let mut v = serde_json::to_value(obj).unwrap_or(serde_json::Value::Null);
    if let Some(map) = v.as_object_mut() {
        map.insert("apiVersion".into(), format!("{RBAC_GROUP}/v1").into());
        map.insert("kind".into(), kind.into());
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find<'a>(roles: &'a [ClusterRole], name: &str) -> &'a ClusterRole {
        roles
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no {name}"))
    }

    #[test]
    fn the_user_facing_roles_are_aggregated_as_kube_labels_them() {
        let roles = bootstrap_cluster_roles();
        let labels = |n: &str| find(&roles, n).metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels("edit").get(AGGREGATE_TO_ADMIN).map(String::as_str),
            Some("true")
        );
        assert_eq!(
            labels("view").get(AGGREGATE_TO_EDIT).map(String::as_str),
            Some("true")
        );
        assert!(find(&roles, "admin").aggregation_rule.is_some());
        assert!(find(&roles, "view").rules.is_none());
        for r in &roles {
            assert_eq!(
                r.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("kubernetes.io/bootstrapping"))
                    .map(String::as_str),
                Some("rbac-defaults")
            );
        }
    }

    /// Whether `role` (after aggregation) allows `verb` on `resource` of `group`.
    fn allows(role: &ClusterRole, verb: &str, group: &str, resource: &str) -> bool {
        role.rules.as_deref().unwrap_or(&[]).iter().any(|r| {
            let has = |l: &Option<Vec<String>>, v: &str| {
                l.as_deref()
                    .unwrap_or(&[])
                    .iter()
                    .any(|x| x == v || x == "*")
            };
            has(&Some(r.verbs.clone()), verb)
                && has(&r.api_groups, group)
                && has(&r.resources, resource)
        })
    }

    #[test]
    fn view_edit_and_admin_get_the_federation_kinds_by_aggregation() {
        let mut roles = bootstrap_cluster_roles();
        crate::aggregate_cluster_roles(&mut roles);
        let read = [
            (FEDERATION_GROUP, "clusters"),
            (FEDERATION_GROUP, "clusters/status"),
            (FEDERATION_GROUP, "propagationrecords"),
            (EXTERNALDNS_GROUP, "dnsendpoints"),
            (MULTICLUSTER_GROUP, "serviceexports"),
            (MULTICLUSTER_GROUP, "serviceimports"),
            (MULTICLUSTER_GROUP, "clusterprofiles"),
        ];
        for name in ["view", "edit", "admin"] {
            let role = find(&roles, name);
            for (group, resource) in read {
                for verb in READ {
                    assert!(
                        allows(role, verb, group, resource),
                        "{name} may not {verb} {resource}.{group}"
                    );
                }
            }
            // Never the cluster proxy, never a Cluster write.
            for verb in ["get", "create", "update", "delete"] {
                assert!(!allows(role, verb, FEDERATION_GROUP, "clusters/proxy"));
            }
            for verb in WRITE {
                assert!(!allows(role, verb, FEDERATION_GROUP, "clusters"));
                assert!(!allows(role, verb, FEDERATION_GROUP, "propagationrecords"));
                assert!(!allows(role, verb, EXTERNALDNS_GROUP, "dnsendpoints"));
                assert!(!allows(role, verb, MULTICLUSTER_GROUP, "serviceimports"));
            }
        }
        let view = find(&roles, "view");
        // view still reads no Secret and writes nothing.
        for verb in READ_WRITE {
            assert!(
                !allows(view, verb, "", "secrets"),
                "view may {verb} secrets"
            );
        }
        for verb in WRITE {
            assert!(!allows(view, verb, MULTICLUSTER_GROUP, "serviceexports"));
            assert!(allows(
                find(&roles, "edit"),
                verb,
                MULTICLUSTER_GROUP,
                "serviceexports"
            ));
            assert!(allows(
                find(&roles, "admin"),
                verb,
                MULTICLUSTER_GROUP,
                "serviceexports"
            ));
        }
    }

    #[test]
    fn every_binding_refers_to_a_bootstrap_role() {
        let roles = bootstrap_cluster_roles();
        for b in bootstrap_cluster_role_bindings() {
            find(&roles, &b.role_ref.name);
        }
    }

    #[test]
    fn api_json_carries_kind_and_omits_empty_fields() {
        let v = to_api_json(
            "ClusterRole",
            find(&bootstrap_cluster_roles(), "system:discovery"),
        );
        assert_eq!(v["kind"], "ClusterRole");
        assert_eq!(v["apiVersion"], "rbac.authorization.k8s.io/v1");
        assert_eq!(v["rules"][0]["verbs"], serde_json::json!(["get"]));
        assert!(v["rules"][0].get("apiGroups").is_none());
    }
}
