//! Helpers for the session examples with real programs (tests/sessions/repls.rs,
//! tests/sessions/hol4.rs): a server over one of the example manifests, tool calls that return
//! the answer text, and one scenario per behaviour, written once and run for every kind.
#![allow(dead_code, clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{alive, path_first, serve_command, temp_dir, wait_gone, Proc, PATIENCE};

/// What a test needs to know about one session kind and its program.
pub(crate) struct Kind {
    /// The kind's name in the manifest (tools are `{name}_start`, `{name}_send`, ...).
    pub name: &'static str,
    /// Defines something the next input uses.
    pub define: &'static str,
    /// Uses the definition; its answer contains `used`.
    pub use_it: &'static str,
    pub used: &'static str,
    /// Fails; its answer contains `error`.
    pub fail: &'static str,
    pub error: &'static str,
    /// Prints `partial` and then computes forever.
    pub runaway: String,
    pub partial: &'static str,
    /// Sent before `use_it` after a runaway was stopped (z3 pops the runaway's scope).
    pub after_runaway: &'static str,
    /// Text of an interrupted computation's answer.
    pub interrupted: &'static str,
    /// Ends the program with exit code `crash_code`.
    pub crash: &'static str,
    pub crash_code: i32,
    /// The kind's `error` pattern makes the answer to `fail` an `isError` result.
    pub fail_is_error: bool,
}

/// The example manifest `examples/{file}`.
pub(crate) fn example(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(file)
}

/// A copy of an example manifest with `limits` set on every session kind, written to a fresh
/// directory; relative `cwd` and roots still resolve against `examples/`.
pub(crate) fn example_with(file: &str, limits: Value) -> PathBuf {
    let mut m: Value =
        serde_json::from_str(&std::fs::read_to_string(example(file)).unwrap()).unwrap();
    let examples = example("");
    for kind in m["sessions"].as_array_mut().unwrap() {
        for (k, v) in limits.as_object().unwrap() {
            kind[k] = v.clone();
        }
        if let Some(cwd) = kind["cwd"].as_str() {
            kind["cwd"] = json!(examples.join(cwd));
        }
    }
    if let Some(roots) = m.get_mut("roots").and_then(Value::as_object_mut) {
        for v in roots.values_mut() {
            match v.get_mut("path") {
                // {"path": …, "write": true}
                Some(p) => *p = json!(examples.join(p.as_str().unwrap())),
                None => *v = json!(examples.join(v.as_str().unwrap())),
            }
        }
    }
    let path = temp_dir("manifest").join(file);
    std::fs::write(&path, m.to_string()).unwrap();
    path
}

/// `stdmcp serve --config manifest`, initialized; `path` is prepended to PATH when given.
pub(crate) fn serve(manifest: &Path, path: Option<&Path>) -> Proc {
    let mut cmd = serve_command(manifest);
    if let Some(dir) = path {
        path_first(&mut cmd, dir);
    }
    Proc::initialized(cmd, "2025-06-18")
}

/// HOL4's bin directory from `STDMCP_HOL4_BIN` (built by .ci/run), or `None` (the test skips,
/// saying so) outside CI; under CI a missing HOL4 fails the test.
pub(crate) fn hol_bin() -> Option<PathBuf> {
    let bin = std::env::var_os("STDMCP_HOL4_BIN").map(PathBuf::from);
    match bin {
        Some(b) if b.join("hol").is_file() => Some(b),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must build HOL4 and set STDMCP_HOL4_BIN (see .ci/run)"
            );
            eprintln!("SKIPPED: STDMCP_HOL4_BIN does not name a HOL4 bin directory");
            None
        }
    }
}

/// Every text block of a tool result, joined.
pub(crate) fn text(r: &Value) -> String {
    r["result"]["content"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

pub(crate) fn is_error(r: &Value) -> bool {
    r["result"]["isError"] == json!(true) || r.get("error").is_some()
}

/// Calls `tool` and returns its response.
pub(crate) fn call(p: &mut Proc, id: i64, tool: &str, args: Value) -> Value {
    p.call(json!(id), tool, args, None);
    p.response(&json!(id))
}

/// Calls `tool`, asserts it succeeded, and returns its text.
pub(crate) fn ok(p: &mut Proc, id: i64, tool: &str, args: Value) -> String {
    let r = call(p, id, tool, args.clone());
    assert!(!is_error(&r), "{tool} {args} failed: {r}");
    text(&r)
}

/// Sends `input` to the default session of `kind` and returns the answer text.
pub(crate) fn send(p: &mut Proc, id: i64, kind: &str, input: &str) -> String {
    ok(p, id, &format!("{kind}_send"), json!({"input": input}))
}

/// The program's pid that a `K_start` answer names: "... (pid 1234) ...".
pub(crate) fn started_pid(answer: &str) -> i32 {
    let at = answer.find("(pid ").expect("K_start names the pid") + 5;
    let digits: String = answer[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap()
}

/// CPU time (user + system, in clock ticks) `pid` has used, all threads included.
fn cpu_ticks(pid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let Some((_, tail)) = stat.rsplit_once(')') else {
        return 0;
    };
    let f: Vec<&str> = tail.split_whitespace().collect();
    // Fields 14 and 15 of stat (utime, stime) are 11 and 12 after the command name.
    f.get(11).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0)
        + f.get(12).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0)
}

/// Waits until `pid` has computed for a while (half a second of CPU time) since the call: it has
/// read its input and is deep in the runaway computation, where an interrupt is meant to land.
pub(crate) fn wait_computing(pid: i32) {
    let start = cpu_ticks(pid);
    let deadline = Instant::now() + PATIENCE;
    while cpu_ticks(pid) < start + 50 {
        assert!(Instant::now() < deadline, "{pid} is not computing");
        thread::sleep(Duration::from_millis(10));
    }
}

/// Starts the default session: its answer (which names the pid, then the greeting).
pub(crate) fn start(p: &mut Proc, id: i64, k: &Kind) -> String {
    ok(p, id, &format!("{}_start", k.name), json!({}))
}

/// State persists across sends; errors come back as text and the session carries on.
pub(crate) fn persists_and_errors(p: &mut Proc, k: &Kind) {
    start(p, 1, k);
    send(p, 2, k.name, k.define);
    let used = send(p, 3, k.name, k.use_it);
    assert!(used.contains(k.used), "{}: {used:?}", k.name);
    let r = call(p, 4, &format!("{}_send", k.name), json!({"input": k.fail}));
    assert_eq!(is_error(&r), k.fail_is_error, "{}: {r}", k.name);
    let failed = text(&r);
    assert!(failed.contains(k.error), "{}: {failed:?}", k.name);
    let again = send(p, 5, k.name, k.use_it);
    assert!(again.contains(k.used), "{}: {again:?}", k.name);
}

/// Starts a session, defines, and begins the runaway as request `id`; returns the program's pid
/// once it is computing.
fn begin_runaway(p: &mut Proc, k: &Kind, id: i64, timeout: Option<u64>) -> i32 {
    let pid = started_pid(&start(p, 1, k));
    send(p, 2, k.name, k.define);
    let mut args = json!({"input": k.runaway});
    if let Some(t) = timeout {
        args["timeout"] = json!(t);
    }
    p.call(json!(id), &format!("{}_send", k.name), args, None);
    if timeout.is_none() {
        wait_computing(pid);
    }
    pid
}

/// The session is usable after a runaway was stopped, and nothing of the runaway leaks.
fn usable_after(p: &mut Proc, k: &Kind, id: i64, pid: i32) {
    let used = send(p, id, k.name, &format!("{}{}", k.after_runaway, k.use_it));
    assert!(used.contains(k.used), "{}: {used:?}", k.name);
    assert!(
        !used.contains(k.partial),
        "{}: stale output {used:?}",
        k.name
    );
    assert!(
        !used.contains(k.interrupted),
        "{}: stale output {used:?}",
        k.name
    );
    assert!(alive(pid), "{}: the session restarted", k.name);
}

/// `K_interrupt` stops a runaway: its send answers with what it printed and the interruption.
pub(crate) fn interrupt(p: &mut Proc, k: &Kind) {
    let pid = begin_runaway(p, k, 10, None);
    ok(p, 11, &format!("{}_interrupt", k.name), json!({}));
    let r = p.response(&json!(10));
    let answer = text(&r);
    assert!(answer.contains(k.partial), "{}: {r}", k.name);
    assert!(answer.contains(k.interrupted), "{}: {r}", k.name);
    usable_after(p, k, 12, pid);
}

/// A client cancel stops a runaway: the send is never answered, the next one works.
pub(crate) fn cancel(mut p: Proc, k: &Kind) {
    let pid = begin_runaway(&mut p, k, 20, None);
    p.notify(
        "notifications/cancelled",
        json!({"requestId": 20, "reason": "test"}),
    );
    usable_after(&mut p, k, 21, pid);
    let (rest, _) = p.finish();
    assert!(
        rest.iter().all(|m| m.get("id") != Some(&json!(20))),
        "{}: the cancelled send was answered: {rest:?}",
        k.name
    );
}

/// The send's deadline stops a runaway: the answer holds the partial output and says so.
pub(crate) fn deadline(p: &mut Proc, k: &Kind) {
    let pid = begin_runaway(p, k, 30, Some(1));
    let r = p.response(&json!(30));
    let answer = text(&r);
    assert!(answer.contains(k.partial), "{}: {r}", k.name);
    assert!(answer.contains("timeout"), "{}: {r}", k.name);
    usable_after(p, k, 31, pid);
}

/// A crashed program is reported; `K_start` starts a fresh one.
pub(crate) fn crash(p: &mut Proc, k: &Kind) {
    let pid = started_pid(&start(p, 1, k));
    send(p, 2, k.name, k.define);
    let r = call(p, 3, &format!("{}_send", k.name), json!({"input": k.crash}));
    let answer = text(&r);
    let exited = format!("exited with code {}", k.crash_code);
    assert!(answer.contains(&exited), "{}: {r}", k.name);
    wait_gone(&[pid]);
    let r = call(
        p,
        4,
        &format!("{}_send", k.name),
        json!({"input": k.use_it}),
    );
    assert!(is_error(&r), "{}: a dead session answered: {r}", k.name);
    assert_ne!(started_pid(&start(p, 5, k)), pid);
    send(p, 6, k.name, k.define);
    let used = send(p, 7, k.name, k.use_it);
    assert!(used.contains(k.used), "{}: {used:?}", k.name);
}

/// `maxSessions` (set to 1) refuses a second session with an error that names the limit.
pub(crate) fn max_sessions(p: &mut Proc, k: &Kind) {
    ok(p, 1, &format!("{}_start", k.name), json!({"session": "a"}));
    let r = call(p, 2, &format!("{}_start", k.name), json!({"session": "b"}));
    assert!(is_error(&r), "{}: {r}", k.name);
    let msg = format!("{}{}", text(&r), r["error"]["message"]);
    assert!(msg.contains("maxSessions"), "{}: {r}", k.name);
    send_to(p, 3, k, "a");
}

fn send_to(p: &mut Proc, id: i64, k: &Kind, session: &str) {
    let input = format!("{}\n\n{}", k.define, k.use_it);
    let args = json!({"session": session, "input": input});
    let used = ok(p, id, &format!("{}_send", k.name), args);
    assert!(used.contains(k.used), "{}: {used:?}", k.name);
}

/// With `idleSeconds` 1, an idle session's program is stopped.
pub(crate) fn idle_stop(p: &mut Proc, k: &Kind) {
    let pid = started_pid(&start(p, 1, k));
    wait_gone(&[pid]);
}

/// Waits until a thread of `pid` waits for input: blocked in `read(0, …)` or in `poll`,
/// `select`, `pselect6` or `ppoll` (x86_64 syscalls 0, 7, 23, 270, 271), and still blocked
/// in that same wait (no context switch of that thread) over several looks 5 ms apart: a
/// program that merely passes through a poll on its way back to its read (Poly/ML flushing
/// output, HOL4's REPL) is not idle yet, and an interrupt then would reach it while busy.
fn wait_reading_stdin(pid: i32) {
    const STEADY_LOOKS: u32 = 10;
    let deadline = Instant::now() + PATIENCE;
    let waiting = || -> Option<(String, String)> {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
        tasks.flatten().find_map(|t| {
            let call = std::fs::read_to_string(t.path().join("syscall")).ok()?;
            let blocked = call.starts_with("0 0x0 ")
                || ["7 ", "23 ", "270 ", "271 "]
                    .iter()
                    .any(|n| call.starts_with(n));
            let status = std::fs::read_to_string(t.path().join("status")).ok()?;
            let switches = status
                .lines()
                .find(|l| l.starts_with("voluntary_ctxt_switches:"))?
                .to_owned();
            blocked.then(|| (t.path().display().to_string(), switches))
        })
    };
    let (mut last, mut steady) = (None, 0);
    while steady < STEADY_LOOKS {
        let now = waiting();
        steady = if now.is_some() && now == last {
            steady + 1
        } else {
            0
        };
        last = now;
        if Instant::now() >= deadline {
            let calls: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
                .into_iter()
                .flatten()
                .flatten()
                .map(|t| std::fs::read_to_string(t.path().join("syscall")).unwrap_or_default())
                .collect();
            panic!("{pid} never waits for input: {calls:?}");
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// Threads of `pid` running or ready to run (state `R`).
fn runnable_threads(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("stat")).is_ok_and(|s| {
                s.rsplit_once(") ")
                    .is_some_and(|(_, rest)| rest.starts_with('R'))
            })
        })
        .count()
}

/// True while a signal sent to `pid` is still pending (not yet delivered to a thread).
fn signal_pending(pid: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .filter(|l| l.starts_with("SigPnd:") || l.starts_with("ShdPnd:"))
        .any(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|m| !m.trim_start_matches('0').is_empty())
        })
}

/// A SIGINT that reaches the program while it waits for input (the race of `K_interrupt` with
/// the end of an answer) is harmless: no stray output, answers stay in step.
pub(crate) fn idle_interrupt(p: &mut Proc, k: &Kind) {
    let pid = started_pid(&start(p, 1, k));
    send(p, 2, k.name, k.define);
    // The answer's end arrives before the program is back in its read: signal it only once
    // it waits for input again, the idle state this test is about.
    wait_reading_stdin(pid);
    super::send_signal(pid, 2);
    // Delivered is not handled: Poly/ML runs its handler later, on a thread of its own (made
    // runnable at delivery). Wait until no thread of the program is left runnable: the
    // handler has run, as it would long before a client's next input.
    let deadline = Instant::now() + PATIENCE;
    while signal_pending(pid) || runnable_threads(pid) > 0 {
        assert!(
            Instant::now() < deadline,
            "SIGINT stays pending or the program never settles"
        );
        thread::sleep(Duration::from_millis(5));
    }
    for id in [3, 4] {
        let used = send(p, id, k.name, k.use_it);
        assert!(used.contains(k.used), "{}: {used:?}", k.name);
        assert!(!used.contains(k.interrupted), "{}: {used:?}", k.name);
    }
    assert!(alive(pid), "{}: the program died", k.name);
}

/// The pid of the program of session `name` (of kind `kind`, when given), from the
/// `sessions` tool (request `id`).
pub(crate) fn session_pid(p: &mut Proc, id: i64, kind: Option<&str>, name: &str) -> i32 {
    let r = call(p, id, "sessions", json!({}));
    let rows = r["result"]["structuredContent"]["sessions"]
        .as_array()
        .unwrap()
        .clone();
    let row = rows
        .iter()
        .find(|s| s["name"] == name && kind.is_none_or(|k| s["kind"] == k))
        .unwrap_or_else(|| panic!("no session {kind:?}/{name} in {rows:?}"));
    i32::try_from(row["pid"].as_i64().unwrap()).unwrap()
}
