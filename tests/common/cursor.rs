//! Helpers for the proof cursor tests (tests/cursor/): an example manifest served over a
//! temporary `proofs` root, and tool calls that wait for a job when a long load becomes one.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::sessions::{example, is_error, text};
use super::{path_first, serve_command, temp_dir, Proc};

/// The fixture `tests/fixtures/cursor/NAME`.
pub(crate) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/cursor")
        .join(name)
}

/// A fresh `proofs` root holding a copy of each fixture in `files` (by file name).
pub(crate) fn proofs(files: &[&str]) -> PathBuf {
    let dir = temp_dir("proofs");
    for f in files {
        let name = Path::new(f).file_name().unwrap();
        std::fs::copy(fixture(f), dir.join(name)).unwrap();
    }
    dir
}

/// Writes `files` (path relative to `root`, text) under `root`, directories made as needed.
pub(crate) fn write_files(root: &Path, files: &[(&str, &str)]) {
    for (rel, text) in files {
        let at = root.join(rel);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, text).unwrap();
    }
}

/// Runs `Holmake --qof` of HOL4's `bin` in `dir`, as a user would, and asserts that it
/// builds (its output otherwise). Its output.
pub(crate) fn holmake(bin: &Path, dir: &Path) -> String {
    #[allow(clippy::disallowed_methods)] // the tests build as a user would, not through stdmcp
    let built = std::process::Command::new(bin.join("Holmake"))
        .current_dir(dir)
        .arg("--qof")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&built.stdout).into_owned();
    assert!(
        built.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&built.stderr)
    );
    out
}

/// `examples/{file}` with its root `proofs` at `proofs` and `edit` applied to its first
/// session kind, served with `path` (a bin directory) first on PATH and heartbeats every
/// 100 ms.
pub(crate) fn serve_cursor(
    file: &str,
    proofs: &Path,
    path: Option<&Path>,
    edit: impl Fn(&mut Value),
) -> Proc {
    let mut m: Value =
        serde_json::from_str(&std::fs::read_to_string(example(file)).unwrap()).unwrap();
    // Where the example keeps its root: the directory changes, its writability stays.
    m["roots"]["proofs"]["path"] = json!(proofs);
    edit(&mut m["sessions"][0]);
    let manifest = temp_dir("manifest").join(file);
    std::fs::write(&manifest, m.to_string()).unwrap();
    let mut cmd = serve_command(&manifest);
    cmd.env("STDMCP_HEARTBEAT_MS", "100");
    if let Some(dir) = path {
        path_first(&mut cmd, dir);
    }
    Proc::initialized(cmd, "2025-06-18")
}

/// The pid of the program of session `name` (the `sessions` tool's answer).
pub(crate) fn session_pid(p: &mut Proc, id: i64, name: &str) -> i32 {
    super::sessions::session_pid(p, id, None, name)
}

/// Starts `tool` with a progress token and waits until a heartbeat's message contains
/// `seen`; the request is `id`.
pub(crate) fn call_until_progress(
    p: &mut Proc,
    id: i64,
    tool: &str,
    args: Value,
    seen: &str,
) -> Value {
    let token = format!("t{id}");
    p.call(json!(id), tool, args, Some(json!(token)));
    let seen = seen.to_owned();
    p.recv_where(&format!("a heartbeat with {seen:?}"), move |v| {
        v["method"] == json!("notifications/progress")
            && v["params"]["progressToken"] == json!(token)
            && v["params"]["message"]
                .as_str()
                .is_some_and(|m| m.contains(&seen))
    })
}

/// Calls `tool`; when the answer is a job, waits for it with `job_wait`. The response.
pub(crate) fn call_through(p: &mut Proc, id: i64, tool: &str, args: Value) -> Value {
    p.call(json!(id), tool, args, None);
    let mut r = p.response(&json!(id));
    let mut n = 0;
    while let Some(job) = r["result"]["_meta"]["stdmcp/job"]["id"]
        .as_str()
        .filter(|_| r["result"]["_meta"]["stdmcp/job"]["state"] == json!("working"))
    {
        let job = job.to_owned();
        n += 1;
        let wid = id * 1000 + n;
        p.call(
            json!(wid),
            "job_wait",
            json!({"id": job, "seconds": 10}),
            None,
        );
        r = p.response(&json!(wid));
    }
    r
}

/// Calls `tool` (waiting for its job), asserts it succeeded, returns its text.
pub(crate) fn ok(p: &mut Proc, id: i64, tool: &str, args: Value) -> String {
    let r = call_through(p, id, tool, args.clone());
    assert!(!is_error(&r), "{tool} {args} failed: {r}");
    text(&r)
}

/// Calls `tool` (waiting for its job), asserts it failed, returns its text.
pub(crate) fn fails(p: &mut Proc, id: i64, tool: &str, args: Value) -> String {
    let r = call_through(p, id, tool, args.clone());
    assert!(is_error(&r), "{tool} {args} did not fail: {r}");
    text(&r)
}

/// True when coqtop is installed (.ci/run installs it: required under CI).
pub(crate) fn rocq_installed() -> bool {
    #[allow(clippy::disallowed_methods)] // a probe of the machine, not a tool call
    let found = std::process::Command::new("coqtop")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found || std::env::var_os("CI").is_none(),
        "CI must install coq (see .ci/run)"
    );
    if !found {
        eprintln!("SKIPPED: coqtop is not installed");
    }
    found
}

/// `examples/rocq.json` served over `proofs`; calls longer than 5 s become jobs
/// (`call_through` waits for them), so that a slow machine never outwaits the test's patience.
pub(crate) fn serve_rocq(proofs: &Path) -> Proc {
    serve_cursor("rocq.json", proofs, None, |k| {
        k["cursor"]["background"] = json!({"afterSeconds": 5});
    })
}

/// `K_cursor_step {tactic}`, which must succeed: its text.
pub(crate) fn step(p: &mut Proc, id: i64, kind: &str, tactic: &str) -> String {
    ok(
        p,
        id,
        &format!("{kind}_cursor_step"),
        json!({"tactic": tactic}),
    )
}

/// The scenarios every prover's cursor goes through (tests/cursor/hol4.rs, rocq_runs.rs).
pub(crate) mod scenarios {
    use serde_json::json;
    use std::path::Path;

    use super::{call_until_progress, ok, session_pid, step};
    use crate::common::{send_signal, wait_gone, Proc};

    /// A load of `file` (kind `kind`) cancelled at the heartbeat naming `block`; the next
    /// init resumes there, reaches the goal of `last`, and the cancelled call is never
    /// answered.
    pub(crate) fn cancelled_load_resumes(mut p: Proc, kind: &str, file: &str, block: &str) {
        let init = format!("{kind}_cursor_init");
        call_until_progress(&mut p, 1, &init, json!({ "file": file }), block);
        p.notify(
            "notifications/cancelled",
            json!({"requestId": 1, "reason": "test"}),
        );
        let again = ok(&mut p, 2, &init, json!({ "file": file }));
        assert!(
            again.contains("Resuming: the previous cursor call stopped before block"),
            "{again}"
        );
        assert!(
            again.contains("(cancelled)") && again.contains("Goal of last"),
            "{again}"
        );
        assert!(!again.contains("FAILED"), "{again}");
        let (rest, _) = p.finish();
        assert!(
            rest.iter().all(|m| m.get("id") != Some(&json!(1))),
            "the cancelled call was answered: {rest:?}"
        );
    }

    /// Enters a goal (`init`'s arguments), records `first`, kills the program, and steps
    /// `second`: the answer, which says the program is gone and the step was recorded after
    /// the file was loaded again.
    pub(crate) fn killed_program_reloads(
        p: &mut Proc,
        kind: &str,
        init: serde_json::Value,
        (first, second): (&str, &str),
    ) -> String {
        ok(p, 1, &format!("{kind}_cursor_init"), init);
        step(p, 2, kind, first);
        let pid = session_pid(p, 3, "default");
        send_signal(pid, 9);
        wait_gone(&[pid]);
        let after = step(p, 4, kind, second);
        assert!(
            after.contains(&format!("(pid {pid}) is gone or was restarted")),
            "{after}"
        );
        assert!(after.contains("(step 2 recorded)"), "{after}");
        assert_ne!(session_pid(p, 5, "default"), pid);
        after
    }

    /// Enters the goal of `start_at` in `file` (under `dir`), edits it before there
    /// (`from` → `to`): the status says so, and the next `tactic` reloads, saying where.
    pub(crate) fn edit_behind_reloads(
        p: &mut Proc,
        kind: &str,
        (dir, file, start_at): (&Path, &str, &str),
        (from, to): (&str, &str),
        tactic: &str,
    ) -> String {
        ok(
            p,
            1,
            &format!("{kind}_cursor_init"),
            json!({"file": file, "start_at": start_at}),
        );
        let path = dir.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{text}");
        std::fs::write(&path, text.replace(from, to)).unwrap();
        let status = ok(p, 2, &format!("{kind}_cursor_status"), json!({}));
        assert!(status.contains("CHANGED in the loaded part"), "{status}");
        let after = step(p, 3, kind, tactic);
        assert!(after.contains("(step 1 recorded)"), "{after}");
        let status = ok(p, 4, &format!("{kind}_cursor_status"), json!({}));
        assert!(status.contains("unchanged since it was loaded"), "{status}");
        after
    }
}

/// Asserts that `text` holds every one of `parts` (the text otherwise).
pub(crate) fn has_all(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "{part:?} not in:\n{text}");
    }
}

/// The check's verdicts as (name, verdict, what it trusts).
pub(crate) fn verdicts(r: &Value) -> Vec<(String, String, Value)> {
    r["result"]["structuredContent"]["theorems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["verdict"].as_str().unwrap().to_owned(),
                t["trusts"].clone(),
            )
        })
        .collect()
}
