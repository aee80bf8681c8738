//! Drives `process::run` against real processes (Linux: uses /proc). A test binary of its
//! own: the runner runs in this process, which it makes a child subreaper (strays of other
//! tests' servers would be reparented to it), and a test opens a descriptor without
//! `O_CLOEXEC` that other tests' children would inherit.
#![cfg(target_os = "linux")]
#![allow(unsafe_code, clippy::unwrap_used)] // FFI to send signals and to open an fd without O_CLOEXEC
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

mod support;

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use stdmcp::process::LineFn;
use stdmcp::process::{run, Limits, Outcome, RunError, RunSpec, Stream};
use stdmcp::{CancelReason, CancelToken};
use support::{runtime_fixture, target_dir, temp_dir};

const FAIL_AFTER: Duration = Duration::from_secs(10);

/// `tests/fixtures/process/NAME` (`tree.sh` and `big.sh`, which the command's manifest tests
/// run too, are [`runtime_fixture`]s).
fn fixture(name: &str) -> PathBuf {
    runtime_fixture("process").join(name)
}

/// The runner-demo example (built by `cargo test` with the other examples).
fn runner_demo() -> PathBuf {
    target_dir().join("examples/runner-demo")
}

fn spec(program: impl Into<PathBuf>, args: &[&str]) -> RunSpec {
    let mut s = RunSpec::new(program);
    s.args = args.iter().map(OsString::from).collect();
    s.env = vec![("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into())];
    s.timeout = Some(Duration::from_secs(30)); // safety net only
    s
}

fn sh(script: &str) -> RunSpec {
    spec("/bin/sh", &["-c", script])
}

fn no_lines() -> LineFn {
    Arc::new(|_, _| {})
}

/// An `on_line` that forwards stdout lines to a channel.
fn line_channel() -> (LineFn, Receiver<String>) {
    let (tx, rx) = mpsc::channel();
    let f: LineFn = Arc::new(move |s, l| {
        if s == Stream::Stdout {
            let _ = tx.send(l.to_string());
        }
    });
    (f, rx)
}

fn run_plain(spec: &RunSpec) -> Outcome {
    run(spec, &CancelToken::new(), &mut |_| {}, no_lines()).expect("run")
}

/// Parse the "CHILD GRANDCHILD" line the fixtures print (`tree.sh` prefixes it with
/// "PROGRESS 1 pids " for the server's progress tests).
fn pids(line: &str) -> (u32, u32) {
    let mut it = line
        .trim_start_matches("PROGRESS 1 pids ")
        .split_whitespace()
        .map(|w| w.parse::<u32>().expect("pid"));
    (it.next().expect("child"), it.next().expect("grandchild"))
}

/// (state, ppid, pgrp) from /proc/PID/stat, None if the process is gone.
fn stat(pid: u32) -> Option<(char, u32, u32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = s.rsplit_once(") ")?;
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

/// Dead: no such process, or only a zombie waiting for (some) parent.
fn is_gone(pid: u32) -> bool {
    !matches!(stat(pid), Some((state, _, _)) if state != 'Z' && state != 'X')
}

fn wait_gone(pid: u32, what: &str) -> Duration {
    let start = Instant::now();
    while !is_gone(pid) {
        if start.elapsed() > FAIL_AFTER {
            panic!("{what} (pid {pid}) still alive after {FAIL_AFTER:?}");
        }
        thread::sleep(Duration::from_micros(200));
    }
    start.elapsed()
}

fn status(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default()
}

/// The process is gone, exiting, or has a signal pending. Pending signals
/// are read first: a dying process clears them just before it is flagged
/// PF_EXITING, which the later read of `stat` then sees.
fn signalled_or_dying(pid: u32) -> bool {
    const PF_EXITING: u64 = 0x4;
    let pending = status(pid).lines().any(|l| {
        (l.starts_with("SigPnd:") || l.starts_with("ShdPnd:"))
            && l.split_whitespace()
                .nth(1)
                .is_some_and(|m| !m.trim_start_matches('0').is_empty())
    });
    let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return true;
    };
    let Some((_, rest)) = s.rsplit_once(") ") else {
        return true;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let flags: u64 = f.get(6).and_then(|v| v.parse().ok()).unwrap_or(0);
    pending || matches!(f.first(), Some(&"Z") | Some(&"X")) || flags & PF_EXITING != 0
}

/// All live (non-zombie) processes: (pid, state, ppid, pgrp).
fn processes() -> Vec<(u32, char, u32, u32)> {
    let mut v = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        if let Some((state, ppid, pgrp)) = stat(pid) {
            v.push((pid, state, ppid, pgrp));
        }
    }
    v
}

fn live_group_members(pgid: u32) -> Vec<u32> {
    processes()
        .into_iter()
        .filter(|&(_, state, _, pgrp)| pgrp == pgid && state != 'Z' && state != 'X')
        .map(|(pid, ..)| pid)
        .collect()
}

/// SIGKILL delivery is asynchronous: a killed process may still be on its
/// way out for a moment after `run` returned, so wait (bounded).
fn wait_group_empty(pgid: u32) {
    let start = Instant::now();
    loop {
        let left = live_group_members(pgid);
        if left.is_empty() {
            return;
        }
        if start.elapsed() > FAIL_AFTER {
            panic!("group {pgid} still has live members {left:?} after {FAIL_AFTER:?}");
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// Kills the listed pids if the test panics, so a failing test does not leave
/// `sleep 1000`s behind (not on success: the pids may have been reused).
struct KillOnPanic(Vec<u32>);

impl Drop for KillOnPanic {
    fn drop(&mut self) {
        if thread::panicking() {
            for &pid in &self.0 {
                kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// A helper process that is SIGKILLed and reaped whenever the test ends.
struct HelperGuard(std::process::Child);

impl Drop for HelperGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn kill(pid: u32, sig: i32) {
    // SAFETY: plain kill(2) on a pid we started.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

/// Start `run` on its own thread; returns the join handle, the token and
/// the stdout line channel.
fn run_in_thread(
    spec: RunSpec,
) -> (
    thread::JoinHandle<Result<Outcome, RunError>>,
    CancelToken,
    Receiver<String>,
) {
    let token = CancelToken::new();
    let (on_line, rx) = line_channel();
    let t = token.clone();
    let h = thread::spawn(move || run(&spec, &t, &mut |_| {}, on_line));
    (h, token, rx)
}

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
fn exit_codes_and_signals() {
    let o = run_plain(&sh("exit 0"));
    assert_eq!((o.code, o.signal), (Some(0), None));
    let o = run_plain(&sh("echo oops >&2; exit 3"));
    assert_eq!((o.code, o.signal), (Some(3), None));
    assert_eq!(o.stderr.text(), "oops\n");
    let o = run_plain(&sh("kill -KILL $$"));
    assert_eq!((o.code, o.signal), (None, Some(libc::SIGKILL)));
    assert!(!o.cancelled && !o.timed_out);
}

#[test]
fn on_spawn_and_on_line_are_called() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = Arc::clone(&seen);
    let on_line: LineFn = Arc::new(move |s, l| {
        if let Ok(mut v) = s2.lock() {
            v.push((s, l.to_string()));
        }
    });
    let mut spawned = Vec::new();
    let o = run(
        &sh("echo one; echo two >&2; printf 'three'"),
        &CancelToken::new(),
        &mut |pid| spawned.push(pid),
        on_line,
    )
    .expect("run");
    assert_eq!(spawned, vec![o.pid]);
    let mut lines = seen.lock().expect("lock").clone();
    lines.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        lines,
        vec![
            (Stream::Stdout, "one".to_string()),
            (Stream::Stdout, "three".to_string()),
            (Stream::Stderr, "two".to_string()),
        ]
    );
    assert_eq!(o.stdout.text(), "one\nthree");
}

#[test]
fn output_is_capped_head_and_tail() {
    let mut s = spec(runtime_fixture("big.sh"), &[]);
    s.stdout_cap = 1000;
    let o = run_plain(&s);
    assert_eq!(o.code, Some(0));
    let total = 6 + 1_000_000 + 1 + 4;
    assert_eq!(o.stdout.total_bytes(), total);
    assert!(o.stdout.truncated());
    assert_eq!(o.stdout.omitted_bytes(), total - 1000);
    let text = o.stdout.text();
    assert!(text.starts_with("START\n0123456789\n"), "{text:.40}");
    let marker = format!("\n[... {} bytes omitted ...]\n", total - 1000);
    assert!(text.contains(&marker), "{text}");
    assert!(text.ends_with("\nEND\n"), "{text}");
    assert_eq!(text.len(), 1000 + marker.len());
}

#[test]
fn stdin_bytes_reach_the_child() {
    let mut s = spec("cat", &[]);
    s.stdin = Some(b"hello\nworld".to_vec());
    let o = run_plain(&s);
    assert_eq!(o.code, Some(0));
    assert_eq!(o.stdout.text(), "hello\nworld");

    // Larger than a pipe buffer, so writer and reader must run concurrently.
    let big: Vec<u8> = (0..1_000_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let mut s = spec("cat", &[]);
    s.stdin = Some(big.clone());
    s.stdout_cap = 2_000_000;
    let o = run_plain(&s);
    assert_eq!(o.stdout.total_bytes(), big.len() as u64);
    assert_eq!(o.stdout.kept_bytes(), big);
}

#[test]
fn no_stdin_means_immediate_eof() {
    let start = Instant::now();
    let o = run_plain(&spec("cat", &[]));
    assert_eq!(o.code, Some(0));
    assert!(!o.timed_out);
    assert_eq!(o.stdout.total_bytes(), 0);
    assert!(start.elapsed() < Duration::from_secs(5));
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
fn child_stdin_closed_early_is_fine() {
    let mut s = sh("head -c 1 >/dev/null");
    s.stdin = Some(vec![b'x'; 4_000_000]);
    let o = run_plain(&s);
    assert_eq!(o.code, Some(0));
}

#[test]
fn environment_is_exactly_the_spec() {
    let mut s = spec("/usr/bin/env", &[]);
    s.env.push(("FOO".into(), "bar baz".into()));
    s.env.push(("EMPTY".into(), "".into()));
    let o = run_plain(&s);
    let mut got: BTreeSet<String> = o.stdout.text().lines().map(str::to_string).collect();
    // Plus the call's marker, which finds its processes (see `process::marker_instance`).
    let marker = format!("STDMCP_CALL={}.", stdmcp::process::marker_instance());
    let marked: Vec<String> = got
        .iter()
        .filter(|l| l.starts_with(&marker))
        .cloned()
        .collect();
    assert_eq!(marked.len(), 1, "{got:?}");
    got.remove(&marked[0]);
    let want: BTreeSet<String> = ["PATH=/usr/local/bin:/usr/bin:/bin", "FOO=bar baz", "EMPTY="]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(got, want);
}

#[test]
fn parent_environment_does_not_leak() {
    // The variable is set in the parent of the process that calls run().
    let out = Command::new(runner_demo())
        .arg("/usr/bin/env")
        .env("STDMCP_LEAK_CANARY", "tweet")
        .output()
        .expect("runner-demo");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("out PATH="), "{text}");
    assert!(!text.contains("STDMCP_LEAK_CANARY"), "{text}");
    assert!(text.contains("exit 0 -"), "{text}");
}

#[test]
fn cwd_is_applied() {
    let mut s = spec("/bin/pwd", &[]);
    s.cwd = Some("/tmp".into());
    assert_eq!(run_plain(&s).stdout.text(), "/tmp\n");
}

#[test]
fn parent_fds_do_not_leak() {
    // Opened WITHOUT O_CLOEXEC on purpose.
    // SAFETY: valid NUL-terminated path.
    let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY) };
    assert!(fd >= 3);
    let o = run_plain(&sh("ls /proc/$$/fd"));
    // SAFETY: closing the fd we opened.
    unsafe { libc::close(fd) };
    let fds: Vec<String> = o.stdout.text().lines().map(str::to_string).collect();
    assert!(!fds.contains(&fd.to_string()), "fd {fd} leaked: {fds:?}");
    assert_eq!(fds, ["0", "1", "2"]);
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

fn limited(script: &str, limits: Limits) -> Outcome {
    let mut s = sh(script);
    s.limits = limits;
    run_plain(&s)
}

#[test]
fn cpu_limit_stops_a_busy_loop_with_sigxcpu() {
    let o = limited(
        "exec sh -c 'while :; do :; done'",
        Limits::default().with_cpu_seconds(1),
    );
    assert_eq!(o.signal, Some(libc::SIGXCPU), "{o:?}");
}

#[test]
fn file_size_limit_stops_a_big_write() {
    let dir = temp_dir("fsize");
    let file = dir.join("big");
    let o = limited(
        &format!("head -c 3000000 /dev/zero > '{}'; echo $?", file.display()),
        Limits::default().with_max_file_size_mb(1),
    );
    let size = std::fs::metadata(&file).map(|m| m.len());
    let _ = std::fs::remove_dir_all(&dir);
    // 128 + SIGXFSZ: head was killed at the limit.
    assert_eq!(o.stdout.text().trim(), (128 + libc::SIGXFSZ).to_string());
    assert_eq!(size.unwrap(), 1024 * 1024);
}

#[test]
fn memory_limit_makes_a_big_allocation_fail() {
    let big = "python3 -c 'bytearray(512 * 1024 * 1024)' 2>&1; echo exit $?";
    let o = limited(big, Limits::default().with_max_memory_mb(200));
    let text = o.stdout.text();
    assert!(
        text.contains("MemoryError") && text.contains("exit 1"),
        "{text}"
    );
    // Without the limit the same allocation succeeds.
    assert!(limited(big, Limits::default())
        .stdout
        .text()
        .contains("exit 0"));
}

#[test]
fn nice_is_applied_before_exec() {
    let o = limited(
        "cut -d' ' -f19 /proc/self/stat",
        Limits::default().with_nice(11),
    );
    assert_eq!(o.stdout.text().trim(), "11");
}

#[test]
fn line_buffered_output_arrives_before_the_program_ends() {
    // sed (C stdio) block-buffers its output into a pipe; its input stays open, so without
    // line buffering nothing would arrive before the cancel.
    let mut s = sh("(printf 'first\\n'; exec sleep 1000) | sed -e 's/^/got /'");
    s.line_buffered = true;
    let (on_line, lines) = line_channel();
    let token = CancelToken::new();
    let t = token.clone();
    let h = thread::spawn(move || run(&s, &t, &mut |_| {}, on_line));
    assert_eq!(lines.recv_timeout(FAIL_AFTER).expect("a line"), "got first");
    token.cancel(CancelReason::Client);
    assert!(h.join().expect("thread").expect("run").cancelled);
}

#[test]
fn line_buffered_program_not_found_is_a_spawn_error() {
    let mut s = spec("definitely-not-a-program-here", &[]);
    s.line_buffered = true;
    match run(&s, &CancelToken::new(), &mut |_| {}, no_lines()) {
        Err(e @ RunError::Spawn { .. }) => assert!(e.to_string().contains("not found"), "{e}"),
        other => panic!("expected a spawn error, got {other:?}"),
    }
}

#[test]
fn spawn_failures_are_clear() {
    let err = |s: RunSpec| match run(&s, &CancelToken::new(), &mut |_| {}, no_lines()) {
        Err(e @ RunError::Spawn { .. }) => e.to_string(),
        other => panic!("expected a spawn error, got {other:?}"),
    };
    let msg = err(spec("/nonexistent/definitely-not-here", &[]));
    assert!(msg.contains("could not start program"), "{msg}");
    assert!(msg.contains("/nonexistent/definitely-not-here"), "{msg}");
    assert!(msg.contains("not found"), "{msg}");
    let msg = err(spec(fixture("not-executable.txt"), &[]));
    assert!(msg.contains("permission denied"), "{msg}");
    let mut s = spec("/bin/true", &[]);
    s.cwd = Some("/nonexistent/dir".into());
    let msg = err(s);
    assert!(msg.contains("working directory"), "{msg}");
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
