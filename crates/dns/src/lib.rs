//! # ubernetes-dns
//!
//! The federation's embedded authoritative DNS server (SPEC §3.9):
//! `ubernetes serve --dns-bind ADDR:PORT --dns-zone SUFFIX` answers, over
//! UDP and TCP, for one zone, from a record table the federation's DNS
//! controller (`ubernetes_federation::dns_records`) replaces whole whenever
//! a Service's addresses or a cluster's health change.
//!
//! - [`records`]: the table ([`RecordStore`]: name → [`RecordSet`], swapped
//!   atomically; SOA and NS of the zone; `ns.<zone>` with the server's
//!   addresses when known);
//! - [`answer`]: request → response without I/O (NXDOMAIN vs NODATA,
//!   REFUSED outside the zone, CNAMEs followed inside it, weighted order),
//!   also the entry point of the fuzz target ([`answer::handle_packet`]);
//! - [`server`]: hickory-server's UDP/TCP listeners on that handler;
//! - [`metrics`]: the queries answered, by response code and type.
//!
//! Authoritative only: no recursion, no zone transfer, no dynamic update.
#![forbid(unsafe_code)]

pub mod answer;
pub mod metrics;
pub mod records;
pub mod server;

pub use records::{RecordSet, RecordStore, ZoneConfig};
pub use server::DnsServer;
