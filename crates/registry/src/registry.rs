//! [`Registry`]: every served resource's [`Store`], looked up by
//! group/version/resource (HTTP routing) or group/kind (owner references).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;
use ubernetes_apimachinery::{ApiError, ResourceInfo};
use ubernetes_storage::Storage;
use ubernetes_storage::layered::Layered;

use crate::admission::Admission;
use crate::store::Store;
use crate::strategy::Strategy;

/// Registry settings (from the server's flags).
#[derive(Clone)]
pub struct RegistryOptions {
    /// `--service-cluster-ip-range`, kube-apiserver's default `10.0.0.0/24`;
    /// we default to kubeadm's `10.96.0.0/12` in the CLI.
    pub service_cluster_ip_range: String,
    /// Schema check for `fieldValidation` (none: every field is accepted).
    pub unknown_fields: Option<crate::validation::UnknownFieldsFn>,
    /// Watch-cache settings of every resource.
    pub cache: ubernetes_storage::cache::CacheConfig,
    /// Field ownership and server-side apply (none: apply is refused and
    /// managedFields are coarse).
    pub field_manager: Option<Arc<dyn crate::managed_fields::FieldManager>>,
    /// Admission plugins run on every resource, after the resource's own
    /// (more can be added once the registry exists:
    /// [`Registry::add_admission`]).
    pub admission: Vec<Arc<dyn Admission>>,
}

impl Default for RegistryOptions {
    fn default() -> Self {
        Self {
            service_cluster_ip_range: "10.96.0.0/12".into(),
            unknown_fields: None,
            cache: Default::default(),
            field_manager: None,
            admission: Vec::new(),
        }
    }
}

type Gvr = (String, String, String);

/// All stores.
pub struct Registry {
    /// This registry, for the plugins built from `&Registry` that read its
    /// stores later (a kind's admission plugins).
    me: std::sync::Weak<Registry>,
    storage: Arc<dyn Storage>,
    stores: RwLock<Vec<Arc<Store>>>,
    by_gvr: RwLock<HashMap<Gvr, Arc<Store>>>,
    options: RegistryOptions,
    /// The registry-wide admission plugins, shared with every store.
    admission: crate::admission::Chain,
    /// Cancelled when the server stops: the in-server controllers end.
    stop: tokio_util::sync::CancellationToken,
    /// Per storage prefix shared by several versions' stores (conversion):
    /// the last revision any of them wrote.
    shared_writes: parking_lot::Mutex<HashMap<String, Arc<std::sync::atomic::AtomicU64>>>,
    /// Builds CRD conversion webhooks' converters (set by the server).
    conversion_webhooks: RwLock<Option<Arc<dyn crate::conversion::review::ConversionWebhooks>>>,
}

impl Registry {
    /// Build a store (and its watch cache) for every strategy. The first
    /// strategy of a group/resource owns its storage prefix; a version that
    /// [`crate::conversion::served_from`] another version's storage reads and
    /// writes that one through its converter; any other further version of the
    /// same resource gets its own prefix.
    pub async fn new(
        storage: Arc<dyn Storage>,
        strategies: Vec<Arc<dyn Strategy>>,
        options: RegistryOptions,
    ) -> Result<Arc<Self>, ApiError> {
        let registry = Arc::new_cyclic(|me| Self {
            me: me.clone(),
            storage: storage.clone(),
            stores: RwLock::new(Vec::new()),
            by_gvr: RwLock::new(HashMap::new()),
            admission: crate::admission::Chain::new(options.admission.clone()),
            options,
            stop: tokio_util::sync::CancellationToken::new(),
            shared_writes: Default::default(),
            conversion_webhooks: RwLock::new(None),
        });
        for strategy in strategies {
            registry.add(strategy).await?;
        }
        Ok(registry)
    }

    /// Serve one more resource (used at start and for CRDs).
    pub async fn add(&self, strategy: Arc<dyn Strategy>) -> Result<Arc<Store>, ApiError> {
        let info = strategy.info().clone();
        let admission = strategy
            .admission()
            .iter()
            .map(|plugin| plugin(self))
            .collect::<Result<Vec<Arc<dyn Admission>>, ApiError>>()?;
        let (storage, converted_prefix) = self.storage_for(strategy.as_ref()).await?;
        let shared = self
            .stores
            .read()
            .iter()
            .any(|s| s.info().group == info.group && s.info().resource == info.resource);
        let mut store = match converted_prefix {
            Some(prefix) => {
                Store::new_at(
                    strategy,
                    storage,
                    admission,
                    prefix,
                    self.options.unknown_fields.clone(),
                    self.options.cache.clone(),
                    self.options.field_manager.clone(),
                )
                .await?
            }
            None => {
                Store::new_with_prefix(
                    strategy,
                    storage,
                    admission,
                    shared.then(|| info.version.clone()),
                    self.options.unknown_fields.clone(),
                    self.options.cache.clone(),
                    self.options.field_manager.clone(),
                )
                .await?
            }
        };
        store.set_registry_admission(self.admission.clone());
        let store = Arc::new(store);
        self.stores.write().push(store.clone());
        self.by_gvr.write().insert(
            (
                info.group.clone(),
                info.version.clone(),
                info.resource.clone(),
            ),
            store.clone(),
        );
        Ok(store)
    }

    /// The storage a resource's store talks to, and its storage prefix when
    /// it is not the resource's own: every version of a converted kind
    /// (`conversion.rs`) shares a last-write mark with the others, and a
    /// version served from another version's storage reads and writes it
    /// through its converter, after moving in what an older release stored
    /// apart for it.
    async fn storage_for(
        &self,
        strategy: &dyn Strategy,
    ) -> Result<(Arc<dyn Storage>, Option<String>), ApiError> {
        let info = strategy.info();
        let Some(prefix) = crate::conversion::shared_prefix(strategy) else {
            return Ok((self.storage.clone(), None));
        };
        let mark = self
            .shared_writes
            .lock()
            .entry(prefix.to_string())
            .or_default()
            .clone();
        let storage: Arc<dyn Storage> = Arc::new(Layered::new(
            self.storage.clone(),
            Arc::new(crate::conversion::WriteMarked::new(mark)),
        ));
        let Some(conversion) = crate::conversion::served_from(strategy) else {
            return Ok((storage, None));
        };
        let moved = crate::conversion::migrate(&self.storage, &conversion)
            .await
            .map_err(|e| {
                ApiError::internal(format!(
                    "moving {} stored apart by an older release: {e}",
                    conversion.legacy_prefix
                ))
            })?;
        if moved > 0 {
            tracing::info!(resource = %info.resource, group = %info.group, version = %info.version, moved, "objects of an older release moved into the shared storage");
        }
        let storage: Arc<dyn Storage> = Arc::new(Layered::new(
            storage,
            Arc::new(crate::conversion::Converted::new(conversion.converter)),
        ));
        Ok((storage, Some(conversion.prefix)))
    }

    /// Serve one more version of a resource whose versions share one storage
    /// (a CRD version, `None` conversion): its objects are the same as every
    /// other version's, read with this version's `apiVersion`.
    pub async fn add_shared_version(
        &self,
        strategy: Arc<dyn Strategy>,
    ) -> Result<Arc<Store>, ApiError> {
        let storage: Arc<dyn Storage> = Arc::new(Layered::new(
            self.storage.clone(),
            Arc::new(crate::stamp::ApiVersionStamp::with_on_read(
                &strategy.info().api_version(),
                strategy.clone(),
            )),
        ));
        self.add_version_over(strategy, storage).await
    }

    /// As [`Registry::add_shared_version`], for a resource whose versions
    /// convert through `converter` (a CRD's conversion webhook): objects are
    /// stored as `storage_api_version`, and every value read or written in
    /// another version is converted ([`crate::conversion::review`]).
    pub async fn add_reviewed_version(
        &self,
        strategy: Arc<dyn Strategy>,
        storage_api_version: &str,
        converter: Arc<dyn crate::conversion::review::ObjectConverter>,
    ) -> Result<Arc<Store>, ApiError> {
        // Every version's store waits for the writes made through the others
        // (read-your-writes across versions, as for converted built-ins).
        let mark = self
            .shared_writes
            .lock()
            .entry(crate::store::storage_prefix(strategy.info()))
            .or_default()
            .clone();
        let marked: Arc<dyn Storage> = Arc::new(Layered::new(
            self.storage.clone(),
            Arc::new(crate::conversion::WriteMarked::new(mark)),
        ));
        let storage: Arc<dyn Storage> = Arc::new(Layered::new(
            marked,
            Arc::new(crate::conversion::review::Reviewed::new(
                strategy.clone(),
                storage_api_version,
                converter,
            )),
        ));
        self.add_version_over(strategy, storage).await
    }

    /// Set what builds CRD conversion webhooks' converters (the server's
    /// HTTPS caller; the registry knows no HTTP).
    pub fn set_conversion_webhooks(
        &self,
        webhooks: Arc<dyn crate::conversion::review::ConversionWebhooks>,
    ) {
        *self.conversion_webhooks.write() = Some(webhooks);
    }

    /// What builds CRD conversion webhooks' converters, if set.
    pub fn conversion_webhooks(
        &self,
    ) -> Option<Arc<dyn crate::conversion::review::ConversionWebhooks>> {
        self.conversion_webhooks.read().clone()
    }

    /// Serve a version of a resource whose versions share one prefix,
    /// through the `storage` layer that makes it this version.
    async fn add_version_over(
        &self,
        strategy: Arc<dyn Strategy>,
        storage: Arc<dyn Storage>,
    ) -> Result<Arc<Store>, ApiError> {
        let info = strategy.info().clone();
        let mut store = Store::new_with_prefix(
            strategy,
            storage,
            Vec::new(),
            None,
            self.options.unknown_fields.clone(),
            self.options.cache.clone(),
            self.options.field_manager.clone(),
        )
        .await?;
        store.set_registry_admission(self.admission.clone());
        let store = Arc::new(store);
        self.stores.write().push(store.clone());
        self.by_gvr.write().insert(
            (
                info.group.clone(),
                info.version.clone(),
                info.resource.clone(),
            ),
            store.clone(),
        );
        Ok(store)
    }

    /// Install an admission plugin on every resource (served now or later),
    /// after those installed before: for plugins that need the registry
    /// itself (webhook configurations, namespaces' labels, quotas).
    pub fn add_admission(&self, plugin: Arc<dyn Admission>) {
        self.admission.push(plugin);
    }

    /// The registry-wide admission plugins.
    pub fn admission(&self) -> &crate::admission::Chain {
        &self.admission
    }

    /// The store of `group/version/resource`.
    pub fn get(&self, group: &str, version: &str, resource: &str) -> Option<Arc<Store>> {
        self.by_gvr
            .read()
            .get(&(group.to_string(), version.to_string(), resource.to_string()))
            .cloned()
    }

    /// Stop serving `group/version/resource` (a CRD version that went away or
    /// changed); returns its store. Stored objects are left alone.
    pub fn remove(&self, group: &str, version: &str, resource: &str) -> Option<Arc<Store>> {
        let removed = self.by_gvr.write().remove(&(
            group.to_string(),
            version.to_string(),
            resource.to_string(),
        ))?;
        self.stores.write().retain(|s| !Arc::ptr_eq(s, &removed));
        Some(removed)
    }

    /// Drop a store that another one has replaced under its
    /// group/version/resource (a CRD version whose schema changed): the
    /// resource is served throughout, by the old store until the new one
    /// took over in [`Registry::add_shared_version`].
    pub fn retire(&self, store: &Arc<Store>) {
        self.stores.write().retain(|s| !Arc::ptr_eq(s, store));
        self.by_gvr.write().retain(|_, s| !Arc::ptr_eq(s, store));
    }

    /// The store serving `kind` in `group` (first registered version; used
    /// to resolve ownerReferences, whose apiVersion may be any served version).
    pub fn by_kind(&self, group: &str, kind: &str) -> Option<Arc<Store>> {
        self.stores
            .read()
            .iter()
            .find(|s| s.info().group == group && s.info().kind == kind)
            .cloned()
    }

    /// The first store serving `resource` in `group` (any version), found
    /// without copying the list of stores: what per-request lookups (the
    /// admission plugins' configuration stores) use instead of
    /// [`Registry::stores`].
    pub fn by_resource(&self, group: &str, resource: &str) -> Option<Arc<Store>> {
        self.stores
            .read()
            .iter()
            .find(|s| s.info().group == group && s.info().resource == resource)
            .cloned()
    }

    /// Every store.
    pub fn stores(&self) -> Vec<Arc<Store>> {
        self.stores.read().clone()
    }

    /// Every served resource.
    pub fn resources(&self) -> Vec<ResourceInfo> {
        self.stores
            .read()
            .iter()
            .map(|s| s.info().clone())
            .collect()
    }

    /// The field manager the stores record ownership with (the server's
    /// schema-aware one; `None` in tests that build a bare registry).
    pub fn field_manager(&self) -> Option<Arc<dyn crate::managed_fields::FieldManager>> {
        self.options.field_manager.clone()
    }

    /// The namespaces store (core v1).
    pub fn namespaces(&self) -> Option<Arc<Store>> {
        self.get("", "v1", "namespaces")
    }

    /// Stop the in-server controllers (garbage collector, namespace
    /// lifecycle, compaction), so the registry, its watch caches and the
    /// store are released once the HTTP side lets go of them.
    pub fn shutdown(&self) {
        self.stop.cancel();
    }

    /// Cancelled by [`Registry::shutdown`]; background work selects on it.
    pub fn stop_token(&self) -> tokio_util::sync::CancellationToken {
        self.stop.clone()
    }

    /// A weak handle on this registry (for what it owns that reads it).
    pub fn weak(&self) -> std::sync::Weak<Registry> {
        self.me.clone()
    }

    /// What the registry was built with.
    pub fn options(&self) -> &RegistryOptions {
        &self.options
    }

    /// The storage engine (for the server's own housekeeping).
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }
}
