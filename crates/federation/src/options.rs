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
            unschedulable_threshold: Duration::from_secs(60),
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
