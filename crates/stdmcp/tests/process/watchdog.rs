//! The watchdog: it kills a run's group when the process that started it is SIGKILLed, and runs
//! in this process too.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::procs::{is_gone, pids, stat, wait_gone, HelperGuard, KillOnPanic};
use crate::runs::{run_plain, runner_demo, sh};
use crate::support::runtime_fixture;

#[test]
fn watchdog_kills_the_group_when_the_server_is_sigkilled() {
    let mut helper = HelperGuard(
        Command::new(runner_demo())
            .arg(runtime_fixture("tree.sh"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("runner-demo"),
    );
    let mut lines = BufReader::new(helper.0.stdout.take().expect("stdout")).lines();
    let mut watchdog = None;
    let mut tree = None;
    while tree.is_none() {
        let line = lines.next().expect("helper output").expect("read");
        if let Some(rest) = line.strip_prefix("spawned ") {
            let wd = rest.split_whitespace().nth(1).expect("watchdog pid");
            watchdog = Some(wd.parse::<u32>().expect("watchdog running"));
        } else if let Some(rest) = line.strip_prefix("out ") {
            tree = Some(pids(rest));
        }
    }
    let (child, grandchild) = tree.expect("pids");
    let _cleanup = KillOnPanic(vec![child, grandchild]);
    let watchdog = watchdog.expect("spawned line");
    assert!(!is_gone(child) && !is_gone(grandchild) && !is_gone(watchdog));
    helper.0.kill().expect("SIGKILL helper");
    helper.0.wait().expect("reap helper");
    wait_gone(child, "child (PDEATHSIG)");
    wait_gone(grandchild, "grandchild (watchdog)");
    wait_gone(watchdog, "watchdog");
}

#[test]
fn watchdog_runs_in_this_process_too() {
    run_plain(&sh("exit 0"));
    let pid = stdmcp::process::watchdog_pid().expect("watchdog started by run");
    assert!(!is_gone(pid));
    // Own process group, not ours.
    let (_, ppid, pgrp) = stat(pid).expect("stat");
    assert_eq!(ppid, std::process::id());
    assert_eq!(pgrp, pid);
}
