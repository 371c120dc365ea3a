//! Encryption at rest, as kube-apiserver's `--encryption-provider-config`:
//! an `EncryptionConfiguration` (`apiserver.config.k8s.io/v1`) names, per
//! resource, an ordered list of providers (`aescbc`, `aesgcm`, `secretbox`,
//! `identity`), and [`EncryptedStorage`] (the configuration as a value layer,
//! [`crate::layered`]) wraps any [`Storage`] engine so the
//! values of those resources are encrypted before they reach the engine (sled
//! or etcd) and decrypted on every read: gets, lists, the values a delete
//! returns, and watch events (both the value and the previous value).
//!
//! # Where it sits
//! Directly over the engine, below the registry and its watch caches: the
//! caches, the stores and every client see plaintext; the engine (its files,
//! its log of previous values, etcd and etcd's history) sees only
//! ciphertext. Nothing here knows a kind: a key's resource is read from its
//! path, `/<root>/<group or "core">/<resource>/...` (docs/operations.md, "Key
//! layout"), and matched against the configuration's `resources` as
//! kube-apiserver does (`secrets`, `deployments.apps`, `*.apps`, `*.` for
//! every core resource, `*.*` for everything; exact match first, then
//! `*.group`, then `*.*`).
//!
//! # Stored format (kube-apiserver's, byte for byte)
//! `k8s:enc:<provider>:v1:<key name>:` followed by
//! - `aescbc`: a random 16-byte IV, then AES-CBC with PKCS#7 padding;
//! - `aesgcm`: a random 12-byte nonce, then AES-GCM (ciphertext + 16-byte
//!   tag) with the storage key (`/registry/core/secrets/NS/NAME`) as
//!   additional authenticated data, so a value copied to another key does
//!   not decrypt;
//! - `secretbox`: a random 24-byte nonce, then NaCl secretbox
//!   (XSalsa20-Poly1305: 16-byte tag, then ciphertext).
//!
//! `identity` stores the value as it is. The ciphers are RustCrypto's (`aes`,
//! `cbc`, `aes-gcm`, `crypto_secretbox`); nothing cryptographic is written
//! here, only the framing above.
//!
//! # Reads, writes, rotation
//! Writes use the first provider (and its first key). Reads try, in order,
//! every provider whose prefix the value starts with (identity's prefix is
//! empty: it reads any value not starting with `k8s:enc:`), and within it
//! the key named after the prefix; a failure with one candidate moves on to
//! the next, as kube's `prefixTransformers`. A value read with anything but
//! the first provider and first key is *stale*
//! ([`Storage::get_with_staleness`]): the registry's guaranteed update then
//! writes it back even when the object did not change, which is how
//! `kubectl get secrets -A -o json | kubectl replace -f -` re-encrypts every
//! Secret with a new first key.
//!
//! Resources the configuration does not name are stored as they are; reading
//! an encrypted value for one of them is an error (kube's identity
//! "encrypt check").
//!
//! KMS providers (`kms`) are not supported: the configuration is rejected
//! with a clear error rather than silently storing plaintext.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use aes_gcm::aead::rand_core::RngCore;
use aes_gcm::aead::{Aead, KeyInit, OsRng, Payload};
use base64::Engine as _;
use bytes::Bytes;
use cbc::cipher::block_padding::Pkcs7;
use cbc::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit};
use serde::Deserialize;

#[cfg(doc)]
use crate::Storage;
use crate::StorageError;
use crate::layered::{Layered, Read, ValueLayer};

/// The prefix every encrypted value starts with (kube's identity transformer
/// refuses to read such values).
pub const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";
const AESCBC_PREFIX: &str = "k8s:enc:aescbc:v1:";
const AESGCM_PREFIX: &str = "k8s:enc:aesgcm:v1:";
const SECRETBOX_PREFIX: &str = "k8s:enc:secretbox:v1:";

const API_VERSION: &str = "apiserver.config.k8s.io/v1";
const KIND: &str = "EncryptionConfiguration";

const AES_BLOCK: usize = 16;
const GCM_NONCE: usize = 12;
const GCM_TAG: usize = 16;
const SECRETBOX_NONCE: usize = 24;
const SECRETBOX_TAG: usize = 16;
const AES_KEY_SIZES: &[usize] = &[16, 24, 32];
const SECRETBOX_KEY_SIZES: &[usize] = &[32];

// ---------------------------------------------------------------------------
// The configuration file (apiserver.config.k8s.io/v1 EncryptionConfiguration)
// ---------------------------------------------------------------------------

/// The file as written (the fields kube-apiserver reads; unknown fields are
/// ignored, as kube's non-strict decoder does).
#[derive(Debug, Deserialize)]
struct FileConfig {
    #[serde(rename = "apiVersion", default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    resources: Vec<ResourceConfig>,
}

#[derive(Debug, Deserialize)]
struct ResourceConfig {
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    providers: Vec<ProviderConfig>,
}

#[derive(Debug, Deserialize)]
struct ProviderConfig {
    aesgcm: Option<KeysConfig>,
    aescbc: Option<KeysConfig>,
    secretbox: Option<KeysConfig>,
    identity: Option<serde::de::IgnoredAny>,
    kms: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Deserialize)]
struct KeysConfig {
    #[serde(default)]
    keys: Vec<KeyConfig>,
}

#[derive(Deserialize)]
struct KeyConfig {
    #[serde(default, deserialize_with = "null_as_empty")]
    name: String,
    #[serde(default, deserialize_with = "null_as_empty")]
    secret: String,
}

/// `name:` with no value is Go's empty string (then "mandatory field"), not
/// a type error.
fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

impl fmt::Debug for KeyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyConfig")
            .field("name", &self.name)
            .field("secret", &"REDACTED")
            .finish()
    }
}

/// A group and resource as kube's `schema.ParseGroupResource` reads
/// `resource.group` (`secrets` → core `secrets`; `*.` → every core resource).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct GroupResource {
    group: String,
    resource: String,
}

impl GroupResource {
    fn parse(s: &str) -> Self {
        match s.split_once('.') {
            Some((resource, group)) => Self {
                group: group.to_string(),
                resource: resource.to_string(),
            },
            None => Self {
                group: String::new(),
                resource: s.to_string(),
            },
        }
    }

    /// kube's `grYAMLString`: how the rule is written in the file.
    fn yaml(&self) -> String {
        if self.group.is_empty() && self.resource == "*" {
            "*.".to_string()
        } else if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }

    fn any_in_group(group: &str) -> Self {
        Self {
            group: group.to_string(),
            resource: "*".to_string(),
        }
    }

    fn any() -> Self {
        Self::any_in_group("*")
    }
}

/// A configuration that failed to load, with kube-apiserver's wording.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(String);

/// One field error (kube's `field.Error`, printed as kube prints it).
fn required(path: &str, detail: &str) -> String {
    format!("{path}: Required value: {detail}")
}

fn invalid(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {value}: {detail}")
}

fn quoted_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// kube's `ValidateEncryptionConfiguration` (reload = false).
fn validate(c: &FileConfig) -> Vec<String> {
    let mut errs = Vec::new();
    if c.resources.is_empty() {
        errs.push(required("resources", "at least one resources is required"));
        return errs;
    }
    for (i, conf) in c.resources.iter().enumerate() {
        let r = format!("resources[{i}].resources");
        let p = format!("resources[{i}].providers");
        if conf.resources.is_empty() {
            errs.push(required(&r, &format!("at least one {r} is required")));
        }
        errs.extend(validate_resource_overlap(&conf.resources, &r));
        errs.extend(validate_resource_names(&conf.resources, &r));
        if conf.providers.is_empty() {
            errs.push(required(&p, &format!("at least one {p} is required")));
        }
        for (j, provider) in conf.providers.iter().enumerate() {
            let path = format!("{p}[{j}]");
            let found = [
                provider.kms.is_some(),
                provider.aesgcm.is_some(),
                provider.aescbc.is_some(),
                provider.secretbox.is_some(),
                provider.identity.is_some(),
            ]
            .iter()
            .filter(|b| **b)
            .count();
            if found == 0 {
                errs.push(invalid(
                    &path,
                    "\"object\"",
                    "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity",
                ));
                continue;
            }
            if found > 1 {
                errs.push(invalid(
                    &path,
                    "\"object\"",
                    "more than one provider specified in a single element, should split into different list elements",
                ));
                continue;
            }
            if provider.kms.is_some() {
                errs.push(invalid(
                    &format!("{path}.kms"),
                    "\"object\"",
                    "KMS providers are not supported by ubernetes: use aescbc, aesgcm or secretbox",
                ));
            } else if let Some(k) = &provider.aesgcm {
                errs.extend(validate_keys(
                    &k.keys,
                    &format!("{path}.aesgcm.keys"),
                    AES_KEY_SIZES,
                ));
            } else if let Some(k) = &provider.aescbc {
                errs.extend(validate_keys(
                    &k.keys,
                    &format!("{path}.aescbc.keys"),
                    AES_KEY_SIZES,
                ));
            } else if let Some(k) = &provider.secretbox {
                errs.extend(validate_keys(
                    &k.keys,
                    &format!("{path}.secretbox.keys"),
                    SECRETBOX_KEY_SIZES,
                ));
            }
        }
    }
    errs
}

fn validate_resource_overlap(resources: &[String], path: &str) -> Vec<String> {
    if resources.len() < 2 {
        return Vec::new();
    }
    let parsed: Vec<GroupResource> = resources.iter().map(|r| GroupResource::parse(r)).collect();
    let (mut overlap, mut duplicate) = (false, false);
    for (i, r1) in parsed.iter().enumerate() {
        for (j, r2) in parsed.iter().enumerate() {
            if i == j {
                continue;
            }
            if r1 == r2 && !duplicate {
                duplicate = true;
                continue;
            }
            if overlap {
                continue;
            }
            if *r1 == GroupResource::any() {
                overlap = true;
                continue;
            }
            if r1.group != r2.group {
                continue;
            }
            if r1.resource == "*" || r2.resource == "*" {
                overlap = true;
            }
        }
    }
    let mut errs = Vec::new();
    if duplicate {
        errs.push(invalid(
            path,
            &quoted_list(resources),
            "the same resource cannot be specified multiple times",
        ));
    }
    if overlap {
        errs.push(invalid(
            path,
            &quoted_list(resources),
            "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked",
        ));
    }
    errs
}

fn validate_resource_names(resources: &[String], path: &str) -> Vec<String> {
    let mut errs = Vec::new();
    for (j, res) in resources.iter().enumerate() {
        let jj = format!("{path}[{j}]");
        let value = format!("{res:?}");
        let detail = if res.to_lowercase() != *res {
            Some("resource name should not contain capital letters")
        } else if res == "*" {
            Some(
                "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources",
            )
        } else if matches!(
            res.as_str(),
            "apiserveripinfo" | "serviceipallocations" | "servicenodeportallocations"
        ) {
            Some("resources which do not have REST API/s cannot be encrypted")
        } else {
            let gr = GroupResource::parse(res);
            if gr.group == "events.k8s.io" {
                Some(
                    "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file",
                )
            } else if gr.group == "extensions" {
                Some("'extensions' group has been removed and cannot be used for encryption")
            } else if gr.group == "*" && gr.resource != "*" {
                Some("encrypting the same resource across groups is not supported")
            } else {
                None
            }
        };
        if let Some(d) = detail {
            errs.push(invalid(&jj, &value, d));
        }
    }
    errs
}

fn validate_keys(keys: &[KeyConfig], path: &str, sizes: &[usize]) -> Vec<String> {
    if keys.is_empty() {
        return vec![required(path, "at least one keys is required")];
    }
    let mut errs = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let kp = format!("{path}[{i}]");
        if key.name.is_empty() {
            errs.push(required(
                &format!("{kp}.name"),
                "name is a mandatory field for a key",
            ));
        }
        if key.secret.is_empty() {
            errs.push(required(
                &format!("{kp}.secret"),
                "secret is a mandatory field for a key",
            ));
            continue;
        }
        match base64::engine::general_purpose::STANDARD.decode(&key.secret) {
            Err(_) => errs.push(invalid(
                &format!("{kp}.secret"),
                "\"REDACTED\"",
                "secrets must be base64 encoded",
            )),
            Ok(secret) if !sizes.contains(&secret.len()) => errs.push(invalid(
                &format!("{kp}.secret"),
                "\"REDACTED\"",
                &format!(
                    "secret is not of the expected length, got {}, expected one of {}",
                    secret.len(),
                    go_int_list(sizes)
                ),
            )),
            Ok(_) => {}
        }
    }
    errs
}

/// `[16 24 32]`, as Go prints an `[]int`.
fn go_int_list(v: &[usize]) -> String {
    let items: Vec<String> = v.iter().map(|n| n.to_string()).collect();
    format!("[{}]", items.join(" "))
}

/// kube's `utilerrors.NewAggregate(...).Error()`: one error as it is, more
/// in brackets.
fn aggregate(errs: &[String]) -> String {
    if errs.len() == 1 {
        errs[0].clone()
    } else {
        format!("[{}]", errs.join(", "))
    }
}

// ---------------------------------------------------------------------------
// Providers
// ---------------------------------------------------------------------------

/// One named key of one provider. The key material never appears in `Debug`.
enum Cipher {
    AesCbc(Vec<u8>),
    AesGcm(GcmCipher),
    Secretbox(Box<crypto_secretbox::XSalsa20Poly1305>),
}

enum GcmCipher {
    A128(Box<aes_gcm::Aes128Gcm>),
    A192(Box<aes_gcm::AesGcm<aes::Aes192, aes_gcm::aead::consts::U12>>),
    A256(Box<aes_gcm::Aes256Gcm>),
}

/// A decryption or encryption failure (wrong key, corrupt or truncated
/// value): an error, never a panic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TransformError(String);

fn terr(s: impl Into<String>) -> TransformError {
    TransformError(s.into())
}

fn random<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    OsRng.fill_bytes(&mut b);
    b
}

macro_rules! cbc_encrypt {
    ($aes:ty, $key:expr, $iv:expr, $data:expr) => {
        cbc::Encryptor::<$aes>::new_from_slices($key, $iv)
            .map(|c| c.encrypt_padded_vec_mut::<Pkcs7>($data))
            .map_err(|_| terr("invalid AES key length"))
    };
}

macro_rules! cbc_decrypt {
    ($aes:ty, $key:expr, $iv:expr, $data:expr) => {
        cbc::Decryptor::<$aes>::new_from_slices($key, $iv)
            .map_err(|_| terr("invalid AES key length"))?
            .decrypt_padded_vec_mut::<Pkcs7>($data)
            .map_err(|_| terr("invalid padding on input"))
    };
}

impl Cipher {
    fn new(provider: &str, secret: &[u8]) -> Result<Self, String> {
        let bad = |_| format!("invalid key size {}", secret.len());
        Ok(match provider {
            "aescbc" => {
                if !AES_KEY_SIZES.contains(&secret.len()) {
                    return Err(format!("crypto/aes: invalid key size {}", secret.len()));
                }
                Cipher::AesCbc(secret.to_vec())
            }
            "aesgcm" => Cipher::AesGcm(match secret.len() {
                16 => GcmCipher::A128(Box::new(
                    aes_gcm::Aes128Gcm::new_from_slice(secret).map_err(bad)?,
                )),
                24 => GcmCipher::A192(Box::new(
                    aes_gcm::AesGcm::new_from_slice(secret).map_err(bad)?,
                )),
                32 => GcmCipher::A256(Box::new(
                    aes_gcm::Aes256Gcm::new_from_slice(secret).map_err(bad)?,
                )),
                n => return Err(format!("crypto/aes: invalid key size {n}")),
            }),
            _ => Cipher::Secretbox(Box::new(
                crypto_secretbox::XSalsa20Poly1305::new_from_slice(secret).map_err(|_| {
                    format!(
                        "expected key size 32 for secretbox provider, got {}",
                        secret.len()
                    )
                })?,
            )),
        })
    }

    /// `data` → the provider's framing (without the `k8s:enc:…:keyname:`
    /// prefix). `aad`: the storage key (used by AES-GCM only).
    fn seal(&self, data: &[u8], aad: &[u8]) -> Result<Vec<u8>, TransformError> {
        match self {
            Cipher::AesCbc(key) => {
                let iv = random::<AES_BLOCK>();
                let ct = match key.len() {
                    16 => cbc_encrypt!(aes::Aes128, key, &iv, data)?,
                    24 => cbc_encrypt!(aes::Aes192, key, &iv, data)?,
                    _ => cbc_encrypt!(aes::Aes256, key, &iv, data)?,
                };
                let mut out = Vec::with_capacity(AES_BLOCK + ct.len());
                out.extend_from_slice(&iv);
                out.extend_from_slice(&ct);
                Ok(out)
            }
            Cipher::AesGcm(gcm) => {
                let nonce = random::<GCM_NONCE>();
                let payload = Payload { msg: data, aad };
                let n = aes_gcm::Nonce::from_slice(&nonce);
                let ct = match gcm {
                    GcmCipher::A128(c) => c.encrypt(n, payload),
                    GcmCipher::A192(c) => c.encrypt(n, payload),
                    GcmCipher::A256(c) => c.encrypt(n, payload),
                }
                .map_err(|_| terr("failed to encrypt with AES-GCM"))?;
                let mut out = Vec::with_capacity(GCM_NONCE + ct.len());
                out.extend_from_slice(&nonce);
                out.extend_from_slice(&ct);
                Ok(out)
            }
            Cipher::Secretbox(sb) => {
                let nonce = random::<SECRETBOX_NONCE>();
                // crypto_secretbox's output is NaCl's: the tag, then the
                // ciphertext (what Go's secretbox.Seal writes).
                let ct = sb
                    .encrypt(crypto_secretbox::Nonce::from_slice(&nonce), data)
                    .map_err(|_| terr("failed to encrypt with secretbox"))?;
                let mut out = Vec::with_capacity(SECRETBOX_NONCE + ct.len());
                out.extend_from_slice(&nonce);
                out.extend_from_slice(&ct);
                Ok(out)
            }
        }
    }

    fn open(&self, data: &[u8], aad: &[u8]) -> Result<Vec<u8>, TransformError> {
        match self {
            Cipher::AesCbc(key) => {
                if data.len() < AES_BLOCK {
                    return Err(terr("the stored data was shorter than the required size"));
                }
                let (iv, ct) = data.split_at(AES_BLOCK);
                if ct.len() % AES_BLOCK != 0 {
                    return Err(terr("the stored data is not a multiple of the block size"));
                }
                if ct.is_empty() {
                    return Err(terr("invalid PKCS7 data (empty or not padded)"));
                }
                match key.len() {
                    16 => cbc_decrypt!(aes::Aes128, key, iv, ct),
                    24 => cbc_decrypt!(aes::Aes192, key, iv, ct),
                    _ => cbc_decrypt!(aes::Aes256, key, iv, ct),
                }
            }
            Cipher::AesGcm(gcm) => {
                if data.len() < GCM_NONCE {
                    return Err(terr("the stored data was shorter than the required size"));
                }
                let (nonce, ct) = data.split_at(GCM_NONCE);
                if ct.len() < GCM_TAG {
                    return Err(terr("cipher: message authentication failed"));
                }
                let n = aes_gcm::Nonce::from_slice(nonce);
                let payload = Payload { msg: ct, aad };
                match gcm {
                    GcmCipher::A128(c) => c.decrypt(n, payload),
                    GcmCipher::A192(c) => c.decrypt(n, payload),
                    GcmCipher::A256(c) => c.decrypt(n, payload),
                }
                .map_err(|_| terr("cipher: message authentication failed"))
            }
            Cipher::Secretbox(sb) => {
                if data.len() < SECRETBOX_NONCE + SECRETBOX_TAG {
                    return Err(terr("the stored data was shorter than the required size"));
                }
                let (nonce, ct) = data.split_at(SECRETBOX_NONCE);
                sb.decrypt(crypto_secretbox::Nonce::from_slice(nonce), ct)
                    .map_err(|_| terr("output array was not large enough for encryption"))
            }
        }
    }
}

struct NamedKey {
    name: String,
    cipher: Cipher,
}

/// One entry of a resource's `providers` list.
enum Provider {
    Identity,
    Keyed {
        /// `aescbc`, `aesgcm` or `secretbox`.
        kind: &'static str,
        prefix: &'static str,
        keys: Vec<NamedKey>,
    },
}

impl fmt::Debug for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Provider::Identity => f.write_str("identity"),
            Provider::Keyed { kind, keys, .. } => {
                let names: Vec<&str> = keys.iter().map(|k| k.name.as_str()).collect();
                write!(f, "{kind}{names:?}")
            }
        }
    }
}

impl Provider {
    /// Decrypt a value that starts with this provider's prefix (already
    /// stripped). `(plaintext, stale)`: stale when a key other than the
    /// first one decrypted it.
    fn open(&self, data: &[u8], aad: &[u8]) -> Result<(Vec<u8>, bool), TransformError> {
        let Provider::Keyed { kind, keys, .. } = self else {
            return Ok((data.to_vec(), false));
        };
        let mut errs = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            if let Some(rest) = data
                .strip_prefix(key.name.as_bytes())
                .and_then(|r| r.strip_prefix(b":"))
            {
                match key.cipher.open(rest, aad) {
                    Ok(plain) => return Ok((plain, i != 0)),
                    Err(e) => errs.push(e.0),
                }
            }
        }
        if !errs.is_empty() {
            return Err(terr(aggregate(&errs)));
        }
        let which = if *kind == "secretbox" {
            "Secretbox"
        } else {
            "AES"
        };
        Err(terr(format!(
            "no matching key was found for the provided {which} transformer"
        )))
    }
}

/// The ordered providers of one resource: kube's `prefixTransformers`.
#[derive(Debug)]
pub struct Transformer {
    providers: Vec<Arc<Provider>>,
}

impl Transformer {
    /// Whether writes are encrypted: the first provider is not `identity`.
    pub fn encrypts_writes(&self) -> bool {
        self.providers
            .first()
            .is_some_and(|p| matches!(**p, Provider::Keyed { .. }))
    }

    /// Encrypt `data` with the first provider and its first key.
    pub fn to_storage(&self, data: &[u8], aad: &[u8]) -> Result<Vec<u8>, TransformError> {
        match self.providers.first() {
            Some(p) if matches!(**p, Provider::Keyed { .. }) => {
                let Provider::Keyed { prefix, keys, .. } = &**p else {
                    return Ok(data.to_vec());
                };
                let key = keys
                    .first()
                    .ok_or_else(|| terr("the provider has no keys"))?;
                let sealed = key.cipher.seal(data, aad)?;
                let mut out = Vec::with_capacity(prefix.len() + key.name.len() + 1 + sealed.len());
                out.extend_from_slice(prefix.as_bytes());
                out.extend_from_slice(key.name.as_bytes());
                out.push(b':');
                out.extend_from_slice(&sealed);
                Ok(out)
            }
            _ => Ok(data.to_vec()),
        }
    }

    /// Decrypt a stored value: `(plaintext, stale)`.
    pub fn from_storage(&self, data: &[u8], aad: &[u8]) -> Result<(Vec<u8>, bool), TransformError> {
        let mut errs = Vec::new();
        for (i, p) in self.providers.iter().enumerate() {
            match &**p {
                Provider::Identity => {
                    // Identity's prefix is empty: it reads anything that
                    // is not encrypted; on an encrypted value it fails and
                    // the next provider is tried.
                    if !data.starts_with(ENCRYPTED_PREFIX) {
                        return Ok((data.to_vec(), i != 0));
                    }
                }
                Provider::Keyed { prefix, .. } => {
                    if let Some(rest) = data.strip_prefix(prefix.as_bytes()) {
                        match p.open(rest, aad) {
                            Ok((plain, stale)) => return Ok((plain, stale || i != 0)),
                            Err(e) => errs.push(e.0),
                        }
                    }
                }
            }
        }
        if !errs.is_empty() {
            return Err(terr(aggregate(&errs)));
        }
        Err(terr("no matching prefix found"))
    }
}

/// A loaded `--encryption-provider-config`: the transformer of each
/// configured group/resource (and wildcard).
pub struct EncryptionConfig {
    by_resource: HashMap<GroupResource, Arc<Transformer>>,
}

impl fmt::Debug for EncryptionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut m = f.debug_map();
        for (gr, t) in &self.by_resource {
            m.entry(&gr.yaml(), &t.providers);
        }
        m.finish()
    }
}

impl EncryptionConfig {
    /// Load the file at `path` (YAML or JSON). Errors name the reason with
    /// kube-apiserver's wording (the caller adds the path).
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let data = std::fs::read(path).map_err(|e| {
            ConfigError(format!(
                "error opening encryption provider configuration file {:?}: {e}",
                path.display().to_string()
            ))
        })?;
        if data.is_empty() {
            return Err(ConfigError(format!(
                "encryption provider configuration file {:?} is empty",
                path.display().to_string()
            )));
        }
        let text = String::from_utf8(data)
            .map_err(|_| ConfigError("error while parsing file: not UTF-8 text".into()))?;
        Self::parse(&text).map_err(|e| ConfigError(format!("error while parsing file: {e}")))
    }

    /// Parse and validate a configuration's text.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let file: FileConfig =
            serde_saphyr::from_str(text).map_err(|e| ConfigError(e.to_string()))?;
        if file.api_version.is_empty() || file.kind.is_empty() {
            return Err(ConfigError(format!(
                "Object 'Kind' or 'apiVersion' is missing: expected apiVersion {API_VERSION:?} and kind {KIND:?}"
            )));
        }
        if file.api_version != API_VERSION || file.kind != KIND {
            return Err(ConfigError(format!(
                "no kind {:?} is registered for version {:?} (expected apiVersion {API_VERSION:?}, kind {KIND:?})",
                file.kind, file.api_version
            )));
        }
        let errs = validate(&file);
        if !errs.is_empty() {
            return Err(ConfigError(aggregate(&errs)));
        }
        let mut lists: HashMap<GroupResource, Vec<Arc<Provider>>> = HashMap::new();
        for rc in &file.resources {
            let providers = rc
                .providers
                .iter()
                .map(build_provider)
                .collect::<Result<Vec<_>, _>>()
                .map_err(ConfigError)?;
            let providers: Vec<Arc<Provider>> = providers.into_iter().map(Arc::new).collect();
            for res in &rc.resources {
                let gr = GroupResource::parse(res);
                for mask in [GroupResource::any_in_group(&gr.group), GroupResource::any()] {
                    if lists.contains_key(&mask) {
                        return Err(ConfigError(format!(
                            "resource {:?} is masked by earlier rule {:?}",
                            gr.yaml(),
                            mask.yaml()
                        )));
                    }
                }
                lists
                    .entry(gr)
                    .or_default()
                    .extend(providers.iter().cloned());
            }
        }
        let by_resource = lists
            .into_iter()
            .map(|(gr, providers)| (gr, Arc::new(Transformer { providers })))
            .collect();
        Ok(Self { by_resource })
    }

    /// The transformer for a group (`""` for core) and resource, if the
    /// configuration names it: exact, then `*.group`, then `*.*`.
    pub fn transformer_for(&self, group: &str, resource: &str) -> Option<&Arc<Transformer>> {
        self.by_resource
            .get(&GroupResource {
                group: group.to_string(),
                resource: resource.to_string(),
            })
            .or_else(|| self.by_resource.get(&GroupResource::any_in_group(group)))
            .or_else(|| self.by_resource.get(&GroupResource::any()))
    }

    /// The transformer for a storage key `/<root>/<group or core>/<resource>/…`.
    pub fn transformer_for_key(&self, key: &str) -> Option<&Arc<Transformer>> {
        let (group, resource) = key_group_resource(key)?;
        self.transformer_for(group, resource)
    }
}

fn build_provider(p: &ProviderConfig) -> Result<Provider, String> {
    let (kind, prefix, keys) = if let Some(k) = &p.aesgcm {
        ("aesgcm", AESGCM_PREFIX, &k.keys)
    } else if let Some(k) = &p.aescbc {
        ("aescbc", AESCBC_PREFIX, &k.keys)
    } else if let Some(k) = &p.secretbox {
        ("secretbox", SECRETBOX_PREFIX, &k.keys)
    } else if p.identity.is_some() {
        return Ok(Provider::Identity);
    } else {
        // Validation already refused kms and empty entries.
        return Err(
            "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity"
                .into(),
        );
    };
    let mut named = Vec::with_capacity(keys.len());
    for k in keys {
        let secret = base64::engine::general_purpose::STANDARD
            .decode(&k.secret)
            .map_err(|e| format!("could not obtain secret for named key {}: {e}", k.name))?;
        let cipher = Cipher::new(kind, &secret)
            .map_err(|e| format!("error while creating cipher for named key {}: {e}", k.name))?;
        named.push(NamedKey {
            name: k.name.clone(),
            cipher,
        });
    }
    Ok(Provider::Keyed {
        kind,
        prefix,
        keys: named,
    })
}

/// `/<root>/<group or "core">/<resource>/…` → (group, resource), with
/// `core` read as the core group `""`. Keys with fewer segments name no
/// resource (stored as they are).
fn key_group_resource(key: &str) -> Option<(&str, &str)> {
    let mut parts = key.strip_prefix('/')?.splitn(4, '/');
    let _root = parts.next()?;
    let group = parts.next()?;
    let resource = parts.next()?;
    if group.is_empty() || resource.is_empty() {
        return None;
    }
    Some((if group == "core" { "" } else { group }, resource))
}

// ---------------------------------------------------------------------------
// The storage layer
// ---------------------------------------------------------------------------

/// A [`Storage`] that encrypts the configured resources' values on their way
/// to the storage below and decrypts them on the way back (see the module
/// docs): the configuration as a [`ValueLayer`] over any storage,
/// `EncryptedStorage::new(engine, Arc::new(config))`.
pub type EncryptedStorage = Layered<EncryptionConfig>;

fn transform_error(key: &str, e: TransformError) -> StorageError {
    StorageError::Engine(format!("unable to transform key {key:?}: {e}"))
}

/// The configuration as a layer: writes through the first provider of the
/// key's resource, reads through whichever provider's prefix matches
/// (stale unless the first provider and key), resources without a
/// configuration as they are, refusing encrypted values (kube's identity
/// "encrypt check"). A write answers with the plaintext it was given.
#[async_trait::async_trait]
impl ValueLayer for EncryptionConfig {
    async fn transform_to_storage(&self, key: &str, value: Bytes) -> Result<Bytes, StorageError> {
        match self.transformer_for_key(key) {
            Some(t) => t
                .to_storage(&value, key.as_bytes())
                .map(Bytes::from)
                .map_err(|e| transform_error(key, e)),
            None => Ok(value),
        }
    }

    async fn transform_from_storage(
        &self,
        key: &str,
        value: Bytes,
        _read: Read,
    ) -> Result<(Bytes, bool), StorageError> {
        match self.transformer_for_key(key) {
            Some(t) => t
                .from_storage(&value, key.as_bytes())
                .map(|(v, stale)| (Bytes::from(v), stale))
                .map_err(|e| transform_error(key, e)),
            None if value.starts_with(ENCRYPTED_PREFIX) => Err(transform_error(
                key,
                terr("identity transformer tried to read encrypted data"),
            )),
            None => Ok((value, false)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sled_engine::SledStorage;
    use crate::{ListOptions, Storage};
    use futures::StreamExt;

    const K16: &str = "MTIzNDU2Nzg5MDEyMzQ1Ng=="; // 16 bytes
    const K24: &str = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0"; // 24 bytes
    const K32: &str = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI="; // 32 bytes
    const K32B: &str = "YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXphYmNkZWY="; // another 32 bytes
    const KEY: &str = "/registry/core/secrets/default/s1";

    fn config(resources: &str, providers: &str) -> Result<EncryptionConfig, ConfigError> {
        EncryptionConfig::parse(&format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: {resources}\n    providers:\n{providers}"
        ))
    }

    fn keyed(provider: &str, keys: &[(&str, &str)]) -> String {
        let mut s = format!("      - {provider}:\n          keys:\n");
        for (n, k) in keys {
            s.push_str(&format!(
                "            - name: \"{n}\"\n              secret: {k}\n"
            ));
        }
        s
    }

    fn secrets(providers: &str) -> Arc<Transformer> {
        let c = config("[secrets]", providers).expect("valid config");
        c.transformer_for("", "secrets")
            .expect("secrets configured")
            .clone()
    }

    #[test]
    fn every_provider_and_key_size_round_trips_with_kube_framing() {
        for (provider, key, overhead_min) in [
            ("aescbc", K16, 16),
            ("aescbc", K24, 16),
            ("aescbc", K32, 16),
            ("aesgcm", K16, 12 + 16),
            ("aesgcm", K24, 12 + 16),
            ("aesgcm", K32, 12 + 16),
            ("secretbox", K32, 24 + 16),
        ] {
            let t = secrets(&keyed(provider, &[("key1", key)]));
            let plain = br#"{"kind":"Secret","data":{"password":"aHVudGVyMg=="}}"#;
            let stored = t.to_storage(plain, KEY.as_bytes()).expect("encrypt");
            let prefix = format!("k8s:enc:{provider}:v1:key1:");
            assert!(stored.starts_with(prefix.as_bytes()), "{provider}");
            assert!(stored.len() >= prefix.len() + plain.len() + overhead_min);
            assert!(
                !stored.windows(8).any(|w| w == b"password"),
                "{provider}: plaintext visible"
            );
            // Random IV/nonce: two encryptions differ.
            assert_ne!(stored, t.to_storage(plain, KEY.as_bytes()).expect("again"));
            let (back, stale) = t.from_storage(&stored, KEY.as_bytes()).expect("decrypt");
            assert_eq!(back, plain, "{provider}");
            assert!(!stale);
        }
    }

    #[test]
    fn aescbc_is_kubes_layout_iv_then_pkcs7_blocks() {
        let t = secrets(&keyed("aescbc", &[("k", K32)]));
        let stored = t.to_storage(b"0123456789abcdef", b"").expect("encrypt");
        let body = &stored[b"k8s:enc:aescbc:v1:k:".len()..];
        // IV + the 16-byte block + a full block of padding.
        assert_eq!(body.len(), 16 + 32);
        // Decrypt the body with the cbc crate directly: IV first, PKCS#7.
        let key = base64::engine::general_purpose::STANDARD
            .decode(K32)
            .expect("b64");
        let plain = cbc::Decryptor::<aes::Aes256>::new_from_slices(&key, &body[..16])
            .expect("key")
            .decrypt_padded_vec_mut::<Pkcs7>(&body[16..])
            .expect("padding");
        assert_eq!(plain, b"0123456789abcdef");
    }

    #[test]
    fn aesgcm_authenticates_the_storage_key() {
        let t = secrets(&keyed("aesgcm", &[("k", K32)]));
        let stored = t.to_storage(b"{}", KEY.as_bytes()).expect("encrypt");
        assert!(t.from_storage(&stored, KEY.as_bytes()).is_ok());
        // The same bytes under another key (copied by someone with write
        // access to the store) do not decrypt.
        let err = t
            .from_storage(&stored, b"/registry/core/secrets/default/other")
            .expect_err("other key");
        assert!(err.0.contains("authentication failed"), "{err}");
    }

    #[test]
    fn secretbox_is_nonce_then_nacl_box() {
        let t = secrets(&keyed("secretbox", &[("k", K32)]));
        let stored = t.to_storage(b"hello", b"").expect("encrypt");
        let body = &stored[b"k8s:enc:secretbox:v1:k:".len()..];
        assert_eq!(body.len(), 24 + 16 + 5);
        let key = base64::engine::general_purpose::STANDARD
            .decode(K32)
            .expect("b64");
        let sb = crypto_secretbox::XSalsa20Poly1305::new_from_slice(&key).expect("key");
        let plain = sb
            .decrypt(
                crypto_secretbox::Nonce::from_slice(&body[..24]),
                &body[24..],
            )
            .expect("open");
        assert_eq!(plain, b"hello");
    }

    #[test]
    fn a_wrong_key_is_an_error_not_a_panic() {
        for provider in ["aescbc", "aesgcm", "secretbox"] {
            let right = secrets(&keyed(provider, &[("key1", K32)]));
            let wrong = secrets(&keyed(provider, &[("key1", K32B)]));
            let stored = right.to_storage(b"{\"a\":1}", KEY.as_bytes()).expect("enc");
            // CBC has no authentication: a wrong key gives garbage that
            // fails the padding check almost always; the other two always
            // fail authentication.
            match wrong.from_storage(&stored, KEY.as_bytes()) {
                Err(_) => {}
                Ok((v, _)) => assert!(provider == "aescbc" && v != b"{\"a\":1}"),
            }
            // A key name the configuration does not have.
            let other_name = secrets(&keyed(provider, &[("key2", K32)]));
            let err = other_name
                .from_storage(&stored, KEY.as_bytes())
                .expect_err("unknown key name");
            assert!(err.0.contains("no matching key was found"), "{err}");
        }
    }

    #[test]
    fn truncated_or_corrupt_values_are_errors() {
        for provider in ["aescbc", "aesgcm", "secretbox"] {
            let t = secrets(&keyed(provider, &[("key1", K32)]));
            let stored = t
                .to_storage(b"{\"some\":\"value\"}", KEY.as_bytes())
                .expect("enc");
            let head = format!("k8s:enc:{provider}:v1:key1:").len();
            for cut in [
                head,
                head + 1,
                head + 11,
                head + 16,
                head + 30,
                stored.len() - 1,
            ] {
                if cut >= stored.len() {
                    continue;
                }
                let r = t.from_storage(&stored[..cut], KEY.as_bytes());
                assert!(r.is_err(), "{provider} cut at {cut}: {r:?}");
            }
            if provider != "aescbc" {
                // Authenticated: any flipped bit is refused.
                for i in [head, head + 20, stored.len() - 1] {
                    let mut bad = stored.clone();
                    bad[i] ^= 0x01;
                    assert!(
                        t.from_storage(&bad, KEY.as_bytes()).is_err(),
                        "{provider} bit {i}"
                    );
                }
            } else {
                // The last block's padding byte corrupted.
                let mut bad = stored.clone();
                let n = bad.len();
                bad[n - 17] ^= 0xff;
                assert!(t.from_storage(&bad, KEY.as_bytes()).is_err());
            }
        }
    }

    #[test]
    fn reads_pick_the_provider_and_key_by_prefix_and_report_staleness() {
        let old = secrets(&keyed("aescbc", &[("key1", K32)]));
        let old_value = old.to_storage(b"{\"v\":1}", b"").expect("enc");
        // Rotated: key2 first, key1 still listed.
        let rotated = secrets(&keyed("aescbc", &[("key2", K32B), ("key1", K32)]));
        let (v, stale) = rotated
            .from_storage(&old_value, b"")
            .expect("old key reads");
        assert_eq!(v, b"{\"v\":1}");
        assert!(stale, "read with the second key");
        let new_value = rotated.to_storage(b"{\"v\":2}", b"").expect("enc");
        assert!(new_value.starts_with(b"k8s:enc:aescbc:v1:key2:"));
        assert!(!rotated.from_storage(&new_value, b"").expect("dec").1);

        // Same provider twice with different keys (kube's own example):
        // the second entry still decrypts, stale.
        let two = secrets(&format!(
            "{}{}",
            keyed("aescbc", &[("key2", K32B)]),
            keyed("aescbc", &[("key1", K32)])
        ));
        let (v, stale) = two.from_storage(&old_value, b"").expect("second entry");
        assert_eq!(v, b"{\"v\":1}");
        assert!(stale);

        // Plaintext: identity reads it (stale when identity is not first).
        let with_identity = secrets(&format!(
            "{}      - identity: {{}}\n",
            keyed("secretbox", &[("k", K32)])
        ));
        let (v, stale) = with_identity
            .from_storage(b"{\"plain\":true}", b"")
            .expect("identity");
        assert_eq!(v, b"{\"plain\":true}");
        assert!(stale);
        // Without identity, plaintext has no matching prefix.
        let err = rotated
            .from_storage(b"{\"plain\":true}", b"")
            .expect_err("no identity");
        assert_eq!(err.0, "no matching prefix found");

        // Identity first: writes plaintext, still reads encrypted values
        // (decrypting away from encryption), stale.
        let decrypting = secrets(&format!(
            "      - identity: {{}}\n{}",
            keyed("aescbc", &[("key1", K32)])
        ));
        assert_eq!(decrypting.to_storage(b"{}", b"").expect("plain"), b"{}");
        let (v, stale) = decrypting.from_storage(&old_value, b"").expect("aescbc");
        assert_eq!(v, b"{\"v\":1}");
        assert!(stale);
    }

    #[test]
    fn resources_match_as_kube_exact_then_group_wildcard_then_all() {
        let c = EncryptionConfig::parse(&format!(
            "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets, deployments.apps]
    providers:
{a}
  - resources: ['*.example.com']
    providers:
{b}
  - resources: ['*.']
    providers:
      - identity: {{}}
",
            a = keyed("aescbc", &[("a", K32)]),
            b = keyed("secretbox", &[("b", K32)]),
        ))
        .expect("valid");
        let first = |key: &str| {
            c.transformer_for_key(key)
                .map(|t| format!("{:?}", t.providers[0]))
        };
        assert_eq!(
            first("/registry/core/secrets/ns/x").as_deref(),
            Some("aescbc[\"a\"]")
        );
        assert_eq!(
            first("/registry/apps/deployments/ns/x").as_deref(),
            Some("aescbc[\"a\"]")
        );
        assert_eq!(
            first("/registry/example.com/foos/ns/x").as_deref(),
            Some("secretbox[\"b\"]")
        );
        assert_eq!(
            first("/registry/core/configmaps/ns/x").as_deref(),
            Some("identity")
        );
        assert_eq!(first("/registry/apps/replicasets/ns/x"), None);
        assert_eq!(first("/compact_rev_key"), None);

        let all = config("['*.*']", &keyed("aesgcm", &[("k", K16)])).expect("valid");
        assert!(
            all.transformer_for_key("/registry/apps/replicasets/ns/x")
                .is_some()
        );
        assert!(
            all.transformer_for_key("/registry/core/secrets/ns/x")
                .is_some()
        );
    }

    #[tokio::test]
    async fn unconfigured_resources_refuse_encrypted_values() {
        let inner_cfg = config("[secrets]", &keyed("aescbc", &[("k", K32)])).expect("valid");
        let (v, stale) = inner_cfg
            .transform_from_storage(
                "/registry/core/configmaps/ns/c",
                Bytes::from_static(b"{}"),
                Read::Get,
            )
            .await
            .expect("plain");
        assert_eq!(&v[..], b"{}");
        assert!(!stale);
        let err = inner_cfg
            .transform_from_storage(
                "/registry/core/configmaps/ns/c",
                Bytes::from_static(b"k8s:enc:aescbc:v1:k:xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
                Read::Get,
            )
            .await
            .expect_err("encrypted");
        assert!(
            err.to_string()
                .contains("identity transformer tried to read encrypted data"),
            "{err}"
        );
        assert!(
            err.to_string().contains("/registry/core/configmaps/ns/c"),
            "{err}"
        );
    }

    fn parse_err(text: &str) -> String {
        EncryptionConfig::parse(text)
            .expect_err("should be refused")
            .to_string()
    }

    #[test]
    fn validation_speaks_kubes_words() {
        let head = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n";
        assert_eq!(
            parse_err(&format!("{head}resources: []\n")),
            "resources: Required value: at least one resources is required"
        );
        let e = config("[secrets]", &keyed("aescbc", &[("key1", "c2hvcnQ=")])).err();
        assert_eq!(
            e.map(|e| e.to_string()).as_deref(),
            Some(
                "resources[0].providers[0].aescbc.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 5, expected one of [16 24 32]"
            )
        );
        let e = config("[secrets]", &keyed("secretbox", &[("key1", K16)])).err();
        assert!(
            e.map(|e| e.to_string())
                .unwrap_or_default()
                .contains("secret is not of the expected length, got 16, expected one of [32]")
        );
        let e = config("[secrets]", &keyed("aesgcm", &[("key1", "not*base64")])).err();
        assert!(
            e.map(|e| e.to_string())
                .unwrap_or_default()
                .contains("secrets must be base64 encoded")
        );
        let e = config("[secrets]", &keyed("aesgcm", &[("", K16)])).err();
        assert!(
            e.map(|e| e.to_string())
                .unwrap_or_default()
                .contains("keys[0].name: Required value: name is a mandatory field for a key")
        );
        let e = config(
            "[secrets]",
            "      - aescbc:\n          keys:\n            - name:\n              secret:\n",
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(
            e.contains("keys[0].name: Required value: name is a mandatory field for a key"),
            "{e}"
        );
        assert!(
            e.contains("keys[0].secret: Required value: secret is a mandatory field for a key"),
            "{e}"
        );
        let e = config("[secrets]", "      - aescbc:\n          keys: []\n").err();
        assert!(
            e.map(|e| e.to_string())
                .unwrap_or_default()
                .contains("aescbc.keys: Required value: at least one keys is required")
        );
        // Two providers in one element, none at all, and several errors at
        // once (an aggregate in brackets).
        let e = config(
            "[secrets, Secrets, '*']",
            &format!(
                "{}        identity: {{}}\n      - {{}}\n",
                keyed("aescbc", &[("k", K32)])
            ),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(e.starts_with('['), "{e}");
        assert!(e.contains("resources[0].resources[1]: Invalid value: \"Secrets\": resource name should not contain capital letters"), "{e}");
        assert!(e.contains("use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"), "{e}");
        assert!(e.contains("resources[0].providers[0]: Invalid value: \"object\": more than one provider specified in a single element"), "{e}");
        assert!(e.contains("resources[0].providers[1]: Invalid value: \"object\": provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity"), "{e}");

        let e = config("[secrets, secrets]", "      - identity: {}\n").err();
        assert!(
            e.map(|e| e.to_string())
                .unwrap_or_default()
                .contains("the same resource cannot be specified multiple times")
        );
        let e = config("[secrets, '*.']", "      - identity: {}\n").err();
        assert!(
            e.map(|e| e.to_string())
                .unwrap_or_default()
                .contains("using overlapping resources such as 'secrets' and '*.'")
        );
        for (res, msg) in [
            ("events.events.k8s.io", "Use 'events' instead"),
            (
                "deployments.extensions",
                "'extensions' group has been removed",
            ),
            (
                "secrets.*",
                "encrypting the same resource across groups is not supported",
            ),
            (
                "serviceipallocations",
                "resources which do not have REST API/s cannot be encrypted",
            ),
        ] {
            let e = config(&format!("['{res}']"), "      - identity: {}\n").err();
            assert!(
                e.map(|e| e.to_string()).unwrap_or_default().contains(msg),
                "{res}"
            );
        }
    }

    #[test]
    fn kms_kind_and_masking_are_refused_clearly() {
        let e = config(
            "[secrets]",
            "      - kms:\n          name: vault\n          endpoint: unix:///kms.sock\n",
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(e.contains("providers[0].kms"), "{e}");
        assert!(e.contains("not supported"), "{e}");

        // The long-removed `kind: EncryptionConfig` (apiVersion v1) is not
        // read by kube-apiserver any more either.
        let e = parse_err("kind: EncryptionConfig\napiVersion: v1\nresources: []\n");
        assert!(
            e.contains("no kind \"EncryptionConfig\" is registered for version \"v1\""),
            "{e}"
        );
        let e = parse_err("resources: []\n");
        assert!(e.contains("'Kind' or 'apiVersion' is missing"), "{e}");

        // An earlier `*.` rule masks a later core resource: refused, as kube.
        let e = parse_err(
            "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: ['*.']
    providers: [{identity: {}}]
  - resources: [secrets]
    providers: [{identity: {}}]
",
        );
        assert_eq!(e, "resource \"secrets\" is masked by earlier rule \"*.\"");
        let e = parse_err(
            "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: ['*.*']
    providers: [{identity: {}}]
  - resources: [deployments.apps]
    providers: [{identity: {}}]
",
        );
        assert_eq!(
            e,
            "resource \"deployments.apps\" is masked by earlier rule \"*.*\""
        );
    }

    #[test]
    fn json_files_load_and_errors_name_the_problem() {
        let dir = tempfile::TempDir::new().expect("tempdir");
        let path = dir.path().join("enc.json");
        std::fs::write(
            &path,
            format!(
                r#"{{"apiVersion":"apiserver.config.k8s.io/v1","kind":"EncryptionConfiguration",
                "resources":[{{"resources":["secrets"],"providers":[{{"aesgcm":{{"keys":[{{"name":"k","secret":"{K32}"}}]}}}},{{"identity":{{}}}}]}}]}}"#
            ),
        )
        .expect("write");
        let c = EncryptionConfig::load(&path).expect("loads");
        assert!(c.transformer_for("", "secrets").is_some());
        // Debug never shows key material.
        let dbg = format!("{c:?}");
        assert!(!dbg.contains(K32) && dbg.contains("aesgcm"), "{dbg}");

        let empty = dir.path().join("empty.yaml");
        std::fs::write(&empty, "").expect("write");
        let e = EncryptionConfig::load(&empty)
            .expect_err("empty")
            .to_string();
        assert!(e.contains("is empty"), "{e}");
        let e = EncryptionConfig::load(&dir.path().join("missing.yaml"))
            .expect_err("missing")
            .to_string();
        assert!(
            e.contains("error opening encryption provider configuration file"),
            "{e}"
        );
    }

    /// Over a real sled store: what reaches the engine is ciphertext, and
    /// gets, lists, deletes and watch events (value and previous value)
    /// come back as plaintext, for each provider.
    #[tokio::test]
    async fn over_sled_the_engine_holds_only_ciphertext() {
        for (provider, secret) in [("aescbc", K32), ("aesgcm", K24), ("secretbox", K32)] {
            let dir = tempfile::TempDir::new().expect("tempdir");
            let raw: Arc<dyn Storage> = Arc::new(SledStorage::open(dir.path()).expect("open"));
            let cfg = config("[secrets]", &keyed(provider, &[("key1", secret)])).expect("valid");
            let s = EncryptedStorage::new(raw.clone(), Arc::new(cfg));
            let start = s.current_revision().await.expect("rev");
            let mut watch = s
                .watch("/registry/core/secrets/", start)
                .await
                .expect("watch");

            let v1 = Bytes::from_static(b"{\"data\":\"top-secret-1\"}");
            let v2 = Bytes::from_static(b"{\"data\":\"top-secret-2\"}");
            let created = s.create(KEY, v1.clone()).await.expect("create");
            assert_eq!(created.value, v1);
            let updated = s
                .update(KEY, v2.clone(), created.mod_revision)
                .await
                .expect("update");
            assert_eq!(updated.value, v2);
            // Not configured: stored as it is.
            s.create(
                "/registry/core/configmaps/default/c",
                Bytes::from_static(b"{\"cm\":1}"),
            )
            .await
            .expect("create cm");

            let stored = raw.get(KEY).await.expect("raw get").expect("present");
            let prefix = format!("k8s:enc:{provider}:v1:key1:");
            assert!(stored.value.starts_with(prefix.as_bytes()), "{provider}");
            assert!(!stored.value.windows(10).any(|w| w == b"top-secret"));
            let cm = raw
                .get("/registry/core/configmaps/default/c")
                .await
                .expect("raw")
                .expect("cm");
            assert_eq!(&cm.value[..], b"{\"cm\":1}");

            assert_eq!(s.get(KEY).await.expect("get").expect("present").value, v2);
            let (kv, stale) = s
                .get_with_staleness(KEY)
                .await
                .expect("get")
                .expect("present");
            assert_eq!(kv.value, v2);
            assert!(!stale);
            let list = s
                .list("/registry/core/secrets/", ListOptions::default())
                .await
                .expect("list");
            assert_eq!(list.items.len(), 1);
            assert_eq!(list.items[0].value, v2);
            // A list at the older revision reads the undo log's old value.
            let old = s
                .list(
                    "/registry/core/secrets/",
                    ListOptions {
                        revision: Some(created.mod_revision),
                        ..Default::default()
                    },
                )
                .await
                .expect("old list");
            assert_eq!(old.items[0].value, v1);

            let deleted = s.delete(KEY, None).await.expect("delete");
            assert_eq!(deleted.value, v2);

            let mut seen = Vec::new();
            while seen.len() < 3 {
                let ev = tokio::time::timeout(std::time::Duration::from_secs(10), watch.next())
                    .await
                    .expect("event in time")
                    .expect("stream open")
                    .expect("event");
                seen.push(ev);
            }
            assert_eq!(seen[0].kv.value, v1);
            assert_eq!(seen[1].kv.value, v2);
            assert_eq!(
                seen[1].prev.as_ref().map(|p| p.value.clone()),
                Some(v1.clone())
            );
            assert_eq!(seen[2].kind, crate::EventType::Deleted);
            assert_eq!(seen[2].kv.value, v2);
        }
    }

    /// A value written under an older first key is stale until re-written;
    /// dropping a key the data still needs makes reads fail with an error.
    #[tokio::test]
    async fn rotation_over_sled() {
        let dir = tempfile::TempDir::new().expect("tempdir");
        let raw: Arc<dyn Storage> = Arc::new(SledStorage::open(dir.path()).expect("open"));
        let v = Bytes::from_static(b"{\"x\":1}");
        let k1 = EncryptedStorage::new(
            raw.clone(),
            Arc::new(config("[secrets]", &keyed("aescbc", &[("key1", K32)])).expect("valid")),
        );
        let kv = k1.create(KEY, v.clone()).await.expect("create");

        let k2_then_k1 = EncryptedStorage::new(
            raw.clone(),
            Arc::new(
                config(
                    "[secrets]",
                    &keyed("aescbc", &[("key2", K32B), ("key1", K32)]),
                )
                .expect("valid"),
            ),
        );
        let (read, stale) = k2_then_k1
            .get_with_staleness(KEY)
            .await
            .expect("get")
            .expect("present");
        assert_eq!(read.value, v);
        assert!(stale);
        k2_then_k1
            .update(KEY, v.clone(), kv.mod_revision)
            .await
            .expect("rewrite");
        let stored = raw.get(KEY).await.expect("raw").expect("present");
        assert!(stored.value.starts_with(b"k8s:enc:aescbc:v1:key2:"));
        assert!(
            !k2_then_k1
                .get_with_staleness(KEY)
                .await
                .expect("get")
                .expect("p")
                .1
        );

        let only_k1 = EncryptedStorage::new(
            raw.clone(),
            Arc::new(config("[secrets]", &keyed("aescbc", &[("key1", K32)])).expect("valid")),
        );
        let err = only_k1.get(KEY).await.expect_err("key2 is gone");
        assert!(
            err.to_string().contains("no matching key was found"),
            "{err}"
        );
    }
}
