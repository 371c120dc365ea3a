//! End-to-end checks of the RBAC crate as the HTTP layer will use it: parse a
//! request, authorize it against the bootstrap policy plus some bindings,
//! answer reviews, impersonate.

use http::{HeaderMap, HeaderValue};
use serde_json::{Value, json};
use ubernetes_rbac::impersonation::{ImpersonationError, impersonate};
use ubernetes_rbac::reviews::{self_subject_access_review, self_subject_rules_review};
use ubernetes_rbac::{
    Attributes, Authorizer, RequestInfo, StaticRbac, UserInfo, aggregate_cluster_roles,
    forbidden_error,
};

fn from_json<T: serde::de::DeserializeOwned + Default>(v: Value) -> T {
    match serde_json::from_value(v) {
        Ok(t) => t,
        Err(e) => panic!("bad fixture: {e}"),
    }
}

/// Bootstrap policy plus: bob bound to `view` in `team-a`.
fn policy() -> StaticRbac {
    let mut rbac = StaticRbac::bootstrap();
    rbac.role_bindings.push(from_json(json!({
        "metadata": {"name": "bob-view", "namespace": "team-a"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]
    })));
    rbac
}

fn bob() -> UserInfo {
    UserInfo::new("bob", &["system:authenticated"])
}

fn request(user: &UserInfo, method: &str, url: &str) -> Attributes {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    Attributes::from_request(user, &RequestInfo::parse_lenient(method, path, query))
}

#[test]
fn a_user_bound_to_view_in_one_namespace_reads_there_only() {
    let authz = Authorizer::new(policy());
    let bob = bob();
    let list = request(&bob, "GET", "/api/v1/namespaces/team-a/configmaps");
    let d = authz.authorize(&list);
    assert!(d.is_allowed());
    assert_eq!(
        d.reason(),
        r#"RBAC: allowed by RoleBinding "bob-view/team-a" of ClusterRole "view" to User "bob""#
    );
    assert!(
        authz
            .authorize(&request(
                &bob,
                "GET",
                "/apis/apps/v1/namespaces/team-a/deployments?watch=1"
            ))
            .is_allowed()
    );

    let elsewhere = request(&bob, "GET", "/api/v1/namespaces/default/configmaps");
    let d = authz.authorize(&elsewhere);
    assert!(!d.is_allowed());
    assert_eq!(
        forbidden_error(&elsewhere, d.reason()).message,
        r#"configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "default""#
    );
    let cluster_wide = request(&bob, "GET", "/api/v1/configmaps");
    assert!(!authz.authorize(&cluster_wide).is_allowed());
    assert_eq!(
        forbidden_error(&cluster_wide, "").message,
        r#"configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" at the cluster scope"#
    );

    for (method, url) in [
        ("POST", "/api/v1/namespaces/team-a/configmaps"),
        ("PUT", "/api/v1/namespaces/team-a/configmaps/x"),
        ("PATCH", "/api/v1/namespaces/team-a/configmaps/x"),
        ("DELETE", "/api/v1/namespaces/team-a/configmaps/x"),
        ("DELETE", "/api/v1/namespaces/team-a/configmaps"),
        ("GET", "/api/v1/namespaces/team-a/secrets"),
    ] {
        assert!(
            !authz.authorize(&request(&bob, method, url)).is_allowed(),
            "{method} {url}"
        );
    }
    let delete = request(&bob, "DELETE", "/api/v1/namespaces/team-a/configmaps/x");
    let err = forbidden_error(&delete, "");
    assert_eq!(
        err.message,
        r#"configmaps "x" is forbidden: User "bob" cannot delete resource "configmaps" in API group "" in the namespace "team-a""#
    );
    assert_eq!(
        err.status(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": err.message, "reason": "Forbidden",
            "details": {"name": "x", "kind": "configmaps"}, "code": 403})
    );
}

#[test]
fn cluster_admin_via_system_masters_can_do_anything() {
    let authz = Authorizer::new(policy());
    let root = UserInfo::new("root", &["system:masters", "system:authenticated"]);
    for (method, url) in [
        ("DELETE", "/api/v1/nodes/n1"),
        ("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles"),
        ("GET", "/metrics"),
        ("PUT", "/apis/federation/v1beta1/clusters/x/status"),
    ] {
        let attrs = request(&root, method, url);
        assert!(authz.authorize(&attrs).is_allowed(), "{method} {url}");
        // Through the bootstrap binding too, not only the privileged-group shortcut.
        let d = authz.authorize_rbac(&attrs);
        assert_eq!(
            d.reason(),
            r#"RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters""#
        );
    }
}

#[test]
fn aggregation_adds_labelled_roles_to_view_edit_and_admin() {
    let mut rbac = policy();
    rbac.cluster_roles.push(from_json(json!({
        "metadata": {"name": "widgets-view", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]}]
    })));
    let widgets = |authz: &Authorizer<StaticRbac>| {
        authz
            .authorize(&request(
                &bob(),
                "GET",
                "/apis/example.com/v1/namespaces/team-a/widgets",
            ))
            .is_allowed()
    };
    assert!(!widgets(&Authorizer::new(rbac.clone())));
    let changed = aggregate_cluster_roles(&mut rbac.cluster_roles);
    assert_eq!(changed, vec!["view", "edit", "admin"]);
    let authz = Authorizer::new(rbac.clone());
    assert!(widgets(&authz));
    for role in ["view", "edit", "admin"] {
        let r = authz.role_reference_rules(
            &from_json(json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role})),
            "",
        );
        let rules = r.unwrap_or_default();
        assert!(
            rules
                .iter()
                .any(|r| r.resources.as_deref() == Some(&["widgets".to_string()][..])),
            "{role} lacks widgets"
        );
    }
}

#[test]
fn ssar_and_ssrr_have_kube_shapes() {
    let authz = Authorizer::new(policy());
    let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "metadata": {"creationTimestamp": null},
        "spec": {"resourceAttributes": {"namespace": "default", "verb": "list", "resource": "configmaps"}}});
    let out = self_subject_access_review(&authz, &bob(), &body).unwrap_or_default();
    assert_eq!(
        out,
        json!({"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
            "metadata": {},
            "spec": {"resourceAttributes": {"namespace": "default", "verb": "list", "resource": "configmaps"}},
            "status": {"allowed": false}})
    );

    let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": "team-a"}});
    let out = self_subject_rules_review(&authz, &bob(), &body).unwrap_or_default();
    assert_eq!(out["kind"], "SelfSubjectRulesReview");
    assert_eq!(out["status"]["incomplete"], false);
    assert!(out["status"].get("evaluationError").is_none());
    let resource_rules = out["status"]["resourceRules"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    // system:basic-user first (cluster bindings come first), then view's rules.
    assert_eq!(
        resource_rules[0],
        json!({"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]})
    );
    assert!(resource_rules.iter().any(|r| {
        r["resources"]
            .as_array()
            .is_some_and(|a| a.contains(&json!("configmaps")))
    }));
    let non_resource = out["status"]["nonResourceRules"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(non_resource.contains(&json!({"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"]})));

    // Elsewhere bob has only the cluster-wide basics.
    let body = json!({"spec": {"namespace": "default"}});
    let out = self_subject_rules_review(&authz, &bob(), &body).unwrap_or_default();
    let n = out["status"]["resourceRules"].as_array().map(Vec::len);
    assert_eq!(n, Some(2));
}

#[test]
fn impersonation_is_allowed_by_a_rule_and_refused_without_one() {
    let mut rbac = policy();
    rbac.cluster_roles.push(from_json(json!({
        "metadata": {"name": "impersonate-alice"},
        "rules": [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["alice"]}]
    })));
    rbac.cluster_role_bindings.push(from_json(json!({
        "metadata": {"name": "bob-impersonates-alice"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "impersonate-alice"},
        "subjects": [{"kind": "User", "name": "bob"}]
    })));
    let authz = Authorizer::new(rbac);

    let mut h = HeaderMap::new();
    h.insert("impersonate-user", HeaderValue::from_static("alice"));
    let user = impersonate(&authz, &bob(), &h)
        .ok()
        .flatten()
        .unwrap_or_default();
    assert_eq!(user, UserInfo::new("alice", &["system:authenticated"]));

    h.insert("impersonate-user", HeaderValue::from_static("carol"));
    let Err(ImpersonationError::Forbidden(err)) = impersonate(&authz, &bob(), &h) else {
        panic!("expected a 403");
    };
    assert_eq!(
        err.message,
        r#"users "carol" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope"#
    );

    // Impersonating a group needs its own permission.
    h.insert("impersonate-user", HeaderValue::from_static("alice"));
    h.insert(
        "impersonate-group",
        HeaderValue::from_static("system:masters"),
    );
    let Err(ImpersonationError::Forbidden(err)) = impersonate(&authz, &bob(), &h) else {
        panic!("expected a 403");
    };
    assert_eq!(
        err.message,
        r#"groups "system:masters" is forbidden: User "bob" cannot impersonate resource "groups" in API group "" at the cluster scope"#
    );
}

#[test]
fn anonymous_users_see_only_public_info() {
    let authz = Authorizer::new(policy());
    let anon = UserInfo::new("system:anonymous", &["system:unauthenticated"]);
    assert!(
        authz
            .authorize(&request(&anon, "GET", "/healthz"))
            .is_allowed()
    );
    assert!(
        authz
            .authorize(&request(&anon, "GET", "/version"))
            .is_allowed()
    );
    let apis = request(&anon, "GET", "/apis");
    assert!(!authz.authorize(&apis).is_allowed());
    assert_eq!(
        forbidden_error(&apis, "").message,
        r#"forbidden: User "system:anonymous" cannot get path "/apis""#
    );
    assert!(
        authz
            .authorize(&request(&bob(), "GET", "/apis/apps/v1"))
            .is_allowed()
    );
}

#[test]
fn the_federation_controller_reads_and_writes_every_kind_custom_resources_included() {
    // Custom resources of federated CRDs can be of any group, so the role
    // grants read/write everywhere, as KubeFed's and Karmada's controller
    // managers run with cluster-admin. Only escalation-checked RBAC writes
    // and the verbs outside read/write (impersonate, escalate, bind) stay out.
    // (The e2e federation tests prove the custom-resource case end to end.)
    let authz = Authorizer::new(policy());
    let fc = UserInfo::new(
        ubernetes_rbac::bootstrap::FEDERATION_CONTROLLER_USER,
        &["system:authenticated"],
    );
    for (method, url, allowed) in [
        ("GET", "/apis/federation/v1beta1/clusters?watch=true", true),
        ("PUT", "/apis/federation/v1beta1/clusters/ny/status", true),
        ("DELETE", "/apis/federation/v1beta1/clusters/ny", true),
        ("GET", "/apis/example.com/v1/widgets?watch=true", true),
        (
            "PATCH",
            "/apis/example.com/v1/namespaces/a/widgets/w1",
            true,
        ),
        (
            "GET",
            "/api/v1/namespaces/federation-system/secrets/ny",
            true,
        ),
        (
            "PATCH",
            "/apis/apps/v1/namespaces/web/deployments/front",
            true,
        ),
        ("PUT", "/api/v1/namespaces/web/configmaps/cfg", true),
        ("DELETE", "/api/v1/nodes/n1", true),
        ("GET", "/api/v1/namespaces/web/pods", true),
    ] {
        assert_eq!(
            authz.authorize(&request(&fc, method, url)).is_allowed(),
            allowed,
            "{method} {url}"
        );
    }
}

#[test]
fn view_reads_the_federation_kinds_cluster_wide_only_through_a_cluster_role_binding() {
    let mut rbac = policy();
    rbac.cluster_role_bindings.push(from_json(json!({
        "metadata": {"name": "carol-view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "carol"}]
    })));
    let authz = Authorizer::new(rbac);
    let carol = UserInfo::new("carol", &["system:authenticated"]);
    for url in [
        "/apis/federation/v1beta1/clusters",
        "/apis/federation/v1beta1/clusters/east/status",
        "/apis/federation/v1beta1/namespaces/shop/propagationrecords",
        "/apis/externaldns.k8s.io/v1alpha1/dnsendpoints",
        "/apis/multicluster.x-k8s.io/v1alpha1/namespaces/shop/serviceexports",
        "/apis/multicluster.x-k8s.io/v1alpha1/serviceimports",
        "/apis/multicluster.x-k8s.io/v1alpha1/namespaces/federation-system/clusterprofiles",
    ] {
        let d = authz.authorize(&request(&carol, "GET", url));
        assert!(d.is_allowed(), "{url}");
        assert!(
            d.reason().contains(r#"ClusterRole "view""#),
            "{}",
            d.reason()
        );
    }
    for (method, url) in [
        (
            "GET",
            "/apis/federation/v1beta1/clusters/east/proxy/api/v1/pods",
        ),
        ("POST", "/apis/federation/v1beta1/clusters"),
        ("DELETE", "/apis/federation/v1beta1/clusters/east"),
        ("GET", "/api/v1/namespaces/federation-system/secrets/east"),
        ("GET", "/api/v1/secrets"),
        (
            "POST",
            "/apis/multicluster.x-k8s.io/v1alpha1/namespaces/shop/serviceexports",
        ),
    ] {
        assert!(
            !authz.authorize(&request(&carol, method, url)).is_allowed(),
            "{method} {url}"
        );
    }
    // bob's view is a RoleBinding in team-a: the cluster-scoped Clusters stay
    // out of reach (as in kube), the namespaced records of team-a do not.
    let bob = bob();
    let clusters = request(&bob, "GET", "/apis/federation/v1beta1/clusters");
    assert!(!authz.authorize(&clusters).is_allowed());
    assert_eq!(
        forbidden_error(&clusters, "").message,
        r#"clusters.federation is forbidden: User "bob" cannot list resource "clusters" in API group "federation" at the cluster scope"#
    );
    assert!(
        authz
            .authorize(&request(
                &bob,
                "GET",
                "/apis/federation/v1beta1/namespaces/team-a/propagationrecords"
            ))
            .is_allowed()
    );
}
