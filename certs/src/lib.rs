//! # ubernetes-certs
//!
//! How the development PKI is made, and how a kubeconfig is written. It is the
//! Rust counterpart of what `kubeadm init phase certs` does for a dev cluster,
//! cut down to what one API server needs:
//!
//! - [`ensure_dev_pki`] creates (first start) or reuses (later starts) a CA, a
//!   serving certificate for `localhost`, `127.0.0.1`, `::1` and any extra SAN,
//!   and an admin client certificate (`CN=ubernetes-admin, O=system:masters`,
//!   the same groups kubeadm gives `kubernetes-admin`).
//! - [`Pki::issue_client_cert`] / [`issue_client_cert`] sign a client
//!   certificate for any user and groups (CN = user, one `O` per group, as
//!   kube-apiserver's x509 authenticator reads them).
//! - [`write_kubeconfig`] writes a kubeconfig with the credentials embedded
//!   (`*-data` fields), mode 0600.
//! - [`certificate_identity`] reads CN and O back out of a DER certificate.
//!
//! What it is not: a certificate manager for production (no rotation beyond
//! "regenerate a leaf when it is about to expire", no revocation). Generated
//! files live in the data dir and are never committed.
//!
//! Start reading at [`ensure_dev_pki`].
#![forbid(unsafe_code)]

use std::fs;
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SigningKey,
};

/// The user name of the admin client certificate.
pub const ADMIN_USER: &str = "ubernetes-admin";
/// The group of the admin client certificate (bound to cluster-admin by RBAC).
pub const ADMIN_GROUP: &str = "system:masters";
/// The SANs every dev serving certificate carries.
pub const DEFAULT_SANS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// File names inside the PKI directory.
pub const CA_CERT_FILE: &str = "ca.crt";
pub const CA_KEY_FILE: &str = "ca.key";
pub const SERVING_CERT_FILE: &str = "serving.crt";
pub const SERVING_KEY_FILE: &str = "serving.key";
pub const ADMIN_CERT_FILE: &str = "admin.crt";
pub const ADMIN_KEY_FILE: &str = "admin.key";

/// How long the CA is valid (days), as kubeadm's CA: ten years.
const CA_VALIDITY_DAYS: i64 = 3650;
/// How long a leaf certificate is valid (days), as kubeadm's leaves: one year.
const LEAF_VALIDITY_DAYS: i64 = 365;
/// A leaf that expires within this many days is regenerated on start.
const RENEW_BEFORE_DAYS: i64 = 30;

/// Everything that can go wrong making or reading the PKI.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("generating {what}: {source}")]
    Generate {
        what: &'static str,
        #[source]
        source: rcgen::Error,
    },
    #[error("{path} holds no usable PEM certificate: {reason}")]
    BadCertificate { path: PathBuf, reason: String },
    #[error("invalid subject alternative name {san:?}: {reason}")]
    BadSan { san: String, reason: String },
    #[error("invalid certificate: {0}")]
    Parse(String),
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A certificate with its private key, both PEM.
#[derive(Clone)]
pub struct CertPair {
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for CertPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertPair")
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &"[elided]")
            .finish()
    }
}

/// What [`ensure_dev_pki`] did with each file set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Made now (there was none, or it was unusable).
    Created,
    /// Found on disk and kept.
    Reused,
    /// Found on disk but remade (missing SAN, expiring, or a new CA).
    Regenerated,
}

/// The dev PKI as found or made in a directory.
#[derive(Debug, Clone)]
pub struct Pki {
    /// The directory that holds the files.
    pub dir: PathBuf,
    /// The CA that signs the serving and client certificates.
    pub ca: CertPair,
    /// The serving certificate (SANs: localhost, 127.0.0.1, ::1 and extras).
    pub serving: CertPair,
    /// The admin client certificate (`CN=ubernetes-admin, O=system:masters`).
    pub admin: CertPair,
    pub ca_outcome: Outcome,
    pub serving_outcome: Outcome,
    pub admin_outcome: Outcome,
}

impl Pki {
    /// `dir/ca.crt`.
    pub fn ca_cert_path(&self) -> PathBuf {
        self.dir.join(CA_CERT_FILE)
    }
    /// `dir/serving.crt`.
    pub fn serving_cert_path(&self) -> PathBuf {
        self.dir.join(SERVING_CERT_FILE)
    }
    /// `dir/serving.key`.
    pub fn serving_key_path(&self) -> PathBuf {
        self.dir.join(SERVING_KEY_FILE)
    }
    /// `dir/admin.crt`.
    pub fn admin_cert_path(&self) -> PathBuf {
        self.dir.join(ADMIN_CERT_FILE)
    }
    /// `dir/admin.key`.
    pub fn admin_key_path(&self) -> PathBuf {
        self.dir.join(ADMIN_KEY_FILE)
    }

    /// Sign a client certificate for `user` in `groups` with this PKI's CA.
    pub fn issue_client_cert(&self, user: &str, groups: &[String]) -> Result<CertPair> {
        issue_client_cert(&self.ca.cert_pem, &self.ca.key_pem, user, groups)
    }
}

/// Create or reuse the dev PKI in `dir` (created with mode 0700 if missing).
///
/// - CA (`ca.crt`, `ca.key`): reused when both parse; otherwise made anew,
///   which also remakes every leaf.
/// - Serving (`serving.crt`, `serving.key`): SANs `localhost`, `127.0.0.1`,
///   `::1` plus `sans` (each an IP address or a DNS name); regenerated when a
///   requested SAN is missing, when it is not signed by the CA, or when it
///   expires within 30 days.
/// - Admin (`admin.crt`, `admin.key`): `CN=ubernetes-admin, O=system:masters`,
///   regenerated on the same conditions (but SANs).
///
/// Private keys are written with mode 0600.
pub fn ensure_dev_pki(dir: &Path, sans: &[String]) -> Result<Pki> {
    create_private_dir(dir)?;
    let now = jiff::Timestamp::now();

    let (ca, ca_outcome) = match load_pair(dir, CA_CERT_FILE, CA_KEY_FILE)? {
        Some(pair) if ca_usable(&pair, now) => (pair, Outcome::Reused),
        _ => {
            let outcome = outcome_for(dir, CA_CERT_FILE, CA_KEY_FILE);
            let pair = generate_ca(now)?;
            write_pair(dir, CA_CERT_FILE, CA_KEY_FILE, &pair)?;
            (pair, outcome)
        }
    };
    let ca_fresh = ca_outcome != Outcome::Reused;
    let ca_der = first_cert_der(&ca.cert_pem).ok_or_else(|| Error::BadCertificate {
        path: dir.join(CA_CERT_FILE),
        reason: "no CERTIFICATE block".into(),
    })?;

    let mut wanted: Vec<String> = DEFAULT_SANS.iter().map(|s| s.to_string()).collect();
    for san in sans {
        let san = san.trim();
        if san.is_empty() {
            continue;
        }
        validate_san(san)?;
        if !wanted.iter().any(|w| san_eq(w, san)) {
            wanted.push(san.to_string());
        }
    }

    let serving_existing = load_pair(dir, SERVING_CERT_FILE, SERVING_KEY_FILE)?;
    let (serving, serving_outcome) = match serving_existing {
        Some(pair)
            if !ca_fresh
                && leaf_usable(&pair, &ca_der, now)
                && cert_has_sans(&pair.cert_pem, &wanted) =>
        {
            (pair, Outcome::Reused)
        }
        _ => {
            let outcome = outcome_for(dir, SERVING_CERT_FILE, SERVING_KEY_FILE);
            let pair = generate_serving(&ca, &wanted, now)?;
            write_pair(dir, SERVING_CERT_FILE, SERVING_KEY_FILE, &pair)?;
            (pair, outcome)
        }
    };

    let (admin, admin_outcome) = match load_pair(dir, ADMIN_CERT_FILE, ADMIN_KEY_FILE)? {
        Some(pair) if !ca_fresh && leaf_usable(&pair, &ca_der, now) => (pair, Outcome::Reused),
        _ => {
            let outcome = outcome_for(dir, ADMIN_CERT_FILE, ADMIN_KEY_FILE);
            let pair = issue_client_cert_at(
                &ca.cert_pem,
                &ca.key_pem,
                ADMIN_USER,
                &[ADMIN_GROUP.to_string()],
                now,
            )?;
            write_pair(dir, ADMIN_CERT_FILE, ADMIN_KEY_FILE, &pair)?;
            (pair, outcome)
        }
    };

    Ok(Pki {
        dir: dir.to_path_buf(),
        ca,
        serving,
        admin,
        ca_outcome,
        serving_outcome,
        admin_outcome,
    })
}

/// Sign a client certificate (`CN=user`, one `O` per group, EKU clientAuth,
/// valid one year) with the CA given as PEM certificate and PEM key.
pub fn issue_client_cert(
    ca_cert_pem: &str,
    ca_key_pem: &str,
    user: &str,
    groups: &[String],
) -> Result<CertPair> {
    issue_client_cert_at(
        ca_cert_pem,
        ca_key_pem,
        user,
        groups,
        jiff::Timestamp::now(),
    )
}

/// Sign a PKCS#10 certificate signing request (PEM `CERTIFICATE REQUEST`)
/// with the CA, as kube-controller-manager's CSR signer does
/// (`pkg/controller/certificates/authority`, `PermissiveSigningPolicy`): the
/// request's signature is checked, its subject (every RDN, byte for byte)
/// and subject alternative names are kept, the key usages are the CSR
/// object's `spec.usages` (kube's names: `digital signature`, `client
/// auth`…; those of the PKCS#10 request are ignored), the serial is 128
/// random bits, the certificate is no CA, and it is valid from `not_before`
/// to `not_after`, cut at the CA's own expiry. Returns the PEM certificate.
pub fn sign_certificate_request(
    ca: &CertPair,
    csr_pem: &str,
    usages: &[String],
    not_before: jiff::Timestamp,
    not_after: jiff::Timestamp,
) -> Result<String> {
    let der = request_der(csr_pem)?;
    let mut request = rcgen::CertificateSigningRequestParams::from_der(&der.clone().into())
        .map_err(|source| Error::Generate {
            what: "certificate request (parsing and checking its signature)",
            source,
        })?;
    let subject = {
        use x509_parser::prelude::FromDer;
        let (_, parsed) =
            x509_parser::certification_request::X509CertificationRequest::from_der(&der)
                .map_err(|e| Error::Parse(e.to_string()))?;
        parsed.certification_request_info.subject.as_raw().to_vec()
    };
    let issuer = ca_issuer(&ca.cert_pem, &ca.key_pem)?;
    let ca_not_after = first_cert_der(&ca.cert_pem)
        .and_then(|d| {
            x509_parser::parse_x509_certificate(&d)
                .ok()
                .map(|(_, c)| c.validity().not_after.timestamp())
        })
        .ok_or_else(|| Error::Parse("the CA certificate does not parse".into()))?;
    let not_after = not_after
        .min(jiff::Timestamp::from_second(ca_not_after).map_err(|e| Error::Parse(e.to_string()))?);

    let params = &mut request.params;
    params.key_usages.clear();
    params.extended_key_usages.clear();
    for usage in usages {
        match usage.as_str() {
            "signing" | "digital signature" => {
                params.key_usages.push(KeyUsagePurpose::DigitalSignature)
            }
            "content commitment" => params.key_usages.push(KeyUsagePurpose::ContentCommitment),
            "key encipherment" => params.key_usages.push(KeyUsagePurpose::KeyEncipherment),
            "key agreement" => params.key_usages.push(KeyUsagePurpose::KeyAgreement),
            "data encipherment" => params.key_usages.push(KeyUsagePurpose::DataEncipherment),
            "cert sign" => params.key_usages.push(KeyUsagePurpose::KeyCertSign),
            "crl sign" => params.key_usages.push(KeyUsagePurpose::CrlSign),
            "encipher only" => params.key_usages.push(KeyUsagePurpose::EncipherOnly),
            "decipher only" => params.key_usages.push(KeyUsagePurpose::DecipherOnly),
            "any" => params
                .extended_key_usages
                .push(ExtendedKeyUsagePurpose::Any),
            "server auth" => params
                .extended_key_usages
                .push(ExtendedKeyUsagePurpose::ServerAuth),
            "client auth" => params
                .extended_key_usages
                .push(ExtendedKeyUsagePurpose::ClientAuth),
            "code signing" => params
                .extended_key_usages
                .push(ExtendedKeyUsagePurpose::CodeSigning),
            "email protection" | "s/mime" => params
                .extended_key_usages
                .push(ExtendedKeyUsagePurpose::EmailProtection),
            "timestamping" => params
                .extended_key_usages
                .push(ExtendedKeyUsagePurpose::TimeStamping),
            "ocsp signing" => params
                .extended_key_usages
                .push(ExtendedKeyUsagePurpose::OcspSigning),
            other => return Err(Error::Parse(format!("unsupported key usage: {other}"))),
        }
    }
    params.is_ca = IsCa::ExplicitNoCa;
    params.use_authority_key_identifier_extension = true;
    let mut serial = [0u8; 16];
    rand::fill(&mut serial);
    serial[0] &= 0x7f; // a positive INTEGER
    params.serial_number = Some(rcgen::SerialNumber::from_slice(&serial));
    let to_time = |t: jiff::Timestamp| {
        time::OffsetDateTime::from_unix_timestamp(t.as_second())
            .map_err(|e| Error::Parse(e.to_string()))
    };
    params.not_before = to_time(not_before)?;
    params.not_after = to_time(not_after)?;
    let cert = request
        .signed_by(&issuer)
        .map_err(|source| Error::Generate {
            what: "certificate for the request",
            source,
        })?;
    let der = with_subject(cert.der(), &subject, issuer.key())?;
    Ok(pem_encode("CERTIFICATE", &der))
}

/// The DER of the first `CERTIFICATE REQUEST` block of a PEM text.
fn request_der(csr_pem: &str) -> Result<Vec<u8>> {
    let mut reader = csr_pem.as_bytes();
    loop {
        match rustls_pemfile::read_one(&mut reader) {
            Ok(Some(rustls_pemfile::Item::Csr(der))) => return Ok(der.to_vec()),
            Ok(Some(_)) => continue,
            Ok(None) => {
                return Err(Error::Parse(
                    "PEM block type must be CERTIFICATE REQUEST".into(),
                ));
            }
            Err(e) => return Err(Error::Parse(format!("reading the request's PEM: {e:?}"))),
        }
    }
}

/// kube's check of a CertificateSigningRequest's `spec.request`
/// (`certificates.ParseCSR` and `CheckSignature`): the first PEM block is a
/// `CERTIFICATE REQUEST` that parses and whose signature verifies. The
/// error is the reason, as kube's validation puts it after the value.
pub fn check_certificate_request(pem_data: &[u8]) -> std::result::Result<(), String> {
    let block = pem::parse_many(pem_data)
        .ok()
        .and_then(|blocks| blocks.into_iter().next())
        .filter(|b| b.tag() == "CERTIFICATE REQUEST")
        .ok_or_else(|| "PEM block type must be CERTIFICATE REQUEST".to_string())?;
    use x509_parser::oid_registry::{
        OID_KEY_TYPE_EC_PUBLIC_KEY, OID_PKCS1_RSAENCRYPTION, OID_SIG_ED25519,
    };
    use x509_parser::prelude::FromDer;
    let (_, request) =
        x509_parser::certification_request::X509CertificationRequest::from_der(block.contents())
            .map_err(|e| format!("x509: malformed certificate request: {e}"))?;
    request.verify_signature().map_err(|_| {
        // Go's words for a signature that does not verify, by key type.
        let key = &request
            .certification_request_info
            .subject_pki
            .algorithm
            .algorithm;
        if *key == OID_KEY_TYPE_EC_PUBLIC_KEY {
            "x509: ECDSA verification failure".to_string()
        } else if *key == OID_PKCS1_RSAENCRYPTION {
            "crypto/rsa: verification error".to_string()
        } else if *key == OID_SIG_ED25519 {
            "x509: Ed25519 verification failure".to_string()
        } else {
            "x509: signature verification failure".to_string()
        }
    })
}

/// kube's check of a CertificateSigningRequest's `status.certificate`
/// (`validateCertificate`): empty, or only `CERTIFICATE` PEM blocks without
/// headers, each holding a certificate that parses.
pub fn check_certificate_chain(pem_data: &[u8]) -> std::result::Result<(), String> {
    if pem_data.is_empty() {
        return Ok(());
    }
    let blocks = pem::parse_many(pem_data).map_err(|e| e.to_string())?;
    if blocks.is_empty() {
        return Err("must contain at least one CERTIFICATE PEM block".into());
    }
    for block in &blocks {
        if block.tag() != "CERTIFICATE" {
            return Err(format!(
                "only CERTIFICATE PEM blocks are allowed, found {:?}",
                block.tag()
            ));
        }
        if block.headers().iter().next().is_some() {
            return Err("no PEM block headers are permitted".into());
        }
        x509_parser::parse_x509_certificate(block.contents())
            .map_err(|e| format!("x509: malformed certificate: {e}"))?;
    }
    Ok(())
}

/// The organizations (every O) of a PEM certificate request's subject: the
/// groups a client certificate signed from it would carry.
pub fn certificate_request_organizations(csr_pem: &str) -> Result<Vec<String>> {
    use x509_parser::prelude::FromDer;
    let der = request_der(csr_pem)?;
    let (_, parsed) = x509_parser::certification_request::X509CertificationRequest::from_der(&der)
        .map_err(|e| Error::Parse(e.to_string()))?;
    Ok(parsed
        .certification_request_info
        .subject
        .iter_organization()
        .filter_map(|a| a.as_str().ok())
        .map(str::to_string)
        .collect())
}

/// The user (CN) and groups (every O) of a DER certificate, as
/// kube-apiserver's `CommonNameUserConversion` reads them.
pub fn certificate_identity(der: &[u8]) -> Result<(String, Vec<String>)> {
    let (_, cert) =
        x509_parser::parse_x509_certificate(der).map_err(|e| Error::Parse(e.to_string()))?;
    let subject = cert.subject();
    let cn = subject
        .iter_common_name()
        .next()
        .and_then(|a| a.as_str().ok())
        .unwrap_or_default()
        .to_string();
    let orgs = subject
        .iter_organization()
        .filter_map(|a| a.as_str().ok())
        .map(str::to_string)
        .collect();
    Ok((cn, orgs))
}

/// The DER certificates in a PEM text, in order.
pub fn pem_certs_der(pem: &str) -> Vec<Vec<u8>> {
    let mut reader = pem.as_bytes();
    rustls_pemfile::certs(&mut reader)
        .filter_map(|c| c.ok())
        .map(|c| c.as_ref().to_vec())
        .collect()
}

/// The kubeconfig text [`write_kubeconfig`] writes: one cluster, one user and
/// one context, all named `context_name`, which is also the current context.
pub fn kubeconfig_yaml(
    server_url: &str,
    ca_pem: &str,
    client_cert_pem: &str,
    client_key_pem: &str,
    context_name: &str,
) -> String {
    kubeconfig_text(
        server_url,
        ca_pem,
        Some((client_cert_pem, client_key_pem)),
        context_name,
    )
}

/// [`kubeconfig_yaml`], with the client certificate when one is given and
/// an empty user (`user: {}`) otherwise.
fn kubeconfig_text(
    server_url: &str,
    ca_pem: &str,
    client: Option<(&str, &str)>,
    context_name: &str,
) -> String {
    let name = yaml_quote(context_name);
    let user = match client {
        Some((cert, key)) => format!(
            "user:\n    \
               client-certificate-data: {cert}\n    \
               client-key-data: {key}\n",
            cert = BASE64.encode(cert),
            key = BASE64.encode(key),
        ),
        None => "user: {}\n".to_string(),
    };
    format!(
        "apiVersion: v1\n\
         kind: Config\n\
         clusters:\n\
         - name: {name}\n  \
           cluster:\n    \
             server: {server}\n    \
             certificate-authority-data: {ca}\n\
         users:\n\
         - name: {name}\n  \
           {user}\
         contexts:\n\
         - name: {name}\n  \
           context:\n    \
             cluster: {name}\n    \
             user: {name}\n\
         current-context: {name}\n\
         preferences: {{}}\n",
        server = yaml_quote(server_url),
        ca = BASE64.encode(ca_pem),
    )
}

/// Write a kubeconfig (see [`kubeconfig_yaml`]) to `path`, mode 0600,
/// replacing any previous file atomically.
pub fn write_kubeconfig(
    path: &Path,
    server_url: &str,
    ca_pem: &str,
    client_cert_pem: &str,
    client_key_pem: &str,
    context_name: &str,
) -> Result<()> {
    let text = kubeconfig_yaml(
        server_url,
        ca_pem,
        client_cert_pem,
        client_key_pem,
        context_name,
    );
    write_kubeconfig_text(path, &text)
}

/// Write a kubeconfig like [`write_kubeconfig`] but with an empty user
/// (`user: {}`): the cluster and its CA only, for a server that would not
/// trust the dev admin certificate. The user adds their own credentials.
pub fn write_kubeconfig_without_user(
    path: &Path,
    server_url: &str,
    ca_pem: &str,
    context_name: &str,
) -> Result<()> {
    let text = kubeconfig_text(server_url, ca_pem, None, context_name);
    write_kubeconfig_text(path, &text)
}

/// Write `text` to `path` (mode 0600, atomically), creating its directory.
fn write_kubeconfig_text(path: &Path, text: &str) -> Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|source| Error::Io {
            action: "creating",
            path: parent.to_path_buf(),
            source,
        })?;
    }
    write_private(path, text.as_bytes())
}

// ---------------------------------------------------------------------------
// generation

fn generate_ca(now: jiff::Timestamp) -> Result<CertPair> {
    let key = KeyPair::generate().map_err(|source| Error::Generate {
        what: "CA key",
        source,
    })?;
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, "ubernetes-ca");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    set_validity(&mut params, now, CA_VALIDITY_DAYS);
    let cert = params.self_signed(&key).map_err(|source| Error::Generate {
        what: "CA certificate",
        source,
    })?;
    Ok(CertPair {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

fn ca_issuer(ca_cert_pem: &str, ca_key_pem: &str) -> Result<Issuer<'static, KeyPair>> {
    let key = KeyPair::from_pem(ca_key_pem).map_err(|source| Error::Generate {
        what: "CA key (parsing)",
        source,
    })?;
    Issuer::from_ca_cert_pem(ca_cert_pem, key).map_err(|source| Error::Generate {
        what: "CA issuer (parsing)",
        source,
    })
}

fn generate_serving(ca: &CertPair, sans: &[String], now: jiff::Timestamp) -> Result<CertPair> {
    let issuer = ca_issuer(&ca.cert_pem, &ca.key_pem)?;
    let key = KeyPair::generate().map_err(|source| Error::Generate {
        what: "serving key",
        source,
    })?;
    let mut params = CertificateParams::new(sans.to_vec()).map_err(|source| Error::Generate {
        what: "serving certificate SANs",
        source,
    })?;
    params.distinguished_name = DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, "ubernetes-apiserver");
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    set_validity(&mut params, now, LEAF_VALIDITY_DAYS);
    let cert = params
        .signed_by(&key, &issuer)
        .map_err(|source| Error::Generate {
            what: "serving certificate",
            source,
        })?;
    Ok(CertPair {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

fn issue_client_cert_at(
    ca_cert_pem: &str,
    ca_key_pem: &str,
    user: &str,
    groups: &[String],
    now: jiff::Timestamp,
) -> Result<CertPair> {
    let issuer = ca_issuer(ca_cert_pem, ca_key_pem)?;
    let key = KeyPair::generate().map_err(|source| Error::Generate {
        what: "client key",
        source,
    })?;
    let mut params = CertificateParams::default();
    // rcgen keeps one value per attribute type, but a Kubernetes client
    // certificate carries one O per group: the subject is written below.
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, user);
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params.use_authority_key_identifier_extension = true;
    set_validity(&mut params, now, LEAF_VALIDITY_DAYS);
    let cert = params
        .signed_by(&key, &issuer)
        .map_err(|source| Error::Generate {
            what: "client certificate",
            source,
        })?;
    let der = with_subject(cert.der(), &subject_der(user, groups), issuer.key())?;
    Ok(CertPair {
        cert_pem: pem_encode("CERTIFICATE", &der),
        key_pem: key.serialize_pem(),
    })
}

fn set_validity(params: &mut CertificateParams, now: jiff::Timestamp, days: i64) {
    // A day of slack before now absorbs clock skew between machines.
    let start = now.to_zoned(jiff::tz::TimeZone::UTC).date();
    let start = start.yesterday().unwrap_or(start);
    let end = start
        .checked_add(jiff::Span::new().days(days + 1))
        .unwrap_or(start);
    params.not_before = rcgen::date_time_ymd(
        i32::from(start.year()),
        start.month().unsigned_abs(),
        start.day().unsigned_abs(),
    );
    params.not_after = rcgen::date_time_ymd(
        i32::from(end.year()),
        end.month().unsigned_abs(),
        end.day().unsigned_abs(),
    );
}

// ---------------------------------------------------------------------------
// a minimal DER writer/reader, only to put a multi-O subject into a certificate

fn der_len(len: usize, out: &mut Vec<u8>) {
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
}

fn der_tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(content.len() + 6);
    out.push(tag);
    der_len(content.len(), &mut out);
    out.extend_from_slice(content);
    out
}

/// `SEQUENCE { SET { SEQUENCE { OID 2.5.4.10, UTF8String group } } … , SET { … CN } }`,
/// the order Go's `pkix.Name` writes (O before CN).
fn subject_der(user: &str, groups: &[String]) -> Vec<u8> {
    const OID_CN: [u8; 5] = [0x06, 0x03, 0x55, 0x04, 0x03];
    const OID_O: [u8; 5] = [0x06, 0x03, 0x55, 0x04, 0x0a];
    let rdn = |oid: &[u8], value: &str| {
        let mut atv = oid.to_vec();
        atv.extend(der_tlv(0x0c, value.as_bytes()));
        der_tlv(0x31, &der_tlv(0x30, &atv))
    };
    let mut rdns = Vec::new();
    for group in groups {
        rdns.extend(rdn(&OID_O, group));
    }
    rdns.extend(rdn(&OID_CN, user));
    der_tlv(0x30, &rdns)
}

/// Read one TLV at the start of `input`: (tag, header length, total length).
fn der_read(input: &[u8]) -> Result<(u8, usize, usize)> {
    let bad = || Error::Parse("truncated DER".into());
    let tag = *input.first().ok_or_else(bad)?;
    let first = *input.get(1).ok_or_else(bad)?;
    let (header, len) = if first < 0x80 {
        (2, usize::from(first))
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return Err(Error::Parse("unsupported DER length".into()));
        }
        let bytes = input.get(2..2 + n).ok_or_else(bad)?;
        let len = bytes
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (2 + n, len)
    };
    if input.len() < header + len {
        return Err(bad());
    }
    Ok((tag, header, header + len))
}

/// Replace the subject of a signed certificate and sign it again.
fn with_subject(cert_der: &[u8], subject: &[u8], signer: &KeyPair) -> Result<Vec<u8>> {
    let (_, outer_header, _) = der_read(cert_der)?;
    let body = &cert_der[outer_header..];
    let (_, tbs_header, tbs_len) = der_read(body)?;
    let tbs = &body[..tbs_len];
    let rest = &body[tbs_len..];
    let (_, _, sig_alg_len) = der_read(rest)?;
    let sig_alg = &rest[..sig_alg_len];

    // TBSCertificate: [0] version, serial, signature, issuer, validity, subject, …
    let fields = &tbs[tbs_header..];
    let mut pos = 0;
    let mut index = 0;
    let (subject_start, subject_end) = loop {
        let (tag, _, len) = der_read(&fields[pos..])?;
        if index == 0 && tag != 0xa0 {
            index = 1; // no explicit version: v1 certificate
        }
        if index == 5 {
            break (pos, pos + len);
        }
        pos += len;
        index += 1;
    };
    let mut new_fields = fields[..subject_start].to_vec();
    new_fields.extend_from_slice(subject);
    new_fields.extend_from_slice(&fields[subject_end..]);
    let new_tbs = der_tlv(0x30, &new_fields);
    let signature = signer.sign(&new_tbs).map_err(|source| Error::Generate {
        what: "certificate signature",
        source,
    })?;
    let mut bits = vec![0u8];
    bits.extend(signature);
    let mut cert = new_tbs;
    cert.extend_from_slice(sig_alg);
    cert.extend(der_tlv(0x03, &bits));
    Ok(der_tlv(0x30, &cert))
}

fn pem_encode(label: &str, der: &[u8]) -> String {
    let b64 = BASE64.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

// ---------------------------------------------------------------------------
// checks on existing files

fn first_cert_der(pem: &str) -> Option<Vec<u8>> {
    pem_certs_der(pem).into_iter().next()
}

fn expires_soon(
    cert: &x509_parser::certificate::X509Certificate<'_>,
    now: jiff::Timestamp,
) -> bool {
    let not_after = cert.validity().not_after.timestamp();
    not_after - now.as_second() < RENEW_BEFORE_DAYS * 86_400
}

fn ca_usable(pair: &CertPair, now: jiff::Timestamp) -> bool {
    let Some(der) = first_cert_der(&pair.cert_pem) else {
        return false;
    };
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(&der) else {
        return false;
    };
    cert.is_ca() && !expires_soon(&cert, now) && KeyPair::from_pem(&pair.key_pem).is_ok()
}

fn leaf_usable(pair: &CertPair, ca_der: &[u8], now: jiff::Timestamp) -> bool {
    let Some(der) = first_cert_der(&pair.cert_pem) else {
        return false;
    };
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(&der) else {
        return false;
    };
    let Ok((_, ca)) = x509_parser::parse_x509_certificate(ca_der) else {
        return false;
    };
    if expires_soon(&cert, now) || cert.issuer() != ca.subject() {
        return false;
    }
    // The key on disk must belong to the certificate.
    match KeyPair::from_pem(&pair.key_pem) {
        Ok(key) => key.public_key_raw() == cert.public_key().subject_public_key.data.as_ref(),
        Err(_) => false,
    }
}

/// The DNS and IP SANs of a PEM certificate (IPs in their usual text form).
pub fn cert_sans(cert_pem: &str) -> Vec<String> {
    let Some(der) = first_cert_der(cert_pem) else {
        return Vec::new();
    };
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(&der) else {
        return Vec::new();
    };
    let Ok(Some(ext)) = cert.subject_alternative_name() else {
        return Vec::new();
    };
    let mut present: Vec<String> = Vec::new();
    for name in &ext.value.general_names {
        match name {
            x509_parser::extensions::GeneralName::DNSName(d) => present.push(d.to_string()),
            x509_parser::extensions::GeneralName::IPAddress(bytes) => {
                let ip = match bytes.len() {
                    4 => <[u8; 4]>::try_from(*bytes).ok().map(IpAddr::from),
                    16 => <[u8; 16]>::try_from(*bytes).ok().map(IpAddr::from),
                    _ => None,
                };
                if let Some(ip) = ip {
                    present.push(ip.to_string());
                }
            }
            _ => {}
        }
    }
    present
}

fn cert_has_sans(cert_pem: &str, wanted: &[String]) -> bool {
    let present = cert_sans(cert_pem);
    wanted.iter().all(|w| present.iter().any(|p| san_eq(p, w)))
}

/// Equal as SANs: IPs compared as addresses, DNS names case-insensitively.
fn san_eq(a: &str, b: &str) -> bool {
    match (a.parse::<IpAddr>(), b.parse::<IpAddr>()) {
        (Ok(x), Ok(y)) => x == y,
        (Err(_), Err(_)) => a.eq_ignore_ascii_case(b),
        _ => false,
    }
}

fn validate_san(san: &str) -> Result<()> {
    if san.parse::<IpAddr>().is_ok() {
        return Ok(());
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    let name = san.strip_prefix("*.").unwrap_or(san);
    if name.len() <= 253 && name.split('.').all(label_ok) {
        Ok(())
    } else {
        Err(Error::BadSan {
            san: san.to_string(),
            reason: "must be an IP address or a DNS name".into(),
        })
    }
}

fn yaml_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

// ---------------------------------------------------------------------------
// service-account signing key

/// The service-account signing key in the PKI directory (kubeadm's `sa.key`).
pub const SERVICE_ACCOUNT_KEY_FILE: &str = "sa.key";
/// Its public half (kubeadm's `sa.pub`), for verifiers outside this server.
pub const SERVICE_ACCOUNT_PUB_FILE: &str = "sa.pub";

/// The key that signs service-account tokens: `dir/sa.key` as found, or a
/// new ECDSA P-256 key (PKCS#8 PEM, mode 0600) with its public key in
/// `dir/sa.pub` when there is none. Returns the private key PEM and whether
/// it was made now. Kept across restarts, so tokens stay valid; ECDSA because
/// it is made in microseconds (kube-apiserver signs ES256 with such a key as
/// it signs RS256 with kubeadm's RSA one).
pub fn ensure_service_account_key(dir: &Path) -> Result<(String, Outcome)> {
    create_private_dir(dir)?;
    let path = dir.join(SERVICE_ACCOUNT_KEY_FILE);
    if let Some(pem) = read_optional(&path)?
        && !pem.trim().is_empty()
    {
        return Ok((pem, Outcome::Reused));
    }
    let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(|source| {
        Error::Generate {
            what: "the service-account signing key",
            source,
        }
    })?;
    let pem = key.serialize_pem();
    write_private(&path, pem.as_bytes())?;
    write_file(
        &dir.join(SERVICE_ACCOUNT_PUB_FILE),
        key.public_key_pem().as_bytes(),
        0o644,
    )?;
    Ok((pem, Outcome::Created))
}

// ---------------------------------------------------------------------------
// encryption at rest of Secrets, by default

/// The `EncryptionConfiguration` made in the PKI directory when the server
/// is given no `--encryption-provider-config` (and encrypting Secrets by
/// default is not turned off): its key sits beside the CA, apart from the
/// store, and travels with the PKI to every replica.
pub const ENCRYPTION_CONFIG_FILE: &str = "encryption-config.yaml";

/// The default encryption configuration as found or made by
/// [`ensure_encryption_config`].
#[derive(Debug, Clone)]
pub struct EncryptionConfigFile {
    /// `dir/encryption-config.yaml`.
    pub path: PathBuf,
    /// Made now, or found (never regenerated: a new key would make every
    /// Secret already encrypted unreadable).
    pub outcome: Outcome,
    /// The mode the file had when it was found readable by group or others
    /// and tightened to 0600 (for the caller to log).
    pub loosened: Option<u32>,
}

/// The configuration that encrypts Secrets at rest when none is given:
/// `dir/encryption-config.yaml` as found, or, on first start, a new
/// `apiserver.config.k8s.io/v1` `EncryptionConfiguration` (mode 0600, `dir`
/// 0700) with one rule for `secrets`: a `secretbox` provider holding a new
/// random 32-byte key, then `identity` so Secrets written before (plaintext)
/// still read, and are encrypted on their next write. The file is created
/// without ever replacing one (a link of a complete temporary file), so two
/// replicas starting together on one PKI directory end with the same key.
pub fn ensure_encryption_config(dir: &Path) -> Result<EncryptionConfigFile> {
    create_private_dir(dir)?;
    let path = dir.join(ENCRYPTION_CONFIG_FILE);
    if path.exists() {
        let loosened = tighten(&path, 0o600)?;
        return Ok(EncryptionConfigFile {
            path,
            outcome: Outcome::Reused,
            loosened,
        });
    }
    let mut key = [0u8; 32];
    rand::fill(&mut key);
    let mut tag = [0u8; 4];
    rand::fill(&mut tag);
    let today = jiff::Timestamp::now().strftime("%Y%m%d");
    let tag: String = tag.iter().map(|b| format!("{b:02x}")).collect();
    let text = default_encryption_config(&format!("key-{today}-{tag}"), &BASE64.encode(key));
    let mut tmp_name = std::ffi::OsString::from(ENCRYPTION_CONFIG_FILE);
    tmp_name.push(format!(".new{}", std::process::id()));
    let tmp = dir.join(tmp_name);
    write_private(&tmp, text.as_bytes())?;
    let linked = fs::hard_link(&tmp, &path);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(EncryptionConfigFile {
            path,
            outcome: Outcome::Created,
            loosened: None,
        }),
        // Another replica made it a moment ago: its key is the one.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(EncryptionConfigFile {
            path,
            outcome: Outcome::Reused,
            loosened: None,
        }),
        Err(source) => Err(Error::Io {
            action: "creating",
            path,
            source,
        }),
    }
}

/// The text of the default configuration with one key (`secret` base64).
fn default_encryption_config(name: &str, secret: &str) -> String {
    format!(
        r#"# Made by ubernetes on its first start, as no --encryption-provider-config was
# given: Secrets are encrypted at rest with this key. Keep this file with the
# PKI (every replica needs it; a store or etcd backup is unreadable without
# it), never beside the store's backups. Rotation: docs/operations.md,
# "Encryption at rest".
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources:
      - secrets
    providers:
      - secretbox:
          keys:
            - name: {name}
              secret: {secret}
      - identity: {{}}
"#
    )
}

// ---------------------------------------------------------------------------
// files

fn create_private_dir(dir: &Path) -> Result<()> {
    ensure_private_dir(dir).map(|_| ())
}

/// Create `dir` (and its missing parents) with mode 0700, or set an
/// existing `dir` that group or others may access to 0700. Returns the
/// mode it had when it was tightened (for the caller to log), else `None`.
pub fn ensure_private_dir(dir: &Path) -> Result<Option<u32>> {
    if dir.is_dir() {
        return tighten(dir, 0o700);
    }
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|source| Error::Io {
        action: "creating",
        path: dir.to_path_buf(),
        source,
    })?;
    Ok(None)
}

/// Set `path` (a file or directory) that group or others may access to
/// `private` (0600 or 0700). Returns the mode it had when it was tightened,
/// else `None`.
fn tighten(path: &Path, private: u32) -> Result<Option<u32>> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let io = |action| {
            move |source| Error::Io {
                action,
                path: path.to_path_buf(),
                source,
            }
        };
        let mode = fs::metadata(path)
            .map_err(io("reading"))?
            .permissions()
            .mode()
            & 0o777;
        if mode & 0o077 != 0 {
            fs::set_permissions(path, fs::Permissions::from_mode(private))
                .map_err(io("setting permissions on"))?;
            return Ok(Some(mode));
        }
    }
    #[cfg(not(unix))]
    let _ = (path, private);
    Ok(None)
}

/// `Regenerated` when either file of a pair is on disk, else `Created`.
fn outcome_for(dir: &Path, cert: &str, key: &str) -> Outcome {
    if dir.join(cert).exists() || dir.join(key).exists() {
        Outcome::Regenerated
    } else {
        Outcome::Created
    }
}

fn read_optional(path: &Path) -> Result<Option<String>> {
    match fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::Io {
            action: "reading",
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn load_pair(dir: &Path, cert: &str, key: &str) -> Result<Option<CertPair>> {
    let cert_pem = read_optional(&dir.join(cert))?;
    let key_pem = read_optional(&dir.join(key))?;
    Ok(match (cert_pem, key_pem) {
        (Some(cert_pem), Some(key_pem)) => Some(CertPair { cert_pem, key_pem }),
        _ => None,
    })
}

fn write_pair(dir: &Path, cert: &str, key: &str, pair: &CertPair) -> Result<()> {
    write_private(&dir.join(key), pair.key_pem.as_bytes())?;
    write_file(&dir.join(cert), pair.cert_pem.as_bytes(), 0o644)
}

/// Write `data` to `path` with mode 0600 (atomically: temp file + rename).
fn write_private(path: &Path, data: &[u8]) -> Result<()> {
    write_file(path, data, 0o600)
}

fn write_file(path: &Path, data: &[u8], mode: u32) -> Result<()> {
    let io = |action: &'static str, p: &Path| {
        let p = p.to_path_buf();
        move |source| Error::Io {
            action,
            path: p,
            source,
        }
    };
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(format!(".tmp{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(&tmp).map_err(io("creating", &tmp))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&tmp, fs::Permissions::from_mode(mode))
            .map_err(io("setting permissions on", &tmp))?;
    }
    file.write_all(data).map_err(io("writing", &tmp))?;
    file.sync_all().map_err(io("syncing", &tmp))?;
    drop(file);
    fs::rename(&tmp, path).map_err(io("renaming into", path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(pem: &str) -> (String, Vec<String>) {
        let der = first_cert_der(pem).expect("a certificate");
        certificate_identity(&der).expect("parses")
    }

    fn sans_of(pem: &str) -> Vec<String> {
        cert_sans(pem)
    }

    fn csr_pem(cn: &str, org: &str) -> String {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::OrganizationName, org);
        params.distinguished_name.push(DnType::CommonName, cn);
        params
            .serialize_request(&key)
            .expect("csr")
            .pem()
            .expect("pem")
    }

    #[test]
    fn requests_and_certificates_are_checked_as_kube_checks_a_csr() {
        let good = csr_pem("alice", "devs");
        assert_eq!(check_certificate_request(good.as_bytes()), Ok(()));
        // A tampered signature (its last byte) does not verify.
        let block = pem::parse(&good).expect("pem");
        let mut der = block.contents().to_vec();
        if let Some(last) = der.last_mut() {
            *last ^= 0x55;
        }
        let tampered = pem::encode(&pem::Pem::new("CERTIFICATE REQUEST", der));
        // rcgen's keys are ECDSA P-256; Go's words (kube-apiserver 1.36.2).
        assert_eq!(
            check_certificate_request(tampered.as_bytes()),
            Err("x509: ECDSA verification failure".into())
        );
        let type_err = "PEM block type must be CERTIFICATE REQUEST";
        for bad in ["", "not pem at all"] {
            assert_eq!(
                check_certificate_request(bad.as_bytes()),
                Err(type_err.into())
            );
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let pki = ensure_dev_pki(dir.path(), &[]).expect("pki");
        let ca = std::fs::read_to_string(pki.ca_cert_path()).expect("ca");
        // A certificate is not a request (kube reads only the first block).
        assert_eq!(
            check_certificate_request(ca.as_bytes()),
            Err(type_err.into())
        );

        assert_eq!(check_certificate_chain(b""), Ok(()));
        assert_eq!(check_certificate_chain(ca.as_bytes()), Ok(()));
        assert_eq!(
            check_certificate_chain(format!("{ca}{ca}").as_bytes()),
            Ok(())
        );
        assert_eq!(
            check_certificate_chain(b"junk"),
            Err("must contain at least one CERTIFICATE PEM block".into())
        );
        assert_eq!(
            check_certificate_chain(good.as_bytes()),
            Err("only CERTIFICATE PEM blocks are allowed, found \"CERTIFICATE REQUEST\"".into())
        );
        let garbage = pem::encode(&pem::Pem::new("CERTIFICATE", vec![1, 2, 3]));
        let err = check_certificate_chain(garbage.as_bytes()).expect_err("garbage");
        assert!(err.starts_with("x509: malformed certificate"), "{err}");
    }

    #[test]
    fn a_signed_request_keeps_its_subject_and_gets_the_asked_usages_and_validity() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pki = ensure_dev_pki(dir.path(), &[]).expect("pki");
        let now = jiff::Timestamp::now();
        let start = now - jiff::SignedDuration::from_secs(300);
        let end = now + jiff::SignedDuration::from_secs(3600);
        let pem = sign_certificate_request(
            &pki.ca,
            &csr_pem("alice", "devs"),
            &["digital signature".into(), "client auth".into()],
            start,
            end,
        )
        .expect("signed");
        assert_eq!(identity(&pem), ("alice".into(), vec!["devs".into()]));
        let der = first_cert_der(&pem).expect("cert");
        let (_, cert) = x509_parser::parse_x509_certificate(&der).expect("parses");
        assert_eq!(cert.validity().not_before.timestamp(), start.as_second());
        assert_eq!(cert.validity().not_after.timestamp(), end.as_second());
        let eku = cert
            .extended_key_usage()
            .expect("eku parses")
            .expect("eku present");
        assert!(eku.value.client_auth && !eku.value.server_auth);
        assert!(!cert.is_ca());
        let ca_der = first_cert_der(&pki.ca.cert_pem).expect("ca");
        let (_, ca) = x509_parser::parse_x509_certificate(&ca_der).expect("ca parses");
        cert.verify_signature(Some(ca.public_key()))
            .expect("signed by the CA");
    }

    #[test]
    fn a_request_with_a_broken_signature_or_an_unknown_usage_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pki = ensure_dev_pki(dir.path(), &[]).expect("pki");
        let now = jiff::Timestamp::now();
        let good = csr_pem("bob", "devs");
        let err = sign_certificate_request(&pki.ca, &good, &["bogus".into()], now, now)
            .expect_err("unknown usage");
        assert!(err.to_string().contains("bogus"), "{err}");
        // Flip one byte of the signature (the end of the DER).
        let mut der = pem_certs_der_of(&good);
        let n = der.len();
        der[n - 2] ^= 0x01;
        let broken = pem_encode("CERTIFICATE REQUEST", &der);
        assert!(
            sign_certificate_request(&pki.ca, &broken, &["client auth".into()], now, now).is_err()
        );
        assert!(sign_certificate_request(&pki.ca, "not pem", &[], now, now).is_err());
    }

    fn pem_certs_der_of(pem: &str) -> Vec<u8> {
        let mut reader = pem.as_bytes();
        match rustls_pemfile::read_one(&mut reader) {
            Ok(Some(rustls_pemfile::Item::Csr(der))) => der.to_vec(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn first_start_creates_ca_serving_and_admin_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pki = ensure_dev_pki(dir.path(), &[]).expect("pki");
        assert_eq!(pki.ca_outcome, Outcome::Created);
        assert_eq!(pki.serving_outcome, Outcome::Created);
        assert_eq!(pki.admin_outcome, Outcome::Created);
        for f in [
            CA_CERT_FILE,
            CA_KEY_FILE,
            SERVING_CERT_FILE,
            SERVING_KEY_FILE,
            ADMIN_CERT_FILE,
            ADMIN_KEY_FILE,
        ] {
            assert!(dir.path().join(f).is_file(), "{f} written");
        }
        let (cn, orgs) = identity(&pki.admin.cert_pem);
        assert_eq!(cn, "ubernetes-admin");
        assert_eq!(orgs, vec!["system:masters".to_string()]);
    }

    #[cfg(unix)]
    #[test]
    fn private_keys_are_mode_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        ensure_dev_pki(dir.path(), &[]).expect("pki");
        for f in [CA_KEY_FILE, SERVING_KEY_FILE, ADMIN_KEY_FILE] {
            let mode = fs::metadata(dir.path().join(f))
                .expect("stat")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{f}");
        }
    }

    #[test]
    fn serving_cert_covers_localhost_loopbacks_and_extra_sans() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pki = ensure_dev_pki(
            dir.path(),
            &["fed.example.com".to_string(), "10.1.2.3".to_string()],
        )
        .expect("pki");
        let sans = sans_of(&pki.serving.cert_pem);
        for want in [
            "localhost",
            "127.0.0.1",
            "::1",
            "fed.example.com",
            "10.1.2.3",
        ] {
            assert!(sans.iter().any(|s| s == want), "{want} in {sans:?}");
        }
    }

    #[test]
    fn second_start_reuses_every_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = ensure_dev_pki(dir.path(), &["a.example".into()]).expect("pki");
        let second = ensure_dev_pki(dir.path(), &["a.example".into()]).expect("pki");
        assert_eq!(second.ca_outcome, Outcome::Reused);
        assert_eq!(second.serving_outcome, Outcome::Reused);
        assert_eq!(second.admin_outcome, Outcome::Reused);
        assert_eq!(first.ca.cert_pem, second.ca.cert_pem);
        assert_eq!(first.serving.cert_pem, second.serving.cert_pem);
        assert_eq!(first.admin.key_pem, second.admin.key_pem);
    }

    #[test]
    fn a_new_san_regenerates_only_the_serving_cert() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = ensure_dev_pki(dir.path(), &[]).expect("pki");
        let second = ensure_dev_pki(dir.path(), &["192.0.2.7".into()]).expect("pki");
        assert_eq!(second.ca_outcome, Outcome::Reused);
        assert_eq!(second.serving_outcome, Outcome::Regenerated);
        assert_eq!(second.admin_outcome, Outcome::Reused);
        assert_eq!(first.ca.cert_pem, second.ca.cert_pem);
        assert!(sans_of(&second.serving.cert_pem).contains(&"192.0.2.7".to_string()));
        // Asking for a subset of what is there keeps it.
        let third = ensure_dev_pki(dir.path(), &[]).expect("pki");
        assert_eq!(third.serving_outcome, Outcome::Reused);
    }

    #[test]
    fn a_missing_ca_key_remakes_the_whole_pki() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = ensure_dev_pki(dir.path(), &[]).expect("pki");
        fs::remove_file(dir.path().join(CA_KEY_FILE)).expect("rm");
        let second = ensure_dev_pki(dir.path(), &[]).expect("pki");
        assert_eq!(second.ca_outcome, Outcome::Regenerated);
        assert_eq!(second.serving_outcome, Outcome::Regenerated);
        assert_eq!(second.admin_outcome, Outcome::Regenerated);
        assert_ne!(first.ca.cert_pem, second.ca.cert_pem);
    }

    #[test]
    fn an_invalid_san_is_rejected() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = ensure_dev_pki(dir.path(), &["not a name".into()]).expect_err("invalid");
        assert!(matches!(err, Error::BadSan { .. }), "{err}");
    }

    #[test]
    fn issued_client_cert_carries_user_and_every_group_and_verifies() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pki = ensure_dev_pki(dir.path(), &[]).expect("pki");
        let groups = vec!["dev".to_string(), "ops".to_string(), "qa".to_string()];
        let pair = pki.issue_client_cert("alice", &groups).expect("issue");
        let (cn, orgs) = identity(&pair.cert_pem);
        assert_eq!(cn, "alice");
        assert_eq!(orgs, groups);

        let der = first_cert_der(&pair.cert_pem).expect("der");
        let ca_der = first_cert_der(&pki.ca.cert_pem).expect("ca der");
        let (_, cert) = x509_parser::parse_x509_certificate(&der).expect("parse");
        let (_, ca) = x509_parser::parse_x509_certificate(&ca_der).expect("parse ca");
        cert.verify_signature(Some(ca.public_key()))
            .expect("signed by the CA");
        assert_eq!(cert.issuer(), ca.subject());
        // The key file belongs to the certificate.
        let key = KeyPair::from_pem(&pair.key_pem).expect("key");
        assert_eq!(
            key.public_key_raw(),
            cert.public_key().subject_public_key.data.as_ref()
        );
    }

    #[test]
    fn client_cert_without_groups_has_only_a_common_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pki = ensure_dev_pki(dir.path(), &[]).expect("pki");
        let pair = pki.issue_client_cert("bob", &[]).expect("issue");
        assert_eq!(identity(&pair.cert_pem), ("bob".to_string(), vec![]));
    }

    #[test]
    fn kubeconfig_names_everything_after_the_context_and_embeds_data() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("kubeconfig");
        write_kubeconfig(
            &path,
            "https://127.0.0.1:6443",
            "CA",
            "CERT",
            "KEY",
            "federation",
        )
        .expect("write");
        let text = fs::read_to_string(&path).expect("read");
        assert!(text.contains("current-context: \"federation\""), "{text}");
        assert!(text.contains("server: \"https://127.0.0.1:6443\""));
        assert!(text.contains(&format!(
            "certificate-authority-data: {}",
            BASE64.encode("CA")
        )));
        assert!(text.contains(&format!(
            "client-certificate-data: {}",
            BASE64.encode("CERT")
        )));
        assert!(text.contains(&format!("client-key-data: {}", BASE64.encode("KEY"))));
        assert_eq!(text.matches("- name: \"federation\"").count(), 3);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&path).expect("stat").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn a_kubeconfig_without_user_names_the_cluster_and_no_credentials() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("kubeconfig");
        write_kubeconfig_without_user(&path, "https://127.0.0.1:1", "CA", "federation")
            .expect("write");
        let text = fs::read_to_string(&path).expect("read");
        assert!(
            text.contains("- name: \"federation\"\n  user: {}\ncontexts:"),
            "{text}"
        );
        assert!(!text.contains("client-"), "{text}");
        assert!(text.contains(&format!(
            "certificate-authority-data: {}",
            BASE64.encode("CA")
        )));
    }

    #[cfg(unix)]
    #[test]
    fn a_private_dir_is_made_0700_and_a_loose_one_tightened() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let mode = |p: &Path| fs::metadata(p).expect("stat").permissions().mode() & 0o777;
        let data = dir.path().join("data");
        assert_eq!(ensure_private_dir(&data).expect("made"), None);
        assert_eq!(mode(&data), 0o700);
        fs::set_permissions(&data, fs::Permissions::from_mode(0o755)).expect("chmod");
        assert_eq!(ensure_private_dir(&data).expect("tightened"), Some(0o755));
        assert_eq!(mode(&data), 0o700);
        assert_eq!(ensure_private_dir(&data).expect("kept"), None);
    }

    #[test]
    fn long_der_lengths_use_the_long_form() {
        let mut out = Vec::new();
        der_len(300, &mut out);
        assert_eq!(out, vec![0x82, 0x01, 0x2c]);
        let tlv = der_tlv(0x04, &[0u8; 300]);
        assert_eq!(der_read(&tlv).expect("read"), (0x04, 4, 304));
    }

    #[test]
    fn the_service_account_key_is_made_once_and_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (first, made) = ensure_service_account_key(dir.path()).expect("made");
        assert_eq!(made, Outcome::Created);
        assert!(first.contains("BEGIN PRIVATE KEY"), "{first}");
        let public = fs::read_to_string(dir.path().join(SERVICE_ACCOUNT_PUB_FILE)).expect("sa.pub");
        assert!(public.contains("BEGIN PUBLIC KEY"));
        let (again, kept) = ensure_service_account_key(dir.path()).expect("reused");
        assert_eq!(kept, Outcome::Reused);
        assert_eq!(first, again);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(dir.path().join(SERVICE_ACCOUNT_KEY_FILE))
                .expect("stat")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn the_default_encryption_config_is_made_once_private_and_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pki = dir.path().join("pki");
        let made = ensure_encryption_config(&pki).expect("made");
        assert_eq!(made.outcome, Outcome::Created);
        assert_eq!(made.path, pki.join(ENCRYPTION_CONFIG_FILE));
        let text = fs::read_to_string(&made.path).expect("read");
        assert!(
            text.contains("kind: EncryptionConfiguration")
                && text.contains("- secrets")
                && text.contains("- secretbox:")
                && text.contains("- identity: {}"),
            "{text}"
        );
        // A 32-byte key (secretbox's size), base64.
        let secret = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("secret: "))
            .expect("a secret line");
        assert_eq!(BASE64.decode(secret).expect("base64").len(), 32);
        // Only the file itself is left (no temporary file).
        let names: Vec<_> = fs::read_dir(&pki)
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(
            names,
            vec![std::ffi::OsString::from(ENCRYPTION_CONFIG_FILE)]
        );
        // Kept as it is on the next start; another directory gets its own key.
        let again = ensure_encryption_config(&pki).expect("reused");
        assert_eq!(again.outcome, Outcome::Reused);
        assert_eq!(fs::read_to_string(&again.path).expect("read"), text);
        let other = ensure_encryption_config(&dir.path().join("other")).expect("other");
        assert_ne!(fs::read_to_string(&other.path).expect("read"), text);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| fs::metadata(p).expect("stat").permissions().mode() & 0o777;
            assert_eq!(mode(&made.path), 0o600);
            assert_eq!(mode(&pki), 0o700);
            // A copy left readable by others is tightened and reported.
            fs::set_permissions(&made.path, fs::Permissions::from_mode(0o644)).expect("chmod");
            let tightened = ensure_encryption_config(&pki).expect("reused");
            assert_eq!(tightened.loosened, Some(0o644));
            assert_eq!(mode(&made.path), 0o600);
        }
    }
}
