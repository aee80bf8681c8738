//! Stopping a run: a cancel or the deadline stops the whole group (SIGTERM, then SIGKILL after the
//! grace), the cancel only wakes the runner's thread, and a run cancelled before it starts never
//! starts its program.

use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use stdmcp::process::{run, LineFn, RunSpec};
use stdmcp::{CancelReason, CancelToken};

use crate::procs::{
    is_gone, pids, signalled_or_dying, status, wait_gone, wait_group_empty, KillOnPanic, FAIL_AFTER,
};
use crate::runs::{fixture, no_lines, run_in_thread, run_plain, spec};
use crate::support::{runtime_fixture, temp_dir};

#[test]
fn cancel_kills_child_and_grandchild_promptly() {
    let (h, token, rx) = run_in_thread(spec(runtime_fixture("tree.sh"), &[]));
    let (child, grandchild) = pids(&rx.recv_timeout(FAIL_AFTER).expect("pids line"));
    let _cleanup = KillOnPanic(vec![child, grandchild]);
    assert!(!is_gone(child) && !is_gone(grandchild));
    token.cancel(CancelReason::Client);
    // The cancel wakes the runner's thread, which sends SIGTERM. It does not look at the token
    // every so often: without that wake-up the program would never be stopped.
    let latency = wait_gone(child, "child");
    eprintln!("cancel -> child gone: {latency:?}");
    assert!(
        latency < Duration::from_millis(500),
        "slow cancel: {latency:?}"
    );
    wait_gone(grandchild, "grandchild");
    let o = h.join().expect("thread").expect("run");
    assert!(o.cancelled && !o.timed_out);
    assert_eq!(o.pid, child);
    assert_eq!(o.signal, Some(libc::SIGTERM));
    assert_eq!(o.code, None);
    wait_group_empty(child);
}

#[test]
fn a_cancel_only_wakes_the_runner_which_signals_the_group() {
    // The runner's thread is held in the line callback while this thread cancels the token
    // (its hooks run here, in `cancel`): the hook must not signal the group itself.
    let (entered_tx, entered_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let release_rx = Mutex::new(release_rx);
    let on_line: LineFn = Arc::new(move |_, line: &str| {
        let _ = entered_tx.send(line.to_owned());
        let _ = release_rx.lock().unwrap().recv();
    });
    let token = CancelToken::new();
    let t = token.clone();
    let s = spec(runtime_fixture("tree.sh"), &[]);
    let h = thread::spawn(move || run(&s, &t, &mut |_| {}, on_line));
    let (child, grandchild) = pids(&entered_rx.recv_timeout(FAIL_AFTER).expect("pids line"));
    let _cleanup = KillOnPanic(vec![child, grandchild]);
    token.cancel(CancelReason::Client);
    for pid in [child, grandchild] {
        assert!(
            !signalled_or_dying(pid),
            "the cancel hook signalled {pid}: {:?}",
            status(pid)
                .lines()
                .filter(|l| l.contains("Pnd") || l.starts_with("State"))
                .collect::<Vec<_>>()
        );
    }
    // Let the runner's thread go: it sees the cancel and stops the program (SIGTERM).
    drop(release_tx);
    wait_gone(child, "child");
    let o = h.join().expect("thread").expect("run");
    assert!(o.cancelled && !o.timed_out, "{o:?}");
    assert_eq!(o.signal, Some(libc::SIGTERM));
    wait_gone(grandchild, "grandchild");
    wait_group_empty(child);
}

#[test]
fn deadline_kills_the_group() {
    let mut s = spec(runtime_fixture("tree.sh"), &[]);
    s.timeout = Some(Duration::from_millis(300));
    let o = run_plain(&s);
    assert!(o.timed_out && !o.cancelled);
    assert!(o.duration >= Duration::from_millis(300), "{:?}", o.duration);
    assert!(o.duration < Duration::from_secs(5), "{:?}", o.duration);
    let (child, grandchild) = pids(o.stdout.text().trim());
    let _cleanup = KillOnPanic(vec![grandchild]);
    assert_eq!(child, o.pid);
    wait_gone(child, "child");
    wait_gone(grandchild, "grandchild");
    wait_group_empty(child);
}

#[test]
fn sigterm_ignoring_child_is_killed_after_grace() {
    let mut s = spec(fixture("stubborn.sh"), &[]);
    s.kill_grace = Duration::from_millis(300);
    let (h, token, rx) = run_in_thread(s);
    let (child, grandchild) = pids(&rx.recv_timeout(FAIL_AFTER).expect("pids line"));
    let _cleanup = KillOnPanic(vec![child, grandchild]);
    let start = Instant::now();
    token.cancel(CancelReason::Deadline);
    let o = h.join().expect("thread").expect("run");
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(300), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    // A token cancelled for its deadline (how server tools get theirs) reads as a timeout.
    assert!(o.timed_out && !o.cancelled, "{o:?}");
    assert_eq!(o.signal, Some(libc::SIGKILL));
    wait_gone(child, "child");
    wait_gone(grandchild, "grandchild");
}

/// `sh -c` writing "started" to `marker`.
fn marking(marker: &Path) -> RunSpec {
    let mut spec = RunSpec::new(PathBuf::from("/bin/sh"));
    spec.args = vec![
        "-c".into(),
        "echo started > \"$1\"".into(),
        "sh".into(),
        marker.into(),
    ];
    spec
}

#[test]
fn a_job_cancelled_before_it_starts_never_starts_its_program() {
    let dir = temp_dir("unstarted");
    let marker = dir.join("MARKER");
    for (reason, timed_out) in [
        (CancelReason::Deadline, true),
        (CancelReason::Client, false),
        (CancelReason::Shutdown, false),
    ] {
        let token = CancelToken::new();
        token.cancel(reason);
        let mut spawned = None;
        let o = run(
            &marking(&marker),
            &token,
            &mut |p| spawned = Some(p),
            no_lines(),
        )
        .expect("run");
        assert_eq!(spawned, None, "{reason:?}");
        assert!(!o.started, "{reason:?}");
        assert_eq!(
            (o.timed_out, o.cancelled),
            (timed_out, !timed_out),
            "{reason:?}"
        );
        assert_eq!((o.code, o.signal, o.pid), (None, None, 0), "{reason:?}");
        assert!(!marker.exists(), "{reason:?}: the program ran");
    }
    // A job not cancelled does start (the marker is how the test would see it).
    let o = run_plain(&marking(&marker));
    assert!(o.started && marker.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
