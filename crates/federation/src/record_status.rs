//! The statuses of the propagation records a deletion helper keeps,
//! packed (issue 21 item 3): a record has one per-cluster entry per member
//! copy, so what an entry costs is paid a million times at 100 members ×
//! 10,000 objects. Decoded, an entry is ~400 bytes; as the JSON it came in,
//! ~120; packed here, 32 ([`Entry`]): the cluster name as a number into a
//! table of names, the state as a byte, the 32-hex-digit content hash as
//! 16 bytes, the member's resourceVersion and the observed generation as
//! integers. An entry that does not fit (a message, replicas, drift, a
//! rollout's fields, a hash or version in another form) and the status's
//! conditions and rollout are kept as JSON beside the packed entries; a
//! reader gets the status back exactly as it came
//! ([`Statuses::attach`]), built on demand.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use kube::ResourceExt as _;
use kube::runtime::reflector::Store;
use parking_lot::{Mutex, RwLock};
use ubernetes_api::{ClusterPropagation, PropagationRecord, PropagationRecordStatus};

/// A record's namespace and name.
type RecordKey = (String, String);

/// The status of each record of a helper's store, packed; the store keeps
/// each record without its status.
#[derive(Default)]
pub(crate) struct Statuses {
    by_record: Mutex<HashMap<RecordKey, Arc<Packed>>>,
    names: RwLock<Names>,
}

impl Statuses {
    /// Move `r`'s status here (as the watch brings `r`, before the store
    /// keeps it), and drop its `managedFields` (no reader of the store
    /// looks at them).
    pub(crate) fn take(&self, r: &mut PropagationRecord) {
        r.metadata.managed_fields = None;
        let key = (r.namespace().unwrap_or_default(), r.name_any());
        let packed = r.status.take().map(|s| Arc::new(self.pack(s)));
        let mut map = self.by_record.lock();
        match packed {
            Some(p) => {
                map.insert(key, p);
            }
            None => {
                map.remove(&key);
            }
        }
    }

    /// `lean` (a record of the store) with its status.
    pub(crate) fn attach(&self, lean: &PropagationRecord) -> Arc<PropagationRecord> {
        let key = (lean.namespace().unwrap_or_default(), lean.name_any());
        // Unpacked outside the map's lock: every sync lookup comes here.
        let packed = self.by_record.lock().get(&key).cloned();
        let mut whole = lean.clone();
        if let Some(p) = packed {
            whole.status = Some(self.unpack(&p));
        }
        Arc::new(whole)
    }

    /// A record was deleted.
    pub(crate) fn forget(&self, r: &PropagationRecord) {
        self.by_record
            .lock()
            .remove(&(r.namespace().unwrap_or_default(), r.name_any()));
    }

    /// Drop the statuses of records the store no longer has (deleted
    /// while the watch was down: a relist drops them from the store).
    pub(crate) fn retain_stored(&self, store: &Store<PropagationRecord>) {
        if self.by_record.lock().len() <= store.state().len() {
            return;
        }
        let stored: HashSet<RecordKey> = store
            .state()
            .iter()
            .map(|r| (r.namespace().unwrap_or_default(), r.name_any()))
            .collect();
        self.by_record.lock().retain(|k, _| stored.contains(k));
    }

    fn pack(&self, mut status: PropagationRecordStatus) -> Packed {
        let clusters = std::mem::take(&mut status.clusters);
        let mut entries = Vec::with_capacity(clusters.len());
        let mut odd = Vec::new();
        for c in clusters {
            match Entry::pack(&c, |name| self.name_index(name)) {
                Some(e) => entries.push(e),
                None => {
                    entries.push(Entry::ODD);
                    odd.push(c);
                }
            }
        }
        status.clusters = odd;
        let rest = (status != PropagationRecordStatus::default())
            .then(|| serde_json::to_vec(&status).ok())
            .flatten()
            .map(Vec::into_boxed_slice);
        Packed {
            entries: entries.into_boxed_slice(),
            rest,
        }
    }

    fn unpack(&self, p: &Packed) -> PropagationRecordStatus {
        let mut status: PropagationRecordStatus = p
            .rest
            .as_deref()
            .and_then(|b| serde_json::from_slice(b).ok())
            .unwrap_or_default();
        let mut odd = std::mem::take(&mut status.clusters).into_iter();
        let names = self.names.read();
        status.clusters = p
            .entries
            .iter()
            .filter_map(|e| match e.state {
                ODD => odd.next(),
                _ => names.list.get(usize::from(e.cluster)).map(|n| e.unpack(n)),
            })
            .collect();
        status
    }

    /// The number of cluster `name` in the table of names (`None`: the
    /// table is full).
    fn name_index(&self, name: &str) -> Option<u16> {
        if let Some(i) = self.names.read().index.get(name) {
            return Some(*i);
        }
        let mut names = self.names.write();
        if let Some(i) = names.index.get(name) {
            return Some(*i);
        }
        let i = u16::try_from(names.list.len()).ok()?;
        let name: Arc<str> = Arc::from(name);
        names.list.push(name.clone());
        names.index.insert(name, i);
        Some(i)
    }
}

/// The cluster names the entries name, by number (only ever grows: one
/// per cluster ever recorded).
#[derive(Default)]
struct Names {
    list: Vec<Arc<str>>,
    index: HashMap<Arc<str>, u16>,
}

/// A record's status: its entries packed, and what they cannot say.
struct Packed {
    entries: Box<[Entry]>,
    /// The entries that do not pack (in order, one per [`Entry::ODD`]) as
    /// `clusters`, with the conditions and the rollout, as JSON (an odd
    /// entry, say a Failed one with its message, costs what it did as
    /// JSON, not ~400 bytes decoded); `None` when there is none of them
    /// (the usual record).
    rest: Option<Box<[u8]>>,
}

/// One per-cluster entry: `name`, `state`, `observedGeneration`, `hash`
/// and `resourceVersion` (what sync writes for a copy in sync), 32 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    /// The content hash's 32 hex digits as bytes.
    hash: [u8; 16],
    resource_version: u64,
    observed_generation: u32,
    /// The cluster's number in [`Names`].
    cluster: u16,
    /// [`STATES`]' index, or [`ODD`].
    state: u8,
    /// [`HAS_HASH`] | [`HAS_RESOURCE_VERSION`].
    has: u8,
}

/// The states an entry packs, by number.
const STATES: [&str; 3] = ["Pending", "InSync", "Failed"];
/// The state of an entry kept whole in [`Packed::rest`].
const ODD: u8 = u8::MAX;
const HAS_HASH: u8 = 1;
const HAS_RESOURCE_VERSION: u8 = 2;

impl Entry {
    const ODD: Self = Self {
        hash: [0; 16],
        resource_version: 0,
        observed_generation: 0,
        cluster: 0,
        state: ODD,
        has: 0,
    };

    /// `c` packed, when it has nothing but what an entry holds, each in a
    /// form that comes back byte for byte; `name_index` numbers the cluster.
    fn pack(c: &ClusterPropagation, name_index: impl FnOnce(&str) -> Option<u16>) -> Option<Self> {
        let ClusterPropagation {
            name,
            state,
            observed_generation,
            message,
            hash,
            resource_version,
            replicas,
            drift,
            template_hash,
            wave,
            wave_state,
        } = c;
        if !message.is_empty()
            || replicas.is_some()
            || !drift.is_empty()
            || template_hash.is_some()
            || wave.is_some()
            || wave_state.is_some()
        {
            return None;
        }
        let state = u8::try_from(STATES.iter().position(|s| s == state)?).ok()?;
        let observed_generation = u32::try_from(*observed_generation).ok()?;
        let mut has = 0;
        let hash = match hash {
            None => [0; 16],
            Some(h) => {
                let n = u128::from_str_radix(h, 16).ok()?;
                (format!("{n:032x}") == *h).then_some(())?;
                has |= HAS_HASH;
                n.to_be_bytes()
            }
        };
        let resource_version = match resource_version {
            None => 0,
            Some(v) => {
                let n: u64 = v.parse().ok()?;
                (n.to_string() == *v).then_some(())?;
                has |= HAS_RESOURCE_VERSION;
                n
            }
        };
        Some(Self {
            hash,
            resource_version,
            observed_generation,
            cluster: name_index(name)?,
            state,
            has,
        })
    }

    fn unpack(&self, name: &str) -> ClusterPropagation {
        ClusterPropagation {
            name: name.to_string(),
            state: STATES
                .get(usize::from(self.state))
                .copied()
                .unwrap_or_default()
                .to_string(),
            observed_generation: i64::from(self.observed_generation),
            hash: (self.has & HAS_HASH != 0)
                .then(|| format!("{:032x}", u128::from_be_bytes(self.hash))),
            resource_version: (self.has & HAS_RESOURCE_VERSION != 0)
                .then(|| self.resource_version.to_string()),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kube::runtime::reflector;
    use kube::runtime::watcher;
    use serde_json::json;

    use super::*;
    use crate::kinds::FederatedKind;
    use crate::version;

    /// A record whose status has `clusters` (as JSON).
    fn record_with(clusters: serde_json::Value) -> PropagationRecord {
        let kind = FederatedKind::new("apps", "v1", "Deployment", "deployments", true);
        let meta = ObjectMeta {
            name: Some("web".into()),
            namespace: Some("app".into()),
            uid: Some("u1".into()),
            ..Default::default()
        };
        let mut r = version::new_record(&kind, &meta);
        r.metadata.resource_version = Some("7".into());
        r.status = serde_json::from_value(json!({ "clusters": clusters })).expect("status");
        r
    }

    /// A record with every status field a reader uses set.
    fn full_record() -> PropagationRecord {
        let mut r = record_with(json!([{
            "name": "m1", "state": "Failed", "observedGeneration": 3,
            "message": "why", "hash": "h", "resourceVersion": "12", "replicas": 2,
            "drift": [{"path": "/spec/x", "ours": "1", "theirs": "2"}],
            "templateHash": "t", "wave": 1, "waveState": "Progressing"
        }]));
        let more: PropagationRecordStatus = serde_json::from_value(json!({
            "conditions": [{"type": "DNSNameConflict", "status": "True", "reason": "R",
                "message": "m", "lastTransitionTime": "2026-11-28T00:00:00Z"}],
            "rollout": {"templateHash": "t", "fromHash": "f", "waves": 2, "wave": 1,
                "halted": "no", "templates": {"t": {"a": 1}}}
        }))
        .expect("status");
        if let Some(s) = r.status.as_mut() {
            s.conditions = more.conditions;
            s.rollout = more.rollout;
        }
        r
    }

    const HASH: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn the_store_keeps_a_record_lean_and_gives_it_back_whole() {
        let whole = full_record();
        let statuses = Statuses::default();
        let mut lean = whole.clone();
        lean.metadata.managed_fields = Some(vec![Default::default()]);
        statuses.take(&mut lean);
        assert!(lean.status.is_none(), "the store keeps no status");
        assert!(lean.metadata.managed_fields.is_none(), "nor managedFields");
        // Every field of the status (what sync, finalize and the status
        // controller read) comes back.
        assert_eq!(*statuses.attach(&lean), whole);
        assert_eq!(
            version::state_of(&statuses.attach(&lean)),
            version::state_of(&whole)
        );
        // A record without status (just created) drops an older one.
        let mut bare = whole.clone();
        bare.status = None;
        statuses.take(&mut bare);
        assert!(statuses.attach(&bare).status.is_none());
    }

    #[test]
    fn entries_in_sync_are_packed_and_odd_ones_kept_whole_in_order() {
        let whole = record_with(json!([
            {"name": "a", "state": "InSync", "observedGeneration": 1, "hash": HASH,
             "resourceVersion": "123456"},
            {"name": "b", "state": "Pending", "observedGeneration": 0},
            // Not packed: an upper-case hash, a version with a leading
            // zero, a state of no known name, a generation past u32, a
            // message.
            {"name": "c", "state": "InSync", "observedGeneration": 1,
             "hash": HASH.to_uppercase(), "resourceVersion": "5"},
            {"name": "d", "state": "InSync", "observedGeneration": 1, "hash": HASH,
             "resourceVersion": "05"},
            {"name": "e", "state": "Sleeping", "observedGeneration": 1},
            {"name": "f", "state": "InSync", "observedGeneration": 5_000_000_000_i64},
            {"name": "g", "state": "Failed", "observedGeneration": 2, "message": "no"},
            {"name": "a2", "state": "Failed", "observedGeneration": 2, "hash": HASH},
        ]));
        let statuses = Statuses::default();
        let mut lean = whole.clone();
        statuses.take(&mut lean);
        assert_eq!(*statuses.attach(&lean), whole, "back byte for byte");
        let key = (lean.namespace().unwrap_or_default(), lean.name_any());
        let packed = statuses.by_record.lock().get(&key).cloned().expect("kept");
        let states: Vec<u8> = packed.entries.iter().map(|e| e.state).collect();
        assert_eq!(states, [1, 0, ODD, ODD, ODD, ODD, ODD, 2]);
        let rest: Option<PropagationRecordStatus> = packed
            .rest
            .as_deref()
            .and_then(|b| serde_json::from_slice(b).ok());
        assert_eq!(
            rest.map(|r| r.clusters.len()),
            Some(5),
            "only the odd entries are kept whole"
        );
        // A record of entries in sync only keeps no rest at all.
        let mut plain = record_with(json!([
            {"name": "a", "state": "InSync", "observedGeneration": 1, "hash": HASH,
             "resourceVersion": "1"}
        ]));
        let plain_whole = plain.clone();
        statuses.take(&mut plain);
        assert_eq!(*statuses.attach(&plain), plain_whole);
        let packed = statuses.by_record.lock().get(&key).cloned().expect("kept");
        assert!(packed.rest.is_none());
        assert_eq!(std::mem::size_of::<Entry>(), 32);
    }

    #[test]
    fn cluster_names_are_kept_once() {
        let statuses = Statuses::default();
        for n in 0..3 {
            let mut r = record_with(json!([
                {"name": "east", "state": "InSync", "observedGeneration": n},
                {"name": "west", "state": "InSync", "observedGeneration": n},
            ]));
            r.metadata.name = Some(format!("r{n}"));
            statuses.take(&mut r);
        }
        assert_eq!(statuses.names.read().list.len(), 2);
    }

    #[test]
    fn statuses_follow_the_records_deleted() {
        let statuses = Statuses::default();
        let mut lean = full_record();
        statuses.take(&mut lean);
        let mut writer = reflector::store::Writer::<PropagationRecord>::default();
        let store = writer.as_reader();
        writer.apply_watcher_event(&watcher::Event::Apply(lean.clone()));
        statuses.retain_stored(&store);
        assert!(statuses.attach(&lean).status.is_some(), "kept while stored");
        statuses.forget(&lean);
        assert!(
            statuses.attach(&lean).status.is_none(),
            "a delete event drops it"
        );
        statuses.take(&mut full_record());
        writer.apply_watcher_event(&watcher::Event::Delete(lean.clone()));
        statuses.retain_stored(&store);
        assert!(
            statuses.attach(&lean).status.is_none(),
            "gone from the store (a relist): dropped"
        );
    }
}
