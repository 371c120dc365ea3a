//! `bench api` and `bench federation` end to end at a tiny size, against
//! the built `ubernetes` (started by the bench itself on temporary dirs and
//! free ports): every scenario must run and print its line, so a bench that
//! broke (a scenario failing, a figure no longer printed) fails here. The
//! figures themselves are not asserted: numbers live in docs/benchmarks.md.

use anyhow::{Context, Result, ensure};

mod common;

fn bench(args: &[&str]) -> Result<String> {
    common::run_bench(args)
}

fn line<'a>(stdout: &'a str, prefix: &str) -> Result<&'a str> {
    stdout
        .lines()
        .find(|l| l.starts_with(prefix))
        .with_context(|| format!("no line starting {prefix:?} in:\n{stdout}"))
}

#[test]
fn bench_api_runs_every_scenario_against_a_started_server() -> Result<()> {
    let out = bench(&[
        "api",
        "--start",
        "--objects",
        "60",
        "--concurrency",
        "4",
        "--watchers",
        "5",
        "--watch-events",
        "3",
        "--list-repeats",
        "1",
    ])?;
    for scenario in [
        "create ",
        "get ",
        "update ",
        "patch ",
        "list ",
        "list-selector ",
        "list-paged ",
        "watch ",
    ] {
        line(&out, scenario)?;
    }
    ensure!(
        line(&out, "watch ")?.contains(" 0 deliveries missed; fan-out"),
        "every watcher must see every write:\n{out}"
    );
    ensure!(line(&out, "memory: server RSS")?.contains("bytes per object"));
    Ok(())
}

/// `bench federation` at a tiny size (2 members, 20 objects), with `extra` flags.
fn bench_federation(extra: &[&str]) -> Result<String> {
    let mut args = vec![
        "federation",
        "--members",
        "2",
        "--objects",
        "20",
        "--single-repeats",
        "2",
        "--idle-seconds",
        "1",
        "--timeout-seconds",
        "120",
    ];
    args.extend_from_slice(extra);
    bench(&args)
}

#[test]
fn bench_federation_propagates_to_a_joined_member_and_restarts_without_member_writes() -> Result<()>
{
    let out = bench_federation(&[])?;
    line(&out, "join: 2 clusters Ready")?;
    line(&out, "single: 1 object to 2 members x 2")?;
    ensure!(line(&out, "bulk: 20 objects created")?.contains("in all 2 members after"));
    line(&out, "idle: 2 members joined")?;
    ensure!(
        line(&out, "restart: member writes")?.contains("total 0,"),
        "a restart in sync must send no member write:\n{out}"
    );
    Ok(())
}

#[test]
fn bench_federation_pull_propagates_through_agents_and_measures_them() -> Result<()> {
    let out = bench_federation(&["--pull"])?;
    ensure!(line(&out, "join: 2 clusters Ready")?.contains("(pull mode)"));
    line(&out, "single: 1 object to 2 members x 2")?;
    let bulk = line(&out, "bulk: 20 objects created")?;
    ensure!(
        bulk.contains("in all 2 members after") && bulk.contains("; 2 agents cpu "),
        "the bulk line must carry both agents' use:\n{out}"
    );
    ensure!(line(&out, "idle: 2 members joined")?.contains("; 2 agents cpu "));
    ensure!(
        line(&out, "restart: member writes")?.contains("total 0,"),
        "a restart in sync must send no member write through the agents either:\n{out}"
    );
    Ok(())
}
