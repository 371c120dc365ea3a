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

/// The shared record table of one zone: the DNS server reads
/// [`RecordStore::snapshot`] per query; the writer swaps in a new version
/// with [`RecordStore::replace`], atomically (a query sees the old table or
/// the new one, never a mix).
#[derive(Debug)]
pub struct RecordStore {
    zone: ZoneConfig,
    current: RwLock<Arc<Table>>,
}

impl RecordStore {
    /// An empty zone (SOA and NS only).
    pub fn new(zone: ZoneConfig) -> Arc<Self> {
        let (table, _) = Table::build(&zone, 1, BTreeMap::new());
        Arc::new(Self {
            zone,
            current: RwLock::new(Arc::new(table)),
        })
    }

    /// The zone.
    pub fn zone(&self) -> &ZoneConfig {
        &self.zone
    }

    /// The origin as text with its final dot, e.g. `example.com.`.
    pub fn origin(&self) -> String {
        self.zone.origin.to_ascii()
    }

    /// The table queries are answered from now.
    pub fn snapshot(&self) -> Arc<Table> {
        self.current.read().clone()
    }

    /// Replace every record with `sets` (name → records; names outside the
    /// zone or invalid are skipped and counted in the result). The SOA
    /// serial is bumped when anything changed; an unchanged set is a no-op.
    pub fn replace(&self, sets: BTreeMap<String, RecordSet>) -> usize {
        let current = self.snapshot();
        if current.sets == sets {
            return 0;
        }
        let serial = current.serial.wrapping_add(1).max(1);
        let (table, rejected) = Table::build(&self.zone, serial, sets);
        *self.current.write() = Arc::new(table);
        rejected
    }
}
