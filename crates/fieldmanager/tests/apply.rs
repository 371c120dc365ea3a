//! Server-side apply and update tracking end to end, over the built-in
//! schemas: the scenarios kube's own field manager tests cover.

use serde_json::{Value, json};
use ubernetes_apimachinery::ApiError;
use ubernetes_fieldmanager::last_applied::LAST_APPLIED_ANNOTATION;
use ubernetes_fieldmanager::{ApplyError, Context, Schema, apply, update};
use ubernetes_openapi::{Snapshot, definitions};

const T1: &str = "2024-01-01T00:00:01Z";
const T2: &str = "2024-01-01T00:00:02Z";
const T3: &str = "2024-01-01T00:00:03Z";

fn ctx<'a>(
    defs: &'a Snapshot,
    definition: &str,
    api_version: &'a str,
    manager: &'a str,
    now: &'a str,
) -> Context<'a> {
    Context {
        manager,
        api_version,
        subresource: "",
        now,
        schema: Schema::definition(defs, definition),
        ignored: None,
    }
}

const CM: &str = "io.k8s.api.core.v1.ConfigMap";
const DEPLOY: &str = "io.k8s.api.apps.v1.Deployment";
const POD: &str = "io.k8s.api.core.v1.Pod";

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}, "data": data})
}

fn managed_fields(obj: &Value) -> &Vec<Value> {
    obj["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
}

fn entry<'v>(obj: &'v Value, manager: &str) -> Option<&'v Value> {
    managed_fields(obj).iter().find(|e| e["manager"] == manager)
}

fn fields(obj: &Value, manager: &str) -> Value {
    entry(obj, manager).expect(manager)["fieldsV1"].clone()
}

/// Pretend storage: the object as it would be read back (with a uid).
fn stored(mut obj: Value) -> Value {
    obj["metadata"]["uid"] = json!("u-1");
    obj
}

#[test]
fn apply_creates_an_object_owned_by_the_applier() {
    let defs = definitions().snapshot();
    let c = ctx(&defs, CM, "v1", "m", T1);
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"app": "x"}}, "data": {"a": "1"}});
    let obj = apply(None, &applied, false, &c).expect("apply");
    assert_eq!(obj["data"], json!({"a": "1"}));
    assert_eq!(obj["metadata"]["labels"], json!({"app": "x"}));
    assert_eq!(
        serde_json::to_string(&obj["metadata"]["managedFields"]).expect("json"),
        r#"[{"manager":"m","operation":"Apply","apiVersion":"v1","time":"2024-01-01T00:00:01Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:a":{}},"f:metadata":{"f:labels":{"f:app":{}}}}}]"#
    );
}

#[test]
fn a_field_the_applier_drops_is_removed() {
    let defs = definitions().snapshot();
    let first = apply(
        None,
        &cm(json!({"a": "1", "b": "2"})),
        false,
        &ctx(&defs, CM, "v1", "m", T1),
    )
    .expect("first");
    let second = apply(
        Some(&stored(first)),
        &cm(json!({"a": "1"})),
        false,
        &ctx(&defs, CM, "v1", "m", T2),
    )
    .expect("second");
    assert_eq!(second["data"], json!({"a": "1"}));
    assert_eq!(fields(&second, "m"), json!({"f:data": {"f:a": {}}}));
    assert_eq!(entry(&second, "m").expect("m")["time"], T2);
}

#[test]
fn reapplying_the_same_fields_with_new_values_keeps_every_field() {
    // The same field set as last time (what a controller re-applying its
    // copy sends) skips the prune; debug builds assert the full prune
    // would give the same object.
    let defs = definitions().snapshot();
    let mut obj = apply(
        None,
        &cm(json!({"a": "1", "b": "2"})),
        false,
        &ctx(&defs, CM, "v1", "m", T1),
    )
    .expect("first");
    for (i, now) in [T2, T3].into_iter().enumerate() {
        obj = apply(
            Some(&stored(obj)),
            &cm(json!({"a": "1", "b": format!("v{i}")})),
            false,
            &ctx(&defs, CM, "v1", "m", now),
        )
        .expect("again");
        assert_eq!(obj["data"], json!({"a": "1", "b": format!("v{i}")}));
        assert_eq!(fields(&obj, "m"), json!({"f:data": {"f:a": {}, "f:b": {}}}));
        assert_eq!(entry(&obj, "m").expect("m")["time"], now);
    }
}

#[test]
fn a_dropped_field_another_manager_owns_stays() {
    let defs = definitions().snapshot();
    let created = update(
        None,
        &cm(json!({"b": "2"})),
        &ctx(&defs, CM, "v1", "other", T1),
    );
    let shared = apply(
        Some(&stored(created)),
        &cm(json!({"a": "1", "b": "2"})),
        false,
        &ctx(&defs, CM, "v1", "m", T2),
    )
    .expect("same value is no conflict");
    assert_eq!(
        fields(&shared, "other"),
        json!({"f:data": {".": {}, "f:b": {}}})
    );
    assert_eq!(
        fields(&shared, "m"),
        json!({"f:data": {"f:a": {}, "f:b": {}}})
    );
    let dropped = apply(
        Some(&stored(shared)),
        &cm(json!({"a": "1"})),
        false,
        &ctx(&defs, CM, "v1", "m", T3),
    )
    .expect("drop");
    assert_eq!(dropped["data"], json!({"a": "1", "b": "2"}));
}

#[test]
fn applying_over_another_managers_value_is_a_conflict() {
    let defs = definitions().snapshot();
    let created = update(
        None,
        &cm(json!({"a": "1"})),
        &ctx(&defs, CM, "v1", "kubectl-client-side-apply", T1),
    );
    let err = apply(
        Some(&stored(created)),
        &cm(json!({"a": "2"})),
        false,
        &ctx(&defs, CM, "v1", "m", T2),
    )
    .expect_err("conflict");
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.a"#
    );
    let status = ApiError::from(err).status();
    assert_eq!(status["code"], 409);
    assert_eq!(status["reason"], "Conflict");
    assert_eq!(
        status["details"]["causes"],
        json!([{
            "reason": "FieldManagerConflict",
            "message": "conflict with \"kubectl-client-side-apply\" using v1",
            "field": ".data.a"
        }])
    );
}

#[test]
fn several_conflicts_are_listed_per_manager() {
    let defs = definitions().snapshot();
    let a = update(
        None,
        &cm(json!({"a": "1", "b": "1"})),
        &ctx(&defs, CM, "v1", "x", T1),
    );
    let b = update(
        Some(&stored(a)),
        &cm(json!({"a": "1", "b": "1", "c": "1"})),
        &ctx(&defs, CM, "v1", "y", T2),
    );
    let err = apply(
        Some(&stored(b)),
        &cm(json!({"a": "2", "b": "2", "c": "2"})),
        false,
        &ctx(&defs, CM, "v1", "m", T3),
    )
    .expect_err("conflicts");
    assert_eq!(
        err.to_string(),
        "Apply failed with 3 conflicts: conflicts with \"x\" using v1:\n- .data.a\n- .data.b\nconflicts with \"y\" using v1:\n- .data.c"
    );
    let ApplyError::Conflicts(list) = err else {
        panic!("not a conflict");
    };
    assert_eq!(list.len(), 3);
}

#[test]
fn force_takes_ownership() {
    let defs = definitions().snapshot();
    let created = update(
        None,
        &cm(json!({"a": "1", "b": "1"})),
        &ctx(&defs, CM, "v1", "x", T1),
    );
    let forced = apply(
        Some(&stored(created)),
        &cm(json!({"a": "2"})),
        true,
        &ctx(&defs, CM, "v1", "m", T2),
    )
    .expect("force");
    assert_eq!(forced["data"], json!({"a": "2", "b": "1"}));
    assert_eq!(fields(&forced, "m"), json!({"f:data": {"f:a": {}}}));
    assert_eq!(
        fields(&forced, "x"),
        json!({"f:data": {".": {}, "f:b": {}}})
    );
    // Apply entries come first.
    assert_eq!(managed_fields(&forced)[0]["manager"], "m");
}

fn deployment(containers: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ns"},
        "spec": {"template": {"spec": {"containers": containers}}}
    })
}

#[test]
fn map_lists_merge_by_key_and_conflict_per_item_field() {
    let defs = definitions().snapshot();
    let a = apply(
        None,
        &deployment(json!([{"name": "c1", "image": "x"}])),
        false,
        &ctx(&defs, DEPLOY, "apps/v1", "a", T1),
    )
    .expect("a");
    let b = apply(
        Some(&stored(a)),
        &deployment(json!([{"name": "c2", "image": "y"}])),
        false,
        &ctx(&defs, DEPLOY, "apps/v1", "b", T2),
    )
    .expect("b");
    assert_eq!(
        b["spec"]["template"]["spec"]["containers"],
        json!([{"name": "c1", "image": "x"}, {"name": "c2", "image": "y"}])
    );
    assert_eq!(
        fields(&b, "a"),
        json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {
            "k:{\"name\":\"c1\"}": {".": {}, "f:image": {}, "f:name": {}}
        }}}}})
    );
    let err = apply(
        Some(&stored(b)),
        &deployment(json!([{"name": "c1", "image": "z"}])),
        false,
        &ctx(&defs, DEPLOY, "apps/v1", "b", T3),
    )
    .expect_err("conflict");
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "a": .spec.template.spec.containers[name="c1"].image"#
    );
}

#[test]
fn dropping_a_map_list_item_removes_it() {
    let defs = definitions().snapshot();
    let a = apply(
        None,
        &deployment(json!([{"name": "c1", "image": "x"}, {"name": "c2", "image": "y"}])),
        false,
        &ctx(&defs, DEPLOY, "apps/v1", "a", T1),
    )
    .expect("a");
    let a2 = apply(
        Some(&stored(a)),
        &deployment(json!([{"name": "c2", "image": "y"}])),
        false,
        &ctx(&defs, DEPLOY, "apps/v1", "a", T2),
    )
    .expect("a2");
    assert_eq!(
        a2["spec"]["template"]["spec"]["containers"],
        json!([{"name": "c2", "image": "y"}])
    );
}

fn pod(extra: Value) -> Value {
    let mut p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
    if let (Some(p), Some(extra)) = (p.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            p.insert(k.clone(), v.clone());
        }
    }
    p
}

#[test]
fn set_lists_merge_by_value() {
    let defs = definitions().snapshot();
    let fin = |f: Value| json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": f}});
    let a = apply(
        None,
        &fin(json!(["a"])),
        false,
        &ctx(&defs, POD, "v1", "a", T1),
    )
    .expect("a");
    let b = apply(
        Some(&stored(a)),
        &fin(json!(["b"])),
        false,
        &ctx(&defs, POD, "v1", "b", T2),
    )
    .expect("b");
    assert_eq!(b["metadata"]["finalizers"], json!(["a", "b"]));
    assert_eq!(
        fields(&b, "b"),
        json!({"f:metadata": {"f:finalizers": {"v:\"b\"": {}}}})
    );
    let a2 = apply(
        Some(&stored(b)),
        &pod(json!({})),
        false,
        &ctx(&defs, POD, "v1", "a", T3),
    )
    .expect("a drops its finalizer");
    assert_eq!(a2["metadata"]["finalizers"], json!(["b"]));
    assert!(entry(&a2, "a").is_none(), "a owns nothing any more");
}

#[test]
fn atomic_lists_are_replaced_whole_and_conflict_whole() {
    let defs = definitions().snapshot();
    let tol = |key: &str| pod(json!({"spec": {"tolerations": [{"key": key}]}}));
    let a = apply(None, &tol("t1"), false, &ctx(&defs, POD, "v1", "a", T1)).expect("a");
    assert_eq!(fields(&a, "a"), json!({"f:spec": {"f:tolerations": {}}}));
    let err = apply(
        Some(&stored(a.clone())),
        &tol("t2"),
        false,
        &ctx(&defs, POD, "v1", "b", T2),
    )
    .expect_err("conflict");
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "a": .spec.tolerations"#
    );
    let b = apply(
        Some(&stored(a)),
        &tol("t2"),
        true,
        &ctx(&defs, POD, "v1", "b", T2),
    )
    .expect("force");
    assert_eq!(b["spec"]["tolerations"], json!([{"key": "t2"}]));
    assert!(entry(&b, "a").is_none());
}

#[test]
fn updates_take_ownership_of_what_they_change() {
    let defs = definitions().snapshot();
    let x = update(
        None,
        &cm(json!({"a": "1", "b": "1"})),
        &ctx(&defs, CM, "v1", "x", T1),
    );
    assert_eq!(
        fields(&x, "x"),
        json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}})
    );
    assert_eq!(entry(&x, "x").expect("x")["operation"], "Update");
    assert_eq!(entry(&x, "x").expect("x")["time"], T1);
    let y = update(
        Some(&stored(x)),
        &stored(cm(json!({"a": "2", "b": "1"}))),
        &ctx(&defs, CM, "v1", "y", T2),
    );
    assert_eq!(fields(&y, "y"), json!({"f:data": {"f:a": {}}}));
    assert_eq!(fields(&y, "x"), json!({"f:data": {".": {}, "f:b": {}}}));
    let removed = update(
        Some(&stored(y)),
        &stored(cm(json!({"b": "1"}))),
        &ctx(&defs, CM, "v1", "z", T3),
    );
    assert!(entry(&removed, "y").is_none(), "y's only field went away");
    assert!(
        entry(&removed, "z").is_none(),
        "removing a field owns nothing"
    );
    let order: Vec<&str> = managed_fields(&removed)
        .iter()
        .map(|e| e["manager"].as_str().expect("name"))
        .collect();
    assert_eq!(order, ["x"]);
}

#[test]
fn created_deployment_owns_what_kube_says() {
    let defs = definitions().snapshot();
    let d = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {
                "metadata": {"creationTimestamp": null, "labels": {"app": "nginx"}},
                "spec": {
                    "containers": [{"name": "nginx", "image": "nginx", "imagePullPolicy": "Always",
                        "resources": {}, "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File"}],
                    "dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
                    "schedulerName": "default-scheduler", "securityContext": {},
                    "terminationGracePeriodSeconds": 30
                }
            },
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600
        },
        "status": {}
    });
    let created = update(
        None,
        &d,
        &ctx(&defs, DEPLOY, "apps/v1", "kubectl-create", T1),
    );
    let expected = r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:progressDeadlineSeconds":{},"f:replicas":{},"f:revisionHistoryLimit":{},"f:selector":{},"f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{},"f:maxUnavailable":{}},"f:type":{}},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}}}"#;
    assert_eq!(
        serde_json::to_string(&fields(&created, "kubectl-create")).expect("json"),
        expected
    );
}

#[test]
fn applying_an_identical_configuration_is_a_no_op() {
    let defs = definitions().snapshot();
    let applied = cm(json!({"a": "1"}));
    let first = stored(apply(None, &applied, false, &ctx(&defs, CM, "v1", "m", T1)).expect("1"));
    let again = apply(
        Some(&first),
        &applied,
        false,
        &ctx(&defs, CM, "v1", "m", T2),
    )
    .expect("2");
    assert_eq!(again, first);
}

#[test]
fn existing_objects_without_managed_fields_are_not_tracked_by_updates() {
    let defs = definitions().snapshot();
    let live = stored(cm(json!({"a": "1"})));
    let updated = update(
        Some(&live),
        &stored(cm(json!({"a": "2"}))),
        &ctx(&defs, CM, "v1", "x", T1),
    );
    assert!(updated["metadata"].get("managedFields").is_none());
}

#[test]
fn first_apply_to_an_untracked_object_records_before_first_apply() {
    let defs = definitions().snapshot();
    let live = stored(cm(json!({"a": "1", "b": "1"})));
    let obj = apply(
        Some(&live),
        &cm(json!({"a": "2"})),
        false,
        &ctx(&defs, CM, "v1", "m", T2),
    )
    .expect_err("before-first-apply owns a");
    assert_eq!(
        obj.to_string(),
        r#"Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.a"#
    );
    let ok = apply(
        Some(&live),
        &cm(json!({"a": "1"})),
        false,
        &ctx(&defs, CM, "v1", "m", T2),
    )
    .expect("same value");
    assert_eq!(
        fields(&ok, "before-first-apply"),
        json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}})
    );
}

#[test]
fn sent_managed_fields_replace_or_reset_the_live_ones() {
    let defs = definitions().snapshot();
    let x = stored(update(
        None,
        &cm(json!({"a": "1"})),
        &ctx(&defs, CM, "v1", "x", T1),
    ));
    let mut reset = stored(cm(json!({"a": "1"})));
    reset["metadata"]["managedFields"] = json!([]);
    let out = update(Some(&x), &reset, &ctx(&defs, CM, "v1", "y", T2));
    assert!(out["metadata"].get("managedFields").is_none());
    // Without managedFields in the request, the live ones carry on.
    let kept = update(
        Some(&x),
        &stored(cm(json!({"a": "1"}))),
        &ctx(&defs, CM, "v1", "y", T2),
    );
    assert_eq!(
        kept["metadata"]["managedFields"],
        x["metadata"]["managedFields"]
    );
}

#[test]
fn bad_apply_requests_are_rejected() {
    let defs = definitions().snapshot();
    let c = ctx(&defs, CM, "v1", "m", T1);
    let wrong = json!({"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "c"}});
    assert_eq!(
        apply(None, &wrong, false, &c)
            .expect_err("version")
            .to_string(),
        "Incorrect version specified in apply patch. Specified patch version: v2, expected: v1"
    );
    let mut with_mf = cm(json!({}));
    with_mf["metadata"]["managedFields"] = json!([]);
    let err = apply(None, &with_mf, false, &c).expect_err("managedFields");
    assert_eq!(ApiError::from(err).code, 400);
    let p = ctx(&defs, POD, "v1", "m", T1);
    let no_name = pod(json!({"spec": {"containers": [{"image": "i"}]}}));
    let err = apply(None, &no_name, false, &p).expect_err("key");
    let status = ApiError::from(err.clone()).status();
    assert_eq!(status["code"], 500);
    assert!(
        status.get("reason").is_none(),
        "kube sends no reason: {status}"
    );
    assert_eq!(
        err.to_string(),
        "failed to create typed patch object (/p; /v1, Kind=Pod): .spec.containers: element 0: associative list with keys has an element that omits key field \"name\" (and doesn't have default value)"
    );
}

#[test]
fn client_side_then_server_side_apply_by_kubectl_takes_over() {
    let defs = definitions().snapshot();
    let config = cm(json!({"a": "1"}));
    let mut csa = config.clone();
    csa["metadata"]["annotations"] =
        json!({LAST_APPLIED_ANNOTATION: serde_json::to_string(&config).expect("json") + "\n"});
    let live = stored(update(
        None,
        &csa,
        &ctx(&defs, CM, "v1", "kubectl-client-side-apply", T1),
    ));
    let next = cm(json!({"a": "2"}));
    // Another manager cannot take a over silently...
    assert!(
        apply(
            Some(&live),
            &next,
            false,
            &ctx(&defs, CM, "v1", "other", T2)
        )
        .is_err()
    );
    // ...kubectl can: a still has the value it last applied.
    let ssa = apply(
        Some(&live),
        &next,
        false,
        &ctx(&defs, CM, "v1", "kubectl", T2),
    )
    .expect("kubectl takes over");
    assert_eq!(ssa["data"], json!({"a": "2"}));
    assert_eq!(fields(&ssa, "kubectl"), json!({"f:data": {"f:a": {}}}));
    assert_eq!(
        ssa["metadata"]["annotations"][LAST_APPLIED_ANNOTATION],
        "{\"apiVersion\":\"v1\",\"data\":{\"a\":\"2\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\"}}\n"
    );
}

#[test]
fn kubectl_still_conflicts_on_fields_changed_since_the_client_side_apply() {
    let defs = definitions().snapshot();
    let config = cm(json!({"a": "1"}));
    let mut csa = config.clone();
    csa["metadata"]["annotations"] =
        json!({LAST_APPLIED_ANNOTATION: serde_json::to_string(&config).expect("json")});
    let live = stored(update(
        None,
        &csa,
        &ctx(&defs, CM, "v1", "kubectl-client-side-apply", T1),
    ));
    let edited = stored(update(
        Some(&live),
        &{
            let mut e = live.clone();
            e["data"]["a"] = json!("edited");
            e
        },
        &ctx(&defs, CM, "v1", "kubectl-edit", T2),
    ));
    let err = apply(
        Some(&edited),
        &cm(json!({"a": "2"})),
        false,
        &ctx(&defs, CM, "v1", "kubectl", T3),
    )
    .expect_err("edited since");
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .data.a"#
    );
}

#[test]
fn status_subresource_entries_are_kept_apart() {
    let defs = definitions().snapshot();
    let mut c = ctx(&defs, POD, "v1", "kubelet", T1);
    c.subresource = "status";
    let live = stored(update(
        None,
        &pod(json!({"spec": {"containers": [{"name": "c", "image": "i"}]}})),
        &ctx(&defs, POD, "v1", "kubectl", T1),
    ));
    let mut next = live.clone();
    next["status"] = json!({"phase": "Running"});
    let out = update(Some(&live), &next, &c);
    let kubelet = entry(&out, "kubelet").expect("kubelet");
    assert_eq!(kubelet["subresource"], "status");
    assert_eq!(kubelet["fieldsV1"], json!({"f:status": {"f:phase": {}}}));
}

#[test]
fn update_managers_past_ten_fold_into_ancient_changes() {
    let defs = definitions().snapshot();
    let times: Vec<String> = (0..12)
        .map(|i| format!("2024-01-01T00:00:{i:02}Z"))
        .collect();
    let mut obj = stored(update(
        None,
        &cm(json!({"k0": "v"})),
        &ctx(&defs, CM, "v1", "m0", &times[0]),
    ));
    for i in 1..12 {
        let mut next = obj.clone();
        next["data"][format!("k{i}")] = json!("v");
        let manager = format!("m{i}");
        obj = stored(update(
            Some(&obj),
            &next,
            &ctx(&defs, CM, "v1", &manager, &times[i]),
        ));
    }
    let names: Vec<&str> = managed_fields(&obj)
        .iter()
        .map(|e| e["manager"].as_str().expect("name"))
        .collect();
    assert_eq!(names.len(), 10);
    assert_eq!(names[0], "ancient-changes");
    assert_eq!(
        fields(&obj, "ancient-changes"),
        json!({"f:data": {".": {}, "f:k0": {}, "f:k1": {}, "f:k2": {}}})
    );
    assert_eq!(
        entry(&obj, "ancient-changes").expect("bucket")["time"],
        times[2]
    );
    assert_eq!(names[9], "m11");
}

#[test]
fn custom_resources_apply_with_their_own_list_types() {
    let defs = definitions().snapshot();
    let raw = json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "properties": {
                            "name": {"type": "string"}, "port": {"type": "integer"}}}
                    },
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }
            }
        }
    });
    let c = |manager: &'static str, now: &'static str| Context {
        manager,
        api_version: "example.com/v1",
        subresource: "",
        now,
        schema: Schema::json(&raw, Some(&defs)),
        ignored: None,
    };
    let cr = |ports: Value, free: Value| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"name": "w", "finalizers": ["x"]}, "spec": {"ports": ports, "free": free}})
    };
    let a = apply(
        None,
        &cr(json!([{"name": "a", "port": 1}]), json!({"x": {"y": 1}})),
        false,
        &c("a", T1),
    )
    .expect("a");
    assert_eq!(
        fields(&a, "a"),
        json!({"f:metadata": {"f:finalizers": {"v:\"x\"": {}}},
               "f:spec": {"f:free": {"f:x": {".": {}, "f:y": {}}},
                          "f:ports": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:port": {}}}}})
    );
    let b = apply(
        Some(&stored(a)),
        &cr(json!([{"name": "b", "port": 2}]), json!({"z": 1})),
        false,
        &c("b", T2),
    )
    .expect("b");
    assert_eq!(
        b["spec"],
        json!({"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}], "free": {"x": {"y": 1}, "z": 1}})
    );
    let undeclared = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"nope": 1}});
    assert_eq!(
        apply(None, &undeclared, false, &c("a", T1))
            .expect_err("undeclared")
            .to_string(),
        "failed to create typed patch object (/w; example.com/v1, Kind=Widget): .spec.nope: field not declared in schema"
    );
}

#[test]
fn ignored_fields_are_never_owned_through_the_endpoint() {
    let defs = definitions().snapshot();
    let mut ignored = ubernetes_fieldmanager::FieldSet::new();
    ignored.insert(&[ubernetes_fieldmanager::PathElement::field("status")]);
    let mut c = ctx(&defs, POD, "v1", "m", T1);
    c.ignored = Some(&ignored);
    let applied = pod(
        json!({"spec": {"containers": [{"name": "c", "image": "i"}]}, "status": {"phase": "Running"}}),
    );
    let obj = apply(None, &applied, false, &c).expect("apply");
    assert!(fields(&obj, "m").get("f:status").is_none());
    assert!(fields(&obj, "m").get("f:spec").is_some());
}

#[test]
fn applying_null_to_a_map_keeps_its_entries_and_owns_the_field() {
    let defs = definitions().snapshot();
    let live = stored(update(
        None,
        &cm(json!({"a": "1"})),
        &ctx(&defs, CM, "v1", "x", T1),
    ));
    let obj = apply(
        Some(&live),
        &cm(Value::Null),
        false,
        &ctx(&defs, CM, "v1", "m", T2),
    )
    .expect("apply");
    assert_eq!(obj["data"], json!({"a": "1"}));
    assert_eq!(fields(&obj, "m"), json!({"f:data": {}}));
}

#[test]
fn dropping_the_last_label_removes_labels_and_keeps_the_rest_of_metadata() {
    let defs = definitions().snapshot();
    let with_label = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "ns", "labels": {"a": "1"}}, "data": {"x": "1"}});
    let mut live =
        stored(apply(None, &with_label, false, &ctx(&defs, CM, "v1", "m", T1)).expect("1"));
    live["metadata"]["resourceVersion"] = json!("5");
    let out = apply(
        Some(&live),
        &cm(json!({"x": "1"})),
        false,
        &ctx(&defs, CM, "v1", "m", T2),
    )
    .expect("2");
    assert_eq!(
        out["metadata"]["name"], "c",
        "server-set metadata stays: {out}"
    );
    assert_eq!(out["metadata"]["uid"], "u-1");
    assert_eq!(out["metadata"]["resourceVersion"], "5");
    assert!(out["metadata"].get("labels").is_none(), "{out}");
    assert_eq!(fields(&out, "m"), json!({"f:data": {"f:x": {}}}));
}
