//! ClusterIP allocation for Services from `--service-cluster-ip-range`
//! (allocation only: nothing routes these addresses). The first address of
//! the range belongs to the `default/kubernetes` Service, as in kube-apiserver.
//!
//! Used addresses are read from storage at each allocation (no separate
//! bitmap to keep consistent); in-flight allocations are remembered briefly so
//! two concurrent creates never get the same address.
//!
//! Several servers on one etcd allocate too: each address handed out is
//! first claimed with a create-if-absent of its own key
//! (`/registry/ubernetes/clusterips/IP`, value `NAMESPACE/NAME`), the role
//! kube 1.33+ gives `IPAddress` objects. Of two servers picking the same
//! free address only one create succeeds; the other takes the next one. A
//! claim whose Service does not hold the address (deleted, or its create
//! failed after admission) is stale after [`CLAIM_GRACE`] and is taken
//! over with a compare-and-swap on its revision, so claims need no cleanup.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use ipnet::Ipv4Net;
use parking_lot::Mutex;
use serde_json::{Value, json};
use ubernetes_apimachinery::ApiError;
use ubernetes_apimachinery::error::field;
use ubernetes_storage::Storage;

use crate::admission::{Admission, Attributes, Operation};
use crate::registry::Registry;

/// Where the per-address claims live (outside every resource's prefix).
const CLAIM_PREFIX: &str = "/registry/ubernetes/clusterips/";

/// How long a claim is kept for a Service that does not hold its address
/// yet (the create it was made for is still on its way to the store).
const CLAIM_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// What a claim records: whose it is and when it was made.
#[derive(serde::Serialize, serde::Deserialize)]
struct Claim {
    service: String,
    /// Seconds since the epoch.
    at: i64,
}

/// Allocates ClusterIPs.
pub struct ClusterIpAllocator {
    net: Ipv4Net,
    storage: Arc<dyn Storage>,
    prefix: String,
    state: Mutex<AllocState>,
}

#[derive(Default)]
struct AllocState {
    next: u32,
    in_flight: HashSet<Ipv4Addr>,
}

impl ClusterIpAllocator {
    /// An allocator over `cidr` (IPv4).
    /// The Service kind's admission plugin (its [`crate::strategy::AdmissionFn`]),
    /// on `--service-cluster-ip-range`.
    pub fn plugin(registry: &Registry) -> Result<Arc<dyn Admission>, ApiError> {
        Ok(Arc::new(Self::new(
            &registry.options().service_cluster_ip_range,
            registry,
        )?))
    }

    pub fn new(cidr: &str, registry: &Registry) -> Result<Self, ApiError> {
        let net: Ipv4Net = cidr.parse().map_err(|e| {
            ApiError::internal(format!(
                "--service-cluster-ip-range {cidr:?} is not an IPv4 CIDR: {e}"
            ))
        })?;
        Ok(Self {
            net,
            storage: registry.storage().clone(),
            prefix: "/registry/core/services/".into(),
            state: Mutex::new(AllocState::default()),
        })
    }

    /// The first usable address (the `kubernetes` Service's).
    pub fn first(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.net.network()) + 1)
    }

    fn in_range(&self, ip: Ipv4Addr) -> bool {
        self.net.contains(&ip) && ip != self.net.network() && ip != self.net.broadcast()
    }

    /// Claim `ip` for the Service `service` (`NAMESPACE/NAME`) in the store
    /// shared by every server: `Ok(false)` when another live claim holds it.
    async fn claim(&self, ip: Ipv4Addr, service: &str) -> Result<bool, ApiError> {
        let key = format!("{CLAIM_PREFIX}{ip}");
        let now = jiff::Timestamp::now().as_second();
        let value = serde_json::to_vec(&Claim {
            service: service.to_string(),
            at: now,
        })
        .map_err(|e| ApiError::internal(e.to_string()))?;
        let internal = |e: ubernetes_storage::StorageError| ApiError::internal(e.to_string());
        match self.storage.create(&key, value.clone().into()).await {
            Ok(_) => return Ok(true),
            Err(ubernetes_storage::StorageError::AlreadyExists { .. }) => {}
            Err(e) => return Err(internal(e)),
        }
        let Some(existing) = self.storage.get(&key).await.map_err(internal)? else {
            // Gone meanwhile: try once more.
            return match self.storage.create(&key, value.into()).await {
                Ok(_) => Ok(true),
                Err(ubernetes_storage::StorageError::AlreadyExists { .. }) => Ok(false),
                Err(e) => Err(internal(e)),
            };
        };
        let stale = match serde_json::from_slice::<Claim>(&existing.value) {
            Ok(c) if c.service == service => true,
            Ok(c) => match self.held_by(&c.service, ip).await? {
                Some(holds) => !holds,
                // Absent: deleted, or its create is still on its way.
                None => now.saturating_sub(c.at) >= CLAIM_GRACE.as_secs() as i64,
            },
            Err(_) => true,
        };
        if !stale {
            return Ok(false);
        }
        match self
            .storage
            .update(&key, value.into(), existing.mod_revision)
            .await
        {
            Ok(_) => Ok(true),
            Err(
                ubernetes_storage::StorageError::Conflict { .. }
                | ubernetes_storage::StorageError::NotFound { .. },
            ) => Ok(false),
            Err(e) => Err(internal(e)),
        }
    }

    /// Whether the Service `NAMESPACE/NAME` holds `ip` (`None`: no such Service).
    async fn held_by(&self, service: &str, ip: Ipv4Addr) -> Result<Option<bool>, ApiError> {
        let kv = self
            .storage
            .get(&format!("{}{service}", self.prefix))
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
        Ok(kv.map(|kv| {
            serde_json::from_slice::<Value>(&kv.value)
                .ok()
                .and_then(|v| {
                    v.pointer("/spec/clusterIP")
                        .and_then(Value::as_str)
                        .map(|s| s == ip.to_string())
                })
                .unwrap_or(false)
        }))
    }

    /// The next free address (round robin), remembered as in flight.
    fn pick(
        &self,
        name: &str,
        used: &HashSet<Ipv4Addr>,
        dry_run: bool,
    ) -> Result<Ipv4Addr, ApiError> {
        let mut st = self.state.lock();
        let size = (1u32 << (32 - self.net.prefix_len())).saturating_sub(2);
        let base = u32::from(self.net.network()) + 1;
        let mut found = None;
        // Skip the first address: it is the kubernetes Service's unless requested.
        for i in 0..size {
            let off = (st.next + i) % size;
            let cand = Ipv4Addr::from(base + off);
            if off == 0 && name != "kubernetes" {
                continue;
            }
            if !used.contains(&cand) && !st.in_flight.contains(&cand) {
                found = Some(cand);
                st.next = (off + 1) % size;
                break;
            }
        }
        let ip = found
            .ok_or_else(|| ApiError::internal("failed to allocate a serviceIP: range is full"))?;
        if !dry_run {
            st.in_flight.insert(ip);
            if st.in_flight.len() > 1024 {
                st.in_flight.clear();
            }
        }
        Ok(ip)
    }

    async fn used(&self) -> Result<HashSet<Ipv4Addr>, ApiError> {
        let list = self
            .storage
            .list(&self.prefix, Default::default())
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
        let mut used = HashSet::new();
        for kv in list.items {
            if let Ok(v) = serde_json::from_slice::<Value>(&kv.value)
                && let Some(ip) = v
                    .pointer("/spec/clusterIP")
                    .and_then(Value::as_str)
                    .and_then(|s| s.parse::<Ipv4Addr>().ok())
            {
                used.insert(ip);
            }
        }
        Ok(used)
    }
}

#[async_trait::async_trait]
impl Admission for ClusterIpAllocator {
    async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        obj: &mut Value,
    ) -> Result<Vec<String>, ApiError> {
        if attrs.operation != Operation::Create || attrs.subresource.is_some() {
            return Ok(Vec::new());
        }
        let dry_run = attrs.dry_run;
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if obj.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName") {
            return Ok(Vec::new());
        }
        let requested = obj
            .pointer("/spec/clusterIP")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if requested == "None" {
            obj["spec"]["clusterIPs"] = json!(["None"]);
            return Ok(Vec::new());
        }
        let namespace = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let service = format!("{namespace}/{name}");
        let mut used = self.used().await?;
        if requested.is_empty() {
            // Pick a free address, claim it; taken by another server
            // meanwhile: the next one.
            loop {
                let ip = self.pick(&name, &used, dry_run)?;
                if dry_run || self.claim(ip, &service).await? {
                    obj["spec"]["clusterIP"] = json!(ip.to_string());
                    obj["spec"]["clusterIPs"] = json!([ip.to_string()]);
                    return Ok(Vec::new());
                }
                used.insert(ip);
            }
        }
        let ip = {
            let ip: IpAddr = requested.parse().map_err(|_| {
                ApiError::invalid(
                    "",
                    "Service",
                    &name,
                    vec![field::invalid(
                        "spec.clusterIPs[0]",
                        &json!(requested),
                        "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                    )],
                )
            })?;
            let IpAddr::V4(ip) = ip else {
                return Err(ApiError::invalid(
                    "",
                    "Service",
                    &name,
                    vec![field::invalid(
                        "spec.clusterIPs[0]",
                        &json!(requested),
                        "IPv6 is not configured on this cluster",
                    )],
                ));
            };
            if !self.in_range(ip) {
                return Err(ApiError::invalid(
                    "",
                    "Service",
                    &name,
                    vec![field::invalid(
                        "spec.clusterIPs",
                        &json!([requested]),
                        &format!(
                            "failed to allocate IP {requested}: the provided IP ({requested}) is not in the valid range. The range of valid IPs is {}",
                            self.net
                        ),
                    )],
                ));
            }
            if used.contains(&ip) {
                return Err(ApiError::invalid(
                    "",
                    "Service",
                    &name,
                    vec![field::invalid(
                        "spec.clusterIPs",
                        &json!([requested]),
                        &format!(
                            "failed to allocate IP {requested}: provided IP is already allocated"
                        ),
                    )],
                ));
            }
            if !dry_run && !self.claim(ip, &service).await? {
                return Err(ApiError::invalid(
                    "",
                    "Service",
                    &name,
                    vec![field::invalid(
                        "spec.clusterIPs",
                        &json!([requested]),
                        &format!(
                            "failed to allocate IP {requested}: provided IP is already allocated"
                        ),
                    )],
                ));
            }
            ip
        };
        obj["spec"]["clusterIP"] = json!(ip.to_string());
        obj["spec"]["clusterIPs"] = json!([ip.to_string()]);
        Ok(Vec::new())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use std::collections::HashSet;
    use std::sync::Arc;

    use serde_json::json;
    use ubernetes_storage::Storage;
    use ubernetes_storage::sled_engine::SledStorage;

    use crate::controllers::{BootstrapOptions, bootstrap};
    use crate::store::WriteOptions;
    use crate::{Registry, RegistryOptions};

    /// Two registries over one store stand for two servers on one etcd:
    /// each has its own allocator (own round robin, own in-flight set), so
    /// only the shared claims keep their concurrent allocations apart.
    #[tokio::test]
    async fn two_servers_on_one_store_never_hand_out_the_same_cluster_ip() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(SledStorage::open(dir.path()).unwrap());
        let options = || RegistryOptions {
            service_cluster_ip_range: "10.0.0.0/27".into(),
            ..RegistryOptions::default()
        };
        let a = Registry::new(storage.clone(), crate::kinds::builtin(), options())
            .await
            .unwrap();
        let b = Registry::new(storage, crate::kinds::builtin(), options())
            .await
            .unwrap();
        bootstrap(
            &a,
            &BootstrapOptions {
                advertise_address: "127.0.0.1".into(),
                secure_port: 6443,
            },
        )
        .await
        .unwrap();
        let mut tasks = Vec::new();
        for i in 0..20 {
            let registry = if i % 2 == 0 { a.clone() } else { b.clone() };
            tasks.push(tokio::spawn(async move {
                let services = registry.get("", "v1", "services").unwrap();
                let namespaces = registry.namespaces();
                let svc = json!({"apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": format!("s{i}"), "namespace": "default"},
                    "spec": {"ports": [{"port": 80}]}});
                services
                    .create(
                        namespaces.as_deref(),
                        Some("default"),
                        svc,
                        &WriteOptions::default(),
                    )
                    .await
                    .unwrap()
                    .object["spec"]["clusterIP"]
                    .as_str()
                    .unwrap()
                    .to_string()
            }));
        }
        let mut seen = HashSet::new();
        for t in tasks {
            let ip = t.await.unwrap();
            assert!(seen.insert(ip.clone()), "{ip} handed out twice");
        }
        assert_eq!(seen.len(), 20);
    }
}
