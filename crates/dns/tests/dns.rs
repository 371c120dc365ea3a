//! The DNS server's answers: through the packet path (`handle_packet`)
//! and through real UDP and TCP sockets on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failing test may panic

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{DNSClass, Name, RData, RecordType};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_util::sync::CancellationToken;
use ubernetes_dns::answer::{handle_packet, handle_packet_in};
use ubernetes_dns::{DnsServer, RecordSet, RecordStore, ZoneConfig};

const GLOBAL: &str = "web.default.fed.svc.example.com.";
const REGION: &str = "web.default.fed.svc.east.example.com.";
const ZONE: &str = "web.default.fed.svc.east-1.east.example.com.";
const ZONE_B: &str = "web.default.fed.svc.east-2.east.example.com.";

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn store() -> std::sync::Arc<RecordStore> {
    let mut zone = ZoneConfig::new("example.com", 180).unwrap();
    zone.nameserver_addresses = vec![ip("127.0.0.1")];
    let store = RecordStore::new(zone);
    let sets = BTreeMap::from([
        (
            GLOBAL.to_string(),
            RecordSet::Addresses(vec![ip("192.0.2.1"), ip("192.0.2.2"), ip("2001:db8::1")]),
        ),
        (
            REGION.to_string(),
            RecordSet::Addresses(vec![ip("192.0.2.1")]),
        ),
        (
            ZONE.to_string(),
            RecordSet::Addresses(vec![ip("192.0.2.1")]),
        ),
        (ZONE_B.to_string(), RecordSet::Cname(REGION.to_string())),
    ]);
    assert_eq!(store.replace(sets), 0);
    store
}

fn query(name: &str, qtype: RecordType) -> Message {
    let mut m = Message::new();
    m.set_id(4242)
        .set_message_type(MessageType::Query)
        .set_op_code(OpCode::Query)
        .set_recursion_desired(true);
    m.add_query(Query::query(Name::from_ascii(name).unwrap(), qtype));
    m
}

fn ask(store: &RecordStore, m: &Message) -> Message {
    let bytes = handle_packet_in(store, &m.to_vec().unwrap(), 512).expect("an answer");
    Message::from_vec(&bytes).unwrap()
}

fn addrs(m: &Message) -> Vec<String> {
    let mut v: Vec<String> = m
        .answers()
        .iter()
        .filter_map(|r| match r.data() {
            RData::A(a) => Some(a.0.to_string()),
            RData::AAAA(a) => Some(a.0.to_string()),
            _ => None,
        })
        .collect();
    v.sort();
    v
}

fn cnames(m: &Message) -> Vec<(String, String)> {
    m.answers()
        .iter()
        .filter_map(|r| match r.data() {
            RData::CNAME(c) => Some((r.name().to_ascii(), c.0.to_ascii())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_and_aaaa_records_answer_authoritatively_with_the_ttl() {
    let store = store();
    let r = ask(&store, &query(GLOBAL, RecordType::A));
    assert_eq!(r.response_code(), ResponseCode::NoError);
    assert!(r.authoritative());
    assert!(!r.recursion_available());
    assert_eq!(r.id(), 4242);
    assert_eq!(addrs(&r), ["192.0.2.1", "192.0.2.2"]);
    assert!(r.answers().iter().all(|a| a.ttl() == 180));
    let r = ask(&store, &query(GLOBAL, RecordType::AAAA));
    assert_eq!(addrs(&r), ["2001:db8::1"]);
    // Names are case-insensitive.
    let r = ask(
        &store,
        &query("WEB.Default.FED.svc.example.COM.", RecordType::A),
    );
    assert_eq!(addrs(&r).len(), 2);
}

#[test]
fn a_cname_is_followed_inside_the_zone() {
    let store = store();
    let r = ask(&store, &query(ZONE_B, RecordType::A));
    assert_eq!(r.response_code(), ResponseCode::NoError);
    assert_eq!(cnames(&r), [(ZONE_B.to_string(), REGION.to_string())]);
    assert_eq!(addrs(&r), ["192.0.2.1"]);
    // Asked for the CNAME itself: only it.
    let r = ask(&store, &query(ZONE_B, RecordType::CNAME));
    assert_eq!(cnames(&r).len(), 1);
    assert!(addrs(&r).is_empty());
}

#[test]
fn nxdomain_and_nodata_are_told_apart_with_the_soa() {
    let store = store();
    // No such name.
    let r = ask(
        &store,
        &query("nope.default.fed.svc.example.com.", RecordType::A),
    );
    assert_eq!(r.response_code(), ResponseCode::NXDomain);
    assert!(r.authoritative());
    assert!(r.answers().is_empty());
    assert_eq!(r.name_servers().len(), 1);
    assert_eq!(r.name_servers()[0].record_type(), RecordType::SOA);
    // The name exists, not with this type: NODATA.
    let r = ask(&store, &query(REGION, RecordType::AAAA));
    assert_eq!(r.response_code(), ResponseCode::NoError);
    assert!(r.answers().is_empty());
    assert_eq!(r.name_servers()[0].record_type(), RecordType::SOA);
    let r = ask(&store, &query(GLOBAL, RecordType::MX));
    assert_eq!(r.response_code(), ResponseCode::NoError);
    assert!(r.answers().is_empty());
    // An empty non-terminal exists: NODATA, not NXDOMAIN.
    for ent in [
        "svc.example.com.",
        "fed.svc.example.com.",
        "east.example.com.",
    ] {
        let r = ask(&store, &query(ent, RecordType::A));
        assert_eq!(r.response_code(), ResponseCode::NoError, "{ent}");
        assert!(r.answers().is_empty(), "{ent}");
    }
    // A CNAME whose in-zone target is gone: NXDOMAIN after the CNAME.
    store.replace(BTreeMap::from([(
        ZONE_B.to_string(),
        RecordSet::Cname(REGION.to_string()),
    )]));
    let r = ask(&store, &query(ZONE_B, RecordType::A));
    assert_eq!(r.response_code(), ResponseCode::NXDomain);
    assert_eq!(cnames(&r).len(), 1);
}

#[test]
fn the_zone_has_its_soa_and_ns_and_the_serial_follows_changes() {
    let store = store();
    let r = ask(&store, &query("example.com.", RecordType::SOA));
    let RData::SOA(soa) = r.answers()[0].data() else {
        panic!("not an SOA: {r:?}")
    };
    assert_eq!(soa.mname().to_ascii(), "ns.example.com.");
    assert_eq!(soa.minimum(), 180);
    let serial = soa.serial();
    let r = ask(&store, &query("example.com.", RecordType::NS));
    assert_eq!(r.answers()[0].record_type(), RecordType::NS);
    assert_eq!(
        addrs(&Message::new().add_answers(r.additionals().to_vec()).clone()),
        ["127.0.0.1"]
    );
    let r = ask(&store, &query("ns.example.com.", RecordType::A));
    assert_eq!(addrs(&r), ["127.0.0.1"]);
    // The apex has no A: NODATA.
    let r = ask(&store, &query("example.com.", RecordType::A));
    assert_eq!(r.response_code(), ResponseCode::NoError);
    assert!(r.answers().is_empty());
    // The same records again: no new serial; a change: a new one.
    let same = store.snapshot().sets.clone();
    store.replace(same);
    assert_eq!(store.snapshot().serial, serial);
    store.replace(BTreeMap::new());
    assert_eq!(store.snapshot().serial, serial + 1);
    let r = ask(&store, &query(GLOBAL, RecordType::A));
    assert_eq!(r.response_code(), ResponseCode::NXDomain);
}

#[test]
fn names_outside_the_zone_and_other_requests_are_refused() {
    let store = store();
    let r = ask(&store, &query("example.org.", RecordType::A));
    assert_eq!(r.response_code(), ResponseCode::Refused);
    assert!(!r.authoritative());
    assert!(!r.recursion_available());
    let r = ask(&store, &query("com.", RecordType::A));
    assert_eq!(r.response_code(), ResponseCode::Refused);
    // Zone transfer.
    let r = ask(&store, &query("example.com.", RecordType::AXFR));
    assert_eq!(r.response_code(), ResponseCode::Refused);
    // Class CH.
    let mut m = query(GLOBAL, RecordType::A);
    let mut q = m.queries()[0].clone();
    q.set_query_class(DNSClass::CH);
    m.take_queries();
    m.add_query(q);
    assert_eq!(ask(&store, &m).response_code(), ResponseCode::Refused);
    // Not a query.
    let mut m = query(GLOBAL, RecordType::A);
    m.set_op_code(OpCode::Update);
    assert_eq!(ask(&store, &m).response_code(), ResponseCode::NotImp);
    // Two questions.
    let mut m = query(GLOBAL, RecordType::A);
    m.add_query(Query::query(
        Name::from_ascii(REGION).unwrap(),
        RecordType::A,
    ));
    assert_eq!(ask(&store, &m).response_code(), ResponseCode::FormErr);
    // A response is never answered (no reflection).
    let mut m = query(GLOBAL, RecordType::A);
    m.set_message_type(MessageType::Response);
    assert!(handle_packet(&store.snapshot(), &m.to_vec().unwrap(), 512).is_none());
}

#[test]
fn malformed_packets_get_formerr_or_nothing() {
    let store = store();
    let table = store.snapshot();
    assert!(handle_packet(&table, &[], 512).is_none());
    assert!(handle_packet(&table, &[1, 2, 3], 512).is_none());
    // A header announcing a question that is not there.
    let mut bytes = query(GLOBAL, RecordType::A).to_vec().unwrap();
    bytes.truncate(20);
    let r = Message::from_vec(&handle_packet(&table, &bytes, 512).unwrap()).unwrap();
    assert_eq!(r.response_code(), ResponseCode::FormErr);
    assert_eq!(r.id(), 4242);
    // Every prefix and single-byte corruption of a valid query.
    let valid = query(ZONE_B, RecordType::A).to_vec().unwrap();
    for n in 0..valid.len() {
        let _ = handle_packet(&table, &valid[..n], 512);
        for b in [0u8, 0x3f, 0xc0, 0xff] {
            let mut v = valid.clone();
            v[n] = b;
            let _ = handle_packet(&table, &v, 512);
        }
    }
}

#[test]
fn edns_is_answered_and_a_higher_version_is_badvers() {
    let store = store();
    let mut m = query(GLOBAL, RecordType::A);
    let mut edns = Edns::new();
    edns.set_max_payload(1232);
    m.set_edns(edns.clone());
    let r = ask(&store, &m);
    assert_eq!(r.extensions().as_ref().unwrap().max_payload(), 1232);
    edns.set_version(1);
    m.set_edns(edns);
    let r = ask(&store, &m);
    // BADVERS and BADSIG share code 16 (RFC 6891, RFC 8945).
    assert_eq!(
        u16::from(r.response_code()),
        u16::from(ResponseCode::BADVERS)
    );
}

#[test]
fn weighted_answers_put_addresses_first_in_proportion() {
    let mut zone = ZoneConfig::new("example.com.", 30).unwrap();
    zone.nameserver_addresses.clear();
    let store = RecordStore::new(zone);
    store.replace(BTreeMap::from([(
        GLOBAL.to_string(),
        RecordSet::Weighted(vec![
            (ip("192.0.2.1"), 3),
            (ip("192.0.2.2"), 1),
            (ip("192.0.2.3"), 0),
        ]),
    )]));
    let mut first: HashMap<String, u32> = HashMap::new();
    let n = 4000;
    for _ in 0..n {
        let r = ask(&store, &query(GLOBAL, RecordType::A));
        assert_eq!(r.answers().len(), 3, "every address is listed");
        let RData::A(a) = r.answers()[0].data() else {
            panic!()
        };
        *first.entry(a.0.to_string()).or_default() += 1;
        let RData::A(last) = r.answers()[2].data() else {
            panic!()
        };
        assert_eq!(last.0.to_string(), "192.0.2.3", "weight 0 comes last");
    }
    let share = f64::from(first["192.0.2.1"]) / f64::from(n);
    assert!(
        (share - 0.75).abs() < 0.04,
        "share of weight 3 of 4: {share}"
    );
    assert!(!first.contains_key("192.0.2.3"));
}

#[test]
fn invalid_and_foreign_names_are_skipped() {
    let store = RecordStore::new(ZoneConfig::new("example.com.", 30).unwrap());
    let rejected = store.replace(BTreeMap::from([
        (
            "a.example.org.".to_string(),
            RecordSet::Addresses(vec![ip("192.0.2.1")]),
        ),
        (
            "bad..name.example.com.".to_string(),
            RecordSet::Addresses(vec![ip("192.0.2.1")]),
        ),
        (
            "ok.example.com".to_string(),
            RecordSet::Addresses(vec![ip("192.0.2.1")]),
        ),
    ]));
    assert_eq!(rejected, 2);
    let r = ask(&store, &query("ok.example.com.", RecordType::A));
    assert_eq!(addrs(&r), ["192.0.2.1"]);
    assert!(ZoneConfig::new(".", 30).is_err());
}

const CLUSTERSET: &str = "web.default.svc.clusterset.local.";

/// The main zone of [`store`] and `clusterset.local` beside it, one record
/// in the second.
fn two_zones() -> std::sync::Arc<RecordStore> {
    let mut main = ZoneConfig::new("example.com", 180).unwrap();
    main.nameserver_addresses = vec![ip("127.0.0.1")];
    let mut clusterset = ZoneConfig::new("clusterset.local", 30).unwrap();
    clusterset.nameserver_addresses = vec![ip("127.0.0.1")];
    let store = RecordStore::with_zones(vec![main, clusterset]).unwrap();
    assert_eq!(
        store.replace(BTreeMap::from([(
            GLOBAL.to_string(),
            RecordSet::Addresses(vec![ip("192.0.2.1")]),
        )])),
        0
    );
    let sets = BTreeMap::from([(
        CLUSTERSET.to_string(),
        RecordSet::Addresses(vec![ip("10.1.0.1"), ip("10.2.0.1"), ip("fd00::1")]),
    )]);
    assert_eq!(store.replace_in("ClusterSet.Local", sets), Some(0));
    store
}

#[test]
fn a_second_zone_answers_from_its_own_table_with_its_own_soa() {
    let store = two_zones();
    assert_eq!(store.origin(), "example.com.");
    assert_eq!(
        store
            .zones()
            .map(|z| z.origin.to_ascii())
            .collect::<Vec<_>>(),
        ["example.com.", "clusterset.local."]
    );
    let r = ask(&store, &query(CLUSTERSET, RecordType::A));
    assert_eq!(r.response_code(), ResponseCode::NoError);
    assert!(r.authoritative());
    assert_eq!(addrs(&r), ["10.1.0.1", "10.2.0.1"]);
    assert!(r.answers().iter().all(|a| a.ttl() == 30));
    let r = ask(&store, &query(CLUSTERSET, RecordType::AAAA));
    assert_eq!(addrs(&r), ["fd00::1"]);
    // The main zone keeps answering from its table.
    let r = ask(&store, &query(GLOBAL, RecordType::A));
    assert_eq!(addrs(&r), ["192.0.2.1"]);
    // A name of the second zone without records: NXDOMAIN with its SOA.
    let r = ask(
        &store,
        &query("db.default.svc.clusterset.local.", RecordType::A),
    );
    assert_eq!(r.response_code(), ResponseCode::NXDomain);
    assert!(r.authoritative());
    let [soa] = r.name_servers() else {
        panic!("one SOA: {r:?}")
    };
    assert_eq!(soa.name().to_ascii(), "clusterset.local.");
    let RData::SOA(data) = soa.data() else {
        panic!("not an SOA: {r:?}")
    };
    assert_eq!(data.mname().to_ascii(), "ns.clusterset.local.");
    // Its apex: SOA and NS (with glue), as the main zone's.
    let r = ask(&store, &query("clusterset.local.", RecordType::SOA));
    assert_eq!(r.answers().len(), 1);
    assert_eq!(r.answers()[0].record_type(), RecordType::SOA);
    let r = ask(&store, &query("clusterset.local.", RecordType::NS));
    assert_eq!(r.answers()[0].record_type(), RecordType::NS);
    assert_eq!(
        addrs(&Message::new().add_answers(r.additionals().to_vec()).clone()),
        ["127.0.0.1"]
    );
    // An empty non-terminal of the second zone: NODATA.
    let r = ask(
        &store,
        &query("default.svc.clusterset.local.", RecordType::A),
    );
    assert_eq!(r.response_code(), ResponseCode::NoError);
    assert!(r.answers().is_empty());
    // A name of the main zone's spelling in the other: NXDOMAIN there.
    let r = ask(
        &store,
        &query("web.default.fed.svc.clusterset.local.", RecordType::A),
    );
    assert_eq!(r.response_code(), ResponseCode::NXDomain);
    // Outside both: REFUSED.
    for name in ["local.", "example.org.", "other.local."] {
        let r = ask(&store, &query(name, RecordType::A));
        assert_eq!(r.response_code(), ResponseCode::Refused, "{name}");
    }
    // Writing one zone leaves the other alone; an unknown zone is None.
    let serial = store.snapshot().serial;
    assert_eq!(
        store.replace_in("clusterset.local.", BTreeMap::new()),
        Some(0)
    );
    let r = ask(&store, &query(CLUSTERSET, RecordType::A));
    assert_eq!(r.response_code(), ResponseCode::NXDomain);
    assert_eq!(store.snapshot().serial, serial);
    assert_eq!(
        addrs(&ask(&store, &query(GLOBAL, RecordType::A))),
        ["192.0.2.1"]
    );
    assert!(store.replace_in("example.org", BTreeMap::new()).is_none());
    assert!(store.snapshot_of("clusterset.local").is_some());
    // A name of the main zone written into the second is not served.
    assert_eq!(
        store.replace_in(
            "clusterset.local",
            BTreeMap::from([(
                GLOBAL.to_string(),
                RecordSet::Addresses(vec![ip("10.0.0.9")])
            )])
        ),
        Some(1)
    );
}

#[test]
fn zones_are_distinct_and_the_most_specific_one_answers() {
    let zone = |o: &str| ZoneConfig::new(o, 60).unwrap();
    assert!(RecordStore::with_zones(vec![]).is_err());
    assert!(RecordStore::with_zones(vec![zone("example.com"), zone("EXAMPLE.com.")]).is_err());
    let store = RecordStore::with_zones(vec![zone("local"), zone("clusterset.local")]).unwrap();
    store.replace(BTreeMap::from([(
        "a.local.".to_string(),
        RecordSet::Addresses(vec![ip("192.0.2.7")]),
    )]));
    store.replace_in(
        "clusterset.local",
        BTreeMap::from([(
            "b.clusterset.local.".to_string(),
            RecordSet::Addresses(vec![ip("192.0.2.8")]),
        )]),
    );
    assert_eq!(
        addrs(&ask(&store, &query("a.local.", RecordType::A))),
        ["192.0.2.7"]
    );
    assert_eq!(
        addrs(&ask(&store, &query("b.clusterset.local.", RecordType::A))),
        ["192.0.2.8"]
    );
    // The inner zone's apex is its own.
    let r = ask(&store, &query("clusterset.local.", RecordType::SOA));
    assert_eq!(r.answers()[0].name().to_ascii(), "clusterset.local.");
}

#[tokio::test]
async fn the_server_answers_every_zone_over_udp() {
    let stop = CancellationToken::new();
    let server = DnsServer::start("127.0.0.1:0".parse().unwrap(), two_zones(), stop.clone())
        .await
        .unwrap();
    let sock = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let mut buf = vec![0u8; 4096];
    for (name, want) in [
        (CLUSTERSET, vec!["10.1.0.1", "10.2.0.1"]),
        (GLOBAL, vec!["192.0.2.1"]),
    ] {
        sock.send_to(
            &query(name, RecordType::A).to_vec().unwrap(),
            server.local_addr,
        )
        .await
        .unwrap();
        let (n, _) = tokio::time::timeout(Duration::from_secs(5), sock.recv_from(&mut buf))
            .await
            .expect("a UDP answer")
            .unwrap();
        let r = Message::from_vec(&buf[..n]).unwrap();
        assert!(r.authoritative(), "{name}");
        assert_eq!(addrs(&r), want, "{name}");
    }
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), server.stopped())
        .await
        .expect("the server stops");
}

#[tokio::test]
async fn the_server_answers_over_udp_and_tcp() {
    let stop = CancellationToken::new();
    let server = DnsServer::start("127.0.0.1:0".parse().unwrap(), store(), stop.clone())
        .await
        .unwrap();
    let addr: SocketAddr = server.local_addr;

    // UDP.
    let sock = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    sock.send_to(&query(GLOBAL, RecordType::A).to_vec().unwrap(), addr)
        .await
        .unwrap();
    let mut buf = vec![0u8; 4096];
    let (n, _) = tokio::time::timeout(Duration::from_secs(5), sock.recv_from(&mut buf))
        .await
        .expect("a UDP answer")
        .unwrap();
    let r = Message::from_vec(&buf[..n]).unwrap();
    assert_eq!(addrs(&r), ["192.0.2.1", "192.0.2.2"]);
    assert!(r.authoritative());

    // Garbage over UDP: the server survives and answers the next query.
    sock.send_to(&[0xff; 7], addr).await.unwrap();
    sock.send_to(&[0x12, 0x34, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0xc0], addr)
        .await
        .unwrap();

    // TCP, two-byte length prefix.
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let q = query("nope.example.com.", RecordType::A).to_vec().unwrap();
    let mut framed = u16::try_from(q.len()).unwrap().to_be_bytes().to_vec();
    framed.extend_from_slice(&q);
    tcp.write_all(&framed).await.unwrap();
    let len = tokio::time::timeout(Duration::from_secs(5), tcp.read_u16())
        .await
        .expect("a TCP answer")
        .unwrap();
    let mut body = vec![0u8; usize::from(len)];
    tcp.read_exact(&mut body).await.unwrap();
    let r = Message::from_vec(&body).unwrap();
    assert_eq!(r.response_code(), ResponseCode::NXDomain);

    // Still answering after the garbage.
    sock.send_to(&query(REGION, RecordType::A).to_vec().unwrap(), addr)
        .await
        .unwrap();
    loop {
        let (n, _) = tokio::time::timeout(Duration::from_secs(5), sock.recv_from(&mut buf))
            .await
            .expect("an answer after garbage")
            .unwrap();
        let r = Message::from_vec(&buf[..n]).unwrap();
        if r.id() == 4242 && !r.answers().is_empty() {
            assert_eq!(addrs(&r), ["192.0.2.1"]);
            break;
        }
    }

    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), server.stopped())
        .await
        .expect("the server stops");
}

#[test]
fn the_fuzz_seeds_are_answered_with_well_formed_messages() {
    // fuzz/corpus/dns_packet: the seeds of the `dns_packet` fuzz target,
    // with the checks it makes.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/dns_packet");
    let store = store();
    let table = store.snapshot();
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        for max in [512u16, u16::MAX] {
            let out = handle_packet(&table, &data, max).expect("every seed is answered");
            let m = Message::from_vec(&out).unwrap();
            assert_eq!(m.message_type(), MessageType::Response);
            assert_eq!(out[..2], data[..2]);
            assert!(!m.recursion_available());
        }
        n += 1;
    }
    assert!(n >= 10, "seeds in {}", dir.display());
    // fuzz/regressions/dns_packet: inputs the fuzzer once broke the
    // checks with; answered readably or not at all.
    let dir = dir.join("../../regressions/dns_packet");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        for max in [512u16, u16::MAX] {
            if let Some(out) = handle_packet(&table, &data, max) {
                let m = Message::from_vec(&out).unwrap();
                assert_eq!(m.message_type(), MessageType::Response);
            }
        }
    }
}

fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_queries_leaves_memory_bounded_and_the_server_answering() {
    let stop = CancellationToken::new();
    let server = DnsServer::start("127.0.0.1:0".parse().unwrap(), store(), stop.clone())
        .await
        .unwrap();
    let addr = server.local_addr;
    let sock = std::sync::Arc::new(tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap());
    // Drain answers so our own socket buffer never blocks the server.
    let received = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let reader = {
        let sock = sock.clone();
        let received = received.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            while sock.recv_from(&mut buf).await.is_ok() {
                received.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        })
    };
    let queries: Vec<Vec<u8>> = [
        query(GLOBAL, RecordType::A),
        query(ZONE_B, RecordType::A),
        query("nope.example.com.", RecordType::AAAA),
        query("example.org.", RecordType::A),
    ]
    .iter()
    .map(|m| m.to_vec().unwrap())
    .collect();
    let flood = |n: usize| {
        let sock = sock.clone();
        let queries = queries.clone();
        async move {
            for i in 0..n {
                let q = &queries[i % queries.len()];
                sock.send_to(q, addr).await.unwrap();
                // Garbage in between.
                if i % 7 == 0 {
                    sock.send_to(&q[..i % q.len()], addr).await.unwrap();
                }
                if i % 256 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        }
    };
    // Warm up, then measure over a flood ten times as long.
    flood(5_000).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss_kib().unwrap_or(0);
    flood(50_000).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib().unwrap_or(0);
    eprintln!(
        "RSS {before} KiB -> {after} KiB over 50,000 queries; {} answers",
        received.load(std::sync::atomic::Ordering::Relaxed)
    );
    assert!(
        after.saturating_sub(before) < 32 * 1024,
        "resident memory grew from {before} KiB to {after} KiB over 50,000 queries"
    );
    // UDP drops what the socket buffers cannot hold; many are answered.
    assert!(
        received.load(std::sync::atomic::Ordering::Relaxed) > 1_000,
        "answers received: {}",
        received.load(std::sync::atomic::Ordering::Relaxed)
    );
    // Still answering.
    let probe = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let mut q = query(REGION, RecordType::A);
    q.set_id(777);
    probe.send_to(&q.to_vec().unwrap(), addr).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let (n, _) = tokio::time::timeout(Duration::from_secs(5), probe.recv_from(&mut buf))
        .await
        .expect("an answer after the flood")
        .unwrap();
    let r = Message::from_vec(&buf[..n]).unwrap();
    assert_eq!(r.id(), 777);
    assert_eq!(addrs(&r), ["192.0.2.1"]);
    reader.abort();
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), server.stopped())
        .await
        .expect("the server stops");
}

/// `ubernetes_federation_dns_queries_total{rcode, qtype}` from the process
/// registry (what `/metrics` serves).
fn queries_counted(rcode: &str, qtype: &str) -> u64 {
    prometheus::gather()
        .iter()
        .filter(|f| f.name() == "ubernetes_federation_dns_queries_total")
        .flat_map(|f| f.get_metric().to_vec())
        .filter(|m| {
            let l = m.get_label();
            l.iter().any(|l| l.name() == "rcode" && l.value() == rcode)
                && l.iter().any(|l| l.name() == "qtype" && l.value() == qtype)
        })
        .map(|m| m.get_counter().get_value() as u64)
        .sum()
}

#[tokio::test]
async fn the_server_counts_its_answers_by_code_and_type() {
    let stop = CancellationToken::new();
    let server = DnsServer::start("127.0.0.1:0".parse().unwrap(), store(), stop.clone())
        .await
        .unwrap();
    let before = queries_counted("REFUSED", "SRV");
    let sock = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    for _ in 0..2 {
        sock.send_to(
            &query("elsewhere.example.org.", RecordType::SRV)
                .to_vec()
                .unwrap(),
            server.local_addr,
        )
        .await
        .unwrap();
        let mut buf = vec![0u8; 4096];
        let (n, _) = tokio::time::timeout(Duration::from_secs(5), sock.recv_from(&mut buf))
            .await
            .expect("a UDP answer")
            .unwrap();
        let r = Message::from_vec(&buf[..n]).unwrap();
        assert_eq!(r.response_code(), ResponseCode::Refused);
    }
    assert_eq!(queries_counted("REFUSED", "SRV"), before + 2);
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), server.stopped())
        .await
        .expect("the server stops");
}
