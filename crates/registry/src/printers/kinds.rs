//! Per-kind columns and cells, as kube-apiserver's
//! `pkg/printers/internalversion/printers.go` prints them (always with
//! `Wide: true`, as the server-side table convertor does), plus the
//! `federation/v1beta1` Cluster and the default `Name, Created At` table
//! (`rest.NewDefaultTableConvertor`) for every other kind.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::TablePrinter;
use super::format::{
    format_label_selector, format_labels, human_duration, int_or_string, join_host_port,
    label_selector_string, parse_time, since,
};

/// One `TableColumnDefinition`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    /// `string`, `integer`, `boolean`, `date`, `number`.
    pub kind: &'static str,
    /// `name` for the object name column, else empty.
    pub format: &'static str,
    pub description: &'static str,
    /// 0, or 1 for the columns `-o wide` adds.
    pub priority: i32,
}

/// A column (priority 0), for a [`TablePrinter`]'s columns.
pub const fn col(name: &'static str, kind: &'static str, description: &'static str) -> Column {
    Column {
        name,
        kind,
        format: "",
        description,
        priority: 0,
    }
}

/// A column `-o wide` adds (priority 1).
pub const fn wide(name: &'static str, kind: &'static str, description: &'static str) -> Column {
    Column {
        name,
        kind,
        format: "",
        description,
        priority: 1,
    }
}

const NAME_DESC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const AGE_DESC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// kube's `Name` column (format `name`), first in every table.
pub const NAME: Column = Column {
    name: "Name",
    kind: "string",
    format: "name",
    description: NAME_DESC,
    priority: 0,
};
/// kube's `Age` column.
pub const AGE: Column = col("Age", "string", AGE_DESC);
const CONTAINERS: Column = wide(
    "Containers",
    "string",
    "Names of each container in the template.",
);
const IMAGES: Column = wide(
    "Images",
    "string",
    "Images referenced by each container in the template.",
);
const SELECTOR: Column = wide(
    "Selector",
    "string",
    "A label query over pods that should match the replica count. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
);

// ---- printers: columns and cells of each kind ----------------------------

/// kube's printer for Pod (columns and cells).
pub const POD: TablePrinter = TablePrinter::with_conditions(pod_columns, pod);

#[rustfmt::skip]
fn pod_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
        col("Status", "string", "The aggregate status of the containers in this pod."),
        col("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
        AGE,
        wide("IP", "string", "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated."),
        wide("Node", "string", "NodeName indicates in which node this pod is scheduled."),
        wide("Nominated Node", "string", "nominatedNodeName is set only when this pod preempts other pods on the node."),
        wide("Readiness Gates", "string", "If specified, all readiness gates will be evaluated for pod readiness."),
    ]
}

/// kube's printer for PodTemplate (columns and cells).
pub const POD_TEMPLATE: TablePrinter = TablePrinter::new(pod_template_columns, pod_template_cells);

#[rustfmt::skip]
fn pod_template_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Containers", "string", "Names of each container in the template."),
        col("Images", "string", "Images referenced by each container in the template."),
        col("Pod Labels", "string", "The labels for the pod template."),
    ]
}

fn pod_template_cells(obj: &Value, _now: Timestamp) -> Vec<Value> {
    let (n, im) = containers(obj, "/template/spec/containers");
    vec![
        name(obj),
        n,
        im,
        json!(format_labels(obj.pointer("/template/metadata/labels"))),
    ]
}

/// kube's printer for PodDisruptionBudget (columns and cells).
pub const POD_DISRUPTION_BUDGET: TablePrinter =
    TablePrinter::new(pod_disruption_budget_columns, pod_disruption_budget_cells);

#[rustfmt::skip]
fn pod_disruption_budget_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Min Available", "string", "The minimum number of pods that must be available."),
        col("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
        col("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
        AGE,
    ]
}

fn pod_disruption_budget_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let fmt = |ptr: &str| {
        at(obj, ptr)
            .map(int_or_string)
            .unwrap_or_else(|| "N/A".into())
    };
    vec![
        name(obj),
        json!(fmt("/spec/minAvailable")),
        json!(fmt("/spec/maxUnavailable")),
        json!(i(obj, "/status/disruptionsAllowed")),
        age(obj, now),
    ]
}

/// kube's printer for ReplicationController (columns and cells).
pub const REPLICATION_CONTROLLER: TablePrinter =
    TablePrinter::new(replication_controller_columns, replication_controller_cells);

fn replication_controller_columns() -> Vec<Column> {
    replica_columns("The number of ready replicas for this replication controller.")
}

fn replication_controller_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    // A ReplicationController's selector is a map of labels.
    replica_cells(obj, now, format_labels(obj.pointer("/spec/selector")))
}

/// kube's printer for ReplicaSet (columns and cells).
pub const REPLICA_SET: TablePrinter = TablePrinter::new(replica_set_columns, replica_set_cells);

fn replica_set_columns() -> Vec<Column> {
    replica_columns("The number of ready replicas for this replica set.")
}

fn replica_set_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    replica_cells(
        obj,
        now,
        format_label_selector(obj.pointer("/spec/selector")),
    )
}

/// The columns ReplicationControllers and ReplicaSets share; `ready` is
/// the Ready column's description.
#[rustfmt::skip]
fn replica_columns(ready: &'static str) -> Vec<Column> {
    vec![
        NAME,
        col("Desired", "integer", "Replicas is the number of desired replicas."),
        col("Current", "integer", "Replicas is the most recently observed number of replicas."),
        col("Ready", "integer", ready),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ]
}

fn replica_cells(obj: &Value, now: Timestamp, selector: String) -> Vec<Value> {
    let (n, im) = containers(obj, "/spec/template/spec/containers");
    vec![
        name(obj),
        json!(replicas(obj, "/spec/replicas")),
        json!(i(obj, "/status/replicas")),
        json!(i(obj, "/status/readyReplicas")),
        age(obj, now),
        n,
        im,
        json!(selector),
    ]
}

/// kube's printer for DaemonSet (columns and cells).
pub const DAEMON_SET: TablePrinter = TablePrinter::new(daemon_set_columns, daemon_set_cells);

#[rustfmt::skip]
fn daemon_set_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Desired", "integer", "The total number of nodes that should be running the daemon pod."),
        col("Current", "integer", "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod."),
        col("Ready", "integer", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready."),
        col("Up-to-date", "integer", "The total number of nodes that are running updated daemon pod"),
        col("Available", "integer", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available."),
        col("Node Selector", "string", "NodeSelector is a selector which must be true for the pod to fit on a node."),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ]
}

fn daemon_set_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let (n, im) = containers(obj, "/spec/template/spec/containers");
    vec![
        name(obj),
        json!(i(obj, "/status/desiredNumberScheduled")),
        json!(i(obj, "/status/currentNumberScheduled")),
        json!(i(obj, "/status/numberReady")),
        json!(i(obj, "/status/updatedNumberScheduled")),
        json!(i(obj, "/status/numberAvailable")),
        json!(format_labels(
            obj.pointer("/spec/template/spec/nodeSelector")
        )),
        age(obj, now),
        n,
        im,
        json!(format_label_selector(obj.pointer("/spec/selector"))),
    ]
}

/// kube's printer for Job (columns and cells).
pub const JOB: TablePrinter = TablePrinter::new(job_columns, job);

#[rustfmt::skip]
fn job_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Status", "string", "Status of the job."),
        col("Completions", "string", "The number of pods which reached phase Succeeded."),
        col("Duration", "string", "Time required to complete the job."),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ]
}

/// kube's printer for CronJob (columns and cells).
pub const CRON_JOB: TablePrinter = TablePrinter::new(cron_job_columns, cron_job_cells);

#[rustfmt::skip]
fn cron_job_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Schedule", "string", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
        col("Timezone", "string", "The time zone name for the given schedule."),
        col("Suspend", "boolean", "This flag tells the controller to suspend subsequent executions."),
        col("Active", "integer", "A list of pointers to currently running jobs."),
        col("Last Schedule", "string", "Information when was the last time the job was successfully scheduled."),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ]
}

fn cron_job_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let last = match at(obj, "/status/lastScheduleTime") {
        Some(t) => since(Some(t), now),
        None => "<none>".into(),
    };
    let tz = at(obj, "/spec/timeZone")
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    let suspend = match at(obj, "/spec/suspend").and_then(Value::as_bool) {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    };
    let (n, im) = containers(obj, "/spec/jobTemplate/spec/template/spec/containers");
    vec![
        name(obj),
        json!(s(obj, "/spec/schedule")),
        json!(tz),
        json!(suspend),
        json!(len_of(obj, "/status/active")),
        json!(last),
        age(obj, now),
        n,
        im,
        json!(format_label_selector(
            obj.pointer("/spec/jobTemplate/spec/selector")
        )),
    ]
}

/// kube's printer for Service (columns and cells).
pub const SERVICE: TablePrinter = TablePrinter::new(service_columns, service);

#[rustfmt::skip]
fn service_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Type", "string", "type determines how the Service is exposed."),
        col("Cluster-IP", "string", "clusterIP is the IP address of the service and is usually assigned randomly."),
        col("External-IP", "string", "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service."),
        col("Port(s)", "string", "The list of ports that are exposed by this service."),
        AGE,
        wide("Selector", "string", "Route service traffic to pods with label keys and values matching this selector."),
    ]
}

/// kube's printer for Ingress (columns and cells).
pub const INGRESS: TablePrinter = TablePrinter::new(ingress_columns, ingress_cells);

#[rustfmt::skip]
fn ingress_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Class", "string", "The name of the IngressClass resource that should be used for additional configuration"),
        col("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule"),
        col("Address", "string", "Address is a list containing ingress points for the load-balancer"),
        col("Ports", "string", "Ports of TLS configurations that open"),
        AGE,
    ]
}

fn ingress_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let class = at(obj, "/spec/ingressClassName")
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    let rules = arr(obj, "/spec/rules");
    let max = 3;
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    for r in rules {
        if list.len() == max {
            more = true;
        }
        let host = s(r, "/host");
        if !more && !host.is_empty() {
            list.push(host.to_string());
        }
    }
    let hosts = if list.is_empty() {
        "*".to_string()
    } else if more {
        format!("{} + {} more...", list.join(","), rules.len() - max)
    } else {
        list.join(",")
    };
    let ports = if arr(obj, "/spec/tls").is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        name(obj),
        json!(class),
        json!(hosts),
        json!(load_balancer(obj, "/status/loadBalancer/ingress")),
        json!(ports),
        age(obj, now),
    ]
}

/// kube's printer for IngressClass (columns and cells).
pub const INGRESS_CLASS: TablePrinter =
    TablePrinter::new(ingress_class_columns, ingress_class_cells);

#[rustfmt::skip]
fn ingress_class_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Controller", "string", "Controller that is responsible for handling this class"),
        col("Parameters", "string", "A reference to a resource with additional parameters"),
        AGE,
    ]
}

fn ingress_class_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let params = match at(obj, "/spec/parameters") {
        Some(p) => {
            let mut out = s(p, "/kind").to_string();
            if let Some(g) = at(p, "/apiGroup").and_then(Value::as_str) {
                out = format!("{out}.{g}");
            }
            format!("{out}/{}", s(p, "/name"))
        }
        None => "<none>".into(),
    };
    vec![
        name(obj),
        json!(s(obj, "/spec/controller")),
        json!(params),
        age(obj, now),
    ]
}

/// kube's printer for StatefulSet (columns and cells).
pub const STATEFUL_SET: TablePrinter = TablePrinter::new(stateful_set_columns, stateful_set_cells);

#[rustfmt::skip]
fn stateful_set_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Ready", "string", "Number of the pod with ready state"),
        AGE,
        CONTAINERS,
        IMAGES,
    ]
}

fn stateful_set_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let (n, im) = containers(obj, "/spec/template/spec/containers");
    vec![
        name(obj),
        json!(format!(
            "{}/{}",
            i(obj, "/status/readyReplicas"),
            replicas(obj, "/spec/replicas")
        )),
        age(obj, now),
        n,
        im,
    ]
}

/// kube's printer for Endpoints (columns and cells).
pub const ENDPOINTS: TablePrinter = TablePrinter::new(endpoints_columns, endpoints_cells);

#[rustfmt::skip]
fn endpoints_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Endpoints", "string", "The set of all endpoints is the union of all subsets."),
        AGE,
    ]
}

fn endpoints_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(obj), json!(endpoints(obj)), age(obj, now)]
}

/// kube's printer for Node (columns and cells).
pub const NODE: TablePrinter = TablePrinter::new(node_columns, node);

#[rustfmt::skip]
fn node_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Status", "string", "The status of the node"),
        col("Roles", "string", "The roles of the node"),
        AGE,
        col("Version", "string", "Kubelet Version reported by the node."),
        wide("Internal-IP", "string", "List of addresses reachable to the node."),
        wide("External-IP", "string", "List of addresses reachable to the node."),
        wide("OS-Image", "string", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))."),
        wide("Kernel-Version", "string", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."),
        wide("Container-Runtime", "string", "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2)."),
    ]
}

/// kube's printer for Event (columns and cells).
pub const EVENT: TablePrinter = TablePrinter::new(event_columns, event);

#[rustfmt::skip]
fn event_columns() -> Vec<Column> {
    vec![
        col("Last Seen", "string", "The time at which the most recent occurrence of this event was recorded."),
        col("Type", "string", "Type of this event (Normal, Warning), new types could be added in the future"),
        col("Reason", "string", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
        col("Object", "string", "The object that this event is about."),
        wide("Subobject", "string", "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement."),
        wide("Source", "string", "The component reporting this event. Should be a short machine understandable string."),
        col("Message", "string", "A human-readable description of the status of this operation."),
        wide("First Seen", "string", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"),
        wide("Count", "string", "The number of times this event has occurred."),
        Column {
            priority: 1,
            ..NAME
        },
    ]
}

/// kube's printer for Namespace (columns and cells).
pub const NAMESPACE: TablePrinter = TablePrinter::new(namespace_columns, namespace_cells);

#[rustfmt::skip]
fn namespace_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Status", "string", "The status of the namespace"),
        AGE,
    ]
}

fn namespace_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(obj), json!(s(obj, "/status/phase")), age(obj, now)]
}

/// kube's printer for Secret (columns and cells).
pub const SECRET: TablePrinter = TablePrinter::new(secret_columns, secret_cells);

#[rustfmt::skip]
fn secret_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Type", "string", "Used to facilitate programmatic handling of secret data."),
        col("Data", "string", "Data contains the secret data."),
        AGE,
    ]
}

fn secret_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(obj),
        json!(s(obj, "/type")),
        json!(len_of(obj, "/data")),
        age(obj, now),
    ]
}

/// kube's printer for ServiceAccount (columns and cells).
pub const SERVICE_ACCOUNT: TablePrinter =
    TablePrinter::new(service_account_columns, service_account_cells);

#[rustfmt::skip]
fn service_account_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Secrets", "string", "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use."),
        AGE,
    ]
}

fn service_account_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(obj), json!(len_of(obj, "/secrets")), age(obj, now)]
}

/// kube's printer for PersistentVolume (columns and cells).
pub const PERSISTENT_VOLUME: TablePrinter =
    TablePrinter::new(persistent_volume_columns, persistent_volume_cells);

#[rustfmt::skip]
fn persistent_volume_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Capacity", "string", "capacity is the description of the persistent volume's resources and capacity."),
        col("Access Modes", "string", "accessModes contains all ways the volume can be mounted."),
        col("Reclaim Policy", "string", "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim."),
        col("Status", "string", "phase indicates if a volume is available, bound to a claim, or released by a claim."),
        col("Claim", "string", "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim."),
        col("StorageClass", "string", "StorageClass of the pv"),
        col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
        col("Reason", "string", "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI."),
        AGE,
        wide("VolumeMode", "string", "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state."),
    ]
}

fn persistent_volume_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let claim = match at(obj, "/spec/claimRef") {
        Some(c) => format!("{}/{}", s(c, "/namespace"), s(c, "/name")),
        None => String::new(),
    };
    let phase = if deleting(obj) {
        "Terminating"
    } else {
        s(obj, "/status/phase")
    };
    vec![
        name(obj),
        json!(quantity_or_zero(obj.pointer("/spec/capacity/storage"))),
        json!(access_modes(obj, "/spec/accessModes")),
        json!(s(obj, "/spec/persistentVolumeReclaimPolicy")),
        json!(phase),
        json!(claim),
        json!(storage_class(obj)),
        json!(
            at(obj, "/spec/volumeAttributesClassName")
                .and_then(Value::as_str)
                .unwrap_or("<unset>")
        ),
        json!(s(obj, "/status/reason")),
        age(obj, now),
        json!(
            at(obj, "/spec/volumeMode")
                .and_then(Value::as_str)
                .unwrap_or("<unset>")
        ),
    ]
}

/// kube's printer for PersistentVolumeClaim (columns and cells).
pub const PERSISTENT_VOLUME_CLAIM: TablePrinter = TablePrinter::new(
    persistent_volume_claim_columns,
    persistent_volume_claim_cells,
);

#[rustfmt::skip]
fn persistent_volume_claim_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Status", "string", "phase represents the current phase of PersistentVolumeClaim."),
        col("Volume", "string", "volumeName is the binding reference to the PersistentVolume backing this claim."),
        col("Capacity", "string", "capacity represents the actual resources of the underlying volume."),
        col("Access Modes", "string", "accessModes contains the actual access modes the volume backing the PVC has."),
        col("StorageClass", "string", "StorageClass of the pvc"),
        col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
        AGE,
        wide("VolumeMode", "string", "volumeMode defines what type of volume is required by the claim."),
    ]
}

fn persistent_volume_claim_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let phase = if deleting(obj) {
        "Terminating"
    } else {
        s(obj, "/status/phase")
    };
    let volume = s(obj, "/spec/volumeName");
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            quantity_or_zero(obj.pointer("/status/capacity/storage")),
            access_modes(obj, "/status/accessModes"),
        )
    };
    vec![
        name(obj),
        json!(phase),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(storage_class(obj)),
        json!(
            at(obj, "/spec/volumeAttributesClassName")
                .and_then(Value::as_str)
                .unwrap_or("<unset>")
        ),
        age(obj, now),
        json!(
            at(obj, "/spec/volumeMode")
                .and_then(Value::as_str)
                .unwrap_or("<unset>")
        ),
    ]
}

/// kube's printer for Deployment (columns and cells).
pub const DEPLOYMENT: TablePrinter = TablePrinter::new(deployment_columns, deployment_cells);

#[rustfmt::skip]
fn deployment_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Ready", "string", "Number of the pod with ready state"),
        col("Up-to-date", "string", "Total number of non-terminated pods targeted by this deployment that have the desired template spec."),
        col("Available", "string", "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment."),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment."),
    ]
}

fn deployment_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let (n, im) = containers(obj, "/spec/template/spec/containers");
    let selector = label_selector_string(obj.pointer("/spec/selector"))
        .unwrap_or_else(|()| "<invalid>".into());
    vec![
        name(obj),
        json!(format!(
            "{}/{}",
            i(obj, "/status/readyReplicas"),
            replicas(obj, "/spec/replicas")
        )),
        json!(i(obj, "/status/updatedReplicas")),
        json!(i(obj, "/status/availableReplicas")),
        age(obj, now),
        n,
        im,
        json!(selector),
    ]
}

/// kube's printer for HorizontalPodAutoscaler (columns and cells).
pub const HORIZONTAL_POD_AUTOSCALER: TablePrinter = TablePrinter::new(
    horizontal_pod_autoscaler_columns,
    horizontal_pod_autoscaler_cells,
);

#[rustfmt::skip]
fn horizontal_pod_autoscaler_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Reference", "string", "reference to scaled resource; horizontal pod autoscaler will learn the current resource consumption and will set the desired number of pods by using its Scale subresource."),
        col("Targets", "string", "metrics contains the specifications for which to use to calculate the desired replica count."),
        col("MinPods", "string", "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down."),
        col("MaxPods", "string", "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up."),
        col("Replicas", "string", "currentReplicas is current number of replicas of pods managed by this autoscaler."),
        AGE,
    ]
}

fn horizontal_pod_autoscaler_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let reference = format!(
        "{}/{}",
        s(obj, "/spec/scaleTargetRef/kind"),
        s(obj, "/spec/scaleTargetRef/name")
    );
    let min = at(obj, "/spec/minReplicas")
        .and_then(Value::as_i64)
        .map(|m| m.to_string())
        .unwrap_or_else(|| "<unset>".into());
    vec![
        name(obj),
        json!(reference),
        json!(hpa_metrics(obj)),
        json!(min),
        json!(i(obj, "/spec/maxReplicas")),
        json!(i(obj, "/status/currentReplicas")),
        age(obj, now),
    ]
}

/// kube's printer for ConfigMap (columns and cells).
pub const CONFIG_MAP: TablePrinter = TablePrinter::new(config_map_columns, config_map_cells);

#[rustfmt::skip]
fn config_map_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Data", "string", "Data contains the configuration data."),
        AGE,
    ]
}

fn config_map_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(obj),
        json!(len_of(obj, "/data") + len_of(obj, "/binaryData")),
        age(obj, now),
    ]
}

/// kube's printer for NetworkPolicy (columns and cells).
pub const NETWORK_POLICY: TablePrinter =
    TablePrinter::new(network_policy_columns, network_policy_cells);

#[rustfmt::skip]
fn network_policy_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Pod-Selector", "string", "Selects the pods to which this NetworkPolicy object applies."),
        AGE,
    ]
}

fn network_policy_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(obj),
        json!(format_label_selector(obj.pointer("/spec/podSelector"))),
        age(obj, now),
    ]
}

/// kube's printer for RoleBinding (columns and cells).
pub const ROLE_BINDING: TablePrinter = TablePrinter::new(role_binding_columns, role_binding_cells);

/// kube's printer for ClusterRoleBinding: RoleBinding's cells, its own
/// column descriptions.
pub const CLUSTER_ROLE_BINDING: TablePrinter =
    TablePrinter::new(cluster_role_binding_columns, role_binding_cells);

fn role_binding_columns() -> Vec<Column> {
    binding_columns("roleBinding")
}

fn cluster_role_binding_columns() -> Vec<Column> {
    binding_columns("clusterRoleBinding")
}

#[rustfmt::skip]
fn binding_columns(kind: &'static str) -> Vec<Column> {
    // kube's descriptions name the kind: "Users in the roleBinding".
    let (u, g, s): (&'static str, &'static str, &'static str) = match kind {
        "clusterRoleBinding" => (
            "Users in the clusterRoleBinding",
            "Groups in the clusterRoleBinding",
            "ServiceAccounts in the clusterRoleBinding",
        ),
        _ => (
            "Users in the roleBinding",
            "Groups in the roleBinding",
            "ServiceAccounts in the roleBinding",
        ),
    };
    vec![
        NAME,
        col("Role", "string", "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace."),
        AGE,
        wide("Users", "string", u),
        wide("Groups", "string", g),
        wide("ServiceAccounts", "string", s),
    ]
}

fn role_binding_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let mut users = Vec::new();
    let mut groups = Vec::new();
    let mut sas = Vec::new();
    for sub in arr(obj, "/subjects") {
        match s(sub, "/kind") {
            "User" => users.push(s(sub, "/name").to_string()),
            "Group" => groups.push(s(sub, "/name").to_string()),
            "ServiceAccount" => sas.push(format!("{}/{}", s(sub, "/namespace"), s(sub, "/name"))),
            _ => {}
        }
    }
    vec![
        name(obj),
        json!(format!(
            "{}/{}",
            s(obj, "/roleRef/kind"),
            s(obj, "/roleRef/name")
        )),
        age(obj, now),
        json!(users.join(", ")),
        json!(groups.join(", ")),
        json!(sas.join(", ")),
    ]
}

/// kube's printer for Lease (columns and cells).
pub const LEASE: TablePrinter = TablePrinter::new(lease_columns, lease_cells);

#[rustfmt::skip]
fn lease_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Holder", "string", "holderIdentity contains the identity of the holder of a current lease."),
        AGE,
    ]
}

fn lease_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(obj),
        json!(s(obj, "/spec/holderIdentity")),
        age(obj, now),
    ]
}

/// kube's printer for ControllerRevision (columns and cells).
pub const CONTROLLER_REVISION: TablePrinter =
    TablePrinter::new(controller_revision_columns, controller_revision_cells);

#[rustfmt::skip]
fn controller_revision_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Controller", "string", "Controller of the object"),
        col("Revision", "string", "Revision indicates the revision of the state represented by Data."),
        AGE,
    ]
}

fn controller_revision_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let controller = arr(obj, "/metadata/ownerReferences")
        .iter()
        .find(|o| o.get("controller").and_then(Value::as_bool) == Some(true))
        .map(|o| {
            let api_version = s(o, "/apiVersion");
            let group = api_version
                .split_once('/')
                .map(|(g, _)| g)
                .unwrap_or_default();
            let kind = s(o, "/kind");
            let gk = if group.is_empty() {
                kind.to_string()
            } else {
                format!("{kind}.{group}")
            };
            if gk.is_empty() {
                s(o, "/name").to_string()
            } else {
                format!("{}/{}", gk.to_lowercase(), s(o, "/name"))
            }
        })
        .unwrap_or_else(|| "<none>".into());
    vec![
        name(obj),
        json!(controller),
        json!(i(obj, "/revision")),
        age(obj, now),
    ]
}

/// kube's printer for ResourceQuota (columns and cells).
pub const RESOURCE_QUOTA: TablePrinter =
    TablePrinter::new(resource_quota_columns, resource_quota_cells);

#[rustfmt::skip]
fn resource_quota_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
        col("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
        AGE,
    ]
}

fn resource_quota_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let hard = at(obj, "/status/hard").and_then(Value::as_object);
    let mut names: Vec<&String> = hard.map(|h| h.keys().collect()).unwrap_or_default();
    names.sort();
    let mut request = Vec::new();
    let mut limit = Vec::new();
    for r in names {
        let used = quantity_or_zero(obj.pointer("/status/used").and_then(|u| u.get(r)));
        let h = quantity_or_zero(hard.and_then(|h| h.get(r)));
        let entry = format!("{r}: {used}/{h}");
        let pieces: Vec<&str> = r.split('.').collect();
        if pieces.len() > 1 && pieces[0] == "limits" {
            limit.push(entry);
        } else {
            request.push(entry);
        }
    }
    vec![
        name(obj),
        json!(request.join(", ")),
        json!(limit.join(", ")),
        age(obj, now),
    ]
}

/// kube's printer for EndpointSlice (columns and cells).
pub const ENDPOINT_SLICE: TablePrinter =
    TablePrinter::new(endpoint_slice_columns, endpoint_slice_cells);

#[rustfmt::skip]
fn endpoint_slice_columns() -> Vec<Column> {
    vec![
        NAME,
        col("AddressType", "string", "addressType specifies the type of address carried by this EndpointSlice."),
        col("Ports", "string", "ports specifies the list of network ports exposed by each endpoint in this slice."),
        col("Endpoints", "string", "endpoints is a list of unique endpoints in this slice."),
        AGE,
    ]
}

fn endpoint_slice_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let ports = arr(obj, "/ports");
    let list: Vec<String> = ports
        .iter()
        .take(3)
        .map(|p| {
            if let Some(n) = at(p, "/port").and_then(Value::as_i64) {
                n.to_string()
            } else if let Some(n) = at(p, "/name").and_then(Value::as_str) {
                n.to_string()
            } else {
                "*".to_string()
            }
        })
        .collect();
    let ports = list_with_more(list, ports.len(), 3, "<unset>");
    let addrs: Vec<String> = arr(obj, "/endpoints")
        .iter()
        .flat_map(|e| arr(e, "/addresses").iter())
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    let count = addrs.len();
    let eps = list_with_more(addrs.into_iter().take(3).collect(), count, 3, "<unset>");
    vec![
        name(obj),
        json!(s(obj, "/addressType")),
        json!(ports),
        json!(eps),
        age(obj, now),
    ]
}

/// kube's printer for Cluster (columns and cells).
pub const CLUSTER: TablePrinter = TablePrinter::new(cluster_columns, cluster);

#[rustfmt::skip]
fn cluster_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Ready", "string", "Whether the member cluster answers its health checks (the Ready condition)."),
        col("Zones", "string", "Zones of the member cluster's nodes."),
        col("Region", "string", "Region of the member cluster's nodes."),
        AGE,
        wide("Sync Mode", "string", "Push: the federation reaches the member; Pull: the member's agent opens a tunnel to the federation (spec.syncMode)."),
        wide("Server Address", "string", "The address the federation reaches the member cluster at."),
        wide("Version", "string", "Kubernetes version the member cluster reports."),
        wide("Objects In Sync", "string", "Federated objects in sync with the member cluster, of those placed there."),
    ]
}

// Ours: where a federated object went (`kubectl get
// propagationrecords -o wide` shows per-cluster replicas and the
// per-cluster load-balancer addresses of Services and Ingresses).
/// kube's printer for PropagationRecord (columns and cells).
pub const PROPAGATION_RECORD: TablePrinter =
    TablePrinter::new(propagation_record_columns, propagation_record);

#[rustfmt::skip]
fn propagation_record_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Object", "string", "The federated object (kind/name) this record is about."),
        col("In Sync", "string", "Member clusters whose copy is in sync, of those the object is placed in."),
        col("Drift", "string", "Per member cluster, how many fields of its copy differ from the federation's and are kept there (annotation federation.kubernetes.io/drift-policy: Report); - when none."),
        col("Wave", "string", "The wave under way of a rollout wave by wave, of how many (annotation federation.kubernetes.io/rollout-strategy), Halted when it stopped; - when none."),
        AGE,
        wide("Clusters", "string", "Each member cluster's state of its copy."),
        wide("Replicas", "string", "Replicas the federation scheduled to each member cluster."),
        wide("Addresses", "string", "Each member cluster's load-balancer addresses (Services and Ingresses; annotation federation.kubernetes.io/service-ingresses)."),
    ]
}

// kube-aggregator's own table (registry/apiservice/etcd).
/// kube's printer for APIService (columns and cells).
pub const API_SERVICE: TablePrinter = TablePrinter::new(api_service_columns, api_service);

#[rustfmt::skip]
fn api_service_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Service", "string", "The reference to the service that hosts this API endpoint."),
        col("Available", "string", "Whether this service is available."),
        AGE,
    ]
}

/// kube's printers with only Name and Age (DeviceClass,
/// ResourceClaimTemplate).
pub const NAME_AGE: TablePrinter = TablePrinter::new(name_age_columns, name_age_cells);

#[rustfmt::skip]
fn name_age_columns() -> Vec<Column> {
    vec![NAME, AGE]
}

fn name_age_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(obj), age(obj, now)]
}

/// `Name, Created At`: kube's default table convertor
/// (`rest.NewDefaultTableConvertor`), for kinds kube has no printer for.
pub const DEFAULT: TablePrinter = TablePrinter::new(default_columns, default_cells);

#[rustfmt::skip]
fn default_columns() -> Vec<Column> {
    vec![NAME, col("Created At", "date", AGE_DESC)]
}

fn default_cells(obj: &Value, _now: Timestamp) -> Vec<Value> {
    let created = parse_time(obj.pointer("/metadata/creationTimestamp"))
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| "0001-01-01T00:00:00Z".into());
    vec![name(obj), json!(created)]
}

// ---- JSON accessors -------------------------------------------------------

fn at<'a>(obj: &'a Value, ptr: &str) -> Option<&'a Value> {
    obj.pointer(ptr).filter(|v| !v.is_null())
}

pub(super) fn s<'a>(obj: &'a Value, ptr: &str) -> &'a str {
    at(obj, ptr).and_then(Value::as_str).unwrap_or_default()
}

fn i(obj: &Value, ptr: &str) -> i64 {
    at(obj, ptr).and_then(Value::as_i64).unwrap_or(0)
}

fn arr<'a>(obj: &'a Value, ptr: &str) -> &'a [Value] {
    at(obj, ptr)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn len_of(obj: &Value, ptr: &str) -> i64 {
    match at(obj, ptr) {
        Some(Value::Object(m)) => m.len() as i64,
        Some(Value::Array(a)) => a.len() as i64,
        _ => 0,
    }
}

/// The `Name` cell.
pub fn name(obj: &Value) -> Value {
    json!(s(obj, "/metadata/name"))
}

/// The `Age` cell, as of `now`.
pub fn age(obj: &Value, now: Timestamp) -> Value {
    json!(since(obj.pointer("/metadata/creationTimestamp"), now))
}

fn deleting(obj: &Value) -> bool {
    at(obj, "/metadata/deletionTimestamp").is_some()
}

/// `layoutContainerCells`: names and images joined with commas.
fn containers(obj: &Value, ptr: &str) -> (Value, Value) {
    let cs = arr(obj, ptr);
    let names: Vec<&str> = cs.iter().map(|c| s(c, "/name")).collect();
    let images: Vec<&str> = cs.iter().map(|c| s(c, "/image")).collect();
    (json!(names.join(",")), json!(images.join(",")))
}

/// Replicas defaulted to 1 as kube-apiserver's defaulting does.
fn replicas(obj: &Value, ptr: &str) -> i64 {
    at(obj, ptr).and_then(Value::as_i64).unwrap_or(1)
}

fn sorted_unique(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v.dedup();
    v
}

/// `loadBalancerStatusStringer` with `wide = true`: IPs or hostnames, sorted.
fn load_balancer(obj: &Value, ptr: &str) -> String {
    let items: Vec<String> = arr(obj, ptr)
        .iter()
        .filter_map(|ing| {
            let ip = s(ing, "/ip");
            let host = s(ing, "/hostname");
            if !ip.is_empty() {
                Some(ip.to_string())
            } else if !host.is_empty() {
                Some(host.to_string())
            } else {
                None
            }
        })
        .collect();
    sorted_unique(items).join(",")
}

fn list_with_more(list: Vec<String>, count: usize, max: usize, unset: &str) -> String {
    let more = count > max;
    let ret = list.join(",");
    if more {
        return format!("{ret} + {} more...", count - max);
    }
    if ret.is_empty() {
        unset.to_string()
    } else {
        ret
    }
}

fn quantity_or_zero(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(q)) => q.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "0".into(),
    }
}

/// `helper.GetAccessModesAsString`.
fn access_modes(obj: &Value, ptr: &str) -> String {
    let modes: Vec<&str> = arr(obj, ptr).iter().filter_map(Value::as_str).collect();
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(m, _)| modes.contains(m))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// `GetPersistentVolume(Claim)Class`: the beta annotation wins.
fn storage_class(obj: &Value) -> String {
    if let Some(c) = obj
        .pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
        .and_then(Value::as_str)
    {
        return c.to_string();
    }
    s(obj, "/spec/storageClassName").to_string()
}

fn condition<'a>(obj: &'a Value, ptr: &str, ty: &str) -> Option<&'a Value> {
    arr(obj, ptr).iter().find(|c| s(c, "/type") == ty)
}

/// `hasJobCondition`: the first condition of the type decides.
fn job_condition(obj: &Value, ty: &str) -> bool {
    condition(obj, "/status/conditions", ty).is_some_and(|c| s(c, "/status") == "True")
}

// ---- cells -----------------------------------------------------------------

fn pod(obj: &Value, now: Timestamp) -> (Vec<Value>, Option<Value>) {
    let restartable = |c: &Value| s(c, "/restartPolicy") == "Always";
    let term_time = |cs: &Value| parse_time(cs.pointer("/lastState/terminated/finishedAt"));
    let init_specs = arr(obj, "/spec/initContainers");
    let mut total = arr(obj, "/spec/containers").len() as i64;
    total += init_specs.iter().filter(|c| restartable(c)).count() as i64;
    let is_restartable_init = |name: &str| {
        init_specs
            .iter()
            .any(|c| s(c, "/name") == name && restartable(c))
    };

    let phase = s(obj, "/status/phase");
    let mut reason = phase.to_string();
    let status_reason = s(obj, "/status/reason");
    if !status_reason.is_empty() {
        reason = status_reason.to_string();
    }
    for c in arr(obj, "/status/conditions") {
        if s(c, "/type") == "PodScheduled" && s(c, "/reason") == "SchedulingGated" {
            reason = "SchedulingGated".into();
        }
    }
    let conditions = match phase {
        "Succeeded" => Some(
            json!([{"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}]),
        ),
        "Failed" => Some(
            json!([{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]),
        ),
        _ => None,
    };

    let mut restarts = 0i64;
    let mut init_restarts = 0i64;
    let mut ready = 0i64;
    let mut last_restart: Option<Timestamp> = None;
    let mut last_init_restart: Option<Timestamp> = None;
    let later = |a: Option<Timestamp>, b: Option<Timestamp>| match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    };

    let init_statuses = arr(obj, "/status/initContainerStatuses");
    let n_init = init_specs.len();
    let mut initializing = false;
    for (idx, c) in init_statuses.iter().enumerate() {
        let cname = s(c, "/name");
        restarts += i(c, "/restartCount");
        last_restart = later(last_restart, term_time(c));
        if is_restartable_init(cname) {
            init_restarts += i(c, "/restartCount");
            last_init_restart = later(last_init_restart, term_time(c));
        }
        let terminated = at(c, "/state/terminated");
        let waiting_reason = s(c, "/state/waiting/reason");
        if terminated.is_some_and(|t| i(t, "/exitCode") == 0) {
            continue;
        }
        if is_restartable_init(cname) && c.get("started").and_then(Value::as_bool) == Some(true) {
            if c.get("ready").and_then(Value::as_bool) == Some(true) {
                ready += 1;
            }
            continue;
        }
        if let Some(t) = terminated {
            let r = s(t, "/reason");
            reason = if r.is_empty() {
                let signal = i(t, "/signal");
                if signal != 0 {
                    format!("Init:Signal:{signal}")
                } else {
                    format!("Init:ExitCode:{}", i(t, "/exitCode"))
                }
            } else {
                format!("Init:{r}")
            };
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            reason = format!("Init:{waiting_reason}");
        } else {
            reason = format!("Init:{idx}/{n_init}");
        }
        initializing = true;
        break;
    }

    let initialized = condition(obj, "/status/conditions", "Initialized")
        .is_some_and(|c| s(c, "/status") == "True");
    if !initializing || initialized {
        restarts = init_restarts;
        last_restart = last_init_restart;
        let mut has_running = false;
        for c in arr(obj, "/status/containerStatuses").iter().rev() {
            restarts += i(c, "/restartCount");
            last_restart = later(last_restart, term_time(c));
            let waiting_reason = s(c, "/state/waiting/reason");
            let terminated = at(c, "/state/terminated");
            if !waiting_reason.is_empty() {
                reason = waiting_reason.to_string();
            } else if let Some(t) = terminated {
                let r = s(t, "/reason");
                reason = if !r.is_empty() {
                    r.to_string()
                } else if i(t, "/signal") != 0 {
                    format!("Signal:{}", i(t, "/signal"))
                } else {
                    format!("ExitCode:{}", i(t, "/exitCode"))
                };
            } else if c.get("ready").and_then(Value::as_bool) == Some(true)
                && at(c, "/state/running").is_some()
            {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            let pod_ready = condition(obj, "/status/conditions", "Ready")
                .is_some_and(|c| s(c, "/status") == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.into();
        }
    }

    if deleting(obj) && status_reason == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting(obj) && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".into();
    }

    let restarts_str = match last_restart {
        Some(t) if restarts != 0 => {
            format!("{restarts} ({} ago)", human_duration(now.duration_since(t)))
        }
        _ => restarts.to_string(),
    };

    let none_if_empty = |v: &str| {
        if v.is_empty() {
            "<none>".to_string()
        } else {
            v.to_string()
        }
    };
    let pod_ip = arr(obj, "/status/podIPs")
        .first()
        .map(|p| s(p, "/ip"))
        .unwrap_or_default();
    let gates = arr(obj, "/spec/readinessGates");
    let readiness = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let true_count = gates
            .iter()
            .filter(|g| {
                condition(obj, "/status/conditions", s(g, "/conditionType"))
                    .is_some_and(|c| s(c, "/status") == "True")
            })
            .count();
        format!("{true_count}/{}", gates.len())
    };
    (
        vec![
            name(obj),
            json!(format!("{ready}/{total}")),
            json!(reason),
            json!(restarts_str),
            age(obj, now),
            json!(none_if_empty(pod_ip)),
            json!(none_if_empty(s(obj, "/spec/nodeName"))),
            json!(none_if_empty(s(obj, "/status/nominatedNodeName"))),
            json!(readiness),
        ],
        conditions,
    )
}

fn job(obj: &Value, now: Timestamp) -> Vec<Value> {
    let succeeded = i(obj, "/status/succeeded");
    let completions = match at(obj, "/spec/completions").and_then(Value::as_i64) {
        Some(c) => format!("{succeeded}/{c}"),
        None => {
            let parallelism = i(obj, "/spec/parallelism");
            if parallelism > 1 {
                format!("{succeeded}/1 of {parallelism}")
            } else {
                format!("{succeeded}/1")
            }
        }
    };
    let start = parse_time(obj.pointer("/status/startTime"));
    let done = parse_time(obj.pointer("/status/completionTime"));
    let duration = match (start, done) {
        (None, _) => String::new(),
        (Some(st), None) => human_duration(now.duration_since(st)),
        (Some(st), Some(c)) => human_duration(c.duration_since(st)),
    };
    let status = if job_condition(obj, "Complete") {
        "Complete"
    } else if job_condition(obj, "Failed") {
        "Failed"
    } else if deleting(obj) {
        "Terminating"
    } else if job_condition(obj, "Suspended") {
        "Suspended"
    } else if job_condition(obj, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let (n, im) = containers(obj, "/spec/template/spec/containers");
    vec![
        name(obj),
        json!(status),
        json!(completions),
        json!(duration),
        age(obj, now),
        n,
        im,
        json!(format_label_selector(obj.pointer("/spec/selector"))),
    ]
}

fn service(obj: &Value, now: Timestamp) -> Vec<Value> {
    let ty = s(obj, "/spec/type");
    let cluster_ip = arr(obj, "/spec/clusterIPs")
        .first()
        .and_then(Value::as_str)
        .or_else(|| at(obj, "/spec/clusterIP").and_then(Value::as_str))
        .filter(|ip| !ip.is_empty())
        .unwrap_or("<none>");
    let external_ips: Vec<String> = arr(obj, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    let external = match ty {
        "ClusterIP" | "NodePort" => {
            if external_ips.is_empty() {
                "<none>".to_string()
            } else {
                external_ips.join(",")
            }
        }
        "LoadBalancer" => {
            let lb = load_balancer(obj, "/status/loadBalancer/ingress");
            if !external_ips.is_empty() {
                let mut all: Vec<String> = if lb.is_empty() {
                    Vec::new()
                } else {
                    lb.split(',').map(str::to_string).collect()
                };
                all.extend(external_ips);
                all.join(",")
            } else if !lb.is_empty() {
                lb
            } else {
                "<pending>".to_string()
            }
        }
        "ExternalName" => s(obj, "/spec/externalName").to_string(),
        _ => "<unknown>".to_string(),
    };
    let ports: Vec<String> = arr(obj, "/spec/ports")
        .iter()
        .map(|p| {
            let port = i(p, "/port");
            let proto = s(p, "/protocol");
            let node_port = i(p, "/nodePort");
            if node_port > 0 {
                format!("{port}:{node_port}/{proto}")
            } else {
                format!("{port}/{proto}")
            }
        })
        .collect();
    let ports = if ports.is_empty() {
        "<none>".to_string()
    } else {
        ports.join(",")
    };
    vec![
        name(obj),
        json!(ty),
        json!(cluster_ip),
        json!(external),
        json!(ports),
        age(obj, now),
        json!(format_labels(obj.pointer("/spec/selector"))),
    ]
}

/// `formatEndpoints(endpoints, nil)`.
fn endpoints(obj: &Value) -> String {
    let subsets = arr(obj, "/subsets");
    if subsets.is_empty() {
        return "<none>".into();
    }
    let max = 3;
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    let mut count = 0usize;
    for ss in subsets {
        let addrs = arr(ss, "/addresses");
        let ports = arr(ss, "/ports");
        if ports.is_empty() {
            count += addrs.len();
            for a in addrs {
                if list.len() == max {
                    more = true;
                    break;
                }
                list.push(s(a, "/ip").to_string());
            }
            continue;
        }
        for p in ports {
            count += addrs.len();
            for a in addrs {
                if list.len() == max {
                    more = true;
                    break;
                }
                list.push(join_host_port(s(a, "/ip"), i(p, "/port")));
            }
        }
    }
    let ret = list.join(",");
    if more {
        format!("{ret} + {} more...", count - max)
    } else {
        ret
    }
}

fn node(obj: &Value, now: Timestamp) -> Vec<Value> {
    let mut status: Vec<String> = Vec::new();
    if let Some(c) = condition(obj, "/status/conditions", "Ready") {
        if s(c, "/status") == "True" {
            status.push("Ready".into());
        } else {
            status.push("NotReady".into());
        }
    }
    if status.is_empty() {
        status.push("Unknown".into());
    }
    if obj.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled".into());
    }
    let mut roles: Vec<String> = Vec::new();
    if let Some(labels) = obj.pointer("/metadata/labels").and_then(Value::as_object) {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.push(role.to_string());
                }
            } else if k == "kubernetes.io/role"
                && let Some(v) = v.as_str().filter(|v| !v.is_empty())
            {
                roles.push(v.to_string());
            }
        }
    }
    let roles = sorted_unique(roles).join(",");
    let address = |ty: &str| {
        arr(obj, "/status/addresses")
            .iter()
            .find(|a| s(a, "/type") == ty)
            .map(|a| s(a, "/address").to_string())
            .unwrap_or_else(|| "<none>".into())
    };
    let unknown = |ptr: &str| {
        let v = s(obj, ptr);
        if v.is_empty() {
            "<unknown>".to_string()
        } else {
            v.to_string()
        }
    };
    vec![
        name(obj),
        json!(status.join(",")),
        json!(if roles.is_empty() {
            "<none>".to_string()
        } else {
            roles
        }),
        age(obj, now),
        json!(s(obj, "/status/nodeInfo/kubeletVersion")),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(unknown("/status/nodeInfo/osImage")),
        json!(unknown("/status/nodeInfo/kernelVersion")),
        json!(unknown("/status/nodeInfo/containerRuntimeVersion")),
    ]
}

/// Core `v1` Event or `events.k8s.io/v1` Event (kube converts the latter to
/// the core shape before printing).
fn event(obj: &Value, now: Timestamp) -> Vec<Value> {
    let new_api = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .is_some_and(|v| v.starts_with("events.k8s.io/"));
    let (first_p, last_p, count_p, regarding, message, source) = if new_api {
        (
            "/deprecatedFirstTimestamp",
            "/deprecatedLastTimestamp",
            "/deprecatedCount",
            "/regarding",
            "/note",
            "/deprecatedSource",
        )
    } else {
        (
            "/firstTimestamp",
            "/lastTimestamp",
            "/count",
            "/involvedObject",
            "/message",
            "/source",
        )
    };
    let first = if parse_time(obj.pointer(first_p)).is_some() {
        since(obj.pointer(first_p), now)
    } else {
        since(obj.pointer("/eventTime"), now)
    };
    let mut last = if parse_time(obj.pointer(last_p)).is_some() {
        since(obj.pointer(last_p), now)
    } else {
        first.clone()
    };
    let mut count = i(obj, count_p);
    if let Some(series) = at(obj, "/series") {
        last = since(series.get("lastObservedTime"), now);
        count = i(series, "/count");
    } else if count == 0 {
        count = 1;
    }
    let kind = s(obj, &format!("{regarding}/kind")).to_lowercase();
    let obj_name = s(obj, &format!("{regarding}/name"));
    let target = if obj_name.is_empty() {
        kind
    } else {
        format!("{kind}/{obj_name}")
    };
    let component = {
        let c = s(obj, &format!("{source}/component"));
        if c.is_empty() {
            s(obj, "/reportingController")
        } else {
            c
        }
    };
    let instance = {
        let h = s(obj, &format!("{source}/host"));
        if h.is_empty() {
            s(obj, "/reportingInstance")
        } else {
            h
        }
    };
    let source = if instance.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {instance}")
    };
    vec![
        json!(last),
        json!(s(obj, "/type")),
        json!(s(obj, "/reason")),
        json!(target),
        json!(s(obj, &format!("{regarding}/fieldPath"))),
        json!(source),
        json!(s(obj, message).trim()),
        json!(first),
        json!(count),
        name(obj),
    ]
}

/// `formatHPAMetrics` over an autoscaling/v2 object; autoscaling/v1 objects
/// are converted the way kube converts them (targetCPUUtilizationPercentage →
/// a cpu Resource metric).
fn hpa_metrics(obj: &Value) -> String {
    let v1 = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .is_some_and(|v| v == "autoscaling/v1");
    let (specs, statuses): (Vec<Value>, Vec<Value>) = if v1 {
        match at(obj, "/spec/targetCPUUtilizationPercentage") {
            Some(t) => {
                let spec = json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": t}}});
                let status = match at(obj, "/status/currentCPUUtilizationPercentage") {
                    Some(c) => vec![
                        json!({"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": c}}}),
                    ],
                    None => vec![],
                };
                (vec![spec], status)
            }
            None => (vec![], vec![]),
        }
    } else {
        (
            arr(obj, "/spec/metrics").to_vec(),
            arr(obj, "/status/currentMetrics").to_vec(),
        )
    };
    if specs.is_empty() {
        return "<none>".into();
    }
    let q = |v: Option<&Value>| v.map(int_or_string).unwrap_or_default();
    let mut list: Vec<String> = Vec::new();
    for (idx, spec) in specs.iter().enumerate() {
        let st = statuses.get(idx);
        let entry = match s(spec, "/type") {
            "External" | "Object" => {
                let key = if s(spec, "/type") == "External" {
                    "external"
                } else {
                    "object"
                };
                let target = spec.pointer(&format!("/{key}/target"));
                let cur = st.and_then(|st| at(st, &format!("/{key}/current")));
                if let Some(avg) = target.and_then(|t| at(t, "/averageValue")) {
                    let current = cur
                        .and_then(|c| at(c, "/averageValue"))
                        .map(int_or_string)
                        .unwrap_or_else(|| "<unknown>".into());
                    format!("{current}/{} (avg)", int_or_string(avg))
                } else {
                    let current = cur
                        .map(|c| quantity_or_zero(at(c, "/value")))
                        .unwrap_or_else(|| "<unknown>".into());
                    format!("{current}/{}", q(target.and_then(|t| at(t, "/value"))))
                }
            }
            "Pods" => {
                let current = st
                    .and_then(|st| at(st, "/pods/current"))
                    .map(|c| quantity_or_zero(at(c, "/averageValue")))
                    .unwrap_or_else(|| "<unknown>".into());
                format!("{current}/{}", q(spec.pointer("/pods/target/averageValue")))
            }
            ty @ ("Resource" | "ContainerResource") => {
                let key = if ty == "Resource" {
                    "resource"
                } else {
                    "containerResource"
                };
                let rname = s(spec, &format!("/{key}/name"));
                let target = spec.pointer(&format!("/{key}/target"));
                let cur = st.and_then(|st| at(st, &format!("/{key}/current")));
                if let Some(avg) = target.and_then(|t| at(t, "/averageValue")) {
                    let current = cur
                        .map(|c| quantity_or_zero(at(c, "/averageValue")))
                        .unwrap_or_else(|| "<unknown>".into());
                    format!("{rname}: {current}/{}", int_or_string(avg))
                } else {
                    let current = cur
                        .and_then(|c| at(c, "/averageUtilization"))
                        .and_then(Value::as_i64)
                        .map(|u| format!("{u}%"))
                        .unwrap_or_else(|| "<unknown>".into());
                    let target = target
                        .and_then(|t| at(t, "/averageUtilization"))
                        .and_then(Value::as_i64)
                        .map(|u| format!("{u}%"))
                        .unwrap_or_else(|| "<auto>".into());
                    format!("{rname}: {current}/{target}")
                }
            }
            _ => "<unknown type>".to_string(),
        };
        list.push(entry);
    }
    let max = 2;
    let count = list.len();
    if count > max {
        list.truncate(max);
        return format!("{} + {} more...", list.join(", "), count - max);
    }
    list.join(", ")
}

/// kube-aggregator's `ConvertToTable`: the Service as `namespace/name` or
/// `Local`; `True`, or the condition's status with its reason in
/// parentheses, or `Unknown` without an `Available` condition.
fn api_service(obj: &Value, now: Timestamp) -> Vec<Value> {
    let service = match at(obj, "/spec/service") {
        Some(svc) => format!("{}/{}", s(svc, "/namespace"), s(svc, "/name")),
        None => "Local".to_string(),
    };
    let available = match condition(obj, "/status/conditions", "Available") {
        None => "Unknown".to_string(),
        Some(c) => {
            let (status, reason) = (s(c, "/status"), s(c, "/reason"));
            if status == "True" || reason.is_empty() {
                status.to_string()
            } else {
                format!("{status} ({reason})")
            }
        }
    };
    vec![name(obj), json!(service), json!(available), age(obj, now)]
}

/// The WAVE cell of a record: `2/3` (the wave under way, of how many),
/// with ` Halted` when the rollout stopped; `-` without a rollout.
fn rollout_wave(obj: &Value) -> String {
    let Some(r) = at(obj, "/status/rollout") else {
        return "-".into();
    };
    let waves = at(r, "/waves").and_then(Value::as_i64).unwrap_or(0);
    let wave = at(r, "/wave")
        .and_then(Value::as_i64)
        .unwrap_or(0)
        .min(waves);
    if at(r, "/halted").is_some_and(|h| !h.is_null()) {
        format!("{wave}/{waves} Halted")
    } else {
        format!("{wave}/{waves}")
    }
}

fn propagation_record(obj: &Value, now: Timestamp) -> Vec<Value> {
    let none_if_empty = |v: String| if v.is_empty() { "<none>".into() } else { v };
    let clusters = arr(obj, "/status/clusters");
    let in_sync = clusters
        .iter()
        .filter(|c| s(c, "/state") == "InSync")
        .count();
    let states: Vec<String> = clusters
        .iter()
        .map(|c| format!("{}={}", s(c, "/name"), s(c, "/state")))
        .collect();
    let drift: Vec<String> = clusters
        .iter()
        .filter_map(|c| {
            let n = arr(c, "/drift").len();
            (n > 0).then(|| format!("{}={n}", s(c, "/name")))
        })
        .collect();
    let replicas: Vec<String> = clusters
        .iter()
        .filter_map(|c| {
            let n = at(c, "/replicas").and_then(Value::as_i64)?;
            Some(format!("{}={n}", s(c, "/name")))
        })
        .collect();
    // Federation v1's format: {"items":[{"cluster":"c1","items":[{"ip":…}|{"hostname":…}]}]}
    let addresses: Vec<String> = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get("federation.kubernetes.io/service-ingresses"))
        .and_then(Value::as_str)
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .map(|v| {
            arr(&v, "/items")
                .iter()
                .map(|c| {
                    let addrs: Vec<&str> = arr(c, "/items")
                        .iter()
                        .map(|a| {
                            let ip = s(a, "/ip");
                            if ip.is_empty() { s(a, "/hostname") } else { ip }
                        })
                        .filter(|a| !a.is_empty())
                        .collect();
                    format!("{}={}", s(c, "/cluster"), addrs.join("+"))
                })
                .collect()
        })
        .unwrap_or_default();
    vec![
        name(obj),
        json!(format!(
            "{}/{}",
            s(obj, "/spec/resource/kind"),
            s(obj, "/spec/resource/name")
        )),
        json!(format!("{in_sync}/{}", clusters.len())),
        json!(if drift.is_empty() {
            "-".to_string()
        } else {
            drift.join(",")
        }),
        json!(rollout_wave(obj)),
        age(obj, now),
        json!(none_if_empty(states.join(","))),
        json!(none_if_empty(replicas.join(","))),
        json!(none_if_empty(addresses.join(","))),
    ]
}

fn cluster(obj: &Value, now: Timestamp) -> Vec<Value> {
    let ready = condition(obj, "/status/conditions", "Ready")
        .map(|c| s(c, "/status"))
        .filter(|st| !st.is_empty())
        .unwrap_or("Unknown");
    let zones: Vec<&str> = arr(obj, "/status/zones")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let none_if_empty = |v: String| if v.is_empty() { "<none>".into() } else { v };
    let server = arr(obj, "/spec/serverAddressByClientCIDRs")
        .iter()
        .map(|a| s(a, "/serverAddress"))
        .find(|a| !a.is_empty())
        .unwrap_or_default()
        .to_string();
    let version = ["/status/kubernetesVersion", "/status/version"]
        .iter()
        .map(|p| s(obj, p))
        .find(|v| !v.is_empty())
        .unwrap_or("<unknown>");
    let in_sync = match (
        at(obj, "/status/objectsInSync").and_then(Value::as_i64),
        at(obj, "/status/objectsPlaced").and_then(Value::as_i64),
    ) {
        (Some(a), Some(b)) => format!("{a}/{b}"),
        (Some(a), None) => a.to_string(),
        _ => "<unknown>".to_string(),
    };
    vec![
        name(obj),
        json!(ready),
        json!(none_if_empty(zones.join(","))),
        json!(none_if_empty(s(obj, "/status/region").to_string())),
        age(obj, now),
        json!(match s(obj, "/spec/syncMode") {
            "" => "Push",
            mode => mode,
        }),
        json!(none_if_empty(server)),
        json!(version),
        json!(in_sync),
    ]
}
