//! # bench
//!
//! The benchmark program (SPEC §5) and the crash harness (SPEC §6). It
//! prints figures; it is not a test. Subcommands:
//!
//! - `bench api`: create/get/update/patch/list/watch throughput and latency
//!   against any Kubernetes API endpoint (a kubeconfig), or against a
//!   `ubernetes serve` it starts itself (`--start`), with the server's CPU
//!   and memory read from `/proc` (see [`api`]); with `--versus-kube`, the
//!   etcd engine against kube-apiserver on the same etcd, as ratios (see
//!   [`compare`]);
//! - `bench crash`: SIGKILL during a write storm, restart, check that every
//!   acknowledged write is there, in a loop (see [`crash`]); with `--etcd`
//!   on the etcd engine, etcd itself killed too in some rounds;
//! - `bench gate`: the speed gate of the test command: five short
//!   `--versus-kube` pairs, per verb the median ratio ours / kube, failing
//!   when one drops more than 30 % below the figure recorded in
//!   `docs/benchmarks.md` (see [`gate`]);
//! - `bench federation`: propagation to M member servers it starts itself:
//!   one-object latency, bulk, idle CPU and host restart (see [`federation`]);
//!   `--pull` joins the members in pull mode with an agent each, and
//!   `--compare-push-pull` runs both (see [`federation_pull`]);
//!   `--simulated-members M` joins M simulated member APIs served by the
//!   bench itself instead of member processes (see [`member_sim`]);
//! - `bench member-view`: merged lists through `federation@all` over M
//!   members it starts itself, healthy and with one member hung (see
//!   [`member_view`]);
//!
//! Figures go to stdout, progress to stderr. Start reading at [`api`] and
//! [`crash`]; [`server`] starts and kills the server process.
#![forbid(unsafe_code)]

mod api;
mod client;
mod compare;
mod crash;
mod etcd;
mod federation;
mod federation_pull;
mod gate;
mod kube_apiserver;
mod member_sim;
mod member_view;
mod procfs;
mod server;
mod stats;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};

use crate::server::{ManagedServer, ServerSpec};

/// Benchmarks and the crash harness for Ubernetes (or any Kubernetes API).
#[derive(Debug, Parser)]
#[command(name = "bench", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// API throughput and latency: create, get, update, merge patch, list
    /// (full, by label selector, paged) and watch delivery, with server CPU
    /// and memory when the server process can be read.
    Api(ApiArgs),
    /// Crash harness: a write storm, SIGKILL at a random moment, restart on
    /// the same data dir; every acknowledged write must survive. Prints
    /// `crash: N rounds, A acknowledged writes, L lost`; exits non-zero on
    /// any loss or failure.
    Crash(CrashArgs),
    /// Federation benchmarks (SPEC §5): starts a host and M member servers,
    /// joins them, and measures propagation latency, bulk propagation, idle
    /// CPU in sync, and a host restart (time to Ready, member writes sent).
    Federation(FederationArgs),
    /// The member view's cost (SPEC §5, issue 25): starts a host and M
    /// members, puts N ConfigMaps in each, and times merged lists through
    /// federation@all (paged as kubectl pages, and unpaged) with the host's
    /// RSS, then with one member hung (SIGSTOP): the answer at the bound.
    MemberView(MemberViewArgs),
    /// The speed gate: five short pairs of `api --versus-kube` (ours on
    /// etcd, kube-apiserver on the same etcd); fails (exit 1) when a verb's
    /// median throughput ratio ours / kube drops more than 30 % below the
    /// figure recorded in docs/benchmarks.md. Exit 2 and `SKIPPED:` without
    /// ../shared/kube.
    Gate(GateArgs),
}

#[derive(Debug, Args)]
struct GateArgs {
    /// Pairs (ours + kube-apiserver, the order alternating) to run; each
    /// verb is judged by the median of its ratios over them.
    #[arg(long, default_value_t = 5)]
    pairs: usize,

    /// The file with the recorded figures.
    #[arg(long, value_name = "FILE", default_value = "docs/benchmarks.md")]
    figures: PathBuf,

    /// The info string of the fenced block of FILE that records them
    /// (lines `verb ratio`).
    #[arg(long, value_name = "NAME", default_value = "gate")]
    block: String,

    /// Fail when a verb's median is more than this many percent below its
    /// recorded figure.
    #[arg(long, value_name = "PERCENT", default_value_t = 30.0)]
    max_drop_percent: f64,

    /// Measure and write the medians into the block (after a real
    /// speed-up, or with another build) instead of judging them.
    #[arg(long)]
    write: bool,

    /// Concurrent clients for create, get, update and patch.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,

    /// ConfigMaps (1 KiB each) stored in each run.
    #[arg(long, default_value_t = 1000)]
    objects: usize,

    /// Watchers in the watch scenario.
    #[arg(long, default_value_t = 20)]
    watchers: usize,

    /// Writes each watcher must receive.
    #[arg(long, default_value_t = 200)]
    watch_events: usize,

    /// Repetitions of each list scenario.
    #[arg(long, default_value_t = 30)]
    list_repeats: usize,

    /// The shared/kube/kube.sh that unpacks the upstream binaries (default
    /// as `api --versus-kube`).
    #[arg(long, value_name = "PATH")]
    kube_sh: Option<PathBuf>,

    /// The etcd binary. Default: kube.sh's etcd 3.5.30.
    #[arg(long, value_name = "PATH")]
    etcd_bin: Option<PathBuf>,

    #[command(flatten)]
    server: ServerArgs,
}

/// How to start an `ubernetes serve`.
#[derive(Debug, Args)]
struct ServerArgs {
    /// The `ubernetes` binary to start. Default: `ubernetes` in the same
    /// directory as this `bench` binary (so `target/release/bench` starts
    /// `target/release/ubernetes`).
    #[arg(long, value_name = "PATH")]
    ubernetes_bin: Option<PathBuf>,

    /// The `--log-level` of the started server (its log goes to
    /// server.log in its temporary directory).
    #[arg(long, value_name = "FILTER", default_value = "warn")]
    server_log_level: String,

    /// One more flag for the started `ubernetes serve`, e.g.
    /// `--server-arg=--storage-cache-mib=16` (repeat for several).
    #[arg(long = "server-arg", value_name = "FLAG", allow_hyphen_values = true)]
    server_args: Vec<String>,
}

impl ServerArgs {
    fn spec(&self) -> ServerSpec {
        ServerSpec {
            bin: self
                .ubernetes_bin
                .clone()
                .unwrap_or_else(server::default_bin),
            log_level: self.server_log_level.clone(),
            extra_args: self.server_args.clone(),
        }
    }
}

#[derive(Debug, Args)]
struct ApiArgs {
    /// Kubeconfig of the API endpoint to measure. Not needed with --start
    /// (the started server's admin kubeconfig is used) or --versus-kube.
    #[arg(long, value_name = "FILE", required_unless_present_any = ["start", "versus_kube"])]
    kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use. Default: its current-context.
    #[arg(long, value_name = "NAME")]
    context: Option<String>,

    /// Concurrent clients for create, get, update and patch (each its own
    /// HTTP/1.1 connection).
    #[arg(long, default_value_t = 32)]
    concurrency: usize,

    /// ConfigMaps to store (1 KiB of data each); also the size of the lists.
    #[arg(long, default_value_t = 10_000)]
    objects: usize,

    /// Concurrent watchers in the watch-delivery scenario (0 skips it).
    #[arg(long, default_value_t = 1000)]
    watchers: usize,

    /// Writes the watchers must each receive in the watch scenario.
    #[arg(long, default_value_t = 100)]
    watch_events: usize,

    /// How many times each list scenario is repeated.
    #[arg(long, default_value_t = 20)]
    list_repeats: usize,

    /// Keep the bench namespace and its objects at the end (default: delete it).
    #[arg(long)]
    keep: bool,

    /// Run only these scenarios (comma-separated names or groups: `list`
    /// is the three lists, `apply` both applies); default: all.
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    only: Vec<String>,

    /// Read CPU time and memory of this existing server process (Linux
    /// /proc) for the per-scenario CPU and the memory figures.
    #[arg(long, value_name = "PID", conflicts_with = "start")]
    server_pid: Option<u32>,

    /// Start `ubernetes serve` on a temporary data dir and a free port,
    /// measure it, and stop it at the end.
    #[arg(long)]
    start: bool,

    /// The etcd engine against kube-apiserver on the same etcd, in one run:
    /// start etcd and measure `ubernetes serve --etcd-servers` (prefix
    /// /ubernetes), then kube-apiserver (prefix /registry), and print each
    /// figure with the ratio ours / kube. Needs ../shared/kube (prints
    /// `SKIPPED:` and exits with 2 without it).
    #[arg(long, conflicts_with_all = ["start", "kubeconfig", "server_pid"])]
    versus_kube: bool,

    /// With --versus-kube: the shared/kube/kube.sh that unpacks the upstream
    /// binaries. Default: $UBERNETES_KUBE_SH, else shared/kube/kube.sh in a
    /// parent directory of the working directory or of this program.
    #[arg(long, value_name = "PATH")]
    kube_sh: Option<PathBuf>,

    /// With --versus-kube: the etcd binary. Default: kube.sh's etcd 3.5.30.
    #[arg(long, value_name = "PATH")]
    etcd_bin: Option<PathBuf>,

    /// With --versus-kube: measure kube-apiserver first (default: ours first).
    #[arg(long)]
    kube_first: bool,

    /// With --versus-kube: our store, `etcd` (the same etcd as kube's, the
    /// default) or `sled` (the embedded store; kube stays on etcd).
    #[arg(long, value_enum, value_name = "ENGINE")]
    ours_engine: Option<compare::OursEngine>,

    #[command(flatten)]
    server: ServerArgs,
}

#[derive(Debug, Args)]
struct FederationArgs {
    /// Member clusters (each its own `ubernetes serve` process) to start and join.
    #[arg(long, default_value_t = 3)]
    members: usize,

    /// ConfigMaps (1 KiB each) in the bulk scenario.
    #[arg(long, default_value_t = 10_000)]
    objects: usize,

    /// Concurrent creators in the bulk scenario.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,

    /// Repetitions of the one-object latency scenario.
    #[arg(long, default_value_t = 50)]
    single_repeats: usize,

    /// Seconds of idle measurement with every member joined and in sync.
    #[arg(long, default_value_t = 30)]
    idle_seconds: u64,

    /// The host's --cluster-monitor-period (how often members are probed):
    /// the server's default, so the idle and write figures are the ones a
    /// deployment sees (the first probe of a joined Cluster is at once at
    /// any period, so the join does not wait for it).
    #[arg(long, value_name = "DURATION", default_value = "40s")]
    cluster_monitor_period: String,

    /// The members' --default-watch-cache-size (members are kept small).
    #[arg(long, value_name = "EVENTS", default_value_t = 1000)]
    member_watch_cache_size: usize,

    /// The member processes' `--worker-threads` (0, the default: not
    /// passed, the server's default of one runtime worker per CPU). The
    /// members stand for clusters of their own but share this machine's
    /// cores with the host and each other; 1 sizes each member's runtime
    /// to that share, as a CPU-limited deployment would (Go sizes
    /// GOMAXPROCS to a container's CPU limit). The host keeps its default.
    #[arg(long, value_name = "N", default_value_t = 0)]
    member_worker_threads: usize,

    /// Upper bound, in seconds, of every wait (readiness, propagation).
    #[arg(long, default_value_t = 300)]
    timeout_seconds: u64,

    /// Skip the host restart scenario.
    #[arg(long)]
    skip_restart: bool,

    /// Join the members in pull mode: `ubernetes join member-I --pull` and
    /// one `ubernetes agent` per member (the host is given no member
    /// address); the agents' CPU and memory are measured too.
    #[arg(long)]
    pull: bool,

    /// Run push mode, then pull mode (fresh servers each), and print both
    /// runs' figures in one table.
    #[arg(long, conflicts_with = "pull")]
    compare_push_pull: bool,

    /// Join this many SIMULATED members instead of starting member
    /// processes: member APIs served by this bench process (see
    /// member_sim.rs; issue 21 item 5). Replaces --members; every printed
    /// line starts with `[simulated]`.
    #[arg(long, value_name = "M", conflicts_with_all = ["pull", "compare_push_pull", "members"])]
    simulated_members: Option<usize>,

    #[command(flatten)]
    server: ServerArgs,
}

impl FederationArgs {
    /// The modes to run, in order.
    fn modes(&self) -> Vec<federation::Mode> {
        use federation::Mode;
        if self.simulated_members.is_some() {
            return vec![Mode::Simulated];
        }
        match (self.pull, self.compare_push_pull) {
            (_, true) => vec![Mode::Push, Mode::Pull],
            (true, false) => vec![Mode::Pull],
            (false, false) => vec![Mode::Push],
        }
    }
}

#[derive(Debug, Args)]
struct MemberViewArgs {
    /// Member clusters (each its own `ubernetes serve` process) to start and join.
    #[arg(long, default_value_t = 10)]
    members: usize,

    /// ConfigMaps (1 KiB each) created directly in each member.
    #[arg(long, default_value_t = 1000)]
    per_member: usize,

    /// Concurrent creators while filling the members.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,

    /// Repetitions of each list scenario with every member healthy.
    #[arg(long, default_value_t = 10)]
    repeats: usize,

    /// Repetitions of each list with one member hung (each costs ~5 s).
    #[arg(long, default_value_t = 3)]
    slow_repeats: usize,

    /// The members' --default-watch-cache-size.
    #[arg(long, value_name = "EVENTS", default_value_t = 1000)]
    member_watch_cache_size: usize,

    /// Upper bound, in seconds, of every wait (readiness, join).
    #[arg(long, default_value_t = 300)]
    timeout_seconds: u64,

    #[command(flatten)]
    server: ServerArgs,
}

#[derive(Debug, Args)]
struct CrashArgs {
    /// Rounds of write storm, SIGKILL, restart and checks.
    #[arg(long, default_value_t = 10)]
    rounds: usize,

    /// Concurrent writers in each storm.
    #[arg(long, default_value_t = 8)]
    writers: usize,

    /// Earliest moment of the kill after the storm starts, in milliseconds.
    #[arg(long, default_value_t = 300)]
    kill_min_ms: u64,

    /// Latest moment of the kill after the storm starts, in milliseconds.
    #[arg(long, default_value_t = 1500)]
    kill_max_ms: u64,

    /// Also re-check every earlier round's objects every this many rounds
    /// (always after the last round); 0: only after the last round.
    #[arg(long, default_value_t = 10)]
    full_check_every: usize,

    /// Run the server on the etcd engine, on a real etcd the harness starts
    /// (and SIGKILLs too every --etcd-kill-every rounds); the full checks
    /// also read every acknowledged write back from etcd itself.
    #[arg(long, conflicts_with = "etcd_servers")]
    etcd: bool,

    /// Run the server on the etcd engine with this etcd (not killed by the
    /// harness), e.g. `http://127.0.0.1:2379`.
    #[arg(long, value_name = "URL")]
    etcd_servers: Option<String>,

    /// The server's --etcd-prefix. Default: /registry on a started etcd,
    /// /bench-crash-XXXXXX (fresh) on a given one.
    #[arg(long, value_name = "PREFIX")]
    etcd_prefix: Option<String>,

    /// The etcd binary for --etcd. Default: the etcd 3.5.30 of
    /// ../shared/kube (unpacked by its kube.sh), else `etcd` on PATH.
    #[arg(long, value_name = "PATH")]
    etcd_bin: Option<PathBuf>,

    /// With --etcd: every this many rounds SIGKILL etcd too (before the
    /// server) and restart it on its data dir; 0: never. Default: 5.
    #[arg(long, value_name = "N")]
    etcd_kill_every: Option<usize>,

    #[command(flatten)]
    server: ServerArgs,
}

/// `--etcd-kill-every` when not given.
const DEFAULT_ETCD_KILL_EVERY: usize = 5;

impl ApiArgs {
    /// Flags that only mean something with --versus-kube.
    fn check(&self) -> Result<()> {
        if !self.versus_kube
            && (self.kube_sh.is_some()
                || self.etcd_bin.is_some()
                || self.kube_first
                || self.ours_engine.is_some())
        {
            bail!("--kube-sh, --etcd-bin, --kube-first and --ours-engine go with --versus-kube");
        }
        Ok(())
    }
}

impl CrashArgs {
    /// How often etcd is killed too: only an etcd the harness started
    /// (`--etcd`) can be, every 5 rounds unless told otherwise.
    fn etcd_kill_every(&self) -> Result<usize> {
        match (self.etcd, self.etcd_kill_every) {
            (true, every) => Ok(every.unwrap_or(DEFAULT_ETCD_KILL_EVERY)),
            (false, Some(_)) => {
                bail!("--etcd-kill-every needs --etcd (an etcd the harness starts and can kill)")
            }
            (false, None) => Ok(0),
        }
    }

    /// Flags that only mean something with --etcd.
    fn check(&self) -> Result<()> {
        if !self.etcd && self.etcd_bin.is_some() {
            bail!("--etcd-bin goes with --etcd");
        }
        self.etcd_kill_every().map(|_| ())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bench: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Cmd::Api(args) => run_api(args).await,
        Cmd::Crash(args) => run_crash(args).await,
        Cmd::Federation(args) => run_federation(args).await,
        Cmd::MemberView(args) => run_member_view(args).await,
        Cmd::Gate(args) => run_gate(args).await,
    }
}

async fn run_api(args: ApiArgs) -> Result<ExitCode> {
    args.check()?;
    let opts = api::ApiOptions {
        concurrency: args.concurrency,
        objects: args.objects,
        watchers: args.watchers,
        watch_events: args.watch_events,
        list_repeats: args.list_repeats,
        keep: args.keep,
        only: args.only,
    };
    if args.versus_kube {
        let versus = compare::VersusOptions {
            kube_sh: args.kube_sh,
            etcd_bin: args.etcd_bin,
            server: args.server.spec(),
            kube_first: args.kube_first,
        };
        return match args.ours_engine.unwrap_or_default() {
            compare::OursEngine::Etcd => compare::run(&opts, &versus).await,
            engine => compare::run_on(&opts, &versus, engine).await,
        };
    }
    let mut started = None;
    let (client, process, target) = if args.start {
        let server = ManagedServer::start(args.server.spec()).await?;
        let client = server.client().await?;
        let process = server.process();
        let target = format!(
            "{} (started: pid {}, kubeconfig {})",
            server.url(),
            process.as_ref().map_or(0, |p| p.pid()),
            server.kubeconfig().display()
        );
        started = Some(server);
        (client, process, target)
    } else {
        let path = args
            .kubeconfig
            .context("--kubeconfig or --start is required")?;
        let client = client::from_kubeconfig(&path, args.context.as_deref()).await?;
        let process = args.server_pid.map(procfs::Process::new);
        if let Some(p) = &process {
            p.sample()
                .with_context(|| format!("--server-pid {}", p.pid()))?;
        }
        (client, process, format!("kubeconfig {}", path.display()))
    };
    println!(
        "bench api: {target}; concurrency {}, objects {}, watchers {} x {} writes, lists x {}",
        opts.concurrency, opts.objects, opts.watchers, opts.watch_events, opts.list_repeats
    );
    let result = api::run(&client, process.as_ref(), &opts).await;
    if let Some(mut server) = started {
        server.stop().await;
    }
    let report = result?;
    for line in report.memory_lines() {
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

async fn run_gate(args: GateArgs) -> Result<ExitCode> {
    if !(0.0..100.0).contains(&args.max_drop_percent) {
        bail!("--max-drop-percent must be at least 0 and below 100");
    }
    let opts = gate::GateOptions {
        pairs: args.pairs,
        api: api::ApiOptions {
            concurrency: args.concurrency,
            objects: args.objects,
            watchers: args.watchers,
            watch_events: args.watch_events,
            list_repeats: args.list_repeats,
            keep: false,
            // The gate judges these; the apply scenarios would only add time.
            only: gate::VERBS.iter().map(|v| v.to_string()).collect(),
        },
        versus: compare::VersusOptions {
            kube_sh: args.kube_sh,
            etcd_bin: args.etcd_bin,
            server: args.server.spec(),
            kube_first: false,
        },
        figures: args.figures,
        block: args.block,
        max_drop_percent: args.max_drop_percent,
        write: args.write,
    };
    gate::run(&opts).await
}

async fn run_federation(args: FederationArgs) -> Result<ExitCode> {
    let modes = args.modes();
    let spec = args.server.spec();
    let opts = federation::FederationOptions {
        bin: spec.bin,
        members: args.simulated_members.unwrap_or(args.members),
        objects: args.objects,
        concurrency: args.concurrency,
        single_repeats: args.single_repeats,
        idle_seconds: args.idle_seconds,
        monitor_period: args.cluster_monitor_period,
        member_watch_cache: args.member_watch_cache_size,
        member_worker_threads: args.member_worker_threads,
        log_level: spec.log_level,
        timeout: std::time::Duration::from_secs(args.timeout_seconds),
        skip_restart: args.skip_restart,
        server_args: spec.extra_args,
    };
    println!(
        "bench federation: {} members, {} objects, concurrency {}, monitor period {}, member watch cache {}, member worker threads {}",
        opts.members,
        opts.objects,
        opts.concurrency,
        opts.monitor_period,
        opts.member_watch_cache,
        match opts.member_worker_threads {
            0 => "default".to_owned(),
            n => n.to_string(),
        }
    );
    federation::run_modes(&opts, &modes).await?;
    Ok(ExitCode::SUCCESS)
}

async fn run_member_view(args: MemberViewArgs) -> Result<ExitCode> {
    let spec = args.server.spec();
    let opts = member_view::MemberViewOptions {
        federation: federation::FederationOptions {
            bin: spec.bin,
            members: args.members,
            objects: 0,
            concurrency: args.concurrency,
            single_repeats: 0,
            idle_seconds: 0,
            monitor_period: "1s".to_string(),
            member_watch_cache: args.member_watch_cache_size,
            member_worker_threads: 0,
            log_level: spec.log_level,
            timeout: std::time::Duration::from_secs(args.timeout_seconds),
            skip_restart: true,
            server_args: spec.extra_args,
        },
        per_member: args.per_member,
        repeats: args.repeats,
        slow_repeats: args.slow_repeats,
    };
    member_view::run(&opts).await?;
    Ok(ExitCode::SUCCESS)
}

async fn run_crash(args: CrashArgs) -> Result<ExitCode> {
    if args.rounds == 0 || args.writers == 0 {
        bail!("--rounds and --writers must be at least 1");
    }
    if args.kill_max_ms < args.kill_min_ms {
        bail!("--kill-max-ms must not be below --kill-min-ms");
    }
    args.check()?;
    let kill_every = args.etcd_kill_every()?;
    let mut server = args.server.spec();
    let mut started_etcd = None;
    let etcd = if args.etcd {
        let bin = etcd::find_etcd(args.etcd_bin.as_deref())
            .await?
            .context("--etcd: no etcd binary (pass --etcd-bin, install Debian's etcd-server, or provide ../shared/kube)")?;
        let e = etcd::ManagedEtcd::start(bin).await?;
        let url = e.url();
        started_etcd = Some(e);
        Some(crash::EtcdCheck {
            url,
            prefix: args.etcd_prefix.unwrap_or_else(|| "/registry".into()),
            kill_every,
        })
    } else {
        args.etcd_servers.map(|url| crash::EtcdCheck {
            url,
            prefix: args.etcd_prefix.unwrap_or_else(|| {
                format!("/bench-crash-{:06x}", rand::random::<u32>() & 0xff_ffff)
            }),
            kill_every: 0,
        })
    };
    if let Some(e) = &etcd {
        server.extra_args.extend([
            "--etcd-servers".to_string(),
            e.url.clone(),
            "--etcd-prefix".to_string(),
            e.prefix.clone(),
        ]);
        println!(
            "bench crash: etcd engine, etcd {} {} (pid {}), prefix {}, etcd killed too every {} rounds",
            started_etcd
                .as_ref()
                .map_or("(given)".to_string(), |s| s.bin().display().to_string()),
            e.url,
            started_etcd.as_ref().and_then(|s| s.pid()).unwrap_or(0),
            e.prefix,
            e.kill_every
        );
    }
    let opts = crash::CrashOptions {
        rounds: args.rounds,
        writers: args.writers,
        kill_after_ms: (args.kill_min_ms, args.kill_max_ms),
        full_check_every: args.full_check_every,
        server,
        etcd,
    };
    let result = crash::run(&opts, started_etcd.as_mut()).await;
    if let Some(mut e) = started_etcd {
        e.stop().await;
    }
    let summary = result?;
    for f in &summary.failures {
        eprintln!("crash: FAILED: {f}");
    }
    if opts.etcd.is_some() {
        println!(
            "crash: etcd engine: etcd SIGKILLed in {} rounds; {} acknowledged writes read back from etcd itself at the last full check",
            summary.etcd_kills,
            summary
                .etcd_verified
                .map_or_else(|| "no".to_string(), |n| n.to_string())
        );
    }
    println!("{}", summary.line());
    Ok(if summary.is_clean() && summary.rounds == opts.rounds {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("bench").chain(args.iter().copied()))
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    fn crash(args: &[&str]) -> Result<CrashArgs> {
        let mut all = vec!["crash"];
        all.extend_from_slice(args);
        match parse(&all)?.command {
            Cmd::Crash(a) => Ok(a),
            other => bail!("not crash: {other:?}"),
        }
    }

    fn api(args: &[&str]) -> Result<ApiArgs> {
        let mut all = vec!["api"];
        all.extend_from_slice(args);
        match parse(&all)?.command {
            Cmd::Api(a) => Ok(a),
            other => bail!("not api: {other:?}"),
        }
    }

    #[test]
    fn federation_runs_push_pull_or_both() -> Result<()> {
        use federation::Mode;
        let modes = |args: &[&str]| -> Result<Vec<Mode>> {
            let mut all = vec!["federation"];
            all.extend_from_slice(args);
            match parse(&all)?.command {
                Cmd::Federation(f) => Ok(f.modes()),
                other => bail!("not federation: {other:?}"),
            }
        };
        assert_eq!(modes(&[])?, vec![Mode::Push]);
        assert_eq!(modes(&["--pull"])?, vec![Mode::Pull]);
        assert_eq!(
            modes(&["--compare-push-pull"])?,
            vec![Mode::Push, Mode::Pull]
        );
        assert!(parse(&["federation", "--pull", "--compare-push-pull"]).is_err());
        Ok(())
    }

    #[test]
    fn gate_defaults_are_five_short_pairs_against_docs_benchmarks() -> Result<()> {
        let Cmd::Gate(g) = parse(&["gate"])?.command else {
            bail!("not gate");
        };
        assert_eq!((g.pairs, g.objects, g.watchers), (5, 1000, 20));
        assert_eq!(g.figures, PathBuf::from("docs/benchmarks.md"));
        assert_eq!(
            (g.block.as_str(), g.max_drop_percent, g.write),
            ("gate", 30.0, false)
        );
        let Cmd::Gate(g) = parse(&["gate", "--write", "--pairs", "3"])?.command else {
            bail!("not gate");
        };
        assert!(g.write && g.pairs == 3);
        Ok(())
    }

    #[test]
    fn crash_on_a_started_etcd_kills_it_every_nth_round() -> Result<()> {
        let a = crash(&["--etcd", "--rounds", "200"])?;
        assert!(a.etcd && a.etcd_servers.is_none());
        assert_eq!((a.rounds, a.etcd_kill_every()?), (200, 5));
        assert_eq!(
            crash(&["--etcd", "--etcd-kill-every", "0"])?.etcd_kill_every()?,
            0
        );
        assert_eq!(
            crash(&["--etcd", "--etcd-kill-every", "3"])?.etcd_kill_every()?,
            3
        );
        let a = crash(&[
            "--etcd-servers",
            "http://127.0.0.1:2379",
            "--etcd-prefix",
            "/x",
        ])?;
        a.check()?;
        assert_eq!(a.etcd_servers.as_deref(), Some("http://127.0.0.1:2379"));
        assert_eq!(a.etcd_prefix.as_deref(), Some("/x"));
        assert_eq!(a.etcd_kill_every()?, 0, "a given etcd is never killed");
        assert_eq!(crash(&[])?.etcd_kill_every()?, 0);
        Ok(())
    }

    #[test]
    fn crash_refuses_contradictory_etcd_flags() -> Result<()> {
        // Killing etcd needs an etcd the harness started.
        assert!(crash(&["--etcd-kill-every", "3"])?.check().is_err());
        assert!(
            crash(&["--etcd-servers", "http://h:1", "--etcd-kill-every", "3"])?
                .check()
                .is_err()
        );
        assert!(crash(&["--etcd-bin", "/usr/bin/etcd"])?.check().is_err());
        assert!(parse(&["crash", "--etcd", "--etcd-servers", "http://h:1"]).is_err());
        crash(&["--etcd", "--etcd-bin", "/usr/bin/etcd"])?.check()?;
        Ok(())
    }

    #[test]
    fn api_versus_kube_needs_no_kubeconfig_and_excludes_other_targets() -> Result<()> {
        let a = api(&["--versus-kube", "--objects", "100", "--kube-sh", "k.sh"])?;
        a.check()?;
        assert!(a.versus_kube && a.kubeconfig.is_none());
        assert_eq!(a.objects, 100);
        assert!(parse(&["api"]).is_err(), "a target is required");
        assert!(parse(&["api", "--versus-kube", "--start"]).is_err());
        assert!(parse(&["api", "--versus-kube", "--kubeconfig", "k"]).is_err());
        assert!(api(&["--start", "--kube-sh", "k.sh"])?.check().is_err());
        assert!(api(&["--start", "--etcd-bin", "etcd"])?.check().is_err());
        assert!(api(&["--start", "--kube-first"])?.check().is_err());
        assert!(api(&["--start", "--ours-engine", "sled"])?.check().is_err());
        assert!(api(&["--versus-kube", "--kube-first"])?.kube_first);
        assert_eq!(
            api(&["--versus-kube", "--ours-engine", "sled"])?.ours_engine,
            Some(compare::OursEngine::Sled)
        );
        assert!(api(&["--versus-kube"])?.ours_engine.is_none());
        assert!(parse(&["api", "--versus-kube", "--ours-engine", "rocks"]).is_err());
        Ok(())
    }
}
