//! A throw-away etcd server for tests: the real `etcd` binary on free
//! loopback ports with a temporary data directory, killed (by PID) and
//! removed on drop. Used by this crate's etcd conformance tests and by the
//! end-to-end tests of `ubernetes serve --etcd-servers`.
//!
//! Which binary: `$ETCD_BIN` if set, else `etcd` on `PATH` (Debian's
//! `etcd-server`), else `~/.cache/ubernetes-kube/bin/etcd` (the etcd that
//! `../shared/kube` unpacks). [`EtcdProcess::start`] returns `None` when
//! there is none, so a test can say it is skipped.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running etcd, stopped when dropped.
#[derive(Debug)]
pub struct EtcdProcess {
    child: Child,
    dir: PathBuf,
    /// `http://127.0.0.1:PORT`, for `--etcd-servers`.
    pub url: String,
    /// The binary that runs.
    pub binary: PathBuf,
}

/// The etcd binary to test with, if any (see the module docs).
pub fn find_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ETCD_BIN").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join("etcd");
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    let home = std::env::var_os("HOME")?;
    let cached = Path::new(&home).join(".cache/ubernetes-kube/bin/etcd");
    cached.is_file().then_some(cached)
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl EtcdProcess {
    /// Start etcd and wait until its client port accepts connections.
    /// `Ok(None)`: no etcd binary on this machine (the caller skips).
    pub fn start() -> std::io::Result<Option<Self>> {
        Self::start_inner(None)
    }

    /// [`EtcdProcess::start`] for test `test`: says which etcd runs, or why
    /// the test is skipped (`None`: no binary); panics if etcd fails to
    /// start.
    pub fn start_for_test(test: &str) -> Option<Self> {
        match Self::start() {
            Ok(Some(etcd)) => {
                eprintln!("{test}: etcd {} at {}", etcd.binary.display(), etcd.url);
                Some(etcd)
            }
            Ok(None) => {
                eprintln!(
                    "SKIPPED {test}: no etcd binary (set ETCD_BIN, install Debian's etcd-server, \
                     or unpack ../shared/kube); scripts/test.sh installs etcd-server"
                );
                None
            }
            Err(e) => panic!("{test}: starting etcd: {e}"),
        }
    }

    /// Start etcd on an existing data dir (e.g. one `etcdctl snapshot
    /// restore` made); the dir is left in place when the process stops.
    /// `Ok(None)`: no etcd binary on this machine.
    pub fn start_on(data_dir: &Path) -> std::io::Result<Option<Self>> {
        Self::start_inner(Some(data_dir))
    }

    fn start_inner(data_dir: Option<&Path>) -> std::io::Result<Option<Self>> {
        let Some(binary) = find_binary() else {
            return Ok(None);
        };
        let client = free_port()?;
        let mut peer = free_port()?;
        while peer == client {
            peer = free_port()?;
        }
        let dir = std::env::temp_dir().join(format!(
            "ubernetes-etcd-{}-{client}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&dir)?;
        let log = std::fs::File::create(dir.join("etcd.log"))?;
        let url = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let child = Command::new(&binary)
            .arg("--name=test")
            .arg(format!(
                "--data-dir={}",
                data_dir
                    .map_or_else(|| dir.join("data"), Path::to_path_buf)
                    .display()
            ))
            .arg(format!("--listen-client-urls={url}"))
            .arg(format!("--advertise-client-urls={url}"))
            .arg(format!("--listen-peer-urls={peer_url}"))
            .arg(format!("--initial-advertise-peer-urls={peer_url}"))
            .arg(format!("--initial-cluster=test={peer_url}"))
            .arg("--logger=zap")
            .arg("--log-level=warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        let mut etcd = Self {
            child,
            dir,
            url,
            binary,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if std::net::TcpStream::connect(("127.0.0.1", client)).is_ok() {
                return Ok(Some(etcd));
            }
            if let Some(status) = etcd.child.try_wait()? {
                return Err(std::io::Error::other(format!(
                    "etcd exited with {status}: {}",
                    etcd.log()
                )));
            }
            if Instant::now() > deadline {
                return Err(std::io::Error::other(format!(
                    "etcd did not listen within 30 s: {}",
                    etcd.log()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The etcd process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What etcd logged so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("etcd.log")).unwrap_or_default()
    }
}

impl Drop for EtcdProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
