//! kubectl 1.37 against every kind the server serves: one multi-document
//! YAML holding an object of each kind goes through `kubectl create -f`,
//! `kubectl apply -f` (twice), `kubectl get -f` (per-object GETs), a
//! multi-type list, a second create (AlreadyExists) and `kubectl delete -f`.
//! Each object is checked field by field, including kube-apiserver's defaults.

mod kubectl_support;

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;
use ubernetes_e2e::Server;

use kubectl_support::{json, lines};

/// One object of every served kind. `__NS__` is the namespace of the
/// namespaced objects (created first, by the same document); `__SFX__`
/// suffixes the cluster-scoped names so that two copies can coexist.
const MANIFEST: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: __NS__
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm1
  namespace: __NS__
data:
  a: "1"
---
apiVersion: v1
kind: Secret
metadata:
  name: sec1
  namespace: __NS__
type: Opaque
stringData:
  password: hunter2
---
apiVersion: v1
kind: Service
metadata:
  name: svc1
  namespace: __NS__
spec:
  selector:
    app: web
  ports:
  - port: 80
    targetPort: 8080
---
apiVersion: v1
kind: Endpoints
metadata:
  name: ep1
  namespace: __NS__
subsets:
- addresses:
  - ip: 10.1.2.3
  ports:
  - port: 8080
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: sa1
  namespace: __NS__
---
apiVersion: v1
kind: Event
metadata:
  name: ev1
  namespace: __NS__
involvedObject:
  kind: ConfigMap
  name: cm1
  namespace: __NS__
reason: Testing
message: hello from core event
type: Normal
---
apiVersion: v1
kind: LimitRange
metadata:
  name: lr1
  namespace: __NS__
spec:
  limits:
  - type: Container
    default:
      cpu: 500m
---
apiVersion: v1
kind: ResourceQuota
metadata:
  name: rq1
  namespace: __NS__
spec:
  hard:
    pods: "10"
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: pvc1
  namespace: __NS__
spec:
  accessModes: ["ReadWriteOnce"]
  resources:
    requests:
      storage: 1Gi
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: pv-kinds-__SFX__
spec:
  capacity:
    storage: 1Gi
  accessModes: ["ReadWriteOnce"]
  hostPath:
    path: /tmp/pv1
---
apiVersion: v1
kind: PodTemplate
metadata:
  name: pt1
  namespace: __NS__
template:
  metadata:
    labels:
      app: pt
  spec:
    containers:
    - name: c
      image: nginx:1.27
---
apiVersion: v1
kind: ReplicationController
metadata:
  name: rc1
  namespace: __NS__
spec:
  replicas: 1
  selector:
    app: rc
  template:
    metadata:
      labels:
        app: rc
    spec:
      containers:
      - name: c
        image: nginx:1.27
---
apiVersion: v1
kind: Pod
metadata:
  name: pod1
  namespace: __NS__
spec:
  containers:
  - name: c
    image: nginx:1.27
---
apiVersion: v1
kind: Node
metadata:
  name: node-kinds-__SFX__
spec:
  podCIDR: 10.244.1.0/24
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: deploy1
  namespace: __NS__
spec:
  replicas: 2
  selector:
    matchLabels:
      app: deploy1
  template:
    metadata:
      labels:
        app: deploy1
    spec:
      containers:
      - name: web
        image: nginx:1.27
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: rs1
  namespace: __NS__
spec:
  replicas: 1
  selector:
    matchLabels:
      app: rs1
  template:
    metadata:
      labels:
        app: rs1
    spec:
      containers:
      - name: web
        image: nginx:1.27
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: sts1
  namespace: __NS__
spec:
  serviceName: svc1
  replicas: 1
  selector:
    matchLabels:
      app: sts1
  template:
    metadata:
      labels:
        app: sts1
    spec:
      containers:
      - name: web
        image: nginx:1.27
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: ds1
  namespace: __NS__
spec:
  selector:
    matchLabels:
      app: ds1
  template:
    metadata:
      labels:
        app: ds1
    spec:
      containers:
      - name: agent
        image: busybox:1.36
---
apiVersion: apps/v1
kind: ControllerRevision
metadata:
  name: cr1
  namespace: __NS__
revision: 1
data:
  spec:
    template:
      metadata:
        labels:
          app: ds1
---
apiVersion: batch/v1
kind: Job
metadata:
  name: job1
  namespace: __NS__
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: busybox:1.36
        command: ["true"]
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: cj1
  namespace: __NS__
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: work
            image: busybox:1.36
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: hpa1
  namespace: __NS__
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: deploy1
  minReplicas: 1
  maxReplicas: 5
  metrics:
  - type: Resource
    resource:
      name: cpu
      target:
        type: Utilization
        averageUtilization: 80
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: ic-kinds-__SFX__
spec:
  controller: example.com/ingress-controller
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: ing1
  namespace: __NS__
spec:
  ingressClassName: ic-kinds-__SFX__
  rules:
  - host: web.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: svc1
            port:
              number: 80
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: np1
  namespace: __NS__
spec:
  podSelector:
    matchLabels:
      app: web
  policyTypes: ["Ingress"]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: pdb1
  namespace: __NS__
spec:
  minAvailable: 1
  selector:
    matchLabels:
      app: web
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: role1
  namespace: __NS__
rules:
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: rb1
  namespace: __NS__
subjects:
- kind: ServiceAccount
  name: sa1
  namespace: __NS__
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: role1
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: cr-kinds-__SFX__
rules:
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: crb-kinds-__SFX__
subjects:
- kind: User
  name: alice
  apiGroup: rbac.authorization.k8s.io
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cr-kinds-__SFX__
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: lease1
  namespace: __NS__
spec:
  holderIdentity: me
  leaseDurationSeconds: 15
---
apiVersion: events.k8s.io/v1
kind: Event
metadata:
  name: eev1
  namespace: __NS__
eventTime: "2026-01-01T00:00:00.000000Z"
reportingController: example.com/e2e
reportingInstance: e2e-1
action: Testing
reason: Tested
type: Normal
note: hello from events.k8s.io
regarding:
  kind: ConfigMap
  name: cm1
  namespace: __NS__
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: eps1
  namespace: __NS__
  labels:
    kubernetes.io/service-name: svc1
addressType: IPv4
endpoints:
- addresses: ["10.1.2.3"]
ports:
- name: http
  port: 8080
  protocol: TCP
---
apiVersion: federation/v1beta1
kind: Cluster
metadata:
  name: member-__SFX__
spec:
  serverAddressByClientCIDRs:
  - clientCIDR: 0.0.0.0/0
    serverAddress: https://127.0.0.1:1
  secretRef:
    name: member-__SFX__-kubeconfig
"#;

/// What kubectl prints for and what the server must return of one object
/// of the manifest.
struct Kind {
    /// kubectl's `type` (resource.group, singular), as printed by create/apply.
    ty: &'static str,
    /// Object name (`__SFX__` replaced for cluster-scoped names).
    name: &'static str,
    namespaced: bool,
    api_version: &'static str,
    kind: &'static str,
    /// JSON pointer → expected JSON value (given as JSON text).
    checks: &'static [(&'static str, &'static str)],
}

const fn k(
    ty: &'static str,
    name: &'static str,
    namespaced: bool,
    api_version: &'static str,
    kind: &'static str,
    checks: &'static [(&'static str, &'static str)],
) -> Kind {
    Kind {
        ty,
        name,
        namespaced,
        api_version,
        kind,
        checks,
    }
}

/// Every object of [`MANIFEST`], in document order.
const KINDS: &[Kind] = &[
    k(
        "namespace",
        "__NS__",
        false,
        "v1",
        "Namespace",
        &[("/status/phase", r#""Active""#)],
    ),
    k(
        "configmap",
        "cm1",
        true,
        "v1",
        "ConfigMap",
        &[("/data/a", r#""1""#)],
    ),
    k(
        "secret",
        "sec1",
        true,
        "v1",
        "Secret",
        &[
            ("/type", r#""Opaque""#),
            ("/data/password", r#""aHVudGVyMg==""#),
        ],
    ),
    k(
        "service",
        "svc1",
        true,
        "v1",
        "Service",
        &[
            ("/spec/type", r#""ClusterIP""#),
            ("/spec/ports/0/protocol", r#""TCP""#),
            ("/spec/ports/0/targetPort", "8080"),
            ("/spec/selector/app", r#""web""#),
        ],
    ),
    k(
        "endpoints",
        "ep1",
        true,
        "v1",
        "Endpoints",
        &[
            ("/subsets/0/addresses/0/ip", r#""10.1.2.3""#),
            ("/subsets/0/ports/0/port", "8080"),
        ],
    ),
    k(
        "serviceaccount",
        "sa1",
        true,
        "v1",
        "ServiceAccount",
        &[("/metadata/name", r#""sa1""#)],
    ),
    k(
        "event",
        "ev1",
        true,
        "v1",
        "Event",
        &[
            ("/reason", r#""Testing""#),
            ("/message", r#""hello from core event""#),
            ("/involvedObject/name", r#""cm1""#),
        ],
    ),
    k(
        "limitrange",
        "lr1",
        true,
        "v1",
        "LimitRange",
        &[
            ("/spec/limits/0/type", r#""Container""#),
            ("/spec/limits/0/default/cpu", r#""500m""#),
        ],
    ),
    k(
        "resourcequota",
        "rq1",
        true,
        "v1",
        "ResourceQuota",
        &[("/spec/hard/pods", r#""10""#)],
    ),
    k(
        "persistentvolumeclaim",
        "pvc1",
        true,
        "v1",
        "PersistentVolumeClaim",
        &[
            ("/spec/resources/requests/storage", r#""1Gi""#),
            ("/spec/volumeMode", r#""Filesystem""#),
        ],
    ),
    k(
        "persistentvolume",
        "pv-kinds-__SFX__",
        false,
        "v1",
        "PersistentVolume",
        &[
            ("/spec/capacity/storage", r#""1Gi""#),
            ("/spec/persistentVolumeReclaimPolicy", r#""Retain""#),
        ],
    ),
    k(
        "podtemplate",
        "pt1",
        true,
        "v1",
        "PodTemplate",
        &[("/template/spec/containers/0/image", r#""nginx:1.27""#)],
    ),
    k(
        "replicationcontroller",
        "rc1",
        true,
        "v1",
        "ReplicationController",
        &[("/spec/replicas", "1"), ("/spec/selector/app", r#""rc""#)],
    ),
    k(
        "pod",
        "pod1",
        true,
        "v1",
        "Pod",
        &[
            ("/spec/containers/0/image", r#""nginx:1.27""#),
            ("/spec/restartPolicy", r#""Always""#),
            (
                "/spec/containers/0/terminationMessagePath",
                r#""/dev/termination-log""#,
            ),
        ],
    ),
    k(
        "node",
        "node-kinds-__SFX__",
        false,
        "v1",
        "Node",
        &[("/spec/podCIDR", r#""10.244.1.0/24""#)],
    ),
    k(
        "deployment.apps",
        "deploy1",
        true,
        "apps/v1",
        "Deployment",
        &[
            ("/spec/replicas", "2"),
            ("/spec/strategy/type", r#""RollingUpdate""#),
            ("/spec/revisionHistoryLimit", "10"),
            ("/spec/progressDeadlineSeconds", "600"),
            (
                "/spec/template/spec/containers/0/imagePullPolicy",
                r#""IfNotPresent""#,
            ),
        ],
    ),
    k(
        "replicaset.apps",
        "rs1",
        true,
        "apps/v1",
        "ReplicaSet",
        &[("/spec/replicas", "1")],
    ),
    k(
        "statefulset.apps",
        "sts1",
        true,
        "apps/v1",
        "StatefulSet",
        &[
            ("/spec/serviceName", r#""svc1""#),
            ("/spec/podManagementPolicy", r#""OrderedReady""#),
        ],
    ),
    k(
        "daemonset.apps",
        "ds1",
        true,
        "apps/v1",
        "DaemonSet",
        &[("/spec/updateStrategy/type", r#""RollingUpdate""#)],
    ),
    k(
        "controllerrevision.apps",
        "cr1",
        true,
        "apps/v1",
        "ControllerRevision",
        &[("/revision", "1")],
    ),
    k(
        "job.batch",
        "job1",
        true,
        "batch/v1",
        "Job",
        &[
            ("/spec/template/spec/restartPolicy", r#""Never""#),
            ("/spec/backoffLimit", "6"),
        ],
    ),
    k(
        "cronjob.batch",
        "cj1",
        true,
        "batch/v1",
        "CronJob",
        &[
            ("/spec/schedule", r#""*/5 * * * *""#),
            ("/spec/concurrencyPolicy", r#""Allow""#),
        ],
    ),
    k(
        "horizontalpodautoscaler.autoscaling",
        "hpa1",
        true,
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        &[
            ("/spec/maxReplicas", "5"),
            ("/spec/scaleTargetRef/name", r#""deploy1""#),
            ("/spec/metrics/0/resource/target/averageUtilization", "80"),
        ],
    ),
    k(
        "ingressclass.networking.k8s.io",
        "ic-kinds-__SFX__",
        false,
        "networking.k8s.io/v1",
        "IngressClass",
        &[("/spec/controller", r#""example.com/ingress-controller""#)],
    ),
    k(
        "ingress.networking.k8s.io",
        "ing1",
        true,
        "networking.k8s.io/v1",
        "Ingress",
        &[
            ("/spec/rules/0/host", r#""web.example.com""#),
            (
                "/spec/rules/0/http/paths/0/backend/service/port/number",
                "80",
            ),
        ],
    ),
    k(
        "networkpolicy.networking.k8s.io",
        "np1",
        true,
        "networking.k8s.io/v1",
        "NetworkPolicy",
        &[("/spec/policyTypes", r#"["Ingress"]"#)],
    ),
    k(
        "poddisruptionbudget.policy",
        "pdb1",
        true,
        "policy/v1",
        "PodDisruptionBudget",
        &[("/spec/minAvailable", "1")],
    ),
    k(
        "role.rbac.authorization.k8s.io",
        "role1",
        true,
        "rbac.authorization.k8s.io/v1",
        "Role",
        &[("/rules/0/verbs", r#"["get","list"]"#)],
    ),
    k(
        "rolebinding.rbac.authorization.k8s.io",
        "rb1",
        true,
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        &[
            ("/roleRef/name", r#""role1""#),
            ("/subjects/0/name", r#""sa1""#),
        ],
    ),
    k(
        "clusterrole.rbac.authorization.k8s.io",
        "cr-kinds-__SFX__",
        false,
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        &[("/rules/0/resources", r#"["deployments"]"#)],
    ),
    k(
        "clusterrolebinding.rbac.authorization.k8s.io",
        "crb-kinds-__SFX__",
        false,
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        &[("/subjects/0/name", r#""alice""#)],
    ),
    k(
        "lease.coordination.k8s.io",
        "lease1",
        true,
        "coordination.k8s.io/v1",
        "Lease",
        &[
            ("/spec/holderIdentity", r#""me""#),
            ("/spec/leaseDurationSeconds", "15"),
        ],
    ),
    k(
        "event.events.k8s.io",
        "eev1",
        true,
        "events.k8s.io/v1",
        "Event",
        &[
            ("/note", r#""hello from events.k8s.io""#),
            ("/regarding/name", r#""cm1""#),
        ],
    ),
    k(
        "endpointslice.discovery.k8s.io",
        "eps1",
        true,
        "discovery.k8s.io/v1",
        "EndpointSlice",
        &[
            ("/addressType", r#""IPv4""#),
            ("/endpoints/0/addresses", r#"["10.1.2.3"]"#),
            ("/ports/0/port", "8080"),
        ],
    ),
    k(
        "cluster.federation",
        "member-__SFX__",
        false,
        "federation/v1beta1",
        "Cluster",
        &[
            (
                "/spec/serverAddressByClientCIDRs/0/serverAddress",
                r#""https://127.0.0.1:1""#,
            ),
            ("/spec/secretRef/name", r#""member-__SFX__-kubeconfig""#),
        ],
    ),
];

/// The manifest for namespace `ns` and cluster-scoped suffix `sfx`.
fn manifest(ns: &str, sfx: &str) -> String {
    MANIFEST.replace("__NS__", ns).replace("__SFX__", sfx)
}

fn name_of(kind: &Kind, ns: &str, sfx: &str) -> String {
    kind.name.replace("__NS__", ns).replace("__SFX__", sfx)
}

/// `type/name <verb>` lines, as kubectl create/apply print them, sorted.
fn expected_lines(ns: &str, sfx: &str, verb: &str) -> Vec<String> {
    let mut v: Vec<String> = KINDS
        .iter()
        .map(|k| format!("{}/{} {verb}", k.ty, name_of(k, ns, sfx)))
        .collect();
    v.sort();
    v
}

/// Check one returned object against its [`Kind`] entry.
fn check_object(kind: &Kind, obj: &Value, ns: &str, sfx: &str) -> Result<()> {
    let name = name_of(kind, ns, sfx);
    let what = format!("{} {name}", kind.ty);
    ensure!(
        obj["apiVersion"] == kind.api_version,
        "{what}: apiVersion {}",
        obj["apiVersion"]
    );
    ensure!(obj["kind"] == kind.kind, "{what}: kind {}", obj["kind"]);
    ensure!(
        obj["metadata"]["name"] == name.as_str(),
        "{what}: name {}",
        obj["metadata"]["name"]
    );
    if kind.namespaced {
        ensure!(
            obj["metadata"]["namespace"] == ns,
            "{what}: namespace {}",
            obj["metadata"]["namespace"]
        );
    } else {
        ensure!(
            obj["metadata"].get("namespace").is_none(),
            "{what}: cluster-scoped object has a namespace"
        );
    }
    for key in ["uid", "resourceVersion", "creationTimestamp"] {
        ensure!(
            obj["metadata"][key].is_string(),
            "{what}: metadata.{key} missing: {obj}"
        );
    }
    for (pointer, expected) in kind.checks {
        let expected: Value = serde_json::from_str(&expected.replace("__SFX__", sfx))?;
        let got = obj.pointer(pointer);
        ensure!(
            got == Some(&expected),
            "{what}: {pointer} is {got:?}, expected {expected}; object: {obj}"
        );
    }
    Ok(())
}

/// Every object in `items` must match its entry, and every entry be present.
fn check_items(items: &[Value], ns: &str, sfx: &str) -> Result<()> {
    for kind in KINDS {
        let name = name_of(kind, ns, sfx);
        let obj = items
            .iter()
            .find(|o| {
                o["kind"] == kind.kind
                    && o["apiVersion"] == kind.api_version
                    && o["metadata"]["name"] == name.as_str()
            })
            .with_context(|| format!("{} {name} missing from the returned items", kind.ty))?;
        check_object(kind, obj, ns, sfx)?;
    }
    Ok(())
}

/// The comma-separated kubectl types of the namespaced or cluster-scoped kinds.
fn types(namespaced: bool) -> String {
    KINDS
        .iter()
        .filter(|k| k.namespaced == namespaced)
        .map(|k| k.ty)
        .collect::<Vec<_>>()
        .join(",")
}

/// List every kind (one kubectl call per scope, one LIST per type) and check
/// that each object of the manifest is there with its fields.
fn check_lists(server: &Server, ns: &str, sfx: &str) -> Result<()> {
    let namespaced = json(server, &["get", &types(true), "-n", ns])?;
    let cluster = json(server, &["get", &types(false)])?;
    let mut items: Vec<Value> = namespaced["items"].as_array().cloned().unwrap_or_default();
    items.extend(cluster["items"].as_array().cloned().unwrap_or_default());
    check_items(&items, ns, sfx)
}

#[test]
fn create_get_list_and_delete_of_one_multi_document_yaml_cover_every_kind() -> Result<()> {
    let server = Server::start()?;
    let (ns, sfx) = ("kinds-create", "c");
    let doc = manifest(ns, sfx);

    let out = server.kubectl_stdin_ok(&["create", "-f", "-"], &doc)?;
    assert_eq!(
        lines(&out),
        expected_lines(ns, sfx, "created"),
        "create output:\n{out}"
    );

    // GET of each object of the file (kubectl get -f does one GET per object).
    let got = server.kubectl_stdin_ok(&["get", "-f", "-", "-o", "json"], &doc)?;
    let got: Value = serde_json::from_str(&got)?;
    let items = got["items"].as_array().context("get -f returns a List")?;
    assert_eq!(items.len(), KINDS.len(), "one item per document: {got}");
    check_items(items, ns, sfx)?;

    // LIST of every type.
    check_lists(&server, ns, sfx)?;

    // `-o name` of the file names every object.
    let names = server.kubectl_stdin_ok(&["get", "-f", "-", "-o", "name"], &doc)?;
    assert_eq!(lines(&names).len(), KINDS.len(), "{names}");

    // The `all` category is kube-apiserver's: workloads, services, HPAs.
    let all = server.kubectl_ok(&["get", "all", "-n", ns, "-o", "name"])?;
    assert_eq!(
        lines(&all),
        [
            "cronjob.batch/cj1",
            "daemonset.apps/ds1",
            "deployment.apps/deploy1",
            "horizontalpodautoscaler.autoscaling/hpa1",
            "job.batch/job1",
            "pod/pod1",
            "replicaset.apps/rs1",
            "replicationcontroller/rc1",
            "service/svc1",
            "statefulset.apps/sts1",
        ],
        "{all}"
    );

    // Creating again: every object already exists.
    let again = server.kubectl_stdin(&["create", "-f", "-"], &doc)?;
    assert!(!again.status.success(), "second create must fail");
    let stderr = String::from_utf8_lossy(&again.stderr);
    let already = stderr
        .lines()
        .filter(|l| l.contains("(AlreadyExists)") && l.contains("already exists"))
        .count();
    assert_eq!(
        already,
        KINDS.len(),
        "one AlreadyExists per object:\n{stderr}"
    );

    // Delete the cluster-scoped objects and the namespace (which takes its
    // contents with it); all of them go.
    let cluster_names: Vec<String> = KINDS
        .iter()
        .filter(|k| !k.namespaced)
        .map(|k| format!("{}/{}", k.ty, name_of(k, ns, sfx)))
        .collect();
    let mut args = vec!["delete", "--wait=true"];
    args.extend(cluster_names.iter().map(String::as_str));
    let deleted = server.kubectl_ok(&args)?;
    assert_eq!(
        deleted.lines().filter(|l| l.contains("deleted")).count(),
        cluster_names.len(),
        "{deleted}"
    );
    let left = server.kubectl_ok(&["get", &types(false), "-o", "name"])?;
    for n in &cluster_names {
        let short = n.split('/').nth(1).unwrap_or_default();
        assert!(
            !left.contains(&format!("/{short}\n")),
            "{n} still listed:\n{left}"
        );
    }
    Ok(())
}

#[test]
fn apply_of_one_multi_document_yaml_creates_then_leaves_every_kind_unchanged() -> Result<()> {
    let server = Server::start()?;
    let (ns, sfx) = ("kinds-apply", "a");
    let doc = manifest(ns, sfx);

    let out = server.kubectl_stdin_ok(&["apply", "-f", "-"], &doc)?;
    assert_eq!(
        lines(&out),
        expected_lines(ns, sfx, "created"),
        "first apply output:\n{out}"
    );
    check_lists(&server, ns, sfx)?;

    // Every object carries the last-applied annotation of client-side apply.
    let got: Value =
        serde_json::from_str(&server.kubectl_stdin_ok(&["get", "-f", "-", "-o", "json"], &doc)?)?;
    for obj in got["items"].as_array().context("items")? {
        let last =
            obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
                .as_str()
                .with_context(|| {
                    format!("no last-applied annotation on {}", obj["metadata"]["name"])
                })?;
        let last: Value = serde_json::from_str(last)?;
        assert_eq!(last["kind"], obj["kind"]);
    }

    // A second apply of the same file changes nothing. kubectl's own patch
    // computation (not the server) reports "configured" for these anyway, as
    // against kube-apiserver: a Secret's stringData never appears in the live
    // object; Endpoints subsets, EndpointSlice endpoints and LimitRange
    // limits are atomic lists that the server defaults (port protocol, an
    // endpoint's `conditions: {}`, defaultRequest); a PDB selector has
    // patchStrategy "replace", always sent. RoleBinding is checked separately.
    let always_configured = [
        "secret/sec1",
        "endpoints/ep1",
        "endpointslice.discovery.k8s.io/eps1",
        "limitrange/lr1",
        "poddisruptionbudget.policy/pdb1",
        "rolebinding.rbac.authorization.k8s.io/rb1",
    ];
    let second = server.kubectl_stdin_ok(&["apply", "-f", "-"], &doc)?;
    let second = lines(&second);
    assert_eq!(second.len(), KINDS.len(), "{second:?}");
    for line in &second {
        let (obj, verb) = line.rsplit_once(' ').context("type/name verb")?;
        if always_configured.contains(&obj) {
            assert!(verb == "configured" || verb == "unchanged", "{line}");
        } else {
            assert_eq!(
                verb, "unchanged",
                "re-applying an unchanged manifest: {second:?}"
            );
        }
    }
    // And the objects are still as the manifest says.
    check_lists(&server, ns, sfx)?;
    Ok(())
}

#[test]
fn reapplying_an_unchanged_rolebinding_reports_unchanged() -> Result<()> {
    let server = Server::start()?;
    let doc = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: rb
  namespace: default
subjects:
- kind: ServiceAccount
  name: default
  namespace: default
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: view
"#;
    server.kubectl_stdin_ok(&["apply", "-f", "-"], doc)?;
    let rb = json(&server, &["get", "rolebinding", "rb", "-n", "default"])?;
    if rb["subjects"][0].get("apiGroup").is_some() {
        bail!("subjects[0].apiGroup present: {}", rb["subjects"][0]);
    }
    let out = server.kubectl_stdin_ok(&["apply", "-f", "-"], doc)?;
    assert_eq!(
        out.trim(),
        "rolebinding.rbac.authorization.k8s.io/rb unchanged"
    );
    Ok(())
}
