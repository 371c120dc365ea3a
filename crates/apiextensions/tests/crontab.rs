//! The CronTab CRD of kube's documentation end to end: the CRD validated,
//! defaulted and prepared as kube-apiserver does, its status after the
//! naming/establishing controllers, its served resource, and CronTab objects
//! normalized (pruned + defaulted), validated and printed.
#![allow(clippy::unwrap_used)] // a failing test may panic

use serde_json::{Value, json};
use ubernetes_apiextensions::{
    CustomResource, accepted_status_at, column_definitions, crd_strategy, custom_resource_strategy,
    printer_columns, resource_infos, table_cells_at,
};

fn crontab_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"], "categories": ["all"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}, "scale": {
                    "specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas",
                    "labelSelectorPath": ".status.labelSelector"}},
                "additionalPrinterColumns": [
                    {"name": "Spec", "type": "string", "description": "The cron spec defining the interval a CronJob is run", "jsonPath": ".spec.cronSpec"},
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                ],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "required": ["cronSpec"],
                            "properties": {
                                "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
                                "image": {"type": "string", "default": ""},
                                "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
                                "policy": {"type": "string", "enum": ["Allow", "Forbid", "Replace"], "default": "Allow"},
                                "options": {"type": "object", "default": {}, "properties": {
                                    "timeout": {"type": "integer", "default": 30}}},
                                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                            }
                        },
                        "status": {"type": "object", "properties": {
                            "replicas": {"type": "integer"},
                            "labelSelector": {"type": "string"}}}
                    }
                }}
            }, {
                "name": "v1beta1", "served": false, "storage": false,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    })
}

fn messages(causes: Vec<ubernetes_apimachinery::Cause>) -> Vec<String> {
    causes
        .into_iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect()
}

fn created_crd() -> Value {
    let s = crd_strategy();
    let mut crd = s.normalize(crontab_crd()).unwrap();
    s.prepare_for_create(&mut crd);
    assert_eq!(messages(s.validate_create(&crd)), Vec::<String>::new());
    crd
}

#[test]
fn the_crontab_crd_is_valid_and_keeps_its_schema_through_normalization() {
    let crd = created_crd();
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let spec = &schema["properties"]["spec"];
    assert_eq!(spec["properties"]["image"]["default"], json!(""));
    assert_eq!(spec["properties"]["options"]["default"], json!({}));
    assert_eq!(spec["properties"]["replicas"]["maximum"], json!(10));
    assert_eq!(
        spec["properties"]["extra"]["x-kubernetes-preserve-unknown-fields"],
        json!(true)
    );
    assert_eq!(spec["required"], json!(["cronSpec"]));
    assert_eq!(crd["spec"]["names"]["listKind"], "CronTabList");
    assert_eq!(crd["spec"]["conversion"]["strategy"], "None");
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
}

#[test]
fn bad_crds_get_kubes_messages() {
    let s = crd_strategy();
    let check = |mutate: &dyn Fn(&mut Value), want: &[&str]| {
        let mut crd = crontab_crd();
        mutate(&mut crd);
        let mut n = s.normalize(crd).unwrap();
        s.prepare_for_create(&mut n);
        assert_eq!(messages(s.validate_create(&n)), want);
    };
    check(
        &|c| c["metadata"]["name"] = json!("crontab.stable.example.com"),
        &[
            "metadata.name: Invalid value: \"crontab.stable.example.com\": must be spec.names.plural+\".\"+spec.group",
        ],
    );
    check(
        &|c| c["spec"]["scope"] = json!(""),
        &["spec.scope: Required value"],
    );
    check(
        &|c| c["spec"]["names"]["listKind"] = json!("CronTab"),
        &["spec.names.listKind: Invalid value: \"CronTab\": kind and listKind may not be the same"],
    );
    check(
        &|c| {
            c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
                ["replicas"]["default"] = json!(20)
        },
        &[
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[replicas].default: Invalid value: 20: spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[replicas].default in body should be less than or equal to 10",
        ],
    );
}

#[test]
fn two_storage_versions_are_rejected() {
    let s = crd_strategy();
    let mut crd = crontab_crd();
    crd["spec"]["versions"][1]["storage"] = json!(true);
    let mut n = s.normalize(crd).unwrap();
    s.prepare_for_create(&mut n);
    let got = messages(s.validate_create(&n));
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got[1].starts_with("status.storedVersions: Invalid value: "));
    assert!(got[1].ends_with(": must have the storage version v1beta1"));
    assert!(got[0].starts_with("spec.versions: Invalid value: "));
    assert!(got[0].ends_with("must have exactly one version marked as storage version"));
}

#[test]
fn the_status_accepts_the_names_and_establishes_the_crd() {
    let crd = created_crd();
    let st = accepted_status_at(&crd, std::slice::from_ref(&crd), "2024-05-01T10:00:00Z");
    assert_eq!(
        st["acceptedNames"],
        json!({"plural": "crontabs", "singular": "crontab", "shortNames": ["ct"], "kind": "CronTab", "listKind": "CronTabList", "categories": ["all"]})
    );
    assert_eq!(
        st["conditions"],
        json!([
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z", "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}
        ])
    );
    assert_eq!(st["storedVersions"], json!(["v1"]));
}

#[test]
fn the_served_resource_is_described_as_discovery_shows_it() {
    let mut crd = created_crd();
    crd["status"] = accepted_status_at(&crd, &[], "t");
    let infos = resource_infos(&crd);
    assert_eq!(infos.len(), 1, "v1beta1 is not served");
    let i = &infos[0];
    assert_eq!(i.api_version(), "stable.example.com/v1");
    assert_eq!(i.resource, "crontabs");
    assert_eq!(i.kind, "CronTab");
    assert_eq!(i.list_kind(), "CronTabList");
    assert!(i.namespaced);
    assert_eq!(i.short_names, vec!["ct"]);
    assert_eq!(i.categories, vec!["all"]);
    assert!(i.has_subresource("status") && i.has_subresource("scale"));
    assert_eq!(i.definition, "com.example.stable.v1.CronTab");
}

#[test]
fn a_crontab_is_pruned_defaulted_and_validated() {
    let crd = created_crd();
    let s = custom_resource_strategy(&crd, "v1");
    let obj = s
        .normalize(json!({
            "apiVersion": "stable.example.com/v1", "kind": "CronTab",
            "metadata": {"name": "my-new-cron-object", "namespace": "default"},
            "spec": {"cronSpec": "* * * * */5", "image": "my-awesome-cron-image", "someRandomField": 42,
                     "extra": {"anything": {"goes": true}}}
        }))
        .unwrap();
    assert_eq!(
        obj["spec"],
        json!({"cronSpec": "* * * * */5", "image": "my-awesome-cron-image",
               "extra": {"anything": {"goes": true}},
               "replicas": 1, "policy": "Allow", "options": {"timeout": 30}})
    );
    assert!(s.validate_create(&obj).is_empty());
    let cr = CustomResource::new(&crd, "v1");
    assert_eq!(
        cr.unknown_fields(&json!({"spec": {"cronSpec": "x", "someRandomField": 42}})),
        vec!["spec.someRandomField"]
    );
}

#[test]
fn an_invalid_crontab_gets_kubes_causes() {
    let crd = created_crd();
    let s = custom_resource_strategy(&crd, "v1");
    let obj = s
        .normalize(json!({
            "metadata": {"name": "bad"},
            "spec": {"cronSpec": "* * * *", "replicas": "3", "policy": "Never"}
        }))
        .unwrap();
    assert_eq!(
        messages(s.validate_create(&obj)),
        vec![
            "spec.cronSpec: Invalid value: \"* * * *\": spec.cronSpec in body should match '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$'",
            "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
            "spec.policy: Unsupported value: \"Never\": supported values: \"Allow\", \"Forbid\", \"Replace\"",
        ]
    );
    let missing = s
        .normalize(json!({"metadata": {"name": "m"}, "spec": {"replicas": 11}}))
        .unwrap();
    assert_eq!(
        messages(s.validate_create(&missing)),
        vec![
            "spec.cronSpec: Required value",
            "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
        ]
    );
}

#[test]
fn crontabs_print_the_declared_columns() {
    let crd = created_crd();
    let cols = printer_columns(&crd, "v1");
    let defs = column_definitions(&cols);
    let names: Vec<&str> = defs.iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["Name", "Spec", "Replicas", "Age"]);
    assert_eq!(
        defs[1]["description"],
        "The cron spec defining the interval a CronJob is run"
    );
    let obj = json!({"metadata": {"name": "my-new-cron-object", "creationTimestamp": "2024-05-01T10:00:00Z"},
                     "spec": {"cronSpec": "* * * * */5", "replicas": 1}});
    let now = "2024-05-01T12:30:00Z".parse().unwrap();
    assert_eq!(
        table_cells_at(&cols, &obj, now),
        vec![
            json!("my-new-cron-object"),
            json!("* * * * */5"),
            json!(1),
            json!("150m")
        ]
    );
}
