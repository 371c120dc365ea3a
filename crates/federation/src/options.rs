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
}

impl Default for FederationOptions {
    fn default() -> Self {
        Self {
            enabled: true,
            cluster_monitor_period: Duration::from_secs(40),
            cluster_probe_timeout: Duration::from_secs(5),
            member_request_timeout: Duration::from_secs(10),
        }
    }
}

use ubernetes_apimachinery::duration::parse_positive_duration as parse_duration;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_as_go_writes_them() {
        assert_eq!(parse_duration("40s"), Ok(Duration::from_secs(40)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("soon").is_err());
    }
}
