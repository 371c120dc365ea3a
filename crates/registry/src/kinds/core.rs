//! Core `v1` kinds: namespaces, configmaps, secrets, services, endpoints,
//! serviceaccounts, events, limitranges, resourcequotas, persistent volumes
//! and claims, podtemplates, replicationcontrollers, pods, nodes — their
//! discovery facts, defaults, validation, field selectors and preparation
//! as kube-apiserver's `pkg/registry/core/*` strategies.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{
    ConfigMap, Endpoints, Event, LimitRange, Namespace, Node, PersistentVolume,
    PersistentVolumeClaim, Pod, PodSpec, PodTemplate, ReplicationController, ResourceQuota, Secret,
    Service, ServiceAccount, ServiceSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};
use ubernetes_apimachinery::Cause;
use ubernetes_apimachinery::error::field;
use ubernetes_storage::cache::Attrs;

use super::builtin::{Builtin, info};
use super::names::{self, NameValidation};
use super::validation::{
    go_map, immutable_str, invalid_shown, invalid_str, non_negative, port_range, validate_labels,
    validate_pod_spec, validate_pod_template,
};
use super::{defaults, validation};
use crate::printers;
use crate::strategy::{Strategy, default_attrs};

/// Size limit of ConfigMap and Secret data (`MaxSecretSize`).
const MAX_DATA_SIZE: usize = 1024 * 1024;

/// The core `v1` strategies, in discovery order. Those marked
/// `returns_deleted_object` are the ones whose kube storage sets
/// `ReturnDeletedObject: true` (namespaces, persistentvolumeclaims,
/// persistentvolumes, pods, podtemplates, resourcequotas, serviceaccounts,
/// services); every other kind's delete answers a `Status`.
pub fn strategies() -> Vec<Arc<dyn Strategy>> {
    let mut ns_info = info::<Namespace>("namespace", &["ns"], &[], &["status", "finalize"]);
    ns_info.verbs.retain(|v| v != "deletecollection");
    vec![
        Arc::new(
            Builtin::<ConfigMap>::new(info::<ConfigMap>("configmap", &["cm"], &[], &[]))
                .printer(printers::CONFIG_MAP)
                .federated()
                // Over the JSON: a write's one typed decode is normalize's.
                .validate_value(validate_configmap, Some(validate_configmap_update)),
        ),
        Arc::new(
            Builtin::<Endpoints>::new(info::<Endpoints>("endpoints", &["ep"], &[], &[]))
                .printer(printers::ENDPOINTS)
                .defaults(default_endpoints)
                .validate(validate_endpoints)
                .deprecated(
                    "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice",
                ),
        ),
        Arc::new(
            Builtin::<Event>::new(info::<Event>("event", &["ev"], &[], &[]))
                .printer(printers::EVENT)
                .validate(validate_event)
                .fields(EVENT_FIELDS)
                .attrs(event_attrs)
                .after_normalize(go_event_zero_values),
        ),
        Arc::new(
            Builtin::<LimitRange>::new(info::<LimitRange>("limitrange", &["limits"], &[], &[]))
                .printer(printers::DEFAULT)
                .federated()
                .defaults(default_limitrange),
        ),
        Arc::new(
            Builtin::<Namespace>::new(ns_info)
                .printer(printers::NAMESPACE)
                .federated()
                .names(NameValidation::Dns1123Label)
                .defaults(default_namespace)
                .fields(&["status.phase"])
                .on_create(prepare_namespace)
                .on_update(prepare_namespace_update)
                .on_finalize(finalize_namespace)
                .returns_deleted_object()
                // namespaceStatusStrategy resets only the spec.
                .status_writes_metadata(),
        ),
        Arc::new(
            Builtin::<Node>::new(info::<Node>("node", &["no"], &[], &["status"]))
                .printer(printers::NODE)
                .defaults(default_node)
                .fields(&["spec.unschedulable"])
                .attrs(node_attrs)
                // nodeStatusStrategy resets the spec only.
                .status_writes_metadata(),
        ),
        Arc::new(
            Builtin::<PersistentVolumeClaim>::new(info::<PersistentVolumeClaim>(
                "persistentvolumeclaim",
                &["pvc"],
                &[],
                &["status"],
            ))
            .printer(printers::PERSISTENT_VOLUME_CLAIM)
            .defaults(defaults::pvc)
            .validate(validate_pvc)
            .validate_update(validate_pvc_update)
            .on_create(|o| set_phase(o, "Pending"))
            .returns_deleted_object()
            // persistentvolumeclaimStatusStrategy resets the spec only.
            .status_writes_metadata(),
        ),
        Arc::new(
            Builtin::<PersistentVolume>::new(info::<PersistentVolume>(
                "persistentvolume",
                &["pv"],
                &[],
                &["status"],
            ))
            .printer(printers::PERSISTENT_VOLUME)
            .defaults(default_pv)
            .validate(validate_pv)
            .on_create(|o| set_phase(o, "Pending"))
            .returns_deleted_object()
            // persistentvolumeStatusStrategy resets the spec only.
            .status_writes_metadata(),
        ),
        Arc::new(
            Builtin::<Pod>::new(info::<Pod>(
                "pod",
                &["po"],
                &["all"],
                &["binding", "status"],
            ))
            .printer(printers::POD)
            .generation()
            .defaults(default_pod)
            .validate(validate_pod)
            .validate_update(validate_pod_update)
            .fields(POD_FIELDS)
            .attrs(pod_attrs)
            .on_create(prepare_pod)
            .admission(crate::priority::pod_plugin)
            .admission(crate::runtime_class::pod_plugin)
            .admission(crate::service_account::pod_plugin)
            .create_subresource("binding", &super::pod_binding::BINDING)
            .returns_deleted_object()
            // podStatusStrategy's ResetObjectMetaForStatus(new, new) resets
            // nothing: labels and annotations written with a status stay.
            .status_writes_metadata(),
        ),
        Arc::new(
            Builtin::<PodTemplate>::new(info::<PodTemplate>("podtemplate", &[], &[], &[]))
                .printer(printers::POD_TEMPLATE)
                // podTemplateStrategy: generation 1, bumped when the
                // template changes.
                .generation()
                .defaults(|t| {
                    if let Some(t) = &mut t.template {
                        defaults::pod_template(t);
                    }
                })
                .validate(|t| match &t.template {
                    Some(tpl) => validate_pod_template("template", tpl),
                    None => vec![field::required("template", "")],
                })
                .returns_deleted_object(),
        ),
        Arc::new(
            Builtin::<ReplicationController>::new(info::<ReplicationController>(
                "replicationcontroller",
                &["rc"],
                &["all"],
                &["status", "scale"],
            ))
            .printer(printers::REPLICATION_CONTROLLER)
            .generation()
            .defaults(default_rc)
            .validate(validate_rc)
            .fields(&["status.replicas"])
            .scale("/spec/replicas", "/status/replicas", Some("/spec/selector"))
            // rcStatusStrategy resets the spec only.
            .status_writes_metadata()
            // v1 orphans the pods by default (rcStrategy's
            // DefaultGarbageCollectionPolicy).
            .orphans_by_default(),
        ),
        Arc::new(
            Builtin::<ResourceQuota>::new(info::<ResourceQuota>(
                "resourcequota",
                &["quota"],
                &[],
                &["status"],
            ))
            .printer(printers::RESOURCE_QUOTA)
            .federated()
            .validate(validate_quota)
            // resourcequotaStatusStrategy resets the spec only.
            .status_writes_metadata()
            .returns_deleted_object(),
        ),
        Arc::new(
            Builtin::<Secret>::new(info::<Secret>("secret", &[], &[], &[]))
                .printer(printers::SECRET)
                .secret_bodies(&[""])
                .federated()
                .defaults(default_secret)
                .validate(validate_secret)
                .validate_update(validate_secret_update)
                .fields(&["type"]),
        ),
        Arc::new(
            Builtin::<ServiceAccount>::new(info::<ServiceAccount>(
                "serviceaccount",
                &["sa"],
                &[],
                &["token"],
            ))
            .printer(printers::SERVICE_ACCOUNT)
            // A TokenRequest's answer is a token.
            .secret_bodies(&["token"])
            .create_subresource("token", &super::serviceaccount_token::TOKEN)
            .federated()
            .returns_deleted_object(),
        ),
        Arc::new(
            Builtin::<Service>::new(info::<Service>("service", &["svc"], &["all"], &["status"]))
                .printer(printers::SERVICE)
                .federated()
                .names(NameValidation::Dns1035Label)
                .defaults(default_service)
                .validate(validate_service)
                .validate_update(validate_service_update)
                .on_create(prepare_service)
                .on_update(prepare_service_update)
                .admission(crate::ipalloc::ClusterIpAllocator::plugin)
                .returns_deleted_object()
                // serviceStatusStrategy resets the spec only.
                .status_writes_metadata(),
        ),
    ]
}

// ---------------------------------------------------------------- configmaps

fn key_causes(path: &str, key: &str) -> Vec<Cause> {
    names::config_map_key(key)
        .into_iter()
        .map(|m| invalid_str(&format!("{path}[{key}]"), key, &m))
        .collect()
}

/// A member of a ConfigMap's JSON that is a map (`data`, `binaryData`);
/// `None` when absent, `null` or empty (as Go's nil and empty maps).
fn json_map<'a>(obj: &'a Value, field: &str) -> Option<&'a serde_json::Map<String, Value>> {
    obj.get(field)
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty())
}

/// The length in bytes of what a base64 string (`binaryData`'s values,
/// checked by normalize's decode) decodes to.
fn base64_decoded_len(s: &str) -> usize {
    let s = s.trim_end_matches('=');
    s.len() * 3 / 4
}

fn validate_configmap(c: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut total = 0usize;
    let data = json_map(c, "data");
    let binary = json_map(c, "binaryData");
    for (k, v) in data.into_iter().flatten() {
        out.extend(key_causes("data", k));
        if binary.is_some_and(|b| b.contains_key(k)) {
            out.push(invalid_str(
                &format!("data[{k}]"),
                k,
                "duplicate of key present in binaryData",
            ));
        }
        total += v.as_str().map_or(0, str::len);
    }
    for (k, v) in binary.into_iter().flatten() {
        out.extend(key_causes("binaryData", k));
        total += v.as_str().map_or(0, base64_decoded_len);
    }
    if total > MAX_DATA_SIZE {
        out.push(field::too_long("", MAX_DATA_SIZE));
    }
    out
}

fn immutable_data_causes(
    old_immutable: Option<bool>,
    new_immutable: Option<bool>,
    changed: &[(&str, bool)],
) -> Vec<Cause> {
    let mut out = Vec::new();
    if old_immutable == Some(true) {
        if new_immutable != Some(true) {
            out.push(field::forbidden(
                "immutable",
                "field is immutable when `immutable` is set",
            ));
        }
        for (path, differs) in changed {
            if *differs {
                out.push(field::forbidden(
                    path,
                    "field is immutable when `immutable` is set",
                ));
            }
        }
    }
    out
}

fn validate_configmap_update(new: &Value, old: &Value) -> Vec<Cause> {
    let immutable = |c: &Value| c.get("immutable").and_then(Value::as_bool);
    immutable_data_causes(
        immutable(old),
        immutable(new),
        &[
            ("data", json_map(new, "data") != json_map(old, "data")),
            (
                "binaryData",
                json_map(new, "binaryData") != json_map(old, "binaryData"),
            ),
        ],
    )
}

// ------------------------------------------------------------------- secrets

fn default_secret(s: &mut Secret) {
    if s.type_.as_deref().unwrap_or("").is_empty() {
        s.type_ = Some("Opaque".into());
    }
    // Conversion: `stringData` is merged into `data` and never stored.
    if let Some(sd) = s.string_data.take() {
        let data = s.data.get_or_insert_with(BTreeMap::new);
        for (k, v) in sd {
            data.insert(k, ByteString(v.into_bytes()));
        }
    }
}

fn validate_secret(s: &Secret) -> Vec<Cause> {
    let mut out = Vec::new();
    let data = s.data.clone().unwrap_or_default();
    let mut total = 0usize;
    for (k, v) in &data {
        out.extend(key_causes("data", k));
        total += v.0.len();
    }
    if total > MAX_DATA_SIZE {
        out.push(field::too_long("data", MAX_DATA_SIZE));
    }
    let need = |key: &str, out: &mut Vec<Cause>| {
        if !data.contains_key(key) {
            out.push(field::required(&format!("data[{key}]"), ""));
        }
    };
    match s.type_.as_deref().unwrap_or("Opaque") {
        "kubernetes.io/service-account-token" => {
            let has = s
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("kubernetes.io/service-account.name"))
                .is_some_and(|n| !n.is_empty());
            if !has {
                out.push(field::required(
                    "metadata.annotations[kubernetes.io/service-account.name]",
                    "",
                ));
            }
        }
        "kubernetes.io/dockercfg" => need(".dockercfg", &mut out),
        "kubernetes.io/dockerconfigjson" => need(".dockerconfigjson", &mut out),
        "kubernetes.io/ssh-auth" => need("ssh-privatekey", &mut out),
        "kubernetes.io/tls" => {
            need("tls.crt", &mut out);
            need("tls.key", &mut out);
        }
        "kubernetes.io/basic-auth"
            if !data.contains_key("username") && !data.contains_key("password") =>
        {
            out.push(field::required("data[username]", ""));
        }
        _ => {}
    }
    out
}

fn validate_secret_update(new: &Secret, old: &Secret) -> Vec<Cause> {
    let mut out = Vec::new();
    let (nt, ot) = (
        new.type_.as_deref().unwrap_or("Opaque"),
        old.type_.as_deref().unwrap_or("Opaque"),
    );
    if nt != ot {
        out.push(immutable_str("type", nt));
    }
    let norm = |m: &Option<BTreeMap<String, ByteString>>| m.clone().unwrap_or_default();
    out.extend(immutable_data_causes(
        old.immutable,
        new.immutable,
        &[("data", norm(&new.data) != norm(&old.data))],
    ));
    out
}

// ---------------------------------------------------------------- namespaces

fn default_namespace(n: &mut Namespace) {
    if let Some(name) = n.metadata.name.clone().filter(|s| !s.is_empty()) {
        n.metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert("kubernetes.io/metadata.name".into(), name);
    }
    let st = n.status.get_or_insert_with(Default::default);
    if st.phase.as_deref().unwrap_or("").is_empty() {
        st.phase = Some("Active".into());
    }
}

/// `PUT namespaces/{name}/finalize`: only `spec.finalizers` is taken from
/// the request (kube's `finalizeUpdateStrategy`).
fn finalize_namespace(current: &Value, requested: &Value) -> Value {
    let finalizers = requested
        .pointer("/spec/finalizers")
        .cloned()
        .unwrap_or_else(|| json!([]));
    let mut next = current.clone();
    next["spec"]["finalizers"] = finalizers;
    next
}

fn prepare_namespace(obj: &mut Value) {
    obj["status"] = json!({"phase": "Active"});
    if !obj.get("spec").is_some_and(Value::is_object) {
        obj["spec"] = json!({});
    }
    let fin = &mut obj["spec"]["finalizers"];
    match fin.as_array_mut() {
        Some(a) => {
            if !a.iter().any(|f| f == "kubernetes") {
                a.push(json!("kubernetes"));
            }
        }
        None => *fin = json!(["kubernetes"]),
    }
    name_label(obj);
}

fn name_label(obj: &mut Value) {
    let Some(name) = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .map(String::from)
        .filter(|s| !s.is_empty())
    else {
        return;
    };
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if let Some(l) = labels.as_object_mut() {
            l.insert("kubernetes.io/metadata.name".into(), json!(name));
        }
    }
}

fn prepare_namespace_update(new: &mut Value, old: &Value) {
    if let Some(spec) = old.get("spec") {
        new["spec"] = spec.clone();
    }
    name_label(new);
}

// -------------------------------------------------------------------- events

const EVENT_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

fn event_attrs(obj: &Value) -> Attrs {
    let mut a = default_attrs(obj, EVENT_FIELDS);
    let source = obj
        .pointer("/source/component")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .or_else(|| obj.get("reportingComponent").and_then(Value::as_str))
        .unwrap_or_default();
    a.fields.insert("source".into(), source.into());
    a
}

fn validate_event(e: &Event) -> Vec<Cause> {
    let mut out = Vec::new();
    let ns = e.metadata.namespace.as_deref().unwrap_or("");
    let io_ns = e.involved_object.namespace.as_deref().unwrap_or("");
    if e.event_time.is_none() && !io_ns.is_empty() && !ns.is_empty() && io_ns != ns {
        out.push(invalid_str(
            "involvedObject.namespace",
            io_ns,
            "does not match event.namespace",
        ));
    }
    if let Some(t) = e.type_.as_deref().filter(|t| !t.is_empty())
        && e.event_time.is_some()
        && t != "Normal"
        && t != "Warning"
    {
        out.push(field::invalid("type", &json!(t), "has invalid value: {}"));
    }
    out
}

// --------------------------------------------------------------- limitranges

fn default_limitrange(l: &mut LimitRange) {
    for item in l.spec.iter_mut().flat_map(|s| s.limits.iter_mut()) {
        if item.type_ != "Container" {
            continue;
        }
        let default = item.default.get_or_insert_with(BTreeMap::new);
        for (k, v) in item.max.iter().flatten() {
            default.entry(k.clone()).or_insert_with(|| v.clone());
        }
        let dr = item.default_request.get_or_insert_with(BTreeMap::new);
        for (k, v) in default.iter() {
            dr.entry(k.clone()).or_insert_with(|| v.clone());
        }
        for (k, v) in item.min.iter().flatten() {
            dr.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
}

fn validate_quota(q: &ResourceQuota) -> Vec<Cause> {
    let mut out = Vec::new();
    for (k, v) in q.spec.iter().flat_map(|s| s.hard.iter().flatten()) {
        match super::quantity::parse(&v.0) {
            None => out.push(invalid_str(
                &format!("spec.hard[{k}]"),
                &v.0,
                "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            )),
            Some(n) if n < 0.0 => out.push(invalid_str(
                &format!("spec.hard[{k}]"),
                &v.0,
                "must be greater than or equal to 0",
            )),
            _ => {}
        }
    }
    out
}

// ----------------------------------------------------------------- endpoints

fn default_endpoints(e: &mut Endpoints) {
    for ss in e.subsets.iter_mut().flatten() {
        for p in ss.ports.iter_mut().flatten() {
            if p.protocol.as_deref().unwrap_or("").is_empty() {
                p.protocol = Some("TCP".into());
            }
        }
    }
}

fn validate_endpoints(e: &Endpoints) -> Vec<Cause> {
    let mut out = Vec::new();
    for (i, ss) in e.subsets.iter().flatten().enumerate() {
        for (j, a) in ss.addresses.iter().flatten().enumerate() {
            if a.ip.parse::<std::net::IpAddr>().is_err() {
                out.push(invalid_str(
                    &format!("subsets[{i}].addresses[{j}].ip"),
                    &a.ip,
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                ));
            }
        }
        for (j, p) in ss.ports.iter().flatten().enumerate() {
            out.extend(port_range(&format!("subsets[{i}].ports[{j}].port"), p.port));
        }
    }
    out
}

// --------------------------------------------------------------------- nodes

fn default_node(n: &mut Node) {
    if let Some(st) = &mut n.status
        && st.allocatable.is_none()
    {
        st.allocatable = st.capacity.clone();
    }
}

fn node_attrs(obj: &Value) -> Attrs {
    let mut a = default_attrs(obj, &[]);
    let u = obj
        .pointer("/spec/unschedulable")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    a.fields.insert("spec.unschedulable".into(), u.to_string());
    a
}

// ------------------------------------------------------------ volumes (pv/pvc)

fn set_phase(obj: &mut Value, phase: &str) {
    if !obj.get("status").is_some_and(Value::is_object) {
        obj["status"] = json!({});
    }
    if obj
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        obj["status"]["phase"] = json!(phase);
    }
}

fn validate_access_modes(path: &str, modes: Option<&Vec<String>>) -> Vec<Cause> {
    let mut out = Vec::new();
    match modes {
        None => out.push(field::required(path, "at least 1 access mode is required")),
        Some(m) if m.is_empty() => {
            out.push(field::required(path, "at least 1 access mode is required"))
        }
        Some(m) => {
            for mode in m {
                if ![
                    "ReadOnlyMany",
                    "ReadWriteMany",
                    "ReadWriteOnce",
                    "ReadWriteOncePod",
                ]
                .contains(&mode.as_str())
                {
                    out.push(field::not_supported(
                        path,
                        &json!(mode),
                        &[
                            "ReadOnlyMany",
                            "ReadWriteMany",
                            "ReadWriteOnce",
                            "ReadWriteOncePod",
                        ],
                    ));
                }
            }
        }
    }
    out
}

fn validate_pvc(p: &PersistentVolumeClaim) -> Vec<Cause> {
    let mut out = Vec::new();
    let Some(spec) = &p.spec else {
        return vec![field::required(
            "spec.accessModes",
            "at least 1 access mode is required",
        )];
    };
    out.extend(validate_access_modes(
        "spec.accessModes",
        spec.access_modes.as_ref(),
    ));
    if let Some(sel) = &spec.selector {
        out.extend(validation::validate_selector("spec.selector", sel));
    }
    let storage = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"));
    match storage {
        None => out.push(field::required("spec.resources[storage]", "")),
        Some(q) => match super::quantity::parse(&q.0) {
            Some(n) if n > 0.0 => {}
            _ => out.push(invalid_str(
                "spec.resources[storage]",
                &q.0,
                "must be greater than zero",
            )),
        },
    }
    out.extend(validate_volume_mode(
        "spec.volumeMode",
        spec.volume_mode.as_deref(),
    ));
    out
}

fn validate_volume_mode(path: &str, m: Option<&str>) -> Vec<Cause> {
    match m {
        Some(m) if m != "Block" && m != "Filesystem" => {
            vec![field::not_supported(
                path,
                &json!(m),
                &["Block", "Filesystem"],
            )]
        }
        _ => vec![],
    }
}

fn validate_pvc_update(new: &PersistentVolumeClaim, old: &PersistentVolumeClaim) -> Vec<Cause> {
    let mut a = new.spec.clone().unwrap_or_default();
    let mut b = old.spec.clone().unwrap_or_default();
    // Mutable: requests (resize), volumeAttributesClassName, and binding a volume name.
    a.resources = None;
    b.resources = None;
    a.volume_attributes_class_name = None;
    b.volume_attributes_class_name = None;
    if b.volume_name.as_deref().unwrap_or("").is_empty() {
        a.volume_name = None;
        b.volume_name = None;
    }
    if a != b {
        vec![field::forbidden(
            "spec",
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        )]
    } else {
        vec![]
    }
}

fn default_pv(p: &mut PersistentVolume) {
    let spec = p.spec.get_or_insert_with(Default::default);
    if spec
        .persistent_volume_reclaim_policy
        .as_deref()
        .unwrap_or("")
        .is_empty()
    {
        spec.persistent_volume_reclaim_policy = Some("Retain".into());
    }
    spec.volume_mode.get_or_insert_with(|| "Filesystem".into());
    let st = p.status.get_or_insert_with(Default::default);
    if st.phase.as_deref().unwrap_or("").is_empty() {
        st.phase = Some("Pending".into());
    }
}

fn validate_pv(p: &PersistentVolume) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = p.spec.clone().unwrap_or_default();
    out.extend(validate_access_modes(
        "spec.accessModes",
        spec.access_modes.as_ref(),
    ));
    match spec.capacity.as_ref().and_then(|c| c.get("storage")) {
        None => out.push(field::required("spec.capacity", "")),
        Some(q) if super::quantity::parse(&q.0).is_none_or(|n| n <= 0.0) => out.push(invalid_str(
            "spec.capacity[storage]",
            &q.0,
            "must be greater than zero",
        )),
        _ => {}
    }
    let json = serde_json::to_value(&spec).unwrap_or_default();
    const SOURCES: &[&str] = &[
        "awsElasticBlockStore",
        "azureDisk",
        "azureFile",
        "cephfs",
        "cinder",
        "csi",
        "fc",
        "flexVolume",
        "flocker",
        "gcePersistentDisk",
        "glusterfs",
        "hostPath",
        "iscsi",
        "local",
        "nfs",
        "photonPersistentDisk",
        "portworxVolume",
        "quobyte",
        "rbd",
        "scaleIO",
        "storageos",
        "vsphereVolume",
    ];
    let n = SOURCES.iter().filter(|s| json.get(**s).is_some()).count();
    if n == 0 {
        out.push(field::required("spec", "must specify a volume type"));
    } else if n > 1 {
        out.push(field::forbidden(
            "spec",
            "may not specify more than 1 volume type",
        ));
    }
    match spec.persistent_volume_reclaim_policy.as_deref() {
        Some(r) if !["Delete", "Recycle", "Retain"].contains(&r) => out.push(field::not_supported(
            "spec.persistentVolumeReclaimPolicy",
            &json!(r),
            &["Delete", "Recycle", "Retain"],
        )),
        _ => {}
    }
    out.extend(validate_volume_mode(
        "spec.volumeMode",
        spec.volume_mode.as_deref(),
    ));
    out
}

// ---------------------------------------------------------------------- pods

const POD_FIELDS: &[&str] = &[
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
];

fn pod_attrs(obj: &Value) -> Attrs {
    let mut a = default_attrs(obj, POD_FIELDS);
    let host = obj
        .pointer("/spec/hostNetwork")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    a.fields.insert("spec.hostNetwork".into(), host.to_string());
    let ip = obj
        .pointer("/status/podIPs/0/ip")
        .or_else(|| obj.pointer("/status/podIP"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    a.fields.insert("status.podIP".into(), ip.into());
    a
}

fn default_pod(p: &mut Pod) {
    let spec = p.spec.get_or_insert_with(PodSpec::default);
    defaults::pod_spec(spec);
    // SetDefaults_Pod: requests default to limits (pods only, not templates).
    for c in spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten())
    {
        if let Some(r) = &mut c.resources
            && let Some(limits) = r.limits.clone()
        {
            let req = r.requests.get_or_insert_with(BTreeMap::new);
            for (k, v) in limits {
                req.entry(k).or_insert(v);
            }
        }
    }
    spec.enable_service_links.get_or_insert(true);
    if spec.host_network == Some(true) {
        for c in spec
            .containers
            .iter_mut()
            .chain(spec.init_containers.iter_mut().flatten())
        {
            for port in c.ports.iter_mut().flatten() {
                if port.host_port.unwrap_or(0) == 0 {
                    port.host_port = Some(port.container_port);
                }
            }
        }
    }
}

fn validate_pod(p: &Pod) -> Vec<Cause> {
    match &p.spec {
        Some(spec) => validate_pod_spec("spec", spec),
        None => vec![field::required("spec.containers", "")],
    }
}

const POD_UPDATE_MSG: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

fn validate_pod_update(new: &Pod, old: &Pod) -> Vec<Cause> {
    let mask = |s: &Option<PodSpec>| {
        let mut s = s.clone().unwrap_or_default();
        for c in s
            .containers
            .iter_mut()
            .chain(s.init_containers.iter_mut().flatten())
        {
            c.image = None;
        }
        s.active_deadline_seconds = None;
        s.tolerations = None;
        s.termination_grace_period_seconds = None;
        // Set once by the scheduler (binding) or the user.
        s.node_name = None;
        s
    };
    let mut out = Vec::new();
    if mask(&new.spec) != mask(&old.spec) {
        out.push(field::forbidden("spec", POD_UPDATE_MSG));
    }
    let (nn, on) = (
        new.spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default(),
        old.spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default(),
    );
    if !on.is_empty() && nn != on {
        out.push(field::forbidden("spec", POD_UPDATE_MSG));
    }
    out
}

/// The pod's QoS class (`qos.GetPodQOS`), computed on the JSON form.
fn qos_class(obj: &Value) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .filter_map(|k| obj.pointer(&format!("/spec/{k}")).and_then(Value::as_array))
        .flatten()
        .collect();
    let mut any = false;
    let mut guaranteed = true;
    for c in containers {
        let req = c.pointer("/resources/requests").and_then(Value::as_object);
        let lim = c.pointer("/resources/limits").and_then(Value::as_object);
        let relevant = |m: Option<&serde_json::Map<String, Value>>| {
            m.map(|m| {
                m.iter()
                    .filter(|(k, v)| {
                        (k.as_str() == "cpu" || k.as_str() == "memory")
                            && v.as_str()
                                .and_then(super::quantity::parse)
                                .is_some_and(|n| n != 0.0)
                    })
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect::<BTreeMap<_, _>>()
            })
            .unwrap_or_default()
        };
        let (r, l) = (relevant(req), relevant(lim));
        if !r.is_empty() || !l.is_empty() {
            any = true;
        }
        if l.len() < 2 {
            guaranteed = false;
        }
        for (k, v) in &r {
            let lv = l
                .get(k)
                .and_then(Value::as_str)
                .and_then(super::quantity::parse);
            if lv != v.as_str().and_then(super::quantity::parse) {
                guaranteed = false;
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// The pod strategy's `PrepareForCreate` (`status: {phase: Pending, qosClass}`)
/// plus what kube-apiserver's default admission chain adds to every pod:
/// the `default` service account (ServiceAccount) and the
/// not-ready/unreachable tolerations (DefaultTolerationSeconds). Priority
/// is the kind's admission plugin (`crate::priority`).
fn prepare_pod(obj: &mut Value) {
    let qos = qos_class(obj);
    obj["status"] = json!({"phase": "Pending", "qosClass": qos});
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let sa = crate::service_account::service_account_name(spec).to_string();
    spec.insert("serviceAccountName".into(), json!(sa));
    spec.insert("serviceAccount".into(), json!(sa));
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    if let Some(t) = tolerations.as_array_mut() {
        for key in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            let has = t.iter().any(|x| {
                let k = x.get("key").and_then(Value::as_str);
                let e = x.get("effect").and_then(Value::as_str).unwrap_or("");
                (k == Some(key) || k.is_none_or(str::is_empty))
                    && (e.is_empty() || e == "NoExecute")
            });
            if !has {
                t.push(json!({
                    "effect": "NoExecute",
                    "key": key,
                    "operator": "Exists",
                    "tolerationSeconds": 300
                }));
            }
        }
    }
}

// ------------------------------------------------------ replicationcontrollers

fn default_rc(rc: &mut ReplicationController) {
    let spec = rc.spec.get_or_insert_with(Default::default);
    let labels = spec
        .template
        .as_ref()
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.clone());
    if let Some(labels) = labels {
        if spec.selector.as_ref().is_none_or(BTreeMap::is_empty) {
            spec.selector = Some(labels.clone());
        }
        if rc.metadata.labels.as_ref().is_none_or(BTreeMap::is_empty) {
            rc.metadata.labels = Some(labels);
        }
    }
    spec.replicas.get_or_insert(1);
    if let Some(t) = &mut spec.template {
        defaults::pod_template(t);
    }
}

fn validate_rc(rc: &ReplicationController) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = rc.spec.clone().unwrap_or_default();
    out.extend(non_negative("spec.replicas", spec.replicas.map(i64::from)));
    out.extend(non_negative(
        "spec.minReadySeconds",
        spec.min_ready_seconds.map(i64::from),
    ));
    let selector = spec.selector.clone().unwrap_or_default();
    if selector.is_empty() {
        out.push(field::required("spec.selector", ""));
    } else {
        out.extend(validate_labels("spec.selector", Some(&selector)));
    }
    match &spec.template {
        None => out.push(field::required("spec.template", "")),
        Some(t) => {
            let labels = t.metadata.as_ref().and_then(|m| m.labels.as_ref());
            let sel = LabelSelector {
                match_labels: Some(selector.clone()),
                match_expressions: None,
            };
            if !selector.is_empty() && !validation::selector_matches(&sel, labels) {
                out.push(invalid_shown(
                    "spec.template.metadata.labels",
                    &go_map(labels),
                    "`selector` does not match template `labels`",
                ));
            }
            out.extend(validate_pod_template("spec.template", t));
            let rp = t
                .spec
                .as_ref()
                .and_then(|s| s.restart_policy.as_deref())
                .unwrap_or("");
            if rp != "Always" {
                out.push(field::not_supported(
                    "spec.template.spec.restartPolicy",
                    &json!(rp),
                    &["Always"],
                ));
            }
        }
    }
    out
}

// ------------------------------------------------------------------ services

fn service_type(s: &ServiceSpec) -> &str {
    s.type_.as_deref().unwrap_or("ClusterIP")
}

fn default_service(svc: &mut Service) {
    let spec = svc.spec.get_or_insert_with(Default::default);
    if spec.session_affinity.as_deref().unwrap_or("").is_empty() {
        spec.session_affinity = Some("None".into());
    }
    match spec.session_affinity.as_deref() {
        Some("None") => spec.session_affinity_config = None,
        Some("ClientIP") => {
            let has = spec
                .session_affinity_config
                .as_ref()
                .and_then(|c| c.client_ip.as_ref())
                .and_then(|c| c.timeout_seconds)
                .is_some();
            if !has {
                spec.session_affinity_config = serde_json::from_value(json!({
                    "clientIP": {"timeoutSeconds": 10800}
                }))
                .ok();
            }
        }
        _ => {}
    }
    if spec.type_.as_deref().unwrap_or("").is_empty() {
        spec.type_ = Some("ClusterIP".into());
    }
    for p in spec.ports.iter_mut().flatten() {
        if p.protocol.as_deref().unwrap_or("").is_empty() {
            p.protocol = Some("TCP".into());
        }
        let unset = match &p.target_port {
            None => true,
            Some(IntOrString::Int(0)) => true,
            Some(IntOrString::String(s)) => s.is_empty(),
            _ => false,
        };
        if unset {
            p.target_port = Some(IntOrString::Int(p.port));
        }
    }
    let ty = service_type(spec).to_string();
    let externally_accessible = ty == "LoadBalancer"
        || ty == "NodePort"
        || (ty == "ClusterIP" && spec.external_ips.as_ref().is_some_and(|e| !e.is_empty()));
    if externally_accessible
        && spec
            .external_traffic_policy
            .as_deref()
            .unwrap_or("")
            .is_empty()
    {
        spec.external_traffic_policy = Some("Cluster".into());
    }
    if spec.internal_traffic_policy.is_none()
        && (ty == "NodePort" || ty == "LoadBalancer" || ty == "ClusterIP")
    {
        spec.internal_traffic_policy = Some("Cluster".into());
    }
    if ty == "LoadBalancer" {
        spec.allocate_load_balancer_node_ports.get_or_insert(true);
        if let Some(st) = &mut svc.status {
            for ing in st
                .load_balancer
                .iter_mut()
                .flat_map(|lb| lb.ingress.iter_mut().flatten())
            {
                if ing.ip.as_deref().is_some_and(|ip| !ip.is_empty()) && ing.ip_mode.is_none() {
                    ing.ip_mode = Some("VIP".into());
                }
            }
        }
    }
}

fn is_headless(spec: &ServiceSpec) -> bool {
    spec.cluster_ip.as_deref() == Some("None")
}

fn validate_service(svc: &Service) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = svc.spec.clone().unwrap_or_default();
    let ty = service_type(&spec);
    const TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
    if !TYPES.contains(&ty) {
        out.push(field::not_supported("spec.type", &json!(ty), TYPES));
    }
    let ports = spec.ports.clone().unwrap_or_default();
    if ports.is_empty() && !is_headless(&spec) && ty != "ExternalName" {
        out.push(field::required("spec.ports", ""));
    }
    if ty == "ExternalName" {
        match spec.external_name.as_deref() {
            None | Some("") => out.push(field::required("spec.externalName", "")),
            Some(n) => {
                for m in names::dns1123_subdomain(n.trim_end_matches('.')) {
                    out.push(invalid_str("spec.externalName", n, &m));
                }
            }
        }
    }
    let mut seen_names = std::collections::HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let pp = format!("spec.ports[{i}]");
        let name = p.name.as_deref().unwrap_or("");
        if ports.len() > 1 && name.is_empty() {
            out.push(field::required(&format!("{pp}.name"), ""));
        } else if !name.is_empty() {
            for m in names::dns1123_label(name) {
                out.push(invalid_str(&format!("{pp}.name"), name, &m));
            }
            if !seen_names.insert(name.to_string()) {
                out.push(field::duplicate(&format!("{pp}.name"), &json!(name)));
            }
        }
        out.extend(port_range(&format!("{pp}.port"), p.port));
        match p.protocol.as_deref() {
            None | Some("") => out.push(field::required(&format!("{pp}.protocol"), "")),
            Some(pr) if !["SCTP", "TCP", "UDP"].contains(&pr) => out.push(field::not_supported(
                &format!("{pp}.protocol"),
                &json!(pr),
                &["SCTP", "TCP", "UDP"],
            )),
            _ => {}
        }
        match &p.target_port {
            Some(IntOrString::Int(n)) => out.extend(port_range(&format!("{pp}.targetPort"), *n)),
            Some(IntOrString::String(s)) => {
                for m in names::port_name(s) {
                    out.push(invalid_str(&format!("{pp}.targetPort"), s, &m));
                }
            }
            None => {}
        }
        if let Some(np) = p.node_port.filter(|n| *n != 0) {
            if ty != "NodePort" && ty != "LoadBalancer" {
                out.push(field::forbidden(
                    &format!("{pp}.nodePort"),
                    &format!("may not be used when `type` is '{ty}'"),
                ));
            } else {
                out.extend(port_range(&format!("{pp}.nodePort"), np));
            }
        }
    }
    const AFFINITY: &[&str] = &["ClientIP", "None"];
    if let Some(a) = spec.session_affinity.as_deref()
        && !AFFINITY.contains(&a)
    {
        out.push(field::not_supported(
            "spec.sessionAffinity",
            &json!(a),
            AFFINITY,
        ));
    }
    if let Some(ip) = spec
        .cluster_ip
        .as_deref()
        .filter(|s| !s.is_empty() && *s != "None")
        && ip.parse::<std::net::IpAddr>().is_err()
    {
        out.push(invalid_str(
            "spec.clusterIPs[0]",
            ip,
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        ));
    }
    if let Some(policy) = spec.ip_family_policy.as_deref() {
        const P: &[&str] = &["PreferDualStack", "RequireDualStack", "SingleStack"];
        if !P.contains(&policy) {
            out.push(field::not_supported(
                "spec.ipFamilyPolicy",
                &json!(policy),
                P,
            ));
        }
    }
    for (i, f) in spec.ip_families.iter().flatten().enumerate() {
        if f != "IPv4" && f != "IPv6" {
            out.push(field::not_supported(
                &format!("spec.ipFamilies[{i}]"),
                &json!(f),
                &["IPv4", "IPv6"],
            ));
        }
    }
    out.extend(validate_labels("spec.selector", spec.selector.as_ref()));
    if let Some(p) = spec
        .external_traffic_policy
        .as_deref()
        .filter(|p| !p.is_empty())
        && !["Cluster", "Local"].contains(&p)
    {
        out.push(field::not_supported(
            "spec.externalTrafficPolicy",
            &json!(p),
            &["Cluster", "Local"],
        ));
    }
    if let Some(p) = spec.internal_traffic_policy.as_deref()
        && !["Cluster", "Local"].contains(&p)
    {
        out.push(field::not_supported(
            "spec.internalTrafficPolicy",
            &json!(p),
            &["Cluster", "Local"],
        ));
    }
    out
}

fn go_string_slice(v: &[String]) -> String {
    format!(
        "[]string{{{}}}",
        v.iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

fn validate_service_update(new: &Service, old: &Service) -> Vec<Cause> {
    let mut out = Vec::new();
    let (n, o) = (
        new.spec.clone().unwrap_or_default(),
        old.spec.clone().unwrap_or_default(),
    );
    let old_ip = o.cluster_ip.clone().unwrap_or_default();
    let new_ip = n.cluster_ip.clone().unwrap_or_default();
    // Changing type to/from ExternalName releases/allocates; otherwise the IP is fixed.
    let to_external = service_type(&n) == "ExternalName";
    if !old_ip.is_empty() && new_ip != old_ip && !to_external {
        let ips = n
            .cluster_ips
            .clone()
            .unwrap_or_else(|| vec![new_ip.clone()]);
        out.push(invalid_shown(
            "spec.clusterIPs[0]",
            &go_string_slice(&ips),
            "may not change once set",
        ));
    }
    out
}

/// Headless services without a selector get `RequireDualStack`, as
/// kube-apiserver's service REST does; others `SingleStack`. Only the
/// families are filled here; the address is allocated by the store.
fn prepare_service(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec.get("type").and_then(Value::as_str) == Some("ExternalName") {
        return;
    }
    let headless = spec.get("clusterIP").and_then(Value::as_str) == Some("None");
    let has_selector = spec
        .get("selector")
        .and_then(Value::as_object)
        .is_some_and(|s| !s.is_empty());
    if spec.get("ipFamilyPolicy").is_none() {
        let p = if headless && !has_selector {
            "RequireDualStack"
        } else {
            "SingleStack"
        };
        spec.insert("ipFamilyPolicy".into(), json!(p));
    }
    if spec.get("ipFamilies").is_none() {
        let v6 = spec
            .get("clusterIP")
            .and_then(Value::as_str)
            .and_then(|ip| ip.parse::<std::net::IpAddr>().ok())
            .is_some_and(|ip| ip.is_ipv6());
        spec.insert(
            "ipFamilies".into(),
            json!([if v6 { "IPv6" } else { "IPv4" }]),
        );
    }
}

/// kube-apiserver keeps allocated values the client left out of an update
/// (`patchAllocatedValues`): cluster IPs, families, node ports.
fn prepare_service_update(new: &mut Value, old: &Value) {
    let Some(old_spec) = old.get("spec").and_then(Value::as_object) else {
        return;
    };
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec.get("type").and_then(Value::as_str) == Some("ExternalName") {
        return;
    }
    let empty = |v: Option<&Value>| v.is_none_or(|v| v.as_str() == Some("") || v.is_null());
    if empty(spec.get("clusterIP")) {
        for k in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            if let Some(v) = old_spec.get(k)
                && spec
                    .get(k)
                    .is_none_or(|x| x.is_null() || x.as_str() == Some(""))
            {
                spec.insert(k.into(), v.clone());
            }
        }
    }
    for k in ["ipFamilies", "ipFamilyPolicy"] {
        if spec.get(k).is_none()
            && let Some(v) = old_spec.get(k)
        {
            spec.insert(k.into(), v.clone());
        }
    }
    let ty = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_string();
    if ty == "NodePort" || ty == "LoadBalancer" {
        let old_ports = old_spec
            .get("ports")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
            for p in ports {
                if p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
                    continue;
                }
                let found = old_ports.iter().find(|o| {
                    o.get("port") == p.get("port") && o.get("protocol") == p.get("protocol")
                });
                if let Some(np) = found.and_then(|o| o.get("nodePort")) {
                    p["nodePort"] = np.clone();
                }
            }
        }
    }
}

/// What Go encodes for an Event's fields left unset: the `source` struct as
/// `{}`, the timestamps (structs, `omitempty` does not apply) as `null`,
/// and the reporting strings (no `omitempty`) as `""`.
fn go_event_zero_values(obj: &mut Value) {
    if let Some(o) = obj.as_object_mut() {
        o.entry("source").or_insert_with(|| json!({}));
        for t in ["firstTimestamp", "lastTimestamp", "eventTime"] {
            o.entry(t).or_insert(Value::Null);
        }
        for s in ["reportingComponent", "reportingInstance"] {
            o.entry(s).or_insert_with(|| json!(""));
        }
    }
}
