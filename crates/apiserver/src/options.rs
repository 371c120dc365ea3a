//! The server's options: one struct filled from the command line
//! (`ubernetes serve --help`), with kube-apiserver's flag names and defaults
//! where kube-apiserver has the flag. `ServerOptions::default()` is exactly
//! what the command line gives with no flags.

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser};

/// kube-apiserver's limit on a request body (`MaxRequestBodyBytes`, 3 MiB).
pub const DEFAULT_MAX_REQUEST_BODY_BYTES: u64 = 3 * 1024 * 1024;

/// The server's configuration, filled from the CLI.
#[derive(Debug, Clone, Args)]
pub struct ServerOptions {
    /// Directory that holds everything the server keeps: the store, the dev
    /// PKI (DATA_DIR/pki/) and the admin kubeconfig (DATA_DIR/kubeconfig).
    #[arg(long = "data-dir", value_name = "DIR", default_value = "./data")]
    pub data_dir: PathBuf,

    /// The port on which to serve HTTPS with authentication and
    /// authorization. 0 picks a free port (printed on stdout).
    #[arg(long = "secure-port", value_name = "PORT", default_value_t = 6443)]
    pub secure_port: u16,

    /// The IP address on which to listen for the --secure-port port
    /// (0.0.0.0 or :: for all interfaces).
    #[arg(long = "bind-address", value_name = "IP", default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub bind_address: IpAddr,

    /// File containing the default x509 certificate for HTTPS (CA cert, if
    /// any, concatenated after the server cert). If --tls-cert-file and
    /// --tls-private-key-file are not given, a self-signed dev PKI is
    /// generated under DATA_DIR/pki/ (its CA then also authenticates client
    /// certificates; with this flag it does only if --client-ca-file holds it).
    #[arg(
        long = "tls-cert-file",
        value_name = "FILE",
        requires = "tls_private_key_file"
    )]
    pub tls_cert_file: Option<PathBuf>,

    /// File containing the default x509 private key matching --tls-cert-file.
    #[arg(
        long = "tls-private-key-file",
        value_name = "FILE",
        requires = "tls_cert_file"
    )]
    pub tls_private_key_file: Option<PathBuf>,

    /// If set, any request presenting a client certificate signed by one of
    /// the authorities in this file is authenticated with an identity
    /// corresponding to the CommonName of the client certificate (groups: its
    /// Organizations). The dev CA (DATA_DIR/pki/ca.crt) is trusted for client
    /// certificates only while it is the serving CA (no --tls-cert-file) or
    /// when this file holds it: with your own serving certificate, the dev
    /// admin certificate stops working unless you name the dev CA here.
    #[arg(long = "client-ca-file", value_name = "FILE")]
    pub client_ca_file: Option<PathBuf>,

    /// Extra subject alternative names (DNS names or IP addresses) for the
    /// generated dev serving certificate, besides localhost, 127.0.0.1 and
    /// ::1. Repeat the flag or separate with commas.
    #[arg(long = "tls-san", value_name = "NAME", value_delimiter = ',')]
    pub tls_san: Vec<String>,

    /// If set, the file that will be used to secure the secure port of the
    /// API server via token authentication (CSV: token,user,uid,"group1,group2").
    #[arg(long = "token-auth-file", value_name = "FILE")]
    pub token_auth_file: Option<PathBuf>,

    /// Identifier of the service account token issuer: the `iss` claim of
    /// the tokens this server issues. Repeat to also accept tokens of earlier
    /// issuers; the first one signs.
    #[arg(
        long = "service-account-issuer",
        value_name = "URL",
        default_value = ubernetes_registry::jwt::DEFAULT_ISSUER
    )]
    pub service_account_issuer: Vec<String>,

    /// PEM private key (RSA or ECDSA P-256) that signs service-account
    /// tokens. Default: DATA_DIR/pki/sa.key, made on first start.
    #[arg(long = "service-account-signing-key-file", value_name = "FILE")]
    pub service_account_signing_key_file: Option<PathBuf>,

    /// PEM files with more public (or private) keys that verify
    /// service-account tokens, e.g. the previous key while rotating.
    /// Repeatable.
    #[arg(long = "service-account-key-file", value_name = "FILE")]
    pub service_account_key_file: Vec<PathBuf>,

    /// The longest lifetime of a token a TokenRequest may ask for; longer
    /// requests are shortened to it (0: no limit). Go-style duration.
    #[arg(
        long = "service-account-max-token-expiration",
        value_name = "DURATION",
        default_value = "0s",
        value_parser = parse_duration
    )]
    pub service_account_max_token_expiration: Duration,

    /// Identifiers of the API: service-account tokens must carry one of
    /// these audiences to authenticate here (comma-separated). Default: the
    /// --service-account-issuer values.
    #[arg(
        long = "api-audiences",
        value_name = "AUDIENCES",
        value_delimiter = ','
    )]
    pub api_audiences: Vec<String>,

    /// Ordered list of plug-ins to do authorization on the secure port:
    /// RBAC or AlwaysAllow (comma-separated).
    #[arg(
        long = "authorization-mode",
        value_name = "MODES",
        default_value = "RBAC"
    )]
    pub authorization_mode: String,

    /// A CIDR notation IP range from which to assign service cluster IPs.
    #[arg(
        long = "service-cluster-ip-range",
        value_name = "CIDR",
        default_value = "10.96.0.0/12"
    )]
    pub service_cluster_ip_range: String,

    /// The largest request body accepted, in bytes; larger bodies get
    /// 413 RequestEntityTooLarge (kube-apiserver's limit: 3 MiB).
    #[arg(
        long = "max-request-body-bytes",
        value_name = "BYTES",
        default_value_t = DEFAULT_MAX_REQUEST_BODY_BYTES
    )]
    pub max_request_body_bytes: u64,

    /// Events kept per resource for watch resume (kube-apiserver's
    /// --default-watch-cache-size, there 100 and grown with the event rate).
    /// A watch from an older resourceVersion gets 410 Expired and relists.
    #[arg(
        long = "default-watch-cache-size",
        value_name = "EVENTS",
        default_value_t = 10_000
    )]
    pub default_watch_cache_size: usize,

    /// Memory for the embedded store's page cache (sled), in MiB. Reads are
    /// served from the watch cache, so the store's cache only speeds up
    /// writes (each reads the key's current state) and paged reads of old
    /// revisions; past this size pages are read back from disk (usually the
    /// OS page cache).
    #[arg(long = "storage-cache-mib", value_name = "MIB", default_value_t = 64)]
    pub storage_cache_mib: u64,

    /// List of etcd servers to connect with (scheme://ip:port, comma
    /// separated), as kube-apiserver's flag. When given, every object lives in
    /// etcd (under --etcd-prefix) instead of the embedded store under
    /// DATA_DIR/store, and several servers on the same etcd and prefix serve
    /// the same objects with the same resourceVersions (etcd's revisions).
    #[arg(long = "etcd-servers", value_name = "URLS", value_delimiter = ',')]
    pub etcd_servers: Vec<String>,

    /// The prefix to prepend to all resource paths in etcd: a Pod is the
    /// etcd key PREFIX/pods/NAMESPACE/NAME (as kube-apiserver).
    #[arg(
        long = "etcd-prefix",
        value_name = "PREFIX",
        default_value = "/registry"
    )]
    pub etcd_prefix: String,

    /// SSL Certificate Authority file used to secure etcd communication
    /// (verifies etcd's serving certificate; implies TLS).
    #[arg(long = "etcd-cafile", value_name = "FILE")]
    pub etcd_cafile: Option<PathBuf>,

    /// SSL certification file used to secure etcd communication: the client
    /// certificate this server presents to etcd (with --etcd-keyfile).
    #[arg(long = "etcd-certfile", value_name = "FILE", requires = "etcd_keyfile")]
    pub etcd_certfile: Option<PathBuf>,

    /// SSL key file used to secure etcd communication: the private key of
    /// --etcd-certfile.
    #[arg(long = "etcd-keyfile", value_name = "FILE", requires = "etcd_certfile")]
    pub etcd_keyfile: Option<PathBuf>,

    /// The file containing configuration for encryption providers to be used
    /// for storing secrets in etcd (or the embedded store): an
    /// EncryptionConfiguration (apiserver.config.k8s.io/v1) with aescbc,
    /// aesgcm, secretbox or identity providers per resource, as
    /// kube-apiserver's flag. Values are stored as `k8s:enc:PROVIDER:v1:KEY:`
    /// and the ciphertext. KMS providers are not supported. Given, it
    /// replaces the default of --encrypt-secrets-by-default entirely.
    #[arg(long = "encryption-provider-config", value_name = "FILE")]
    pub encryption_provider_config: Option<PathBuf>,

    /// Without --encryption-provider-config, encrypt Secrets at rest anyway
    /// (the members' kubeconfigs are Secrets): on first start a random
    /// 32-byte secretbox key is made in DATA_DIR/pki/encryption-config.yaml
    /// (an EncryptionConfiguration, mode 0600, beside the CA and apart from
    /// the store; replicas share it with the PKI), with identity after it
    /// so Secrets stored before still read and are encrypted on their next
    /// write. false stores Secrets as they are (plaintext, with a warning).
    #[arg(
        long = "encrypt-secrets-by-default",
        value_name = "BOOL",
        default_value_t = true,
        action = clap::ArgAction::Set
    )]
    pub encrypt_secrets_by_default: bool,

    /// On SIGTERM/SIGINT, how long /readyz reports failure while requests
    /// are still served, before the listener closes (lets load balancers
    /// notice). Go-style duration, e.g. 0s, 5s, 1m.
    #[arg(
        long = "shutdown-delay-duration",
        value_name = "DURATION",
        default_value = "0s",
        value_parser = parse_duration
    )]
    pub shutdown_delay_duration: Duration,

    /// On shutdown, how long in-flight requests may take to finish (watches
    /// are closed at once) before the remaining connections are dropped.
    #[arg(
        long = "shutdown-grace-period",
        value_name = "DURATION",
        default_value = "10s",
        value_parser = parse_duration
    )]
    pub shutdown_grace: Duration,

    /// How long an Event is kept after its last write (kube-apiserver's
    /// --event-ttl): core v1 and events.k8s.io/v1 Events alike, deleted by
    /// the leader's Event expiry controller. Go-style duration; 0s keeps
    /// Events forever.
    #[arg(
        long = "event-ttl",
        value_name = "DURATION",
        default_value = "1h",
        value_parser = parse_duration
    )]
    pub event_ttl: Duration,

    /// Serve the dashboard at https://ADDRESS/ui/ (SPEC §3.15: a web page
    /// of the clusters, workloads and DNS names, signed in with a bearer
    /// token, so RBAC decides what it shows; docs/dashboard.md). Its static
    /// assets are built into the binary and are the only paths served
    /// without credentials. false: /ui is answered as any unknown API path
    /// (401 without credentials, 404 with).
    #[arg(
        long = "ui",
        value_name = "BOOL",
        default_value_t = true,
        action = clap::ArgAction::Set
    )]
    pub ui: bool,

    /// The audit log flags (`--audit-policy-file`, `--audit-log-*`).
    #[command(flatten)]
    pub audit: crate::audit::AuditOptions,

    /// `--leader-elect*`: which replica runs the controllers.
    #[command(flatten)]
    pub leader_election: crate::leader_election::LeaderElectionOptions,

    /// `--cluster-signing-*`: the CSR signer's CA and maximum lifetime.
    #[command(flatten)]
    pub cluster_signing: ClusterSigningOptions,
}

pub use ubernetes_apimachinery::duration::parse_duration;

/// Wraps the options in a parser so the defaults come from one place: the
/// `#[arg]` attributes above.
#[derive(Parser)]
#[command(no_binary_name = true)]
struct DefaultsOnly {
    #[command(flatten)]
    options: ServerOptions,
}

impl Default for ServerOptions {
    fn default() -> Self {
        match DefaultsOnly::try_parse_from(std::iter::empty::<String>()) {
            Ok(d) => d.options,
            // Unreachable unless a default above stops parsing; keep the
            // documented values rather than panic.
            Err(_) => Self {
                data_dir: PathBuf::from("./data"),
                secure_port: 6443,
                bind_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
                tls_cert_file: None,
                tls_private_key_file: None,
                client_ca_file: None,
                tls_san: Vec::new(),
                token_auth_file: None,
                service_account_issuer: vec![ubernetes_registry::jwt::DEFAULT_ISSUER.to_string()],
                service_account_signing_key_file: None,
                service_account_key_file: Vec::new(),
                service_account_max_token_expiration: Duration::ZERO,
                api_audiences: Vec::new(),
                authorization_mode: "RBAC".to_string(),
                service_cluster_ip_range: "10.96.0.0/12".to_string(),
                max_request_body_bytes: DEFAULT_MAX_REQUEST_BODY_BYTES,
                default_watch_cache_size: 10_000,
                storage_cache_mib: 64,
                etcd_servers: Vec::new(),
                etcd_prefix: "/registry".to_string(),
                etcd_cafile: None,
                etcd_certfile: None,
                etcd_keyfile: None,
                encryption_provider_config: None,
                encrypt_secrets_by_default: true,
                shutdown_delay_duration: Duration::ZERO,
                shutdown_grace: Duration::from_secs(10),
                event_ttl: ubernetes_registry::event_ttl::DEFAULT_EVENT_TTL,
                ui: true,
                audit: crate::audit::AuditOptions::default(),
                leader_election: Default::default(),
                cluster_signing: Default::default(),
            },
        }
    }
}

impl ServerOptions {
    /// Options for a test server: 127.0.0.1, a free port, `data_dir`.
    pub fn for_test(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            secure_port: 0,
            ..Self::default()
        }
    }

    /// The dev PKI directory: `DATA_DIR/pki`.
    pub fn pki_dir(&self) -> PathBuf {
        self.data_dir.join("pki")
    }

    /// The encryption configuration Secrets are stored with:
    /// `--encryption-provider-config`, else (with
    /// `--encrypt-secrets-by-default`, the default) the generated
    /// `DATA_DIR/pki/encryption-config.yaml`, else none.
    pub fn secrets_encryption_config(&self) -> Option<PathBuf> {
        match &self.encryption_provider_config {
            Some(path) => Some(path.clone()),
            None if self.encrypt_secrets_by_default => {
                Some(self.pki_dir().join(ubernetes_certs::ENCRYPTION_CONFIG_FILE))
            }
            None => None,
        }
    }

    /// The admin kubeconfig written on every start: `DATA_DIR/kubeconfig`.
    pub fn kubeconfig_path(&self) -> PathBuf {
        self.data_dir.join("kubeconfig")
    }

    /// The authorization modes, split on commas (`RBAC`, `AlwaysAllow`).
    pub fn authorization_modes(&self) -> Vec<String> {
        self.authorization_mode
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(str::to_string)
            .collect()
    }
}

/// Signing of approved CertificateSigningRequests.
#[derive(Debug, Clone, clap::Args)]
pub struct ClusterSigningOptions {
    /// Filename containing a PEM-encoded X509 CA certificate used to issue
    /// cluster-scoped certificates: the kubernetes.io/kube-apiserver-client
    /// signer signs approved CertificateSigningRequests with it. Default:
    /// the dev CA (DATA_DIR/pki/ca.crt), which this server trusts for
    /// client certificates (another CA must also be in --client-ca-file for
    /// its certificates to authenticate).
    #[arg(
        long = "cluster-signing-cert-file",
        value_name = "FILE",
        requires = "cluster_signing_key_file"
    )]
    pub cluster_signing_cert_file: Option<PathBuf>,

    /// Filename containing a PEM-encoded RSA or ECDSA private key used to
    /// sign cluster-scoped certificates (goes with
    /// --cluster-signing-cert-file; default: DATA_DIR/pki/ca.key).
    #[arg(
        long = "cluster-signing-key-file",
        value_name = "FILE",
        requires = "cluster_signing_cert_file"
    )]
    pub cluster_signing_key_file: Option<PathBuf>,

    /// The max length of duration signed certificates will be given.
    /// Individual CSRs may request shorter certs by setting
    /// spec.expirationSeconds.
    #[arg(
        long = "cluster-signing-duration",
        value_name = "DURATION",
        default_value = "8760h0m0s",
        value_parser = parse_duration
    )]
    pub cluster_signing_duration: Duration,
}

impl Default for ClusterSigningOptions {
    fn default() -> Self {
        Self {
            cluster_signing_cert_file: None,
            cluster_signing_key_file: None,
            cluster_signing_duration: Duration::from_secs(365 * 24 * 3600),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_expansion_floor_is_the_default_body_limit() {
        assert_eq!(
            crate::yaml::EXPANSION_FLOOR as u64,
            DEFAULT_MAX_REQUEST_BODY_BYTES
        );
    }

    fn parse(args: &[&str]) -> Result<ServerOptions, clap::Error> {
        DefaultsOnly::try_parse_from(args.iter().copied()).map(|d| d.options)
    }

    #[test]
    fn defaults_match_kube_apiserver_and_the_spec() {
        let o = ServerOptions::default();
        assert_eq!(o.data_dir, PathBuf::from("./data"));
        assert_eq!(o.secure_port, 6443);
        assert_eq!(o.bind_address, IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(o.authorization_mode, "RBAC");
        assert_eq!(o.service_cluster_ip_range, "10.96.0.0/12");
        assert_eq!(o.max_request_body_bytes, 3_145_728);
        assert_eq!(o.shutdown_delay_duration, Duration::ZERO);
        assert_eq!(o.shutdown_grace, Duration::from_secs(10));
        assert_eq!(o.event_ttl, Duration::from_secs(3600));
        assert_eq!(
            parse(&["--event-ttl", "3s"]).map(|o| o.event_ttl).ok(),
            Some(Duration::from_secs(3))
        );
        assert!(o.tls_cert_file.is_none() && o.token_auth_file.is_none());
        assert_eq!(
            o.service_account_issuer,
            vec!["https://kubernetes.default.svc.cluster.local"]
        );
        assert!(o.api_audiences.is_empty() && o.service_account_signing_key_file.is_none());
        assert_eq!(o.service_account_max_token_expiration, Duration::ZERO);
        assert!(o.etcd_servers.is_empty() && o.etcd_cafile.is_none());
        assert_eq!(o.etcd_prefix, "/registry");
    }

    #[test]
    fn etcd_flags_as_kube_apiserver() {
        let o = parse(&[
            "--etcd-servers=https://10.0.0.1:2379,https://10.0.0.2:2379",
            "--etcd-prefix=/fed",
            "--etcd-cafile=ca.crt",
            "--etcd-certfile=client.crt",
            "--etcd-keyfile=client.key",
        ])
        .expect("parse");
        assert_eq!(
            o.etcd_servers,
            ["https://10.0.0.1:2379", "https://10.0.0.2:2379"]
        );
        assert_eq!(o.etcd_prefix, "/fed");
        assert_eq!(o.etcd_cafile, Some(PathBuf::from("ca.crt")));
        assert_eq!(o.etcd_keyfile, Some(PathBuf::from("client.key")));
        assert!(
            parse(&["--etcd-certfile=client.crt"]).is_err(),
            "needs the key"
        );
    }

    #[test]
    fn service_account_flags_use_kube_apiserver_names() {
        let o = parse(&[
            "--service-account-issuer",
            "https://new.example",
            "--service-account-issuer",
            "https://old.example",
            "--api-audiences",
            "a,b",
            "--service-account-signing-key-file",
            "/sa.key",
            "--service-account-key-file",
            "/old.pub",
            "--service-account-max-token-expiration",
            "24h",
        ])
        .expect("parses");
        assert_eq!(
            o.service_account_issuer,
            vec!["https://new.example", "https://old.example"]
        );
        assert_eq!(o.api_audiences, vec!["a", "b"]);
        assert_eq!(
            o.service_account_signing_key_file,
            Some(PathBuf::from("/sa.key"))
        );
        assert_eq!(o.service_account_key_file, vec![PathBuf::from("/old.pub")]);
        assert_eq!(
            o.service_account_max_token_expiration,
            Duration::from_secs(86_400)
        );
    }

    #[test]
    fn flags_use_kube_apiserver_names() {
        let o = parse(&[
            "--secure-port",
            "0",
            "--bind-address",
            "::1",
            "--data-dir",
            "/tmp/x",
            "--tls-san",
            "a.example,10.0.0.1",
            "--tls-san",
            "b.example",
            "--token-auth-file",
            "/t.csv",
            "--authorization-mode",
            "AlwaysAllow",
            "--shutdown-grace-period",
            "1m30s",
        ])
        .expect("parses");
        assert_eq!(o.secure_port, 0);
        assert_eq!(o.bind_address, "::1".parse::<IpAddr>().expect("ip"));
        assert_eq!(o.data_dir, PathBuf::from("/tmp/x"));
        assert_eq!(o.tls_san, vec!["a.example", "10.0.0.1", "b.example"]);
        assert_eq!(o.token_auth_file, Some(PathBuf::from("/t.csv")));
        assert_eq!(o.authorization_modes(), vec!["AlwaysAllow"]);
        assert_eq!(o.shutdown_grace, Duration::from_secs(90));
    }

    #[test]
    fn a_cert_file_without_its_key_is_rejected() {
        assert!(parse(&["--tls-cert-file", "/c.pem"]).is_err());
        assert!(
            parse(&[
                "--tls-cert-file",
                "/c.pem",
                "--tls-private-key-file",
                "/k.pem"
            ])
            .is_ok()
        );
    }

    #[test]
    fn durations_parse_go_style_and_reject_negatives() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn pki_and_kubeconfig_live_under_the_data_dir() {
        let o = ServerOptions::for_test("/d");
        assert_eq!(o.pki_dir(), PathBuf::from("/d/pki"));
        assert_eq!(o.kubeconfig_path(), PathBuf::from("/d/kubeconfig"));
        assert_eq!(o.secure_port, 0);
    }
}
