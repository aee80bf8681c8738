//! Interactive sessions (README "Sessions"): `stdmcp serve` with a manifest of session kinds
//! run by python3 and sh, driven over pipes.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

use std::path::{Path, PathBuf};

use crate::common::{alive, send_signal, serve_command, temp_dir, wait_gone, Proc};
use serde_json::{json, Value};

fn manifest(dir: &Path) -> Value {
    std::fs::create_dir_all(dir.join("work/sub")).unwrap();
    json!({
        "name": "sessions-test",
        "version": "1.0.0",
        // python3 may be a pyenv shim: its programs read and run from the pyenv tree.
        "defaults": {"heartbeatSeconds": 0.05, "readable": ["{programDir}/.."]},
        "roots": {"work": "work"},
        "tools": [],
        "sessions": [
            {"name": "py", "description": "Python 3.", "program": "python3",
             "args": ["-q", "-u", "-i", "-c", "import sys; sys.ps1 = sys.ps2 = ''; print('hello from python')"],
             "workdir": {"root": "work", "default": "."},
             "answer": {"mode": "sentinel", "command": "print('{marker}')"},
             "timeoutSeconds": 30, "maxSessions": 2, "interruptGraceMs": 2000},
            {"name": "deaf", "description": "Ignores SIGINT.", "program": "python3",
             "args": ["-q", "-u", "-i", "-c", "import signal, sys; sys.ps1 = sys.ps2 = ''; signal.signal(signal.SIGINT, signal.SIG_IGN)"],
             "answer": {"mode": "sentinel", "command": "print('{marker}')"},
             "interruptGraceMs": 300},
            {"name": "nul", "description": "sh answering with NUL", "program": "sh",
             "args": ["-c", "printf 'ready\\0'; while IFS= read -r l; do eval \"$l\"; printf '\\0'; done; exec sleep 3600"],
             "answer": {"mode": "nul"}},
            {"name": "idle", "description": "cat, stopped when idle", "program": "sh",
             "args": ["-c", "while IFS= read -r l; do echo \"got $l\"; echo '$ '; done"],
             "answer": {"mode": "prompt", "pattern": "\\$ \\n", "greeting": false},
             "idleSeconds": 0.5},
            {"name": "quiet", "description": "cat, answers after 200 ms of silence", "program": "cat",
             "answer": {"mode": "quiet", "ms": 200}, "inputEnd": "nul"},
            {"name": "jail", "description": "sh answering with NUL, with limits", "program": "sh",
             "args": ["-c", "printf 'ready\\0'; while IFS= read -r l; do eval \"$l\"; printf '\\0'; done"],
             "answer": {"mode": "nul"}, "nice": 7, "maxFileSizeMB": 1},
            {"name": "color", "description": "colored output", "program": "sh",
             "args": ["-c", "while IFS= read -r l; do printf '\\033[1;31m%s\\033[0m\\n' \"$l\"; echo '$ '; done"],
             "answer": {"mode": "prompt", "pattern": "\\$ \\n", "greeting": false}}
        ]
    })
}

/// Serves the manifest `m`, written to `dir/sessions.json` (tests/sessions/options.rs too).
pub(super) fn serve_in(dir: &Path, m: &Value) -> Proc {
    let path = dir.join("sessions.json");
    std::fs::write(&path, m.to_string()).unwrap();
    Proc::initialized(serve_command(&path), "2025-06-18")
}

fn serve() -> (Proc, PathBuf) {
    let dir = temp_dir("sessions");
    let p = serve_in(&dir, &manifest(&dir));
    (p, dir)
}

/// Calls a tool and returns (text, isError).
pub(super) fn call(p: &mut Proc, id: i64, tool: &str, args: Value) -> (String, bool) {
    p.call(json!(id), tool, args, None);
    let r = p.response(&json!(id));
    let res = &r["result"];
    assert!(res.is_object(), "{r}");
    let text = res["content"][0]["text"].as_str().unwrap().to_owned();
    (text, res["isError"].as_bool().unwrap_or(false))
}

pub(super) fn ok(p: &mut Proc, id: i64, tool: &str, args: Value) -> String {
    let (text, err) = call(p, id, tool, args);
    assert!(!err, "{tool} failed: {text}");
    text
}

#[test]
fn start_greets_and_state_persists() {
    let (mut p, dir) = serve();
    let t = ok(&mut p, 1, "py_start", json!({}));
    assert!(t.contains("Started py session `default`"), "{t}");
    assert!(t.contains("hello from python"), "{t}");
    assert!(t.contains(&dir.join("work").display().to_string()), "{t}");
    let t = ok(&mut p, 2, "py_start", json!({}));
    assert!(t.contains("already running"), "{t}");
    assert_eq!(ok(&mut p, 3, "py_send", json!({"input": "x = 41"})), "");
    assert_eq!(
        ok(&mut p, 4, "py_send", json!({"input": "print(x + 1)"})),
        "42"
    );
    let t = ok(
        &mut p,
        5,
        "py_send",
        json!({"input": "import sys; print('err', file=sys.stderr); print('out')"}),
    );
    assert_eq!(t, "err\nout");
    let t = ok(
        &mut p,
        6,
        "py_send",
        json!({"session": "other", "input": "print('x' in dir())"}),
    );
    assert!(t.ends_with("False"), "{t}");
    assert!(t.starts_with("Started py session `other`"), "{t}");
    let (t, err) = call(
        &mut p,
        70,
        "py_start",
        json!({"session": "sub", "workdir": "sub"}),
    );
    assert!(
        err && t.contains("maxSessions") && t.contains("default, other"),
        "{t}"
    );
    let t = ok(&mut p, 71, "py_stop", json!({"session": "other"}));
    assert!(t.starts_with("Stopped py session `other`"), "{t}");
    let t = ok(
        &mut p,
        7,
        "py_start",
        json!({"session": "sub", "workdir": "sub"}),
    );
    assert!(t.contains("work/sub"), "{t}");
    let (t, err) = call(
        &mut p,
        8,
        "py_start",
        json!({"session": "esc", "workdir": ".."}),
    );
    assert!(err && t.contains("outside the root"), "{t}");
    p.finish();
}

/// The pid of session `kind/name`, from the `sessions` tool.
fn session_pid(p: &mut Proc, id: i64, kind: &str, name: &str) -> i32 {
    crate::common::sessions::session_pid(p, id, Some(kind), name)
}

/// Waits for a heartbeat of request `token` whose message is `line`: the send is running
/// and the program printed `line`.
fn wait_status(p: &mut Proc, token: &str, line: &str) {
    let (token, line) = (json!(token), json!(line));
    p.recv_where("the status line", move |v| {
        v["method"] == "notifications/progress"
            && v["params"]["progressToken"] == token
            && v["params"]["message"] == line
    });
}

#[test]
fn cancel_interrupts_keeps_the_session_and_is_never_answered() {
    let (mut p, _) = serve();
    ok(&mut p, 1, "py_send", json!({"input": "x = 7"}));
    p.call(
        json!(2),
        "py_send",
        json!({"input": "import time; print('sleeping'); time.sleep(60)"}),
        Some(json!("t2")),
    );
    wait_status(&mut p, "t2", "sleeping");
    p.notify(
        "notifications/cancelled",
        json!({"requestId": 2, "reason": "test"}),
    );
    // Whatever the interrupt printed (a KeyboardInterrupt traceback) belongs to no answer.
    assert_eq!(ok(&mut p, 3, "py_send", json!({"input": "print(x)"})), "7");
    let t = ok(&mut p, 4, "py_send", json!({"input": "print('next')"}));
    assert_eq!(t, "next");
    let (all, _) = p.finish();
    assert!(
        !all.iter().any(|v| v["id"] == 2),
        "the cancelled send was answered: {all:?}"
    );
}

#[test]
fn deadline_answers_partial_output_and_keeps_the_session() {
    let (mut p, _) = serve();
    ok(&mut p, 1, "py_send", json!({"input": "x = 7"}));
    let (t, err) = call(
        &mut p,
        2,
        "py_send",
        json!({"input": "import time; print('partial'); time.sleep(60)", "timeout": 0.5}),
    );
    assert!(err, "{t}");
    let first = t.lines().next().unwrap();
    assert!(first.starts_with("Interrupted after"), "{t}");
    assert!(first.contains("timeout of 500 ms"), "{t}");
    assert!(first.contains("still usable"), "{t}");
    assert!(t.contains("partial"), "{t}");
    assert_eq!(ok(&mut p, 3, "py_send", json!({"input": "print(x)"})), "7");
    p.finish();
}

#[test]
fn an_unresponsive_program_is_restarted_and_says_its_state_was_lost() {
    let (mut p, _) = serve();
    ok(&mut p, 1, "deaf_send", json!({"input": "x = 7"}));
    let pid = session_pid(&mut p, 2, "deaf", "default");
    let (t, err) = call(
        &mut p,
        3,
        "deaf_send",
        json!({"input": "import time; time.sleep(60)", "timeout": 0.3}),
    );
    assert!(err, "{t}");
    assert!(
        t.contains("killed and restarted") && t.contains("state was lost"),
        "{t}"
    );
    wait_gone(&[pid]);
    assert_ne!(session_pid(&mut p, 4, "deaf", "default"), pid);
    let t = ok(
        &mut p,
        5,
        "deaf_send",
        json!({"input": "print('x' in dir())"}),
    );
    assert!(t.contains("earlier state was lost"), "{t}");
    assert!(t.ends_with("False"), "{t}");
    p.finish();
}

#[test]
fn interrupt_tool_stops_the_running_input() {
    let (mut p, _) = serve();
    let (t, _) = call(&mut p, 1, "py_interrupt", json!({}));
    assert!(t.contains("no py session"), "{t}");
    ok(&mut p, 2, "py_start", json!({}));
    let t = ok(&mut p, 3, "py_interrupt", json!({}));
    assert!(t.contains("idle: nothing to interrupt"), "{t}");
    p.call(
        json!(4),
        "py_send",
        json!({"input": "import time; print('busy'); time.sleep(60)"}),
        Some(json!("t4")),
    );
    wait_status(&mut p, "t4", "busy");
    let t = ok(&mut p, 5, "py_interrupt", json!({}));
    assert!(t.starts_with("Sent SIGINT"), "{t}");
    let r = p.response(&json!(4));
    let t = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        t.starts_with("busy") && t.contains("KeyboardInterrupt"),
        "{t}"
    );
    assert_eq!(ok(&mut p, 6, "py_send", json!({"input": "print(1)"})), "1");
    p.finish();
}

#[test]
fn concurrent_sends_take_turns() {
    let (mut p, _) = serve();
    ok(&mut p, 1, "py_start", json!({}));
    p.call(
        json!(2),
        "py_send",
        json!({"input": "import time; print('A1'); time.sleep(0.3); print('A2')"}),
        None,
    );
    p.call(json!(3), "py_send", json!({"input": "print('B')"}), None);
    let a = p.response(&json!(2));
    let b = p.response(&json!(3));
    assert_eq!(a["result"]["content"][0]["text"], "A1\nA2", "{a}");
    assert_eq!(b["result"]["content"][0]["text"], "B", "{b}");
    // A send waiting for its turn has its deadline and can be cancelled.
    p.call(
        json!(4),
        "py_send",
        json!({"input": "import time; print('long'); time.sleep(60)"}),
        Some(json!("t4")),
    );
    wait_status(&mut p, "t4", "long");
    let (t, err) = call(
        &mut p,
        5,
        "py_send",
        json!({"input": "print('never')", "timeout": 0.3}),
    );
    assert!(
        err && t.contains("busy with another input") && t.contains("nothing was sent"),
        "{t}"
    );
    p.call(
        json!(6),
        "py_send",
        json!({"input": "print('never either')"}),
        Some(json!("t6")),
    );
    // A heartbeat shows that its handler runs (waiting for the turn).
    p.recv_where("a heartbeat of the waiting send", |v| {
        v["method"] == "notifications/progress" && v["params"]["progressToken"] == "t6"
    });
    p.notify("notifications/cancelled", json!({"requestId": 6}));
    p.notify("notifications/cancelled", json!({"requestId": 4}));
    assert_eq!(
        ok(&mut p, 7, "py_send", json!({"input": "print('C')"})),
        "C"
    );
    p.request(
        json!(9),
        "resources/read",
        json!({"uri": "session://py/default/transcript"}),
    );
    let r = p.response(&json!(9));
    let transcript = r["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(!transcript.contains("never"), "{transcript}");
    let big = ok(
        &mut p,
        8,
        "py_send",
        json!({"input": "print('x' * 200000)"}),
    );
    assert!(
        big.contains("bytes of output omitted") && big.len() < 70_000,
        "{}",
        big.len()
    );
    let (all, _) = p.finish();
    assert!(!all.iter().any(|v| v["id"] == 4 || v["id"] == 6), "{all:?}");
}

#[test]
fn a_crash_is_reported_with_its_exit_status_and_start_restarts() {
    let (mut p, _) = serve();
    ok(&mut p, 1, "py_send", json!({"input": "x = 1"}));
    let (t, err) = call(
        &mut p,
        2,
        "py_send",
        json!({"input": "import os; print('bye'); os._exit(3)"}),
    );
    assert!(
        err && t.contains("exited with code 3") && t.contains("bye"),
        "{t}"
    );
    let (t, err) = call(&mut p, 3, "py_send", json!({"input": "print(x)"}));
    assert!(
        err && t.contains("dead (exited with code 3)") && t.contains("not sent"),
        "{t}"
    );
    p.call(json!(4), "sessions", json!({}), None);
    let r = p.response(&json!(4));
    assert_eq!(
        r["result"]["structuredContent"]["sessions"][0]["state"], "dead (exited with code 3)",
        "{r}"
    );
    let t = ok(&mut p, 5, "py_start", json!({}));
    assert!(t.contains("Started") && t.contains("state is lost"), "{t}");
    let (t, err) = call(
        &mut p,
        6,
        "py_send",
        json!({"input": "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"}),
    );
    assert!(
        err && t.contains("killed (SIGKILL), not by the server: perhaps out of memory"),
        "{t}"
    );
    let t = ok(&mut p, 7, "py_restart", json!({}));
    assert!(t.starts_with("Restarted"), "{t}");
    assert_eq!(ok(&mut p, 8, "py_send", json!({"input": "print(2)"})), "2");
    p.finish();
}

#[test]
fn nul_and_prompt_modes_and_idle_stop() {
    let (mut p, _) = serve();
    let t = ok(&mut p, 1, "nul_start", json!({}));
    assert!(t.ends_with("ready"), "{t}");
    assert_eq!(
        ok(
            &mut p,
            2,
            "nul_send",
            json!({"input": "echo hi; echo there >&2"})
        ),
        "hi\nthere"
    );
    assert_eq!(
        ok(&mut p, 3, "idle_send", json!({"input": "x"}))
            .lines()
            .last(),
        Some("got x")
    );
    let t = ok(&mut p, 10, "quiet_send", json!({"input": "one\ntwo"}));
    assert!(
        t.starts_with("Started quiet session") && t.ends_with(".\none\ntwo"),
        "{t:?}"
    );
    assert_eq!(
        ok(&mut p, 12, "quiet_send", json!({"input": "three"})),
        "three"
    );
    let t = ok(&mut p, 11, "color_send", json!({"input": "red"}));
    assert_eq!(t.lines().last(), Some("red"), "{t:?}");
    let pid = session_pid(&mut p, 4, "idle", "default");
    // The idle timer stops it after 0.5 s without input.
    wait_gone(&[pid]);
    let (t, err) = call(&mut p, 5, "idle_send", json!({"input": "y"}));
    assert!(err && t.contains("stopped after being idle"), "{t}");
    p.finish();
}

#[test]
fn limits_apply_and_escaped_processes_die_with_the_session() {
    let (mut p, _) = serve();
    ok(&mut p, 1, "jail_start", json!({}));
    // Field 19 of /proc/PID/stat is the niceness, inherited by what the session runs.
    let nice = ok(
        &mut p,
        2,
        "jail_send",
        json!({"input": "cut -d' ' -f19 /proc/self/stat"}),
    );
    assert_eq!(nice.trim(), "7");
    // A process that leaves the session's group (setsid) still carries its marker.
    let out = ok(
        &mut p,
        3,
        "jail_send",
        // Waits until the child is the leader of its own session (field 6 of its stat).
        json!({"input": "setsid sleep 4321 </dev/null >/dev/null 2>&1 & p=$!; \
            while [ \"$(cut -d' ' -f6 /proc/$p/stat)\" != $p ]; do :; done; echo $p"}),
    );
    let escaped: i32 = out.trim().parse().unwrap();
    assert!(alive(escaped));
    let t = ok(&mut p, 4, "jail_stop", json!({}));
    assert!(
        t.contains("process group was killed") && !t.contains("memory"),
        "{t}"
    );
    wait_gone(&[escaped]);
    p.finish();
}

#[test]
fn transcripts_are_resources() {
    let (mut p, _) = serve();
    ok(
        &mut p,
        1,
        "py_send",
        json!({"input": "print('in the transcript')"}),
    );
    p.request(
        json!(2),
        "resources/read",
        json!({"uri": "session://py/default/transcript"}),
    );
    let r = p.response(&json!(2));
    let text = r["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("» print('in the transcript')") && text.contains("\nin the transcript\n"),
        "{text}"
    );
    p.request(json!(3), "resources/list", json!({}));
    let r = p.response(&json!(3));
    assert!(
        r.to_string().contains("session://py/default/transcript"),
        "{r}"
    );
    p.request(
        json!(4),
        "resources/read",
        json!({"uri": "session://py/nope/transcript"}),
    );
    let r = p.response(&json!(4));
    assert_eq!(r["error"]["code"], -32002, "{r}");
    p.finish();
}

#[test]
fn sessions_end_with_the_server() {
    // stdin EOF
    let (mut p, _) = serve();
    ok(&mut p, 1, "py_start", json!({}));
    let pid = session_pid(&mut p, 2, "py", "default");
    p.finish();
    assert!(!alive(pid), "session process {pid} outlived the server");
    // SIGKILL of the server
    let (mut p, _) = serve();
    ok(&mut p, 1, "py_start", json!({}));
    ok(&mut p, 2, "nul_start", json!({}));
    // The nul kind outlives the end of its stdin, and leaves a grandchild in its group.
    let grandchild: i32 = ok(
        &mut p,
        5,
        "nul_send",
        json!({"input": "sleep 3600 & echo $!"}),
    )
    .parse()
    .unwrap();
    let pids = [
        session_pid(&mut p, 3, "py", "default"),
        session_pid(&mut p, 4, "nul", "default"),
        grandchild,
    ];
    send_signal(p.pid(), libc::SIGKILL);
    p.drain_to_exit();
    wait_gone(&pids);
    // SIGTERM while a send runs: the send is cancelled, the session killed, the server exits.
    let (mut p, _) = serve();
    p.call(
        json!(1),
        "py_send",
        json!({"input": "import time; print('long'); time.sleep(60)"}),
        Some(json!("t1")),
    );
    wait_status(&mut p, "t1", "long");
    let pid = session_pid(&mut p, 2, "py", "default");
    send_signal(p.pid(), libc::SIGTERM);
    p.drain_to_exit();
    assert!(!alive(pid), "session process {pid} outlived the server");
}

#[test]
fn the_schema_accepts_session_kinds_and_rejects_bad_ones() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("docs/manifest.schema.json")).unwrap(),
    )
    .unwrap();
    let dir = temp_dir("schema");
    let mut m = manifest(&dir);
    stdmcp_proto::schema::validate(&schema, &m).unwrap();
    m.as_object_mut().unwrap().remove("tools");
    stdmcp_proto::schema::validate(&schema, &m).unwrap();
    m["sessions"][0]["answer"] = json!({"mode": "quiet"});
    assert!(stdmcp_proto::schema::validate(&schema, &m).is_err());
    m["sessions"][0]["answer"] = json!({"mode": "nul", "greeting": false});
    stdmcp_proto::schema::validate(&schema, &m).unwrap();
    m["sessions"][0]["idle"] = json!(1);
    assert!(stdmcp_proto::schema::validate(&schema, &m).is_err());
}

#[test]
fn output_between_answers_is_in_no_answer() {
    let (mut p, _) = serve();
    ok(&mut p, 0, "py_start", json!({}));
    let t = ok(
        &mut p,
        1,
        "py_send",
        json!({"input": "import threading; threading.Timer(0.1, lambda: print('late')).start()"}),
    );
    assert_eq!(t, "");
    // Wait until the late line arrived (it shows in the transcript).
    let mut id = 100;
    loop {
        id += 1;
        p.request(
            json!(id),
            "resources/read",
            json!({"uri": "session://py/default/transcript"}),
        );
        let r = p.response(&json!(id));
        if r["result"]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\nlate\n")
        {
            break;
        }
    }
    assert_eq!(ok(&mut p, 2, "py_send", json!({"input": "print(1)"})), "1");
    p.finish();
}
