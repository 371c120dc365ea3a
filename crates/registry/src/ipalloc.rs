//! ClusterIP allocation for Services from `--service-cluster-ip-range`
//! (allocation only: nothing routes these addresses). The first address of
//! the range belongs to the `default/kubernetes` Service, as in kube-apiserver.
//!
//! Used addresses are read from storage at each allocation (no separate
//! bitmap to keep consistent); in-flight allocations are remembered briefly so
//! two concurrent creates never get the same address.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use ipnet::Ipv4Net;
use parking_lot::Mutex;
use serde_json::{Value, json};
use ubernetes_apimachinery::error::field;
use ubernetes_apimachinery::{ApiError, ResourceInfo};
use ubernetes_storage::Storage;

use crate::admission::Admission;
use crate::registry::Registry;

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
    async fn admit_create(
        &self,
        _info: &ResourceInfo,
        obj: &mut Value,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if obj.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName") {
            return Ok(());
        }
        let requested = obj
            .pointer("/spec/clusterIP")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if requested == "None" {
            obj["spec"]["clusterIPs"] = json!(["None"]);
            return Ok(());
        }
        let used = self.used().await?;
        let ip = if requested.is_empty() {
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
            let ip = found.ok_or_else(|| {
                ApiError::internal("failed to allocate a serviceIP: range is full")
            })?;
            if !dry_run {
                st.in_flight.insert(ip);
                if st.in_flight.len() > 1024 {
                    st.in_flight.clear();
                }
            }
            ip
        } else {
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
            ip
        };
        obj["spec"]["clusterIP"] = json!(ip.to_string());
        obj["spec"]["clusterIPs"] = json!([ip.to_string()]);
        Ok(())
    }
}
