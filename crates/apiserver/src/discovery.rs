//! Discovery documents, as kube-apiserver 1.37 serves them
//! (`k8s.io/apiserver/pkg/endpoints/discovery`, its `aggregated/` package and
//! the kube-aggregator's group ordering).
//!
//! Pure functions from the served [`ResourceInfo`]s to JSON bodies:
//! - `/api` → [`api_versions`] (`APIVersions`)
//! - `/apis` → [`api_group_list`] (`APIGroupList`)
//! - `/apis/<group>` → [`api_group`] (`APIGroup`)
//! - `/api/v1`, `/apis/<group>/<version>` → [`api_resource_list`] (`APIResourceList`)
//! - `/api` and `/apis` with the aggregated-discovery `Accept` → [`aggregated`]
//!   (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`), negotiated with
//!   [`wants_aggregated`] and answered with [`AGGREGATED_CONTENT_TYPE`].
//!
//! Ordering follows kube-apiserver: groups by the aggregator's
//! `GroupPriorityMinimum` (highest first, then by APIService name), versions
//! by `VersionPriority` and then kube-aware version order, resources sorted by
//! path (`deployments`, `deployments/scale`, `deployments/status`) as the
//! endpoint installer registers them.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use ubernetes_apimachinery::ResourceInfo;

/// The Content-Type to answer an aggregated-discovery request with: kube echoes
/// the `g`, `v` and `as` parameters it served.
pub const AGGREGATED_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether an `Accept` header asks for aggregated discovery that we serve
/// (`application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`,
/// with any extra parameter such as `profile=nopeer`, which kubectl 1.37 sends
/// first). Media ranges are tried in order, as kube-apiserver's negotiation
/// does: the first one we can serve wins, so a plain `application/json` listed
/// before the aggregated one selects the legacy documents. `v2beta1` is no
/// longer served by kube-apiserver 1.37, so it is not accepted here either and
/// the client falls back to the next range.
pub fn wants_aggregated(accept: &str) -> bool {
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default().to_ascii_lowercase();
        let mut g = None;
        let mut v = None;
        let mut as_ = None;
        for p in parts {
            if let Some((k, val)) = p.split_once('=') {
                let val = val.trim().trim_matches('"');
                match k.trim() {
                    "g" => g = Some(val.to_string()),
                    "v" => v = Some(val.to_string()),
                    "as" => as_ = Some(val.to_string()),
                    _ => {}
                }
            }
        }
        let is_json = media == "application/json";
        let is_any = media == "*/*" || media == "application/*";
        match (g.as_deref(), v.as_deref(), as_.as_deref()) {
            (Some("apidiscovery.k8s.io"), Some("v2"), Some("APIGroupDiscoveryList")) if is_json => {
                return true;
            }
            // A range with parameters we do not serve is skipped.
            (Some(_), _, _) | (_, Some(_), _) | (_, _, Some(_)) => continue,
            // A plain range we can serve: legacy discovery.
            _ if is_json || is_any => return false,
            _ => continue,
        }
    }
    false
}

/// `/api`: the `APIVersions` of the legacy core group.
pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ]
    })
}

/// The aggregator's `GroupPriorityMinimum` and `VersionPriority` of a
/// group/version: those of its APIService (kube-apiserver's list for the
/// built-in groups, 1000 / 100 for custom resources and our `federation`
/// group). The aggregator's own group, which has no APIService, is listed
/// first, as kube-apiserver lists it.
fn priority(group: &str, version: &str) -> (i32, i32) {
    if group == ubernetes_registry::kinds::apiregistration::GROUP {
        return (i32::MAX, 15);
    }
    ubernetes_registry::kinds::apiregistration::priority(group, version)
}

/// Kube-aware version order (`version.CompareKubeAwareVersionStrings`):
/// GA before beta before alpha, higher numbers first, non-kube strings last
/// in lexical order. `Ordering::Less` means `a` sorts first.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    fn parse(v: &str) -> Option<(u8, u64, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if digits.is_empty() || digits.starts_with('0') {
            return None;
        }
        let major = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((0, major, 0));
        }
        let (stage, num) = if let Some(n) = tail.strip_prefix("beta") {
            (1, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (2, n)
        } else {
            return None;
        };
        if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit()) || num.starts_with('0') {
            return None;
        }
        Some((stage, major, num.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some((sa, ma, na)), Some((sb, mb, nb))) => sa
            .cmp(&sb)
            .then_with(|| mb.cmp(&ma))
            .then_with(|| nb.cmp(&na)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// The non-core groups served, each with its versions, in kube's order.
fn ordered_groups(resources: &[ResourceInfo]) -> Vec<(String, Vec<String>)> {
    // (group priority, APIService name, version priority, group, version)
    let mut services: Vec<(i32, String, i32, String, String)> = Vec::new();
    for r in resources.iter().filter(|r| !r.group.is_empty()) {
        if services.iter().any(|s| s.3 == r.group && s.4 == r.version) {
            continue;
        }
        let (gp, vp) = priority(&r.group, &r.version);
        services.push((
            gp,
            format!("{}.{}", r.version, r.group),
            vp,
            r.group.clone(),
            r.version.clone(),
        ));
    }
    services.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut groups: Vec<(String, Vec<(i32, String)>)> = Vec::new();
    for (_, _, vp, group, version) in services {
        match groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, versions)) => versions.push((vp, version)),
            None => groups.push((group, vec![(vp, version)])),
        }
    }
    groups
        .into_iter()
        .map(|(g, mut versions)| {
            versions.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| compare_versions(&a.1, &b.1)));
            (g, versions.into_iter().map(|(_, v)| v).collect())
        })
        .collect()
}

fn group_json(group: &str, versions: &[String]) -> Value {
    let gv = |v: &String| json!({"groupVersion": format!("{group}/{v}"), "version": v});
    let mut m = Map::new();
    m.insert("name".into(), json!(group));
    m.insert(
        "versions".into(),
        Value::Array(versions.iter().map(gv).collect()),
    );
    if let Some(first) = versions.first() {
        m.insert("preferredVersion".into(), gv(first));
    }
    Value::Object(m)
}

/// `/apis`: every non-core group with its versions and preferred version.
pub fn api_group_list(resources: &[ResourceInfo]) -> Value {
    let groups: Vec<Value> = ordered_groups(resources)
        .iter()
        .map(|(g, v)| group_json(g, v))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>`: `None` when no resource of that group is served.
pub fn api_group(resources: &[ResourceInfo], group: &str) -> Option<Value> {
    if group.is_empty() {
        return None;
    }
    let groups = ordered_groups(resources);
    let (g, versions) = groups.iter().find(|(g, _)| g == group)?;
    let mut v = json!({"kind": "APIGroup", "apiVersion": "v1"});
    if let (Value::Object(out), Value::Object(body)) = (&mut v, group_json(g, versions)) {
        out.extend(body);
    }
    Some(v)
}

/// The group/version/kind a resource is stored as, where it differs from the
/// one served (kube's storage versions, as the kind declares them): the hash
/// in discovery is of that.
fn storage_gvk(r: &ResourceInfo) -> (String, String, String) {
    match ubernetes_registry::kinds::stored_as(&r.group, &r.version, &r.resource) {
        Some(s) => (s.group.into(), s.version.into(), s.kind.into()),
        None => (r.group.clone(), r.version.clone(), r.kind.clone()),
    }
}

/// `discovery.StorageVersionHash`: base64 of the first 8 bytes of
/// sha256(`group/version/kind`) of the storage version.
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    if kind.is_empty() {
        return String::new();
    }
    let digest = Sha256::digest(format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

/// Whether a resource has storage behind it (virtual resources such as
/// SelfSubjectAccessReview, TokenReview, Binding or ComponentStatus carry no
/// storageVersionHash; every stored one can be watched).
fn has_storage(r: &ResourceInfo) -> bool {
    r.verbs.iter().any(|v| v == "watch")
}

fn sorted_verbs(verbs: &[String]) -> Vec<String> {
    let mut v = verbs.to_vec();
    v.sort();
    v.dedup();
    v
}

/// `/api/v1` or `/apis/<group>/<version>`; `None` when nothing is served there.
pub fn api_resource_list(resources: &[ResourceInfo], group: &str, version: &str) -> Option<Value> {
    let in_gv: Vec<&ResourceInfo> = resources
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    if in_gv.is_empty() {
        return None;
    }
    // path → entry, sorted by path as the endpoint installer registers them.
    let mut entries: BTreeMap<String, Value> = BTreeMap::new();
    for r in &in_gv {
        let mut m = Map::new();
        m.insert("name".into(), json!(r.resource));
        m.insert("singularName".into(), json!(r.singular));
        m.insert("namespaced".into(), json!(r.namespaced));
        m.insert("kind".into(), json!(r.kind));
        m.insert("verbs".into(), json!(sorted_verbs(&r.verbs)));
        if !r.short_names.is_empty() {
            m.insert("shortNames".into(), json!(r.short_names));
        }
        if !r.categories.is_empty() {
            m.insert("categories".into(), json!(r.categories));
        }
        if has_storage(r) {
            let (g, v, k) = storage_gvk(r);
            m.insert(
                "storageVersionHash".into(),
                json!(storage_version_hash(&g, &v, &k)),
            );
        }
        entries.insert(r.resource.clone(), Value::Object(m));
        for s in &r.subresources {
            let mut m = Map::new();
            m.insert("name".into(), json!(format!("{}/{}", r.resource, s.name)));
            m.insert("singularName".into(), json!(""));
            m.insert("namespaced".into(), json!(r.namespaced));
            if s.group != r.group || s.version != r.version {
                m.insert("group".into(), json!(s.group));
                m.insert("version".into(), json!(s.version));
            }
            m.insert("kind".into(), json!(s.kind));
            m.insert("verbs".into(), json!(sorted_verbs(&s.verbs)));
            entries.insert(format!("{}/{}", r.resource, s.name), Value::Object(m));
        }
    }
    let mut out = Map::new();
    out.insert("kind".into(), json!("APIResourceList"));
    // The legacy `/api/v1` document carries no apiVersion (kube's legacy quirk).
    if !group.is_empty() {
        out.insert("apiVersion".into(), json!("v1"));
    }
    out.insert(
        "groupVersion".into(),
        json!(if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        }),
    );
    out.insert(
        "resources".into(),
        Value::Array(entries.into_values().collect()),
    );
    Some(Value::Object(out))
}

fn response_kind(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "version": version, "kind": kind})
}

fn version_discovery(resources: &[ResourceInfo], group: &str, version: &str) -> Value {
    let mut in_gv: Vec<&ResourceInfo> = resources
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    in_gv.sort_by(|a, b| a.resource.cmp(&b.resource));
    let items: Vec<Value> = in_gv
        .iter()
        .map(|r| {
            let mut m = Map::new();
            m.insert("resource".into(), json!(r.resource));
            // Same group/version as the GV: empty, as APIResource omits them.
            m.insert("responseKind".into(), response_kind("", "", &r.kind));
            m.insert(
                "scope".into(),
                json!(if r.namespaced {
                    "Namespaced"
                } else {
                    "Cluster"
                }),
            );
            m.insert("singularResource".into(), json!(r.singular));
            m.insert("verbs".into(), json!(sorted_verbs(&r.verbs)));
            if !r.short_names.is_empty() {
                m.insert("shortNames".into(), json!(r.short_names));
            }
            if !r.categories.is_empty() {
                m.insert("categories".into(), json!(r.categories));
            }
            if !r.subresources.is_empty() {
                let mut subs: Vec<_> = r.subresources.iter().collect();
                subs.sort_by(|a, b| a.name.cmp(&b.name));
                let subs: Vec<Value> = subs
                    .into_iter()
                    .map(|s| {
                        let (g, v) = if s.group == r.group && s.version == r.version {
                            ("", "")
                        } else {
                            (s.group.as_str(), s.version.as_str())
                        };
                        json!({
                            "subresource": s.name,
                            "responseKind": response_kind(g, v, &s.kind),
                            "verbs": sorted_verbs(&s.verbs),
                        })
                    })
                    .collect();
                m.insert("subresources".into(), Value::Array(subs));
            }
            Value::Object(m)
        })
        .collect();
    json!({"version": version, "resources": items, "freshness": "Current"})
}

/// Aggregated discovery (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`):
/// `legacy = true` for `/api` (the core group only), `false` for `/apis`
/// (every other group, in the same order as [`api_group_list`]).
pub fn aggregated(resources: &[ResourceInfo], legacy: bool) -> Value {
    let items: Vec<Value> = if legacy {
        if resources.iter().any(|r| r.group.is_empty()) {
            vec![json!({
                "metadata": {},
                "versions": [version_discovery(resources, "", "v1")],
            })]
        } else {
            Vec::new()
        }
    } else {
        ordered_groups(resources)
            .iter()
            .map(|(g, versions)| {
                let versions: Vec<Value> = versions
                    .iter()
                    .map(|v| version_discovery(resources, g, v))
                    .collect();
                json!({"metadata": {"name": g}, "versions": versions})
            })
            .collect()
    };
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_version_hash_matches_kube_for_deployments() {
        assert_eq!(
            storage_version_hash("apps", "v1", "Deployment"),
            "8aSe+NMegvE="
        );
        assert_eq!(storage_version_hash("", "v1", "Event"), "r2yiGXH7wu8=");
    }

    #[test]
    fn kube_aware_versions_put_ga_before_beta_before_alpha() {
        let mut v = vec!["v1alpha1", "v1", "v2beta1", "v2", "foo", "v1beta1", "v10"];
        v.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(
            v,
            vec!["v10", "v2", "v1", "v2beta1", "v1beta1", "v1alpha1", "foo"]
        );
    }

    #[test]
    fn kubectl_accept_header_selects_aggregated_v2() {
        let accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
        assert!(wants_aggregated(accept));
    }

    #[test]
    fn plain_json_or_v2beta1_only_gets_legacy_discovery() {
        assert!(!wants_aggregated("application/json"));
        assert!(!wants_aggregated(
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
        ));
        assert!(!wants_aggregated("application/json, */*"));
        assert!(!wants_aggregated(""));
    }

    #[test]
    fn a_plain_range_listed_first_wins_over_aggregated() {
        assert!(!wants_aggregated(
            "application/json,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        ));
    }
}
