//! The log backend (`--audit-log-path`, kube's `plugin/pkg/audit/log`): events
//! go through a bounded queue to one writer thread, so a request never waits
//! on the disk; the thread writes them buffered and flushes whenever the
//! queue is empty. A write error is logged and the next event tried again.
//!
//! [`RotatingFile`] rotates like kube-apiserver's (which uses Go's
//! `lumberjack`): past `--audit-log-maxsize` MB (0: 100 MB) the file is
//! renamed `NAME-<UTC 2006-01-02T15-04-05.000>.EXT` and a new one started;
//! backups beyond `--audit-log-maxbackup` (0: no limit) or older than
//! `--audit-log-maxage` days (by the time in their name; 0: no limit) are
//! removed, and with `--audit-log-compress` backups are gzipped. Written by
//! hand because the `file-rotate` crate keeps backups by count *or* by age
//! (its `FileLimit` is one of the two) and names them differently, while
//! kube applies both limits to lumberjack's names. One difference: an event
//! larger than the size limit is written alone in a fresh file, where
//! lumberjack refuses the write and the event would be lost.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::mpsc;

use crate::event::Event;

/// `--audit-log-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One JSON `Event` per line (the default).
    Json,
    /// kube's one-line text form.
    Legacy,
}

/// Rotation limits (lumberjack's `MaxSize`, `MaxBackups`, `MaxAge`,
/// `Compress`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rotation {
    /// Megabytes before rotating; 0 is lumberjack's 100.
    pub max_size_mb: u64,
    /// Backups kept; 0 keeps all.
    pub max_backups: usize,
    /// Days a backup is kept; 0 keeps them forever.
    pub max_age_days: u64,
    /// Gzip backups.
    pub compress: bool,
}

/// Events queued before [`LogBackend::process`] waits (kube's batch buffer
/// size).
const QUEUE: usize = 10_000;
const MEGABYTE: u64 = 1024 * 1024;
/// The backup time format (lumberjack's `2006-01-02T15-04-05.000`).
const BACKUP_TIME_FORMAT: &str = "%Y-%m-%dT%H-%M-%S%.3f";

/// Where events are written: a file (rotated) or stdout (`-`).
enum Target {
    Stdout,
    File(RotatingFile),
}

impl Write for Target {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Target::Stdout => io::stdout().lock().write(buf),
            Target::File(f) => f.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Target::Stdout => io::stdout().lock().flush(),
            Target::File(f) => f.flush(),
        }
    }
}

/// The handle requests send events through (cheap to clone).
#[derive(Clone, Debug)]
pub struct LogBackend {
    tx: mpsc::Sender<Event>,
}

impl LogBackend {
    /// Open `path` (`-` is stdout) and start the writer thread. Fails when
    /// the file cannot be created (the start fails, as kube's).
    pub fn start(path: &Path, format: Format, rotation: Rotation) -> io::Result<LogBackend> {
        let target = if path == Path::new("-") {
            Target::Stdout
        } else {
            Target::File(RotatingFile::open(path.to_path_buf(), rotation)?)
        };
        let (tx, rx) = mpsc::channel(QUEUE);
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || write_loop(rx, target, format))?;
        Ok(LogBackend { tx })
    }

    /// Queue an event; waits only when the queue is full (kube's
    /// `blocking` mode then), so no event is dropped.
    pub async fn process(&self, event: Event) {
        if self.tx.send(event).await.is_err() {
            tracing::error!("audit log writer has stopped; event dropped");
        }
    }

    /// Queue an event from synchronous code (a `Drop`): at once if there is
    /// room, else from a spawned task.
    pub fn process_now(&self, event: Event) {
        match self.tx.try_send(event) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(event)) => {
                let tx = self.tx.clone();
                if let Ok(rt) = tokio::runtime::Handle::try_current() {
                    rt.spawn(async move {
                        let _ = tx.send(event).await;
                    });
                } else {
                    tracing::error!("audit log queue full outside a runtime; event dropped");
                }
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                tracing::error!("audit log writer has stopped; event dropped");
            }
        }
    }
}

fn write_loop(mut rx: mpsc::Receiver<Event>, target: Target, format: Format) {
    let mut out = BufWriter::with_capacity(256 * 1024, target);
    let mut failing = false;
    while let Some(event) = rx.blocking_recv() {
        let mut batch = vec![event];
        while let Ok(more) = rx.try_recv() {
            batch.push(more);
            if batch.len() >= 1000 {
                break;
            }
        }
        let mut result = Ok(());
        for ev in &batch {
            let line = match format {
                Format::Json => ev.to_json_line(),
                Format::Legacy => ev.to_legacy_line(),
            };
            result = result.and(out.write_all(line.as_bytes()));
        }
        result = result.and(out.flush());
        match result {
            Err(err) if !failing => {
                failing = true;
                tracing::error!(error = %err, "cannot write the audit log; retrying with the next event");
            }
            Err(_) => {}
            Ok(()) if failing => {
                failing = false;
                tracing::info!("writing the audit log again");
            }
            Ok(()) => {}
        }
    }
    let _ = out.flush();
}

/// A log file rotated by size, as lumberjack's `Logger`.
pub struct RotatingFile {
    path: PathBuf,
    rotation: Rotation,
    file: Option<File>,
    size: u64,
}

impl RotatingFile {
    /// Open `path` for appending (creating its directory), rotating first if
    /// it is already full.
    ///
    /// As kube-apiserver's `ensureLogFile`: a missing directory is created
    /// 0700 and the file 0600 (the audit log records who did what, and
    /// with `RequestResponse` the bodies, Secrets included). Unlike kube, a
    /// file already there that others may read is tightened to 0600 too,
    /// with a log line.
    pub fn open(path: PathBuf, rotation: Rotation) -> io::Result<RotatingFile> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::DirBuilderExt as _;
                builder.mode(0o700);
            }
            builder.create(dir)?;
        }
        let mut f = RotatingFile {
            path,
            rotation,
            file: None,
            size: 0,
        };
        f.open_existing()?;
        Ok(f)
    }

    fn max(&self) -> u64 {
        match self.rotation.max_size_mb {
            0 => 100 * MEGABYTE,
            mb => mb.saturating_mul(MEGABYTE),
        }
    }

    fn open_existing(&mut self) -> io::Result<()> {
        let file = open_private(&self.path, OpenOptions::new().create(true).append(true))?;
        self.size = file.metadata()?.len();
        self.file = Some(file);
        Ok(())
    }

    /// The backup name for time `t`: `NAME-<time>.EXT` beside the file.
    fn backup_name(&self, t: jiff::Timestamp) -> PathBuf {
        let (stem, ext) = self.stem_ext();
        let time = t
            .to_zoned(jiff::tz::TimeZone::UTC)
            .strftime(BACKUP_TIME_FORMAT)
            .to_string();
        self.path.with_file_name(format!("{stem}-{time}{ext}"))
    }

    fn stem_ext(&self) -> (String, String) {
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match name.rfind('.') {
            Some(i) if i > 0 => (name[..i].to_string(), name[i..].to_string()),
            _ => (name, String::new()),
        }
    }

    /// Close the file, rename it to a backup, open a new one, then remove
    /// and compress backups as the limits say.
    pub fn rotate(&mut self) -> io::Result<()> {
        if let Some(mut f) = self.file.take() {
            f.flush()?;
        }
        let mut backup = self.backup_name(jiff::Timestamp::now());
        // Two rotations within a millisecond: wait for a new name.
        while backup.exists() {
            std::thread::sleep(Duration::from_millis(1));
            backup = self.backup_name(jiff::Timestamp::now());
        }
        std::fs::rename(&self.path, &backup)?;
        tracing::info!(backup = %backup.display(), "rotated the audit log");
        self.open_existing()?;
        if let Err(err) = self.mill() {
            tracing::warn!(error = %err, "cannot clean up old audit log backups");
        }
        Ok(())
    }

    /// The backups beside the file, newest first, with their times.
    pub fn backups(&self) -> io::Result<Vec<(jiff::Timestamp, PathBuf)>> {
        let (stem, ext) = self.stem_ext();
        let prefix = format!("{stem}-");
        let dir = match self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(d) => d.to_path_buf(),
            None => PathBuf::from("."),
        };
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(rest) = name.strip_prefix(&prefix) else {
                continue;
            };
            let Some(time) = rest
                .strip_suffix(&format!("{ext}.gz"))
                .or_else(|| rest.strip_suffix(ext.as_str()))
            else {
                continue;
            };
            let Ok(dt) = jiff::civil::DateTime::strptime(BACKUP_TIME_FORMAT, time) else {
                continue;
            };
            let Ok(ts) = dt.to_zoned(jiff::tz::TimeZone::UTC) else {
                continue;
            };
            out.push((ts.timestamp(), entry.path()));
        }
        out.sort_by_key(|b| std::cmp::Reverse(b.0));
        Ok(out)
    }

    /// lumberjack's `millRunOnce`: drop backups past the count and age
    /// limits, gzip the rest when asked.
    fn mill(&self) -> io::Result<()> {
        let mut backups = self.backups()?;
        let mut remove = Vec::new();
        if self.rotation.max_backups > 0 && backups.len() > self.rotation.max_backups {
            remove.extend(backups.split_off(self.rotation.max_backups));
        }
        if self.rotation.max_age_days > 0 {
            let cutoff = jiff::Timestamp::now()
                .checked_sub(jiff::SignedDuration::from_hours(
                    i64::try_from(self.rotation.max_age_days.saturating_mul(24))
                        .unwrap_or(i64::MAX / 3600),
                ))
                .unwrap_or(jiff::Timestamp::MIN);
            let (keep, old): (Vec<_>, Vec<_>) = backups.into_iter().partition(|b| b.0 >= cutoff);
            backups = keep;
            remove.extend(old);
        }
        for (_, path) in remove {
            if let Err(err) = std::fs::remove_file(&path) {
                tracing::warn!(file = %path.display(), error = %err, "cannot remove an old audit log");
            }
        }
        if self.rotation.compress {
            for (_, path) in backups {
                if path.extension().is_some_and(|e| e == "gz") {
                    continue;
                }
                gzip(&path)?;
            }
        }
        Ok(())
    }
}

/// Open `path` with `options`, creating it with mode 0600; an existing file
/// that group or others may access is set to 0600.
fn open_private(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
        options.mode(0o600);
        let file = options.open(path)?;
        let mode = file.metadata()?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            tracing::warn!(
                file = %path.display(),
                was = format!("{mode:o}"),
                "the audit log was readable by other users; set its mode to 0600"
            );
        }
        Ok(file)
    }
    #[cfg(not(unix))]
    options.open(path)
}

/// `FILE` → `FILE.gz` (mode 0600), then remove `FILE`.
fn gzip(path: &Path) -> io::Result<()> {
    let mut gz_name = path.as_os_str().to_owned();
    gz_name.push(".gz");
    let mut input = File::open(path)?;
    let output = open_private(
        Path::new(&gz_name),
        OpenOptions::new().write(true).create(true).truncate(true),
    )?;
    let mut enc = flate2::write::GzEncoder::new(output, flate2::Compression::default());
    io::copy(&mut input, &mut enc)?;
    enc.finish()?.sync_all()?;
    std::fs::remove_file(path)
}

impl Write for RotatingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.size + buf.len() as u64 > self.max() && self.size > 0 {
            self.rotate()?;
        }
        if self.file.is_none() {
            self.open_existing()?;
        }
        let file = self
            .file
            .as_mut()
            .ok_or_else(|| io::Error::other("audit log not open"))?;
        let n = file.write(buf)?;
        self.size += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rotation(max_backups: usize, compress: bool) -> Rotation {
        Rotation {
            max_size_mb: 1,
            max_backups,
            max_age_days: 0,
            compress,
        }
    }

    fn write_mb(f: &mut RotatingFile, n: usize) {
        let line = vec![b'x'; 1023];
        for _ in 0..n * 1024 {
            f.write_all(&line).expect("write");
            f.write_all(b"\n").expect("write");
        }
        f.flush().expect("flush");
    }

    #[test]
    fn past_max_size_the_file_is_renamed_with_a_utc_time_and_a_new_one_started() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("audit.log");
        let mut f = RotatingFile::open(path.clone(), rotation(0, false)).expect("open");
        write_mb(&mut f, 3);
        let backups = f.backups().expect("list");
        assert_eq!(backups.len(), 2, "{backups:?}");
        for (_, b) in &backups {
            let name = b.file_name().expect("name").to_string_lossy().into_owned();
            assert!(
                name.starts_with("audit-") && name.ends_with(".log"),
                "{name}"
            );
            assert!(std::fs::metadata(b).expect("meta").len() <= MEGABYTE);
        }
        let len = std::fs::metadata(&path).expect("meta").len();
        assert!(len > 0 && len <= MEGABYTE);
    }

    #[test]
    fn max_backups_keeps_the_newest_and_compress_gzips_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("audit.log");
        let mut f = RotatingFile::open(path.clone(), rotation(2, true)).expect("open");
        write_mb(&mut f, 5);
        let backups = f.backups().expect("list");
        assert_eq!(backups.len(), 2, "{backups:?}");
        for (_, b) in &backups {
            assert!(b.to_string_lossy().ends_with(".log.gz"), "{}", b.display());
            let mut d = flate2::read::GzDecoder::new(File::open(b).expect("open"));
            let mut text = String::new();
            io::Read::read_to_string(&mut d, &mut text).expect("gunzip");
            assert!(text.len() as u64 > MEGABYTE / 2 && text.starts_with("xxx"));
            assert_private(b);
        }
        assert_private(&path);
    }

    #[cfg(unix)]
    fn assert_private(path: &Path) {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(path).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", path.display());
    }

    #[cfg(not(unix))]
    fn assert_private(_: &Path) {}

    #[cfg(unix)]
    #[test]
    fn a_new_directory_is_0700_and_a_readable_log_is_tightened() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("logs").join("audit.log");
        drop(RotatingFile::open(path.clone(), rotation(0, false)).expect("open"));
        let dir_mode = std::fs::metadata(dir.path().join("logs"))
            .expect("stat")
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        assert_private(&path);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        drop(RotatingFile::open(path.clone(), rotation(0, false)).expect("reopen"));
        assert_private(&path);
    }

    #[test]
    fn backups_older_than_max_age_are_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("audit.log");
        let old = dir.path().join("audit-2020-01-01T00-00-00.000.log");
        std::fs::write(&old, "old\n").expect("write");
        let other = dir.path().join("unrelated-2020-01-01T00-00-00.000.log");
        std::fs::write(&other, "keep\n").expect("write");
        let mut f = RotatingFile::open(
            path,
            Rotation {
                max_size_mb: 1,
                max_backups: 0,
                max_age_days: 30,
                compress: false,
            },
        )
        .expect("open");
        write_mb(&mut f, 2);
        assert!(!old.exists(), "the 2020 backup is past 30 days");
        assert!(other.exists(), "only this log's backups are touched");
        assert_eq!(f.backups().expect("list").len(), 1);
    }

    #[tokio::test]
    async fn the_backend_writes_json_lines_from_a_thread() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sub/audit.log");
        let backend = LogBackend::start(&path, Format::Json, Rotation::default()).expect("start");
        for i in 0..3 {
            let ev = Event::new(
                crate::policy::Level::Metadata,
                format!("id-{i}"),
                jiff::Timestamp::now(),
            );
            backend.process(ev).await;
        }
        let mut lines = Vec::new();
        for _ in 0..100 {
            lines = std::fs::read_to_string(&path)
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect();
            if lines.len() == 3 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(lines.len(), 3);
        let v: serde_json::Value = serde_json::from_str(&lines[2]).expect("json");
        assert_eq!(v["auditID"], "id-2");
    }
}
