//! Long-lived service-account tokens, as kube-controller-manager's token
//! controller (`pkg/controller/serviceaccount/tokens_controller.go`) and
//! kube-apiserver's legacy token authenticator (`pkg/serviceaccount/legacy.go`)
//! provide them:
//!
//! - [`TokenController`] fills every Secret of type
//!   `kubernetes.io/service-account-token` whose ServiceAccount (annotation
//!   `kubernetes.io/service-account.name`, and `…/service-account.uid` when
//!   set) exists: `data.token` (a random 32-byte token, base64url), `data.ca.crt`
//!   (the server's CA, when known) and `data.namespace`, and records the
//!   account's uid in the annotation. A token Secret whose account does not
//!   exist is deleted (uid precondition), and so are an account's token
//!   Secrets when the account is deleted — kube's behaviour.
//! - [`TokenIndex`] keeps, in memory, which token belongs to which account,
//!   from the watches of secrets and serviceaccounts; the authenticator asks
//!   it. A token whose Secret or account is gone or being deleted, or whose
//!   Secret names another account uid, is not found.
//!
//! What it is not: kube's tokens are JWTs signed with the service-account key;
//! ours are opaque random strings, valid only against the server that issued
//! them (the same as a JWT in practice: only its issuer trusts its key).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use parking_lot::RwLock;
use rand::RngCore as _;
use serde_json::{Map, Value};
use ubernetes_apimachinery::ApiError;
use ubernetes_storage::EventType;

use crate::controllers::{Queue, follow, spawn_until};
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

/// A fresh token: 32 random bytes, base64url without padding.
pub fn generate_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

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

fn is_terminating(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

// --------------------------------------------------------------------- index

/// The account a token authenticates as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceAccountRef {
    pub namespace: String,
    pub name: String,
    /// The ServiceAccount's uid.
    pub uid: String,
    /// The Secret the token came from.
    pub secret_name: String,
}

impl ServiceAccountRef {
    /// `system:serviceaccount:NS:NAME` (`serviceaccount.MakeUsername`).
    pub fn username(&self) -> String {
        format!("system:serviceaccount:{}:{}", self.namespace, self.name)
    }

    /// `system:serviceaccounts` and `system:serviceaccounts:NS`
    /// (`serviceaccount.MakeGroupNames`).
    pub fn groups(&self) -> Vec<String> {
        vec![
            "system:serviceaccounts".to_string(),
            format!("system:serviceaccounts:{}", self.namespace),
        ]
    }
}

#[derive(Debug, Clone)]
struct TokenSecret {
    namespace: String,
    secret_name: String,
    account: String,
    /// The account uid the Secret was issued for (annotation), if any.
    account_uid: Option<String>,
    terminating: bool,
}

#[derive(Debug, Clone)]
struct Account {
    uid: String,
    terminating: bool,
}

#[derive(Debug, Default)]
struct IndexState {
    /// token → its Secret.
    tokens: HashMap<String, TokenSecret>,
    /// (namespace, secret name) → token, to drop a replaced token.
    by_secret: HashMap<(String, String), String>,
    /// (namespace, account name) → account.
    accounts: HashMap<(String, String), Account>,
}

/// Which token belongs to which ServiceAccount, kept current from the
/// secrets and serviceaccounts watches.
#[derive(Default)]
pub struct TokenIndex {
    state: RwLock<IndexState>,
}

impl std::fmt::Debug for TokenIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.read();
        f.debug_struct("TokenIndex")
            .field("tokens", &state.tokens.len())
            .field("accounts", &state.accounts.len())
            .finish()
    }
}

impl TokenIndex {
    /// An empty index (fed by hand: tests).
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// An index that follows the registry's secrets and serviceaccounts until
    /// the server stops. Empty when either kind is not served.
    pub fn start(registry: &Arc<Registry>) -> Arc<Self> {
        let index = Self::new();
        let (Some(secrets), Some(accounts)) = (
            registry.get("", "v1", "secrets"),
            registry.get("", "v1", "serviceaccounts"),
        ) else {
            return index;
        };
        let i = index.clone();
        follow(registry.stop_token(), accounts, move |_, kind, obj| {
            i.observe_service_account(kind, &obj);
        });
        let i = index.clone();
        follow(registry.stop_token(), secrets, move |_, kind, obj| {
            i.observe_secret(kind, &obj);
        });
        index
    }

    /// Record a change of a Secret.
    pub fn observe_secret(&self, kind: EventType, obj: &Value) {
        let (Some(ns), Some(name)) = (
            str_at(obj, "/metadata/namespace"),
            str_at(obj, "/metadata/name"),
        ) else {
            return;
        };
        let key = (ns.to_string(), name.to_string());
        let mut state = self.state.write();
        if let Some(old) = state.by_secret.remove(&key) {
            state.tokens.remove(&old);
        }
        if kind == EventType::Deleted || !is_token_secret(obj) {
            return;
        }
        let Some(account) = annotation(obj, SERVICE_ACCOUNT_NAME_KEY) else {
            return;
        };
        let token = data_bytes(obj, TOKEN_KEY);
        let Ok(token) = String::from_utf8(token) else {
            return;
        };
        let token = token.trim().to_string();
        if token.is_empty() {
            return;
        }
        let entry = TokenSecret {
            namespace: key.0.clone(),
            secret_name: key.1.clone(),
            account: account.to_string(),
            account_uid: annotation(obj, SERVICE_ACCOUNT_UID_KEY).map(str::to_string),
            terminating: is_terminating(obj),
        };
        state.by_secret.insert(key, token.clone());
        state.tokens.insert(token, entry);
    }

    /// Record a change of a ServiceAccount.
    pub fn observe_service_account(&self, kind: EventType, obj: &Value) {
        let (Some(ns), Some(name)) = (
            str_at(obj, "/metadata/namespace"),
            str_at(obj, "/metadata/name"),
        ) else {
            return;
        };
        let key = (ns.to_string(), name.to_string());
        let mut state = self.state.write();
        if kind == EventType::Deleted {
            state.accounts.remove(&key);
            return;
        }
        state.accounts.insert(
            key,
            Account {
                uid: str_at(obj, "/metadata/uid").unwrap_or_default().to_string(),
                terminating: is_terminating(obj),
            },
        );
    }

    /// The account `token` authenticates as, if its Secret and account exist,
    /// neither is being deleted, and the Secret was issued for this account
    /// (kube's legacy validator).
    pub fn lookup(&self, token: &str) -> Option<ServiceAccountRef> {
        let state = self.state.read();
        let secret = state.tokens.get(token)?;
        if secret.terminating {
            tracing::debug!(namespace = %secret.namespace, secret = %secret.secret_name, "token secret is being deleted");
            return None;
        }
        let account = state
            .accounts
            .get(&(secret.namespace.clone(), secret.account.clone()))?;
        if account.terminating {
            tracing::debug!(namespace = %secret.namespace, account = %secret.account, "service account is being deleted");
            return None;
        }
        if secret
            .account_uid
            .as_deref()
            .is_some_and(|uid| uid != account.uid)
        {
            tracing::debug!(namespace = %secret.namespace, account = %secret.account, "token was issued for another service account uid");
            return None;
        }
        Some(ServiceAccountRef {
            namespace: secret.namespace.clone(),
            name: secret.account.clone(),
            uid: account.uid.clone(),
            secret_name: secret.secret_name.clone(),
        })
    }

    /// How many tokens are known.
    pub fn len(&self) -> usize {
        self.state.read().tokens.len()
    }

    /// Whether no token is known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
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
    queue: Arc<Queue<Work>>,
}

impl TokenController {
    /// Start following secrets and serviceaccounts; `root_ca_pem` is the CA
    /// clients should trust for this server (kube's `--root-ca-file`).
    pub fn start(registry: Arc<Registry>, root_ca_pem: Option<String>) -> Option<Arc<Self>> {
        let secrets = registry.get("", "v1", "secrets")?;
        let accounts = registry.get("", "v1", "serviceaccounts")?;
        let c = Arc::new(Self {
            registry,
            root_ca: root_ca_pem
                .filter(|p| !p.trim().is_empty())
                .map(String::into_bytes),
            queue: Queue::new(),
        });
        let stop = c.registry.stop_token();
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
            token: data_bytes(secret, TOKEN_KEY).is_empty(),
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
                        data.insert(
                            TOKEN_KEY.into(),
                            Value::String(STANDARD.encode(generate_token())),
                        );
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
mod tests {
    use super::*;
    use serde_json::json;

    fn secret(ns: &str, name: &str, account: &str, uid: Option<&str>, token: &str) -> Value {
        let mut annotations = json!({SERVICE_ACCOUNT_NAME_KEY: account});
        if let Some(uid) = uid {
            annotations[SERVICE_ACCOUNT_UID_KEY] = json!(uid);
        }
        json!({
            "apiVersion": "v1", "kind": "Secret", "type": SERVICE_ACCOUNT_TOKEN_TYPE,
            "metadata": {"namespace": ns, "name": name, "annotations": annotations},
            "data": {"token": STANDARD.encode(token)}
        })
    }

    fn account(ns: &str, name: &str, uid: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"namespace": ns, "name": name, "uid": uid}})
    }

    #[test]
    fn generated_tokens_are_32_random_bytes_in_base64url() {
        let a = generate_token();
        let b = generate_token();
        assert_ne!(a, b);
        assert_eq!(URL_SAFE_NO_PAD.decode(&a).expect("base64url").len(), 32);
        assert!(!a.contains('+') && !a.contains('/') && !a.contains('='));
    }

    #[test]
    fn a_filled_token_of_an_existing_account_authenticates_as_that_account() {
        let index = TokenIndex::new();
        index.observe_service_account(EventType::Added, &account("ns1", "robot", "u1"));
        index.observe_secret(
            EventType::Added,
            &secret("ns1", "robot-token", "robot", Some("u1"), "tok"),
        );
        let who = index.lookup("tok").expect("known token");
        assert_eq!(who.username(), "system:serviceaccount:ns1:robot");
        assert_eq!(
            who.groups(),
            vec!["system:serviceaccounts", "system:serviceaccounts:ns1"]
        );
        assert_eq!(who.uid, "u1");
        assert_eq!(who.secret_name, "robot-token");
        assert!(index.lookup("other").is_none());
    }

    #[test]
    fn a_token_whose_account_is_gone_is_not_found() {
        let index = TokenIndex::new();
        let sa = account("ns1", "robot", "u1");
        index.observe_service_account(EventType::Added, &sa);
        index.observe_secret(EventType::Added, &secret("ns1", "t", "robot", None, "tok"));
        assert!(index.lookup("tok").is_some());
        index.observe_service_account(EventType::Deleted, &sa);
        assert!(index.lookup("tok").is_none());
    }

    #[test]
    fn a_token_whose_secret_is_deleted_or_terminating_is_not_found() {
        let index = TokenIndex::new();
        index.observe_service_account(EventType::Added, &account("ns1", "robot", "u1"));
        let mut s = secret("ns1", "t", "robot", None, "tok");
        index.observe_secret(EventType::Added, &s);
        s["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        index.observe_secret(EventType::Modified, &s);
        assert!(index.lookup("tok").is_none());
        index.observe_secret(EventType::Deleted, &s);
        assert!(index.lookup("tok").is_none());
        assert!(index.is_empty());
    }

    #[test]
    fn a_token_issued_for_a_previous_account_of_the_same_name_is_not_found() {
        let index = TokenIndex::new();
        index.observe_service_account(EventType::Added, &account("ns1", "robot", "new-uid"));
        index.observe_secret(
            EventType::Added,
            &secret("ns1", "t", "robot", Some("old-uid"), "tok"),
        );
        assert!(index.lookup("tok").is_none());
    }

    #[test]
    fn a_replaced_token_no_longer_authenticates() {
        let index = TokenIndex::new();
        index.observe_service_account(EventType::Added, &account("ns1", "robot", "u1"));
        index.observe_secret(EventType::Added, &secret("ns1", "t", "robot", None, "old"));
        index.observe_secret(
            EventType::Modified,
            &secret("ns1", "t", "robot", None, "new"),
        );
        assert!(index.lookup("old").is_none());
        assert!(index.lookup("new").is_some());
        assert_eq!(index.len(), 1);
    }

    #[test]
    fn secrets_of_other_types_are_not_tokens() {
        let index = TokenIndex::new();
        index.observe_service_account(EventType::Added, &account("ns1", "robot", "u1"));
        let mut s = secret("ns1", "t", "robot", None, "tok");
        s["type"] = json!("Opaque");
        index.observe_secret(EventType::Added, &s);
        assert!(index.lookup("tok").is_none());
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
        TokenController::start(registry.clone(), Some(CA.to_string())).expect("controller");
        Env {
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
        assert_eq!(URL_SAFE_NO_PAD.decode(&token).expect("base64url").len(), 32);
        assert_eq!(data_bytes(&filled, ROOT_CA_KEY), CA.as_bytes());
        assert_eq!(data_bytes(&filled, NAMESPACE_KEY), b"ns1");
        assert_eq!(
            annotation(&filled, SERVICE_ACCOUNT_UID_KEY),
            str_at(&sa, "/metadata/uid")
        );

        // The index (as the authenticator uses it) knows the token.
        let index = TokenIndex::start(&env.registry);
        let wait = async {
            loop {
                if let Some(who) = index.lookup(&token) {
                    return who;
                }
                tokio::task::yield_now().await;
            }
        };
        let who = tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .expect("index learns the token");
        assert_eq!(who.username(), "system:serviceaccount:ns1:robot");
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
