//! `stdmcp serve`: processes that leave their call's process group (setsid, double fork,
//! nohup) are gone when the call ends and when the server exits, however it exits; resource
//! limits reach the child; heartbeats carry the latest output line of either stream.
#![cfg(target_os = "linux")]
#![allow(unsafe_code, clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

use std::path::PathBuf;
use std::process::Command;

use crate::common::{
    alive, escaped_pid, fixture, send_signal, serve_command, stdmcp_bin, temp_dir, wait_gone,
    zombies_of, KillOnDrop, Proc,
};
use serde_json::{json, Value};

const WAYS: [&str; 5] = ["setsid", "double", "nohup", "tree", "thread"];

/// How the server starts a tool: `Hook` with a pre-exec hook (fork, then the hardening and the
/// limits before exec), which a resource limit (here `nice` in the defaults) requires; `Spawn`
/// without one (`posix_spawn`, how the `stdmcp` binary starts tools without limits).
#[derive(Clone, Copy, Debug)]
enum Start {
    Hook,
    Spawn,
}

const STARTS: [Start; 2] = [Start::Hook, Start::Spawn];

fn manifest_file() -> PathBuf {
    manifest_for(Start::Hook)
}

fn manifest_for(start: Start) -> PathBuf {
    let dir = temp_dir("containment");
    let file = dir.join("tools.json");
    let defaults = match start {
        Start::Hook => json!({"killGraceMs": 200, "nice": 3}),
        Start::Spawn => json!({"killGraceMs": 200}),
    };
    let m = json!({
        "name": "containment",
        "version": "1.0.0",
        "defaults": defaults,
        "tools": [
            {"name": "escape", "description": "starts a process that leaves the call",
             "program": fixture("escape.sh"),
             "args": [{"param": "how"}, {"param": "then"}],
             "params": {"how": {"type": "string", "maxLength": 10, "required": true},
                        "then": {"type": "string", "maxLength": 10, "required": true}}},
            {"name": "heartbeat", "description": "the heartbeat reproducer",
             "program": fixture("heartbeat.sh")},
            {"name": "nice", "description": "prints its niceness", "program": "sh",
             "args": ["-c", "cut -d' ' -f19 /proc/self/stat"]},
            {"name": "nicer", "description": "prints its niceness", "program": "sh",
             "args": ["-c", "cut -d' ' -f19 /proc/self/stat"], "nice": 9, "cpuSeconds": 100,
             "maxMemoryMB": 4096, "maxFileSizeMB": 10},
            {"name": "fds", "description": "lists its open descriptors (3: the listed directory)",
             "program": "ls", "args": ["/proc/self/fd"]}
        ]
    });
    std::fs::write(&file, m.to_string()).unwrap();
    file
}

fn serve() -> Proc {
    serve_with(Start::Hook)
}

fn serve_with(start: Start) -> Proc {
    let mut cmd = serve_command(&manifest_for(start));
    cmd.env("STDMCP_HEARTBEAT_MS", "50")
        .env("STDMCP_DRAIN_MS", "100");
    Proc::initialized(cmd, "2025-06-18")
}

/// What the tool printed on stdout (from the structured result).
fn stdout(r: &Value) -> &str {
    r["result"]["structuredContent"]["stdout"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn escaped_processes_die_with_their_call_and_are_reaped() {
    for start in STARTS {
        escaped_processes_die_with_their_call(start);
    }
}

fn escaped_processes_die_with_their_call(start: Start) {
    let mut p = serve_with(start);
    for (i, how) in WAYS.into_iter().enumerate() {
        let id = json!(i);
        p.call(
            id.clone(),
            "escape",
            json!({"how": how, "then": "exit"}),
            None,
        );
        let r = p.response(&id);
        assert_eq!(r["result"].get("isError"), None, "{start:?} {how}: {r}");
        let pid = escaped_pid(stdout(&r));
        let _cleanup = KillOnDrop(pid);
        wait_gone(&[pid]);
        // Reparented to the server (a subreaper) and reaped there, not left a zombie.
        assert!(
            !zombies_of(p.pid()).contains(&pid),
            "{start:?} {how}: zombie {pid}"
        );
    }
    // Nor any other process of theirs (the tree's sleep dies before or after its shell).
    assert_eq!(zombies_of(p.pid()), Vec::<i32>::new());
    let (_, status) = p.finish();
    assert!(status.success());
}

/// The server ends by `end` while a call whose escaped process is running is in flight.
fn escape_then_end_server(how: &str, end: &str) {
    for start in STARTS {
        escape_then_end(start, how, end);
    }
}

fn escape_then_end(start: Start, how: &str, end: &str) {
    let mut p = serve_with(start);
    p.call(
        json!(1),
        "escape",
        json!({"how": how, "then": "wait"}),
        Some(json!("t")),
    );
    let pid = p.escaped_pid_of("t");
    let _cleanup = KillOnDrop(pid);
    assert!(
        alive(pid),
        "{start:?} {how}: the escaped process is not running"
    );
    match end {
        "EOF" => p.close_stdin(),
        "SIGTERM" => send_signal(p.pid(), libc::SIGTERM),
        "SIGINT" => send_signal(p.pid(), libc::SIGINT),
        "SIGKILL" => send_signal(p.pid(), libc::SIGKILL),
        _ => unreachable!(),
    }
    p.drain_to_exit();
    wait_gone(&[pid]);
}

#[test]
fn escaped_processes_die_when_the_server_exits_by_eof() {
    for how in WAYS {
        escape_then_end_server(how, "EOF");
    }
}

#[test]
fn escaped_processes_die_when_the_server_exits_by_sigterm() {
    for how in WAYS {
        escape_then_end_server(how, "SIGTERM");
    }
}

#[test]
fn escaped_processes_die_when_the_server_exits_by_sigint() {
    for how in WAYS {
        escape_then_end_server(how, "SIGINT");
    }
}

#[test]
fn escaped_processes_die_when_the_server_is_sigkilled() {
    for how in WAYS {
        escape_then_end_server(how, "SIGKILL");
    }
}

#[test]
fn heartbeat_carries_the_latest_line_of_either_stream() {
    let mut p = serve();
    p.call(json!(1), "heartbeat", json!({}), Some(json!("hb")));
    let says = |want: &'static str| {
        move |m: &Value| m["params"]["progressToken"] == "hb" && m["params"]["message"] == want
    };
    // `two` follows `one` in the same chunk; `four` (stderr) follows `three` (stdout).
    p.recv_where("a heartbeat saying two", says("two"));
    p.recv_where("a heartbeat saying four", says("four"));
    p.notify("notifications/cancelled", json!({"requestId": 1}));
    let (_, status) = p.finish();
    assert!(status.success());
}

#[test]
fn limits_reach_the_child_and_check_shows_them() {
    let mut p = serve();
    p.call(json!(1), "nice", json!({}), None);
    assert_eq!(
        stdout(&p.response(&json!(1))).trim(),
        "3",
        "the defaults' nice"
    );
    p.call(json!(2), "nicer", json!({}), None);
    assert_eq!(
        stdout(&p.response(&json!(2))).trim(),
        "9",
        "the tool's own nice"
    );
    p.finish();
    let out = Command::new(stdmcp_bin())
        .arg("check")
        .arg(manifest_file())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("limits: nice 3\n"), "{shown}");
    assert!(
        shown.contains("limits: memory 4096 MiB, CPU 100 s, file size 10 MiB, nice 9\n"),
        "{shown}"
    );
}

#[test]
fn a_served_servers_escaped_process_dies_with_the_client() {
    // `stdmcp tools -- SERVER`: the server (a shell that starts an escaping process, then
    // becomes `stdmcp serve`) is the client's child; what it started goes when the client ends.
    let dir = temp_dir("client-escape");
    let pidfile = dir.join("pid");
    let server = format!(
        "setsid sleep 4246 </dev/null >/dev/null 2>&1 & echo $! > '{}'; exec '{}' serve --config '{}'",
        pidfile.display(),
        stdmcp_bin().display(),
        manifest_file().display()
    );
    let out = Command::new(stdmcp_bin())
        .args(["tools", "--", "sh", "-c", &server])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && listed.contains("heartbeat"),
        "{listed}"
    );
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let _cleanup = KillOnDrop(pid);
    wait_gone(&[pid]);
}

#[test]
fn no_descriptor_of_the_server_reaches_a_tool() {
    // The server inherits descriptor 7 without close-on-exec (a client that leaks one); its
    // tools must not see it, whichever way they are started.
    for start in STARTS {
        let server = format!(
            "exec 7</dev/null; exec '{}' serve --config '{}'",
            stdmcp_bin().display(),
            manifest_for(start).display()
        );
        let mut cmd = Command::new("sh");
        cmd.args(["-c", &server]);
        let mut p = Proc::initialized(cmd, "2025-06-18");
        for id in 1..=2 {
            p.call(json!(id), "fds", json!({}), None);
            let r = p.response(&json!(id));
            assert_eq!(stdout(&r), "0\n1\n2\n3\n", "{start:?}: {r}");
        }
        let (_, status) = p.finish();
        assert!(status.success());
    }
}

/// Sends SIGCONT to a stopped process when dropped (the test's end, or its failure).
struct ContinueOnDrop(i32);

impl Drop for ContinueOnDrop {
    fn drop(&mut self) {
        // SAFETY: kill has no memory-safety preconditions; the process may be gone already.
        unsafe { libc::kill(self.0, libc::SIGCONT) };
    }
}

#[test]
fn a_stopped_watchdog_never_holds_up_a_call() {
    let dir = temp_dir("stopped-watchdog");
    let m = json!({
        "name": "stopped-watchdog",
        "tools": [{"name": "t", "description": "does nothing", "program": "true"}]
    });
    let mut p = crate::common::serve_manifest(&m, &dir, &[]);
    let first = crate::common::sessions::call(&mut p, 0, "t", json!({}));
    assert!(
        first["result"]["isError"] != true && first.get("error").is_none(),
        "{first}"
    );
    // The watchdog (a `sh` child of the server) is stopped: it reads nothing from its pipe,
    // which fills after about 4000 calls (two lines each); about 2000 more fill the server's
    // buffer for it, and then it is replaced.
    let watchdogs = crate::common::children_named(p.pid(), "sh");
    assert_eq!(watchdogs.len(), 1, "{watchdogs:?}");
    let _resume = ContinueOnDrop(watchdogs[0]);
    send_signal(watchdogs[0], libc::SIGSTOP);
    const CALLS: i64 = 10_000;
    const BATCH: i64 = 100;
    for batch in 0..CALLS / BATCH {
        let ids = (1..=BATCH).map(|i| batch * BATCH + i);
        for id in ids.clone() {
            p.request(
                json!(id),
                "tools/call",
                json!({"name": "t", "arguments": {}}),
            );
        }
        for id in ids {
            let r = p.response(&json!(id));
            assert!(
                r["result"]["isError"] != true && r.get("error").is_none(),
                "{r}"
            );
        }
    }
    let now = crate::common::children_named(p.pid(), "sh");
    assert!(
        now.len() == 1 && now[0] != watchdogs[0] && !crate::common::alive(watchdogs[0]),
        "the stopped watchdog {} was not replaced: {now:?}",
        watchdogs[0]
    );
    drop(_resume);
    let (_, status) = p.finish();
    assert!(status.success(), "{status:?}");
}
