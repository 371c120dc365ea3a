//! From one request to one response, without I/O: the whole query path the
//! network handler and the fuzz target share.
//!
//! - One question, class IN, opcode QUERY; else FORMERR (no or several
//!   questions), NOTIMP (other opcodes) or REFUSED (other classes, zone
//!   transfers).
//! - The zone: of several ([`answer_in`]), the most specific that holds
//!   the question's name; each answers from its own table as below.
//! - A name outside the zone(s): REFUSED (no recursion; RA is never set).
//! - A name in the zone: AA set. Records of the asked type answer; a CNAME
//!   answers any type but CNAME's own and is followed inside the zone (at
//!   most [`MAX_CHAIN`] links), the response code being that of the last
//!   name (RFC 6604). A name that exists without records of the type
//!   (including an empty non-terminal such as `svc.<zone>`) is NODATA:
//!   NOERROR, no answer, the SOA in the authority section; a name that does
//!   not exist is NXDOMAIN with the SOA.
//! - EDNS: answered with an OPT record when the request had one (version 0;
//!   a higher version gets BADVERS), with the requester's payload size (at
//!   least 512) as the UDP limit; a longer UDP answer is truncated (TC).

use hickory_proto::op::{Edns, Header, Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::{DNSClass, LowerName, Record, RecordType};
use hickory_proto::serialize::binary::{BinDecodable as _, BinDecoder, BinEncoder};
use hickory_server::authority::{MessageRequest, MessageResponse, MessageResponseBuilder};
use rand::Rng as _;

use crate::records::{Entry, RecordStore, Table};

/// The longest CNAME chain followed inside the zone.
pub const MAX_CHAIN: usize = 8;

/// A response before encoding.
#[derive(Debug)]
pub struct Response {
    /// The header (id, flags, response code).
    pub header: Header,
    /// The answer section.
    pub answers: Vec<Record>,
    /// The authority section (the SOA of a negative answer).
    pub authority: Vec<Record>,
    /// The additional section (name server glue).
    pub additionals: Vec<Record>,
    /// The OPT record, when the request had one.
    pub edns: Option<Edns>,
}

impl Response {
    fn new(request: &MessageRequest) -> Self {
        Self {
            header: Header::response_from_request(request.header()),
            answers: Vec::new(),
            authority: Vec::new(),
            additionals: Vec::new(),
            edns: None,
        }
    }

    fn code(mut self, code: ResponseCode) -> Self {
        self.header.set_response_code(code);
        self
    }
}

/// Answer `request` from `table`.
pub fn answer(table: &Table, request: &MessageRequest) -> Response {
    let mut response = Response::new(request);
    if let Some(req) = request.edns() {
        let mut edns = Edns::new();
        edns.set_max_payload(req.max_payload().max(512));
        edns.set_version(0);
        if req.version() > 0 {
            edns.set_rcode_high(ResponseCode::BADVERS.high());
            response.edns = Some(edns);
            return response.code(ResponseCode::BADVERS);
        }
        response.edns = Some(edns);
    }
    if request.message_type() != MessageType::Query {
        return response.code(ResponseCode::FormErr);
    }
    if request.op_code() != OpCode::Query {
        return response.code(ResponseCode::NotImp);
    }
    let [query] = request.queries() else {
        return response.code(ResponseCode::FormErr);
    };
    let qtype = query.query_type();
    if query.query_class() != DNSClass::IN
        || matches!(qtype, RecordType::AXFR | RecordType::IXFR)
        || !table.origin.zone_of(query.name())
    {
        return response.code(ResponseCode::Refused);
    }
    response.header.set_authoritative(true);
    let mut name = query.name().clone();
    for _ in 0..=MAX_CHAIN {
        if name == table.origin {
            apex(table, qtype, &mut response);
            return response;
        }
        match table.names.get(&name) {
            Some(Entry::Cname { record, target }) => {
                response.answers.push(Record::clone(record));
                if matches!(qtype, RecordType::CNAME | RecordType::ANY)
                    || !table.origin.zone_of(target)
                {
                    return response;
                }
                name = target.clone();
            }
            Some(Entry::Addresses { v4, v6, weighted }) => {
                let found: Vec<&(Record, u32)> = match qtype {
                    RecordType::A => v4.iter().collect(),
                    RecordType::AAAA => v6.iter().collect(),
                    RecordType::ANY => v4.iter().chain(v6).collect(),
                    _ => Vec::new(),
                };
                if found.is_empty() {
                    response.authority.push(negative_soa(table));
                } else if *weighted {
                    response.answers.extend(weighted_order(found));
                } else {
                    response
                        .answers
                        .extend(found.into_iter().map(|(r, _)| r.clone()));
                }
                return response;
            }
            None => {
                if !table.existing.contains(&name) {
                    response.header.set_response_code(ResponseCode::NXDomain);
                }
                response.authority.push(negative_soa(table));
                return response;
            }
        }
    }
    // A loop (or a chain too long): what was followed, and SERVFAIL.
    response.code(ResponseCode::ServFail)
}

fn apex(table: &Table, qtype: RecordType, response: &mut Response) {
    let glue = |response: &mut Response| {
        for ns in &table.ns {
            if let Some(host) = ns.data().as_ns() {
                let host = LowerName::from(host.0.clone());
                if let Some(Entry::Addresses { v4, v6, .. }) = table.names.get(&host) {
                    response
                        .additionals
                        .extend(v4.iter().chain(v6).map(|(r, _)| r.clone()));
                }
            }
        }
    };
    match qtype {
        RecordType::SOA => response.answers.push(table.soa.clone()),
        RecordType::NS => {
            response.answers.extend(table.ns.iter().cloned());
            glue(response);
        }
        RecordType::ANY => {
            response.answers.push(table.soa.clone());
            response.answers.extend(table.ns.iter().cloned());
        }
        _ => response.authority.push(negative_soa(table)),
    }
}

/// The SOA of a negative answer: its TTL is the lesser of its own and its
/// minimum (RFC 2308 §3).
fn negative_soa(table: &Table) -> Record {
    let mut soa = table.soa.clone();
    if let Some(minimum) = table.soa.data().as_soa().map(|s| s.minimum()) {
        let ttl = soa.ttl().min(minimum);
        soa.set_ttl(ttl);
    }
    soa
}

/// Every record, in an order drawn by weight without replacement.
fn weighted_order(mut pool: Vec<&(Record, u32)>) -> Vec<Record> {
    let mut rng = rand::rng();
    let mut out = Vec::with_capacity(pool.len());
    while !pool.is_empty() {
        let total: u64 = pool.iter().map(|(_, w)| u64::from(*w)).sum();
        let i = if total == 0 {
            0
        } else {
            let mut pick = rng.random_range(0..total);
            pool.iter()
                .position(|(_, w)| {
                    let w = u64::from(*w);
                    if pick < w {
                        true
                    } else {
                        pick -= w;
                        false
                    }
                })
                .unwrap_or(0)
        };
        out.push(pool.remove(i).0.clone());
    }
    out
}

/// hickory's message for `response` to `request` (what [`encode`] encodes
/// and the network handler sends).
pub fn message<'q, 'a>(
    request: &'q MessageRequest,
    response: &'a Response,
) -> MessageResponse<
    'q,
    'a,
    impl Iterator<Item = &'a Record> + Send + 'a,
    impl Iterator<Item = &'a Record> + Send + 'a,
    impl Iterator<Item = &'a Record> + Send + 'a,
    impl Iterator<Item = &'a Record> + Send + 'a,
> {
    let mut builder = MessageResponseBuilder::from_message_request(request);
    if let Some(edns) = response.edns.clone() {
        builder.edns(edns);
    }
    builder.build(
        response.header,
        response.answers.iter(),
        response.authority.iter(),
        std::iter::empty(),
        response.additionals.iter(),
    )
}

/// `response` to `request` encoded with at most `max_size` bytes, or
/// `None` when that fails or the result would not read back as a DNS
/// message. hickory echoes the request's question bytes verbatim, so a
/// question with a compression pointer into the header (the fuzzer found
/// one; no valid name lives there, and the response's header differs)
/// would make an unreadable response: such a request gets no answer, like
/// any other packet with no sensible question.
pub fn encode(request: &MessageRequest, response: &Response, max_size: u16) -> Option<Vec<u8>> {
    let message = message(request, response);
    let mut buf = Vec::with_capacity(512);
    let mut encoder = BinEncoder::new(&mut buf);
    encoder.set_max_size(max_size);
    message.destructive_emit(&mut encoder).ok()?;
    Message::from_vec(&buf).ok()?;
    Some(buf)
}

/// Decode `packet`, answer it from `table` and encode the response with at
/// most `max_size` bytes (512 for plain UDP; the requester's EDNS size when
/// it sent one; 65535 for TCP). `None` when the packet has no header to
/// answer (shorter than 12 bytes), is itself a response (never answered,
/// against reflection) or cannot be answered readably ([`encode`]). This is the path the fuzz target drives; the
/// network handler runs the same [`answer`] on what hickory decoded.
pub fn handle_packet(table: &Table, packet: &[u8], max_size: u16) -> Option<Vec<u8>> {
    handle(packet, max_size, |request| answer(table, request))
}

/// [`handle_packet`] against every zone of `store`: the question's zone
/// answers ([`answer_in`]). The path the fuzz target drives.
pub fn handle_packet_in(store: &RecordStore, packet: &[u8], max_size: u16) -> Option<Vec<u8>> {
    handle(packet, max_size, |request| answer_in(store, request))
}

/// Answer `request` from the table of its question's zone in `store` (the
/// most specific zone holding the name; a name in none, or a request
/// without exactly one question, is answered from the main zone, which
/// refuses it or says FORMERR). One zone lookup, no lock beyond the
/// table's snapshot.
pub fn answer_in(store: &RecordStore, request: &MessageRequest) -> Response {
    let table = match request.queries() {
        [query] => store.snapshot_for(query.name()),
        _ => store.snapshot(),
    };
    answer(&table, request)
}

fn handle(
    packet: &[u8],
    max_size: u16,
    answer: impl FnOnce(&MessageRequest) -> Response,
) -> Option<Vec<u8>> {
    let mut decoder = BinDecoder::new(packet);
    let request = match MessageRequest::read(&mut decoder) {
        Ok(r) => r,
        Err(e) => {
            let mut header = Header::read(&mut BinDecoder::new(packet)).ok()?;
            if header.message_type() == MessageType::Response {
                return None;
            }
            tracing::trace!(error = %e, "malformed DNS request");
            header = Header::response_from_request(&header);
            header.set_response_code(ResponseCode::FormErr);
            let mut buf = Vec::with_capacity(12);
            let mut encoder = BinEncoder::new(&mut buf);
            hickory_proto::serialize::binary::BinEncodable::emit(&header, &mut encoder).ok()?;
            return Some(buf);
        }
    };
    if request.message_type() == MessageType::Response {
        return None;
    }
    let response = answer(&request);
    let max_size = match &response.edns {
        Some(e) => max_size.max(e.max_payload()),
        None => max_size,
    };
    encode(&request, &response, max_size)
}
