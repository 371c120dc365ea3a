//! The flags of the federation controllers (`ubernetes serve` flattens
//! them into its own), with Federation v1's defaults.

use std::time::Duration;

/// Flags of the embedded federation controllers.
#[derive(Clone, Debug, clap::Args)]
pub struct FederationOptions {
    /// Run the federation controllers (cluster health, propagation). Member
    /// clusters run as plain API servers with `--federation-controllers=false`.
    #[arg(
        long = "federation-controllers",
        value_name = "BOOL",
        default_value_t = true,
        action = clap::ArgAction::Set
    )]
    pub enabled: bool,

    /// How often each member cluster's /readyz is probed (Federation v1's
    /// `--cluster-monitor-period`, default 40s). Go duration syntax.
    #[arg(
        long = "cluster-monitor-period",
        value_name = "DURATION",
        default_value = "40s",
        value_parser = parse_duration
    )]
    pub cluster_monitor_period: Duration,

    /// How long one health probe of a member may take before the member
    /// counts as unreachable.
    #[arg(
        long = "cluster-probe-timeout",
        value_name = "DURATION",
        default_value = "5s",
        value_parser = parse_duration
    )]
    pub cluster_probe_timeout: Duration,

    /// How long one request to a member cluster may take (propagation
    /// writes and reads) before it counts as failed and is retried with
    /// backoff.
    #[arg(
        long = "member-request-timeout",
        value_name = "DURATION",
        default_value = "10s",
        value_parser = parse_duration
    )]
    pub member_request_timeout: Duration,

    /// Kinds whose built-in federation controllers do not run, so that a
    /// controller of the user's own takes them over (seed 000: "replace
    /// existing controllers with custom implementations"): a comma list of
    /// resources as `plural[.group]`, e.g.
    /// `deployments.apps,foos.example.com` (a core kind is its plural alone:
    /// `configmaps`). Default: none.
    #[arg(
        long = "federation-controllers-disabled-for",
        value_name = "RESOURCE[,RESOURCE]",
        value_delimiter = ','
    )]
    pub disabled_kinds: Vec<String>,

    /// The built-in kinds to propagate, namespaces first, then the CRD kind
    /// (so a federated CRD reaches a member before its custom resources).
    /// Not a flag: the binary fills it from the API server's kind
    /// declarations (`ubernetes_apiserver::state::federated_kinds`), so a
    /// kind is federated by saying so in its one declaration.
    #[arg(skip)]
    pub builtin_kinds: Vec<crate::kinds::FederatedKind>,

    /// How long a member copy of a workload may show fewer available
    /// replicas than its `spec.replicas` before the missing ones count as
    /// unschedulable there and move to clusters with room (Federation v1's
    /// overflow; v1 used a fixed 60s for unschedulable pods).
    #[arg(
        long = "federation-unschedulable-threshold",
        value_name = "DURATION",
        default_value = "60s",
        value_parser = parse_duration
    )]
    pub unschedulable_threshold: Duration,

    /// The embedded DNS server (SPEC §3.9).
    #[command(flatten)]
    pub dns: DnsOptions,
}

/// Flags of the embedded DNS server and its records (SPEC §3.9; Federation
/// v1's `--federation-name`, `--zone-name`, TTL 180 s).
#[derive(Clone, Debug, clap::Args)]
pub struct DnsOptions {
    /// Serve the federated Services' DNS records, authoritatively, over UDP
    /// and TCP on this address (e.g. `0.0.0.0:53`, `127.0.0.1:5353`). Off
    /// unless given; needs `--dns-zone` and the federation controllers.
    #[arg(long = "dns-bind", value_name = "ADDR:PORT", requires = "dns_zone")]
    pub dns_bind: Option<std::net::SocketAddr>,

    /// The DNS zone the server is authoritative for and the suffix of every
    /// name (e.g. `example.com.`): a LoadBalancer Service `web` in namespace
    /// `shop` answers as `web.shop.<federation-name>.svc.<zone>`, per region
    /// as `web.shop.<federation-name>.svc.<region>.<zone>` and per zone as
    /// `web.shop.<federation-name>.svc.<zone-label>.<region>.<zone>`.
    /// Names outside it are REFUSED (no recursion).
    #[arg(long = "dns-zone", value_name = "SUFFIX")]
    pub dns_zone: Option<String>,

    /// The federation's name, the label after the namespace in every DNS
    /// name (Federation v1's `--federation-name`).
    #[arg(
        long = "federation-name",
        value_name = "NAME",
        default_value = "federation"
    )]
    pub federation_name: String,

    /// The TTL of every DNS record, in seconds (also the SOA minimum, the
    /// time a resolver caches a negative answer). Federation v1 used 180.
    #[arg(long = "dns-ttl", value_name = "SECONDS", default_value_t = 180)]
    pub dns_ttl: u32,
}

impl Default for DnsOptions {
    fn default() -> Self {
        Self {
            dns_bind: None,
            dns_zone: None,
            federation_name: "federation".to_string(),
            dns_ttl: 180,
        }
    }
}

impl FederationOptions {
    /// Whether the built-in controllers are off for `kind`.
    pub fn disabled_for(&self, kind: &crate::kinds::FederatedKind) -> bool {
        let id = kind.id();
        self.disabled_kinds
            .iter()
            .any(|d| d.trim().eq_ignore_ascii_case(&id))
    }
}

impl Default for FederationOptions {
    fn default() -> Self {
        Self {
            enabled: true,
            cluster_monitor_period: Duration::from_secs(40),
            cluster_probe_timeout: Duration::from_secs(5),
            member_request_timeout: Duration::from_secs(10),
            disabled_kinds: Vec::new(),
            builtin_kinds: Vec::new(),
            unschedulable_threshold: Duration::from_secs(60),
            dns: DnsOptions::default(),
        }
    }
}

use ubernetes_apimachinery::duration::parse_positive_duration as parse_duration;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disabled_kinds_name_resources_as_plural_dot_group() {
        use crate::kinds::FederatedKind;
        let o = FederationOptions {
            disabled_kinds: vec!["foos.example.com".into(), "configmaps".into()],
            ..Default::default()
        };
        assert!(o.disabled_for(&FederatedKind::new(
            "example.com",
            "v1",
            "Foo",
            "foos",
            true
        )));
        assert!(o.disabled_for(&FederatedKind::new(
            "",
            "v1",
            "ConfigMap",
            "configmaps",
            true
        )));
        assert!(!o.disabled_for(&FederatedKind::new(
            "apps",
            "v1",
            "Deployment",
            "deployments",
            true
        )));
    }

    #[test]
    fn durations_parse_as_go_writes_them() {
        assert_eq!(parse_duration("40s"), Ok(Duration::from_secs(40)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("soon").is_err());
    }
}
