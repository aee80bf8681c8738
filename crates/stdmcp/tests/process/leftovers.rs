//! What a run leaves behind: nothing. Background jobs are swept, a grandchild that left the group
//! is found by its marker, killed and reaped, a panicking callback still kills and reaps the
//! program, and many runs at once leave no zombie.

use std::collections::BTreeSet;
use std::sync::{mpsc, Arc, Mutex};
use std::thread;

use stdmcp::process::{run, LineFn};
use stdmcp::CancelToken;

use crate::procs::{
    is_gone, kill, pids, processes, stat, status, wait_gone, wait_group_empty, KillOnPanic,
    FAIL_AFTER,
};
use crate::runs::{fixture, no_lines, run_in_thread, run_plain, sh, spec};

#[test]
fn leftover_background_job_is_swept() {
    let o = run_plain(&spec(fixture("background.sh"), &[]));
    assert_eq!(o.code, Some(0));
    assert!(!o.cancelled && !o.timed_out);
    let (child, grandchild) = pids(o.stdout.text().trim());
    let _cleanup = KillOnPanic(vec![grandchild]);
    wait_gone(grandchild, "background job");
    wait_group_empty(child);
}

#[test]
fn a_panicking_line_callback_still_kills_and_reaps_the_child() {
    // The callback runs on the thread that waits for the child: its panic must not leave the
    // program running (or a zombie) behind the call.
    let spec = sh("echo first; exec sleep 1000");
    let on_line: LineFn = Arc::new(|_, _| panic!("the callback failed"));
    let pid = Arc::new(Mutex::new(None));
    let seen = Arc::clone(&pid);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut on_spawn = |p| *seen.lock().unwrap() = Some(p);
        run(&spec, &CancelToken::new(), &mut on_spawn, on_line)
    }));
    assert!(result.is_err(), "the panic goes on to the caller");
    let pid = pid.lock().unwrap().expect("spawned");
    assert_eq!(stat(pid), None, "pid {pid} still there: {}", status(pid));
}

#[test]
fn a_panicking_spawn_callback_still_kills_and_reaps_the_child() {
    let spec = sh("exec sleep 1000");
    let pid = Arc::new(Mutex::new(None));
    let seen = Arc::clone(&pid);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut on_spawn = |p| {
            *seen.lock().unwrap() = Some(p);
            panic!("the callback failed");
        };
        run(&spec, &CancelToken::new(), &mut on_spawn, no_lines())
    }));
    assert!(result.is_err(), "the panic goes on to the caller");
    let pid = pid.lock().unwrap().expect("spawned");
    assert_eq!(stat(pid), None, "pid {pid} still there: {}", status(pid));
}

#[test]
fn escaped_grandchild_is_killed_and_does_not_hang_run() {
    let (h, _token, rx) = run_in_thread(spec(fixture("escape.sh"), &[]));
    let (_, escaped) = pids(&rx.recv_timeout(FAIL_AFTER).expect("pids line"));
    // Killed at the end whatever happens.
    struct KillAlways(u32);
    impl Drop for KillAlways {
        fn drop(&mut self) {
            kill(self.0, libc::SIGKILL);
        }
    }
    let _cleanup = KillAlways(escaped);
    // Bound the wait so a hanging run() fails the test instead of hanging it.
    let (tx, done) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(h.join());
    });
    let o = done
        .recv_timeout(FAIL_AFTER)
        .expect("run() hung on the escaped grandchild's pipes")
        .expect("thread")
        .expect("run");
    assert_eq!(o.code, Some(0), "{}", o.stderr.text());
    assert!(o.stdout.text().contains(&escaped.to_string()));
    // It left the group, but it carries the call's marker: the sweep killed it, and as
    // this process is a subreaper, reaped it too.
    assert!(is_gone(escaped), "the escaped process outlived its call");
    assert!(
        !processes().iter().any(|&(pid, ..)| pid == escaped),
        "the escaped process was not reaped"
    );
}

#[test]
fn hundred_concurrent_runs_leave_no_zombies() {
    let handles: Vec<_> = (0..100)
        .map(|i| {
            thread::spawn(move || {
                let s = if i % 2 == 0 {
                    spec("true", &[])
                } else {
                    sh("exit 0")
                };
                run_plain(&s)
            })
        })
        .collect();
    let mut ours = BTreeSet::new();
    for h in handles {
        let o = h.join().expect("thread");
        assert_eq!(o.code, Some(0));
        ours.insert(o.pid);
    }
    assert_eq!(ours.len(), 100);
    let me = std::process::id();
    let zombies: Vec<u32> = processes()
        .into_iter()
        .filter(|&(pid, state, ppid, _)| ppid == me && state == 'Z' && ours.contains(&pid))
        .map(|(pid, ..)| pid)
        .collect();
    assert_eq!(zombies, Vec::<u32>::new());
}
