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

    /// How old a pull-mode member's Lease (renewed by its agent) may get
    /// before the cluster counts as unreachable (SPEC §3.12: 40s).
    #[arg(
        long = "cluster-lease-duration",
        value_name = "DURATION",
        default_value = "40s",
        value_parser = parse_duration
    )]
    pub cluster_lease_duration: Duration,

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

    /// What to do when a member cluster already holds an object of the
    /// same name that the federation did not create (Karmada's
    /// `conflictResolution`): `abort` (default) leaves the member's object
    /// alone, marks the cluster Failed in the object's propagation record
    /// and records a `FailedAdoptInCluster` event; `adopt` applies the
    /// federated object over it and manages it from then on (deleting the
    /// federated object then deletes it). A federated object's annotation
    /// `federation.kubernetes.io/conflict-resolution: abort|adopt` wins
    /// over this flag.
    #[arg(
        long = "conflict-resolution",
        value_name = "abort|adopt",
        default_value = "abort",
        value_enum
    )]
    pub conflict_resolution: ConflictResolution,

    /// Namespaces the federation never writes into in a member cluster,
    /// nor propagates as namespaces: a comma list of names where `*`
    /// matches any run of characters (e.g. `kube-*,*-system`). Objects
    /// of the federation in a matching namespace (or a matching Namespace
    /// itself) stay in the federation, with a `NotPropagated` event. An
    /// empty value (`--member-namespace-denylist=`) denies only
    /// `kube-system`, `kube-public`, `kube-node-lease` and
    /// `federation-system`, which are never written whatever this says.
    #[arg(
        long = "member-namespace-denylist",
        value_name = "PATTERN[,PATTERN]",
        value_delimiter = ',',
        default_value = "kube-*,*-system,openshift-*,federation-system"
    )]
    pub member_namespace_denylist: Vec<String>,

    /// Mirror the members' Events about the federation's copies (and about
    /// the ReplicaSets, Pods and Jobs kube makes of them) onto the
    /// federated objects, so `kubectl describe` on the federation shows
    /// them, each naming its cluster (SPEC §3.13).
    #[arg(
        long = "mirror-member-events",
        value_name = "BOOL",
        default_value_t = true,
        action = clap::ArgAction::Set
    )]
    pub mirror_member_events: bool,

    /// While no Cluster has joined, run kube-controller-manager's workload
    /// controllers (deployment, replicaset, replicationcontroller, cronjob)
    /// for the federation's own API, as kube-apiserver + kcm without nodes
    /// would; they stand back and delete what they made once a Cluster
    /// exists (`ubernetes_registry::controllers::standalone`). Only with
    /// the federation controllers on.
    #[arg(
        long = "standalone-controllers",
        value_name = "BOOL",
        default_value_t = true,
        action = clap::ArgAction::Set
    )]
    pub standalone_controllers: bool,

    /// How long a mirrored member Event is kept after it was last seen in
    /// its member (kube-apiserver's `--event-ttl` default: 1h). Go
    /// duration syntax.
    #[arg(
        long = "member-event-ttl",
        value_name = "DURATION",
        default_value = "1h",
        value_parser = parse_duration
    )]
    pub member_event_ttl: Duration,

    /// The embedded DNS server (SPEC §3.9).
    #[command(flatten)]
    pub dns: DnsOptions,
}

/// What the federation does with a member object of the same name that it
/// does not manage (`--conflict-resolution`, and the annotation
/// `federation.kubernetes.io/conflict-resolution` per object).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ConflictResolution {
    /// Leave it alone and report the conflict (Karmada's `Abort`).
    #[default]
    Abort,
    /// Apply over it and manage it from then on (Karmada's `Overwrite`).
    Adopt,
}

impl ConflictResolution {
    /// The value of the annotation, if it names one (`abort`, `adopt`,
    /// any case); else `None`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "abort" => Some(Self::Abort),
            "adopt" => Some(Self::Adopt),
            _ => None,
        }
    }
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

    /// The zone of the Multi-cluster Services API (KEP-1645, SPEC §3.14),
    /// which the DNS server of `--dns-bind` also answers, authoritatively:
    /// for each ServiceExport `svc` in namespace `ns`,
    /// `svc.ns.svc.<clusterset-zone>` answers the ready endpoint addresses
    /// of every Ready cluster that runs the Service (A / AAAA, as a
    /// headless clusterset Service: the federation has no ClusterSetIP VIP
    /// to answer); other names in the zone are NXDOMAIN. Must differ from
    /// `--dns-zone`.
    #[arg(
        long = "clusterset-zone",
        value_name = "ZONE",
        default_value = "clusterset.local"
    )]
    pub clusterset_zone: String,
}

impl Default for DnsOptions {
    fn default() -> Self {
        Self {
            dns_bind: None,
            dns_zone: None,
            federation_name: "federation".to_string(),
            dns_ttl: 180,
            clusterset_zone: "clusterset.local".to_string(),
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
            cluster_lease_duration: Duration::from_secs(40),
            disabled_kinds: Vec::new(),
            builtin_kinds: Vec::new(),
            unschedulable_threshold: Duration::from_secs(60),
            conflict_resolution: ConflictResolution::Abort,
            member_namespace_denylist: crate::member_object::DEFAULT_NAMESPACE_DENYLIST
                .iter()
                .map(|s| s.to_string())
                .collect(),
            mirror_member_events: true,
            standalone_controllers: true,
            member_event_ttl: Duration::from_secs(3600),
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
    fn conflict_resolution_and_denylist_flags_default_to_abort_and_the_system_namespaces() {
        use clap::Parser as _;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            f: FederationOptions,
        }
        let Ok(cli) = Cli::try_parse_from(["x"]) else {
            panic!("no flags must parse");
        };
        assert_eq!(cli.f.conflict_resolution, ConflictResolution::Abort);
        assert_eq!(cli.f.dns.clusterset_zone, "clusterset.local");
        assert!(cli.f.mirror_member_events);
        assert_eq!(cli.f.member_event_ttl, Duration::from_secs(3600));
        assert_eq!(
            FederationOptions::default().member_event_ttl,
            cli.f.member_event_ttl
        );
        assert_eq!(
            FederationOptions::default().dns.clusterset_zone,
            cli.f.dns.clusterset_zone
        );
        assert_eq!(
            cli.f.member_namespace_denylist,
            crate::member_object::DEFAULT_NAMESPACE_DENYLIST
        );
        assert_eq!(
            FederationOptions::default().member_namespace_denylist,
            cli.f.member_namespace_denylist
        );
        let Ok(cli) = Cli::try_parse_from([
            "x",
            "--conflict-resolution=adopt",
            "--member-namespace-denylist=team-*,legacy",
            "--clusterset-zone=mcs.example",
        ]) else {
            panic!("flags must parse");
        };
        assert_eq!(cli.f.conflict_resolution, ConflictResolution::Adopt);
        assert_eq!(cli.f.member_namespace_denylist, ["team-*", "legacy"]);
        assert_eq!(cli.f.dns.clusterset_zone, "mcs.example");
        let Ok(cli) = Cli::try_parse_from(["x", "--member-namespace-denylist="]) else {
            panic!("an empty denylist must parse");
        };
        let none = crate::member_object::NamespaceDenylist::new(&cli.f.member_namespace_denylist);
        assert!(
            none.patterns().is_empty(),
            "{:?}",
            cli.f.member_namespace_denylist
        );
        assert_eq!(none.denies("istio-system"), None);
        assert_eq!(none.denies("kube-system"), Some("kube-system"));
        assert!(Cli::try_parse_from(["x", "--conflict-resolution=merge"]).is_err());
        assert_eq!(
            ConflictResolution::parse(" Adopt"),
            Some(ConflictResolution::Adopt)
        );
        assert_eq!(ConflictResolution::parse("overwrite"), None);
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
