//! Long-lived service-account tokens, as kube-controller-manager's token
//! controller (`pkg/controller/serviceaccount/tokens_controller.go`)
//! provides them: [`TokenController`] fills every Secret of type
//! `kubernetes.io/service-account-token` whose ServiceAccount (annotation
//! `kubernetes.io/service-account.name`, and `…/service-account.uid` when
//! set) exists: `data.token` (a JWT with kube's legacy claims, signed with
//! the service-account key: [`crate::jwt::ServiceAccountJwt::legacy_token`]),
//! `data.ca.crt` (the server's CA, when known) and `data.namespace`, and
//! records the account's uid in the annotation. A token Secret whose account
//! does not exist is deleted (uid precondition), and so are an account's
//! token Secrets when the account is deleted — kube's behaviour.
//!
//! Such a token is valid while its Secret holds it and its account exists
//! (checked by [`crate::jwt::ServiceAccountJwt::authenticate`]).
//!
//! One difference: a token Secret whose `data.token` is not a JWT signed by
//! this server's keys (the opaque random tokens earlier versions wrote) gets
//! a new token, so data dirs from before keep working accounts; kube leaves
//! such a Secret as it is (and its token never authenticates).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};
use ubernetes_apimachinery::ApiError;
use ubernetes_storage::EventType;

use crate::controllers::{Queue, follow, spawn_until};
use crate::jwt::ServiceAccountJwt;
use crate::registry::Registry;
use crate::store::{DeleteOptions, ReadAt};

/// The Secret type of a service-account token (`v1.SecretTypeServiceAccountToken`).
pub const SERVICE_ACCOUNT_TOKEN_TYPE: &str = "kubernetes.io/service-account-token";
/// Annotation naming the token's ServiceAccount (`v1.ServiceAccountNameKey`).
pub const SERVICE_ACCOUNT_NAME_KEY: &str = "kubernetes.io/service-account.name";
/// Annotation with the ServiceAccount's uid (`v1.ServiceAccountUIDKey`).
pub const SERVICE_ACCOUNT_UID_KEY: &str = "kubernetes.io/service-account.uid";
/// Data key of the token (`v1.ServiceAccountTokenKey`).
pub const TOKEN_KEY: &str = "token";
/// Data key of the CA bundle (`v1.ServiceAccountRootCAKey`).
pub const ROOT_CA_KEY: &str = "ca.crt";
/// Data key of the namespace (`v1.ServiceAccountNamespaceKey`).
pub const NAMESPACE_KEY: &str = "namespace";

fn str_at<'a>(obj: &'a Value, pointer: &str) -> Option<&'a str> {
    obj.pointer(pointer).and_then(Value::as_str)
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn is_token_secret(obj: &Value) -> bool {
    str_at(obj, "/type") == Some(SERVICE_ACCOUNT_TOKEN_TYPE)
}

/// The decoded bytes of `data[key]` (empty when missing or not base64).
fn data_bytes(obj: &Value, key: &str) -> Vec<u8> {
    obj.get("data")
        .and_then(|d| d.get(key))
        .and_then(Value::as_str)
        .and_then(|s| STANDARD.decode(s).ok())
        .unwrap_or_default()
}

// ---------------------------------------------------------------- controller

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Work {
    /// Fill (or delete) a token Secret.
    Secret { namespace: String, name: String },
    /// A ServiceAccount was deleted: delete its token Secrets.
    AccountGone {
        namespace: String,
        name: String,
        uid: String,
    },
    /// A token Secret was deleted: drop it from its account's `secrets`.
    SecretGone {
        namespace: String,
        name: String,
        account: String,
    },
}

/// What a token Secret needs (`secretUpdateNeeded`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Needs {
    ca: bool,
    namespace: bool,
    token: bool,
}

impl Needs {
    fn any(self) -> bool {
        self.ca || self.namespace || self.token
    }
}

/// The token controller (kube-controller-manager's `TokensController`).
pub struct TokenController {
    registry: Arc<Registry>,
    /// PEM written to `data.ca.crt`; none: the key is left alone.
    root_ca: Option<Vec<u8>>,
    /// Signs the tokens.
    jwt: Arc<ServiceAccountJwt>,
    queue: Arc<Queue<Work>>,
}

impl TokenController {
    /// Start following secrets and serviceaccounts; `root_ca_pem` is the CA
    /// clients should trust for this server (kube's `--root-ca-file`); `jwt`
    /// signs the tokens.
    pub fn start(
        registry: Arc<Registry>,
        root_ca_pem: Option<String>,
        jwt: Arc<ServiceAccountJwt>,
    ) -> Option<Arc<Self>> {
        let stop = registry.stop_token();
        Self::start_until(registry, root_ca_pem, jwt, stop)
    }

    /// [`TokenController::start`], working until `stop` (a leadership term).
    pub fn start_until(
        registry: Arc<Registry>,
        root_ca_pem: Option<String>,
        jwt: Arc<ServiceAccountJwt>,
        stop: tokio_util::sync::CancellationToken,
    ) -> Option<Arc<Self>> {
        let secrets = registry.get("", "v1", "secrets")?;
        let accounts = registry.get("", "v1", "serviceaccounts")?;
        let c = Arc::new(Self {
            registry,
            root_ca: root_ca_pem
                .filter(|p| !p.trim().is_empty())
                .map(String::into_bytes),
            jwt,
            queue: Queue::new(),
        });
        let observer = c.clone();
        follow(stop.clone(), secrets, move |_, kind, obj| {
            observer.observe_secret(kind, &obj);
        });
        let observer = c.clone();
        follow(stop.clone(), accounts, move |_, kind, obj| {
            if kind != EventType::Deleted {
                return;
            }
            if let (Some(ns), Some(name)) = (
                str_at(&obj, "/metadata/namespace"),
                str_at(&obj, "/metadata/name"),
            ) {
                observer.queue.add(Work::AccountGone {
                    namespace: ns.to_string(),
                    name: name.to_string(),
                    uid: str_at(&obj, "/metadata/uid")
                        .unwrap_or_default()
                        .to_string(),
                });
            }
        });
        let worker = c.clone();
        spawn_until(stop, async move {
            loop {
                let work = worker.queue.next().await;
                if let Err(e) = worker.process(&work).await {
                    tracing::warn!(?work, error = %e, "service-account token sync failed; retrying");
                    worker.queue.add_after(work, Duration::from_secs(1));
                }
            }
        });
        Some(c)
    }

    fn observe_secret(&self, kind: EventType, obj: &Value) {
        if !is_token_secret(obj) {
            return;
        }
        let (Some(ns), Some(name)) = (
            str_at(obj, "/metadata/namespace"),
            str_at(obj, "/metadata/name"),
        ) else {
            return;
        };
        if kind == EventType::Deleted {
            if let Some(account) = annotation(obj, SERVICE_ACCOUNT_NAME_KEY) {
                self.queue.add(Work::SecretGone {
                    namespace: ns.to_string(),
                    name: name.to_string(),
                    account: account.to_string(),
                });
            }
            return;
        }
        if self.needs(obj).any() || annotation(obj, SERVICE_ACCOUNT_UID_KEY).is_none() {
            self.queue.add(Work::Secret {
                namespace: ns.to_string(),
                name: name.to_string(),
            });
        }
    }

    fn needs(&self, secret: &Value) -> Needs {
        Needs {
            ca: self
                .root_ca
                .as_ref()
                .is_some_and(|ca| data_bytes(secret, ROOT_CA_KEY) != *ca),
            namespace: data_bytes(secret, NAMESPACE_KEY).is_empty(),
            token: std::str::from_utf8(&data_bytes(secret, TOKEN_KEY))
                .map_or(true, |t| !self.jwt.is_signed_by_us(t.trim())),
        }
    }

    async fn process(&self, work: &Work) -> Result<(), ApiError> {
        match work {
            Work::Secret { namespace, name } => self.sync_secret(namespace, name).await,
            Work::AccountGone {
                namespace,
                name,
                uid,
            } => self.delete_tokens(namespace, name, uid).await,
            Work::SecretGone {
                namespace,
                name,
                account,
            } => self.remove_reference(namespace, account, name).await,
        }
    }

    /// The account `name` in `namespace`, if it exists and (when `uid` is
    /// given) has that uid (`getServiceAccount` with a live lookup).
    async fn account(
        &self,
        namespace: &str,
        name: &str,
        uid: Option<&str>,
    ) -> Result<Option<Value>, ApiError> {
        let Some(accounts) = self.registry.get("", "v1", "serviceaccounts") else {
            return Ok(None);
        };
        match accounts.get_value(Some(namespace), name).await {
            Ok(sa) if uid.is_none_or(|u| str_at(&sa, "/metadata/uid") == Some(u)) => Ok(Some(sa)),
            Ok(_) => Ok(None),
            Err(e) if e.code == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn sync_secret(&self, namespace: &str, name: &str) -> Result<(), ApiError> {
        let Some(secrets) = self.registry.get("", "v1", "secrets") else {
            return Ok(());
        };
        let secret = match secrets.get_value(Some(namespace), name).await {
            Ok(s) => s,
            Err(e) if e.code == 404 => return Ok(()),
            Err(e) => return Err(e),
        };
        if !is_token_secret(&secret) {
            return Ok(());
        }
        let Some(account_name) = annotation(&secret, SERVICE_ACCOUNT_NAME_KEY) else {
            return Ok(());
        };
        let account_uid = annotation(&secret, SERVICE_ACCOUNT_UID_KEY);
        let Some(account) = self.account(namespace, account_name, account_uid).await? else {
            // kube: "service account does not exist, deleting token".
            tracing::info!(
                namespace,
                secret = name,
                account = account_name,
                "service account does not exist; deleting its token secret"
            );
            let opts = DeleteOptions {
                precondition_uid: str_at(&secret, "/metadata/uid").map(str::to_string),
                ..Default::default()
            };
            return match secrets.delete(Some(namespace), name, &opts).await {
                Ok(_) => Ok(()),
                // Gone already, or replaced by another Secret of that name.
                Err(e) if e.code == 404 || e.code == 409 => Ok(()),
                Err(e) => Err(e),
            };
        };
        let account_uid = str_at(&account, "/metadata/uid")
            .unwrap_or_default()
            .to_string();
        let account_name = account_name.to_string();
        let secret_uid = str_at(&secret, "/metadata/uid").map(str::to_string);
        let res = secrets
            .system_update(Some(namespace), name, |mut live| {
                if str_at(&live, "/metadata/uid").map(str::to_string) != secret_uid
                    || !is_token_secret(&live)
                {
                    return Ok(None);
                }
                let needs = self.needs(&live);
                let uid_set = annotation(&live, SERVICE_ACCOUNT_UID_KEY) == Some(&account_uid);
                if !needs.any() && uid_set {
                    return Ok(None);
                }
                let Some(obj) = live.as_object_mut() else {
                    return Ok(None);
                };
                let data = obj
                    .entry("data")
                    .or_insert_with(|| Value::Object(Map::new()));
                if !data.is_object() {
                    *data = Value::Object(Map::new());
                }
                if let Some(data) = data.as_object_mut() {
                    if needs.ca
                        && let Some(ca) = &self.root_ca
                    {
                        data.insert(ROOT_CA_KEY.into(), Value::String(STANDARD.encode(ca)));
                    }
                    if needs.namespace {
                        data.insert(
                            NAMESPACE_KEY.into(),
                            Value::String(STANDARD.encode(namespace)),
                        );
                    }
                    if needs.token {
                        let token = self
                            .jwt
                            .legacy_token(namespace, &account_name, &account_uid, name)
                            .map_err(|e| ApiError::internal(e.to_string()))?;
                        data.insert(TOKEN_KEY.into(), Value::String(STANDARD.encode(token)));
                    }
                }
                let meta = obj
                    .entry("metadata")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Some(meta) = meta.as_object_mut() {
                    let annotations = meta
                        .entry("annotations")
                        .or_insert_with(|| Value::Object(Map::new()));
                    if !annotations.is_object() {
                        *annotations = Value::Object(Map::new());
                    }
                    if let Some(a) = annotations.as_object_mut() {
                        a.insert(
                            SERVICE_ACCOUNT_NAME_KEY.into(),
                            Value::String(account_name.clone()),
                        );
                        a.insert(
                            SERVICE_ACCOUNT_UID_KEY.into(),
                            Value::String(account_uid.clone()),
                        );
                    }
                }
                Ok(Some(live))
            })
            .await;
        match res {
            Ok(_) => {
                tracing::debug!(
                    namespace,
                    secret = name,
                    "populated service-account token secret"
                );
                Ok(())
            }
            Err(e) if e.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Delete the token Secrets of a deleted account (`deleteTokens`).
    async fn delete_tokens(&self, namespace: &str, name: &str, uid: &str) -> Result<(), ApiError> {
        // Secrets that record another uid belong to a new account of the
        // same name and stay.
        self.delete_tokens_matching(namespace, name, (!uid.is_empty()).then_some(uid))
            .await
    }

    async fn delete_tokens_matching(
        &self,
        namespace: &str,
        name: &str,
        uid: Option<&str>,
    ) -> Result<(), ApiError> {
        let Some(secrets) = self.registry.get("", "v1", "secrets") else {
            return Ok(());
        };
        let list = secrets
            .list(Some(namespace), None, 0, None, ReadAt::Latest)
            .await?;
        for item in &list.items {
            let Ok(secret) = serde_json::from_slice::<Value>(item) else {
                continue;
            };
            // `serviceaccount.IsServiceAccountToken`: name matches, and the
            // uid when the Secret records one.
            if !is_token_secret(&secret)
                || annotation(&secret, SERVICE_ACCOUNT_NAME_KEY) != Some(name)
            {
                continue;
            }
            if let (Some(want), Some(have)) = (uid, annotation(&secret, SERVICE_ACCOUNT_UID_KEY))
                && want != have
            {
                continue;
            }
            let Some(secret_name) = str_at(&secret, "/metadata/name") else {
                continue;
            };
            let opts = DeleteOptions {
                precondition_uid: str_at(&secret, "/metadata/uid").map(str::to_string),
                ..Default::default()
            };
            tracing::info!(
                namespace,
                secret = secret_name,
                account = name,
                "service account deleted; deleting its token secret"
            );
            match secrets.delete(Some(namespace), secret_name, &opts).await {
                Ok(_) => {}
                Err(e) if e.code == 404 || e.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Drop a deleted token Secret from its account's `secrets` list
    /// (`removeSecretReference`).
    async fn remove_reference(
        &self,
        namespace: &str,
        account: &str,
        secret_name: &str,
    ) -> Result<(), ApiError> {
        let Some(accounts) = self.registry.get("", "v1", "serviceaccounts") else {
            return Ok(());
        };
        let res = accounts
            .system_update(Some(namespace), account, |mut sa| {
                let Some(list) = sa.get_mut("secrets").and_then(Value::as_array_mut) else {
                    return Ok(None);
                };
                let before = list.len();
                list.retain(|r| r.get("name").and_then(Value::as_str) != Some(secret_name));
                if list.len() == before {
                    return Ok(None);
                }
                Ok(Some(sa))
            })
            .await;
        match res {
            Ok(_) => Ok(()),
            Err(e) if e.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod live_tests {
    use super::*;
    use crate::RegistryOptions;
    use crate::store::{Store, WriteOptions};
    use serde_json::json;
    use ubernetes_storage::Storage;
    use ubernetes_storage::sled_engine::SledStorage;

    const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    struct Env {
        jwt: Arc<ServiceAccountJwt>,
        registry: Arc<Registry>,
        secrets: Arc<Store>,
        accounts: Arc<Store>,
        _dir: tempfile::TempDir,
    }

    async fn env() -> Env {
        let dir = tempfile::tempdir().expect("tempdir");
        let storage: Arc<dyn Storage> = Arc::new(SledStorage::open(dir.path()).expect("open sled"));
        let registry = Registry::new(storage, crate::kinds::builtin(), RegistryOptions::default())
            .await
            .expect("registry");
        let namespaces = registry.namespaces().expect("namespaces");
        namespaces
            .create(
                None,
                None,
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1"}}),
                &WriteOptions::default(),
            )
            .await
            .expect("namespace");
        let jwt = crate::jwt::test_issuer();
        TokenController::start(registry.clone(), Some(CA.to_string()), jwt.clone())
            .expect("controller");
        Env {
            jwt,
            secrets: registry.get("", "v1", "secrets").expect("secrets"),
            accounts: registry.get("", "v1", "serviceaccounts").expect("accounts"),
            registry,
            _dir: dir,
        }
    }

    impl Env {
        async fn create(&self, store: &Store, obj: Value) -> Value {
            let namespaces = self.registry.namespaces();
            store
                .create(
                    namespaces.as_deref(),
                    Some("ns1"),
                    obj,
                    &WriteOptions::default(),
                )
                .await
                .unwrap_or_else(|e| panic!("create failed: {}", e.message))
                .object
        }

        /// Wait (on the store's watch) until the Secret satisfies `done`;
        /// `None` stands for "deleted".
        async fn until(&self, name: &str, done: impl Fn(Option<&Value>) -> bool) -> Option<Value> {
            let wait = async {
                loop {
                    let from = self.secrets.sync_revision().await.expect("revision");
                    let current = match self.secrets.get_value(Some("ns1"), name).await {
                        Ok(v) => Some(v),
                        Err(e) if e.code == 404 => None,
                        Err(e) => panic!("get: {}", e.message),
                    };
                    if done(current.as_ref()) {
                        return current;
                    }
                    let mut rx = self
                        .secrets
                        .watch(Some("ns1"), from, None)
                        .await
                        .expect("watch");
                    let _ = rx.recv().await;
                }
            };
            tokio::time::timeout(Duration::from_secs(10), wait)
                .await
                .expect("condition reached in time")
        }
    }

    fn token_secret(name: &str, account: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret", "type": SERVICE_ACCOUNT_TOKEN_TYPE,
               "metadata": {"name": name, "annotations": {SERVICE_ACCOUNT_NAME_KEY: account}}})
    }

    #[tokio::test]
    async fn an_empty_token_secret_of_an_existing_account_is_filled_in() {
        let env = env().await;
        let sa = env
            .create(
                &env.accounts,
                json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}),
            )
            .await;
        env.create(&env.secrets, token_secret("robot-token", "robot"))
            .await;
        let filled = env
            .until("robot-token", |s| {
                s.is_some_and(|s| !data_bytes(s, TOKEN_KEY).is_empty())
            })
            .await
            .expect("secret exists");
        let token = String::from_utf8(data_bytes(&filled, TOKEN_KEY)).expect("utf8");
        assert!(env.jwt.is_signed_by_us(&token), "a JWT of ours: {token}");
        assert_eq!(data_bytes(&filled, ROOT_CA_KEY), CA.as_bytes());
        assert_eq!(data_bytes(&filled, NAMESPACE_KEY), b"ns1");
        assert_eq!(
            annotation(&filled, SERVICE_ACCOUNT_UID_KEY),
            str_at(&sa, "/metadata/uid")
        );

        // The authenticator, reading the same caches, takes it.
        let who = env
            .jwt
            .authenticate(
                &token,
                None,
                env.registry.as_ref(),
                jiff::Timestamp::now().as_second(),
            )
            .expect("valid")
            .expect("ours")
            .info;
        assert_eq!(who.username(), "system:serviceaccount:ns1:robot");
        env.registry.shutdown();
    }

    #[tokio::test]
    async fn an_opaque_token_of_an_earlier_version_is_replaced_by_a_jwt() {
        let env = env().await;
        env.create(
            &env.accounts,
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}),
        )
        .await;
        let mut secret = token_secret("robot-token", "robot");
        secret["data"] = json!({"token": STANDARD.encode("opaque-random-token")});
        env.create(&env.secrets, secret).await;
        let filled = env
            .until("robot-token", |s| {
                s.is_some_and(|s| data_bytes(s, TOKEN_KEY) != b"opaque-random-token")
            })
            .await
            .expect("secret exists");
        let token = String::from_utf8(data_bytes(&filled, TOKEN_KEY)).expect("utf8");
        assert!(env.jwt.is_signed_by_us(&token));
        env.registry.shutdown();
    }

    #[tokio::test]
    async fn a_token_secret_whose_account_does_not_exist_is_deleted() {
        let env = env().await;
        env.create(&env.secrets, token_secret("orphan-token", "nobody"))
            .await;
        assert!(env.until("orphan-token", |s| s.is_none()).await.is_none());
        env.registry.shutdown();
    }

    #[tokio::test]
    async fn deleting_an_account_deletes_its_token_secrets() {
        let env = env().await;
        env.create(
            &env.accounts,
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}),
        )
        .await;
        env.create(&env.secrets, token_secret("robot-token", "robot"))
            .await;
        env.until("robot-token", |s| {
            s.is_some_and(|s| !data_bytes(s, TOKEN_KEY).is_empty())
        })
        .await;
        env.accounts
            .delete(Some("ns1"), "robot", &DeleteOptions::default())
            .await
            .expect("delete account");
        assert!(env.until("robot-token", |s| s.is_none()).await.is_none());
        env.registry.shutdown();
    }
}
