//! The record table: what the server answers, replaced whole by its
//! writer (the federation's DNS controller) and read lock-free-ish by every
//! query (an `Arc` snapshot taken under a short read lock).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;

use hickory_proto::rr::rdata::{A, AAAA, CNAME, NS, SOA};
use hickory_proto::rr::{LowerName, Name, RData, Record};
use parking_lot::RwLock;

/// The records of one name, as the writer states them (plain types, so
/// the writer needs no DNS library).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordSet {
    /// A / AAAA records, every address in each answer.
    Addresses(Vec<IpAddr>),
    /// A / AAAA records with relative weights: each answer lists every
    /// address, in an order drawn at random in proportion to the weights
    /// (the first address is address `i` with probability
    /// `weight_i / sum`), so clients, which mostly take the first, spread
    /// as the weights say. An address of weight 0 comes last.
    Weighted(Vec<(IpAddr, u32)>),
    /// A CNAME to another name (absolute, with or without the final dot).
    Cname(String),
}

/// The zone the server is authoritative for, and its fixed records.
#[derive(Clone, Debug)]
pub struct ZoneConfig {
    /// The zone's origin, e.g. `example.com.`.
    pub origin: Name,
    /// The TTL of every record (and the SOA minimum, the negative-caching TTL).
    pub ttl: u32,
    /// The addresses of the zone's name server `ns.<origin>` (its A / AAAA
    /// records and the glue of NS answers); may be empty.
    pub nameserver_addresses: Vec<IpAddr>,
}

impl ZoneConfig {
    /// A zone named `origin` (a trailing dot is optional) with records of
    /// `ttl` seconds.
    pub fn new(origin: &str, ttl: u32) -> anyhow::Result<Self> {
        let mut origin = Name::from_ascii(origin)
            .map_err(|e| anyhow::anyhow!("invalid DNS zone {origin:?}: {e}"))?;
        origin.set_fqdn(true);
        if origin.is_root() {
            anyhow::bail!("the DNS zone must not be the root");
        }
        Ok(Self {
            origin,
            ttl,
            nameserver_addresses: Vec::new(),
        })
    }

    /// The name server's name, `ns.<origin>`.
    pub fn nameserver(&self) -> Name {
        // "ns" is a valid label and origin is at most 253 bytes long minus
        // room a valid zone leaves; fall back to the origin itself.
        Name::from_ascii("ns")
            .and_then(|n| n.append_domain(&self.origin))
            .unwrap_or_else(|_| self.origin.clone())
    }
}

/// The records of one name, ready to answer.
#[derive(Clone, Debug)]
pub(crate) enum Entry {
    Addresses {
        v4: Vec<(Record, u32)>,
        v6: Vec<(Record, u32)>,
        weighted: bool,
    },
    Cname {
        record: Box<Record>,
        target: LowerName,
    },
}

/// One immutable version of the zone's records.
#[derive(Debug)]
pub struct Table {
    pub(crate) origin: LowerName,
    pub(crate) soa: Record,
    pub(crate) ns: Vec<Record>,
    pub(crate) names: HashMap<LowerName, Entry>,
    /// Every name that exists: the names with records and their ancestors
    /// down to the origin (empty non-terminals answer NODATA, not NXDOMAIN).
    pub(crate) existing: HashSet<LowerName>,
    /// The SOA serial of this version.
    pub serial: u32,
    /// The names and sets it was built from (for [`RecordStore::replace`]'s
    /// no-change check and for tests).
    pub sets: BTreeMap<String, RecordSet>,
}

impl Table {
    fn build(zone: &ZoneConfig, serial: u32, sets: BTreeMap<String, RecordSet>) -> (Self, usize) {
        let ttl = zone.ttl;
        let nameserver = zone.nameserver();
        let soa = Record::from_rdata(
            zone.origin.clone(),
            ttl,
            RData::SOA(SOA::new(
                nameserver.clone(),
                Name::from_ascii("hostmaster")
                    .and_then(|n| n.append_domain(&zone.origin))
                    .unwrap_or_else(|_| zone.origin.clone()),
                serial,
                3600,
                600,
                86400,
                ttl,
            )),
        );
        let ns = vec![Record::from_rdata(
            zone.origin.clone(),
            ttl,
            RData::NS(NS(nameserver.clone())),
        )];
        let origin = LowerName::from(zone.origin.clone());
        let mut table = Self {
            origin: origin.clone(),
            soa,
            ns,
            names: HashMap::new(),
            existing: HashSet::from([origin.clone()]),
            serial,
            sets: BTreeMap::new(),
        };
        let mut rejected = 0;
        for (name, set) in &sets {
            match parse_in_zone(name, &zone.origin) {
                Some(n) if n != zone.origin => {
                    if let Some(entry) = entry(&n, ttl, set) {
                        table.insert(n, entry);
                    }
                }
                _ => {
                    tracing::debug!(%name, "DNS name outside the zone or invalid; not served");
                    rejected += 1;
                }
            }
        }
        if !zone.nameserver_addresses.is_empty() {
            let set = RecordSet::Addresses(zone.nameserver_addresses.clone());
            if let Some(e) = entry(&nameserver, ttl, &set) {
                table.insert(nameserver, e);
            }
        }
        table.sets = sets;
        (table, rejected)
    }

    fn insert(&mut self, name: Name, entry: Entry) {
        let mut n = LowerName::from(name);
        self.names.insert(n.clone(), entry);
        while n != self.origin && !n.is_root() {
            self.existing.insert(n.clone());
            n = n.base_name();
        }
    }

    /// The zone's origin.
    pub fn origin(&self) -> &LowerName {
        &self.origin
    }
}

fn parse_in_zone(name: &str, origin: &Name) -> Option<Name> {
    let mut n = Name::from_ascii(name).ok()?;
    n.set_fqdn(true);
    origin.zone_of(&n).then_some(n)
}

fn entry(name: &Name, ttl: u32, set: &RecordSet) -> Option<Entry> {
    let weighted: Vec<(IpAddr, u32)> = match set {
        RecordSet::Cname(target) => {
            let mut t = Name::from_ascii(target).ok()?;
            t.set_fqdn(true);
            return Some(Entry::Cname {
                record: Box::new(Record::from_rdata(
                    name.clone(),
                    ttl,
                    RData::CNAME(CNAME(t.clone())),
                )),
                target: LowerName::from(t),
            });
        }
        RecordSet::Addresses(ips) => ips.iter().map(|ip| (*ip, 1)).collect(),
        RecordSet::Weighted(w) => w.clone(),
    };
    let mut v4 = Vec::new();
    let mut v6 = Vec::new();
    let mut seen = HashSet::new();
    for (ip, weight) in weighted {
        if !seen.insert(ip) {
            continue;
        }
        match ip {
            IpAddr::V4(a) => v4.push((
                Record::from_rdata(name.clone(), ttl, RData::A(A(a))),
                weight,
            )),
            IpAddr::V6(a) => v6.push((
                Record::from_rdata(name.clone(), ttl, RData::AAAA(AAAA(a))),
                weight,
            )),
        }
    }
    if v4.is_empty() && v6.is_empty() {
        return None;
    }
    Some(Entry::Addresses {
        v4,
        v6,
        weighted: matches!(set, RecordSet::Weighted(_)),
    })
}

/// One zone of a [`RecordStore`]: its configuration and its current table.
#[derive(Debug)]
struct Zone {
    config: ZoneConfig,
    origin: LowerName,
    current: RwLock<Arc<Table>>,
}

impl Zone {
    fn new(config: ZoneConfig) -> Self {
        let (table, _) = Table::build(&config, 1, BTreeMap::new());
        Self {
            origin: LowerName::from(config.origin.clone()),
            config,
            current: RwLock::new(Arc::new(table)),
        }
    }

    fn snapshot(&self) -> Arc<Table> {
        self.current.read().clone()
    }

    fn replace(&self, sets: BTreeMap<String, RecordSet>) -> usize {
        let current = self.snapshot();
        if current.sets == sets {
            return 0;
        }
        let serial = current.serial.wrapping_add(1).max(1);
        let (table, rejected) = Table::build(&self.config, serial, sets);
        *self.current.write() = Arc::new(table);
        rejected
    }
}

/// The shared record tables of the zones the server is authoritative for
/// (the main zone, `--dns-zone`, and any others, e.g. `clusterset.local`):
/// the DNS server reads the table of a query's zone per query
/// ([`RecordStore::snapshot_for`]); each zone's writer swaps in a new
/// version with [`RecordStore::replace`] (the main zone) or
/// [`RecordStore::replace_in`], atomically (a query sees the old table or
/// the new one, never a mix). The zones are fixed when the store is made,
/// so finding a query's zone takes no lock.
#[derive(Debug)]
pub struct RecordStore {
    /// The main zone first; never empty.
    zones: Vec<Zone>,
}

impl RecordStore {
    /// One empty zone (SOA and NS only).
    pub fn new(zone: ZoneConfig) -> Arc<Self> {
        Arc::new(Self {
            zones: vec![Zone::new(zone)],
        })
    }

    /// Several empty zones, the first the main one ([`RecordStore::zone`]).
    /// An error when there is none or two have the same origin. A zone
    /// inside another (`a.example.com` and `example.com`) answers the names
    /// under it: a query goes to the most specific zone that holds it.
    pub fn with_zones(zones: Vec<ZoneConfig>) -> anyhow::Result<Arc<Self>> {
        if zones.is_empty() {
            anyhow::bail!("a DNS server needs a zone");
        }
        let zones: Vec<Zone> = zones.into_iter().map(Zone::new).collect();
        for (i, z) in zones.iter().enumerate() {
            if zones[..i].iter().any(|o| o.origin == z.origin) {
                anyhow::bail!("the DNS zone {} is given twice", z.config.origin);
            }
        }
        Ok(Arc::new(Self { zones }))
    }

    fn main(&self) -> &Zone {
        // `new` and `with_zones` never make a store without a zone.
        &self.zones[0]
    }

    /// The main zone.
    pub fn zone(&self) -> &ZoneConfig {
        &self.main().config
    }

    /// Every zone, the main one first.
    pub fn zones(&self) -> impl Iterator<Item = &ZoneConfig> {
        self.zones.iter().map(|z| &z.config)
    }

    /// The main zone's origin as text with its final dot, e.g. `example.com.`.
    pub fn origin(&self) -> String {
        self.main().config.origin.to_ascii()
    }

    /// The main zone's table queries are answered from now.
    pub fn snapshot(&self) -> Arc<Table> {
        self.main().snapshot()
    }

    /// The table of the most specific zone holding `name`, or the main
    /// zone's when none does (it refuses the name).
    pub fn snapshot_for(&self, name: &LowerName) -> Arc<Table> {
        if let [only] = &self.zones[..] {
            return only.snapshot();
        }
        self.zones
            .iter()
            .filter(|z| z.origin.zone_of(name))
            .max_by_key(|z| z.origin.num_labels())
            .unwrap_or_else(|| self.main())
            .snapshot()
    }

    /// The table of the zone `origin` (a trailing dot is optional, case
    /// does not matter), if the store has it.
    pub fn snapshot_of(&self, origin: &str) -> Option<Arc<Table>> {
        self.find(origin).map(Zone::snapshot)
    }

    fn find(&self, origin: &str) -> Option<&Zone> {
        let mut name = Name::from_ascii(origin).ok()?;
        name.set_fqdn(true);
        let name = LowerName::from(name);
        self.zones.iter().find(|z| z.origin == name)
    }

    /// Replace every record of the main zone with `sets` (name → records;
    /// names outside the zone or invalid are skipped and counted in the
    /// result). The SOA serial is bumped when anything changed; an
    /// unchanged set is a no-op.
    pub fn replace(&self, sets: BTreeMap<String, RecordSet>) -> usize {
        self.main().replace(sets)
    }

    /// [`RecordStore::replace`] for the zone `origin` (as
    /// [`RecordStore::snapshot_of`] names it); `None` when the store has no
    /// such zone.
    pub fn replace_in(&self, origin: &str, sets: BTreeMap<String, RecordSet>) -> Option<usize> {
        self.find(origin).map(|z| z.replace(sets))
    }
}
