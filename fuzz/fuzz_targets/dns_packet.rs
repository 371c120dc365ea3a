//! Fuzz the embedded DNS server's packet path (`ubernetes_dns::answer::
//! handle_packet_in`: hickory's decoder, the choice of the question's zone,
//! our answer logic, hickory's encoder) with any bytes as a UDP or TCP
//! request, against a zone with addresses, weighted addresses, a CNAME
//! chain and a CNAME loop, and a second zone (`clusterset.local`). Beyond
//! "no panic": every answer is a well-formed DNS message no longer than the limit,
//! carries the request's id, and is a response.

#![no_main]

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use hickory_proto::op::{Message, MessageType};
use libfuzzer_sys::fuzz_target;
use ubernetes_dns::{RecordSet, RecordStore, ZoneConfig};

fn store() -> &'static RecordStore {
    static STORE: OnceLock<Arc<RecordStore>> = OnceLock::new();
    STORE.get_or_init(|| {
        let Ok(mut zone) = ZoneConfig::new("example.com.", 180) else {
            panic!("the zone parses")
        };
        zone.nameserver_addresses = vec![[127, 0, 0, 1].into()];
        let Ok(mut clusterset) = ZoneConfig::new("clusterset.local", 30) else {
            panic!("the zone parses")
        };
        clusterset.nameserver_addresses = zone.nameserver_addresses.clone();
        let Ok(store) = RecordStore::with_zones(vec![zone, clusterset]) else {
            panic!("two distinct zones")
        };
        store.replace_in(
            "clusterset.local",
            BTreeMap::from([(
                "web.default.svc.clusterset.local.".to_string(),
                RecordSet::Addresses(vec![[10, 1, 0, 1].into(), [10, 2, 0, 1].into()]),
            )]),
        );
        let g = "web.default.fed.svc.example.com.";
        let r = "web.default.fed.svc.east.example.com.";
        store.replace(BTreeMap::from([
            (
                g.to_string(),
                RecordSet::Weighted(vec![
                    ([192, 0, 2, 1].into(), 3),
                    ([192, 0, 2, 2].into(), 0),
                    ("2001:db8::1".parse().unwrap_or([0u16; 8].into()), 1),
                ]),
            ),
            (r.to_string(), RecordSet::Cname(g.to_string())),
            (
                "web.default.fed.svc.east-1.east.example.com.".to_string(),
                RecordSet::Cname(r.to_string()),
            ),
            (
                "a.loop.example.com.".to_string(),
                RecordSet::Cname("b.loop.example.com.".into()),
            ),
            (
                "b.loop.example.com.".to_string(),
                RecordSet::Cname("a.loop.example.com.".into()),
            ),
            (
                "out.example.com.".to_string(),
                RecordSet::Addresses(vec![[198, 51, 100, 7].into()]),
            ),
        ]));
        store
    })
}

fuzz_target!(|data: &[u8]| {
    let store = store();
    for max in [512u16, u16::MAX] {
        let Some(out) = ubernetes_dns::answer::handle_packet_in(store, data, max) else {
            continue;
        };
        assert!(out.len() >= 12, "an answer has a header");
        assert!(out.len() <= usize::from(u16::MAX));
        let answer = match Message::from_vec(&out) {
            Ok(m) => m,
            Err(e) => panic!("our answer does not parse: {e}"),
        };
        assert_eq!(answer.message_type(), MessageType::Response);
        assert_eq!(&out[..2], &data[..2], "the answer carries the request's id");
        assert!(!answer.recursion_available(), "never recursion");
    }
});
