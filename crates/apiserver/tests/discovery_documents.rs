//! Discovery documents built from a hand-made set of ResourceInfos, checked
//! against the shapes kube-apiserver 1.37 serves.

// Tests fail by panicking: unwrap is the assertion.
#![allow(clippy::unwrap_used)]

use serde_json::json;
use ubernetes_apimachinery::resource::{ResourceInfo, SubresourceInfo};
use ubernetes_apiserver::discovery::{
    AGGREGATED_CONTENT_TYPE, aggregated, api_group, api_group_list, api_resource_list,
    api_versions, wants_aggregated,
};

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn info(group: &str, version: &str, resource: &str, kind: &str, namespaced: bool) -> ResourceInfo {
    ResourceInfo {
        group: group.into(),
        version: version.into(),
        resource: resource.into(),
        singular: kind.to_lowercase(),
        kind: kind.into(),
        namespaced,
        verbs: ResourceInfo::standard_verbs(),
        short_names: vec![],
        categories: vec![],
        subresources: vec![],
        definition: String::new(),
    }
}

fn sub(name: &str, group: &str, version: &str, kind: &str, verbs: &[&str]) -> SubresourceInfo {
    SubresourceInfo {
        name: name.into(),
        kind: kind.into(),
        group: group.into(),
        version: version.into(),
        verbs: strs(verbs),
    }
}

fn served() -> Vec<ResourceInfo> {
    let mut deploy = info("apps", "v1", "deployments", "Deployment", true);
    deploy.short_names = strs(&["deploy"]);
    deploy.categories = strs(&["all"]);
    deploy.subresources = vec![
        sub(
            "status",
            "apps",
            "v1",
            "Deployment",
            &["get", "patch", "update"],
        ),
        sub(
            "scale",
            "autoscaling",
            "v1",
            "Scale",
            &["update", "get", "patch"],
        ),
    ];
    let mut ns = info("", "v1", "namespaces", "Namespace", false);
    ns.short_names = strs(&["ns"]);
    ns.verbs = strs(&[
        "create", "delete", "get", "list", "patch", "update", "watch",
    ]);
    ns.subresources = vec![
        sub("status", "", "v1", "Namespace", &["get", "patch", "update"]),
        sub("finalize", "", "v1", "Namespace", &["update"]),
    ];
    let mut cm = info("", "v1", "configmaps", "ConfigMap", true);
    cm.short_names = strs(&["cm"]);
    let mut ssar = info(
        "authorization.k8s.io",
        "v1",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
        false,
    );
    ssar.verbs = strs(&["create"]);
    let mut cluster = info("federation", "v1beta1", "clusters", "Cluster", false);
    cluster.subresources = vec![sub(
        "status",
        "federation",
        "v1beta1",
        "Cluster",
        &["get", "patch", "update"],
    )];
    vec![
        cluster,
        info("batch", "v1", "jobs", "Job", true),
        info(
            "autoscaling",
            "v1",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            true,
        ),
        info(
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            true,
        ),
        ssar,
        info("rbac.authorization.k8s.io", "v1", "roles", "Role", true),
        deploy,
        ns,
        cm,
        info("events.k8s.io", "v1", "events", "Event", true),
        info("coordination.k8s.io", "v1", "leases", "Lease", true),
    ]
}

#[test]
fn api_versions_lists_v1_with_the_server_address() {
    assert_eq!(
        api_versions("10.0.0.1:6443"),
        json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "10.0.0.1:6443"}]
        })
    );
}

#[test]
fn groups_come_in_kube_aggregator_priority_order() {
    let list = api_group_list(&served());
    assert_eq!(list["kind"], "APIGroupList");
    assert_eq!(list["apiVersion"], "v1");
    let names: Vec<&str> = list["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        vec![
            "apps",
            "events.k8s.io",
            "authorization.k8s.io",
            "autoscaling",
            "batch",
            "rbac.authorization.k8s.io",
            "coordination.k8s.io",
            "federation",
        ]
    );
}

#[test]
fn autoscaling_prefers_v2_and_lists_it_first() {
    let g = api_group(&served(), "autoscaling").unwrap();
    assert_eq!(
        g,
        json!({
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": "autoscaling",
            "versions": [
                {"groupVersion": "autoscaling/v2", "version": "v2"},
                {"groupVersion": "autoscaling/v1", "version": "v1"}
            ],
            "preferredVersion": {"groupVersion": "autoscaling/v2", "version": "v2"}
        })
    );
}

#[test]
fn federation_group_is_served_with_v1beta1() {
    let g = api_group(&served(), "federation").unwrap();
    assert_eq!(g["preferredVersion"]["groupVersion"], "federation/v1beta1");
    assert!(api_group(&served(), "nope.example.com").is_none());
    assert!(api_group(&served(), "").is_none());
}

#[test]
fn apps_v1_resource_list_has_sorted_entries_with_subresources() {
    let l = api_resource_list(&served(), "apps", "v1").unwrap();
    assert_eq!(
        l,
        json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": "apps/v1",
            "resources": [
                {
                    "name": "deployments",
                    "singularName": "deployment",
                    "namespaced": true,
                    "kind": "Deployment",
                    "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                    "shortNames": ["deploy"],
                    "categories": ["all"],
                    "storageVersionHash": "8aSe+NMegvE="
                },
                {
                    "name": "deployments/scale",
                    "singularName": "",
                    "namespaced": true,
                    "group": "autoscaling",
                    "version": "v1",
                    "kind": "Scale",
                    "verbs": ["get", "patch", "update"]
                },
                {
                    "name": "deployments/status",
                    "singularName": "",
                    "namespaced": true,
                    "kind": "Deployment",
                    "verbs": ["get", "patch", "update"]
                }
            ]
        })
    );
}

#[test]
fn core_v1_resource_list_has_no_api_version_and_includes_finalize() {
    let l = api_resource_list(&served(), "", "v1").unwrap();
    assert!(l.get("apiVersion").is_none());
    assert_eq!(l["groupVersion"], "v1");
    let names: Vec<&str> = l["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        vec![
            "configmaps",
            "namespaces",
            "namespaces/finalize",
            "namespaces/status"
        ]
    );
    assert_eq!(l["resources"][0]["storageVersionHash"], "qFsyl6wFWjQ=");
    assert_eq!(l["resources"][1]["storageVersionHash"], "Q3oi5N2YM8M=");
    assert!(api_resource_list(&served(), "apps", "v2").is_none());
}

#[test]
fn storage_hash_uses_the_storage_version_and_virtual_resources_have_none() {
    let ev = api_resource_list(&served(), "events.k8s.io", "v1").unwrap();
    assert_eq!(ev["resources"][0]["storageVersionHash"], "r2yiGXH7wu8=");
    let hpa = api_resource_list(&served(), "autoscaling", "v1").unwrap();
    assert_eq!(hpa["resources"][0]["storageVersionHash"], "qwQve8ut294=");
    let ssar = api_resource_list(&served(), "authorization.k8s.io", "v1").unwrap();
    assert!(ssar["resources"][0].get("storageVersionHash").is_none());
    assert_eq!(ssar["resources"][0]["verbs"], json!(["create"]));
}

#[test]
fn aggregated_apis_lists_groups_with_resources_and_subresources() {
    let d = aggregated(&served(), false);
    assert_eq!(d["kind"], "APIGroupDiscoveryList");
    assert_eq!(d["apiVersion"], "apidiscovery.k8s.io/v2");
    let apps = &d["items"][0];
    assert_eq!(apps["metadata"], json!({"name": "apps"}));
    assert_eq!(
        apps["versions"][0],
        json!({
            "version": "v1",
            "resources": [{
                "resource": "deployments",
                "responseKind": {"group": "", "version": "", "kind": "Deployment"},
                "scope": "Namespaced",
                "singularResource": "deployment",
                "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                "shortNames": ["deploy"],
                "categories": ["all"],
                "subresources": [
                    {
                        "subresource": "scale",
                        "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                        "verbs": ["get", "patch", "update"]
                    },
                    {
                        "subresource": "status",
                        "responseKind": {"group": "", "version": "", "kind": "Deployment"},
                        "verbs": ["get", "patch", "update"]
                    }
                ]
            }],
            "freshness": "Current"
        })
    );
    let autoscaling = d["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["metadata"]["name"] == "autoscaling")
        .unwrap();
    assert_eq!(autoscaling["versions"][0]["version"], "v2");
    assert_eq!(autoscaling["versions"][1]["version"], "v1");
    assert!(
        d["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["metadata"]["name"] != "")
    );
}

#[test]
fn aggregated_api_serves_only_the_core_group() {
    let d = aggregated(&served(), true);
    let items = d["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["metadata"], json!({}));
    let res = items[0]["versions"][0]["resources"].as_array().unwrap();
    assert_eq!(res.len(), 2);
    assert_eq!(res[1]["resource"], "namespaces");
    assert_eq!(res[1]["scope"], "Cluster");
    assert_eq!(res[1]["subresources"][0]["subresource"], "finalize");
}

#[test]
fn content_type_echoes_group_version_and_kind() {
    assert!(AGGREGATED_CONTENT_TYPE.contains("g=apidiscovery.k8s.io"));
    assert!(AGGREGATED_CONTENT_TYPE.contains("v=v2"));
    assert!(AGGREGATED_CONTENT_TYPE.contains("as=APIGroupDiscoveryList"));
    assert!(wants_aggregated(AGGREGATED_CONTENT_TYPE));
}
