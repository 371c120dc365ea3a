//! # ubernetes-dns
//!
//! The federation's embedded authoritative DNS server (SPEC §3.9):
//! `ubernetes serve --dns-bind ADDR:PORT --dns-zone SUFFIX` answers, over
//! UDP and TCP, for its zones (the main zone, and `clusterset.local` of the
//! Multi-cluster Services API, SPEC §3.14), each from a record table its
//! writer replaces whole: the federation's DNS controller
//! (`ubernetes_federation::dns_records`) whenever a Service's addresses or
//! a cluster's health change, the MCS one (`ubernetes_federation::mcs_dns`)
//! whenever an exported Service's endpoints do.
//!
//! - [`records`]: the tables ([`RecordStore`]: per zone, name →
//!   [`RecordSet`], swapped atomically; SOA and NS of each zone;
//!   `ns.<zone>` with the server's addresses when known);
//! - [`answer`]: request → response without I/O (the question's zone,
//!   NXDOMAIN vs NODATA,
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
