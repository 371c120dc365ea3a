//! Admission: mutations and checks that need state beyond one object (kube's
//! admission plugins and REST-storage hooks), e.g. ClusterIP allocation for
//! Services. Registered per resource in [`crate::Registry`].

use serde_json::Value;
use ubernetes_apimachinery::{ApiError, ResourceInfo};

/// A plugin consulted on create (after validation, before the write).
#[async_trait::async_trait]
pub trait Admission: Send + Sync {
    /// Mutate or reject a new object. `dry_run`: allocate nothing durable.
    async fn admit_create(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        dry_run: bool,
    ) -> Result<(), ApiError>;
}
