//! # ubernetes
//!
//! The one binary. Subcommands:
//! - `ubernetes serve [flags]`: the federation API server (kube-apiserver's
//!   flag names; `ubernetes serve --help` lists them all). SIGTERM or SIGINT
//!   shuts it down gracefully.
//! - `ubernetes kubeconfig --data-dir DIR`: where the admin kubeconfig of a
//!   server is (or, with `--show`, what it holds); with `--members
//!   [--kubeconfig FILE]`, a context `federation@NAME` per joined cluster
//!   and `federation@all` added to it (`member_contexts.rs`).
//!
//! - `ubernetes join NAME [--pull --agent-kubeconfig-out FILE]` / `unjoin
//!   NAME`: add or remove a member (`join.rs`, pull mode `pull_join.rs`).
//! - `ubernetes agent --cluster NAME --federation-kubeconfig FILE`: a pull
//!   member's agent (`agent.rs`).
//!
//! Logs go to stderr (filter: `--log-level`, else `RUST_LOG`, else `info`);
//! stdout carries only what scripts read (`ubernetes: serving on URL`).
#![forbid(unsafe_code)]

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use ubernetes_apiserver::options::ServerOptions;

mod agent;
mod join;
mod member_contexts;
mod pull_join;
use ubernetes_federation::FederationOptions;

/// mimalloc instead of glibc's malloc: the server allocates and frees many
/// small JSON values per request; with glibc, allocation was ~30 % of the
/// server's instructions under `bench api` (docs/benchmarks.md has the
/// before/after figures). The `system-allocator` feature leaves it out
/// (glibc's malloc), so heaptrack can see the heap.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A Kubernetes-compatible federation API server.
#[derive(Debug, Parser)]
#[command(name = "ubernetes", version, about, long_about = None)]
struct Cli {
    /// Log filter in RUST_LOG syntax (e.g. `info`, `debug`,
    /// `ubernetes_apiserver=debug,info`). Overrides RUST_LOG; default `info`.
    #[arg(long = "log-level", value_name = "FILTER", global = true)]
    log_level: Option<String>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the federation API server over HTTPS until SIGTERM/SIGINT.
    ///
    /// On start it writes DATA_DIR/kubeconfig (context `federation`, admin
    /// credentials) and prints how to use it.
    Serve {
        #[command(flatten)]
        options: Box<ServerOptions>,
        #[command(flatten)]
        federation: FederationOptions,
        /// Threads that run requests (the async runtime's workers; Go's
        /// GOMAXPROCS). Default: the CPUs this process may use (or
        /// TOKIO_WORKER_THREADS when set). Lower it where several servers
        /// share a machine: a server gets no more CPU from more threads
        /// than cores it is given, and each extra thread costs wake-ups
        /// and hand-offs per request (e.g. 1 for a small member or test
        /// server beside others).
        #[arg(long = "worker-threads", value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
        worker_threads: Option<u16>,
    },
    /// Join a cluster to the federation: a service account with the
    /// federation's rights in the member, its kubeconfig as Secret
    /// federation-system/NAME and the Cluster NAME in the federation.
    Join(join::JoinArgs),
    /// Run a pull-mode member's agent (beside or inside the member): open a
    /// tunnel to the federation and carry the federation's requests to the
    /// member API with the member's credentials, and renew the cluster's
    /// Lease every 10 s. Reconnects with backoff; stops on SIGTERM/SIGINT.
    Agent(agent::AgentArgs),
    /// Take a cluster out of the federation: delete its Cluster, Secret and
    /// the member's service account (and, with --remove-propagated, what the
    /// federation propagated there).
    Unjoin(join::UnjoinArgs),
    /// Print the path of the admin kubeconfig a server wrote in its data dir,
    /// or (--members) add a context per member cluster to a kubeconfig.
    ///
    /// With --members, the kubeconfig (--kubeconfig, default
    /// DATA_DIR/kubeconfig) gets, beside what it has, a context
    /// `federation@NAME` per Cluster joined to the federation of its context
    /// --context: its server is that cluster's proxy on the federation
    /// (https://FEDERATION/apis/federation/v1beta1/clusters/NAME/proxy), its
    /// user the federation context's own. `kubectl --context federation@east`
    /// then runs any command (get, apply, delete, logs -f, exec -it, attach,
    /// port-forward, cp) in member east as you: the federation checks that
    /// you may use `clusters/proxy` on east, and east's own RBAC decides
    /// what you may do there. `federation@all` points at the path reserved
    /// for the view across every member (clusters/-/proxy). Entries of the
    /// same names are replaced; nothing else in the file changes. Run it
    /// again after joining a cluster (and after a restart of the server,
    /// which writes DATA_DIR/kubeconfig anew).
    Kubeconfig {
        /// The data dir the server was started with (--data-dir of `serve`).
        #[arg(long = "data-dir", value_name = "DIR", default_value = "./data")]
        data_dir: PathBuf,
        /// Print the kubeconfig's content instead of its path.
        #[arg(long = "show", conflicts_with = "members")]
        show: bool,
        /// Add the contexts federation@NAME (one per joined cluster) and
        /// federation@all to the kubeconfig.
        #[arg(long = "members")]
        members: bool,
        /// With --members: the kubeconfig to add them to, which has the
        /// federation's context (default: DATA_DIR/kubeconfig).
        #[arg(long = "kubeconfig", value_name = "FILE", requires = "members")]
        kubeconfig: Option<PathBuf>,
        /// With --members: the federation's context in that kubeconfig.
        #[arg(
            long = "context",
            value_name = "CTX",
            default_value = "federation",
            requires = "members"
        )]
        context: String,
    },
}

fn init_logging(level: Option<&str>) -> anyhow::Result<()> {
    use tracing_subscriber::EnvFilter;
    let filter = match level {
        Some(level) => {
            EnvFilter::try_new(level).with_context(|| format!("invalid --log-level {level:?}"))?
        }
        // kube's client logs every failed request at ERROR; the federation
        // controllers already report a member's failures where they matter
        // (Cluster conditions, events, the propagation annotation).
        // hickory's DNS server logs every query at INFO.
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| {
            EnvFilter::new("info,kube_client::client::builder=off,hickory_server=warn")
        }),
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    Ok(())
}

/// Completes on the first SIGTERM or SIGINT. The handlers are installed
/// when this is called, not when the future is first polled: a signal that
/// arrives once the address is printed (scripts kill right after reading
/// it) must find them in place, or the default action kills the process.
#[cfg(unix)]
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    async fn recv(s: std::io::Result<tokio::signal::unix::Signal>, name: &str) {
        match s {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(err) => {
                tracing::error!(error = %err, "cannot listen for {name}");
                std::future::pending::<()>().await;
            }
        }
    }
    let int = signal(SignalKind::interrupt());
    let term = signal(SignalKind::terminate());
    async move {
        tokio::select! {
            () = recv(int, "SIGINT") => tracing::info!("received SIGINT"),
            () = recv(term, "SIGTERM") => tracing::info!("received SIGTERM"),
        }
    }
}

/// Completes on Ctrl-C (no SIGTERM outside unix).
#[cfg(not(unix))]
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %err, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
        tracing::info!("received Ctrl-C");
    }
}

fn kubeconfig(data_dir: PathBuf, show: bool) -> anyhow::Result<()> {
    let path = data_dir.join("kubeconfig");
    if !path.is_file() {
        anyhow::bail!(
            "no kubeconfig at {}: start the server first with `ubernetes serve --data-dir {}`",
            path.display(),
            data_dir.display()
        );
    }
    if show {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        print!("{text}");
    } else {
        let abs = std::fs::canonicalize(&path).unwrap_or(path);
        println!("{}", abs.display());
    }
    Ok(())
}

/// Serve until SIGTERM/SIGINT; with `--federation-controllers` (the
/// default) the federation controllers run beside the server
/// ([`start_federation`]) and stop when shutdown begins. If they fail, the
/// error is logged and the server keeps serving.
async fn serve(options: ServerOptions, federation: FederationOptions) -> anyhow::Result<()> {
    let stop = tokio_util::sync::CancellationToken::new();
    let shutdown = {
        let stop = stop.clone();
        let signal = shutdown_signal();
        async move {
            signal.await;
            stop.cancel();
        }
    };
    let dns = start_dns(&federation, &stop).await?;
    // Which built-in kinds are propagated: as each kind declares it.
    let mut federation = federation;
    federation.builtin_kinds = ubernetes_apiserver::state::federated_kinds()
        .iter()
        .map(|i| {
            ubernetes_federation::kinds::FederatedKind::new(
                &i.group,
                &i.version,
                &i.kind,
                &i.resource,
                i.namespaced,
            )
        })
        .collect();
    // Each member copy a write's overrides produce is checked at admission
    // (never-propagated rules, RBAC escalation), also with the controllers
    // off: what members would get. Set before the server accepts requests.
    // The namespace denylist those checks and the controllers follow
    // (`--member-namespace-denylist`), also set before any request.
    ubernetes_federation::member_object::set_namespace_denylist(
        ubernetes_federation::member_object::NamespaceDenylist::new(
            &federation.member_namespace_denylist,
        ),
    );
    // The rules are those of each object's own group and kind.
    ubernetes_apiserver::state::set_member_copies(std::sync::Arc::new(
        |_resource: &str, fed: &serde_json::Value| {
            ubernetes_federation::copy_checks::check_copies(fed)
        },
    ));
    // kcm's workload controllers while the federation stands alone: off
    // for a member or the difference harness (`--federation-controllers=false`).
    ubernetes_registry::controllers::standalone::set_enabled(
        federation.enabled && federation.standalone_controllers,
    );
    let server = ubernetes_apiserver::serve::start(options, shutdown).await?;
    server.announce();
    let controllers = if federation.enabled {
        Some(start_federation(&server, federation, dns, &stop))
    } else {
        tracing::info!("federation controllers are off (--federation-controllers=false)");
        None
    };
    let served = server.wait().await;
    stop.cancel();
    if let Some((replica, leader)) = controllers {
        let leader = leader.lock().ok().and_then(|mut slot| slot.take());
        let stopped = async {
            let _ = replica.await;
            if let Some(leader) = leader {
                let _ = leader.await;
            }
        };
        if tokio::time::timeout(std::time::Duration::from_secs(5), stopped)
            .await
            .is_err()
        {
            tracing::warn!("the federation controllers did not stop within 5s");
        }
    }
    served
}

/// The running federation: the per-replica part's task and the current
/// leadership term's.
type Running = (
    tokio::task::JoinHandle<()>,
    std::sync::Arc<std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>>,
);

/// Start the federation controllers through an in-process client acting as
/// `system:ubernetes:federation-controller` (RBAC applies):
/// - on every replica, until `stop`, what serves: the read-only member set
///   the cluster proxy forwards with ([`ubernetes_federation::members::follow`])
///   and the DNS computation into this replica's record table
///   ([`ubernetes_federation::run_replica`]), which writes only while this
///   replica leads;
/// - per leadership term (only the Lease holder, with several replicas on
///   one etcd; always with the embedded store), what writes
///   ([`ubernetes_federation::run_with`]), cancelled when the term ends.
fn start_federation(
    server: &ubernetes_apiserver::serve::RunningServer,
    federation: FederationOptions,
    dns: Option<std::sync::Arc<ubernetes_dns::RecordStore>>,
    stop: &tokio_util::sync::CancellationToken,
) -> Running {
    let client = server.client(ubernetes_apiserver::authn::UserInfo::new(
        ubernetes_rbac::bootstrap::FEDERATION_CONTROLLER_USER,
        &[],
    ));
    let members =
        ubernetes_federation::members::follow(client.clone(), federation.clone(), stop.clone());
    {
        let members = members.clone();
        server
            .cluster_proxy
            .set_member_clients(std::sync::Arc::new(move |name: &str| {
                members.get(name).map(|m| m.proxy_client.clone())
            }));
    }
    // Pull members' agents open their tunnels here (issue 24): the
    // federation's side runs in this process's tunnel registry.
    ubernetes_apiserver::tunnel::set_acceptor(std::sync::Arc::new(|name, io| {
        Box::pin(ubernetes_federation::pull::tunnels().accept(name, io))
    }));
    let (leads, leading) = ubernetes_federation::Leading::channel();
    let leads = std::sync::Arc::new(leads);
    let replica = {
        let (client, federation, stop) = (client.clone(), federation.clone(), stop.clone());
        tokio::spawn(async move {
            if let Err(err) =
                ubernetes_federation::run_replica(client, federation, members, dns, leading, stop)
                    .await
            {
                tracing::error!(
                    "the federation's DNS stopped: {err:#}; the API server keeps serving"
                );
            }
        })
    };
    let running = std::sync::Arc::new(std::sync::Mutex::new(None));
    let current = running.clone();
    let stop = stop.clone();
    let terms = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    server.leadership.on_leading(move |term| {
        let fed_stop = term.child_token();
        {
            let (stop, fed_stop, leads) = (stop.clone(), fed_stop.clone(), leads.clone());
            // Under the channel's lock, as the term's end below.
            let mut serial = 0;
            leads.send_modify(|leading| {
                serial = terms.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                *leading = true;
            });
            let terms = terms.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = stop.cancelled() => fed_stop.cancel(),
                    () = fed_stop.cancelled() => {}
                }
                // Unless a newer term began meanwhile.
                leads.send_if_modified(|leading| {
                    let ended = terms.load(std::sync::atomic::Ordering::SeqCst) == serial;
                    if ended {
                        *leading = false;
                    }
                    ended
                });
            });
        }
        let (client, federation) = (client.clone(), federation.clone());
        tracing::info!("starting the federation controllers");
        let handle = tokio::spawn(async move {
            // The leader's own member set: the Cluster controller probes
            // and fills it for the controllers that write.
            let members = ubernetes_federation::members::Members::new();
            if let Err(err) =
                ubernetes_federation::run_with(client, federation, members, fed_stop).await
            {
                tracing::error!(
                    "the federation controllers stopped: {err:#}; the API server keeps serving"
                );
            }
        });
        if let Ok(mut slot) = current.lock() {
            *slot = Some(handle);
        }
    });
    (replica, running)
}

/// With `--dns-bind`, the embedded DNS server (SPEC §3.9), bound before the
/// API server so a taken port fails the start; its records are filled by
/// the federation's DNS controller.
async fn start_dns(
    federation: &FederationOptions,
    stop: &tokio_util::sync::CancellationToken,
) -> anyhow::Result<Option<std::sync::Arc<ubernetes_dns::RecordStore>>> {
    let dns = &federation.dns;
    let Some(bind) = dns.dns_bind else {
        return Ok(None);
    };
    if !federation.enabled {
        anyhow::bail!(
            "--dns-bind needs the federation controllers (--federation-controllers=true)"
        );
    }
    let zone = dns
        .dns_zone
        .as_deref()
        .context("--dns-bind needs --dns-zone")?;
    if !dns.federation_name.split('.').all(|l| {
        !l.is_empty() && l.len() <= 63 && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    }) {
        anyhow::bail!(
            "--federation-name {:?} is not a DNS name",
            dns.federation_name
        );
    }
    let mut config = ubernetes_dns::ZoneConfig::new(zone, dns.dns_ttl)?;
    if !bind.ip().is_unspecified() {
        config.nameserver_addresses = vec![bind.ip()];
    }
    // The Multi-cluster Services zone beside it (SPEC §3.14).
    let mut clusterset = ubernetes_dns::ZoneConfig::new(&dns.clusterset_zone, dns.dns_ttl)?;
    clusterset.nameserver_addresses = config.nameserver_addresses.clone();
    let store = ubernetes_dns::RecordStore::with_zones(vec![config, clusterset])
        .context("--clusterset-zone must differ from --dns-zone")?;
    let server = ubernetes_dns::DnsServer::start(bind, store.clone(), stop.clone()).await?;
    tracing::info!(zone = %store.origin(), addr = %server.local_addr, "serving DNS (udp and tcp)");
    Ok(Some(store))
}

/// Run a client subcommand on a small runtime.
fn run_async(work: impl std::future::Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(work)
}

/// The server's runtime: `worker_threads` workers (`--worker-threads`),
/// else tokio's default (TOKIO_WORKER_THREADS, else one per CPU).
fn server_runtime(worker_threads: Option<u16>) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = worker_threads {
        builder.worker_threads(usize::from(n));
    }
    builder
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(err) = init_logging(cli.log_level.as_deref()) {
        eprintln!("error: {err:#}");
        return ExitCode::from(2);
    }
    let result = match cli.command {
        Command::Kubeconfig {
            data_dir,
            members: true,
            kubeconfig,
            context,
            ..
        } => {
            let path = kubeconfig.unwrap_or_else(|| data_dir.join("kubeconfig"));
            run_async(async move { member_contexts::add_member_contexts(&path, &context).await })
        }
        Command::Kubeconfig { data_dir, show, .. } => kubeconfig(data_dir, show),
        Command::Join(args) => run_async(join::join(args)),
        Command::Agent(args) => run_async(agent::run(args)),
        Command::Unjoin(args) => run_async(join::unjoin(args)),
        Command::Serve {
            options,
            federation,
            worker_threads,
        } => server_runtime(worker_threads).and_then(|rt| rt.block_on(serve(*options, federation))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("{err:#}");
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn serve_help_lists_every_kube_apiserver_flag() {
        let mut cmd = Cli::command();
        let serve = cmd.find_subcommand_mut("serve").expect("serve subcommand");
        let help = serve.render_long_help().to_string();
        for flag in [
            "--secure-port",
            "--bind-address",
            "--tls-cert-file",
            "--tls-private-key-file",
            "--client-ca-file",
            "--token-auth-file",
            "--authorization-mode",
            "--service-cluster-ip-range",
            "--tls-san",
            "--data-dir",
        ] {
            assert!(help.contains(flag), "{flag} missing from:\n{help}");
        }
    }

    #[test]
    fn serve_parses_its_flags_into_server_options() {
        let cli = Cli::try_parse_from([
            "ubernetes",
            "serve",
            "--secure-port",
            "0",
            "--data-dir",
            "/tmp/d",
        ])
        .expect("parses");
        match cli.command {
            Command::Serve { options, .. } => {
                assert_eq!(options.secure_port, 0);
                assert_eq!(options.data_dir, PathBuf::from("/tmp/d"));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn worker_threads_sizes_the_runtime_and_must_be_positive() {
        let cli = Cli::try_parse_from(["ubernetes", "serve"]).expect("parses");
        let Command::Serve { worker_threads, .. } = cli.command else {
            panic!("not serve")
        };
        assert_eq!(worker_threads, None, "tokio's default unless given");
        let cli =
            Cli::try_parse_from(["ubernetes", "serve", "--worker-threads", "1"]).expect("parses");
        let Command::Serve { worker_threads, .. } = cli.command else {
            panic!("not serve")
        };
        assert_eq!(worker_threads, Some(1));
        let rt = server_runtime(worker_threads).expect("runtime");
        assert_eq!(rt.metrics().num_workers(), 1);
        assert!(Cli::try_parse_from(["ubernetes", "serve", "--worker-threads", "0"]).is_err());
    }

    #[test]
    fn serve_takes_the_dns_flags_and_dns_bind_needs_a_zone() {
        let cli = Cli::try_parse_from(["ubernetes", "serve"]).expect("parses");
        let Command::Serve { federation, .. } = cli.command else {
            panic!("not serve")
        };
        assert_eq!(federation.dns.dns_bind, None, "DNS is off by default");
        assert_eq!(federation.dns.federation_name, "federation");
        assert_eq!(federation.dns.dns_ttl, 180);
        let cli = Cli::try_parse_from([
            "ubernetes",
            "serve",
            "--dns-bind",
            "127.0.0.1:5353",
            "--dns-zone",
            "example.com.",
            "--federation-name",
            "myfed",
            "--dns-ttl",
            "30",
        ])
        .expect("parses");
        let Command::Serve { federation, .. } = cli.command else {
            panic!("not serve")
        };
        assert_eq!(
            federation.dns.dns_bind,
            Some("127.0.0.1:5353".parse().expect("an address"))
        );
        assert_eq!(federation.dns.dns_zone.as_deref(), Some("example.com."));
        assert_eq!(federation.dns.federation_name, "myfed");
        assert_eq!(federation.dns.dns_ttl, 30);
        assert!(
            Cli::try_parse_from(["ubernetes", "serve", "--dns-bind", "127.0.0.1:53"]).is_err(),
            "--dns-bind without --dns-zone"
        );
        let mut cmd = Cli::command();
        let serve = cmd.find_subcommand_mut("serve").expect("serve subcommand");
        let help = serve.render_long_help().to_string();
        for flag in ["--dns-bind", "--dns-zone", "--federation-name", "--dns-ttl"] {
            assert!(help.contains(flag), "{flag} missing from:\n{help}");
        }
    }

    #[test]
    fn serve_takes_the_federation_controller_flags() {
        let cli = Cli::try_parse_from([
            "ubernetes",
            "serve",
            "--federation-controllers=false",
            "--cluster-monitor-period",
            "1s",
        ])
        .expect("parses");
        match cli.command {
            Command::Serve { federation, .. } => {
                assert!(!federation.enabled);
                assert_eq!(
                    federation.cluster_monitor_period,
                    std::time::Duration::from_secs(1)
                );
            }
            other => panic!("unexpected {other:?}"),
        }
        let mut cmd = Cli::command();
        let serve = cmd.find_subcommand_mut("serve").expect("serve subcommand");
        let help = serve.render_long_help().to_string();
        for flag in [
            "--federation-controllers",
            "--cluster-monitor-period",
            "--cluster-probe-timeout",
            "--member-request-timeout",
        ] {
            assert!(help.contains(flag), "{flag} missing from:\n{help}");
        }
    }

    #[test]
    fn kubeconfig_without_a_started_server_explains_what_to_do() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = kubeconfig(dir.path().to_path_buf(), false).expect_err("missing");
        assert!(
            err.to_string().contains("ubernetes serve --data-dir"),
            "{err}"
        );
    }
}
