//! Service-account JWTs, signed and checked as kube-apiserver does
//! (`pkg/serviceaccount/jwt.go`, `claims.go`, `legacy.go`):
//!
//! - [`ServiceAccountJwt::bound_token`] makes the tokens of the TokenRequest
//!   subresource: `iss` (the first `--service-account-issuer`), `sub`
//!   (`system:serviceaccount:NS:NAME`), `aud`, `iat`/`nbf`/`exp`, a `jti`,
//!   and the private claim `kubernetes.io` naming the namespace, the
//!   ServiceAccount and the bound Pod, Secret or Node by name and uid.
//! - [`ServiceAccountJwt::legacy_token`] makes the tokens of
//!   `kubernetes.io/service-account-token` Secrets: issuer
//!   `kubernetes/serviceaccount`, no expiry, the legacy
//!   `kubernetes.io/serviceaccount/*` claims.
//! - [`ServiceAccountJwt::authenticate`] checks a bearer token: signature
//!   (key picked by `kid`), issuer, audiences (the token's must meet the
//!   requested ones, by default the server's `--api-audiences`; legacy
//!   tokens carry none and count as the server's), `exp`/`nbf` with go-jose's
//!   one-minute leeway, and that the objects named in the claims still exist
//!   with the same uid (a bound object deleted more than a minute ago, or a
//!   legacy token's Secret being deleted or holding another token, refuse
//!   it). The objects are read from the watch caches through [`ObjectLookup`].
//! - [`ServiceAccountJwt::jwks`] / [`ServiceAccountJwt::openid_configuration`]
//!   are the OIDC discovery documents.
//!
//! Keys: RSA (RS256) or ECDSA P-256 (ES256), PEM in PKCS#1, PKCS#8 or SEC1
//! for private keys and SPKI or PKCS#1 for public ones; the key id is kube's
//! (`base64url(sha256(DER SubjectPublicKeyInfo))`).

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use p256::elliptic_curve::sec1::ToEncodedPoint as _;
use rsa::pkcs1::{DecodeRsaPrivateKey as _, DecodeRsaPublicKey as _, EncodeRsaPrivateKey as _};
use rsa::pkcs8::{DecodePrivateKey as _, DecodePublicKey as _, EncodePublicKey as _};
use rsa::traits::PublicKeyParts as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::registry::Registry;

/// kube-apiserver's usual `--service-account-issuer`.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// The issuer of the tokens in token Secrets (`serviceaccount.LegacyIssuer`).
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";
/// go-jose's `jwt.DefaultLeeway`, seconds.
const LEEWAY: i64 = 60;

/// `user.Info` extra keys kube sets for service accounts.
pub const POD_NAME_KEY: &str = "authentication.kubernetes.io/pod-name";
pub const POD_UID_KEY: &str = "authentication.kubernetes.io/pod-uid";
pub const NODE_NAME_KEY: &str = "authentication.kubernetes.io/node-name";
pub const NODE_UID_KEY: &str = "authentication.kubernetes.io/node-uid";
pub const CREDENTIAL_ID_KEY: &str = "authentication.kubernetes.io/credential-id";

/// A key could not be read or used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{0}")]
    Pem(String),
    #[error("no RSA or ECDSA P-256 key found in {0}")]
    NoKey(String),
    #[error("{what} holds a {tag} block that is not an RSA or ECDSA P-256 key")]
    Unsupported { what: String, tag: String },
    #[error("{what} holds no private key (a signing key must be private)")]
    NotPrivate { what: String },
    #[error("signing a token: {0}")]
    Sign(String),
}

/// A public key that verifies tokens.
#[derive(Clone)]
struct VerifyKey {
    kid: String,
    alg: Algorithm,
    key: DecodingKey,
    /// Its JWK, as `/openid/v1/jwks` shows it.
    jwk: Value,
}

/// A private key that signs tokens, with its public half.
#[derive(Clone)]
struct SignKey {
    key: EncodingKey,
    public: VerifyKey,
}

enum ParsedKey {
    Private(SignKey),
    Public(VerifyKey),
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// kube's `keyIDFromPublicKey`.
fn key_id(spki_der: &[u8]) -> String {
    b64(&Sha256::digest(spki_der))
}

fn ec_public(pk: &p256::PublicKey) -> Result<VerifyKey, String> {
    let spki = pk.to_public_key_der().map_err(|e| e.to_string())?;
    let kid = key_id(spki.as_bytes());
    let point = pk.to_encoded_point(false);
    let (Some(x), Some(y)) = (point.x(), point.y()) else {
        return Err("the EC public key has no coordinates".into());
    };
    Ok(VerifyKey {
        jwk: json!({"use": "sig", "kty": "EC", "kid": kid, "crv": "P-256", "alg": "ES256",
                    "x": b64(x), "y": b64(y)}),
        kid,
        alg: Algorithm::ES256,
        key: DecodingKey::from_ec_der(point.as_bytes()),
    })
}

fn rsa_public(pk: &rsa::RsaPublicKey) -> Result<VerifyKey, String> {
    let spki = pk.to_public_key_der().map_err(|e| e.to_string())?;
    let kid = key_id(spki.as_bytes());
    let (n, e) = (pk.n().to_bytes_be(), pk.e().to_bytes_be());
    Ok(VerifyKey {
        jwk: json!({"use": "sig", "kty": "RSA", "kid": kid, "alg": "RS256",
                    "n": b64(&n), "e": b64(&e)}),
        kid,
        alg: Algorithm::RS256,
        key: DecodingKey::from_rsa_raw_components(&n, &e),
    })
}

fn ec_private(sk: &p256::SecretKey) -> Result<SignKey, String> {
    use p256::pkcs8::EncodePrivateKey as _;
    let der = sk.to_pkcs8_der().map_err(|e| e.to_string())?;
    Ok(SignKey {
        key: EncodingKey::from_ec_der(der.as_bytes()),
        public: ec_public(&sk.public_key())?,
    })
}

fn rsa_private(sk: &rsa::RsaPrivateKey) -> Result<SignKey, String> {
    let der = sk.to_pkcs1_der().map_err(|e| e.to_string())?;
    Ok(SignKey {
        key: EncodingKey::from_rsa_der(der.as_bytes()),
        public: rsa_public(&sk.to_public_key())?,
    })
}

/// Every key in a PEM text (`what` names it in errors). Blocks that are no
/// key (certificates) are skipped, as kube's `keyutil` does.
fn parse_keys(pem_text: &str, what: &str) -> Result<Vec<ParsedKey>, KeyError> {
    let blocks = pem::parse_many(pem_text).map_err(|e| KeyError::Pem(format!("{what}: {e}")))?;
    let mut keys = Vec::new();
    for block in blocks {
        let der = block.contents();
        let unsupported = || KeyError::Unsupported {
            what: what.to_string(),
            tag: block.tag().to_string(),
        };
        let parsed = match block.tag() {
            "PRIVATE KEY" => {
                if let Ok(sk) = p256::SecretKey::from_pkcs8_der(der) {
                    ec_private(&sk).map(ParsedKey::Private)
                } else if let Ok(sk) = rsa::RsaPrivateKey::from_pkcs8_der(der) {
                    rsa_private(&sk).map(ParsedKey::Private)
                } else {
                    return Err(unsupported());
                }
            }
            "EC PRIVATE KEY" => match p256::SecretKey::from_sec1_der(der) {
                Ok(sk) => ec_private(&sk).map(ParsedKey::Private),
                Err(_) => return Err(unsupported()),
            },
            "RSA PRIVATE KEY" => match rsa::RsaPrivateKey::from_pkcs1_der(der) {
                Ok(sk) => rsa_private(&sk).map(ParsedKey::Private),
                Err(_) => return Err(unsupported()),
            },
            "PUBLIC KEY" => {
                if let Ok(pk) = p256::PublicKey::from_public_key_der(der) {
                    ec_public(&pk).map(ParsedKey::Public)
                } else if let Ok(pk) = rsa::RsaPublicKey::from_public_key_der(der) {
                    rsa_public(&pk).map(ParsedKey::Public)
                } else {
                    return Err(unsupported());
                }
            }
            "RSA PUBLIC KEY" => match rsa::RsaPublicKey::from_pkcs1_der(der) {
                Ok(pk) => rsa_public(&pk).map(ParsedKey::Public),
                Err(_) => return Err(unsupported()),
            },
            _ => continue,
        };
        keys.push(parsed.map_err(|e| KeyError::Pem(format!("{what}: {e}")))?);
    }
    if keys.is_empty() {
        return Err(KeyError::NoKey(what.to_string()));
    }
    Ok(keys)
}

// -------------------------------------------------------------------- claims

/// `{name, uid}` of an object named in the claims.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRef {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

/// The `kubernetes.io` private claim.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct KubeClaims {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    namespace: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    node: Option<ObjectRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pod: Option<ObjectRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    secret: Option<ObjectRef>,
    #[serde(default)]
    serviceaccount: ObjectRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    warnafter: Option<i64>,
}

/// `aud` is a string or a list of strings (RFC 7519 §4.1.3).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

impl Audience {
    fn into_vec(self) -> Vec<String> {
        match self {
            Self::One(a) => vec![a],
            Self::Many(a) => a,
        }
    }
}

/// The payload of a bound token; keys in the order Go's JSON writes them.
#[derive(Debug, Serialize)]
struct BoundClaims<'a> {
    aud: &'a [String],
    exp: i64,
    iat: i64,
    iss: &'a str,
    jti: String,
    #[serde(rename = "kubernetes.io")]
    kubernetes: KubeClaims,
    nbf: i64,
    sub: String,
}

/// The payload of a legacy (token Secret) token.
#[derive(Debug, Serialize, Deserialize)]
struct LegacyClaims {
    iss: String,
    #[serde(rename = "kubernetes.io/serviceaccount/namespace", default)]
    namespace: String,
    #[serde(rename = "kubernetes.io/serviceaccount/secret.name", default)]
    secret_name: String,
    #[serde(rename = "kubernetes.io/serviceaccount/service-account.name", default)]
    service_account_name: String,
    #[serde(rename = "kubernetes.io/serviceaccount/service-account.uid", default)]
    service_account_uid: String,
    #[serde(default)]
    sub: String,
}

/// What a token is read as, before its objects are checked.
#[derive(Debug, Deserialize)]
struct AnyClaims {
    #[serde(default)]
    aud: Option<Audience>,
    #[serde(default)]
    iss: String,
    #[serde(default)]
    jti: Option<String>,
    #[serde(rename = "kubernetes.io", default)]
    kubernetes: Option<KubeClaims>,
}

/// `system:serviceaccount:NS:NAME` (`serviceaccount.MakeUsername`).
pub fn make_username(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// What a valid token says (`serviceaccount.ServiceAccountInfo`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceAccountInfo {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub pod_name: String,
    pub pod_uid: String,
    pub node_name: String,
    pub node_uid: String,
    pub credential_id: String,
}

impl ServiceAccountInfo {
    /// `system:serviceaccount:NS:NAME`.
    pub fn username(&self) -> String {
        make_username(&self.namespace, &self.name)
    }

    /// `system:serviceaccounts` and `system:serviceaccounts:NS`.
    pub fn groups(&self) -> Vec<String> {
        vec![
            "system:serviceaccounts".to_string(),
            format!("system:serviceaccounts:{}", self.namespace),
        ]
    }

    /// The `user.Info` extra kube derives (`ServiceAccountInfo.UserInfo`).
    pub fn extra(&self) -> BTreeMap<String, Vec<String>> {
        let mut extra = BTreeMap::new();
        if !self.pod_name.is_empty() && !self.pod_uid.is_empty() {
            extra.insert(POD_NAME_KEY.to_string(), vec![self.pod_name.clone()]);
            extra.insert(POD_UID_KEY.to_string(), vec![self.pod_uid.clone()]);
        }
        if !self.credential_id.is_empty() {
            extra.insert(
                CREDENTIAL_ID_KEY.to_string(),
                vec![self.credential_id.clone()],
            );
        }
        if !self.node_name.is_empty() {
            extra.insert(NODE_NAME_KEY.to_string(), vec![self.node_name.clone()]);
            if !self.node_uid.is_empty() {
                extra.insert(NODE_UID_KEY.to_string(), vec![self.node_uid.clone()]);
            }
        }
        extra
    }
}

/// A token that authenticated, and the audiences it was accepted for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    pub info: ServiceAccountInfo,
    pub audiences: Vec<String>,
}

/// Why a token of this server's issuers was refused (logged; clients see
/// only 401).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TokenError(pub String);

fn refuse(msg: impl Into<String>) -> TokenError {
    TokenError(msg.into())
}

/// Reads objects for token validation (the getter of kube's validators).
pub trait ObjectLookup: Send + Sync {
    /// The core/v1 object `resource` (`serviceaccounts`, `secrets`, `pods`,
    /// `nodes`) named `name`, if it exists.
    fn object(&self, resource: &str, namespace: Option<&str>, name: &str) -> Option<Value>;
}

impl ObjectLookup for Registry {
    /// From the watch cache, as kube's validators read informers.
    fn object(&self, resource: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        let store = self.get("", "v1", resource)?;
        let cached = store.cache().get(&store.key(namespace, name))?;
        serde_json::from_slice(&cached.json).ok()
    }
}

/// A bound object of a TokenRequest, as resolved by the handler.
#[derive(Debug, Clone, Default)]
pub struct Binding {
    pub pod: Option<ObjectRef>,
    pub secret: Option<ObjectRef>,
    pub node: Option<ObjectRef>,
}

/// The service-account token issuer and authenticator of this server.
pub struct ServiceAccountJwt {
    /// Accepted issuers; the first signs.
    issuers: Vec<String>,
    /// The server's own audiences (`--api-audiences`, default the issuers).
    api_audiences: Vec<String>,
    signing: SignKey,
    /// Every key that verifies (the signing key's public half first).
    verifying: Vec<VerifyKey>,
    /// `--service-account-max-token-expiration`, seconds (0: none).
    max_expiration_seconds: i64,
}

impl std::fmt::Debug for ServiceAccountJwt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountJwt")
            .field("issuers", &self.issuers)
            .field("api_audiences", &self.api_audiences)
            .field("kid", &self.signing.public.kid)
            .finish()
    }
}

/// How to build a [`ServiceAccountJwt`].
#[derive(Debug, Clone, Default)]
pub struct JwtConfig {
    /// `--service-account-issuer` values (empty: [`DEFAULT_ISSUER`]).
    pub issuers: Vec<String>,
    /// `--api-audiences` (empty: the issuers).
    pub api_audiences: Vec<String>,
    /// The signing key, PEM, and what to call it in errors.
    pub signing_key_pem: String,
    pub signing_key_name: String,
    /// Extra verification keys (`--service-account-key-file`): (PEM, name).
    pub verification_keys: Vec<(String, String)>,
    /// `--service-account-max-token-expiration`, seconds (0: none).
    pub max_expiration_seconds: i64,
}

impl ServiceAccountJwt {
    /// Read the keys and settle the issuers and audiences.
    pub fn new(config: JwtConfig) -> Result<Arc<Self>, KeyError> {
        // Exactly one provider is compiled in; installing it explicitly keeps
        // a second one elsewhere in the build from making the choice ambiguous.
        let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
        let signing = parse_keys(&config.signing_key_pem, &config.signing_key_name)?
            .into_iter()
            .find_map(|k| match k {
                ParsedKey::Private(k) => Some(k),
                ParsedKey::Public(_) => None,
            })
            .ok_or_else(|| KeyError::NotPrivate {
                what: config.signing_key_name.clone(),
            })?;
        let mut verifying = vec![signing.public.clone()];
        for (pem, name) in &config.verification_keys {
            for key in parse_keys(pem, name)? {
                let key = match key {
                    ParsedKey::Private(k) => k.public,
                    ParsedKey::Public(k) => k,
                };
                if !verifying.iter().any(|v| v.kid == key.kid) {
                    verifying.push(key);
                }
            }
        }
        let issuers: Vec<String> = if config.issuers.is_empty() {
            vec![DEFAULT_ISSUER.to_string()]
        } else {
            config.issuers
        };
        let api_audiences = if config.api_audiences.is_empty() {
            issuers.clone()
        } else {
            config.api_audiences
        };
        Ok(Arc::new(Self {
            issuers,
            api_audiences,
            signing,
            verifying,
            max_expiration_seconds: config.max_expiration_seconds.max(0),
        }))
    }

    /// The issuer new tokens carry.
    pub fn issuer(&self) -> &str {
        self.issuers.first().map_or(DEFAULT_ISSUER, String::as_str)
    }

    /// The server's own audiences.
    pub fn api_audiences(&self) -> &[String] {
        &self.api_audiences
    }

    /// `--service-account-max-token-expiration` in seconds (0: none).
    pub fn max_expiration_seconds(&self) -> i64 {
        self.max_expiration_seconds
    }

    /// The signing algorithm (`RS256` or `ES256`).
    pub fn algorithm(&self) -> &'static str {
        match self.signing.public.alg {
            Algorithm::RS256 => "RS256",
            _ => "ES256",
        }
    }

    fn sign<T: Serialize>(&self, claims: &T) -> Result<String, KeyError> {
        let mut header = Header::new(self.signing.public.alg);
        header.typ = None;
        header.kid = Some(self.signing.public.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.signing.key)
            .map_err(|e| KeyError::Sign(e.to_string()))
    }

    /// A bound token (kube's `serviceaccount.Claims` + `GenerateToken`):
    /// valid from `now` for `expiration_seconds`. Returns the token and its
    /// expiry (Unix seconds).
    pub fn bound_token(
        &self,
        namespace: &str,
        account: &ObjectRef,
        binding: &Binding,
        audiences: &[String],
        expiration_seconds: i64,
        now: i64,
    ) -> Result<(String, i64), KeyError> {
        let exp = now.saturating_add(expiration_seconds);
        let claims = BoundClaims {
            aud: audiences,
            exp,
            iat: now,
            iss: self.issuer(),
            jti: uuid::Uuid::new_v4().to_string(),
            kubernetes: KubeClaims {
                namespace: namespace.to_string(),
                serviceaccount: account.clone(),
                // kube names the pod or (else) the secret; the node with either.
                pod: binding.pod.clone(),
                secret: if binding.pod.is_some() {
                    None
                } else {
                    binding.secret.clone()
                },
                node: binding.node.clone(),
                warnafter: None,
            },
            nbf: now,
            sub: make_username(namespace, &account.name),
        };
        Ok((self.sign(&claims)?, exp))
    }

    /// The token of a token Secret (kube's `LegacyClaims`).
    pub fn legacy_token(
        &self,
        namespace: &str,
        account_name: &str,
        account_uid: &str,
        secret_name: &str,
    ) -> Result<String, KeyError> {
        self.sign(&LegacyClaims {
            iss: LEGACY_ISSUER.to_string(),
            namespace: namespace.to_string(),
            secret_name: secret_name.to_string(),
            service_account_name: account_name.to_string(),
            service_account_uid: account_uid.to_string(),
            sub: make_username(namespace, account_name),
        })
    }

    /// Whether `token` is a JWT signed by one of this server's keys (claims
    /// unchecked): the token controller replaces token Secret contents that
    /// are not (the opaque tokens of earlier versions).
    pub fn is_signed_by_us(&self, token: &str) -> bool {
        let Ok(header) = jsonwebtoken::decode_header(token) else {
            return false;
        };
        let mut validation = Validation::new(header.alg);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        self.keys_for(&header)
            .iter()
            .any(|k| jsonwebtoken::decode::<Value>(token, &k.key, &validation).is_ok())
    }

    fn keys_for(&self, header: &Header) -> Vec<&VerifyKey> {
        self.verifying
            .iter()
            .filter(|k| k.alg == header.alg)
            .filter(|k| header.kid.as_deref().is_none_or(|kid| kid == k.kid))
            .collect()
    }

    /// kube's `hasCorrectIssuer`: the unverified `iss` of a compact JWT.
    fn unverified_issuer(token: &str) -> Option<String> {
        if token.trim_start().starts_with('{') {
            return None;
        }
        let mut parts = token.split('.');
        let (_, Some(payload), Some(_), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        let bytes = URL_SAFE_NO_PAD.decode(payload).ok()?;
        let v: Value = serde_json::from_slice(&bytes).ok()?;
        v.get("iss").and_then(Value::as_str).map(str::to_string)
    }

    /// Authenticate a bearer token: `Ok(None)` when it is not a JWT of one
    /// of this server's issuers (another authenticator may know it), `Err`
    /// when it is one but invalid. `audiences`: the audiences the caller
    /// wants (TokenReview's `spec.audiences`), by default the server's.
    pub fn authenticate(
        &self,
        token: &str,
        audiences: Option<&[String]>,
        lookup: &dyn ObjectLookup,
        now: i64,
    ) -> Result<Option<Authenticated>, TokenError> {
        let Some(iss) = Self::unverified_issuer(token) else {
            return Ok(None);
        };
        let legacy = iss == LEGACY_ISSUER;
        if !legacy && !self.issuers.contains(&iss) {
            return Ok(None);
        }
        let Ok(header) = jsonwebtoken::decode_header(token) else {
            return Ok(None);
        };
        let keys = self.keys_for(&header);
        if keys.is_empty() {
            return Err(refuse("invalid signature, no keys found"));
        }
        // Signature first; the time claims are checked below with kube's
        // wording.
        let mut validation = Validation::new(header.alg);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        let payload = keys
            .iter()
            .find_map(|k| jsonwebtoken::decode::<Value>(token, &k.key, &validation).ok())
            .ok_or_else(|| refuse("invalid signature"))?
            .claims;
        let requested: &[String] = audiences
            .filter(|a| !a.is_empty())
            .unwrap_or(&self.api_audiences);
        if legacy {
            let claims: LegacyClaims = serde_json::from_value(payload)
                .map_err(|e| refuse(format!("invalid legacy claims: {e}")))?;
            let info = validate_legacy(&claims, token, lookup)?;
            // Legacy tokens carry no audience: they are the server's own.
            let auds = intersect(&self.api_audiences, requested);
            if auds.is_empty() && !self.api_audiences.is_empty() {
                return Err(refuse(format!(
                    "token audiences {:?} is invalid for the target audiences {requested:?}",
                    self.api_audiences
                )));
            }
            return Ok(Some(Authenticated {
                info,
                audiences: auds,
            }));
        }
        check_times(&payload, now)?;
        let claims: AnyClaims =
            serde_json::from_value(payload).map_err(|e| refuse(format!("invalid claims: {e}")))?;
        if !self.issuers.contains(&claims.iss) {
            return Err(refuse(format!("token issuer {:?} is invalid", claims.iss)));
        }
        let token_auds = claims
            .aud
            .map(Audience::into_vec)
            .filter(|a| !a.is_empty())
            .unwrap_or_else(|| self.api_audiences.clone());
        let auds = intersect(&token_auds, requested);
        if auds.is_empty() && !self.api_audiences.is_empty() {
            return Err(refuse(format!(
                "token audiences {token_auds:?} is invalid for the target audiences {requested:?}"
            )));
        }
        let private = claims
            .kubernetes
            .ok_or_else(|| refuse("service account token has no kubernetes.io claims"))?;
        let mut info = validate_bound(&private, lookup, now)?;
        if let Some(jti) = claims.jti.filter(|j| !j.is_empty()) {
            info.credential_id = format!("JTI={jti}");
        }
        Ok(Some(Authenticated {
            info,
            audiences: auds,
        }))
    }

    /// `/openid/v1/jwks`: every verification key.
    pub fn jwks(&self) -> Value {
        json!({"keys": self.verifying.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()})
    }

    /// `/.well-known/openid-configuration`, or `None` when the issuer is not
    /// an https URL (kube-apiserver then serves no discovery).
    pub fn openid_configuration(&self, jwks_uri: &str) -> Option<Value> {
        if !self.issuer().starts_with("https://") {
            return None;
        }
        let mut algs: Vec<&str> = self
            .verifying
            .iter()
            .map(|k| match k.alg {
                Algorithm::RS256 => "RS256",
                _ => "ES256",
            })
            .collect();
        algs.sort_unstable();
        algs.dedup();
        Some(json!({
            "issuer": self.issuer(),
            "jwks_uri": jwks_uri,
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": algs,
        }))
    }
}

fn intersect(a: &[String], b: &[String]) -> Vec<String> {
    a.iter().filter(|x| b.contains(x)).cloned().collect()
}

/// `exp` and `nbf` with go-jose's leeway, worded as kube's validator.
fn check_times(payload: &Value, now: i64) -> Result<(), TokenError> {
    let exp = payload.get("exp").and_then(Value::as_i64);
    let nbf = payload.get("nbf").and_then(Value::as_i64);
    if let Some(exp) = exp
        && now - LEEWAY > exp
    {
        return Err(refuse("service account token has expired"));
    }
    if exp.is_none() {
        return Err(refuse("service account token has no expiry"));
    }
    if let Some(nbf) = nbf
        && now + LEEWAY < nbf
    {
        return Err(refuse("service account token is not valid yet"));
    }
    Ok(())
}

fn uid_of(obj: &Value) -> &str {
    obj.pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The object's `deletionTimestamp` in Unix seconds, if set.
fn deleted_at(obj: &Value) -> Option<i64> {
    let ts = obj
        .pointer("/metadata/deletionTimestamp")
        .and_then(Value::as_str)?;
    Some(
        ts.parse::<jiff::Timestamp>()
            .map(|t| t.as_second())
            // Unparseable: treat as long deleted.
            .unwrap_or(i64::MIN),
    )
}

/// kube's `validator.Validate` (claims.go): the account, and the bound
/// secret, pod or node, exist with the claimed uid and were not deleted
/// more than a leeway ago.
fn validate_bound(
    claims: &KubeClaims,
    lookup: &dyn ObjectLookup,
    now: i64,
) -> Result<ServiceAccountInfo, TokenError> {
    let deleted_before = now - LEEWAY;
    let ns = claims.namespace.as_str();
    let sa = &claims.serviceaccount;
    let account = lookup
        .object("serviceaccounts", Some(ns), &sa.name)
        .ok_or_else(|| refuse(format!("serviceaccounts \"{}\" not found", sa.name)))?;
    if deleted_at(&account).is_some_and(|t| t < deleted_before) {
        return Err(refuse(format!(
            "service account {ns}/{} has been deleted",
            sa.name
        )));
    }
    if uid_of(&account) != sa.uid {
        return Err(refuse(format!(
            "service account UID ({}) does not match claim ({})",
            uid_of(&account),
            sa.uid
        )));
    }
    let check = |resource: &str, namespace: Option<&str>, r: &ObjectRef, what: &str| {
        let obj = lookup
            .object(resource, namespace, &r.name)
            .ok_or_else(|| refuse("service account token has been invalidated"))?;
        if deleted_at(&obj).is_some_and(|t| t < deleted_before) {
            return Err(refuse("service account token has been invalidated"));
        }
        if uid_of(&obj) != r.uid {
            return Err(refuse(format!(
                "{what} UID ({}) does not match service account {what} ref claim ({})",
                uid_of(&obj),
                r.uid
            )));
        }
        Ok(())
    };
    if let Some(secret) = &claims.secret {
        check("secrets", Some(ns), secret, "secret")?;
    }
    let mut info = ServiceAccountInfo {
        namespace: ns.to_string(),
        name: sa.name.clone(),
        uid: sa.uid.clone(),
        ..Default::default()
    };
    if let Some(pod) = &claims.pod {
        check("pods", Some(ns), pod, "pod")?;
        info.pod_name = pod.name.clone();
        info.pod_uid = pod.uid.clone();
    }
    if let Some(node) = &claims.node {
        // Bound to the node alone: it must still exist; with a pod the node
        // claims are informational.
        if claims.pod.is_none() {
            check("nodes", None, node, "node")?;
        }
        info.node_name = node.name.clone();
        info.node_uid = node.uid.clone();
    }
    Ok(info)
}

/// kube's `legacyValidator.Validate` with lookup: the claims are complete,
/// the Secret exists, is not being deleted and holds this very token, and
/// the account exists with the claimed uid and is not being deleted.
fn validate_legacy(
    claims: &LegacyClaims,
    token: &str,
    lookup: &dyn ObjectLookup,
) -> Result<ServiceAccountInfo, TokenError> {
    for (value, what) in [
        (&claims.sub, "sub"),
        (&claims.namespace, "namespace"),
        (&claims.secret_name, "secretName"),
        (&claims.service_account_name, "serviceAccountName"),
        (&claims.service_account_uid, "serviceAccountUID"),
    ] {
        if value.is_empty() {
            return Err(refuse(format!("{what} claim is missing")));
        }
    }
    let ns = claims.namespace.as_str();
    if claims.sub != make_username(ns, &claims.service_account_name) {
        return Err(refuse("sub claim is invalid"));
    }
    let secret = lookup
        .object("secrets", Some(ns), &claims.secret_name)
        .ok_or_else(|| refuse("Token has been invalidated"))?;
    if deleted_at(&secret).is_some() {
        return Err(refuse("Token has been invalidated"));
    }
    let stored = secret
        .pointer("/data/token")
        .and_then(Value::as_str)
        .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
        .unwrap_or_default();
    if stored != token.as_bytes() {
        return Err(refuse("Token does not match server's copy"));
    }
    let account = lookup
        .object("serviceaccounts", Some(ns), &claims.service_account_name)
        .ok_or_else(|| {
            refuse(format!(
                "serviceaccounts \"{}\" not found",
                claims.service_account_name
            ))
        })?;
    if deleted_at(&account).is_some() {
        return Err(refuse(format!(
            "ServiceAccount {ns}/{} has been deleted",
            claims.service_account_name
        )));
    }
    if uid_of(&account) != claims.service_account_uid {
        return Err(refuse(format!(
            "ServiceAccount UID ({}) does not match claim ({})",
            uid_of(&account),
            claims.service_account_uid
        )));
    }
    Ok(ServiceAccountInfo {
        namespace: ns.to_string(),
        name: claims.service_account_name.clone(),
        uid: claims.service_account_uid.clone(),
        ..Default::default()
    })
}

/// An issuer with a fixed P-256 key, for tests.
#[cfg(test)]
pub(crate) fn test_issuer() -> Arc<ServiceAccountJwt> {
    use p256::pkcs8::EncodePrivateKey as _;
    let sk = p256::SecretKey::from_slice(&[7u8; 32]).expect("scalar");
    let pem = sk
        .to_pkcs8_pem(Default::default())
        .expect("pem")
        .to_string();
    ServiceAccountJwt::new(JwtConfig {
        signing_key_pem: pem,
        signing_key_name: "test key".into(),
        ..Default::default()
    })
    .expect("issuer")
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;
    use std::collections::HashMap;

    /// Objects by (resource, namespace, name).
    #[derive(Default)]
    struct Objects(Mutex<HashMap<(String, String, String), Value>>);

    impl Objects {
        fn put(&self, resource: &str, ns: &str, name: &str, obj: Value) {
            self.0
                .lock()
                .insert((resource.into(), ns.into(), name.into()), obj);
        }
        fn remove(&self, resource: &str, ns: &str, name: &str) {
            self.0
                .lock()
                .remove(&(resource.into(), ns.into(), name.into()));
        }
    }

    impl ObjectLookup for Objects {
        fn object(&self, resource: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
            self.0
                .lock()
                .get(&(
                    resource.to_string(),
                    namespace.unwrap_or_default().to_string(),
                    name.to_string(),
                ))
                .cloned()
        }
    }

    fn meta(uid: &str) -> Value {
        json!({"metadata": {"uid": uid}})
    }

    const NOW: i64 = 1_800_000_000;

    fn ec_key() -> String {
        // A fixed P-256 key (PKCS#8), so the tests need no key generator.
        let sk = p256::SecretKey::from_slice(&[7u8; 32]).expect("scalar");
        use p256::pkcs8::EncodePrivateKey as _;
        sk.to_pkcs8_pem(Default::default())
            .expect("pem")
            .to_string()
    }

    fn issuer() -> Arc<ServiceAccountJwt> {
        ServiceAccountJwt::new(JwtConfig {
            signing_key_pem: ec_key(),
            signing_key_name: "test key".into(),
            ..Default::default()
        })
        .expect("issuer")
    }

    fn account() -> ObjectRef {
        ObjectRef {
            name: "robot".into(),
            uid: "sa-uid".into(),
        }
    }

    fn objects() -> Objects {
        let o = Objects::default();
        o.put("serviceaccounts", "ns1", "robot", meta("sa-uid"));
        o
    }

    fn payload(token: &str) -> Value {
        let part = token.split('.').nth(1).expect("payload");
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).expect("b64")).expect("json")
    }

    #[test]
    fn a_bound_token_carries_kubes_claims_and_authenticates_as_its_account() {
        let jwt = issuer();
        let auds = jwt.api_audiences().to_vec();
        let (token, exp) = jwt
            .bound_token("ns1", &account(), &Binding::default(), &auds, 3600, NOW)
            .expect("token");
        assert_eq!(exp, NOW + 3600);
        let header = jsonwebtoken::decode_header(&token).expect("header");
        assert_eq!(header.alg, Algorithm::ES256);
        assert!(header.typ.is_none());
        assert_eq!(header.kid.as_deref(), jwt.jwks()["keys"][0]["kid"].as_str());
        let p = payload(&token);
        assert_eq!(p["iss"], DEFAULT_ISSUER);
        assert_eq!(p["aud"], json!([DEFAULT_ISSUER]));
        assert_eq!(p["sub"], "system:serviceaccount:ns1:robot");
        assert_eq!(p["iat"], NOW);
        assert_eq!(p["nbf"], NOW);
        assert_eq!(
            p["kubernetes.io"],
            json!({"namespace": "ns1", "serviceaccount": {"name": "robot", "uid": "sa-uid"}})
        );
        let ok = jwt
            .authenticate(&token, None, &objects(), NOW + 10)
            .expect("valid")
            .expect("ours");
        assert_eq!(ok.info.username(), "system:serviceaccount:ns1:robot");
        assert_eq!(ok.info.uid, "sa-uid");
        assert_eq!(ok.audiences, vec![DEFAULT_ISSUER.to_string()]);
        let jti = p["jti"].as_str().expect("jti");
        assert_eq!(
            ok.info.extra()[CREDENTIAL_ID_KEY],
            vec![format!("JTI={jti}")]
        );
    }

    #[test]
    fn expired_early_foreign_and_wrong_audience_tokens_are_refused() {
        let jwt = issuer();
        let auds = jwt.api_audiences().to_vec();
        let (token, _) = jwt
            .bound_token("ns1", &account(), &Binding::default(), &auds, 600, NOW)
            .expect("token");
        let o = objects();
        assert_eq!(
            jwt.authenticate(&token, None, &o, NOW + 600 + 61),
            Err(refuse("service account token has expired"))
        );
        assert!(jwt.authenticate(&token, None, &o, NOW + 600 + 59).is_ok());
        assert_eq!(
            jwt.authenticate(&token, None, &o, NOW - 120),
            Err(refuse("service account token is not valid yet"))
        );
        let (vault, _) = jwt
            .bound_token(
                "ns1",
                &account(),
                &Binding::default(),
                &["vault".into()],
                600,
                NOW,
            )
            .expect("token");
        let err = jwt
            .authenticate(&vault, None, &o, NOW)
            .expect_err("audience");
        assert!(
            err.0.contains("is invalid for the target audiences"),
            "{err}"
        );
        // TokenReview asking for that audience accepts it.
        let ok = jwt
            .authenticate(&vault, Some(&["vault".to_string()]), &o, NOW)
            .expect("valid")
            .expect("ours");
        assert_eq!(ok.audiences, vec!["vault".to_string()]);
        // Not a JWT, or another issuer: not ours to judge.
        assert_eq!(jwt.authenticate("opaque", None, &o, NOW), Ok(None));
        let other = ServiceAccountJwt::new(JwtConfig {
            issuers: vec!["https://elsewhere".into()],
            signing_key_pem: ec_key(),
            ..Default::default()
        })
        .expect("issuer");
        let (foreign, _) = other
            .bound_token("ns1", &account(), &Binding::default(), &auds, 600, NOW)
            .expect("token");
        assert_eq!(jwt.authenticate(&foreign, None, &o, NOW), Ok(None));
        // Tampered payload: bad signature.
        let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
        let mut p = payload(&token);
        p["kubernetes.io"]["serviceaccount"]["name"] = json!("admin");
        parts[1] = b64(&serde_json::to_vec(&p).expect("json"));
        assert_eq!(
            jwt.authenticate(&parts.join("."), None, &o, NOW),
            Err(refuse("invalid signature"))
        );
    }

    #[test]
    fn a_token_is_refused_once_its_account_or_bound_object_is_gone_or_replaced() {
        let jwt = issuer();
        let auds = jwt.api_audiences().to_vec();
        let binding = Binding {
            pod: Some(ObjectRef {
                name: "p1".into(),
                uid: "pod-uid".into(),
            }),
            node: Some(ObjectRef {
                name: "n1".into(),
                uid: "node-uid".into(),
            }),
            ..Default::default()
        };
        let (token, _) = jwt
            .bound_token("ns1", &account(), &binding, &auds, 3600, NOW)
            .expect("token");
        let o = objects();
        assert!(jwt.authenticate(&token, None, &o, NOW).is_err(), "no pod");
        o.put("pods", "ns1", "p1", meta("pod-uid"));
        let ok = jwt
            .authenticate(&token, None, &o, NOW)
            .expect("valid")
            .expect("ours");
        assert_eq!(ok.info.extra()[POD_NAME_KEY], vec!["p1".to_string()]);
        assert_eq!(ok.info.extra()[NODE_UID_KEY], vec!["node-uid".to_string()]);
        o.put("pods", "ns1", "p1", meta("other-pod"));
        assert!(
            jwt.authenticate(&token, None, &o, NOW).is_err(),
            "pod replaced"
        );
        o.put("pods", "ns1", "p1", meta("pod-uid"));
        o.put("serviceaccounts", "ns1", "robot", meta("new-uid"));
        assert!(
            jwt.authenticate(&token, None, &o, NOW).is_err(),
            "account replaced"
        );
        o.remove("serviceaccounts", "ns1", "robot");
        assert!(
            jwt.authenticate(&token, None, &o, NOW).is_err(),
            "account gone"
        );
        // Being deleted: valid for the leeway, then not.
        let mut sa = meta("sa-uid");
        sa["metadata"]["deletionTimestamp"] = json!("2027-01-15T08:00:00Z");
        let deleted = "2027-01-15T08:00:00Z"
            .parse::<jiff::Timestamp>()
            .expect("ts")
            .as_second();
        o.put("serviceaccounts", "ns1", "robot", sa);
        let (late, _) = jwt
            .bound_token("ns1", &account(), &binding, &auds, 3600, deleted)
            .expect("token");
        assert!(jwt.authenticate(&late, None, &o, deleted + 30).is_ok());
        assert!(jwt.authenticate(&late, None, &o, deleted + 90).is_err());
    }

    #[test]
    fn a_legacy_token_is_valid_while_its_secret_holds_it_and_its_account_exists() {
        let jwt = issuer();
        let token = jwt
            .legacy_token("ns1", "robot", "sa-uid", "robot-token")
            .expect("token");
        let p = payload(&token);
        assert_eq!(p["iss"], LEGACY_ISSUER);
        assert_eq!(p["kubernetes.io/serviceaccount/secret.name"], "robot-token");
        assert!(p.get("exp").is_none() && p.get("aud").is_none());
        assert!(jwt.is_signed_by_us(&token));
        assert!(!jwt.is_signed_by_us("opaque-token"));
        let o = objects();
        assert!(
            jwt.authenticate(&token, None, &o, NOW).is_err(),
            "no secret"
        );
        let secret = |t: &str| json!({"metadata": {"uid": "s"}, "data": {"token": base64::engine::general_purpose::STANDARD.encode(t)}});
        o.put("secrets", "ns1", "robot-token", secret("another"));
        assert_eq!(
            jwt.authenticate(&token, None, &o, NOW),
            Err(refuse("Token does not match server's copy"))
        );
        o.put("secrets", "ns1", "robot-token", secret(&token));
        let ok = jwt
            .authenticate(&token, None, &o, NOW)
            .expect("valid")
            .expect("ours");
        assert_eq!(ok.info.username(), "system:serviceaccount:ns1:robot");
        o.put("serviceaccounts", "ns1", "robot", meta("new-uid"));
        assert!(jwt.authenticate(&token, None, &o, NOW).is_err());
    }

    #[test]
    fn rsa_keys_sign_rs256_and_extra_public_keys_verify() {
        // A 1024-bit test-only key (made with openssl genpkey).
        let rsa_pem = concat!(
            "-----BEGIN PRIVATE KEY-----\n",
            "MIICdQIBADANBgkqhkiG9w0BAQEFAASCAl8wggJbAgEAAoGBAOkIv69cl74izd/o\n",
            "BULKqYCHT1+Vk/L7m6/HZqR6GsxwltITvtlCtzTW82tVDWTBFBjzTjrX8IJ584xU\n",
            "HFUoOJjeEH9oXmy9KEG8sj0Ao/eR+llp2adogA+rTJqzdzCZ4gor6jL3bImdS6Nj\n",
            "ZFFzpvzPQeZhoQrJQMdjf5KCKXO5AgMBAAECgYAlpgAx+KebVEwmjHmtHMjdtv6f\n",
            "1q6cZwH0GCcBE6kYtmfncME4oIqwwrl48bjEOl1g2o4c+54jtkget8gMCf96hBm9\n",
            "6CHU3gnrOe2MjLrNRHGhu/4w+/KasFiZkZUk45rHpN4yozMw4Tb0Y6qeUOo+nFqp\n",
            "sLa0Cd4ekBtOcD0UwQJBAPWz43ist5fHKnHa3TmDZFhPwUqDbZN0Aq5SRgnxYVmv\n",
            "uSoCSOvhRxxhbhw5wxpkNN4om76olzi02xAFWYpwjT0CQQDyzPD/qH7knFh7FR0v\n",
            "HBP4BlKL2dQ7SG7Kafz8uiscOisat3kM2pAOzBdtS5WESOKrJPHFrlnTOf8hn/nT\n",
            "LSAtAkBITApe89OB4aTno5L83WCla7JgjpOrk7NGQAdD3bbbgQ1nAw0Z+0vFWhXg\n",
            "UE7McTftNt29GDaHBRCAglJ6neuxAkAbmNG3rVYm8+JWsxKrHRzj7wwI20x1JIl7\n",
            "NkrMCvkFb1Mg6UO4A0umcuoiwRmQfJxO6ZcVafjJumjWUJGbwCBNAkAhToqPxVAQ\n",
            "3tcwp5JROsuq8Xc3uMzgBVRs55R3eC3vth4POwm0rNBdXzmjGv3LnhiV1Hy8yEd6\n",
            "hSXE4GeVwQKf\n",
            "-----END PRIVATE KEY-----\n",
        );
        let jwt = ServiceAccountJwt::new(JwtConfig {
            signing_key_pem: rsa_pem.into(),
            signing_key_name: "rsa".into(),
            verification_keys: vec![(ec_key(), "ec".into())],
            ..Default::default()
        })
        .expect("rsa issuer");
        assert_eq!(jwt.algorithm(), "RS256");
        let keys = jwt.jwks();
        assert_eq!(keys["keys"][0]["kty"], "RSA");
        assert_eq!(keys["keys"][1]["kty"], "EC");
        // A token of the EC key verifies here too (key rotation).
        let (ec_token, _) = issuer()
            .bound_token(
                "ns1",
                &account(),
                &Binding::default(),
                &[DEFAULT_ISSUER.into()],
                600,
                NOW,
            )
            .expect("token");
        assert!(jwt.authenticate(&ec_token, None, &objects(), NOW).is_ok());
        let (token, _) = jwt
            .bound_token(
                "ns1",
                &account(),
                &Binding::default(),
                &[DEFAULT_ISSUER.into()],
                600,
                NOW,
            )
            .expect("token");
        assert_eq!(
            jsonwebtoken::decode_header(&token).expect("header").alg,
            Algorithm::RS256
        );
        assert!(jwt.authenticate(&token, None, &objects(), NOW).is_ok());
        let conf = jwt
            .openid_configuration("https://x/openid/v1/jwks")
            .expect("https issuer");
        assert_eq!(
            conf["id_token_signing_alg_values_supported"],
            json!(["ES256", "RS256"])
        );
    }

    #[test]
    fn a_public_key_cannot_sign_and_junk_is_not_a_key() {
        assert!(matches!(
            ServiceAccountJwt::new(JwtConfig {
                signing_key_pem: "not pem".into(),
                signing_key_name: "junk".into(),
                ..Default::default()
            }),
            Err(KeyError::NoKey(_) | KeyError::Pem(_))
        ));
    }
}
