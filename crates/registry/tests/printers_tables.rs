//! Tables as kube-apiserver prints them, for hand-built ResourceInfos and
//! objects, at a fixed `now`.

// Tests fail by panicking: unwrap is the assertion.
#![allow(clippy::unwrap_used)]

use jiff::Timestamp;
use serde_json::{Value, json};
use ubernetes_apimachinery::ResourceInfo;
use ubernetes_registry::kinds::printer_for;
use ubernetes_registry::printers::{self, IncludeObject};

/// The table of the kind `i` names, with the printer its declaration
/// chose (as the API server finds it).
fn to_table_at(
    i: &ResourceInfo,
    objects: &[Value],
    wide: bool,
    include: IncludeObject,
    list_meta: Option<Value>,
    now: Timestamp,
) -> Value {
    let printer = printer_for(&i.group, &i.kind);
    printers::to_table_at(&printer, objects, wide, include, list_meta, now)
}

fn table_columns(i: &ResourceInfo) -> Vec<Value> {
    printers::table_columns(&printer_for(&i.group, &i.kind))
}

fn info(group: &str, version: &str, resource: &str, kind: &str) -> ResourceInfo {
    ResourceInfo {
        group: group.into(),
        version: version.into(),
        resource: resource.into(),
        singular: kind.to_lowercase(),
        kind: kind.into(),
        namespaced: true,
        verbs: ResourceInfo::standard_verbs(),
        short_names: vec![],
        categories: vec![],
        subresources: vec![],
        definition: String::new(),
    }
}

fn now() -> Timestamp {
    "2025-01-10T12:00:00Z".parse().unwrap()
}

fn names(table: &Value) -> Vec<&str> {
    table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect()
}

fn cells(table: &Value) -> &Value {
    &table["rows"][0]["cells"]
}

fn one(i: &ResourceInfo, obj: Value) -> Value {
    to_table_at(i, &[obj], true, IncludeObject::Metadata, None, now())
}

#[test]
fn namespace_table_has_name_status_age_and_partial_metadata() {
    let ns = json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "default", "resourceVersion": "42", "creationTimestamp": "2025-01-10T11:57:58Z"},
        "status": {"phase": "Active"}
    });
    let t = one(&info("", "v1", "namespaces", "Namespace"), ns);
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(t["metadata"], json!({"resourceVersion": "42"}));
    assert_eq!(names(&t), vec!["Name", "Status", "Age"]);
    assert_eq!(t["columnDefinitions"][0]["format"], "name");
    assert_eq!(t["columnDefinitions"][0]["priority"], 0);
    assert_eq!(*cells(&t), json!(["default", "Active", "2m2s"]));
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(t["rows"][0]["object"]["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(t["rows"][0]["object"]["metadata"]["name"], "default");
}

#[test]
fn configmap_and_secret_count_their_data() {
    let cm = json!({"metadata": {"name": "c", "creationTimestamp": "2025-01-08T09:00:00Z"}, "data": {"a": "1"}, "binaryData": {"b": "AA=="}});
    let t = one(&info("", "v1", "configmaps", "ConfigMap"), cm);
    assert_eq!(names(&t), vec!["Name", "Data", "Age"]);
    assert_eq!(*cells(&t), json!(["c", 2, "2d3h"]));

    let s = json!({"metadata": {"name": "s", "creationTimestamp": "2025-01-10T11:59:55Z"}, "type": "Opaque", "data": {"a": "MQ=="}});
    let t = one(&info("", "v1", "secrets", "Secret"), s);
    assert_eq!(names(&t), vec!["Name", "Type", "Data", "Age"]);
    assert_eq!(*cells(&t), json!(["s", "Opaque", 1, "5s"]));
}

#[test]
fn deployment_prints_ready_fraction_and_wide_columns() {
    let d = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "creationTimestamp": "2025-01-10T09:00:00Z"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1"}, {"name": "side", "image": "busybox"}]}}},
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}
    });
    let i = info("apps", "v1", "deployments", "Deployment");
    let t = one(&i, d.clone());
    assert_eq!(
        names(&t),
        vec![
            "Name",
            "Ready",
            "Up-to-date",
            "Available",
            "Age",
            "Containers",
            "Images",
            "Selector"
        ]
    );
    let prio: Vec<i64> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["priority"].as_i64().unwrap())
        .collect();
    assert_eq!(prio, vec![0, 0, 0, 0, 0, 1, 1, 1]);
    assert_eq!(
        *cells(&t),
        json!([
            "web",
            "2/3",
            3,
            2,
            "3h",
            "nginx,side",
            "nginx:1,busybox",
            "app=web"
        ])
    );
    let narrow = to_table_at(&i, &[d], false, IncludeObject::None, None, now());
    assert_eq!(
        names(&narrow),
        vec!["Name", "Ready", "Up-to-date", "Available", "Age"]
    );
    assert_eq!(narrow["rows"][0]["cells"].as_array().unwrap().len(), 5);
    assert_eq!(narrow["rows"][0]["object"], Value::Null);
}

#[test]
fn replicaset_prints_desired_current_ready() {
    let rs = json!({
        "metadata": {"name": "web-abc", "creationTimestamp": "2025-01-10T11:00:00Z"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web", "pod-template-hash": "abc"}},
                 "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}},
        "status": {"replicas": 2, "readyReplicas": 1}
    });
    let t = one(&info("apps", "v1", "replicasets", "ReplicaSet"), rs);
    assert_eq!(
        names(&t),
        vec![
            "Name",
            "Desired",
            "Current",
            "Ready",
            "Age",
            "Containers",
            "Images",
            "Selector"
        ]
    );
    assert_eq!(
        *cells(&t),
        json!([
            "web-abc",
            2,
            2,
            1,
            "60m",
            "nginx",
            "nginx",
            "app=web,pod-template-hash=abc"
        ])
    );
}

#[test]
fn service_prints_type_ips_ports_and_selector() {
    let svc = json!({
        "metadata": {"name": "kubernetes", "creationTimestamp": "2025-01-10T11:59:00Z"},
        "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
                 "ports": [{"port": 443, "protocol": "TCP", "targetPort": 6443}]}
    });
    let t = one(&info("", "v1", "services", "Service"), svc);
    assert_eq!(
        names(&t),
        vec![
            "Name",
            "Type",
            "Cluster-IP",
            "External-IP",
            "Port(s)",
            "Age",
            "Selector"
        ]
    );
    assert_eq!(
        *cells(&t),
        json!([
            "kubernetes",
            "ClusterIP",
            "10.96.0.1",
            "<none>",
            "443/TCP",
            "60s",
            "<none>"
        ])
    );

    let lb = json!({
        "metadata": {"name": "lb", "creationTimestamp": "2025-01-10T11:59:00Z"},
        "spec": {"type": "LoadBalancer", "clusterIPs": ["10.0.0.5"], "selector": {"app": "x"},
                 "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]},
        "status": {"loadBalancer": {}}
    });
    let t = one(&info("", "v1", "services", "Service"), lb);
    assert_eq!(
        *cells(&t),
        json!([
            "lb",
            "LoadBalancer",
            "10.0.0.5",
            "<pending>",
            "80:30080/TCP",
            "60s",
            "app=x"
        ])
    );
}

#[test]
fn ingress_prints_class_hosts_address_ports() {
    let ing = json!({
        "metadata": {"name": "i", "creationTimestamp": "2025-01-10T11:59:00Z"},
        "spec": {"ingressClassName": "nginx", "rules": [{"host": "a.example.com"}, {"host": "b.example.com"}], "tls": [{"hosts": ["a.example.com"]}]},
        "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.9"}, {"hostname": "lb.example.com"}]}}
    });
    let t = one(
        &info("networking.k8s.io", "v1", "ingresses", "Ingress"),
        ing,
    );
    assert_eq!(
        names(&t),
        vec!["Name", "Class", "Hosts", "Address", "Ports", "Age"]
    );
    assert_eq!(
        *cells(&t),
        json!([
            "i",
            "nginx",
            "a.example.com,b.example.com",
            "10.0.0.9,lb.example.com",
            "80, 443",
            "60s"
        ])
    );
}

#[test]
fn events_put_last_seen_first_and_wide_columns_at_the_end() {
    let ev = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "web.1", "creationTimestamp": "2025-01-10T11:50:00Z"},
        "involvedObject": {"kind": "Deployment", "name": "web", "fieldPath": ""},
        "reason": "ScalingReplicaSet", "message": "Scaled up replica set web-abc to 3 \n", "type": "Normal",
        "source": {"component": "deployment-controller"},
        "firstTimestamp": "2025-01-10T11:50:00Z", "lastTimestamp": "2025-01-10T11:55:00Z", "count": 2
    });
    let t = one(&info("", "v1", "events", "Event"), ev);
    assert_eq!(
        names(&t),
        vec![
            "Last Seen",
            "Type",
            "Reason",
            "Object",
            "Subobject",
            "Source",
            "Message",
            "First Seen",
            "Count",
            "Name"
        ]
    );
    assert_eq!(
        *cells(&t),
        json!([
            "5m",
            "Normal",
            "ScalingReplicaSet",
            "deployment/web",
            "",
            "deployment-controller",
            "Scaled up replica set web-abc to 3",
            "10m",
            2,
            "web.1"
        ])
    );
}

#[test]
fn roles_use_the_default_name_created_at_table() {
    let role = json!({"metadata": {"name": "reader", "creationTimestamp": "2025-01-10T11:00:00Z"}, "rules": []});
    let t = one(
        &info("rbac.authorization.k8s.io", "v1", "roles", "Role"),
        role,
    );
    assert_eq!(names(&t), vec!["Name", "Created At"]);
    assert_eq!(t["columnDefinitions"][1]["type"], "date");
    assert_eq!(*cells(&t), json!(["reader", "2025-01-10T11:00:00Z"]));
}

#[test]
fn role_bindings_list_subjects_in_wide_columns() {
    let rb = json!({
        "metadata": {"name": "rb", "creationTimestamp": "2025-01-10T11:00:00Z"},
        "roleRef": {"kind": "ClusterRole", "name": "view", "apiGroup": "rbac.authorization.k8s.io"},
        "subjects": [{"kind": "User", "name": "alice"}, {"kind": "Group", "name": "devs"},
                     {"kind": "ServiceAccount", "name": "sa", "namespace": "ns1"}, {"kind": "User", "name": "bob"}]
    });
    let t = one(
        &info(
            "rbac.authorization.k8s.io",
            "v1",
            "rolebindings",
            "RoleBinding",
        ),
        rb,
    );
    assert_eq!(
        names(&t),
        vec!["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"]
    );
    assert_eq!(
        *cells(&t),
        json!([
            "rb",
            "ClusterRole/view",
            "60m",
            "alice, bob",
            "devs",
            "ns1/sa"
        ])
    );
}

#[test]
fn pods_report_readiness_status_restarts_and_completion_condition() {
    let pod = json!({
        "metadata": {"name": "p", "creationTimestamp": "2025-01-10T11:00:00Z"},
        "spec": {"nodeName": "n1", "containers": [{"name": "a"}, {"name": "b"}]},
        "status": {"phase": "Running", "podIPs": [{"ip": "10.1.0.4"}],
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}},
                {"name": "b", "ready": false, "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                 "lastState": {"terminated": {"finishedAt": "2025-01-10T11:58:00Z", "exitCode": 1}}}
            ]}
    });
    let i = info("", "v1", "pods", "Pod");
    let t = one(&i, pod);
    assert_eq!(
        names(&t),
        vec![
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
            "IP",
            "Node",
            "Nominated Node",
            "Readiness Gates"
        ]
    );
    assert_eq!(
        *cells(&t),
        json!([
            "p",
            "1/2",
            "CrashLoopBackOff",
            "3 (2m ago)",
            "60m",
            "10.1.0.4",
            "n1",
            "<none>",
            "<none>"
        ])
    );
    assert!(t["rows"][0].get("conditions").is_none());

    let done = json!({
        "metadata": {"name": "q", "creationTimestamp": "2025-01-10T11:00:00Z"},
        "spec": {"containers": [{"name": "a"}]},
        "status": {"phase": "Succeeded", "containerStatuses": [
            {"name": "a", "ready": false, "restartCount": 0, "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}
    });
    let t = one(&i, done);
    assert_eq!(t["rows"][0]["cells"][2], "Completed");
    assert_eq!(t["rows"][0]["conditions"][0]["type"], "Completed");
    assert_eq!(t["rows"][0]["conditions"][0]["reason"], "Succeeded");
}

#[test]
fn jobs_and_cronjobs_print_status_and_schedule() {
    let job = json!({
        "metadata": {"name": "j", "creationTimestamp": "2025-01-10T11:00:00Z"},
        "spec": {"completions": 1, "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
                 "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
        "status": {"succeeded": 1, "startTime": "2025-01-10T11:00:00Z", "completionTime": "2025-01-10T11:00:12Z",
                   "conditions": [{"type": "Complete", "status": "True"}]}
    });
    let t = one(&info("batch", "v1", "jobs", "Job"), job);
    assert_eq!(
        names(&t),
        vec![
            "Name",
            "Status",
            "Completions",
            "Duration",
            "Age",
            "Containers",
            "Images",
            "Selector"
        ]
    );
    assert_eq!(
        *cells(&t),
        json!([
            "j",
            "Complete",
            "1/1",
            "12s",
            "60m",
            "c",
            "busybox",
            "batch.kubernetes.io/controller-uid=u"
        ])
    );

    let cj = json!({
        "metadata": {"name": "cj", "creationTimestamp": "2025-01-10T11:00:00Z"},
        "spec": {"schedule": "*/5 * * * *", "suspend": false,
                 "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}},
        "status": {}
    });
    let t = one(&info("batch", "v1", "cronjobs", "CronJob"), cj);
    assert_eq!(
        names(&t),
        vec![
            "Name",
            "Schedule",
            "Timezone",
            "Suspend",
            "Active",
            "Last Schedule",
            "Age",
            "Containers",
            "Images",
            "Selector"
        ]
    );
    assert_eq!(
        *cells(&t),
        json!([
            "cj",
            "*/5 * * * *",
            "<none>",
            "False",
            0,
            "<none>",
            "60m",
            "c",
            "busybox",
            "<none>"
        ])
    );
}

#[test]
fn statefulsets_daemonsets_and_hpas_print_like_kube() {
    let sts = json!({"metadata": {"name": "db", "creationTimestamp": "2025-01-10T11:00:00Z"},
        "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "pg", "image": "postgres"}]}}},
        "status": {"readyReplicas": 3}});
    let t = one(&info("apps", "v1", "statefulsets", "StatefulSet"), sts);
    assert_eq!(*cells(&t), json!(["db", "3/3", "60m", "pg", "postgres"]));

    let ds = json!({"metadata": {"name": "agent", "creationTimestamp": "2025-01-10T11:00:00Z"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                 "template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"}, "containers": [{"name": "a", "image": "agent:1"}]}}},
        "status": {"desiredNumberScheduled": 2, "currentNumberScheduled": 2, "numberReady": 1, "updatedNumberScheduled": 2, "numberAvailable": 1}});
    let t = one(&info("apps", "v1", "daemonsets", "DaemonSet"), ds);
    assert_eq!(
        *cells(&t),
        json!([
            "agent",
            2,
            2,
            1,
            2,
            1,
            "kubernetes.io/os=linux",
            "60m",
            "a",
            "agent:1",
            "app=agent"
        ])
    );

    let hpa = json!({"apiVersion": "autoscaling/v2", "metadata": {"name": "h", "creationTimestamp": "2025-01-10T11:00:00Z"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 1, "maxReplicas": 5,
                 "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]},
        "status": {"currentReplicas": 2, "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 41}}}]}});
    let t = one(
        &info(
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
        ),
        hpa,
    );
    assert_eq!(
        names(&t),
        vec![
            "Name",
            "Reference",
            "Targets",
            "MinPods",
            "MaxPods",
            "Replicas",
            "Age"
        ]
    );
    assert_eq!(
        *cells(&t),
        json!(["h", "Deployment/web", "cpu: 41%/80%", "1", 5, 2, "60m"])
    );
}

#[test]
fn pvs_pvcs_and_quotas_print_like_kube() {
    let pv = json!({"metadata": {"name": "pv1", "creationTimestamp": "2025-01-10T11:00:00Z"},
        "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": "Retain", "claimRef": {"namespace": "ns", "name": "data"}, "storageClassName": "fast"},
        "status": {"phase": "Bound"}});
    let t = one(&info("", "v1", "persistentvolumes", "PersistentVolume"), pv);
    assert_eq!(
        *cells(&t),
        json!([
            "pv1", "10Gi", "RWO,RWX", "Retain", "Bound", "ns/data", "fast", "<unset>", "", "60m",
            "<unset>"
        ])
    );

    let pvc = json!({"metadata": {"name": "data", "creationTimestamp": "2025-01-10T11:00:00Z"},
        "spec": {"storageClassName": "fast"}, "status": {"phase": "Pending"}});
    let t = one(
        &info("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim"),
        pvc,
    );
    assert_eq!(
        *cells(&t),
        json!([
            "data", "Pending", "", "", "", "fast", "<unset>", "60m", "<unset>"
        ])
    );

    let rq = json!({"metadata": {"name": "q", "creationTimestamp": "2025-01-10T11:00:00Z"},
        "status": {"hard": {"pods": "10", "limits.cpu": "2", "requests.cpu": "1"}, "used": {"pods": "3", "requests.cpu": "500m"}}});
    let t = one(&info("", "v1", "resourcequotas", "ResourceQuota"), rq);
    assert_eq!(
        *cells(&t),
        json!([
            "q",
            "pods: 3/10, requests.cpu: 500m/1",
            "limits.cpu: 0/2",
            "60m"
        ])
    );
}

#[test]
fn clusters_report_ready_zones_region_and_unknown_when_unprobed() {
    let i = info("federation", "v1beta1", "clusters", "Cluster");
    let c = json!({"metadata": {"name": "new-york", "creationTimestamp": "2025-01-10T11:00:00Z"},
        "spec": {"serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "https://10.1.2.3:6443"}]},
        "status": {"conditions": [{"type": "Offline", "status": "False"}, {"type": "Ready", "status": "True", "reason": "ClusterReady"}],
                   "zones": ["us-east-1a", "us-east-1b"], "region": "us-east-1"}});
    let t = one(&i, c);
    assert_eq!(
        names(&t),
        vec![
            "Name",
            "Ready",
            "Zones",
            "Region",
            "Age",
            "Sync Mode",
            "Server Address",
            "Version",
            "Objects In Sync"
        ]
    );
    assert_eq!(
        *cells(&t),
        json!([
            "new-york",
            "True",
            "us-east-1a,us-east-1b",
            "us-east-1",
            "60m",
            "Push",
            "https://10.1.2.3:6443",
            "<unknown>",
            "<unknown>"
        ])
    );

    let fresh = json!({"metadata": {"name": "boston", "creationTimestamp": "2025-01-10T11:59:59Z"}, "spec": {"syncMode": "Pull"}});
    let t = one(&i, fresh);
    assert_eq!(t["rows"][0]["cells"][1], "Unknown");
    assert_eq!(t["rows"][0]["cells"][2], "<none>");
    assert_eq!(t["rows"][0]["cells"][5], "Pull");
}

#[test]
fn propagation_records_show_per_cluster_state_drift_wave_replicas_and_addresses() {
    let i = info(
        "federation",
        "v1beta1",
        "propagationrecords",
        "PropagationRecord",
    );
    let ingresses = r#"{"items":[{"cluster":"east","items":[{"ip":"192.0.2.1"},{"ip":"192.0.2.2"}]},{"cluster":"west","items":[{"hostname":"lb.west.example"}]}]}"#;
    let r = json!({"metadata": {"name": "web.services", "namespace": "shop",
            "creationTimestamp": "2025-01-10T11:00:00Z",
            "annotations": {"federation.kubernetes.io/service-ingresses": ingresses}},
        "spec": {"resource": {"apiVersion": "v1", "kind": "Service", "resource": "services",
            "namespace": "shop", "name": "web", "uid": "u"}},
        "status": {"rollout": {"wave": 1, "waves": 2},
            "clusters": [
            {"name": "east", "state": "InSync", "observedGeneration": 1, "replicas": 5},
            {"name": "west", "state": "Pending", "observedGeneration": 1, "replicas": 5,
                "drift": [{"path": "/spec/type", "ours": "\"ClusterIP\"", "theirs": "\"NodePort\""}]}]}});
    let t = one(&i, r);
    assert_eq!(
        names(&t),
        vec![
            "Name",
            "Object",
            "In Sync",
            "Drift",
            "Wave",
            "Age",
            "Clusters",
            "Replicas",
            "Addresses"
        ]
    );
    assert_eq!(
        *cells(&t),
        json!([
            "web.services",
            "Service/web",
            "1/2",
            "west=1",
            "1/2",
            "60m",
            "east=InSync,west=Pending",
            "east=5,west=5",
            "east=192.0.2.1+192.0.2.2,west=lb.west.example"
        ])
    );
    let bare = json!({"metadata": {"name": "cfg.configmaps", "creationTimestamp": "2025-01-10T11:00:00Z"},
        "spec": {"resource": {"kind": "ConfigMap", "name": "cfg"}}});
    let t = one(&i, bare);
    assert_eq!(
        *cells(&t),
        json!([
            "cfg.configmaps",
            "ConfigMap/cfg",
            "0/0",
            "-",
            "-",
            "60m",
            "<none>",
            "<none>",
            "<none>"
        ])
    );
    let halted = json!({"metadata": {"name": "web.deployments", "creationTimestamp": "2025-01-10T11:00:00Z"},
        "spec": {"resource": {"kind": "Deployment", "name": "web"}},
        "status": {"rollout": {"wave": 3, "waves": 2, "halted": {"cluster": "a"}}}});
    let t = one(&i, halted);
    assert_eq!(t["rows"][0]["cells"][4], "2/2 Halted");
}

#[test]
fn list_metadata_is_carried_and_object_mode_embeds_the_object() {
    let i = info("", "v1", "configmaps", "ConfigMap");
    let a = json!({"metadata": {"name": "a", "creationTimestamp": "2025-01-10T11:00:00Z"}});
    let b = json!({"metadata": {"name": "b", "creationTimestamp": "2025-01-10T11:00:00Z"}});
    let t = to_table_at(
        &i,
        &[a.clone(), b],
        true,
        IncludeObject::Object,
        Some(json!({"resourceVersion": "77", "continue": "tok", "remainingItemCount": 5})),
        now(),
    );
    assert_eq!(
        t["metadata"],
        json!({"resourceVersion": "77", "continue": "tok", "remainingItemCount": 5})
    );
    assert_eq!(t["rows"].as_array().unwrap().len(), 2);
    assert_eq!(t["rows"][0]["object"], a);
    let empty = to_table_at(
        &i,
        &[],
        true,
        IncludeObject::Metadata,
        Some(json!({"resourceVersion": "9"})),
        now(),
    );
    assert_eq!(empty["rows"], json!([]));
    assert_eq!(names(&empty), vec!["Name", "Data", "Age"]);
}

#[test]
fn table_columns_match_the_table_definitions() {
    let i = info("apps", "v1", "deployments", "Deployment");
    let cols = table_columns(&i);
    assert_eq!(cols.len(), 8);
    assert_eq!(
        cols[5],
        json!({"name": "Containers", "type": "string", "format": "", "description": "Names of each container in the template.", "priority": 1})
    );
}

#[test]
fn missing_creation_timestamp_ages_as_unknown() {
    let t = one(
        &info("", "v1", "configmaps", "ConfigMap"),
        json!({"metadata": {"name": "x"}}),
    );
    assert_eq!(*cells(&t), json!(["x", 0, "<unknown>"]));
}
