//! Encryption at rest (`--encryption-provider-config`, kube-apiserver's
//! EncryptionConfiguration): a Secret's value never reaches the embedded
//! store's files or etcd as plaintext; it reads back after a restart; key
//! rotation by re-writing (`kubectl get secrets -A -o json | kubectl
//! replace -f -`) moves every Secret to the new first key, after which the
//! old key can go.
//!
//! And by default, with no encryption flag at all (issue 27 item 5): a
//! member's kubeconfig Secret in `federation-system` is neither in the sled
//! files nor in etcd in clear, the generated key is in
//! `DATA_DIR/pki/encryption-config.yaml` (0600, in the 0700 PKI directory),
//! survives restarts and travels with the PKI to a second replica;
//! `--encrypt-secrets-by-default=false` stores plaintext (the control that
//! proves the scan finds it), and such Secrets are encrypted by their next
//! write once the default is back.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use ubernetes_e2e::{Server, ubernetes_bin};
use ubernetes_storage::Storage;
use ubernetes_storage::etcd_engine::{EtcdOptions, EtcdStorage};
use ubernetes_storage::etcd_process::EtcdProcess;
use ubernetes_storage::sled_engine::SledStorage;

const KEY1: &str = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI=";
const KEY2: &str = "YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXphYmNkZWY=";
/// What the Secret holds: distinctive enough that finding it anywhere in the
/// store means it leaked.
const SECRET_VALUE: &str = "s3cr3t-at-rest-Zq8wX1vB";
/// A ConfigMap value, not encrypted: the positive control that proves the
/// file scan would find a plaintext value.
const CONTROL_VALUE: &str = "plain-control-Kp4mR7tY";

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// An EncryptionConfiguration: `rules` = (resources, providers YAML).
fn config(rules: &[(&str, &str)]) -> String {
    let mut s = String::from(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n",
    );
    for (resources, providers) in rules {
        s.push_str(&format!(
            "  - resources: [{resources}]\n    providers:\n{providers}"
        ));
    }
    s
}

fn provider(kind: &str, keys: &[(&str, &str)]) -> String {
    let mut s = format!("      - {kind}:\n          keys:\n");
    for (name, secret) in keys {
        s.push_str(&format!(
            "            - name: {name}\n              secret: {secret}\n"
        ));
    }
    s
}

const IDENTITY: &str = "      - identity: {}\n";

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                todo.push(path);
            } else {
                out.push(path);
            }
        }
    }
    Ok(out)
}

/// The files under `dir` whose raw bytes contain `needle`.
fn files_containing(dir: &Path, needle: &str) -> Result<Vec<PathBuf>> {
    let mut hits = Vec::new();
    for f in files(dir)? {
        let bytes = std::fs::read(&f)?;
        if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
            hits.push(f);
        }
    }
    Ok(hits)
}

fn secret_value(server: &Server, namespace: &str, name: &str) -> Result<String> {
    let s = server
        .kubectl_get(&["secret", name, "-n", namespace])?
        .context("the Secret exists")?;
    let data = s["data"]["password"]
        .as_str()
        .context("data.password")?
        .to_string();
    Ok(String::from_utf8(
        base64::engine::general_purpose::STANDARD.decode(data)?,
    )?)
}

/// The raw bytes sled holds for `key` (the server must be stopped: sled
/// locks its directory).
fn raw_sled_value(store: &Path, key: &str) -> Result<Vec<u8>> {
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let raw = SledStorage::open(store)?;
        let kv = raw.get(key).await?.context("key in the store")?;
        Ok(kv.value.to_vec())
    })
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

#[test]
fn secrets_are_encrypted_in_the_embedded_store_and_rotate_by_rewriting() -> Result<()> {
    let cfg_dir = tempfile::TempDir::new()?;
    let cfg = cfg_dir.path().join("encryption.yaml");
    write(
        &cfg,
        &config(&[(
            "secrets",
            &format!("{}{IDENTITY}", provider("aescbc", &[("key1", KEY1)])),
        )]),
    )?;
    let cfg_arg = cfg.display().to_string();
    let mut server = Server::start_with(&["--encryption-provider-config", &cfg_arg])?;
    server.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "s1",
        &format!("--from-literal=password={SECRET_VALUE}"),
    ])?;
    server.kubectl_ok(&[
        "create",
        "configmap",
        "control",
        &format!("--from-literal=value={CONTROL_VALUE}"),
    ])?;
    // Served decrypted while running.
    assert_eq!(secret_value(&server, "default", "s1")?, SECRET_VALUE);

    // (a) Stopped: no file of the store holds the value or its base64 (what
    // the Secret's JSON carries), while the unencrypted ConfigMap's value is
    // there (the scan works).
    server.stop();
    let store = server.data_dir().join("store");
    assert!(
        !files_containing(&store, CONTROL_VALUE)?.is_empty(),
        "the control ConfigMap's plaintext should be in the store files"
    );
    for needle in [SECRET_VALUE.to_string(), b64(SECRET_VALUE)] {
        let hits = files_containing(&store, &needle)?;
        assert!(hits.is_empty(), "{needle:?} found in {hits:?}");
    }
    let raw = raw_sled_value(&store, "/registry/core/secrets/default/s1")?;
    assert!(
        raw.starts_with(b"k8s:enc:aescbc:v1:key1:"),
        "stored as {:?}",
        String::from_utf8_lossy(&raw[..raw.len().min(40)])
    );

    // Restarted: reads back.
    server.restart()?;
    assert_eq!(secret_value(&server, "default", "s1")?, SECRET_VALUE);

    // (c) Rotation: key2 first, key1 still listed. A restart alone rewrites
    // nothing; the old value reads (with key1).
    write(
        &cfg,
        &config(&[(
            "secrets",
            &format!(
                "{}{IDENTITY}",
                provider("aescbc", &[("key2", KEY2), ("key1", KEY1)])
            ),
        )]),
    )?;
    server.restart()?;
    assert_eq!(secret_value(&server, "default", "s1")?, SECRET_VALUE);
    // kube's procedure: read every Secret and replace it unchanged.
    let all = server.kubectl_ok(&["get", "secrets", "-A", "-o", "json"])?;
    server.kubectl_stdin_ok(&["replace", "-f", "-"], &all)?;
    server.stop();
    let raw = raw_sled_value(&store, "/registry/core/secrets/default/s1")?;
    assert!(
        raw.starts_with(b"k8s:enc:aescbc:v1:key2:"),
        "after the rewrite: {:?}",
        String::from_utf8_lossy(&raw[..raw.len().min(40)])
    );

    // key1 dropped: still readable (everything was re-written with key2).
    write(
        &cfg,
        &config(&[(
            "secrets",
            &format!("{}{IDENTITY}", provider("aescbc", &[("key2", KEY2)])),
        )]),
    )?;
    server.restart()?;
    assert_eq!(secret_value(&server, "default", "s1")?, SECRET_VALUE);
    // And a Secret created now is encrypted with key2 too.
    server.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "s2",
        &format!("--from-literal=password={SECRET_VALUE}"),
    ])?;
    server.stop();
    let raw = raw_sled_value(&store, "/registry/core/secrets/default/s2")?;
    assert!(raw.starts_with(b"k8s:enc:aescbc:v1:key2:"));
    Ok(())
}

/// A Secret stored before encryption was configured stays readable (identity
/// listed) and is encrypted by the rewrite, even though the object does not
/// change: the stored value is stale.
#[test]
fn plaintext_secrets_written_before_are_encrypted_by_the_rewrite() -> Result<()> {
    let cfg_dir = tempfile::TempDir::new()?;
    let cfg = cfg_dir.path().join("encryption.yaml");
    // Identity first: nothing encrypted yet (as before the flag was set).
    write(&cfg, &config(&[("secrets", IDENTITY)]))?;
    let cfg_arg = cfg.display().to_string();
    let mut server = Server::start_with(&["--encryption-provider-config", &cfg_arg])?;
    server.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "old",
        &format!("--from-literal=password={SECRET_VALUE}"),
    ])?;
    server.stop();
    let store = server.data_dir().join("store");
    let raw = raw_sled_value(&store, "/registry/core/secrets/default/old")?;
    assert!(raw.starts_with(b"{"), "identity stores JSON");

    write(
        &cfg,
        &config(&[(
            "secrets",
            &format!("{}{IDENTITY}", provider("secretbox", &[("sb1", KEY1)])),
        )]),
    )?;
    server.restart()?;
    assert_eq!(secret_value(&server, "default", "old")?, SECRET_VALUE);
    // Replaced as read: the write happens because the stored form is stale.
    let one = server.kubectl_ok(&["get", "secret", "old", "-o", "json"])?;
    server.kubectl_stdin_ok(&["replace", "-f", "-"], &one)?;
    server.stop();
    let raw = raw_sled_value(&store, "/registry/core/secrets/default/old")?;
    assert!(
        raw.starts_with(b"k8s:enc:secretbox:v1:sb1:"),
        "after the rewrite: {:?}",
        String::from_utf8_lossy(&raw[..raw.len().min(40)])
    );
    server.restart()?;
    assert_eq!(secret_value(&server, "default", "old")?, SECRET_VALUE);
    Ok(())
}

/// A real etcd, or `None` (the test is skipped, saying why) when there is
/// no etcd binary.
fn start_etcd() -> Result<Option<EtcdProcess>> {
    let etcd = EtcdProcess::start()?;
    if etcd.is_none() {
        eprintln!(
            "SKIPPED: no etcd binary (set ETCD_BIN, install Debian's etcd-server, or unpack \
             ../shared/kube); scripts/test.sh installs etcd-server"
        );
    }
    Ok(etcd)
}

/// (b) On a real etcd: the raw etcd value of the Secret starts with
/// `k8s:enc:aescbc:v1:key1:` and lacks the plaintext; ConfigMaps under an
/// aesgcm rule likewise; both read back through the server.
#[test]
fn secrets_are_encrypted_in_etcd() -> Result<()> {
    let Some(etcd) = start_etcd()? else {
        return Ok(());
    };
    let cfg_dir = tempfile::TempDir::new()?;
    let cfg = cfg_dir.path().join("encryption.yaml");
    write(
        &cfg,
        &config(&[
            (
                "secrets",
                &format!("{}{IDENTITY}", provider("aescbc", &[("key1", KEY1)])),
            ),
            ("configmaps", &provider("aesgcm", &[("gcm1", KEY2)])),
        ]),
    )?;
    let cfg_arg = cfg.display().to_string();
    let server = Server::start_with(&[
        "--etcd-servers",
        etcd.url.as_str(),
        "--encryption-provider-config",
        &cfg_arg,
    ])?;
    server.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "s1",
        &format!("--from-literal=password={SECRET_VALUE}"),
    ])?;
    server.kubectl_ok(&[
        "create",
        "configmap",
        "c1",
        &format!("--from-literal=value={CONTROL_VALUE}"),
    ])?;
    assert_eq!(secret_value(&server, "default", "s1")?, SECRET_VALUE);
    let cm = server
        .kubectl_get(&["configmap", "c1"])?
        .context("the ConfigMap")?;
    assert_eq!(cm["data"]["value"], CONTROL_VALUE);

    let rt = tokio::runtime::Runtime::new()?;
    let (secret, configmap) = rt.block_on(async {
        // The raw engine, no encryption layer: the bytes etcd holds at
        // /registry/core/secrets/default/s1.
        let raw: Arc<dyn Storage> = Arc::new(
            EtcdStorage::connect(&EtcdOptions {
                endpoints: vec![etcd.url.clone()],
                prefix: "/registry".into(),
                ..Default::default()
            })
            .await?,
        );
        let s = raw
            .get("/core/secrets/default/s1")
            .await?
            .context("the Secret in etcd")?;
        let c = raw
            .get("/core/configmaps/default/c1")
            .await?
            .context("the ConfigMap in etcd")?;
        anyhow::Ok((s.value.to_vec(), c.value.to_vec()))
    })?;
    let contains =
        |hay: &[u8], needle: &str| hay.windows(needle.len()).any(|w| w == needle.as_bytes());
    assert!(
        secret.starts_with(b"k8s:enc:aescbc:v1:key1:"),
        "{:?}",
        String::from_utf8_lossy(&secret[..secret.len().min(40)])
    );
    assert!(!contains(&secret, SECRET_VALUE) && !contains(&secret, &b64(SECRET_VALUE)));
    assert!(configmap.starts_with(b"k8s:enc:aesgcm:v1:gcm1:"));
    assert!(!contains(&configmap, CONTROL_VALUE));
    drop(server);
    Ok(())
}

/// A bad configuration stops the start, naming the file and the reason.
#[test]
fn an_invalid_configuration_stops_the_start_with_the_file_and_reason() -> Result<()> {
    let dir = tempfile::TempDir::new()?;
    for (name, text, reason) in [
        (
            "short-key.yaml",
            config(&[("secrets", &provider("aescbc", &[("key1", "c2hvcnQ=")]))]),
            "secret is not of the expected length, got 5, expected one of [16 24 32]",
        ),
        (
            "kms.yaml",
            config(&[(
                "secrets",
                "      - kms:\n          name: vault\n          endpoint: unix:///tmp/kms.sock\n",
            )]),
            "KMS providers are not supported",
        ),
    ] {
        let path = dir.path().join(name);
        write(&path, &text)?;
        let mut child = Command::new(ubernetes_bin())
            .arg("serve")
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .arg("--secure-port")
            .arg("0")
            .arg("--bind-address")
            .arg("127.0.0.1")
            .arg("--encryption-provider-config")
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting ubernetes")?;
        // It must exit on its own; kill it (by PID) if it does not.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!("ubernetes serve kept running with {name}");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let out = child.wait_with_output()?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!status.success(), "{name}: {stderr}");
        assert!(
            stderr.contains(&path.display().to_string()) && stderr.contains(reason),
            "{name}: {stderr}"
        );
        assert!(
            !dir.path().join("data").join("store").exists(),
            "the store is not opened with a bad configuration"
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Encrypted by default (no --encryption-provider-config)
// ---------------------------------------------------------------------------

/// What a member's kubeconfig token looks like in the tests below: finding
/// it anywhere in the store means a member credential leaked.
const MEMBER_TOKEN: &str = "member-token-Hq7Xv2Lw9Pn4";
const FEDERATION_SYSTEM: &str = "federation-system";
const GENERATED_CONFIG: &str = "encryption-config.yaml";

/// A member kubeconfig as `ubernetes join` stores it (inline credentials).
fn member_kubeconfig(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {name}\n  cluster:\n    server: \
         https://127.0.0.1:1\nusers:\n- name: {name}\n  user:\n    token: {MEMBER_TOKEN}-{name}\n\
         contexts:\n- name: {name}\n  context:\n    cluster: {name}\n    user: {name}\n\
         current-context: {name}\n"
    )
}

/// Create `federation-system` (if needed) and the member's kubeconfig
/// Secret `NAME-kubeconfig` in it.
fn create_member_secret(server: &Server, name: &str) -> Result<()> {
    if server
        .kubectl_get(&["namespace", FEDERATION_SYSTEM])?
        .is_none()
    {
        server.kubectl_ok(&["create", "namespace", FEDERATION_SYSTEM])?;
    }
    server.kubectl_ok(&[
        "-n",
        FEDERATION_SYSTEM,
        "create",
        "secret",
        "generic",
        &format!("{name}-kubeconfig"),
        &format!("--from-literal=kubeconfig={}", member_kubeconfig(name)),
    ])?;
    Ok(())
}

/// The member's kubeconfig as the API serves it.
fn member_secret_value(server: &Server, name: &str) -> Result<String> {
    let s = server
        .kubectl_get(&[
            "secret",
            &format!("{name}-kubeconfig"),
            "-n",
            FEDERATION_SYSTEM,
        ])?
        .context("the member Secret exists")?;
    let data = s["data"]["kubeconfig"]
        .as_str()
        .context("data.kubeconfig")?;
    Ok(String::from_utf8(
        base64::engine::general_purpose::STANDARD.decode(data)?,
    )?)
}

/// The forms a member's kubeconfig would have in the store if it leaked:
/// the token itself (as any copy in clear would hold it) and the base64
/// that the Secret's JSON carries (what a plaintext store holds).
fn leak_needles(name: &str) -> [String; 2] {
    [
        format!("{MEMBER_TOKEN}-{name}"),
        b64(&member_kubeconfig(name)),
    ]
}

fn member_key(name: &str) -> String {
    format!("/registry/core/secrets/{FEDERATION_SYSTEM}/{name}-kubeconfig")
}

fn server_log(server: &Server) -> Result<String> {
    let path = server
        .data_dir()
        .parent()
        .context("the server's dir")?
        .join("server.log");
    Ok(std::fs::read_to_string(path)?)
}

/// The base64 key of the generated configuration.
fn generated_key(config: &Path) -> Result<String> {
    let text = std::fs::read_to_string(config)?;
    text.lines()
        .find_map(|l| l.trim().strip_prefix("secret: "))
        .map(str::to_string)
        .with_context(|| format!("no key in {text}"))
}

#[test]
fn without_a_flag_member_credentials_are_encrypted_in_the_embedded_store() -> Result<()> {
    let mut server = Server::start_with(&[])?;
    create_member_secret(&server, "east")?;
    assert_eq!(
        member_secret_value(&server, "east")?,
        member_kubeconfig("east")
    );

    // The key: beside the CA, 0600 in the 0700 PKI directory; the log says
    // where, and no plaintext warning.
    let pki = server.data_dir().join("pki");
    let config = pki.join(GENERATED_CONFIG);
    use std::os::unix::fs::PermissionsExt as _;
    for (path, want) in [(&config, 0o600), (&pki, 0o700)] {
        let mode = std::fs::metadata(path)?.permissions().mode() & 0o777;
        assert_eq!(mode, want, "{}: {mode:o}", path.display());
    }
    let key = generated_key(&config)?;
    let log = server_log(&server)?;
    assert!(
        log.contains("Secrets are encrypted at rest with the key in")
            && log.contains(&config.display().to_string()),
        "{log}"
    );
    assert!(!log.contains("are stored unencrypted in"), "{log}");

    // Stopped: no store file holds the token, the kubeconfig's base64 or
    // the key; the value is secretbox's framing.
    server.stop();
    let store = server.data_dir().join("store");
    for needle in leak_needles("east").iter().chain([&key]) {
        let hits = files_containing(&store, needle)?;
        assert!(hits.is_empty(), "{needle:?} found in {hits:?}");
    }
    let raw = raw_sled_value(&store, &member_key("east"))?;
    assert!(
        raw.starts_with(b"k8s:enc:secretbox:v1:key-"),
        "stored as {:?}",
        String::from_utf8_lossy(&raw[..raw.len().min(40)])
    );

    // Without its key (a store restored without the PKI directory) the
    // server refuses to start, saying which file it needs; a new key is
    // made, which cannot read the Secret.
    let saved = server.data_dir().join("saved-encryption-config.yaml");
    std::fs::rename(&config, &saved)?;
    let err = format!("{:#}", server.restart().expect_err("no key, no start"));
    assert!(
        err.contains("does not decrypt with the keys of")
            && err.contains(&config.display().to_string()),
        "{err}"
    );
    std::fs::rename(&saved, &config)?;

    // Restarted with it: the same key (kept, not made anew) reads it back.
    server.restart()?;
    assert_eq!(generated_key(&config)?, key);
    assert_eq!(
        member_secret_value(&server, "east")?,
        member_kubeconfig("east")
    );
    Ok(())
}

/// `--encrypt-secrets-by-default=false` stores plaintext (with the warning,
/// and no key is made); back on the default, those Secrets read through
/// `identity` and are encrypted by a rewrite (kube's documented `kubectl
/// get secrets -A -o json | kubectl replace -f -`).
#[test]
fn the_opt_out_stores_plaintext_which_the_default_encrypts_on_rewrite() -> Result<()> {
    let mut server = Server::start_with(&["--encrypt-secrets-by-default=false"])?;
    create_member_secret(&server, "west")?;
    let config = server.data_dir().join("pki").join(GENERATED_CONFIG);
    assert!(!config.exists(), "no key is made when the default is off");
    let log = server_log(&server)?;
    assert!(
        log.contains("are stored unencrypted in")
            && log.contains("--encrypt-secrets-by-default=false"),
        "{log}"
    );
    server.stop();
    let store = server.data_dir().join("store");
    // The control: in clear (the base64 of data.kubeconfig, as the JSON
    // carries it), the scan of the test above finds it.
    let [_, stored_form] = leak_needles("west");
    assert!(
        !files_containing(&store, &stored_form)?.is_empty(),
        "{stored_form:?} should be in the store in clear"
    );
    assert!(raw_sled_value(&store, &member_key("west"))?.starts_with(b"{"));

    // The default again: the key is made, the old Secret reads (identity),
    // and stays as it was until written.
    server.restart_with(&[])?;
    assert!(config.exists());
    assert_eq!(
        member_secret_value(&server, "west")?,
        member_kubeconfig("west")
    );
    let all = server.kubectl_ok(&["get", "secrets", "-A", "-o", "json"])?;
    server.kubectl_stdin_ok(&["replace", "-f", "-"], &all)?;
    server.stop();
    let raw = raw_sled_value(&store, &member_key("west"))?;
    assert!(
        raw.starts_with(b"k8s:enc:secretbox:v1:key-"),
        "after the rewrite: {:?}",
        String::from_utf8_lossy(&raw[..raw.len().min(40)])
    );
    server.restart()?;
    assert_eq!(
        member_secret_value(&server, "west")?,
        member_kubeconfig("west")
    );
    Ok(())
}

/// On a real etcd with no encryption flag: the member Secret's raw etcd
/// value is secretbox ciphertext without the token or the kubeconfig; a
/// second replica given the first one's PKI directory (as docker-compose
/// mounts it) has the same key and reads it.
#[test]
fn without_a_flag_member_credentials_are_encrypted_in_etcd() -> Result<()> {
    let Some(etcd) = start_etcd()? else {
        return Ok(());
    };
    let flags = ["--etcd-servers", etcd.url.as_str()];
    let a = Server::start_with(&flags)?;
    create_member_secret(&a, "north")?;
    let b = Server::start_with_pki(&flags, &a)?;
    assert_eq!(
        member_secret_value(&b, "north")?,
        member_kubeconfig("north")
    );
    assert_eq!(
        generated_key(&b.data_dir().join("pki").join(GENERATED_CONFIG))?,
        generated_key(&a.data_dir().join("pki").join(GENERATED_CONFIG))?
    );

    let rt = tokio::runtime::Runtime::new()?;
    let raw = rt.block_on(async {
        let raw = EtcdStorage::connect(&EtcdOptions {
            endpoints: vec![etcd.url.clone()],
            prefix: "/registry".into(),
            ..Default::default()
        })
        .await?;
        let kv = raw
            .get(&format!(
                "/core/secrets/{FEDERATION_SYSTEM}/north-kubeconfig"
            ))
            .await?
            .context("the member Secret in etcd")?;
        anyhow::Ok(kv.value.to_vec())
    })?;
    assert!(
        raw.starts_with(b"k8s:enc:secretbox:v1:key-"),
        "{:?}",
        String::from_utf8_lossy(&raw[..raw.len().min(40)])
    );
    for needle in leak_needles("north") {
        assert!(
            !raw.windows(needle.len()).any(|w| w == needle.as_bytes()),
            "{needle:?} is in etcd"
        );
    }
    drop((a, b));
    Ok(())
}
