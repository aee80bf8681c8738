//! Session fixes of issue 23 (README "Sessions"): where `K_start` restarts a dead session, what
//! it says when asked to move a running one, the kind's `status` input, the `error` pattern,
//! long answers kept whole in the output spool, typed start parameters, and who killed a
//! program. `stdmcp serve` with sh and python3 sessions, driven over pipes.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests start bare programs as clients and controls

use std::path::{Path, PathBuf};

use super::engine::{call, ok, serve_in};
use crate::common::{temp_dir, wait_gone, Proc};
use serde_json::{json, Value};

/// sh reading one line at a time, running it, and ending each answer with a NUL.
const NUL_SH: &str = "printf 'ready\\0'; while IFS= read -r l; do eval \"$l\"; printf '\\0'; done";

fn manifest(dir: &Path) -> Value {
    std::fs::create_dir_all(dir.join("work/a")).unwrap();
    std::fs::create_dir_all(dir.join("work/b")).unwrap();
    json!({
        "name": "sessions-options",
        "version": "1.0.0",
        "roots": {"work": "work"},
        "tools": [
            {"name": "selfkill", "description": "sh that SIGKILLs itself", "program": "sh",
             "args": ["-c", "kill -9 $$"]},
            {"name": "envtool", "description": "prints $GREETING", "program": "sh",
             "args": ["-c", "echo \"$GREETING\""],
             "params": {"greeting": {"type": "string", "env": "GREETING"}}}
        ],
        "sessions": [
            {"name": "sh", "description": "sh answering with NUL", "program": "sh",
             "args": ["-c", NUL_SH], "workdir": {"root": "work", "default": "."},
             "answer": {"mode": "nul"}},
            {"name": "st", "description": "sh with a status input and an error pattern",
             "program": "sh", "args": ["-c", NUL_SH],
             "answer": {"mode": "nul"}, "status": "echo \"status: $n\"",
             "error": "^(FAILED|Exception-)"},
            {"name": "badstart", "description": "sh whose startup input fails",
             "program": "sh", "args": ["-c", NUL_SH], "startup": ["echo FAILED: no such setting"],
             "answer": {"mode": "nul"}, "error": "^FAILED"},
            {"name": "pa", "description": "sh with start parameters", "program": "sh",
             "args": ["-c", "printf 'ready %s\\0' \"$1\"; while IFS= read -r l; do eval \"$l\"; printf '\\0'; done",
                      "sh", {"param": "label"}],
             "params": {"label": {"type": "string", "default": "none", "description": "a label"},
                        "heap": {"type": "path", "root": "work", "kind": "file", "env": "HEAP_FILE"}},
             "answer": {"mode": "nul"}}
        ]
    })
}

fn serve() -> (Proc, PathBuf) {
    let dir = temp_dir("sessions-options");
    let p = serve_in(&dir, &manifest(&dir));
    (p, dir)
}

fn pid_in(text: &str) -> i32 {
    let at = text.find("(pid ").unwrap() + 5;
    text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

#[test]
fn start_restarts_a_dead_session_in_its_own_workdir() {
    let (mut p, dir) = serve();
    let t = ok(&mut p, 1, "sh_start", json!({"workdir": "a"}));
    let pid = pid_in(&t);
    let a = dir.join("work/a").canonicalize().unwrap();
    assert!(t.contains(&format!("in {}.", a.display())), "{t}");
    let (t, err) = call(&mut p, 2, "sh_send", json!({"input": "exit 3"}));
    assert!(err && t.contains("exited with code 3"), "{t}");
    wait_gone(&[pid]);
    let t = ok(&mut p, 3, "sh_start", json!({}));
    assert!(t.contains(&format!("in {}.", a.display())), "{t}");
    assert!(t.contains("exited with code 3); its state is lost"), "{t}");
    assert_eq!(
        ok(&mut p, 4, "sh_send", json!({"input": "pwd"})),
        a.display().to_string()
    );
    p.finish();
}

#[test]
fn start_with_another_workdir_on_a_running_session_says_so() {
    let (mut p, dir) = serve();
    let t = ok(&mut p, 1, "sh_start", json!({"workdir": "a"}));
    let pid = pid_in(&t);
    // The same directory, spelled otherwise: the running session is what was asked for.
    let t = ok(&mut p, 2, "sh_start", json!({"workdir": "b/../a"}));
    assert!(t.contains("already running"), "{t}");
    let (t, err) = call(&mut p, 3, "sh_start", json!({"workdir": "b"}));
    let b = dir.join("work/b").canonicalize().unwrap();
    assert!(err, "{t}");
    assert!(
        t.contains("already running")
            && t.contains(&b.display().to_string())
            && t.contains("sh_stop"),
        "{t}"
    );
    let a = dir.join("work/a").canonicalize().unwrap();
    assert_eq!(
        ok(&mut p, 4, "sh_send", json!({"input": "pwd"})),
        a.display().to_string()
    );
    assert!(crate::common::alive(pid));
    p.finish();
}

#[test]
fn start_on_a_running_session_answers_with_its_status_input() {
    let (mut p, _) = serve();
    let t = ok(&mut p, 1, "st_start", json!({}));
    assert!(t.starts_with("Started st session"), "{t}");
    ok(&mut p, 2, "st_send", json!({"input": "n=7"}));
    let t = ok(&mut p, 3, "st_start", json!({}));
    assert!(
        t.contains("already running") && t.ends_with("status: 7"),
        "{t}"
    );
    // A busy session is not kept waiting for: its last answer, and that it is busy.
    p.call(
        json!(30),
        "st_send",
        json!({"input": "echo going; sleep 30"}),
        None,
    );
    wait_transcript(&mut p, "st", "\ngoing\n");
    let t = ok(&mut p, 31, "st_start", json!({}));
    assert!(
        t.contains("busy with an input") && t.ends_with("Its last answer:\n"),
        "{t}"
    );
    ok(&mut p, 32, "st_stop", json!({}));
    p.response(&json!(30));
    // A kind without a status input shows the last answer.
    ok(&mut p, 4, "sh_start", json!({}));
    ok(&mut p, 5, "sh_send", json!({"input": "echo last"}));
    let t = ok(&mut p, 6, "sh_start", json!({}));
    assert!(t.ends_with("Its last answer:\nlast"), "{t}");
    p.finish();
}

#[test]
fn an_answer_matching_the_error_pattern_is_an_error() {
    let (mut p, _) = serve();
    ok(&mut p, 1, "st_start", json!({}));
    let (t, err) = call(
        &mut p,
        2,
        "st_send",
        json!({"input": "echo ok; echo 'Exception- Fail'"}),
    );
    assert!(err, "{t}");
    assert_eq!(t, "ok\nException- Fail");
    // Matched at a line start only (the pattern's `^`), and the session carries on.
    let (t, err) = call(
        &mut p,
        3,
        "st_send",
        json!({"input": "echo 'no Exception- here'"}),
    );
    assert!(!err, "{t}");
    // The kind without an error pattern answers the same text without isError.
    ok(&mut p, 4, "sh_send", json!({"input": "echo FAILED"}));
    // A greeting that matches (a startup input failed) makes the start an error; it runs.
    let (t, err) = call(&mut p, 5, "badstart_start", json!({}));
    assert!(
        err && t.contains("FAILED: no such setting") && t.contains("error pattern"),
        "{t}"
    );
    assert_eq!(
        ok(&mut p, 6, "badstart_send", json!({"input": "echo on"})),
        "on"
    );
    p.finish();
}

#[test]
fn the_schema_and_check_know_the_new_fields() {
    let dir = temp_dir("sessions-options-schema");
    let m = manifest(&dir);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("docs/manifest.schema.json")).unwrap(),
    )
    .unwrap();
    stdmcp_proto::schema::validate(&schema, &m).unwrap();
    let (code, out, err) = crate::common::stdmcp_check(&dir, &m);
    assert_eq!(code, 0, "{out}{err}");
    for line in [
        "status input (K_start on a running session): echo \"status: $n\"",
        "an answer matching /^(FAILED|Exception-)/ is an error",
    ] {
        assert!(out.contains(line), "no {line:?} in {out}");
    }
    for line in [
        "start parameters (pa_start):",
        "- heap (file path in root work, in $HEAP_FILE)",
        "sh {label}\n",
    ] {
        assert!(out.contains(line), "no {line:?} in {out}");
    }
    // A start parameter is linted as a tool's: run as code, or choosing code through `env`.
    let mut risky = m.clone();
    risky["sessions"][3]["params"]["label"]["env"] = json!("PYTHONPATH");
    risky["sessions"][3]["args"][1] = json!("-c");
    risky["sessions"][3]["args"][2] = json!({"param": "label"});
    let (code, out, err) = crate::common::stdmcp_check(&dir, &risky);
    let all = format!("{out}{err}");
    assert_eq!(code, 0, "{all}");
    assert!(
        all.contains("sessions[3].params.label.env: PYTHONPATH chooses code"),
        "{all}"
    );
    assert!(
        all.contains("sessions[3].args[2]: label is run as code"),
        "{all}"
    );
    let mut bad = m.clone();
    bad["sessions"][1]["error"] = json!("(unclosed");
    let (code, out, err) = crate::common::stdmcp_check(&dir, &bad);
    assert_ne!(code, 0);
    assert!(
        format!("{out}{err}").contains("sessions[1].error: not a valid regular expression"),
        "{out}{err}"
    );
}

/// The pid of the default session's program, asked of itself.
fn sh_pid(p: &mut Proc, id: i64, kind: &str) -> i32 {
    let t = ok(p, id, &format!("{kind}_send"), json!({"input": "echo $$"}));
    t.lines().last().unwrap().trim().parse().unwrap()
}

#[test]
fn a_sigkill_says_whether_the_server_sent_it_and_why() {
    let (mut p, _) = serve();
    // Killed by the server: a stop while a send runs.
    let pid = sh_pid(&mut p, 1, "sh");
    p.call(
        json!(2),
        "sh_send",
        json!({"input": "echo going; sleep 30"}),
        None,
    );
    wait_transcript(&mut p, "sh", "\ngoing\n");
    ok(&mut p, 3, "sh_stop", json!({}));
    let r = p.response(&json!(2));
    let t = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        t.contains("killed (SIGKILL) by the server: sh_stop was called") && !t.contains("memory"),
        "{t}"
    );
    wait_gone(&[pid]);
    // Killed by someone else: said, and not blamed on the server.
    let pid = sh_pid(&mut p, 4, "sh");
    crate::common::send_signal(pid, libc_sigkill());
    wait_gone(&[pid]);
    let (t, err) = call(&mut p, 5, "sh_send", json!({"input": "echo hi"}));
    assert!(
        err && t.contains("killed (SIGKILL), not by the server"),
        "{t}"
    );
    // The same for a tool.
    let (t, err) = call(&mut p, 6, "selfkill", json!({}));
    assert!(err && t.contains("(SIGKILL), not by the server"), "{t}");
    p.finish();
}

fn libc_sigkill() -> i32 {
    9
}

/// Waits until the default session's transcript holds `text` (the program printed it).
fn wait_transcript(p: &mut Proc, kind: &str, text: &str) {
    let deadline = std::time::Instant::now() + crate::common::PATIENCE;
    for id in 1000.. {
        let uri = format!("session://{kind}/default/transcript");
        p.request(json!(id), "resources/read", json!({ "uri": uri }));
        let r = p.response(&json!(id));
        if r["result"]["contents"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains(text)
        {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{text:?} never came: {r}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The call id a cut answer's note names.
fn kept_call(text: &str) -> String {
    let at = text
        .find("kept as call ")
        .unwrap_or_else(|| panic!("no call in {text}"))
        + 13;
    text[at..].split(':').next().unwrap().to_owned()
}

#[test]
fn a_long_answer_is_kept_whole_for_the_output_tool() {
    let (mut p, _) = serve();
    let whole: String = (1..=30_000).map(|i| format!("{i}\n")).collect();
    let whole = whole.trim_end();
    ok(&mut p, 10, "sh_start", json!({}));
    // Over the kind's cap (64 KiB), and over a cap the send asks for.
    for (id, args) in [
        (1, json!({"input": "seq 1 30000"})),
        (3, json!({"input": "seq 1 30000", "maxOutputBytes": 1000})),
    ] {
        let t = ok(&mut p, id, "sh_send", args.clone());
        let cap = args["maxOutputBytes"].as_u64().unwrap_or(65_536);
        assert!(t.starts_with("1\n2\n"), "{t}");
        let total = whole.len() + 1;
        assert!(
            t.contains(&format!("[Answer cut: {cap} of {total} bytes shown;")),
            "{}",
            &t[t.len().saturating_sub(600)..]
        );
        assert!(t.len() < cap as usize + 1000, "{}", t.len());
        let call_id = kept_call(&t);
        let r = {
            p.call(
                json!(id + 1),
                "output",
                json!({"call": call_id, "limit": 1 << 20}),
                None,
            );
            p.response(&json!(id + 1))
        };
        let got = r["result"]["content"][0]["text"].as_str().unwrap();
        assert_eq!(got.trim_end(), whole, "{r}");
    }
    // A short answer has no note; a cap the send may not ask for is refused.
    assert_eq!(
        ok(&mut p, 5, "sh_send", json!({"input": "echo short"})),
        "short"
    );
    let (t, err) = call(
        &mut p,
        6,
        "sh_send",
        json!({"input": "echo x", "maxOutputBytes": 0}),
    );
    assert!(err && t.contains("maxOutputBytes"), "{t}");
    p.finish();
}

#[test]
fn start_parameters_extend_argv_and_environment_and_are_kept() {
    let (mut p, dir) = serve();
    std::fs::write(dir.join("work/a/h.bin"), "heap").unwrap();
    let heap = dir.join("work/a/h.bin").canonicalize().unwrap();
    let args = json!({"label": "first", "heap": "a/h.bin"});
    let t = ok(&mut p, 1, "pa_start", args.clone());
    assert!(t.ends_with("ready first"), "{t}");
    let pid = pid_in(&t);
    let t = ok(
        &mut p,
        2,
        "pa_send",
        json!({"input": "echo \"$1 $HEAP_FILE\""}),
    );
    assert_eq!(t, format!("first {}", heap.display()));
    // The same parameters (or none) find it running; others are an error that says so.
    assert!(ok(&mut p, 3, "pa_start", args.clone()).contains("already running"));
    assert!(ok(&mut p, 4, "pa_start", json!({})).contains("already running"));
    let same = json!({"label": "first", "heap": "./a/../a/h.bin"});
    assert!(ok(&mut p, 40, "pa_start", same).contains("already running"));
    let (t, err) = call(&mut p, 5, "pa_start", json!({"label": "second"}));
    assert!(
        err && t.contains("other start parameters") && t.contains("pa_stop"),
        "{t}"
    );
    // A dead session starts again with its parameters.
    call(&mut p, 6, "pa_send", json!({"input": "exit 1"}));
    wait_gone(&[pid]);
    let t = ok(&mut p, 7, "pa_start", json!({}));
    assert!(t.ends_with("ready first"), "{t}");
    let t = ok(
        &mut p,
        8,
        "pa_send",
        json!({"input": "echo \"$HEAP_FILE\""}),
    );
    assert_eq!(t, heap.display().to_string());
    // The defaults, and values checked as a tool's are.
    let t = ok(&mut p, 9, "pa_start", json!({"session": "d"}));
    assert!(t.ends_with("ready none"), "{t}");
    p.call(json!(90), "sessions", json!({}), None);
    let r = p.response(&json!(90));
    let rows = &r["result"]["structuredContent"]["sessions"];
    assert_eq!(rows[1]["startParameters"], args, "{r}");
    assert_eq!(rows[0]["startParameters"], json!({}), "{r}");
    for (id, bad, why) in [
        (
            10,
            json!({"session": "e", "heap": "../../etc/passwd"}),
            "argument `heap`",
        ),
        (
            11,
            json!({"session": "e", "label": "-x"}),
            "starts with '-'",
        ),
    ] {
        let (t, err) = call(&mut p, id, "pa_start", bad);
        assert!(
            err && t.contains(why) && t.contains("Nothing was started"),
            "{t}"
        );
    }
    let (t, err) = call(&mut p, 12, "pa_start", json!({"session": "e", "nope": 1}));
    assert!(err && t.contains("unknown argument `nope`"), "{t}");
    // A tool's parameter may set a variable too.
    let t = ok(&mut p, 13, "envtool", json!({"greeting": "hello; $(x)"}));
    assert!(t.starts_with("hello; $(x)"), "{t}");
    p.finish();
}
