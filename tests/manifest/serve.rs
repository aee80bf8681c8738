//! `stdmcp serve` with manifests that run real processes.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;

use crate::common::{
    fixture, pids_from_progress, runtime_fixture, send_signal, serve_manifest, stdmcp_bin,
    temp_dir, wait_gone, zombies_of, Proc,
};
use serde_json::{json, Value};

/// A manifest exercising the runner; `dir` holds it, its root `files/` and the marker file.
fn manifest(dir: &Path) -> Value {
    std::fs::create_dir_all(dir.join("files/sub")).unwrap();
    std::fs::write(dir.join("files/hello.txt"), "hello\n").unwrap();
    std::fs::write(dir.join("secret.txt"), "secret\n").unwrap();
    std::os::unix::fs::symlink(dir.join("secret.txt"), dir.join("files/escape")).unwrap();
    json!({
        "name": "test-manifest",
        "version": "1.2.3",
        "defaults": {"killGraceMs": 300, "heartbeatSeconds": 0.05},
        "roots": {"files": "files"},
        "tools": [
            {"name": "tree", "description": "child and grandchild", "program": runtime_fixture("tree.sh"),
             "progress": {"prefix": "PROGRESS "}, "timeoutSeconds": 600},
            {"name": "slow", "description": "times out", "program": runtime_fixture("tree.sh"), "timeoutSeconds": 0.3},
            {"name": "env", "description": "prints the environment", "program": "env", "env": {"DECLARED": "yes"}},
            {"name": "big", "description": "lots of output", "program": runtime_fixture("big.sh"), "maxOutputBytes": 1000},
            {"name": "record", "description": "records its arguments", "program": fixture("record.sh"),
             "env": {"MARKER": dir.join("marker")}, "writable": [dir],
             "args": [{"param": "value"}, {"param": "file"}, {"param": "words"}],
             "params": {
                 "value": {"type": "string", "maxLength": 100},
                 "file": {"type": "path", "root": "files", "kind": "file"},
                 "words": {"type": "array", "maxItems": 3}
             }},
            {"name": "cat", "description": "reads stdin", "program": "cat", "stdin": "text",
             "params": {"text": {"type": "string", "maxLength": 100000}}},
            {"name": "fail", "description": "exits 3", "program": "sh", "args": ["-c", "echo out; echo err >&2; exit 3"]},
            {"name": "quick", "description": "exits at once", "program": "true"}
        ]
    })
}

fn serve(env: &[(&str, &str)]) -> (Proc, std::path::PathBuf) {
    let dir = temp_dir("manifest");
    let p = serve_manifest(&manifest(&dir), &dir, env);
    (p, dir)
}

#[test]
fn cancel_kills_child_and_grandchild() {
    let (mut p, _dir) = serve(&[]);
    p.call(json!(1), "tree", json!({}), Some(json!("t")));
    let pids = pids_from_progress(&mut p, "t");
    assert_eq!(pids.len(), 2);
    assert!(pids.iter().all(|pid| crate::common::alive(*pid)));
    p.notify("notifications/cancelled", json!({"requestId": 1}));
    wait_gone(&pids);
    p.call(json!(2), "quick", json!({}), None);
    assert_eq!(p.response(&json!(2))["result"]["isError"], Value::Null);
    let (rest, _) = p.finish();
    assert!(
        rest.iter().all(|m| m["id"] != json!(1)),
        "cancelled call answered"
    );
}

#[test]
fn a_deadline_kills_the_tree_and_says_so() {
    let (mut p, _dir) = serve(&[]);
    p.call(json!(1), "slow", json!({}), None);
    let r = p.response(&json!(1));
    assert_eq!(r["result"]["isError"], true);
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("timed out after 300 ms"),
        "{r}"
    );
    assert_eq!(r["result"]["structuredContent"]["timedOut"], true);
    // The fixture's grandchild printed its pid on stdout: it is in the captured output.
    let out = r["result"]["structuredContent"]["stdout"].as_str().unwrap();
    let pids: Vec<i32> = out
        .trim()
        .trim_start_matches("PROGRESS 1 pids ")
        .split_whitespace()
        .map(|s| s.parse().unwrap())
        .collect();
    wait_gone(&pids);
    p.finish();
}

#[test]
fn sigkill_of_the_server_takes_the_children_down() {
    let (mut p, _dir) = serve(&[]);
    p.call(json!(1), "tree", json!({}), Some(json!("k")));
    let pids = pids_from_progress(&mut p, "k");
    send_signal(p.pid(), 9);
    p.wait_exit();
    wait_gone(&pids);
}

#[test]
fn sigterm_while_busy_cancels_and_exits_zero() {
    let (mut p, _dir) = serve(&[("STDMCP_DRAIN_MS", "100")]);
    p.call(json!(1), "tree", json!({}), Some(json!("s")));
    let pids = pids_from_progress(&mut p, "s");
    send_signal(p.pid(), 15);
    let (_, status) = p.drain_to_exit();
    assert!(status.success(), "{status:?}");
    wait_gone(&pids);
}

#[test]
fn a_hundred_concurrent_calls_leave_no_zombie() {
    let (mut p, _dir) = serve(&[]);
    for i in 0..100 {
        p.call(json!(i), "quick", json!({}), None);
    }
    let mut ids = HashSet::new();
    while ids.len() < 100 {
        let m = p.recv();
        assert!(m["result"]["structuredContent"]["exitCode"] == 0, "{m}");
        ids.insert(m["id"].as_i64().unwrap());
    }
    assert_eq!(zombies_of(p.pid()), Vec::<i32>::new());
    p.finish();
}

#[test]
fn output_over_the_cap_keeps_head_and_tail() {
    let (mut p, _dir) = serve(&[]);
    p.call(json!(1), "big", json!({}), None);
    let r = p.response(&json!(1));
    let s = &r["result"]["structuredContent"];
    let out = s["stdout"].as_str().unwrap();
    assert!(out.starts_with("START\n0123456789\n"), "{out}");
    assert!(out.ends_with("\nEND\n"), "{out}");
    assert!(out.contains("bytes omitted"), "{out}");
    assert!(s["truncated"]["stdout"].as_u64().unwrap() > 100_000);
    assert!(out.len() < 1200);
    p.finish();
}

#[test]
fn injection_attempts_are_refused_and_nothing_runs() {
    let (mut p, dir) = serve(&[]);
    let huge = "x".repeat(200);
    let attempts = [
        (json!({"value": "-rf"}), "starts with '-'"),
        // Shell punctuation is ordinary text here (no shell, no interpreter: see
        // tests/security/confinement.rs); control characters are not.
        (json!({"value": "a\ntouch PWNED"}), "control character"),
        (json!({"words": ["ok", "\u{1b}[2J"]}), "control character"),
        (
            json!({"words": ["ok", "--output=/etc/x"]}),
            "starts with '-'",
        ),
        (
            json!({"file": "../secret.txt"}),
            "outside the allowed directory",
        ),
        (json!({"file": "escape"}), "outside the allowed directory"),
        (
            json!({"file": format!("{}/secret.txt", dir.display())}),
            "outside the allowed directory",
        ),
        (json!({"file": "missing.txt"}), "cannot be used"),
        (json!({"value": huge}), "more than the maximum"),
        (json!({"other": 1}), "unknown argument"),
    ];
    for (i, (args, why)) in attempts.iter().enumerate() {
        p.call(json!(i), "record", args.clone(), None);
        let r = p.response(&json!(i));
        assert_eq!(r["result"]["isError"], true, "{args}: {r}");
        let text = r["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(why), "{args}: {text}");
    }
    assert!(
        !dir.join("marker").exists(),
        "a refused call ran: {:?}",
        std::fs::read_to_string(dir.join("marker"))
    );
    // Allowed values do run, with the path resolved inside the root.
    p.call(
        json!(100),
        "record",
        json!({"value": "plain value", "file": "sub/../hello.txt", "words": ["a", "b"]}),
        None,
    );
    let r = p.response(&json!(100));
    assert_eq!(r["result"]["content"][0]["text"], "recorded\n", "{r}");
    let marker = std::fs::read_to_string(dir.join("marker")).unwrap();
    assert_eq!(
        marker,
        format!(
            "plain value {} a b\n",
            dir.join("files/hello.txt").display()
        )
    );
    p.finish();
}

#[test]
fn undeclared_server_environment_does_not_reach_the_child() {
    let (mut p, _dir) = serve(&[("STDMCP_TEST_SECRET", "hunter2")]);
    p.call(json!(1), "env", json!({}), None);
    let r = p.response(&json!(1));
    let out = r["result"]["structuredContent"]["stdout"].as_str().unwrap();
    assert!(
        !out.contains("STDMCP_TEST_SECRET") && !out.contains("hunter2"),
        "{out}"
    );
    assert!(out.contains("DECLARED=yes"), "{out}");
    assert!(
        out.lines().all(|l| {
            let k = l.split('=').next().unwrap();
            [
                "PATH",
                "HOME",
                "USER",
                "LOGNAME",
                "LANG",
                "LC_ALL",
                "LC_CTYPE",
                "TZ",
                "TMPDIR",
                "DECLARED",
                "STDMCP_CALL",
                "STDMCP_CALL_ID",
            ]
            .contains(&k)
        }),
        "{out}"
    );
    p.finish();
}

#[test]
fn results_say_what_happened() {
    let (mut p, _dir) = serve(&[]);
    p.call(json!(1), "fail", json!({}), None);
    let r = p.response(&json!(1));
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(
        r["result"]["content"][0]["text"],
        "fail exited with code 3.\nout\n--- stderr ---\nerr\n"
    );
    assert_eq!(r["result"]["structuredContent"]["exitCode"], 3);
    p.call(json!(2), "cat", json!({"text": "from stdin"}), None);
    assert_eq!(
        p.response(&json!(2))["result"]["content"][0]["text"],
        "from stdin"
    );
    p.call(json!(3), "cat", json!({}), None);
    assert_eq!(
        p.response(&json!(3))["result"]["content"][0]["text"],
        "(no output)"
    );
    p.request(json!(4), "tools/list", json!({}));
    let tools = p.response(&json!(4));
    let record = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "record")
        .unwrap()
        .clone();
    assert_eq!(record["inputSchema"]["properties"]["words"]["maxItems"], 3);
    assert_eq!(record["annotations"]["readOnlyHint"], false);
    assert!(record["outputSchema"]["properties"]["timedOut"].is_object());
    p.finish();
}

#[test]
fn bad_manifests_fail_clearly_without_stdout() {
    let dir = temp_dir("bad");
    let path = dir.join("bad.json");
    std::fs::write(&path, r#"{"name": "x", "tools": [{"name": "a b", "description": "d", "program": "no-such-program-xyz", "args": [{"param": "nope"}], "params": {"p": {"type": "path", "root": "missing"}}}]}"#).unwrap();
    for sub in [vec!["serve", "--config"], vec!["check"]] {
        let out = Command::new(stdmcp_bin())
            .args(&sub)
            .arg(&path)
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(
            out.stdout.is_empty(),
            "stdout: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let err = String::from_utf8(out.stderr).unwrap();
        for want in [
            "tools[0].name",
            "tools[0].program: `no-such-program-xyz` was not found",
            "tools[0].args[0].param: names no declared parameter: nope",
            "tools[0].params.p.root: names no declared root: missing",
        ] {
            assert!(err.contains(want), "missing {want:?} in:\n{err}");
        }
    }
}

#[test]
fn default_manifest_serves_read_only_tools() {
    let dir = temp_dir("default");
    std::fs::write(dir.join("notes.md"), "alpha\nbeta\n").unwrap();
    let mut cmd = Command::new(stdmcp_bin());
    cmd.arg("serve")
        .current_dir(&dir)
        .env_remove("STDMCP_CONFIG")
        .env("XDG_CONFIG_HOME", &dir)
        .env_remove("STDMCP_ROOT");
    let mut p = Proc::initialized(cmd, "2025-11-25");
    p.call(json!(1), "search_text", json!({"pattern": "be.a"}), None);
    let r = p.response(&json!(1));
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("notes.md:2:beta"),
        "{r}"
    );
    p.call(json!(2), "read_file", json!({"path": "/etc/passwd"}), None);
    assert_eq!(p.response(&json!(2))["result"]["isError"], true);
    p.call(json!(3), "find_files", json!({"name": "*.md"}), None);
    assert!(p.response(&json!(3))["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("notes.md"));
    let (_, status) = p.finish();
    assert!(status.success());
    assert!(p_stderr_mentions_builtin(&dir));
}

fn p_stderr_mentions_builtin(dir: &Path) -> bool {
    let out = Command::new(stdmcp_bin())
        .arg("serve")
        .current_dir(dir)
        .env_remove("STDMCP_CONFIG")
        .env("XDG_CONFIG_HOME", dir)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    out.stdout.is_empty()
        && String::from_utf8_lossy(&out.stderr).contains("serving the built-in manifest over")
}

#[test]
fn shipped_manifests_follow_the_shipped_schema() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("docs/manifest.schema.json")).unwrap(),
    )
    .unwrap();
    let mut checked = 0;
    for path in [
        "src/manifest/default.json",
        "examples/provers.json",
        "examples/dev.json",
        "examples/hol4.json",
        "examples/rocq.json",
        "scripts/interop/test-manifest.json",
    ] {
        let m: Value =
            serde_json::from_str(&std::fs::read_to_string(root.join(path)).unwrap()).unwrap();
        stdmcp_proto::schema::validate(&schema, &m).unwrap_or_else(|e| panic!("{path}: {e}"));
        checked += 1;
    }
    // The schema rejects what the loader rejects.
    let bad = json!({"name": "x", "tools": [{"name": "t", "description": "d", "program": "p", "param": {}}]});
    assert!(stdmcp_proto::schema::validate(&schema, &bad).is_err());
    // Keywords of another type, and arrays of arrays, as the loader refuses them.
    let with = |p: Value| {
        let m = json!({"name": "x", "tools": [{"name": "t", "description": "d", "program": "p",
                       "args": [{"param": "p"}], "params": {"p": p}}]});
        stdmcp_proto::schema::validate(&schema, &m)
    };
    for p in [
        json!({"type": "string", "minimum": 1}),
        json!({"type": "integer", "maxLength": 3}),
        json!({"type": "string", "root": "r"}),
        json!({"type": "path"}),
        json!({"type": "array", "items": {"type": "array"}}),
        json!({"type": "array", "items": {"type": "path", "root": "r", "default": "."}}),
        json!({"type": "array", "items": {"type": "path", "root": "r"}, "maxLength": 9}),
    ] {
        assert!(with(p.clone()).is_err(), "{p}");
    }
    assert!(
        with(json!({"type": "array", "items": {"type": "path", "root": "r", "kind": "file"}}))
            .is_ok()
    );
    assert_eq!(checked, 6);
}
