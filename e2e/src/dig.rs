//! The real `dig` (Debian's dnsutils, installed by `scripts/test.sh`)
//! against the embedded DNS server of `ubernetes serve --dns-bind`: a free
//! port for it, one query, and what dig printed, parsed.

use std::collections::BTreeSet;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Whether `dig` runs here (a test without it says SKIPPED and passes).
pub fn available() -> bool {
    Command::new("dig")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether `dig` is missing, said on stderr (the test then passes as
/// SKIPPED).
pub fn missing() -> bool {
    if available() {
        return false;
    }
    eprintln!(
        "SKIPPED: `dig` is not installed (Debian: apt-get install -y dnsutils; scripts/test.sh does it)"
    );
    true
}

/// A loopback UDP port whose TCP twin is free too (the server binds both).
pub fn free_port() -> Result<u16> {
    for _ in 0..20 {
        let udp = std::net::UdpSocket::bind("127.0.0.1:0")?;
        let port = udp.local_addr()?.port();
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    bail!("no free port for DNS")
}

/// What `dig` printed: the status, the header flags, and the answer and
/// authority sections as `(name, type, data)` (data: the first field of
/// the record's data).
#[derive(Debug)]
pub struct Dig {
    /// `NOERROR`, `NXDOMAIN`, `REFUSED`, …
    pub status: String,
    /// The header flags, e.g. `qr aa rd`.
    pub flags: String,
    /// The answer section.
    pub answers: Vec<(String, String, String)>,
    /// The authority section (the SOA of a negative answer).
    pub authority: Vec<(String, String, String)>,
}

impl Dig {
    /// The A and AAAA addresses answered.
    pub fn addresses(&self) -> BTreeSet<String> {
        self.answers
            .iter()
            .filter(|(_, t, _)| t == "A" || t == "AAAA")
            .map(|(_, _, d)| d.clone())
            .collect()
    }

    /// The first A address answered.
    pub fn first_address(&self) -> Option<String> {
        self.answers
            .iter()
            .find(|(_, t, _)| t == "A")
            .map(|(_, _, d)| d.clone())
    }

    /// The CNAMEs answered, as `(name, target)`.
    pub fn cnames(&self) -> Vec<(String, String)> {
        self.answers
            .iter()
            .filter(|(_, t, _)| t == "CNAME")
            .map(|(n, _, d)| (n.clone(), d.clone()))
            .collect()
    }

    /// Whether the answer is authoritative (AA).
    pub fn authoritative(&self) -> bool {
        self.flags.split_whitespace().any(|f| f == "aa")
    }
}

/// The records of the section of dig's output that starts with `header`.
fn section(text: &str, header: &str) -> Vec<(String, String, String)> {
    text.lines()
        .skip_while(|l| !l.starts_with(header))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            match f[..] {
                [n, _ttl, _class, t, d, ..] => Some((n.to_string(), t.to_string(), d.to_string())),
                _ => None,
            }
        })
        .collect()
}

/// `dig @127.0.0.1 -p PORT NAME QTYPE` without recursion, one try of 2 s,
/// over TCP when `tcp`.
pub fn dig(port: u16, name: &str, qtype: &str, tcp: bool) -> Result<Dig> {
    let mut cmd = Command::new("dig");
    cmd.args([
        "@127.0.0.1",
        "-p",
        &port.to_string(),
        name,
        qtype,
        "+norecurse",
        "+time=2",
        "+tries=1",
    ]);
    if tcp {
        cmd.arg("+tcp");
    }
    let out = cmd.output().context("running dig")?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        bail!("dig {name} {qtype} failed: {text}");
    }
    let status = text
        .split("status: ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .with_context(|| format!("no status in dig's output: {text}"))?
        .to_string();
    let flags = text
        .split("flags: ")
        .nth(1)
        .and_then(|s| s.split(';').next())
        .unwrap_or_default()
        .to_string();
    Ok(Dig {
        status,
        flags,
        answers: section(&text, ";; ANSWER SECTION"),
        authority: section(&text, ";; AUTHORITY SECTION"),
    })
}
