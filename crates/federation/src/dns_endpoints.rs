//! The DNS records as ExternalDNS `DNSEndpoint` objects (issue 13, item 5):
//! with `--dns-bind`, the server installs ExternalDNS's CRD
//! `dnsendpoints.externaldns.k8s.io` (`externaldns.k8s.io/v1alpha1`, the
//! shape of external-dns `config/crd/standard/dnsendpoint.yaml`) and keeps
//! one `DNSEndpoint` per federated LoadBalancer Service (`<name>-service`)
//! and Ingress (`<name>-ingress`), in its namespace, labelled
//! `federation.kubernetes.io/dns=true` and owned by it (garbage collection
//! removes it with its owner). It lists exactly the names and targets the
//! embedded server answers: A / AAAA targets (without the weights of
//! `weighted`, which ExternalDNS cannot carry), CNAME targets without the
//! final dot, the `--dns-ttl`. An Ingress host outside `--dns-zone` is not
//! served by the embedded server but is listed, so ExternalDNS can publish
//! it, by its owner only (the oldest claim,
//! [`crate::dns_records::claim_hosts`]: a newer Ingress in another
//! namespace never publishes a host someone else holds). A `DNSEndpoint`
//! of that name not carrying the label is the user's and is never written.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, PostParams};
use serde_json::{Value, json};
use ubernetes_dns::RecordSet;

use crate::dns_records::{
    ClusterInfo, FederatedIngress, FederatedService, build_ingress_records, build_records,
    claim_hosts, host_in_zone,
};

/// The label on every DNSEndpoint the federation writes.
pub const DNS_LABEL: &str = "federation.kubernetes.io/dns";

/// ExternalDNS's DNSEndpoint CRD (the schema of external-dns
/// `config/crd/standard/dnsendpoint.yaml`, descriptions left out).
pub fn crd() -> Value {
    let string = json!({"type": "string"});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": "dnsendpoints.externaldns.k8s.io",
            "annotations": {
                "api-approved.kubernetes.io": "https://github.com/kubernetes-sigs/external-dns/pull/2007"
            }
        },
        "spec": {
            "group": "externaldns.k8s.io",
            "names": {
                "kind": "DNSEndpoint", "listKind": "DNSEndpointList",
                "plural": "dnsendpoints", "singular": "dnsendpoint"
            },
            "scope": "Namespaced",
            "versions": [{
                "name": "v1alpha1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "apiVersion": string, "kind": string,
                        "metadata": {"type": "object"},
                        "spec": {"type": "object", "properties": {
                            "endpoints": {"type": "array", "items": {
                                "type": "object",
                                "properties": {
                                    "dnsName": string,
                                    "labels": {"type": "object", "additionalProperties": string},
                                    "providerSpecific": {"type": "array", "items": {
                                        "type": "object",
                                        "properties": {"name": string, "value": string}
                                    }},
                                    "recordTTL": {"type": "integer", "format": "int64"},
                                    "recordType": string,
                                    "setIdentifier": string,
                                    "targets": {"type": "array", "items": string}
                                }
                            }}
                        }},
                        "status": {"type": "object", "properties": {
                            "observedGeneration": {"type": "integer", "format": "int64"}
                        }}
                    }
                }}
            }]
        }
    })
}

fn resource() -> ApiResource {
    ApiResource {
        group: "externaldns.k8s.io".into(),
        version: "v1alpha1".into(),
        api_version: "externaldns.k8s.io/v1alpha1".into(),
        kind: "DNSEndpoint".into(),
        plural: "dnsendpoints".into(),
    }
}

/// One DNSEndpoint the records call for: (namespace, name) → object.
pub type Wanted = BTreeMap<(String, String), Value>;

/// The `spec.endpoints` of one set of names.
fn endpoints(records: &BTreeMap<String, RecordSet>, ttl: u32) -> Vec<Value> {
    let mut out = Vec::new();
    for (name, set) in records {
        let dns_name = name.trim_end_matches('.');
        let mut push = |kind: &str, targets: Vec<String>| {
            if !targets.is_empty() {
                out.push(json!({
                    "dnsName": dns_name, "recordType": kind,
                    "targets": targets, "recordTTL": ttl,
                }));
            }
        };
        let ips: Vec<IpAddr> = match set {
            RecordSet::Cname(t) => {
                push("CNAME", vec![t.trim_end_matches('.').to_string()]);
                continue;
            }
            RecordSet::Addresses(ips) => ips.clone(),
            RecordSet::Weighted(w) => w.iter().map(|(ip, _)| *ip).collect(),
        };
        let ips: BTreeSet<IpAddr> = ips.into_iter().collect();
        let v4 = ips.iter().filter(|i| i.is_ipv4()).map(|i| i.to_string());
        push("A", v4.collect());
        let v6 = ips.iter().filter(|i| i.is_ipv6()).map(|i| i.to_string());
        push("AAAA", v6.collect());
    }
    out
}

fn object(
    namespace: &str,
    name: &str,
    owner: (&str, &str, &str, &str),
    endpoints: Vec<Value>,
) -> ((String, String), Value) {
    let (api_version, kind, owner_name, uid) = owner;
    let name = format!("{name}-{}", kind.to_ascii_lowercase());
    let obj = json!({
        "apiVersion": "externaldns.k8s.io/v1alpha1",
        "kind": "DNSEndpoint",
        "metadata": {
            "name": name, "namespace": namespace,
            "labels": {DNS_LABEL: "true"},
            "ownerReferences": [{
                "apiVersion": api_version, "kind": kind, "name": owner_name,
                "uid": uid, "controller": true,
            }],
        },
        "spec": {"endpoints": endpoints},
    });
    ((namespace.to_string(), name), obj)
}

/// The DNSEndpoints of every Service and Ingress: per object, the names of
/// `served` (the table the server answers, Services' and Ingresses' merged)
/// that it contributes, plus an Ingress's hosts outside the zone that it
/// owns (the oldest claim).
pub fn desired(
    federation: &str,
    suffix: &str,
    ttl: u32,
    clusters: &BTreeMap<String, ClusterInfo>,
    services: &[FederatedService],
    ingresses: &[FederatedIngress],
    served: &BTreeMap<String, RecordSet>,
) -> Wanted {
    let mut out = Wanted::new();
    let zone = format!("{}.", suffix.trim_end_matches('.')).to_ascii_lowercase();
    let answered = |own: BTreeMap<String, RecordSet>| -> BTreeMap<String, RecordSet> {
        own.into_iter()
            .filter(|(n, r)| served.get(n) == Some(r))
            .collect()
    };
    for svc in services {
        let own = answered(build_records(
            federation,
            suffix,
            clusters,
            std::slice::from_ref(svc),
        ));
        let (k, v) = object(
            &svc.namespace,
            &svc.name,
            ("v1", "Service", &svc.name, &svc.uid),
            endpoints(&own, ttl),
        );
        out.insert(k, v);
    }
    let claims = claim_hosts(&zone, ingresses);
    for (i, ing) in ingresses.iter().enumerate() {
        // Its records as if every host were in the zone: the zone's own
        // hosts count only as served, the others once.
        let mut all = ing.clone();
        let mut outside = BTreeSet::new();
        all.hosts = ing
            .hosts
            .iter()
            .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
            .filter(|h| !h.starts_with("*.") && !h.is_empty())
            .map(|h| {
                if host_in_zone(&h, &zone) {
                    h
                } else {
                    outside.insert(format!("{h}."));
                    format!("{h}.{zone}")
                }
            })
            .collect();
        let mut own = BTreeMap::new();
        for (name, set) in build_ingress_records(&zone, clusters, std::slice::from_ref(&all)) {
            let host = name.strip_suffix(&zone).unwrap_or(&name);
            let host = format!("{}.", host.trim_end_matches('.'));
            if outside.contains(&host) {
                if claims.owners.get(&host) == Some(&i) {
                    own.insert(host, set);
                }
            } else if served.get(&name) == Some(&set) {
                own.insert(name, set);
            }
        }
        let (k, v) = object(
            &ing.namespace,
            &ing.name,
            ("networking.k8s.io/v1", "Ingress", &ing.name, &ing.uid),
            endpoints(&own, ttl),
        );
        out.insert(k, v);
    }
    out
}

/// Writes the DNSEndpoints: creates or replaces the wanted ones that
/// differ from what it last wrote, deletes its own that are no longer
/// wanted; what fails is tried again on the next sync.
pub struct Writer {
    client: kube::Client,
    crd_installed: bool,
    /// What is in the API now, as far as we know: key → spec.
    written: BTreeMap<(String, String), Value>,
    listed: bool,
}

impl Writer {
    /// A writer through `client` (the federation's own API); installs the
    /// CRD now (or on a later sync if that fails).
    pub async fn start(client: kube::Client) -> Self {
        let mut w = Self {
            client,
            crd_installed: false,
            written: BTreeMap::new(),
            listed: false,
        };
        w.install().await;
        w
    }

    async fn install(&mut self) {
        let crd: CustomResourceDefinition = match serde_json::from_value(crd()) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(error = %e, "DNSEndpoint CRD");
                return;
            }
        };
        let api: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        match api.create(&PostParams::default(), &crd).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => {
                tracing::warn!(error = %e, "installing the DNSEndpoint CRD");
                return;
            }
        }
        // Until the new resource is served.
        let all: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource());
        for _ in 0..100 {
            if all.list(&ListParams::default().limit(1)).await.is_ok() {
                self.crd_installed = true;
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        tracing::warn!("the DNSEndpoint CRD is not served yet");
    }

    /// Make the DNSEndpoints in the API the `wanted` ones.
    pub async fn sync(&mut self, wanted: Wanted) {
        if !self.crd_installed {
            self.install().await;
            if !self.crd_installed {
                return;
            }
        }
        let all: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource());
        if !self.listed {
            match all
                .list(&ListParams::default().labels(&format!("{DNS_LABEL}=true")))
                .await
            {
                Ok(list) => {
                    for o in list.items {
                        let key = (
                            o.metadata.namespace.clone().unwrap_or_default(),
                            o.metadata.name.clone().unwrap_or_default(),
                        );
                        let spec = o.data.get("spec").cloned().unwrap_or(Value::Null);
                        self.written.insert(key, spec);
                    }
                    self.listed = true;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "listing DNSEndpoints");
                    return;
                }
            }
        }
        for (key, obj) in &wanted {
            let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
            if self.written.get(key) == Some(&spec) {
                continue;
            }
            match self.put(key, obj).await {
                Ok(()) => {
                    self.written.insert(key.clone(), spec);
                }
                Err(e) => {
                    self.written.remove(key);
                    tracing::debug!(namespace = %key.0, name = %key.1, error = %e, "writing a DNSEndpoint");
                }
            }
        }
        let stale: Vec<(String, String)> = self
            .written
            .keys()
            .filter(|k| !wanted.contains_key(*k))
            .cloned()
            .collect();
        for key in stale {
            let api: Api<DynamicObject> =
                Api::namespaced_with(self.client.clone(), &key.0, &resource());
            match api.delete(&key.1, &DeleteParams::default()).await {
                Ok(_) => {
                    self.written.remove(&key);
                }
                Err(kube::Error::Api(e)) if e.code == 404 => {
                    self.written.remove(&key);
                }
                Err(e) => {
                    tracing::debug!(namespace = %key.0, name = %key.1, error = %e, "deleting a DNSEndpoint");
                }
            }
        }
    }

    async fn put(&self, key: &(String, String), obj: &Value) -> anyhow::Result<()> {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), &key.0, &resource());
        let mut o: DynamicObject = serde_json::from_value(obj.clone())?;
        match api.create(&PostParams::default(), &o).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
        let current = api.get(&key.1).await?;
        let ours = current
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(DNS_LABEL))
            .is_some_and(|v| v == "true");
        if !ours {
            anyhow::bail!("a DNSEndpoint of that name without {DNS_LABEL}=true is the user's");
        }
        o.metadata.resource_version = current.metadata.resource_version;
        api.replace(&key.1, &PostParams::default(), &o).await?;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;
    use crate::dns_records::{Address, Policy, ServiceCopy};

    fn info(region: &str, zone: &str) -> ClusterInfo {
        ClusterInfo {
            zones: vec![zone.into()],
            region: Some(region.into()),
            ready: true,
        }
    }

    fn copy(ip: &str) -> ServiceCopy {
        ServiceCopy {
            addresses: vec![Address::Ip(ip.parse().unwrap())],
            ready_endpoints: 1,
        }
    }

    #[test]
    fn the_crd_is_valid_and_namespaced() {
        let crd: CustomResourceDefinition = serde_json::from_value(crd()).unwrap();
        assert_eq!(crd.spec.scope, "Namespaced");
        assert_eq!(crd.spec.names.kind, "DNSEndpoint");
    }

    #[test]
    fn endpoints_list_what_the_server_answers() {
        let clusters = BTreeMap::from([
            ("c1".to_string(), info("east", "east-1")),
            ("c2".to_string(), info("west", "west-1")),
        ]);
        let svc = FederatedService {
            uid: "u1".into(),
            namespace: "ns".into(),
            name: "web".into(),
            policy: Policy::All,
            copies: BTreeMap::from([
                ("c1".to_string(), copy("192.0.2.1")),
                (
                    "c2".to_string(),
                    ServiceCopy {
                        addresses: vec![Address::Ip("2001:db8::1".parse().unwrap())],
                        ready_endpoints: 0,
                    },
                ),
            ]),
        };
        let ing = FederatedIngress {
            uid: "u2".into(),
            namespace: "ns".into(),
            name: "shop".into(),
            hosts: vec!["shop.example.com".into(), "shop.example.org".into()],
            created: None,
            policy: Policy::All,
            copies: BTreeMap::from([("c1".to_string(), copy("198.51.100.1"))]),
        };
        let mut served =
            build_ingress_records("example.com", &clusters, std::slice::from_ref(&ing));
        served.extend(build_records(
            "fed",
            "example.com",
            &clusters,
            std::slice::from_ref(&svc),
        ));
        let wanted = desired(
            "fed",
            "example.com",
            30,
            &clusters,
            &[svc],
            std::slice::from_ref(&ing),
            &served,
        );
        let s = &wanted[&("ns".to_string(), "web-service".to_string())];
        assert_eq!(s["metadata"]["labels"][DNS_LABEL], "true");
        assert_eq!(s["metadata"]["ownerReferences"][0]["uid"], "u1");
        assert_eq!(s["metadata"]["ownerReferences"][0]["kind"], "Service");
        let e = |n: &str, t: &str, targets: &[&str]| json!({"dnsName": n, "recordType": t, "targets": targets, "recordTTL": 30});
        assert_eq!(
            s["spec"]["endpoints"],
            json!([
                e(
                    "web.ns.fed.svc.east-1.east.example.com",
                    "A",
                    &["192.0.2.1"]
                ),
                e("web.ns.fed.svc.east.example.com", "A", &["192.0.2.1"]),
                e("web.ns.fed.svc.example.com", "A", &["192.0.2.1"]),
                e(
                    "web.ns.fed.svc.west-1.west.example.com",
                    "CNAME",
                    &["web.ns.fed.svc.west.example.com"]
                ),
                e(
                    "web.ns.fed.svc.west.example.com",
                    "CNAME",
                    &["web.ns.fed.svc.example.com"]
                ),
            ])
        );
        let i = &wanted[&("ns".to_string(), "shop-ingress".to_string())];
        assert_eq!(i["metadata"]["ownerReferences"][0]["kind"], "Ingress");
        assert_eq!(
            i["spec"]["endpoints"],
            json!([
                e("shop.example.com", "A", &["198.51.100.1"]),
                e("shop.example.org", "A", &["198.51.100.1"]),
            ])
        );
        // A name the server answers from another object is not listed.
        let mut other = served.clone();
        other.insert(
            "shop.example.com.".into(),
            RecordSet::Addresses(vec!["192.0.2.9".parse().unwrap()]),
        );
        let ing2 = FederatedIngress {
            uid: "u2".into(),
            namespace: "ns".into(),
            name: "shop".into(),
            hosts: vec!["shop.example.com".into()],
            created: None,
            policy: Policy::All,
            copies: BTreeMap::from([("c1".to_string(), copy("198.51.100.1"))]),
        };
        let w = desired("fed", "example.com", 30, &clusters, &[], &[ing2], &other);
        assert_eq!(
            w[&("ns".to_string(), "shop-ingress".to_string())]["spec"]["endpoints"],
            json!([])
        );
        // A host outside the zone is published by its oldest claim only,
        // whatever the namespaces' order.
        let mut older = ing.clone();
        (older.namespace, older.uid, older.created) = (
            "zzz".into(),
            "u-old".into(),
            Some(jiff::Timestamp::from_second(1_700_000_000).unwrap()),
        );
        older.copies = BTreeMap::from([("c2".to_string(), copy("192.0.2.50"))]);
        let mut newer = ing;
        (newer.namespace, newer.created) = (
            "aaa".into(),
            Some(jiff::Timestamp::from_second(1_700_000_009).unwrap()),
        );
        let both = [newer, older];
        let served = build_ingress_records("example.com", &clusters, &both);
        let w = desired("fed", "example.com", 30, &clusters, &[], &both, &served);
        let eps = |ns: &str| {
            w[&(ns.to_string(), "shop-ingress".to_string())]["spec"]["endpoints"].clone()
        };
        assert_eq!(
            eps("zzz"),
            json!([
                e("shop.example.com", "A", &["192.0.2.50"]),
                e("shop.example.org", "A", &["192.0.2.50"]),
            ])
        );
        assert_eq!(eps("aaa"), json!([]));
    }
}
