//! The `--leader-elect*` flags (kube-controller-manager's names and
//! defaults) and the choice between an election and sole leadership: on a
//! shared store (etcd) the replicas elect one leader with a Lease
//! ([`ubernetes_registry::leader_election`]); the embedded store can be
//! opened by one process only, which therefore leads without an election.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use ubernetes_registry::Registry;
use ubernetes_registry::leader_election::{
    LeaderElectionConfig, LeaderElector, Leadership, default_identity,
};

use ubernetes_apimachinery::duration::parse_duration;

/// Leader election of the in-server and federation controllers.
#[derive(Debug, Clone, clap::Args)]
pub struct LeaderElectionOptions {
    /// Start a leader election client and gain leadership before running
    /// the controllers (garbage collector, namespaces, tokens, CRD status,
    /// the federation controllers, compaction). Used when several replicas
    /// share one etcd (--etcd-servers); with the embedded store the one
    /// process leads without an election.
    #[arg(
        long = "leader-elect",
        value_name = "BOOL",
        default_value_t = true,
        action = clap::ArgAction::Set
    )]
    pub leader_elect: bool,

    /// The duration non-leader candidates wait after observing a leadership
    /// renewal until attempting to acquire leadership of a led but unrenewed
    /// leader slot.
    #[arg(
        long = "leader-elect-lease-duration",
        value_name = "DURATION",
        default_value = "3s",
        value_parser = parse_duration
    )]
    pub lease_duration: Duration,

    /// The interval between attempts by the acting leader to renew a
    /// leadership slot before it stops leading. Must be less than the lease
    /// duration.
    #[arg(
        long = "leader-elect-renew-deadline",
        value_name = "DURATION",
        default_value = "2s",
        value_parser = parse_duration
    )]
    pub renew_deadline: Duration,

    /// The duration the clients should wait between attempting acquisition
    /// and renewal of a leadership.
    #[arg(
        long = "leader-elect-retry-period",
        value_name = "DURATION",
        default_value = "400ms",
        value_parser = parse_duration
    )]
    pub retry_period: Duration,

    /// The name of the Lease used for locking during leader election.
    #[arg(
        long = "leader-elect-resource-name",
        value_name = "NAME",
        default_value = "ubernetes-controller-manager"
    )]
    pub resource_name: String,

    /// The namespace of the Lease used for locking during leader election.
    #[arg(
        long = "leader-elect-resource-namespace",
        value_name = "NAMESPACE",
        default_value = "kube-system"
    )]
    pub resource_namespace: String,
}

impl Default for LeaderElectionOptions {
    fn default() -> Self {
        Self {
            leader_elect: true,
            lease_duration: Duration::from_secs(3),
            renew_deadline: Duration::from_secs(2),
            retry_period: Duration::from_millis(400),
            resource_name: "ubernetes-controller-manager".into(),
            resource_namespace: "kube-system".into(),
        }
    }
}

/// Elect (on a shared store with `--leader-elect`) or lead alone, until
/// `stop`.
pub fn start(
    options: &LeaderElectionOptions,
    shared_store: bool,
    registry: &Arc<Registry>,
    stop: CancellationToken,
) -> anyhow::Result<Leadership> {
    if !shared_store {
        tracing::info!("embedded store: this process runs the controllers (no leader election)");
        return Ok(Leadership::always(stop));
    }
    if !options.leader_elect {
        tracing::warn!(
            "--leader-elect=false on a shared store: this replica runs every controller; run only one such replica"
        );
        return Ok(Leadership::always(stop));
    }
    let config = LeaderElectionConfig {
        lease_duration: options.lease_duration,
        renew_deadline: options.renew_deadline,
        retry_period: options.retry_period,
        namespace: options.resource_namespace.clone(),
        name: options.resource_name.clone(),
        identity: default_identity(),
    };
    config
        .validate()
        .map_err(|e| anyhow::anyhow!("--leader-elect-*: {e}"))?;
    tracing::info!(identity = %config.identity, lease = %format!("{}/{}", config.namespace, config.name), "leader election on");
    Ok(LeaderElector::start(registry.clone(), config, stop))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    #[command(no_binary_name = true)]
    struct Cli {
        #[command(flatten)]
        le: LeaderElectionOptions,
    }

    #[test]
    fn flags_are_kube_controller_managers_and_defaults_fail_over_within_5s() {
        let d = Cli::try_parse_from(std::iter::empty::<String>())
            .expect("parses")
            .le;
        let def = LeaderElectionOptions::default();
        assert!(d.leader_elect && def.leader_elect);
        // Shorter than kube-controller-manager's 15/10/2 s: failover within
        // 5 s (docs/operations.md, "Leader election").
        assert_eq!(d.lease_duration, Duration::from_secs(3));
        assert_eq!(d.renew_deadline, Duration::from_secs(2));
        assert_eq!(d.retry_period, Duration::from_millis(400));
        // They pass client-go's checks.
        let config = LeaderElectionConfig {
            lease_duration: d.lease_duration,
            renew_deadline: d.renew_deadline,
            retry_period: d.retry_period,
            namespace: d.resource_namespace.clone(),
            name: d.resource_name.clone(),
            identity: "me".into(),
        };
        assert_eq!(config.validate(), Ok(()));
        assert_eq!(d.resource_namespace, "kube-system");
        assert_eq!(
            (def.lease_duration, def.renew_deadline, def.retry_period),
            (d.lease_duration, d.renew_deadline, d.retry_period)
        );
        assert_eq!(def.resource_name, d.resource_name);
        let o = Cli::try_parse_from([
            "--leader-elect=false",
            "--leader-elect-lease-duration=8s",
            "--leader-elect-renew-deadline=5s",
            "--leader-elect-retry-period=1s",
            "--leader-elect-resource-name=fed",
            "--leader-elect-resource-namespace=ops",
        ])
        .expect("parses")
        .le;
        assert!(!o.leader_elect);
        assert_eq!(o.lease_duration, Duration::from_secs(8));
        assert_eq!(o.renew_deadline, Duration::from_secs(5));
        assert_eq!(o.retry_period, Duration::from_secs(1));
        assert_eq!(
            (o.resource_name.as_str(), o.resource_namespace.as_str()),
            ("fed", "ops")
        );
    }
}
