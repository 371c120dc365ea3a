//! `ubernetes_federation_dns_queries_total` {rcode, qtype}: the queries the
//! DNS server answered, by response code (`NOERROR`, `NXDOMAIN`,
//! `REFUSED`, …) and question type (`A`, `AAAA`, `SRV`, …; types outside
//! [`QTYPES`] count as `OTHER`, so that made-up types cannot grow the label
//! set). Registered in the process registry that the API server's
//! `/metrics` serves (the `prometheus` crate's default registry).

use std::sync::LazyLock;

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::RecordType;
use prometheus::{IntCounterVec, Opts};

/// The question types counted by name.
pub const QTYPES: [RecordType; 12] = [
    RecordType::A,
    RecordType::AAAA,
    RecordType::ANY,
    RecordType::CNAME,
    RecordType::MX,
    RecordType::NS,
    RecordType::PTR,
    RecordType::SOA,
    RecordType::SRV,
    RecordType::TXT,
    RecordType::AXFR,
    RecordType::IXFR,
];

static QUERIES: LazyLock<IntCounterVec> = LazyLock::new(|| {
    let counter = IntCounterVec::new(
        Opts::new(
            "ubernetes_federation_dns_queries_total",
            "DNS queries answered by the federation's DNS server, by response code and question type.",
        ),
        &["rcode", "qtype"],
    )
    .expect("a valid static metric");
    if let Err(err) = prometheus::register(Box::new(counter.clone())) {
        tracing::debug!(error = %err, "metric already registered");
    }
    counter
});

/// The `rcode` label: the code's mnemonic as dig prints it.
pub fn rcode_label(code: ResponseCode) -> String {
    match code {
        ResponseCode::NoError => "NOERROR".into(),
        ResponseCode::FormErr => "FORMERR".into(),
        ResponseCode::ServFail => "SERVFAIL".into(),
        ResponseCode::NXDomain => "NXDOMAIN".into(),
        ResponseCode::NotImp => "NOTIMP".into(),
        ResponseCode::Refused => "REFUSED".into(),
        ResponseCode::BADVERS => "BADVERS".into(),
        other => format!("RCODE{}", u16::from(other)),
    }
}

/// The `qtype` label.
pub fn qtype_label(qtype: Option<RecordType>) -> String {
    match qtype {
        Some(t) if QTYPES.contains(&t) => t.to_string(),
        Some(_) => "OTHER".into(),
        None => "NONE".into(),
    }
}

/// Count one answered query.
pub fn answered(code: ResponseCode, qtype: Option<RecordType>) {
    QUERIES
        .with_label_values(&[&rcode_label(code), &qtype_label(qtype)])
        .inc();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_dig_mnemonics_and_a_bounded_set_of_types() {
        assert_eq!(rcode_label(ResponseCode::NXDomain), "NXDOMAIN");
        assert_eq!(rcode_label(ResponseCode::NoError), "NOERROR");
        assert_eq!(rcode_label(ResponseCode::Unknown(3841)), "RCODE3841");
        assert_eq!(qtype_label(Some(RecordType::AAAA)), "AAAA");
        assert_eq!(qtype_label(Some(RecordType::Unknown(65000))), "OTHER");
        assert_eq!(qtype_label(None), "NONE");
    }

    #[test]
    fn an_answer_is_counted_by_code_and_type() {
        let c = QUERIES.with_label_values(&["REFUSED", "TXT"]);
        let before = c.get();
        answered(ResponseCode::Refused, Some(RecordType::TXT));
        assert_eq!(c.get(), before + 1);
    }
}
