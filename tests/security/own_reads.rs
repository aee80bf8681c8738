//! The server's own reads through `stdmcp serve` (README "Security model", issue 21): log
//! files (`log`, `logs`, `log://`, the tails of a failed call) and kept outputs (`output`,
//! `output://`) are opened through descriptors, so names swapped for symlinks out of the
//! root or for FIFOs, raced thousands of times, are never read and never block; a grep over
//! a sparse multi-GiB log skips its holes, is bounded, and a cancelled one frees its slot.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests start bare programs as clients and controls

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, FileExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use crate::common::sessions::{is_error, text};
use crate::common::{fixture, serve_command, stdmcp_bin, temp_dir, Proc};
use serde_json::{json, Value};

/// What only the files outside the root hold: never in an answer.
const SECRET: &str = "SECRET-MARKER-outside-the-root";

fn serve(dir: &Path, defaults: Value, env: &[(&str, &str)]) -> Proc {
    let path = manifest(dir, defaults);
    let mut cmd = serve_command(&path);
    cmd.env("TMPDIR", dir.join("tmp")).envs(env.iter().copied());
    Proc::initialized(cmd, "2025-06-18")
}

/// The server in a mount namespace of its own where `/proc` is an empty tmpfs (as in a
/// chroot or an empty root): `None` where this process may not make one (not root).
fn serve_without_proc(dir: &Path) -> Option<Proc> {
    let path = manifest(dir, json!({}));
    let hide = "mount -t tmpfs none /proc && exec \"$0\" \"$@\"";
    let probe = Command::new("unshare")
        .args(["-m", "sh", "-c", hide, "true"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: cannot hide /proc in a mount namespace (unshare -m)");
        return None;
    }
    let mut cmd = Command::new("unshare");
    cmd.args(["-m", "sh", "-c", hide]).arg(stdmcp_bin());
    cmd.arg("serve").arg("--config").arg(&path);
    cmd.env("TMPDIR", dir.join("tmp"));
    Some(Proc::initialized(cmd, "2025-06-18"))
}

fn manifest(dir: &Path, defaults: Value) -> PathBuf {
    let m = json!({
        "name": "own-reads", "roots": {"work": {"path": "work", "write": true}}, "defaults": defaults,
        "sessions": [
            {"name": "sh", "description": "A shell.", "program": "sh",
             "workdir": {"root": "work", "default": "."},
             "answer": {"mode": "sentinel", "command": "echo {marker}"}, "maxSessions": 4}
        ],
        "tools": [
            {"name": "build", "description": "fails, writing its log", "program": fixture("fail_with_log.sh"),
             "cwd": {"param": "workdir"},
             "params": {"workdir": {"type": "path", "root": "work", "kind": "dir", "required": true}},
             "logs": [".hol/logs/*"]},
            {"name": "slow_build", "description": "writes its log, then times out", "program": fixture("fail_with_log.sh"),
             "args": ["slow"], "cwd": {"param": "workdir"}, "timeoutSeconds": 1, "killGraceMs": 100,
             "params": {"workdir": {"type": "path", "root": "work", "kind": "dir", "required": true}},
             "logs": [".hol/logs/*"]},
            {"name": "count", "description": "counts", "program": "seq", "args": ["1", {"param": "n"}],
             "params": {"n": {"type": "integer", "minimum": 1, "required": true}}},
            {"name": "list", "description": "lists its working directory", "program": "ls", "args": ["-a"],
             "cwd": {"param": "workdir"},
             "params": {"workdir": {"type": "path", "root": "work", "kind": "dir", "required": true}}}
        ]
    });
    std::fs::create_dir_all(dir.join("work")).unwrap();
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    let path = dir.join("m.json");
    std::fs::write(&path, m.to_string()).unwrap();
    path
}

fn c(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap()
}

#[allow(unsafe_code)]
fn mkfifo(p: &Path) {
    // SAFETY: mkfifo reads a NUL-terminated path alive for the call.
    assert_eq!(unsafe { libc::mkfifo(c(p).as_ptr(), 0o600) }, 0);
}

/// Swaps two names atomically (`renameat2(RENAME_EXCHANGE)`).
#[allow(unsafe_code)]
fn exchange(a: &Path, b: &Path) {
    let (a, b, at) = (c(a), c(b), libc::AT_FDCWD);
    // SAFETY: renameat2 reads two NUL-terminated paths alive for the call.
    let r = unsafe { libc::renameat2(at, a.as_ptr(), at, b.as_ptr(), libc::RENAME_EXCHANGE) };
    assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
}

/// A thread that keeps swapping each `(name, alternate)` pair, there and back, until dropped.
struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicUsize>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Swapper {
    fn start(pairs: Vec<(PathBuf, PathBuf)>) -> Swapper {
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicUsize::new(0));
        let (s, n) = (stop.clone(), swaps.clone());
        let thread = thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                for (a, b) in &pairs {
                    exchange(a, b);
                    exchange(a, b);
                }
                n.fetch_add(1, Ordering::Relaxed);
            }
        });
        Swapper {
            stop,
            swaps,
            thread: Some(thread),
        }
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Sends every request of `batch` (method, params), then takes their answers (a blocked
/// read would leave one unanswered: the harness fails after its patience).
fn round(p: &mut Proc, next_id: &mut i64, batch: &[(&str, Value)]) -> Vec<Value> {
    let first = *next_id;
    for (method, params) in batch {
        p.request(json!(*next_id), method, params.clone());
        *next_id += 1;
    }
    (first..*next_id).map(|id| p.response(&json!(id))).collect()
}

fn tool(name: &str, args: Value) -> (&'static str, Value) {
    ("tools/call", json!({"name": name, "arguments": args}))
}

#[test]
fn swapped_log_names_are_never_read_outside_the_root_and_never_block() {
    let dir = temp_dir("own-logs");
    let proj = dir.join("work/proj");
    let logs = proj.join(".hol/logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::create_dir_all(dir.join("outside/logs")).unwrap();
    std::fs::write(logs.join("a"), "INSIDE line\n").unwrap();
    std::fs::write(dir.join("secret"), SECRET).unwrap();
    std::fs::write(dir.join("outside/logs/a"), SECRET).unwrap();
    std::fs::write(dir.join("outside/logs/own"), SECRET).unwrap();
    // The alternates: the log swapped for a symlink out and for a FIFO, the log directory's
    // parent for a symlink to a directory outside with logs of the same names.
    symlink(dir.join("secret"), logs.join("alt_link")).unwrap();
    mkfifo(&logs.join("alt_fifo"));
    symlink(dir.join("outside"), proj.join("alt_hol")).unwrap();
    let mut p = serve(&dir, json!({}), &[]);
    let swapper = Swapper::start(vec![
        (logs.join("a"), logs.join("alt_link")),
        (logs.join("a"), logs.join("alt_fifo")),
        (proj.join(".hol"), proj.join("alt_hol")),
    ]);
    let a = json!({"tool": "build", "workdir": "proj", "name": ".hol/logs/a"});
    let with = |k: &str, v: Value| {
        let mut x = a.clone();
        x[k] = v;
        x
    };
    let (mut id, mut read_inside, mut attempts) = (1, 0, 0);
    for i in 0..700 {
        let mut batch = vec![
            tool("log", a.clone()),
            tool("log", with("tail", json!(100))),
            tool("log", with("grep", json!("line|SECRET"))),
            (
                "resources/read",
                json!({"uri": "log://build/proj/.hol/logs/a"}),
            ),
            tool("logs", json!({"tool": "build", "workdir": "proj"})),
        ];
        if i % 10 == 0 {
            batch.push(tool("build", json!({"workdir": "proj"})));
        }
        for r in round(&mut p, &mut id, &batch) {
            attempts += 1;
            let s = r.to_string();
            assert!(!s.contains(SECRET), "read outside the root: {r}");
            if s.contains("INSIDE line") {
                read_inside += 1;
            }
        }
    }
    let swaps = swapper.swaps.load(Ordering::Relaxed);
    drop(swapper);
    assert!(attempts >= 3500 && swaps > 100, "{attempts} {swaps}");
    assert!(
        read_inside > 100,
        "the log inside was read {read_inside} times"
    );
    p.assert_clean();
}

#[test]
fn swapped_spool_files_are_never_read_and_never_block() {
    let dir = temp_dir("own-spool");
    std::fs::write(dir.join("secret"), SECRET).unwrap();
    let mut p = serve(&dir, json!({}), &[]);
    let r = crate::common::sessions::call(&mut p, 1, "count", json!({"n": 3000}));
    assert!(!is_error(&r), "{r}");
    let call = r["result"]["structuredContent"]["callId"]
        .as_str()
        .unwrap()
        .to_owned();
    // The kept output, wherever the server keeps it under its TMPDIR.
    let name = format!("{call}.stdout");
    let kept = walk(&dir.join("tmp"))
        .into_iter()
        .find(|f| f.file_name().is_some_and(|n| n == name.as_str()))
        .expect("the kept output");
    let spool = kept.parent().unwrap().to_path_buf();
    symlink(dir.join("secret"), spool.join("alt_link")).unwrap();
    mkfifo(&spool.join("alt_fifo"));
    let swapper = Swapper::start(vec![
        (kept.clone(), spool.join("alt_link")),
        (kept.clone(), spool.join("alt_fifo")),
    ]);
    let (mut id, mut read_inside, mut attempts) = (10, 0, 0);
    for _ in 0..1000 {
        let batch = [
            tool("output", json!({"call": call})),
            tool("output", json!({"call": call, "grep": "^2999$|SECRET"})),
            (
                "resources/read",
                json!({"uri": format!("output://{call}/stdout")}),
            ),
        ];
        for r in round(&mut p, &mut id, &batch) {
            attempts += 1;
            let s = r.to_string();
            assert!(!s.contains(SECRET), "read outside the spool: {r}");
            if s.contains("2999") {
                read_inside += 1;
            }
        }
    }
    let swaps = swapper.swaps.load(Ordering::Relaxed);
    drop(swapper);
    assert!(attempts >= 3000 && swaps > 100, "{attempts} {swaps}");
    assert!(
        read_inside > 100,
        "the kept output was read {read_inside} times"
    );
    p.assert_clean();
}

#[test]
fn a_program_starts_in_the_checked_working_directory_whatever_is_swapped() {
    let dir = temp_dir("own-cwd");
    let p = serve(&setup_cwd_race(&dir), json!({}), &[]);
    race_cwd(&dir, p).assert_clean();
}

#[test]
fn without_proc_a_program_and_a_session_still_start_in_the_checked_directory() {
    // No `/proc/self/fd` to name the held directory by: the child enters it by descriptor.
    let dir = temp_dir("own-cwd-noproc");
    let Some(p) = serve_without_proc(&setup_cwd_race(&dir)) else {
        return;
    };
    let mut p = race_cwd(&dir, p);
    race_session(&dir, &mut p);
    // The log tails of a failed call are read through the descriptor checked, by name again
    // (no `/proc/self/fd` to reopen it by), and still read.
    std::fs::create_dir_all(dir.join("work/quiet/.hol/logs")).unwrap();
    let r = crate::common::sessions::call(&mut p, 1, "build", json!({"workdir": "quiet"}));
    assert!(
        is_error(&r) && text(&r).contains("--- log .hol/logs/own"),
        "{r}"
    );
    assert!(text(&r).contains("built"), "{r}");
    p.assert_clean();
}

/// `work/proj` (with a marker) and `work/alt`, a symlink to `outside` (with the secret).
fn setup_cwd_race(dir: &Path) -> PathBuf {
    let proj = dir.join("work/proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("inside-marker"), "").unwrap();
    std::fs::create_dir_all(dir.join("outside")).unwrap();
    std::fs::write(dir.join("outside").join(SECRET), "").unwrap();
    symlink(dir.join("outside"), dir.join("work/alt")).unwrap();
    dir.to_owned()
}

/// 1000 calls of `list` in `proj` while `proj` and `alt` are exchanged: never outside.
fn race_cwd(dir: &Path, mut p: Proc) -> Proc {
    let proj = dir.join("work/proj");
    let swapper = Swapper::start(vec![(proj.clone(), dir.join("work/alt"))]);
    let (mut id, mut inside, mut attempts) = (1, 0, 0);
    for _ in 0..100 {
        let batch: Vec<_> = (0..10)
            .map(|_| tool("list", json!({"workdir": "proj"})))
            .collect();
        for r in round(&mut p, &mut id, &batch) {
            attempts += 1;
            let s = r.to_string();
            assert!(!s.contains(SECRET), "ran outside the root: {r}");
            if s.contains("inside-marker") {
                inside += 1;
            }
        }
    }
    drop(swapper);
    assert!(attempts >= 1000 && inside > 50, "{attempts} {inside}");
    p
}

#[test]
fn a_session_starts_in_the_checked_working_directory_whatever_is_swapped() {
    let dir = temp_dir("own-session");
    let mut p = serve(&setup_cwd_race(&dir), json!({}), &[]);
    race_session(&dir, &mut p);
    p.assert_clean();
}

/// 600 sessions started in `proj` while `proj` and `alt` are exchanged: never outside.
fn race_session(dir: &Path, p: &mut Proc) {
    let proj = dir.join("work/proj");
    let swapper = Swapper::start(vec![(proj.clone(), dir.join("work/alt"))]);
    let (mut id, mut inside) = (100_000, 0);
    for _ in 0..150 {
        let batch: Vec<_> = (0..4)
            .map(|i| {
                tool(
                    "sh_start",
                    json!({"session": format!("s{i}"), "workdir": "proj"}),
                )
            })
            .collect();
        round(p, &mut id, &batch);
        let batch: Vec<_> = (0..4)
            .map(|i| {
                tool(
                    "sh_send",
                    json!({"session": format!("s{i}"), "input": "ls -a"}),
                )
            })
            .collect();
        for r in round(p, &mut id, &batch) {
            let s = r.to_string();
            assert!(!s.contains(SECRET), "a session ran outside the root: {r}");
            if s.contains("inside-marker") {
                inside += 1;
            }
        }
        let batch: Vec<_> = (0..4)
            .map(|i| tool("sh_stop", json!({"session": format!("s{i}")})))
            .collect();
        round(p, &mut id, &batch);
    }
    drop(swapper);
    assert!(inside > 50, "{inside}");
}

#[test]
fn a_call_past_its_deadline_still_carries_its_log_tails() {
    let dir = temp_dir("own-deadline");
    std::fs::create_dir_all(dir.join("work/proj/.hol/logs")).unwrap();
    let mut p = serve(&dir, json!({}), &[]);
    let r = crate::common::sessions::call(&mut p, 1, "slow_build", json!({"workdir": "proj"}));
    let t = text(&r);
    assert!(is_error(&r) && t.contains("timed out"), "{r}");
    assert!(
        t.contains("--- log .hol/logs/own") && t.contains("built"),
        "{t}"
    );
    p.assert_clean();
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let path = e.path();
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

const GIB: u64 = 1 << 30;

/// `work/proj/.hol/logs/big`: a hole of `hole` bytes, then `lines` lines of `width` `a`s,
/// then a line with `ERROR`; its size and the offset of the `ERROR` line.
fn sparse_log(dir: &Path, hole: u64, lines: u64, width: usize) -> (u64, u64) {
    let logs = dir.join("work/proj/.hol/logs");
    std::fs::create_dir_all(&logs).unwrap();
    let f = std::fs::File::create(logs.join("big")).unwrap();
    f.set_len(hole).unwrap();
    let mut line = vec![b'a'; width];
    line.push(b'\n');
    let per = (1 << 20) / line.len() as u64 + 1;
    let block: Vec<u8> = line.repeat(per as usize);
    let mut at = hole;
    let mut left = lines;
    while left > 0 {
        let n = left.min(per);
        f.write_all_at(&block[..(n as usize) * line.len()], at)
            .unwrap();
        at += n * line.len() as u64;
        left -= n;
    }
    f.write_all_at(b"ERROR at the end\n", at).unwrap();
    (at + 17, at)
}

/// A pattern that costs much per line and has no literal every match contains: every line
/// is given to it.
const COSTLY: &str = "[ab]{1,60}[bc]{1,60}[cd]{1,60}[de]{1,60}[ef]{1,60}[fg]";

#[test]
fn grep_skips_the_holes_of_a_sparse_log_and_is_bounded() {
    let dir = temp_dir("own-sparse");
    // 16 GiB of hole, then 16 MiB of lines of 4000 `a`s, then the ERROR line.
    let (total, error_at) = sparse_log(&dir, 16 * GIB, 4096, 4000);
    let mut p = serve(&dir, json!({}), &[("STDMCP_GREP_SECONDS", "1")]);
    let args =
        json!({"tool": "build", "workdir": "proj", "name": ".hol/logs/big", "grep": "ERROR"});
    // A pattern with a literal: one call scans it all, reading only the data.
    let r = crate::common::sessions::call(&mut p, 1, "log", args.clone());
    let s = &r["result"]["structuredContent"];
    assert_eq!(s["totalBytes"], json!(total), "{r}");
    assert_eq!(s["complete"], json!(true), "{r}");
    assert_eq!(
        s["matches"],
        json!([{"offset": error_at, "line": "ERROR at the end"}]),
        "{r}"
    );
    let scanned = s["scannedBytes"].as_u64().unwrap();
    assert!(scanned < total - 16 * GIB + (1 << 20), "{scanned}");
    // A costly pattern stops at the time bound, past the hole, and says where to go on.
    let mut costly = args.clone();
    costly["grep"] = json!(COSTLY);
    let r = crate::common::sessions::call(&mut p, 2, "log", costly);
    let s = &r["result"]["structuredContent"];
    assert_eq!(s["complete"], json!(false), "{r}");
    let next = s["nextOffset"].as_u64().unwrap();
    assert!(next > 16 * GIB && next < error_at, "{next}");
    assert!(
        text(&r).contains(&format!(
            "the scan stopped at byte {next} (one scan runs for at most 1 s): continue with offset {next}"
        )),
        "{r}"
    );
    let mut more = args;
    more["offset"] = json!(next);
    let r = crate::common::sessions::call(&mut p, 3, "log", more);
    let s = &r["result"]["structuredContent"];
    assert_eq!(s["complete"], json!(true), "{r}");
    assert_eq!(
        s["matches"],
        json!([{"offset": error_at, "line": "ERROR at the end"}]),
        "{r}"
    );
    p.assert_clean();
    drop(p);
    // 16 MiB of data: not left behind.
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_cancelled_grep_of_a_huge_log_frees_its_slot_at_once() {
    let dir = temp_dir("own-cancel");
    // 4 GiB of hole, then 16 MiB of long lines: a pattern that costs much per line would take
    // hours over them.
    sparse_log(&dir, 4 * GIB, 4096, 4000);
    let mut p = serve(
        &dir,
        json!({"maxConcurrentCalls": 1}),
        // A scan bound far beyond the harness's patience: only cancellation frees the slot.
        &[
            ("STDMCP_HEARTBEAT_MS", "50"),
            ("STDMCP_GREP_SECONDS", "3600"),
        ],
    );
    p.call(
        json!(1),
        "log",
        json!({"tool": "build", "workdir": "proj", "name": ".hol/logs/big", "grep": COSTLY}),
        Some(json!("scan")),
    );
    // A heartbeat: the scan is running (it holds the only slot).
    p.recv_where("a heartbeat of the scan", |m| {
        m["params"]["progressToken"] == json!("scan")
    });
    p.notify(
        "notifications/cancelled",
        json!({"requestId": 1, "reason": "test"}),
    );
    // The slot comes back: the next call is answered (the harness fails after its patience).
    let r = crate::common::sessions::call(
        &mut p,
        2,
        "logs",
        json!({"tool": "build", "workdir": "proj"}),
    );
    assert!(!is_error(&r), "{r}");
    p.close_stdin();
    let (rest, _) = p.drain_to_exit();
    assert!(
        rest.iter().all(|m| m.get("id") != Some(&json!(1))),
        "the cancelled grep was answered: {rest:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_cut_logs_listing_says_so_and_how_many_were_left_out() {
    let dir = temp_dir("own-logs-cut");
    let logs = dir.join("work/proj/.hol/logs");
    std::fs::create_dir_all(&logs).unwrap();
    for i in 0..300 {
        std::fs::write(logs.join(format!("t{i:03}")), "x").unwrap();
    }
    let mut p = serve(&dir, json!({}), &[]);
    let r = crate::common::sessions::call(
        &mut p,
        1,
        "logs",
        json!({"tool": "build", "workdir": "proj"}),
    );
    assert!(!is_error(&r), "{r}");
    let s = &r["result"]["structuredContent"];
    assert_eq!(s["logs"].as_array().unwrap().len(), 256);
    assert_eq!(
        s["cut"],
        json!({"listed": 256, "leftOut": 44, "notSearched": 0})
    );
    let t = text(&r);
    assert!(
        t.contains("The list was cut: 256 files listed, 44 more names matching the globs left out"),
        "{t}"
    );
    // Not cut: no word of it.
    for i in 0..300 {
        std::fs::remove_file(logs.join(format!("t{i:03}"))).unwrap();
    }
    std::fs::write(logs.join("one"), "x").unwrap();
    let r = crate::common::sessions::call(
        &mut p,
        2,
        "logs",
        json!({"tool": "build", "workdir": "proj"}),
    );
    let s = &r["result"]["structuredContent"];
    assert!(s.get("cut").is_none() && !text(&r).contains("cut"), "{r}");
    p.assert_clean();
}
