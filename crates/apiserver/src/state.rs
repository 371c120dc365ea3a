//! The shared server state: opens the store, builds the registry with every
//! built-in kind, starts the server's own controllers. Below the handlers
//! (which read it); the routes are in `routes.rs`.

use std::sync::Arc;
use std::time::Duration;

use ubernetes_apimachinery::{ApiError, ResourceInfo};
use ubernetes_registry::controllers::{
    self, BootstrapOptions, GarbageCollector, NamespaceController,
};
use ubernetes_registry::jwt::ServiceAccountJwt;
use ubernetes_registry::rbac_sync::{self, RbacCache};
use ubernetes_registry::store::WriteOptions;
use ubernetes_registry::tokens::TokenController;
use ubernetes_registry::{Registry, RegistryOptions};
use ubernetes_storage::Storage;
use ubernetes_storage::etcd_engine::{EtcdOptions, EtcdStorage};
use ubernetes_storage::sled_engine::{SledOptions, SledStorage};

use crate::authn::Authenticator;
use crate::authz::Authorization;
use crate::options::ServerOptions;

mod copy_checks;
pub use copy_checks::{MemberCopiesFn, rbac_write_check, set_member_copies};

/// Everything a handler needs.
pub struct AppState {
    pub options: ServerOptions,
    pub registry: Arc<Registry>,
    /// The authorizer (mode + live RBAC snapshot).
    pub authz: Arc<Authorization>,
    /// The authenticators (bearer tokens of `--token-auth-file`).
    pub authenticator: Arc<Authenticator>,
    /// Signs and checks service-account tokens.
    pub service_accounts: Arc<ServiceAccountJwt>,
    /// The member clients the cluster proxy forwards with.
    pub cluster_proxy: Arc<crate::cluster_proxy::ClusterProxy>,
    /// Whether this replica leads (runs the controllers); see
    /// [`crate::leader_election`].
    pub leadership: ubernetes_registry::leader_election::Leadership,
}

impl AppState {
    /// Every served resource, with the create-only reviews, for discovery.
    pub fn resources(&self) -> Vec<ResourceInfo> {
        let mut all = self.registry.resources();
        all.extend(crate::unstored::review_resources());
        all.extend(crate::unstored::core_extra_resources());
        all
    }

    /// Whether the kind has a built-in (compiled-in) schema, which strategic
    /// merge patch needs; custom resources do not (415, as kube-apiserver).
    pub fn has_builtin_schema(&self, info: &ResourceInfo) -> bool {
        // CRD schemas are published into the same definitions; only the
        // compiled-in ones (io.k8s.*, io.ubernetes.*) carry patch metadata.
        (info.definition.starts_with("io.k8s.") || info.definition.starts_with("io.ubernetes."))
            && ubernetes_openapi::definitions()
                .snapshot()
                .get(&info.definition)
                .is_some()
    }

    /// Strategic-merge metadata of a kind.
    pub fn patch_meta(
        &self,
        info: &ResourceInfo,
    ) -> Box<dyn ubernetes_apimachinery::patch::PatchMeta> {
        ubernetes_openapi::patch_meta(&info.definition)
    }
}

/// Open the store (etcd with `--etcd-servers`, else the embedded one under
/// `options.data_dir`), build the registry, bootstrap
/// the default namespaces and Service, start the watch caches and the
/// in-server controllers (garbage collector, namespace lifecycle,
/// service-account tokens). `root_ca_pem` is the CA clients trust for this
/// server, written into service-account token Secrets as `ca.crt`.
pub async fn build_state(
    options: &ServerOptions,
    root_ca_pem: Option<String>,
) -> anyhow::Result<Arc<AppState>> {
    let storage = open_storage(options).await?;
    build_state_on(options, storage, root_ca_pem)
        .await
        .map_err(|e| undecryptable_hint(options, e))
}

/// A stored value the encryption configuration cannot decrypt stops the
/// start (the watch cache's first list fails); say what usually causes it.
fn undecryptable_hint(options: &ServerOptions, e: anyhow::Error) -> anyhow::Error {
    match options.secrets_encryption_config() {
        Some(path) if format!("{e:#}").contains("unable to transform key") => e.context(format!(
            "a stored value does not decrypt with the keys of {}: restore the encryption configuration the store was written with (a store restored without its PKI directory, or a replica started without the shared PKI?), see docs/operations.md, \"Encryption at rest\"",
            path.display()
        )),
        _ => e,
    }
}

/// The storage engine the options name: etcd when `--etcd-servers` is
/// given (kube-apiserver's storage), else sled under DATA_DIR/store.
pub async fn open_storage(options: &ServerOptions) -> anyhow::Result<Arc<dyn Storage>> {
    // --encryption-provider-config, or the configuration made once in the
    // PKI directory (--encrypt-secrets-by-default): loaded before the store
    // is opened (a bad file stops the start), then encrypts over the
    // engine, below the registry's watch caches (storage/src/encryption.rs).
    let encryption = match (
        &options.encryption_provider_config,
        options.secrets_encryption_config(),
    ) {
        (Some(path), _) => {
            let config =
                ubernetes_storage::encryption::EncryptionConfig::load(path).map_err(|e| {
                    anyhow::anyhow!("--encryption-provider-config {}: {e}", path.display())
                })?;
            tracing::info!(file = %path.display(), ?config, "encryption at rest configured");
            Some(Arc::new(config))
        }
        (None, Some(_)) => Some(Arc::new(default_encryption(options)?)),
        (None, None) => None,
    };
    let engine = open_engine(options).await?;
    Ok(match encryption {
        Some(config) => Arc::new(ubernetes_storage::encryption::EncryptedStorage::new(
            engine, config,
        )),
        None => engine,
    })
}

/// The default encryption of Secrets (`--encrypt-secrets-by-default`,
/// no `--encryption-provider-config`): `DATA_DIR/pki/encryption-config.yaml`
/// as found, or made now with a new secretbox key
/// ([`ubernetes_certs::ensure_encryption_config`]). The key stays apart
/// from the store: a copy of the store directory or an etcd backup holds
/// no member credential in clear (docs/operations.md, "Encryption at rest").
fn default_encryption(
    options: &ServerOptions,
) -> anyhow::Result<ubernetes_storage::encryption::EncryptionConfig> {
    let dir = options.pki_dir();
    let file = ubernetes_certs::ensure_encryption_config(&dir).map_err(|e| {
        anyhow::anyhow!(
            "cannot prepare the Secrets encryption key in {}: {e} (--encrypt-secrets-by-default=false stores Secrets unencrypted)",
            dir.display()
        )
    })?;
    if let Some(mode) = file.loosened {
        tracing::warn!(
            file = %file.path.display(),
            "the Secrets encryption key had mode {mode:o}, which lets other users read it; set it to 0600"
        );
    }
    let config = ubernetes_storage::encryption::EncryptionConfig::load(&file.path)
        .map_err(|e| anyhow::anyhow!("{}: {e}", file.path.display()))?;
    let made = if file.outcome == ubernetes_certs::Outcome::Created {
        "made a new key: back it up with the PKI, a store backup is unreadable without it"
    } else {
        "kept"
    };
    tracing::info!(
        file = %file.path.display(),
        ?config,
        "Secrets are encrypted at rest with the key in {} ({made}; docs/operations.md, \"Encryption at rest\")",
        file.path.display()
    );
    Ok(config)
}

/// The storage engine itself (see [`open_storage`]).
async fn open_engine(options: &ServerOptions) -> anyhow::Result<Arc<dyn Storage>> {
    if !options.etcd_servers.is_empty() {
        let etcd = EtcdOptions {
            endpoints: options.etcd_servers.clone(),
            prefix: options.etcd_prefix.clone(),
            ca_file: options.etcd_cafile.clone(),
            cert_file: options.etcd_certfile.clone(),
            key_file: options.etcd_keyfile.clone(),
            // The registry's keys are `/registry/GROUP/RESOURCE/...`:
            // --etcd-prefix takes the place of that root.
            store_root: Some("/registry".into()),
        };
        let storage = EtcdStorage::connect(&etcd)
            .await
            .map_err(|e| anyhow::anyhow!("cannot open the etcd store: {e}"))?;
        let revision = storage.current_revision().await.unwrap_or(0);
        tracing::info!(
            servers = %options.etcd_servers.join(","),
            prefix = %options.etcd_prefix,
            revision,
            "etcd store opened"
        );
        return Ok(Arc::new(storage));
    }
    let store_dir = options.data_dir.join("store");
    // 0700: the store holds every Secret (the open makes sled's files 0600).
    ubernetes_certs::ensure_private_dir(&store_dir).map_err(|e| {
        anyhow::anyhow!(
            "cannot create the store directory {}: {e}",
            store_dir.display()
        )
    })?;
    let path = store_dir.clone();
    let sled_options = SledOptions {
        cache_capacity: options.storage_cache_mib.saturating_mul(1024 * 1024),
        ..SledOptions::default()
    };
    let storage = tokio::task::spawn_blocking(move || SledStorage::open_with(&path, sled_options))
        .await?
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot open the store at {}: {e} (is another ubernetes using this --data-dir?)",
                store_dir.display()
            )
        })?;
    let revision = storage.current_revision().await.unwrap_or(0);
    tracing::info!(dir = %store_dir.display(), revision, "store opened");
    Ok(Arc::new(storage))
}

/// Give the process-wide OpenAPI definitions the schema of every kind, as
/// each kind's declaration names it ([`Strategy::openapi_schema`]): the
/// documents, strict field validation and server-side apply read them.
///
/// [`Strategy::openapi_schema`]: ubernetes_registry::Strategy::openapi_schema
pub fn add_kind_schemas(kinds: &[Arc<dyn ubernetes_registry::Strategy>]) {
    let schemas: Vec<ubernetes_openapi::KindSchema> = kinds
        .iter()
        .filter_map(|s| {
            let info = s.info();
            Some(ubernetes_openapi::KindSchema {
                register: s.openapi_schema()?,
                group: info.group.clone(),
                version: info.version.clone(),
                kind: info.kind.clone(),
            })
        })
        .collect();
    ubernetes_openapi::definitions().add_kinds(&schemas);
}

/// The built-in kinds the federation propagates, as each kind declares
/// ([`Strategy::federated`]): namespaces first (a member needs the
/// namespace before what is in it), then CustomResourceDefinitions (before
/// their custom resources), then the rest by group and resource.
///
/// [`Strategy::federated`]: ubernetes_registry::Strategy::federated
pub fn federated_kinds() -> Vec<ResourceInfo> {
    let mut kinds = ubernetes_registry::kinds::builtin();
    kinds.push(ubernetes_apiextensions::crd_strategy());
    let mut out: Vec<ResourceInfo> = kinds
        .iter()
        .filter(|s| s.federated())
        .map(|s| s.info().clone())
        .collect();
    out.sort_by_key(|i| {
        let rank = match (i.group.as_str(), i.resource.as_str()) {
            ("", "namespaces") => 0,
            ("apiextensions.k8s.io", "customresourcedefinitions") => 1,
            _ => 2,
        };
        (rank, i.group.clone(), i.resource.clone())
    });
    out
}

/// [`build_state`] over an already opened storage engine.
pub async fn build_state_on(
    options: &ServerOptions,
    storage: Arc<dyn Storage>,
    root_ca_pem: Option<String>,
) -> anyhow::Result<Arc<AppState>> {
    let mode = crate::authz::parse_modes(&options.authorization_modes())
        .map_err(|e| anyhow::anyhow!("--authorization-mode: {e}"))?;
    let authenticator = Authenticator::new(options.token_auth_file.as_deref())
        .map_err(|e| anyhow::anyhow!("cannot load --token-auth-file: {e}"))?;
    let unknown: ubernetes_registry::validation::UnknownFieldsFn =
        Arc::new(|info: &ResourceInfo, obj: &serde_json::Value| {
            ubernetes_openapi::unknown_fields(&info.definition, obj)
        });
    let registry = Registry::new(
        storage.clone(),
        {
            let mut kinds = ubernetes_registry::kinds::builtin();
            kinds.push(ubernetes_apiextensions::crd_strategy());
            add_kind_schemas(&kinds);
            kinds
        },
        RegistryOptions {
            service_cluster_ip_range: options.service_cluster_ip_range.clone(),
            unknown_fields: Some(unknown),
            cache: ubernetes_storage::cache::CacheConfig {
                window: options.default_watch_cache_size.max(1),
                ..Default::default()
            },
            field_manager: Some(Arc::new(crate::field_manager::SchemaFieldManager)),
            // Webhooks and policies need the registry: installed below
            // with `Registry::add_admission`.
            admission: Vec::new(),
        },
    )
    .await
    .map_err(|e| anyhow::anyhow!("building the registry: {e}"))?;
    // Registry-wide admission in kube's order of its default plugins:
    // LimitRanger (mutates before the mutating webhooks),
    // ValidatingAdmissionPolicy (validates before the validating webhooks),
    // MutatingAdmissionPolicy, the webhooks, then ResourceQuota last (it charges only what every
    // other plugin admitted).
    registry.add_admission(ubernetes_registry::limitranger::LimitRanger::new(&registry));
    registry.add_admission(ubernetes_registry::policy::ValidatingAdmissionPolicy::new(
        &registry,
    ));
    // MutatingAdmissionPolicy: kube runs it in the mutating phase before
    // the mutating webhooks.
    registry.add_admission(
        ubernetes_registry::mutating_policy::MutatingAdmissionPolicy::new(&registry),
    );
    // Admission webhooks (Mutating/ValidatingWebhookConfiguration) on every
    // resource; they read their configurations from the registry.
    registry.add_admission(ubernetes_webhook::WebhookAdmission::new(&registry));
    // The checks of each member copy a federated object's overrides
    // produce (issue 28), before quota: a refused write charges nothing.
    // The authorizer is set once the RBAC cache has loaded, below.
    let member_copy_authz = Arc::new(std::sync::OnceLock::new());
    registry.add_admission(copy_checks::MemberCopyAdmission::new(
        &registry,
        member_copy_authz.clone(),
    ));
    registry.add_admission(ubernetes_registry::quota::ResourceQuotaAdmission::new(
        &registry,
    ));
    let advertise = if options.bind_address.is_unspecified() {
        "127.0.0.1".to_string()
    } else {
        options.bind_address.to_string()
    };
    controllers::bootstrap(
        &registry,
        &BootstrapOptions {
            advertise_address: advertise,
            secure_port: options.secure_port,
        },
    )
    .await
    .map_err(|e| anyhow::anyhow!("bootstrapping default objects: {e}"))?;
    ubernetes_registry::kinds::platform::bootstrap_priority_classes(&registry)
        .await
        .map_err(|e| anyhow::anyhow!("bootstrapping the system PriorityClasses: {e}"))?;
    ubernetes_registry::kinds::flowcontrol::bootstrap_apf_configuration(&registry)
        .await
        .map_err(|e| {
            anyhow::anyhow!("bootstrapping the APF FlowSchemas and priority levels: {e}")
        })?;
    ubernetes_registry::kinds::ipaddress::bootstrap_service_cidr(
        &registry,
        &options.service_cluster_ip_range,
    )
    .await
    .map_err(|e| anyhow::anyhow!("bootstrapping the default ServiceCIDR: {e}"))?;
    bootstrap_rbac(&registry)
        .await
        .map_err(|e| anyhow::anyhow!("bootstrapping the RBAC policy: {e}"))?;
    let rbac = RbacCache::start(&registry)
        .await
        .map_err(|e| anyhow::anyhow!("reading roles and bindings: {e}"))?;
    // Several replicas on one etcd: only the leader runs the controllers
    // below (each started anew per leadership term, stopped when it ends).
    let shared_store = storage
        .consistent_read_revision()
        .await
        .ok()
        .flatten()
        .is_some();
    let leadership = crate::leader_election::start(
        &options.leader_election,
        shared_store,
        &registry,
        registry.stop_token(),
    )?;
    // Before the CRD controller adds custom resources: what is served now is
    // what gets the built-in (`onstart`) APIServices.
    let builtin: Vec<ResourceInfo> = registry
        .resources()
        .into_iter()
        .chain(crate::unstored::review_resources())
        .chain(crate::unstored::core_extra_resources())
        .collect();
    // CRDs with `conversion.strategy: Webhook` convert through their webhook.
    registry.set_conversion_webhooks(ubernetes_webhook::conversion::Webhooks::new(&registry));
    // Every replica serves the Established CRDs; the leader writes.
    let crd_controller = ubernetes_apiextensions::controller::CrdController::start_with(
        registry.clone(),
        None,
        Some(leadership.clone()),
    )
    .await;
    let service_accounts = crate::issuer::load_issuer(options)?;
    let csr_signer = crate::csr_signing::signer_config(options)?;
    {
        let term_registry = registry.clone();
        let rbac = rbac.clone();
        let jwt = service_accounts.clone();
        let storage = storage.clone();
        let leading = leadership.clone();
        let event_ttl = options.event_ttl;
        let start_term = move |term: tokio_util::sync::CancellationToken| {
            let registry = &term_registry;
            tracing::info!(
                identity = leading.identity(),
                "leading: starting the garbage collector, namespace, token, root-CA, APIService, RBAC aggregation controllers and the compactor"
            );
            rbac_sync::start_aggregation_until(
                registry,
                &rbac,
                ubernetes_rbac::aggregate_cluster_roles,
                term.clone(),
            );
            let gc = GarbageCollector::start_until(registry.clone(), term.clone());
            if let Some(crds) = &crd_controller {
                crds.set_garbage_collector(Some(gc));
            }
            NamespaceController::start_until(registry.clone(), term.clone());
            controllers::standalone::start_until(registry.clone(), term.clone());
            // kube-controller-manager's endpoints, endpointslice and
            // mirroring controllers over the federation's own Services, and
            // the disruption controller while no Cluster is joined; off in
            // a plain API server (`--federation-controllers=false`).
            if controllers::standalone::enabled() {
                controllers::endpoints::ServiceEndpointsController::start_until(
                    registry.clone(),
                    term.clone(),
                );
                controllers::disruption::DisruptionController::start_until(
                    registry.clone(),
                    term.clone(),
                );
            }
            ubernetes_registry::quota::QuotaController::start_until(registry.clone(), term.clone());
            // --event-ttl: Events go TTL after their last write.
            ubernetes_registry::event_ttl::EventTtl::start_until(registry, event_ttl, term.clone());
            if let Some(ca) = &root_ca_pem {
                controllers::RootCaPublisher::start_until(
                    registry.clone(),
                    ca.clone(),
                    term.clone(),
                );
            }
            TokenController::start_until(
                registry.clone(),
                root_ca_pem.clone(),
                jwt.clone(),
                term.clone(),
            );
            if let Some(signer) = &csr_signer {
                ubernetes_registry::csr_signer::CsrSigner::start_until(
                    registry.clone(),
                    signer.clone(),
                    term.clone(),
                );
            }
            spawn_compactor(storage.clone(), term);
        };
        let registry = registry.clone();
        if leadership.identity().is_empty() {
            // No election: lead now, and register the built-in APIServices
            // before serving (kube's autoregister-completion check).
            let stop = registry.stop_token();
            start_term(stop.clone());
            ubernetes_registry::apiservices::ApiServiceController::start_until(
                registry, builtin, stop,
            )
            .await;
        } else {
            leadership.on_leading(move |term| {
                start_term(term.clone());
                let registry = registry.clone();
                let builtin = builtin.clone();
                tokio::spawn(async move {
                    ubernetes_registry::apiservices::ApiServiceController::start_until(
                        registry, builtin, term,
                    )
                    .await;
                });
            });
        }
    }
    let authenticator = Arc::new(
        authenticator.with_service_account_tokens(service_accounts.clone(), registry.clone()),
    );
    let authz = Arc::new(Authorization::new(mode, rbac));
    let _ = member_copy_authz.set(authz.clone());
    Ok(Arc::new(AppState {
        options: options.clone(),
        registry,
        authz,
        authenticator,
        service_accounts,
        cluster_proxy: Arc::default(),
        leadership,
    }))
}

/// Create every object of the bootstrap policy that is missing (kube's
/// `--authorization-mode=RBAC` policy "ensure"; existing objects, maybe
/// edited by users, are left alone), with the namespaces their Roles need.
/// ClusterRoles are created with their aggregated rules filled in.
pub async fn bootstrap_rbac(registry: &Registry) -> Result<(), ApiError> {
    use ubernetes_rbac::bootstrap::to_api_json;
    const GROUP: &str = rbac_sync::RBAC_GROUP;
    let namespaces = registry.namespaces();
    async fn ensure(
        store: &ubernetes_registry::Store,
        namespaces: Option<&ubernetes_registry::Store>,
        namespace: Option<&str>,
        obj: serde_json::Value,
    ) -> Result<(), ApiError> {
        match store
            .create(namespaces, namespace, obj, &WriteOptions::default())
            .await
        {
            Ok(_) | Err(ApiError { code: 409, .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
    let mut cluster_roles = ubernetes_rbac::bootstrap_cluster_roles();
    ubernetes_rbac::aggregate_cluster_roles(&mut cluster_roles);
    if let Some(store) = registry.get(GROUP, "v1", "clusterroles") {
        for r in &cluster_roles {
            ensure(&store, None, None, to_api_json("ClusterRole", r)).await?;
        }
    }
    if let Some(store) = registry.get(GROUP, "v1", "clusterrolebindings") {
        for b in ubernetes_rbac::bootstrap_cluster_role_bindings() {
            ensure(&store, None, None, to_api_json("ClusterRoleBinding", &b)).await?;
        }
    }
    let roles = ubernetes_rbac::bootstrap_roles();
    let bindings = ubernetes_rbac::bootstrap_role_bindings();
    if let Some(ns_store) = &namespaces {
        let mut wanted: Vec<String> = roles
            .iter()
            .filter_map(|r| r.metadata.namespace.clone())
            .chain(bindings.iter().filter_map(|b| b.metadata.namespace.clone()))
            .collect();
        wanted.sort();
        wanted.dedup();
        for ns in wanted {
            let obj = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            ensure(ns_store, None, None, obj).await?;
        }
    }
    if let Some(store) = registry.get(GROUP, "v1", "roles") {
        for r in &roles {
            let ns = r.metadata.namespace.clone();
            ensure(
                &store,
                namespaces.as_deref(),
                ns.as_deref(),
                to_api_json("Role", r),
            )
            .await?;
        }
    }
    if let Some(store) = registry.get(GROUP, "v1", "rolebindings") {
        for b in &bindings {
            let ns = b.metadata.namespace.clone();
            ensure(
                &store,
                namespaces.as_deref(),
                ns.as_deref(),
                to_api_json("RoleBinding", b),
            )
            .await?;
        }
    }
    Ok(())
}

/// Compact history older than five minutes, every five minutes (what
/// kube-apiserver asks of etcd with `--etcd-compaction-interval=5m`).
fn spawn_compactor(storage: Arc<dyn Storage>, stop: tokio_util::sync::CancellationToken) {
    tokio::spawn(async move {
        tokio::select! {
            () = stop.cancelled() => {}
            () = compact_forever(storage) => {}
        }
    });
}

/// The key kube-apiserver's compactor writes on every tick (its
/// `compact_rev_key`, outside every resource's prefix).
const COMPACT_REV_KEY: &str = "compact_rev_key";

/// kube-apiserver's compactor (`storage/etcd3/compact.go`): every tick it
/// writes `compact_rev_key` (so the revision moves even when nothing else is
/// written) and compacts to the revision of the previous tick's write. A
/// revision read at some point is therefore gone within two ticks, which
/// clients rely on (a stale continue token expires).
async fn compact_forever(storage: Arc<dyn Storage>) {
    let mut previous: Option<u64> = None;
    let mut tick = tokio::time::interval(Duration::from_secs(300));
    loop {
        tick.tick().await;
        let value = bytes::Bytes::from(previous.unwrap_or(0).to_string());
        let written = match storage.get(COMPACT_REV_KEY).await {
            Ok(Some(kv)) => {
                storage
                    .update(COMPACT_REV_KEY, value, kv.mod_revision)
                    .await
            }
            Ok(None) => storage.create(COMPACT_REV_KEY, value).await,
            Err(e) => Err(e),
        };
        let now = match written {
            Ok(kv) => kv.mod_revision,
            Err(e) => {
                tracing::warn!(error = %e, "compaction: writing the compaction key failed");
                continue;
            }
        };
        if let Some(prev) = previous
            && prev > 0
        {
            match storage.compact(prev).await {
                Ok(()) => tracing::debug!(revision = prev, "compacted store history"),
                Err(e) => tracing::warn!(error = %e, "compaction failed"),
            }
        }
        previous = Some(now);
    }
}

#[cfg(test)]
mod kind_schema_tests {
    use serde_json::Value;

    #[test]
    fn namespaces_come_first_then_crds_and_every_federated_kind_of_the_spec_once() {
        let ids: Vec<String> = super::federated_kinds()
            .iter()
            .map(|i| {
                if i.group.is_empty() {
                    i.resource.clone()
                } else {
                    format!("{}.{}", i.resource, i.group)
                }
            })
            .collect();
        assert_eq!(ids[0], "namespaces");
        assert_eq!(ids[1], "customresourcedefinitions.apiextensions.k8s.io");
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len(), "{ids:?}");
        // SPEC §3.4, and only these (one version of each).
        let mut want = vec![
            "namespaces",
            "customresourcedefinitions.apiextensions.k8s.io",
            "configmaps",
            "secrets",
            "services",
            "serviceaccounts",
            "limitranges",
            "resourcequotas",
            "deployments.apps",
            "replicasets.apps",
            "statefulsets.apps",
            "daemonsets.apps",
            "jobs.batch",
            "cronjobs.batch",
            "horizontalpodautoscalers.autoscaling",
            "ingresses.networking.k8s.io",
            "networkpolicies.networking.k8s.io",
            "poddisruptionbudgets.policy",
            "roles.rbac.authorization.k8s.io",
            "rolebindings.rbac.authorization.k8s.io",
            "clusterroles.rbac.authorization.k8s.io",
            "clusterrolebindings.rbac.authorization.k8s.io",
            // The cluster-wide policy a platform team declares once.
            "ingressclasses.networking.k8s.io",
            "storageclasses.storage.k8s.io",
            "volumeattributesclasses.storage.k8s.io",
            "priorityclasses.scheduling.k8s.io",
            "runtimeclasses.node.k8s.io",
            "flowschemas.flowcontrol.apiserver.k8s.io",
            "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io",
            "deviceclasses.resource.k8s.io",
            "resourceclaimtemplates.resource.k8s.io",
            "mutatingadmissionpolicies.admissionregistration.k8s.io",
            "mutatingadmissionpolicybindings.admissionregistration.k8s.io",
            "mutatingwebhookconfigurations.admissionregistration.k8s.io",
            "validatingadmissionpolicies.admissionregistration.k8s.io",
            "validatingadmissionpolicybindings.admissionregistration.k8s.io",
            "validatingwebhookconfigurations.admissionregistration.k8s.io",
        ];
        want.sort();
        assert_eq!(sorted, want);
        let hpa = super::federated_kinds()
            .into_iter()
            .find(|i| i.resource == "horizontalpodautoscalers");
        assert_eq!(hpa.map(|i| i.version), Some("v2".to_string()));
    }

    /// Every built-in kind's OpenAPI definition comes from its declaration;
    /// once added, every kind is there with its GVK and list, every fact
    /// lands on a property that exists, and no `$ref` dangles.
    #[test]
    fn every_declared_kind_gets_its_definition_and_every_fact_lands() {
        let mut kinds = ubernetes_registry::kinds::builtin();
        kinds.push(ubernetes_apiextensions::crd_strategy());
        super::add_kind_schemas(&kinds);
        let snap = ubernetes_openapi::definitions().snapshot();
        for s in &kinds {
            let info = s.info();
            let gvk = ubernetes_openapi::Gvk::new(&info.group, &info.version, &info.kind);
            assert_eq!(
                snap.definition_for(&gvk),
                Some(info.definition.as_str()),
                "{gvk:?}"
            );
            assert!(
                snap.get(&format!("{}List", info.definition)).is_some(),
                "{}List",
                info.definition
            );
        }
        for fact in ubernetes_openapi::facts::FIELD_FACTS {
            // Facts about definitions no served kind reaches are kept for
            // completeness (ComponentStatus, ServiceCIDR); the rest must land.
            let Some(schema) = snap.get(fact.definition) else {
                assert!(
                    fact.definition.ends_with("ComponentStatus")
                        || fact.definition.ends_with("ServiceCIDRStatus"),
                    "{} is not generated",
                    fact.definition
                );
                continue;
            };
            assert!(
                schema["properties"].get(fact.field).is_some(),
                "{}.{} does not exist",
                fact.definition,
                fact.field
            );
        }
        for name in ubernetes_openapi::facts::ATOMIC_DEFINITIONS {
            assert!(snap.get(name).is_some(), "{name} is not generated");
        }
        fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
            match v {
                Value::Object(o) => {
                    if let Some(r) = o.get("$ref").and_then(Value::as_str) {
                        out.push(r);
                    }
                    o.values().for_each(|x| refs(x, out));
                }
                Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
                _ => {}
            }
        }
        for (name, schema) in snap.iter() {
            let mut found = Vec::new();
            refs(schema, &mut found);
            for r in found {
                let target = ubernetes_openapi::definitions::ref_target(r).unwrap_or(r);
                assert!(snap.get(target).is_some(), "{name}: dangling {r}");
            }
        }
    }
}
