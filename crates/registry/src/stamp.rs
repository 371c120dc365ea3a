//! Serving one stored resource in several versions without conversion
//! (CustomResourceDefinitions with `conversion.strategy: None`): every
//! version's store shares the storage prefix, and this value layer
//! ([`ubernetes_storage::layered`]) stamps the version it serves as
//! `apiVersion` on every value it reads (gets, lists, watches), so each
//! version's watch cache, reads and guaranteed updates see the object in
//! their own version, as kube-apiserver's `None` converter does. The kind's
//! [`Strategy::on_read`] runs on every value read too (a custom resource's
//! schema defaults, which kube applies when decoding from storage). Writes
//! pass through unchanged.

use std::sync::Arc;

use bytes::Bytes;

use crate::strategy::Strategy;
use ubernetes_storage::StorageError;
use ubernetes_storage::layered::{Read, ValueLayer};

/// The value layer that reads with `apiVersion` set to the served version
/// (and the kind's read hook); used as
/// `Layered::new(storage, Arc::new(ApiVersionStamp::new(..)))`.
pub struct ApiVersionStamp {
    api_version: String,
    on_read: Option<Arc<dyn Strategy>>,
}

impl ApiVersionStamp {
    pub fn new(api_version: &str) -> Self {
        Self {
            api_version: api_version.to_string(),
            on_read: None,
        }
    }

    /// Also run `strategy`'s [`Strategy::on_read`] on every value read.
    pub fn with_on_read(api_version: &str, strategy: Arc<dyn Strategy>) -> Self {
        Self {
            api_version: api_version.to_string(),
            on_read: Some(strategy),
        }
    }

    fn stamp(&self, value: Bytes) -> Bytes {
        match serde_json::from_slice::<serde_json::Value>(&value) {
            Ok(mut v) => {
                let original = v.clone();
                if let Some(m) = v.as_object_mut() {
                    m.insert(
                        "apiVersion".into(),
                        serde_json::Value::String(self.api_version.clone()),
                    );
                }
                if let Some(strategy) = &self.on_read {
                    strategy.on_read(&mut v);
                }
                if v == original {
                    return value;
                }
                serde_json::to_vec(&v).map(Bytes::from).unwrap_or(value)
            }
            // Not JSON: leave it to the reader to complain.
            Err(_) => value,
        }
    }
}

/// Writes pass through unchanged (and answer with the value written);
/// every value read is stamped.
#[async_trait::async_trait]
impl ValueLayer for ApiVersionStamp {
    async fn transform_to_storage(&self, _key: &str, value: Bytes) -> Result<Bytes, StorageError> {
        Ok(value)
    }

    async fn transform_from_storage(
        &self,
        _key: &str,
        value: Bytes,
        _read: Read,
    ) -> Result<(Bytes, bool), StorageError> {
        Ok((self.stamp(value), false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_carry_the_served_version_and_other_fields_stay() {
        let stored =
            Bytes::from_static(br#"{"apiVersion":"example.com/v1","kind":"Foo","spec":{"a":1}}"#);
        let stamp = ApiVersionStamp::new("example.com/v2");
        let out: serde_json::Value =
            serde_json::from_slice(&stamp.stamp(stored)).unwrap_or_default();
        assert_eq!(out["apiVersion"], "example.com/v2");
        assert_eq!(out["spec"]["a"], 1);
        assert_eq!(out["kind"], "Foo");
    }
}
