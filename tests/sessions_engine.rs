//! Interactive sessions (README "Sessions"): `stdmcp serve` with a manifest of session kinds
//! run by python3 and sh, driven over pipes.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{alive, send_signal, stdmcp_bin, temp_dir, wait_gone, Proc};
use serde_json::{json, Value};

fn manifest(dir: &Path) -> Value {
    std::fs::create_dir_all(dir.join("work/sub")).unwrap();
    json!({
        "name": "sessions-test",
        "version": "1.0.0",
        "defaults": {"heartbeatSeconds": 0.05},
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
             "args": ["-c", "printf 'ready\\0'; while IFS= read -r l; do eval \"$l\"; printf '\\0'; done"],
             "answer": {"mode": "nul"}},
            {"name": "idle", "description": "cat, stopped when idle", "program": "sh",
             "args": ["-c", "while IFS= read -r l; do echo \"got $l\"; echo '$ '; done"],
             "answer": {"mode": "prompt", "pattern": "\\$ \\n", "greeting": false},
             "idleSeconds": 0.5}
        ]
    })
}

fn serve() -> (Proc, PathBuf) {
    let dir = temp_dir("sessions");
    let path = dir.join("sessions.json");
    std::fs::write(&path, manifest(&dir).to_string()).unwrap();
    let mut cmd = Command::new(stdmcp_bin());
    cmd.args(["serve", "--config"]).arg(&path);
    let mut p = Proc::start(cmd);
    p.initialize("2025-06-18");
    (p, dir)
}

/// Calls a tool and returns (text, isError).
fn call(p: &mut Proc, id: i64, tool: &str, args: Value) -> (String, bool) {
    p.call(json!(id), tool, args, None);
    let r = p.response(&json!(id));
    let res = &r["result"];
    assert!(res.is_object(), "{r}");
    let text = res["content"][0]["text"].as_str().unwrap().to_owned();
    (text, res["isError"].as_bool().unwrap_or(false))
}

fn ok(p: &mut Proc, id: i64, tool: &str, args: Value) -> String {
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
