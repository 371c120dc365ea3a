//! `bench federation --simulated-members` at a tiny size (3 simulated
//! members, 20 objects) against the built `ubernetes` host: the host joins
//! the simulated member APIs as real members (TLS, kubeconfig Secret,
//! Cluster), every copy arrives in every member, the restart in sync sends
//! no member write (the simulator counts writes itself), every line is
//! labelled `[simulated]`, and the host sent nothing the simulator does not
//! serve.

use anyhow::{Context, Result, ensure};

mod common;

#[test]
fn simulated_members_receive_every_copy_and_a_restart_writes_nothing() -> Result<()> {
    let stdout = common::run_bench(&[
        "federation",
        "--simulated-members",
        "3",
        "--objects",
        "20",
        "--single-repeats",
        "2",
        "--idle-seconds",
        "1",
        "--timeout-seconds",
        "60",
    ])?;
    let line = |prefix: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(prefix))
            .with_context(|| format!("no line starting {prefix:?} in:\n{stdout}"))
    };
    line("[simulated] join: 3 clusters Ready")?;
    line("[simulated] single: 1 object to 3 members x 2")?;
    ensure!(
        line("[simulated] bulk: 20 objects created")?.contains("in all 3 members after"),
        "every copy must arrive:\n{stdout}"
    );
    ensure!(
        line("[simulated] bulk: host quiet")?.contains("each member 1.00"),
        "one member write per copy:\n{stdout}"
    );
    line("[simulated] memory: host RSS")?;
    line("[simulated] single-in-sync: 1 object to 3 members x 2")?;
    line("[simulated] idle: 3 members joined")?;
    ensure!(
        line("[simulated] restart: member writes")?.contains("total 0,"),
        "a restart in sync must send no member write:\n{stdout}"
    );
    // 3 members x (2 + 20 + 2 + 1 ConfigMaps and the namespace).
    ensure!(
        line("[simulated] the simulator holds")?.contains(
            "holds 78 objects over 3 members; requests it does not serve (answered 404): {}"
        ),
        "every request served, every copy stored:\n{stdout}"
    );
    ensure!(
        stdout
            .lines()
            .filter(|l| !l.starts_with("bench federation:") && !l.starts_with("=="))
            .all(|l| l.starts_with("[simulated] ")),
        "every figure is labelled simulated:\n{stdout}"
    );
    Ok(())
}
