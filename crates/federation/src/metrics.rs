//! The federation's own metrics (prefix `ubernetes_federation_`), in the
//! process registry that `/metrics` serves (the `prometheus` crate's
//! default registry; see `ubernetes_apiserver::metrics`).
//!
//! Per member cluster (label `cluster`), recorded where the work is done:
//! - `ubernetes_federation_cluster_ready`: 1 when its last health probe
//!   said ok, else 0 ([`crate::clusters`]);
//! - `ubernetes_federation_cluster_probe_duration_seconds`: how long its
//!   health probes take (histogram, [`crate::clusters`]);
//! - `ubernetes_federation_cluster_objects_in_sync` and
//!   `ubernetes_federation_cluster_objects_placed`: the objects placed
//!   there and those in sync (the Cluster's OBJECTS IN SYNC column,
//!   [`crate::status`]);
//! - `ubernetes_federation_cluster_replicas_placed`: the workload replicas
//!   the scheduler placed there, summed over the propagation records
//!   ([`crate::status`]);
//! - `ubernetes_federation_propagation_duration_seconds` {cluster,
//!   resource}: how long a write of a copy to the member takes (the
//!   server-side apply, with the namespace created first when missing;
//!   [`crate::sync`]);
//! - `ubernetes_federation_propagation_errors_total` {cluster, resource,
//!   reason}: failed propagations, by the reason of their Warning event
//!   (`FailedCreateInCluster`, `FailedUpdateInCluster`,
//!   `FailedAdoptInCluster`, `FailedDeleteInCluster`; [`crate::sync`]).
//!
//! `resource` is kube's `resource.group` (`deployments.apps`, `configmaps`).
//! A cluster's series go away when it leaves the federation ([`FederationMetrics::forget`]).
//! The DNS server's `ubernetes_federation_dns_queries_total` is in
//! `ubernetes_dns::metrics`.

use std::sync::LazyLock;
use std::time::Duration;

use prometheus::core::Collector;
use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts};

use crate::kinds::FederatedKind;

/// The federation's metrics.
pub struct FederationMetrics {
    cluster_ready: IntGaugeVec,
    probe_duration: HistogramVec,
    objects_in_sync: IntGaugeVec,
    objects_placed: IntGaugeVec,
    replicas_placed: IntGaugeVec,
    propagation_duration: HistogramVec,
    propagation_errors: IntCounterVec,
}

/// Register `collector` in the process registry and hand it back (a second
/// registration keeps the first).
fn register<C: Collector + Clone + 'static>(collector: C) -> C {
    if let Err(err) = prometheus::register(Box::new(collector.clone())) {
        tracing::debug!(error = %err, "metric already registered");
    }
    collector
}

fn gauge(name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    register(IntGaugeVec::new(Opts::new(name, help), labels).expect("a valid static metric"))
}

fn histogram(name: &str, help: &str, labels: &[&str]) -> HistogramVec {
    register(
        HistogramVec::new(HistogramOpts::new(name, help), labels).expect("a valid static metric"),
    )
}

static METRICS: LazyLock<FederationMetrics> = LazyLock::new(|| {
    FederationMetrics {
    cluster_ready: gauge(
        "ubernetes_federation_cluster_ready",
        "Whether the member cluster's last health probe answered ok (1) or not (0).",
        &["cluster"],
    ),
    probe_duration: histogram(
        "ubernetes_federation_cluster_probe_duration_seconds",
        "Duration of the member cluster's health probes in seconds.",
        &["cluster"],
    ),
    objects_in_sync: gauge(
        "ubernetes_federation_cluster_objects_in_sync",
        "Federated objects placed in the member cluster whose copy is in sync there.",
        &["cluster"],
    ),
    objects_placed: gauge(
        "ubernetes_federation_cluster_objects_placed",
        "Federated objects placed in the member cluster.",
        &["cluster"],
    ),
    replicas_placed: gauge(
        "ubernetes_federation_cluster_replicas_placed",
        "Workload replicas the federation placed in the member cluster.",
        &["cluster"],
    ),
    propagation_duration: histogram(
        "ubernetes_federation_propagation_duration_seconds",
        "Duration in seconds of writing a federated object's copy to a member cluster.",
        &["cluster", "resource"],
    ),
    propagation_errors: register(
        IntCounterVec::new(
            Opts::new(
                "ubernetes_federation_propagation_errors_total",
                "Failed propagations of federated objects to member clusters, by the reason of their Warning event.",
            ),
            &["cluster", "resource", "reason"],
        )
        .expect("a valid static metric"),
    ),
}
});

/// The federation's metrics (registered on first use).
pub fn metrics() -> &'static FederationMetrics {
    &METRICS
}

/// kube's `resource.group` of a kind (`deployments.apps`, `configmaps`).
pub fn resource_label(kind: &FederatedKind) -> String {
    if kind.resource.group.is_empty() {
        kind.resource.plural.clone()
    } else {
        format!("{}.{}", kind.resource.plural, kind.resource.group)
    }
}

impl FederationMetrics {
    /// A health probe of `cluster` found it ready or not, in `took`.
    pub fn probed(&self, cluster: &str, ready: bool, took: Duration) {
        self.cluster_ready
            .with_label_values(&[cluster])
            .set(i64::from(ready));
        self.probe_duration
            .with_label_values(&[cluster])
            .observe(took.as_secs_f64());
    }

    /// `cluster` cannot be probed (no usable credentials): not ready.
    pub fn not_ready(&self, cluster: &str) {
        self.cluster_ready.with_label_values(&[cluster]).set(0);
    }

    /// `cluster`'s objects placed, in sync, and replicas placed.
    pub fn placed(&self, cluster: &str, in_sync: i64, placed: i64, replicas: i64) {
        self.objects_in_sync
            .with_label_values(&[cluster])
            .set(in_sync);
        self.objects_placed
            .with_label_values(&[cluster])
            .set(placed);
        self.replicas_placed
            .with_label_values(&[cluster])
            .set(replicas);
    }

    /// A write of a copy of `resource` to `cluster` took `took`.
    pub fn propagated(&self, cluster: &str, resource: &str, took: Duration) {
        self.propagation_duration
            .with_label_values(&[cluster, resource])
            .observe(took.as_secs_f64());
    }

    /// A propagation of `resource` to `cluster` failed with `reason`.
    pub fn propagation_failed(&self, cluster: &str, resource: &str, reason: &str) {
        self.propagation_errors
            .with_label_values(&[cluster, resource, reason])
            .inc();
    }

    /// `cluster` left the federation: drop its per-cluster series.
    pub fn forget(&self, cluster: &str) {
        for g in [
            &self.cluster_ready,
            &self.objects_in_sync,
            &self.objects_placed,
            &self.replicas_placed,
        ] {
            let _ = g.remove_label_values(&[cluster]);
        }
        let _ = self.probe_duration.remove_label_values(&[cluster]);
        // The per-resource series of the cluster.
        for family in self.propagation_duration.collect() {
            for m in family.get_metric() {
                let labels = m.get_label();
                let of_cluster = labels
                    .iter()
                    .any(|l| l.name() == "cluster" && l.value() == cluster);
                let resource = labels
                    .iter()
                    .find(|l| l.name() == "resource")
                    .map(|l| l.value().to_string());
                if let (true, Some(r)) = (of_cluster, resource) {
                    let _ = self
                        .propagation_duration
                        .remove_label_values(&[cluster, &r]);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text() -> String {
        use prometheus::Encoder as _;
        let mut out = Vec::new();
        prometheus::TextEncoder::new()
            .encode(&prometheus::gather(), &mut out)
            .expect("encode");
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn a_cluster_has_its_series_until_it_is_forgotten() {
        let m = metrics();
        m.probed("metrics-test-east", true, Duration::from_millis(20));
        m.placed("metrics-test-east", 2, 3, 7);
        m.propagated(
            "metrics-test-east",
            "deployments.apps",
            Duration::from_millis(5),
        );
        m.propagation_failed("metrics-test-east", "configmaps", "FailedUpdateInCluster");
        let t = text();
        for line in [
            r#"ubernetes_federation_cluster_ready{cluster="metrics-test-east"} 1"#,
            r#"ubernetes_federation_cluster_objects_in_sync{cluster="metrics-test-east"} 2"#,
            r#"ubernetes_federation_cluster_objects_placed{cluster="metrics-test-east"} 3"#,
            r#"ubernetes_federation_cluster_replicas_placed{cluster="metrics-test-east"} 7"#,
            r#"ubernetes_federation_cluster_probe_duration_seconds_count{cluster="metrics-test-east"} 1"#,
            r#"ubernetes_federation_propagation_duration_seconds_count{cluster="metrics-test-east",resource="deployments.apps"} 1"#,
            r#"ubernetes_federation_propagation_errors_total{cluster="metrics-test-east",reason="FailedUpdateInCluster",resource="configmaps"} 1"#,
        ] {
            assert!(t.contains(line), "{line} missing in\n{t}");
        }
        m.not_ready("metrics-test-east");
        assert!(
            text().contains(r#"ubernetes_federation_cluster_ready{cluster="metrics-test-east"} 0"#)
        );
        m.forget("metrics-test-east");
        let t = text();
        assert!(!t.contains(r#"ubernetes_federation_cluster_ready{cluster="metrics-test-east"}"#));
        assert!(!t.contains(
            r#"ubernetes_federation_propagation_duration_seconds_count{cluster="metrics-test-east""#
        ));
    }
}
