//! Columns and cells of the ComponentStatus, `resource.k8s.io`,
//! `flowcontrol.apiserver.k8s.io` and `networking.k8s.io` IPAddress /
//! ServiceCIDR tables, as kube-apiserver 1.36's
//! `pkg/printers/internalversion/printers.go` prints them (column names,
//! types and descriptions copied from its Table responses).

use jiff::Timestamp;
use serde_json::{Value, json};

use super::TablePrinter;
use super::kinds::{AGE, Column, NAME, age, name, s};

/// A priority-0 string column (every column of these tables is one).
const fn col(name: &'static str, description: &'static str) -> Column {
    Column {
        name,
        kind: "string",
        format: "",
        description,
        priority: 0,
    }
}

/// An integer cell, or `<none>` when absent (kube's `interface{}("<none>")`).
fn int_or_none(obj: &Value, ptr: &str) -> Value {
    obj.pointer(ptr)
        .and_then(Value::as_i64)
        .map_or_else(|| json!("<none>"), |n| json!(n))
}

/// kube's printer for ComponentStatus (columns and cells).
pub const COMPONENT_STATUS: TablePrinter =
    TablePrinter::new(component_status_columns, |obj, _| component_status(obj));

fn component_status_columns() -> Vec<Column> {
    vec![
        NAME,
        col("Status", "Status of the component conditions"),
        col("Message", "Message of the component conditions"),
        col("Error", "Error of the component conditions"),
    ]
}

fn component_status(obj: &Value) -> Vec<Value> {
    let (mut status, mut message, mut error) = ("Unknown", "", "");
    if let Some(c) = obj
        .get("conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Healthy"))
    {
        status = if c["status"] == "True" {
            "Healthy"
        } else {
            "Unhealthy"
        };
        message = s(c, "/message");
        error = s(c, "/error");
    }
    vec![name(obj), json!(status), json!(message), json!(error)]
}

/// kube's printer for ResourceClaim (columns and cells).
pub const RESOURCE_CLAIM: TablePrinter = TablePrinter::new(resource_claim_columns, resource_claim);

fn resource_claim_columns() -> Vec<Column> {
    vec![
        NAME,
        col(
            "State",
            "A summary of the current state (allocated, pending, reserved, etc.).",
        ),
        AGE,
    ]
}

/// `resourceClaimState`: deleted / pending / allocated[,reserved].
fn resource_claim(obj: &Value, now: Timestamp) -> Vec<Value> {
    let deleting = obj
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null());
    let mut states = Vec::new();
    if deleting {
        states.push("deleted");
    }
    let allocated = obj
        .pointer("/status/allocation")
        .is_some_and(|v| !v.is_null());
    if !allocated {
        if !deleting {
            states.push("pending");
        }
    } else {
        states.push("allocated");
        if obj
            .pointer("/status/reservedFor")
            .and_then(Value::as_array)
            .is_some_and(|r| !r.is_empty())
        {
            states.push("reserved");
        }
    }
    vec![name(obj), json!(states.join(",")), age(obj, now)]
}

/// kube's printer for ResourceSlice (columns and cells).
pub const RESOURCE_SLICE: TablePrinter = TablePrinter::new(resource_slice_columns, resource_slice);

fn resource_slice_columns() -> Vec<Column> {
    vec![
        NAME,
        col(
            "Node",
            "NodeName identifies the node which provides the resources in this pool. A field selector can be used to list only ResourceSlice objects belonging to a certain node.\n\nThis field can be used to limit access from nodes to ResourceSlices with the same node name. It also indicates to autoscalers that adding new nodes of the same type as some old node might also make new resources available.\n\nExactly one of NodeName, NodeSelector, AllNodes, and PerDeviceNodeSelection must be set. This field is immutable.",
        ),
        col(
            "Driver",
            "Driver identifies the DRA driver providing the capacity information. A field selector can be used to list only ResourceSlice objects with a certain driver name.\n\nMust be a DNS subdomain and should end with a DNS domain owned by the vendor of the driver. It should use only lower case characters. This field is immutable.",
        ),
        col(
            "Pool",
            "Name is used to identify the pool. For node-local devices, this is often the node name, but this is not required.\n\nIt must not be longer than 253 characters and must consist of one or more DNS sub-domains separated by slashes. This field is immutable.",
        ),
        AGE,
    ]
}

fn resource_slice(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(obj),
        json!(s(obj, "/spec/nodeName")),
        json!(s(obj, "/spec/driver")),
        json!(s(obj, "/spec/pool/name")),
        age(obj, now),
    ]
}

/// kube's printer for FlowSchema (columns and cells).
pub const FLOW_SCHEMA: TablePrinter =
    TablePrinter::new(flow_schema_columns, flow_schema).sorted_by(sort_flow_schemas);

fn flow_schema_columns() -> Vec<Column> {
    vec![
        NAME,
        col(
            "PriorityLevel",
            "`name` is the name of the priority level configuration being referenced Required.",
        ),
        col(
            "MatchingPrecedence",
            "`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema is among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must be ranged in [1,10000]. Note that if the precedence is not specified, it will be set to 1000 as default.",
        ),
        col(
            "DistinguisherMethod",
            "`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. `nil` specifies that the distinguisher is disabled and thus will always be the empty string.",
        ),
        AGE,
        col(
            "MissingPL",
            "references a broken or non-existent PriorityLevelConfiguration",
        ),
    ]
}

/// `printFlowSchema`: MissingPL is the `Dangling` condition's status, `?`
/// without one.
fn flow_schema(obj: &Value, now: Timestamp) -> Vec<Value> {
    let method = obj
        .pointer("/spec/distinguisherMethod/type")
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    let missing = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Dangling"))
        .map_or("?", |c| s(c, "/status"));
    vec![
        name(obj),
        json!(s(obj, "/spec/priorityLevelConfiguration/name")),
        json!(
            obj.pointer("/spec/matchingPrecedence")
                .and_then(Value::as_i64)
                .unwrap_or(0)
        ),
        json!(method),
        age(obj, now),
        json!(missing),
    ]
}

/// `printFlowSchemaList` sorts by matching precedence, then name.
fn sort_flow_schemas(objects: &mut [Value]) {
    objects.sort_by(|a, b| {
        let p = |o: &Value| {
            o.pointer("/spec/matchingPrecedence")
                .and_then(Value::as_i64)
                .unwrap_or(0)
        };
        p(a).cmp(&p(b))
            .then_with(|| s(a, "/metadata/name").cmp(s(b, "/metadata/name")))
    });
}

/// kube's printer for PriorityLevelConfiguration (columns and cells).
pub const PRIORITY_LEVEL_CONFIGURATION: TablePrinter =
    TablePrinter::new(priority_level_columns, priority_level);

fn priority_level_columns() -> Vec<Column> {
    vec![
        NAME,
        col(
            "Type",
            "`type` indicates whether this priority level is subject to limitation on request execution.  A value of `\"Exempt\"` means that requests of this priority level are not subject to a limit (and thus are never queued) and do not detract from the capacity made available to other priority levels.  A value of `\"Limited\"` means that (a) requests of this priority level _are_ subject to limits and (b) some of the server's limited capacity is made available exclusively to this priority level. Required.",
        ),
        col(
            "NominalConcurrencyShares",
            "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level. This is the number of execution seats available at this priority level. This is used both for requests dispatched from this priority level as well as requests dispatched from other priority levels borrowing seats from this level. The server's concurrency limit (ServerCL) is divided among the Limited priority levels in proportion to their NCS values:\n\nNominalCL(i)  = ceil( ServerCL * NCS(i) / sum_ncs ) sum_ncs = sum[priority level k] NCS(k)\n\nBigger numbers mean a larger nominal concurrency limit, at the expense of every other priority level.\n\nIf not specified, this field defaults to a value of 30.\n\nSetting this field to zero supports the construction of a \"jail\" for this priority level that is used to hold some request(s)",
        ),
        col(
            "Queues",
            "`queues` is the number of queues for this priority level. The queues exist independently at each apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value of 64.",
        ),
        col(
            "HandSize",
            "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.  When enqueuing a request at this priority level the request's flow identifier (a string pair) is hashed and the hash value is used to shuffle the list of queues and deal a hand of the size specified here.  The request is put into one of the shortest queues in that hand. `handSize` must be no larger than `queues`, and should be significantly smaller (so that a few heavy flows do not saturate most of the queues).  See the user-facing documentation for more extensive guidance on setting this field.  This field has a default value of 8.",
        ),
        col(
            "QueueLengthLimit",
            "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time; excess requests are rejected.  This value must be positive.  If not specified, it will be defaulted to 50.",
        ),
        AGE,
    ]
}

/// `printPriorityLevelConfiguration`: `<none>` where a level has no
/// limit or no queuing.
fn priority_level(obj: &Value, now: Timestamp) -> Vec<Value> {
    let limited = obj.pointer("/spec/limited").is_some_and(|v| !v.is_null());
    let (ncs, queues, hand, qll) = if limited {
        (
            int_or_none(obj, "/spec/limited/nominalConcurrencyShares"),
            int_or_none(obj, "/spec/limited/limitResponse/queuing/queues"),
            int_or_none(obj, "/spec/limited/limitResponse/queuing/handSize"),
            int_or_none(obj, "/spec/limited/limitResponse/queuing/queueLengthLimit"),
        )
    } else {
        let none = json!("<none>");
        (none.clone(), none.clone(), none.clone(), none)
    };
    vec![
        name(obj),
        json!(s(obj, "/spec/type")),
        ncs,
        queues,
        hand,
        qll,
        age(obj, now),
    ]
}

/// kube's printer for IPAddress (columns and cells).
pub const IP_ADDRESS: TablePrinter =
    TablePrinter::new(ip_address_columns, |obj, _| ip_address(obj));

fn ip_address_columns() -> Vec<Column> {
    // kube's IPAddress table has these two columns (its rows carry a third
    // cell, the age, that no column describes; kubectl shows two).
    vec![
        NAME,
        col(
            "ParentRef",
            "ParentRef references the resource that an IPAddress is attached to. An IPAddress must reference a parent object.",
        ),
    ]
}

/// `printIPAddress`: `resource[.group]/[namespace/]name`, `<none>` without
/// a parent.
fn ip_address(obj: &Value) -> Vec<Value> {
    let parent = match obj.pointer("/spec/parentRef").filter(|v| !v.is_null()) {
        None => "<none>".to_string(),
        Some(p) => {
            let (group, resource) = (s(p, "/group"), s(p, "/resource"));
            let mut out = if group.is_empty() {
                resource.to_lowercase()
            } else {
                format!("{resource}.{group}").to_lowercase()
            };
            let ns = s(p, "/namespace");
            if !ns.is_empty() {
                out.push('/');
                out.push_str(ns);
            }
            out.push('/');
            out.push_str(s(p, "/name"));
            out
        }
    };
    vec![name(obj), json!(parent)]
}

/// kube's printer for ServiceCIDR (columns and cells).
pub const SERVICE_CIDR: TablePrinter = TablePrinter::new(service_cidr_columns, service_cidr);

fn service_cidr_columns() -> Vec<Column> {
    vec![
        NAME,
        col(
            "CIDRs",
            "CIDRs defines the IP blocks in CIDR notation (e.g. \"192.168.0.0/24\" or \"2001:db8::/64\") from which to assign service cluster IPs. Max of two CIDRs is allowed, one of each IP family. This field is immutable.",
        ),
        AGE,
    ]
}

fn service_cidr(obj: &Value, now: Timestamp) -> Vec<Value> {
    let cidrs: Vec<&str> = obj
        .pointer("/spec/cidrs")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    vec![name(obj), json!(cidrs.join(",")), age(obj, now)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_match_columns_and_kube_rows() {
        let now = Timestamp::now();
        let fs = json!({"metadata": {"name": "exempt"}, "spec": {"matchingPrecedence": 1, "priorityLevelConfiguration": {"name": "exempt"}},
            "status": {"conditions": [{"type": "Dangling", "status": "False"}]}});
        let cells = flow_schema(&fs, now);
        assert_eq!(cells.len(), flow_schema_columns().len());
        assert_eq!(cells[1..4], [json!("exempt"), json!(1), json!("<none>")]);
        assert_eq!(cells[5], json!("False"));
        let pl = json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt", "exempt": {}}});
        let cells = priority_level(&pl, now);
        assert_eq!(cells.len(), priority_level_columns().len());
        assert_eq!(cells[2], json!("<none>"));
        let pl = json!({"metadata": {"name": "g"}, "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 20,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}}}});
        assert_eq!(
            priority_level(&pl, now)[2..6],
            [json!(20), json!(128), json!(6), json!(50)]
        );
        let ip = json!({"metadata": {"name": "10.96.0.1"}, "spec": {"parentRef": {"resource": "services", "namespace": "default", "name": "kubernetes"}}});
        assert_eq!(ip_address(&ip)[1], json!("services/default/kubernetes"));
        let rc =
            json!({"metadata": {"name": "c"}, "status": {"allocation": {}, "reservedFor": [{}]}});
        assert_eq!(resource_claim(&rc, now)[1], json!("allocated,reserved"));
        let cs = json!({"metadata": {"name": "etcd-0"}, "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]});
        assert_eq!(
            component_status(&cs),
            [json!("etcd-0"), json!("Healthy"), json!("ok"), json!("")]
        );
    }

    #[test]
    fn flow_schemas_sort_by_precedence_then_name() {
        let fs =
            |n: &str, p: i64| json!({"metadata": {"name": n}, "spec": {"matchingPrecedence": p}});
        let mut v = vec![
            fs("b", 800),
            fs("catch-all", 10000),
            fs("a", 800),
            fs("exempt", 1),
        ];
        sort_flow_schemas(&mut v);
        let names: Vec<&str> = v.iter().map(|o| s(o, "/metadata/name")).collect();
        assert_eq!(names, ["exempt", "a", "b", "catch-all"]);
    }
}
