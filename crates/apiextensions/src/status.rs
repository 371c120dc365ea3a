//! What kube's CRD controllers derive from a CRD: the served
//! [`ResourceInfo`]s (one per served version, as the CRD handler and
//! discovery show them) and the status the naming and establishing
//! controllers write (`controller/status/naming_controller.go`,
//! `controller/establish`): `acceptedNames`, `NamesAccepted`
//! (`NoConflicts`, or `PluralConflict`/`SingularConflict`/
//! `ShortNamesConflict`/`KindConflict`/`ListKindConflict` against the other
//! CRDs of the group) and `Established` (`InitialNamesAccepted`).

use std::collections::HashSet;

use serde_json::{Map, Value, json};
use ubernetes_apimachinery::{ResourceInfo, SubresourceInfo};

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// The versions of a CRD (`spec.versions`).
pub fn versions(crd: &Value) -> &[Value] {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// One version of a CRD by name.
pub fn version<'a>(crd: &'a Value, name: &str) -> Option<&'a Value> {
    versions(crd)
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(name))
}

/// The storage version's name.
pub fn storage_version(crd: &Value) -> Option<&str> {
    versions(crd)
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").and_then(Value::as_str))
}

/// The names served: `status.acceptedNames` once the naming controller set
/// them, else `spec.names`.
pub fn served_names(crd: &Value) -> &Value {
    match crd.pointer("/status/acceptedNames") {
        Some(n) if !s(n, "/plural").is_empty() && !s(n, "/kind").is_empty() => n,
        _ => crd.pointer("/spec/names").unwrap_or(&Value::Null),
    }
}

/// kube's OpenAPI definition name of a custom kind: the reversed group,
/// then version and kind (`com.example.stable.v1.CronTab`).
pub fn definition_name(group: &str, version: &str, kind: &str) -> String {
    let mut parts: Vec<&str> = group.split('.').collect();
    parts.reverse();
    format!("{}.{version}.{kind}", parts.join("."))
}

/// The subresources of one version (`status`, `scale`), if declared.
pub fn subresources<'a>(crd: &'a Value, version_name: &str) -> Option<&'a Value> {
    version(crd, version_name).and_then(|v| v.get("subresources"))
}

/// One [`ResourceInfo`] per served version, in `spec.versions` order.
pub fn resource_infos(crd: &Value) -> Vec<ResourceInfo> {
    versions(crd)
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .map(|v| version_info(crd, v))
        .collect()
}

/// The [`ResourceInfo`] of one version (served or not) of a CRD.
pub fn resource_info(crd: &Value, version_name: &str) -> ResourceInfo {
    let fallback = json!({"name": version_name});
    version_info(crd, version(crd, version_name).unwrap_or(&fallback))
}

fn version_info(crd: &Value, v: &Value) -> ResourceInfo {
    let group = s(crd, "/spec/group").to_string();
    let names = served_names(crd);
    let kind = s(names, "/kind").to_string();
    let plural = s(names, "/plural").to_string();
    let singular = match s(names, "/singular") {
        "" => kind.to_lowercase(),
        x => x.to_string(),
    };
    let namespaced = s(crd, "/spec/scope") != "Cluster";
    let name = s(v, "/name").to_string();
    let sub_verbs: Vec<String> = ["get", "patch", "update"].map(String::from).to_vec();
    let mut subs = Vec::new();
    if v.pointer("/subresources/status")
        .is_some_and(Value::is_object)
    {
        subs.push(SubresourceInfo {
            name: "status".into(),
            kind: kind.clone(),
            group: group.clone(),
            version: name.clone(),
            verbs: sub_verbs.clone(),
        });
    }
    if v.pointer("/subresources/scale")
        .is_some_and(Value::is_object)
    {
        subs.push(SubresourceInfo {
            name: "scale".into(),
            kind: "Scale".into(),
            group: "autoscaling".into(),
            version: "v1".into(),
            verbs: sub_verbs,
        });
    }
    ResourceInfo {
        definition: definition_name(&group, &name, &kind),
        group,
        version: name,
        resource: plural,
        singular,
        kind,
        namespaced,
        verbs: ResourceInfo::standard_verbs(),
        short_names: strings(names.get("shortNames")),
        categories: strings(names.get("categories")),
        subresources: subs,
    }
}

/// [`accepted_status_at`] as of now.
pub fn accepted_status(crd: &Value, existing_crds: &[Value]) -> Value {
    let now = jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .unwrap_or_else(|_| jiff::Timestamp::now());
    accepted_status_at(
        crd,
        existing_crds,
        &now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    )
}

fn in_use(requested: &str, accepted: &str, used: &HashSet<String>) -> Option<String> {
    if requested == accepted || !used.contains(requested) {
        None
    } else {
        Some(format!("\"{requested}\" is already in use"))
    }
}

/// The CRD's new `status` after the naming and establishing controllers
/// ran: `acceptedNames`, `conditions` (`NamesAccepted`, `Established`;
/// `lastTransitionTime` = `now` only where a condition's status changed),
/// and `storedVersions` (kept, or the storage version). `existing_crds` may
/// include `crd` itself (matched by name and skipped).
pub fn accepted_status_at(crd: &Value, existing_crds: &[Value], now: &str) -> Value {
    let name = s(crd, "/metadata/name");
    let group = s(crd, "/spec/group");
    let mut resources = HashSet::new();
    let mut kinds = HashSet::new();
    for other in existing_crds {
        if s(other, "/metadata/name") == name || s(other, "/spec/group") != group {
            continue;
        }
        let Some(acc) = other.pointer("/status/acceptedNames") else {
            continue;
        };
        for p in ["/plural", "/singular"] {
            if !s(acc, p).is_empty() {
                resources.insert(s(acc, p).to_string());
            }
        }
        resources.extend(strings(acc.get("shortNames")));
        for p in ["/kind", "/listKind"] {
            if !s(acc, p).is_empty() {
                kinds.insert(s(acc, p).to_string());
            }
        }
    }
    let requested = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let accepted = crd
        .pointer("/status/acceptedNames")
        .cloned()
        .unwrap_or(json!({}));
    let mut new_names = match &accepted {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    let mut failure: Option<(&str, String)> = None;
    for (field, reason, used) in [
        ("plural", "PluralConflict", &resources),
        ("singular", "SingularConflict", &resources),
    ] {
        let req = s(&requested, &format!("/{field}"));
        match in_use(req, s(&accepted, &format!("/{field}")), used) {
            Some(msg) => failure = Some((reason, msg)),
            None => {
                new_names.insert(field.into(), json!(req));
            }
        }
    }
    let req_short = strings(requested.get("shortNames"));
    let acc_short = strings(accepted.get("shortNames"));
    if req_short != acc_short {
        let errs: Vec<String> = req_short
            .iter()
            .filter(|n| !acc_short.contains(n))
            .filter_map(|n| in_use(n, "", &resources))
            .collect();
        if errs.is_empty() {
            new_names.insert("shortNames".into(), json!(req_short));
        } else {
            let msg = if errs.len() == 1 {
                errs[0].clone()
            } else {
                format!("[{}]", errs.join(", "))
            };
            failure = Some(("ShortNamesConflict", msg));
        }
    }
    for (field, reason) in [("kind", "KindConflict"), ("listKind", "ListKindConflict")] {
        let req = s(&requested, &format!("/{field}"));
        match in_use(req, s(&accepted, &format!("/{field}")), &kinds) {
            Some(msg) => failure = Some((reason, msg)),
            None => {
                new_names.insert(field.into(), json!(req));
            }
        }
    }
    match requested.get("categories") {
        Some(c) => {
            new_names.insert("categories".into(), c.clone());
        }
        None => {
            new_names.remove("categories");
        }
    }
    if new_names
        .get("shortNames")
        .is_some_and(|v| v.as_array().is_some_and(Vec::is_empty))
    {
        new_names.remove("shortNames");
    }
    let ordered = order_names(new_names);

    let (na_status, na_reason, na_message) = match &failure {
        None => (
            "True",
            "NoConflicts".to_string(),
            "no conflicts found".to_string(),
        ),
        Some((reason, msg)) => ("False", reason.to_string(), msg.clone()),
    };
    let old_conditions: Vec<Value> = crd
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let old = |t: &str| {
        old_conditions
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(t))
            .cloned()
    };
    let condition = |t: &str, status: &str, reason: &str, message: &str| {
        let prev = old(t);
        let since = match &prev {
            Some(p) if p.get("status").and_then(Value::as_str) == Some(status) => p
                .get("lastTransitionTime")
                .cloned()
                .unwrap_or_else(|| json!(now)),
            _ => json!(now),
        };
        json!({"type": t, "status": status, "lastTransitionTime": since, "reason": reason, "message": message})
    };
    let names_accepted = condition("NamesAccepted", na_status, &na_reason, &na_message);
    let established = match old("Established") {
        Some(e) if e.get("status").and_then(Value::as_str) == Some("True") => e,
        _ if failure.is_none() => condition(
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
        ),
        _ => condition(
            "Established",
            "False",
            "NotAccepted",
            "not all names are accepted",
        ),
    };
    let mut conditions: Vec<Value> = old_conditions
        .into_iter()
        .filter(|c| {
            let t = c.get("type").and_then(Value::as_str);
            t != Some("NamesAccepted") && t != Some("Established")
        })
        .collect();
    conditions.insert(0, established);
    conditions.insert(0, names_accepted);

    let mut stored = strings(crd.pointer("/status/storedVersions"));
    if stored.is_empty()
        && let Some(v) = storage_version(crd)
    {
        stored.push(v.to_string());
    }
    json!({
        "acceptedNames": ordered,
        "conditions": conditions,
        "storedVersions": stored,
    })
}

/// `CustomResourceDefinitionNames` members in kube's JSON order.
fn order_names(mut m: Map<String, Value>) -> Value {
    let mut out = Map::new();
    for k in [
        "plural",
        "singular",
        "shortNames",
        "kind",
        "listKind",
        "categories",
    ] {
        if let Some(v) = m.remove(k)
            && !(v.as_str() == Some("") && (k == "singular" || k == "listKind"))
        {
            out.insert(k.into(), v);
        }
    }
    out.extend(m);
    Value::Object(out)
}

/// Whether the CRD's `Established` condition is `True`.
pub fn is_established(crd: &Value) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Established")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    fn crd(name: &str, plural: &str, kind: &str, short: &[&str]) -> Value {
        json!({
            "metadata": {"name": format!("{plural}.example.com"), "uid": name},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": plural, "singular": plural.trim_end_matches('s'), "kind": kind, "listKind": format!("{kind}List"), "shortNames": short},
                     "versions": [{"name": "v1", "served": true, "storage": true},
                                  {"name": "v2", "served": false, "storage": false}]}
        })
    }

    #[test]
    fn fresh_names_are_accepted_and_established() {
        let c = crd("a", "foos", "Foo", &["fo"]);
        let st = accepted_status_at(&c, &[], "2024-01-01T00:00:00Z");
        assert_eq!(
            st["acceptedNames"],
            json!({"plural": "foos", "singular": "foo", "shortNames": ["fo"], "kind": "Foo", "listKind": "FooList"})
        );
        assert_eq!(st["conditions"][0]["type"], "NamesAccepted");
        assert_eq!(st["conditions"][0]["status"], "True");
        assert_eq!(st["conditions"][0]["reason"], "NoConflicts");
        assert_eq!(st["conditions"][1]["type"], "Established");
        assert_eq!(st["conditions"][1]["status"], "True");
        assert_eq!(st["conditions"][1]["reason"], "InitialNamesAccepted");
        assert_eq!(st["storedVersions"], json!(["v1"]));
    }

    #[test]
    fn a_kind_taken_by_another_crd_of_the_group_is_a_conflict() {
        let mut other = crd("b", "bars", "Foo", &[]);
        other["spec"]["names"]["listKind"] = json!("BarList");
        other["status"] = accepted_status_at(&other, &[], "t");
        let c = crd("a", "foos", "Foo", &[]);
        let st = accepted_status_at(&c, &[other], "t2");
        assert_eq!(st["conditions"][0]["status"], "False");
        assert_eq!(st["conditions"][0]["reason"], "KindConflict");
        assert_eq!(st["conditions"][0]["message"], "\"Foo\" is already in use");
        assert_eq!(st["conditions"][1]["status"], "False");
        assert_eq!(st["conditions"][1]["reason"], "NotAccepted");
        assert!(st["acceptedNames"].get("kind").is_none());
    }

    #[test]
    fn a_short_name_equal_to_another_plural_is_a_conflict() {
        let mut other = crd("b", "bars", "Bar", &[]);
        other["status"] = accepted_status_at(&other, &[], "t");
        let c = crd("a", "foos", "Foo", &["bars"]);
        let st = accepted_status_at(&c, &[other], "t");
        assert_eq!(st["conditions"][0]["reason"], "ShortNamesConflict");
    }

    #[test]
    fn transition_time_stays_when_the_status_does_not_change() {
        let mut c = crd("a", "foos", "Foo", &[]);
        c["status"] = accepted_status_at(&c, &[], "first");
        let again = accepted_status_at(&c, &[], "second");
        assert_eq!(again["conditions"][0]["lastTransitionTime"], "first");
        assert!(is_established(&c));
    }

    #[test]
    fn resource_infos_cover_served_versions_only() {
        let mut c = crd("a", "foos", "Foo", &["fo"]);
        c["spec"]["versions"][0]["subresources"] = json!({"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}});
        let infos = resource_infos(&c);
        assert_eq!(infos.len(), 1);
        let i = &infos[0];
        assert_eq!(i.api_version(), "example.com/v1");
        assert_eq!(i.resource, "foos");
        assert_eq!(i.singular, "foo");
        assert!(i.namespaced);
        assert_eq!(i.short_names, vec!["fo"]);
        assert_eq!(i.definition, "com.example.v1.Foo");
        assert_eq!(i.subresources[0].name, "status");
        assert_eq!(i.subresources[1].kind, "Scale");
        assert_eq!(i.subresources[1].group, "autoscaling");
    }
}
