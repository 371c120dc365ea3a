//! The built-in kinds as clients see them: discovery facts, kube-apiserver's
//! defaulted forms, validation causes and decoder errors.
#![allow(clippy::unwrap_used)] // a failing test may panic

use std::sync::Arc;

use serde_json::{Value, json};
use ubernetes_registry::Strategy;
use ubernetes_registry::kinds::builtin;

fn strategy(group: &str, version: &str, resource: &str) -> Arc<dyn Strategy> {
    builtin()
        .into_iter()
        .find(|s| {
            let i = s.info();
            i.group == group && i.version == version && i.resource == resource
        })
        .unwrap_or_else(|| panic!("no strategy for {group}/{version} {resource}"))
}

fn messages(causes: &[ubernetes_apimachinery::Cause]) -> Vec<String> {
    causes
        .iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect()
}

#[test]
fn every_spec_resource_is_served_once() {
    let all = builtin();
    let mut keys: Vec<String> = all
        .iter()
        .map(|s| {
            format!(
                "{}/{}/{}",
                s.info().group,
                s.info().version,
                s.info().resource
            )
        })
        .collect();
    let n = keys.len();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), n, "duplicate resources");
    for want in [
        "/v1/namespaces",
        "/v1/configmaps",
        "/v1/secrets",
        "/v1/services",
        "/v1/endpoints",
        "/v1/serviceaccounts",
        "/v1/events",
        "/v1/limitranges",
        "/v1/resourcequotas",
        "/v1/persistentvolumeclaims",
        "/v1/persistentvolumes",
        "/v1/podtemplates",
        "/v1/replicationcontrollers",
        "/v1/pods",
        "/v1/nodes",
        "apps/v1/deployments",
        "apps/v1/replicasets",
        "apps/v1/statefulsets",
        "apps/v1/daemonsets",
        "apps/v1/controllerrevisions",
        "batch/v1/jobs",
        "batch/v1/cronjobs",
        "autoscaling/v2/horizontalpodautoscalers",
        "autoscaling/v1/horizontalpodautoscalers",
        "networking.k8s.io/v1/ingresses",
        "networking.k8s.io/v1/ingressclasses",
        "networking.k8s.io/v1/networkpolicies",
        "policy/v1/poddisruptionbudgets",
        "rbac.authorization.k8s.io/v1/roles",
        "rbac.authorization.k8s.io/v1/rolebindings",
        "rbac.authorization.k8s.io/v1/clusterroles",
        "rbac.authorization.k8s.io/v1/clusterrolebindings",
        "coordination.k8s.io/v1/leases",
        "events.k8s.io/v1/events",
        "discovery.k8s.io/v1/endpointslices",
        "federation/v1beta1/clusters",
        "apiregistration.k8s.io/v1/apiservices",
        "federation/v1beta1/propagationrecords",
        "resource.k8s.io/v1/deviceclasses",
        "resource.k8s.io/v1/resourceclaims",
        "resource.k8s.io/v1/resourceclaimtemplates",
        "resource.k8s.io/v1/resourceslices",
        "flowcontrol.apiserver.k8s.io/v1/flowschemas",
        "flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
        "networking.k8s.io/v1/ipaddresses",
        "networking.k8s.io/v1/servicecidrs",
        "multicluster.x-k8s.io/v1alpha1/serviceexports",
        "multicluster.x-k8s.io/v1alpha1/serviceimports",
        "multicluster.x-k8s.io/v1alpha1/clusterprofiles",
    ] {
        assert!(keys.contains(&want.to_string()), "missing {want}");
    }
    assert_eq!(n, 64);
    let v2 = all
        .iter()
        .position(|s| s.info().group == "autoscaling" && s.info().version == "v2");
    let v1 = all
        .iter()
        .position(|s| s.info().group == "autoscaling" && s.info().version == "v1");
    assert!(v2 < v1, "autoscaling/v2 is preferred and comes first");
}

#[test]
fn discovery_facts_match_kube_apiserver() {
    let deploy = strategy("apps", "v1", "deployments");
    let i = deploy.info();
    assert_eq!(i.singular, "deployment");
    assert_eq!(i.short_names, vec!["deploy"]);
    assert_eq!(i.categories, vec!["all"]);
    assert!(i.namespaced);
    assert_eq!(i.definition, "io.k8s.api.apps.v1.Deployment");
    let scale = i.subresources.iter().find(|s| s.name == "scale").unwrap();
    assert_eq!(
        (
            scale.group.as_str(),
            scale.version.as_str(),
            scale.kind.as_str()
        ),
        ("autoscaling", "v1", "Scale")
    );
    assert_eq!(scale.verbs, vec!["get", "patch", "update"]);

    let ns = strategy("", "v1", "namespaces");
    let i = ns.info();
    assert!(!i.namespaced);
    assert_eq!(i.short_names, vec!["ns"]);
    assert!(!i.verbs.contains(&"deletecollection".to_string()));
    let fin = i
        .subresources
        .iter()
        .find(|s| s.name == "finalize")
        .unwrap();
    assert_eq!(fin.verbs, vec!["update"]);

    for (g, v, r, short, all) in [
        ("", "v1", "configmaps", vec!["cm"], false),
        ("", "v1", "services", vec!["svc"], true),
        ("", "v1", "pods", vec!["po"], true),
        ("", "v1", "serviceaccounts", vec!["sa"], false),
        ("", "v1", "resourcequotas", vec!["quota"], false),
        ("", "v1", "limitranges", vec!["limits"], false),
        ("", "v1", "endpoints", vec!["ep"], false),
        ("", "v1", "replicationcontrollers", vec!["rc"], true),
        ("", "v1", "secrets", vec![], false),
        ("batch", "v1", "jobs", vec![], true),
        ("batch", "v1", "cronjobs", vec!["cj"], true),
        ("networking.k8s.io", "v1", "ingresses", vec!["ing"], false),
        (
            "networking.k8s.io",
            "v1",
            "networkpolicies",
            vec!["netpol"],
            false,
        ),
        ("policy", "v1", "poddisruptionbudgets", vec!["pdb"], false),
        (
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            vec!["hpa"],
            true,
        ),
        ("events.k8s.io", "v1", "events", vec!["ev"], false),
        ("federation", "v1beta1", "clusters", vec![], false),
    ] {
        let s = strategy(g, v, r);
        assert_eq!(s.info().short_names, short, "{r}");
        assert_eq!(s.info().categories.contains(&"all".to_string()), all, "{r}");
    }
    let c = strategy("federation", "v1beta1", "clusters");
    assert!(!c.info().namespaced);
    assert_eq!(
        c.info().definition,
        "io.ubernetes.federation.v1beta1.Cluster"
    );
    assert!(c.has_status_subresource());
}

#[test]
fn a_minimal_deployment_normalises_to_kube_apiservers_defaulted_form() {
    let s = strategy("apps", "v1", "deployments");
    let got = s
        .normalize(json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}
                }
            }
        }))
        .unwrap();
    let want = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "progressDeadlineSeconds": 600,
            "replicas": 1,
            "revisionHistoryLimit": 10,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
                "type": "RollingUpdate"
            },
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [{
                        "image": "nginx",
                        "imagePullPolicy": "Always",
                        "name": "nginx",
                        "resources": {},
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File"
                    }],
                    "dnsPolicy": "ClusterFirst",
                    "restartPolicy": "Always",
                    "schedulerName": "default-scheduler",
                    "securityContext": {},
                    "terminationGracePeriodSeconds": 30
                }
            }
        }
    });
    assert_eq!(got, want);
    assert!(s.tracks_generation());
    assert!(
        s.validate_create(&got).is_empty(),
        "{:?}",
        s.validate_create(&got)
    );
}

#[test]
fn a_service_gets_cluster_ip_type_tcp_and_target_port() {
    let s = strategy("", "v1", "services");
    let mut got = s
        .normalize(json!({
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}
        }))
        .unwrap();
    s.prepare_for_create(&mut got);
    assert_eq!(
        got["spec"],
        json!({
            "internalTrafficPolicy": "Cluster",
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
            "selector": {"app": "web"},
            "sessionAffinity": "None",
            "type": "ClusterIP"
        })
    );
    assert!(s.validate_create(&got).is_empty());
    assert!(!s.validate_name("web-1").iter().any(|_| true));
    assert!(
        !s.validate_name("1web").is_empty(),
        "service names are DNS-1035 labels"
    );
}

#[test]
fn a_pod_gets_pod_only_defaults_and_pending_status() {
    let s = strategy("", "v1", "pods");
    let mut got = s
        .normalize(json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36",
                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}
        }))
        .unwrap();
    assert_eq!(got["spec"]["enableServiceLinks"], true);
    assert_eq!(
        got["spec"]["containers"][0]["imagePullPolicy"],
        "IfNotPresent"
    );
    assert_eq!(
        got["spec"]["containers"][0]["resources"]["requests"],
        json!({"cpu": "1", "memory": "1Gi"})
    );
    s.prepare_for_create(&mut got);
    assert_eq!(
        got["status"],
        json!({"phase": "Pending", "qosClass": "Guaranteed"})
    );
    assert_eq!(got["spec"]["serviceAccountName"], "default");
    assert_eq!(got["spec"]["tolerations"].as_array().map(Vec::len), Some(2));
}

#[test]
fn a_secret_defaults_to_opaque_and_folds_string_data_into_data() {
    let s = strategy("", "v1", "secrets");
    let got = s
        .normalize(json!({"metadata": {"name": "s"}, "stringData": {"user": "admin"}}))
        .unwrap();
    assert_eq!(got["type"], "Opaque");
    assert_eq!(got["data"]["user"], "YWRtaW4=");
    assert!(got.get("stringData").is_none());
}

#[test]
fn a_namespace_is_active_with_the_kubernetes_finalizer_and_its_name_label() {
    let s = strategy("", "v1", "namespaces");
    let mut got = s
        .normalize(json!({"metadata": {"name": "team-a"}}))
        .unwrap();
    s.prepare_for_create(&mut got);
    assert_eq!(got["status"]["phase"], "Active");
    assert_eq!(got["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(
        got["metadata"]["labels"]["kubernetes.io/metadata.name"],
        "team-a"
    );
    assert!(
        !s.validate_name("a.b").is_empty(),
        "namespace names are DNS-1123 labels"
    );
    assert_eq!(s.attrs(&got).fields.get("status.phase"), Some("Active"));
}

#[test]
fn a_deployment_without_selector_reports_both_causes_as_kube_does() {
    let s = strategy("apps", "v1", "deployments");
    let obj = s
        .normalize(json!({
            "metadata": {"name": "web"},
            "spec": {"template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}
        }))
        .unwrap();
    assert_eq!(
        messages(&s.validate_create(&obj)),
        vec![
            "spec.selector: Required value",
            "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`",
        ]
    );
}

#[test]
fn containers_need_a_name_and_an_image() {
    let s = strategy("apps", "v1", "deployments");
    let obj = s
        .normalize(json!({
            "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "Web_1"}]}}}
        }))
        .unwrap();
    let m = messages(&s.validate_create(&obj));
    assert!(m.iter().any(|m| m.starts_with(
        "spec.template.spec.containers[0].name: Invalid value: \"Web_1\": a lowercase RFC 1123 label"
    )), "{m:?}");
    assert!(
        m.contains(&"spec.template.spec.containers[0].image: Required value".to_string()),
        "{m:?}"
    );
}

#[test]
fn changing_a_deployment_selector_is_refused() {
    let s = strategy("apps", "v1", "deployments");
    let mk = |app: &str| {
        s.normalize(json!({
            "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": app}},
                "template": {"metadata": {"labels": {"app": app}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
        }))
        .unwrap()
    };
    let m = messages(&s.validate_update(&mk("b"), &mk("a")));
    assert_eq!(
        m,
        vec![
            "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"b\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
        ]
    );
}

#[test]
fn configmap_keys_and_immutability_are_checked() {
    let s = strategy("", "v1", "configmaps");
    let bad = s
        .normalize(json!({"metadata": {"name": "c"}, "data": {"a b": "x"}}))
        .unwrap();
    let m = messages(&s.validate_create(&bad));
    assert!(m[0].starts_with("data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.'"), "{m:?}");
    let old = s
        .normalize(json!({"metadata": {"name": "c"}, "data": {"k": "1"}, "immutable": true}))
        .unwrap();
    let new = s
        .normalize(json!({"metadata": {"name": "c"}, "data": {"k": "2"}, "immutable": true}))
        .unwrap();
    assert_eq!(
        messages(&s.validate_update(&new, &old)),
        vec!["data: Forbidden: field is immutable when `immutable` is set"]
    );
    // The rules read the JSON: normalize's output is validated without
    // being decoded again, with the same answers.
    assert_eq!(
        messages(&s.validate_normalized(&new, Some(&old))),
        messages(&s.validate_update(&new, &old))
    );
    assert_eq!(
        messages(&s.validate_normalized(&bad, None)),
        messages(&s.validate_create(&bad))
    );
    // binaryData counts what its base64 decodes to: 1 MiB - 1 byte (1.4 MB
    // of base64) fits, 1 MiB + 5 bytes does not.
    let sized = |groups: usize| {
        s.normalize(json!({"metadata": {"name": "c"}, "binaryData": {"b": "AAAA".repeat(groups)}}))
            .unwrap()
    };
    assert!(s.validate_normalized(&sized(349_525), None).is_empty());
    assert_eq!(
        messages(&s.validate_normalized(&sized(349_527), None)),
        vec![": Too long: may not be more than 1048576 bytes"]
    );
}

#[test]
fn a_job_gets_its_generated_selector_and_needs_a_non_always_restart_policy() {
    let s = strategy("batch", "v1", "jobs");
    let mut obj = s
        .normalize(json!({
            "metadata": {"name": "pi", "uid": "u-1"},
            "spec": {"template": {"spec": {"containers": [{"name": "pi", "image": "perl"}]}}}
        }))
        .unwrap();
    assert_eq!(obj["spec"]["backoffLimit"], 6);
    assert_eq!(obj["spec"]["completions"], 1);
    assert_eq!(obj["spec"]["parallelism"], 1);
    assert_eq!(obj["spec"]["completionMode"], "NonIndexed");
    s.prepare_for_create(&mut obj);
    assert_eq!(
        obj["spec"]["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}})
    );
    assert_eq!(
        obj["spec"]["template"]["metadata"]["labels"]["job-name"],
        "pi"
    );
    assert_eq!(
        messages(&s.validate_create(&obj)),
        vec![
            "spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""
        ]
    );
}

#[test]
fn service_ports_need_names_when_there_are_several() {
    let s = strategy("", "v1", "services");
    let obj = s
        .normalize(json!({"metadata": {"name": "web"},
            "spec": {"type": "Bogus", "ports": [{"port": 80}, {"port": 70000, "name": "b"}]}}))
        .unwrap();
    let m = messages(&s.validate_create(&obj));
    assert!(m.contains(&"spec.type: Unsupported value: \"Bogus\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"".to_string()), "{m:?}");
    assert!(
        m.contains(&"spec.ports[0].name: Required value".to_string()),
        "{m:?}"
    );
    assert!(
        m.contains(
            &"spec.ports[1].port: Invalid value: 70000: must be between 1 and 65535, inclusive"
                .to_string()
        ),
        "{m:?}"
    );
}

#[test]
fn decode_errors_are_bad_requests_in_kube_wording() {
    let s = strategy("", "v1", "configmaps");
    let e = s
        .normalize(json!({"metadata": {"name": "c"}, "data": {"k": 1}}))
        .unwrap_err();
    assert_eq!(e.code, 400);
    assert_eq!(e.reason, "BadRequest");
    assert_eq!(
        e.message,
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
    );
}

#[test]
fn field_selectors_follow_kube_attrs() {
    let pods = strategy("", "v1", "pods");
    let a = pods.attrs(&json!({"metadata": {"name": "p", "namespace": "d"},
        "spec": {"nodeName": "n1"}, "status": {"podIPs": [{"ip": "10.0.0.5"}]}}));
    assert_eq!(&a.fields["spec.nodeName"], "n1");
    assert_eq!(&a.fields["spec.hostNetwork"], "false");
    assert_eq!(&a.fields["status.podIP"], "10.0.0.5");
    let events = strategy("", "v1", "events");
    let a = events.attrs(&json!({"metadata": {"name": "e"},
        "involvedObject": {"kind": "Pod", "name": "p"}, "reportingComponent": "kubelet"}));
    assert_eq!(&a.fields["involvedObject.kind"], "Pod");
    assert_eq!(&a.fields["source"], "kubelet");
    assert!(
        strategy("", "v1", "secrets")
            .selectable_fields()
            .contains(&"type")
    );
    let nodes = strategy("", "v1", "nodes");
    assert_eq!(
        &nodes.attrs(&json!({"metadata": {"name": "n"}})).fields["spec.unschedulable"],
        "false"
    );
}

#[test]
fn scale_paths_and_generation_tracking_are_per_kind() {
    let rc = strategy("", "v1", "replicationcontrollers")
        .scale()
        .unwrap();
    assert_eq!(rc.spec_replicas, "/spec/replicas");
    assert_eq!(rc.selector.as_deref(), Some("/spec/selector"));
    assert!(strategy("apps", "v1", "statefulsets").scale().is_some());
    assert!(strategy("", "v1", "services").scale().is_none());
    assert!(strategy("apps", "v1", "daemonsets").tracks_generation());
    assert!(!strategy("", "v1", "configmaps").tracks_generation());
}

#[test]
fn a_cluster_validates_its_cidrs_and_secret_ref() {
    let s = strategy("federation", "v1beta1", "clusters");
    let obj = s
        .normalize(json!({"metadata": {"name": "ny"}, "spec": {
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/99", "serverAddress": ""}],
            "secretRef": {"name": ""}}}))
        .unwrap();
    let m = messages(&s.validate_create(&obj));
    assert_eq!(
        m,
        vec![
            "spec.serverAddressByClientCIDRs[0].clientCIDR: Invalid value: \"0.0.0.0/99\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            "spec.serverAddressByClientCIDRs[0].serverAddress: Required value",
            "spec.secretRef.name: Required value",
        ]
    );
    let ok = json!({"metadata": {"name": "ny"}, "spec": {
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "https://10.1.2.3:6443"}],
        "secretRef": {"name": "ny"}}});
    let ok: Value = s.normalize(ok).unwrap();
    assert!(s.validate_create(&ok).is_empty());
    assert_eq!(ok["apiVersion"], "federation/v1beta1");

    // spec.syncMode (issue 24): Pull needs no address and names no Secret.
    let pull: Value = s
        .normalize(json!({"metadata": {"name": "edge"}, "spec": {"syncMode": "Pull"}}))
        .unwrap();
    assert!(s.validate_create(&pull).is_empty());
    let bad: Value = s
        .normalize(json!({"metadata": {"name": "edge"}, "spec": {
            "syncMode": "Sideways", "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "https://a:1"}]}}))
        .unwrap();
    assert_eq!(
        messages(&s.validate_create(&bad)),
        vec![
            "spec.syncMode: Unsupported value: \"Sideways\": supported values: \"Pull\", \"Push\""
        ]
    );
    let with_secret: Value = s
        .normalize(json!({"metadata": {"name": "edge"}, "spec": {"syncMode": "Pull", "secretRef": {"name": "edge"}}}))
        .unwrap();
    assert_eq!(messages(&s.validate_create(&with_secret)).len(), 1);
}

#[test]
fn rbac_bindings_default_api_groups_and_keep_role_ref() {
    let s = strategy("rbac.authorization.k8s.io", "v1", "rolebindings");
    let b = s
        .normalize(json!({"metadata": {"name": "b"},
            "roleRef": {"kind": "Role", "name": "r"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "sa"}]}))
        .unwrap();
    assert_eq!(b["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
    assert_eq!(b["subjects"][0]["apiGroup"], "rbac.authorization.k8s.io");
    assert!(
        s.validate_create(&b).is_empty(),
        "{:?}",
        s.validate_create(&b)
    );
    let mut changed = b.clone();
    changed["roleRef"]["name"] = json!("other");
    let m = messages(&s.validate_update(&changed, &b));
    assert!(
        m[0].starts_with("roleRef: Invalid value: rbac.RoleRef{"),
        "{m:?}"
    );
    assert!(m[0].ends_with("cannot change roleRef"));
}

#[test]
fn network_policies_default_their_policy_types() {
    let s = strategy("networking.k8s.io", "v1", "networkpolicies");
    let n = s
        .normalize(
            json!({"metadata": {"name": "n"}, "spec": {"podSelector": {},
            "egress": [{"ports": [{"port": 53}]}]}}),
        )
        .unwrap();
    assert_eq!(n["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    assert_eq!(n["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
}

#[test]
fn a_statefulset_claim_template_is_a_pending_filesystem_claim() {
    let s = strategy("apps", "v1", "statefulsets");
    let sts = s
        .normalize(json!({"metadata": {"name": "db"}, "spec": {
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "db", "image": "postgres:16"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}))
        .unwrap();
    assert_eq!(sts["spec"]["podManagementPolicy"], "OrderedReady");
    assert_eq!(
        sts["spec"]["updateStrategy"],
        json!({"rollingUpdate": {"partition": 0}, "type": "RollingUpdate"})
    );
    assert_eq!(
        sts["spec"]["volumeClaimTemplates"][0]["spec"]["volumeMode"],
        "Filesystem"
    );
    assert_eq!(
        sts["spec"]["volumeClaimTemplates"][0]["status"]["phase"],
        "Pending"
    );
    assert!(
        s.validate_create(&sts).is_empty(),
        "{:?}",
        s.validate_create(&sts)
    );
}
