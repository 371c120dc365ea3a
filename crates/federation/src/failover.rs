//! Safe handover of replicas between member clusters (SPEC §3.6,
//! "Failover"): what to apply *now*, given the planner's target per Ready
//! cluster and what each member copy currently runs, so that capacity never
//! dips while replicas move.
//!
//! Rules (beyond Federation v1, which applied the new plan at once, and
//! beyond Karmada, whose eviction of a merely unreachable cluster's work
//! deleted it there — karmada-io/karmada#5150, now opt-in):
//!
//! - A cluster that is not Ready is left alone ([`Action::Leave`]): nothing
//!   is ever deleted or scaled in a cluster because it stopped answering.
//!   The planner is given only the Ready clusters, so its share already
//!   lands on them.
//! - Ready clusters are scaled **up** to their target at once.
//! - Ready clusters are scaled **down** only by what the others make up
//!   for: with `A` = the available replicas over the Ready clusters
//!   (a copy counts `min(available, spec)`: what we already asked it to
//!   shed is not counted on), a scale-down may remove at most
//!   `A − min(A, total)` available replicas in all. kube's ReplicaSet
//!   controller removes unavailable pods first, so lowering `spec.replicas`
//!   from `s` to `t` removes at most `max(0, available − t)` available
//!   ones. The rest of the scale-down waits for the next pass (as the
//!   others' pods become available). When a cluster returns, its share is
//!   thus given back only as fast as it has replicas available.
//!
//! Overflow (v1): a member whose copy shows fewer available replicas than
//! its `spec.replicas` for longer than `--federation-unschedulable-threshold`
//! (v1's podanalyzer constant: 60s) has an estimated capacity of what it has
//! available, which the planner uses to move the rest to clusters with
//! room ([`ShortfallTracker`]). v1 counted pods unschedulable for that long;
//! the member's workload status is what we see of them.
//!
//! Pure functions and a small state machine, no I/O.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What the federation knows of one member cluster for one workload.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterState {
    /// The cluster is Ready (and selected).
    pub ready: bool,
    /// The planner's replicas for it (ignored when not Ready).
    pub target: i64,
    /// `spec.replicas` of the member copy now (`None`: no copy).
    pub spec: Option<i64>,
    /// `status.availableReplicas` of the member copy (0 if unknown).
    pub available: i64,
}

/// What to do with one member copy now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Do not touch the member copy (the cluster is not Ready).
    Leave,
    /// Apply this `spec.replicas`.
    Apply(i64),
}

impl ClusterState {
    fn counted_available(&self) -> i64 {
        match self.spec {
            Some(s) => self.available.min(s).max(0),
            None => 0,
        }
    }
}

/// The replicas to apply now per cluster (see the module docs). `total` is
/// the federated workload's `spec.replicas`.
pub fn handover(total: i64, clusters: &BTreeMap<String, ClusterState>) -> BTreeMap<String, Action> {
    let available: i64 = clusters
        .values()
        .filter(|c| c.ready)
        .map(ClusterState::counted_available)
        .fold(0i64, i64::saturating_add);
    let mut budget = available.saturating_sub(available.min(total.max(0)));
    let mut out = BTreeMap::new();
    for (name, c) in clusters {
        let action = if !c.ready {
            Action::Leave
        } else {
            let target = c.target.max(0);
            match c.spec {
                Some(spec) if target < spec => {
                    let avail = c.counted_available();
                    let drop = avail.saturating_sub(target).max(0);
                    let allowed = drop.min(budget);
                    budget -= allowed;
                    Action::Apply(target.max(avail - allowed).min(spec))
                }
                _ => Action::Apply(target),
            }
        };
        out.insert(name.clone(), action);
    }
    out
}

/// Tracks, per cluster, since when a member copy has had fewer available
/// replicas than its `spec.replicas` (with the same spec), and turns a
/// shortfall older than the threshold into an estimated capacity for the
/// planner.
#[derive(Clone, Debug, Default)]
pub struct ShortfallTracker {
    since: BTreeMap<String, (i64, Instant)>,
}

impl ShortfallTracker {
    /// An empty tracker.
    pub fn new() -> Self {
        Self::default()
    }

    /// Record what `cluster`'s copy shows at `now`; returns its estimated
    /// capacity when it has been short for at least `threshold`.
    /// `observed`: the member has observed the copy's current spec (a
    /// status about an older spec says nothing about this one, and a member
    /// that reports no status at all is never estimated).
    pub fn observe(
        &mut self,
        cluster: &str,
        spec: i64,
        available: i64,
        observed: bool,
        now: Instant,
        threshold: Duration,
    ) -> Option<i64> {
        if !observed {
            return None;
        }
        if available >= spec {
            self.since.remove(cluster);
            return None;
        }
        let entry = self.since.entry(cluster.to_string()).or_insert((spec, now));
        if entry.0 != spec {
            *entry = (spec, now);
        }
        (now.saturating_duration_since(entry.1) >= threshold).then_some(available.max(0))
    }

    /// Forget a cluster (its copy is gone or it left the federation).
    pub fn forget(&mut self, cluster: &str) {
        self.since.remove(cluster);
    }

    /// Forget every cluster not in `keep`.
    pub fn retain(&mut self, keep: &[&str]) {
        self.since.retain(|c, _| keep.contains(&c.as_str()));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)] // a failing test may panic
mod tests {
    //! Simulations: a tiny model of members whose pods become available one
    //! step after being asked for (or never, for an overloaded member), the
    //! planner choosing targets, [`handover`] choosing what to apply; the
    //! invariant is checked after every step.
    use super::*;
    use crate::planner::{ReplicaAllocationPreferences, schedule};

    #[derive(Clone, Debug)]
    struct Member {
        ready: bool,
        spec: Option<i64>,
        available: i64,
        /// Pods this member can run at most (overflow tests).
        room: i64,
    }

    impl Member {
        fn new() -> Self {
            Member {
                ready: true,
                spec: None,
                available: 0,
                room: i64::MAX,
            }
        }
        /// One step of the member's own controllers: scale-downs remove
        /// pods at once (unavailable first), scale-ups become available
        /// one step later (`rate` pods per step).
        fn step(&mut self, rate: i64) {
            let want = self.spec.unwrap_or(0).min(self.room);
            if self.available > want {
                self.available = want;
            } else {
                self.available = (self.available + rate).min(want);
            }
        }
    }

    struct Sim {
        members: BTreeMap<String, Member>,
        prefs: ReplicaAllocationPreferences,
        total: i64,
        tracker: ShortfallTracker,
        now: Instant,
        threshold: Duration,
    }

    impl Sim {
        fn new(names: &[&str], total: i64) -> Self {
            Sim {
                members: names
                    .iter()
                    .map(|n| (n.to_string(), Member::new()))
                    .collect(),
                prefs: ReplicaAllocationPreferences {
                    rebalance: true,
                    ..ReplicaAllocationPreferences::even()
                },
                total,
                tracker: ShortfallTracker::new(),
                now: Instant::now(),
                threshold: Duration::from_secs(60),
            }
        }

        fn ready_available(&self) -> i64 {
            self.members
                .values()
                .filter(|m| m.ready)
                .map(|m| m.available.min(m.spec.unwrap_or(0)))
                .sum()
        }

        /// One reconcile of the federation followed by one member step;
        /// returns the available sum before and after.
        fn reconcile(&mut self, rate: i64) {
            let ready: Vec<String> = self
                .members
                .iter()
                .filter(|(_, m)| m.ready)
                .map(|(n, _)| n.clone())
                .collect();
            let current: BTreeMap<String, i64> = self
                .members
                .iter()
                .filter(|(_, m)| m.ready && m.spec.is_some())
                .map(|(n, m)| (n.clone(), m.available))
                .collect();
            let mut capacity = BTreeMap::new();
            for (n, m) in &self.members {
                if let (true, Some(spec)) = (m.ready, m.spec)
                    && let Some(c) =
                        self.tracker
                            .observe(n, spec, m.available, true, self.now, self.threshold)
                {
                    capacity.insert(n.clone(), c);
                }
            }
            let targets = schedule(
                &self.prefs,
                self.total,
                &ready,
                &current,
                &capacity,
                "ns/web",
            );
            let state: BTreeMap<String, ClusterState> = self
                .members
                .iter()
                .map(|(n, m)| {
                    (
                        n.clone(),
                        ClusterState {
                            ready: m.ready,
                            target: targets.get(n).copied().unwrap_or(0),
                            spec: m.spec,
                            available: m.available,
                        },
                    )
                })
                .collect();
            let before = self.ready_available();
            for (n, a) in handover(self.total, &state) {
                if let (Action::Apply(r), Some(m)) = (a, self.members.get_mut(&n)) {
                    m.spec = Some(r);
                }
            }
            // The invariant, right after applying (pods removed at once).
            for m in self.members.values_mut().filter(|m| m.ready) {
                if m.available > m.spec.unwrap_or(0) {
                    m.available = m.spec.unwrap_or(0);
                }
            }
            let after = self.ready_available();
            assert!(
                after >= before.min(self.total),
                "available dipped from {before} to {after}: {:?}",
                self.members
            );
            for m in self.members.values_mut().filter(|m| m.ready) {
                m.step(rate);
            }
            self.now += Duration::from_secs(5);
        }

        fn specs(&self) -> Vec<(String, i64)> {
            self.members
                .iter()
                .map(|(n, m)| (n.clone(), m.spec.unwrap_or(0)))
                .collect()
        }

        fn settle(&mut self, rate: i64) {
            for _ in 0..40 {
                self.reconcile(rate);
            }
        }
    }

    fn pairs(v: &[(&str, i64)]) -> Vec<(String, i64)> {
        v.iter().map(|(n, r)| (n.to_string(), *r)).collect()
    }

    #[test]
    fn lost_cluster_share_moves_and_returns_without_a_dip() {
        let mut sim = Sim::new(&["a", "b"], 10);
        sim.settle(1);
        assert_eq!(sim.specs(), pairs(&[("a", 5), ("b", 5)]));
        assert_eq!(sim.ready_available(), 10);

        // b stops answering: its copy is left as it is, a takes everything.
        if let Some(m) = sim.members.get_mut("b") {
            m.ready = false;
        }
        sim.reconcile(1);
        assert_eq!(sim.specs(), pairs(&[("a", 10), ("b", 5)]), "b untouched");
        sim.settle(1);
        assert_eq!(sim.ready_available(), 10);

        // b returns with its pods gone; a gives back only what b has up.
        if let Some(m) = sim.members.get_mut("b") {
            m.ready = true;
            m.available = 0;
        }
        let mut seen_a = Vec::new();
        for _ in 0..20 {
            sim.reconcile(1);
            seen_a.push(sim.members["a"].spec.unwrap_or(0));
            assert!(sim.ready_available() >= 10, "{:?}", sim.members);
        }
        assert_eq!(sim.specs(), pairs(&[("a", 5), ("b", 5)]));
        // a came down step by step, not at once.
        assert!(seen_a.windows(2).all(|w| w[0] - w[1] <= 1), "{seen_a:?}");
    }

    #[test]
    fn returning_cluster_with_its_pods_still_up_takes_its_share_at_once() {
        let mut sim = Sim::new(&["a", "b"], 10);
        sim.settle(10);
        if let Some(m) = sim.members.get_mut("b") {
            m.ready = false;
        }
        sim.settle(10);
        assert_eq!(sim.specs(), pairs(&[("a", 10), ("b", 5)]));
        // b's 5 pods survived: a may shed 5 right away.
        if let Some(m) = sim.members.get_mut("b") {
            m.ready = true;
        }
        sim.reconcile(10);
        assert_eq!(sim.specs(), pairs(&[("a", 5), ("b", 5)]));
    }

    #[test]
    fn weight_change_moves_replicas_make_before_break() {
        let mut sim = Sim::new(&["a", "b"], 10);
        sim.settle(2);
        sim.prefs = crate::planner::parse_preferences(
            r#"{"rebalance": true, "clusters": {"a": {"weight": 20}, "b": {"weight": 0}}}"#,
        )
        .unwrap();
        sim.reconcile(2);
        // a is scaled up at once, b not yet down.
        assert_eq!(sim.specs(), pairs(&[("a", 10), ("b", 5)]));
        sim.settle(2);
        assert_eq!(sim.specs(), pairs(&[("a", 10), ("b", 0)]));
    }

    #[test]
    fn members_without_status_are_scaled_at_once() {
        // Nothing is available anywhere (members without controllers):
        // scale-downs remove nothing available, so nothing waits.
        let mut state = BTreeMap::new();
        state.insert(
            "a".to_string(),
            ClusterState {
                ready: true,
                target: 10,
                spec: Some(5),
                available: 0,
            },
        );
        state.insert(
            "b".to_string(),
            ClusterState {
                ready: true,
                target: 0,
                spec: Some(5),
                available: 0,
            },
        );
        let a = handover(10, &state);
        assert_eq!(a["a"], Action::Apply(10));
        assert_eq!(a["b"], Action::Apply(0));
    }

    #[test]
    fn a_user_scale_down_is_applied_at_once() {
        let mut sim = Sim::new(&["a", "b"], 10);
        sim.settle(10);
        sim.total = 4;
        sim.reconcile(10);
        assert_eq!(sim.specs(), pairs(&[("a", 2), ("b", 2)]));
    }

    #[test]
    fn a_not_ready_cluster_is_never_touched() {
        let mut state = BTreeMap::new();
        state.insert(
            "gone".to_string(),
            ClusterState {
                ready: false,
                target: 0,
                spec: Some(7),
                available: 7,
            },
        );
        assert_eq!(handover(0, &state)["gone"], Action::Leave);
    }

    #[test]
    fn overflow_moves_to_clusters_with_room_after_the_threshold() {
        let mut sim = Sim::new(&["a", "b"], 10);
        if let Some(m) = sim.members.get_mut("a") {
            m.room = 2;
        }
        // Before the threshold: 5 + 5, a stuck at 2 available.
        for _ in 0..6 {
            sim.reconcile(5);
        }
        assert_eq!(sim.specs(), pairs(&[("a", 5), ("b", 5)]));
        // After 60s of shortfall: a's capacity is 2, b gets the rest; a
        // keeps its overflow (v1 adds it to the share, "in case they get
        // scheduled").
        sim.settle(5);
        assert_eq!(sim.members["b"].spec, Some(8));
        assert_eq!(sim.ready_available(), 10);
        // Room comes back in a: the shortfall ends, the plan goes back.
        if let Some(m) = sim.members.get_mut("a") {
            m.room = i64::MAX;
        }
        sim.settle(5);
        assert_eq!(sim.specs(), pairs(&[("a", 5), ("b", 5)]));
        assert_eq!(sim.ready_available(), 10);
    }

    #[test]
    fn tracker_resets_on_spec_change_and_ignores_unobserved_status() {
        let t0 = Instant::now();
        let th = Duration::from_secs(60);
        let mut t = ShortfallTracker::new();
        assert_eq!(t.observe("a", 5, 2, true, t0, th), None);
        assert_eq!(t.observe("a", 5, 2, true, t0 + th, th), Some(2));
        // New spec: the clock starts again.
        assert_eq!(t.observe("a", 6, 2, true, t0 + th, th), None);
        assert_eq!(t.observe("a", 6, 2, true, t0 + th * 2, th), Some(2));
        // Caught up: forgotten.
        assert_eq!(t.observe("a", 6, 6, true, t0 + th * 2, th), None);
        assert_eq!(t.observe("a", 6, 2, true, t0 + th * 2, th), None);
        // Unobserved status never estimates.
        assert_eq!(t.observe("b", 5, 0, false, t0, th), None);
        assert_eq!(t.observe("b", 5, 0, false, t0 + th * 9, th), None);
        t.retain(&[]);
        assert_eq!(t.observe("a", 6, 2, true, t0 + th * 3, th), None);
    }
}
