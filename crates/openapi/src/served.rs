//! [`Served`]: a generated document as the HTTP handler sends it (bytes,
//! ETag, Content-Type), and what the document caches key on.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use bytes::Bytes;
use serde_json::Value;
use sha2::{Digest, Sha512};
use ubernetes_apimachinery::resource::ResourceInfo;

/// A document ready to serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    /// The body.
    pub bytes: Bytes,
    /// Uppercase hex SHA-512 of the body, as kube-openapi computes it; the
    /// `hash` query parameter of `/openapi/v3` URLs and, quoted, the `ETag`.
    pub hash: String,
    /// The `Content-Type` to send.
    pub content_type: &'static str,
}

impl Served {
    /// Serialize a JSON document.
    pub(crate) fn json(value: &Value, content_type: &'static str) -> Self {
        Self::raw(
            Bytes::from(serde_json::to_vec(value).unwrap_or_default()),
            content_type,
        )
    }

    pub(crate) fn raw(bytes: Bytes, content_type: &'static str) -> Self {
        let hash = sha512_hex(&bytes);
        Self {
            bytes,
            hash,
            content_type,
        }
    }

    /// The `ETag` header value: the hash, quoted.
    pub fn etag(&self) -> String {
        format!("\"{}\"", self.hash)
    }

    /// Parse the body back (for callers that want a `Value`).
    pub fn to_value(&self) -> Value {
        serde_json::from_slice(&self.bytes).unwrap_or(Value::Null)
    }
}

fn sha512_hex(bytes: &[u8]) -> String {
    Sha512::digest(bytes)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect()
}

/// A cache key over the served resources and the definitions' generation.
pub(crate) fn fingerprint(resources: &[ResourceInfo], generation: u64) -> u64 {
    let mut h = DefaultHasher::new();
    generation.hash(&mut h);
    for r in resources {
        (
            &r.group,
            &r.version,
            &r.resource,
            &r.kind,
            r.namespaced,
            &r.verbs,
            &r.definition,
        )
            .hash(&mut h);
        for s in &r.subresources {
            (&s.name, &s.group, &s.version, &s.kind, &s.verbs).hash(&mut h);
        }
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_uppercase_sha512_hex() {
        let s = Served::raw(Bytes::from_static(b"abc"), "application/json");
        assert_eq!(s.hash.len(), 128);
        assert!(s.hash.starts_with("DDAF35A193617ABA"), "{}", s.hash);
        assert_eq!(s.etag(), format!("\"{}\"", s.hash));
    }
}
