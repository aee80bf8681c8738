//! Long runs through `stdmcp serve` (README "Log files", "Output spool"): a failing build
//! returns the tail of the log it wrote; logs are listed and read through the tools and
//! `resources/read`, confined to the roots; a 200 MB output is read back completely in slices
//! through `output`; the spool's cap evicts the oldest calls, and the spool is removed at
//! exit, also when the server is killed.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::sessions::{call, is_error, text};
use crate::common::{fixture, send_signal, serve_command, temp_dir, Proc, PATIENCE};
use serde_json::{json, Value};

/// A manifest in `dir` with the root `work` (writable: the builds write their logs there):
/// `build` (fixtures/fake_build.sh, logs
/// `.hol/logs/*`, in a directory of the root), `build_fixed` (the same, always in
/// `work/fixed`) and `count` (`seq 1 N`, output cap 4096 bytes).
fn manifest(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir.join("work/fixed")).unwrap();
    let m = json!({
        "name": "long-runs", "roots": {"work": {"path": "work", "write": true}},
        "tools": [
            {"name": "build", "description": "builds a theory", "program": fixture("fake_build.sh"),
             "args": [{"param": "target"}], "cwd": {"param": "workdir"},
             "params": {"workdir": {"type": "path", "root": "work", "kind": "dir", "required": true},
                        "target": {"type": "string", "required": true}},
             "logs": [".hol/logs/*"]},
            {"name": "build_fixed", "description": "builds in work/fixed", "program": fixture("fake_build.sh"),
             "args": [{"param": "target"}], "cwd": "work/fixed",
             "params": {"target": {"type": "string", "required": true}}, "logs": [".hol/logs/*"],
             "writable": ["work/fixed"]},
            {"name": "count", "description": "counts", "program": "seq", "args": ["1", {"param": "n"}],
             "params": {"n": {"type": "integer", "minimum": 1, "required": true}},
             "maxOutputBytes": 4096, "timeoutSeconds": 600}
        ]
    });
    let path = dir.join("m.json");
    std::fs::write(&path, m.to_string()).unwrap();
    path
}

fn serve(dir: &Path, env: &[(&str, &str)], version: &str) -> Proc {
    let mut cmd = serve_command(&manifest(dir));
    cmd.envs(env.iter().copied());
    Proc::initialized(cmd, version)
}

fn request(p: &mut Proc, id: i64, method: &str, params: Value) -> Value {
    p.request(json!(id), method, params);
    p.response(&json!(id))
}

/// The first content block's text (exactly the bytes a slice read).
fn first_text(r: &Value) -> &str {
    r["result"]["content"][0]["text"].as_str().unwrap()
}

/// A project `work/proj` whose theory `a` fails, with an older log and a symlinked "log"
/// that leads out of the root.
fn project(dir: &Path) {
    let proj = dir.join("work/proj");
    std::fs::create_dir_all(proj.join(".hol/logs")).unwrap();
    std::fs::write(proj.join("a.src"), "FAIL\n").unwrap();
    std::fs::write(proj.join(".hol/logs/old"), "OLD LOG\n").unwrap();
    std::fs::write(dir.join("secret"), "SECRET\n").unwrap();
    std::os::unix::fs::symlink(dir.join("secret"), proj.join(".hol/logs/escape")).unwrap();
}

/// `log` of `build`'s log `.hol/logs/a` in `proj`, with `more` arguments.
fn read_a(p: &mut Proc, id: i64, more: Value) -> Value {
    let mut args = json!({"tool": "build", "workdir": "proj", "name": ".hol/logs/a"});
    args.as_object_mut()
        .unwrap()
        .extend(more.as_object().unwrap().clone());
    call(p, id, "log", args)
}

#[test]
fn a_failing_build_returns_its_log_and_the_logs_are_listed_and_read() {
    let dir = temp_dir("logs");
    project(&dir);
    let mut p = serve(&dir, &[], "2025-06-18");
    let r = call(
        &mut p,
        1,
        "build",
        json!({"workdir": "proj", "target": "a"}),
    );
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    let log = std::fs::read_to_string(dir.join("work/proj/.hol/logs/a")).unwrap();
    assert!(t.contains("a FAIL"), "{t}");
    assert!(
        t.contains(&format!(
            "--- log .hol/logs/a (the last 4096 of {} bytes",
            log.len()
        )),
        "{t}"
    );
    assert!(t.contains("proof of a failed: goal F"), "{t}");
    assert!(!t.contains("step 0 of"), "the tail is bounded: {t}");
    assert!(
        !t.contains("OLD LOG") && !t.contains("SECRET"),
        "only changed logs: {t}"
    );

    // Listed by the tool (the symlink leading out is not), read back through the tool.
    let r = call(
        &mut p,
        2,
        "logs",
        json!({"tool": "build", "workdir": "proj"}),
    );
    assert!(!is_error(&r), "{r}");
    let rows = r["result"]["structuredContent"]["logs"]
        .as_array()
        .unwrap()
        .clone();
    let names: Vec<&str> = rows.iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names, [".hol/logs/a", ".hol/logs/old"]);
    assert_eq!(rows[0]["size"], json!(log.len()));
    let r = read_a(&mut p, 3, json!({}));
    assert_eq!(first_text(&r), log);
    let s = &r["result"]["structuredContent"];
    assert_eq!(s["totalBytes"], json!(log.len()));
    let r = read_a(&mut p, 4, json!({"offset": 5, "limit": 10}));
    assert_eq!(first_text(&r), &log[5..15]);
    assert_eq!(r["result"]["structuredContent"]["nextOffset"], json!(15));
    let r = read_a(&mut p, 5, json!({"tail": 26}));
    assert_eq!(first_text(&r), "proof of a failed: goal F\n");
    let r = read_a(&mut p, 6, json!({"grep": "step 29[0-9]"}));
    let matches = r["result"]["structuredContent"]["matches"]
        .as_array()
        .unwrap();
    assert_eq!(matches.len(), 10);

    // And as resources, through the tool's template.
    let r = request(&mut p, 7, "resources/templates/list", json!({}));
    let templates: Vec<&str> = r["result"]["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["uriTemplate"].as_str().unwrap())
        .collect();
    assert!(
        templates.contains(&"log://build/{workdir}/{name}"),
        "{templates:?}"
    );
    let uri = rows[0]["uri"].as_str().unwrap();
    assert_eq!(uri, "log://build/proj/.hol/logs/a");
    let r = request(&mut p, 8, "resources/read", json!({"uri": uri}));
    assert_eq!(r["result"]["contents"][0]["text"], json!(log));

    p.finish();
}

#[test]
fn logs_outside_the_root_the_working_directory_or_the_globs_are_refused() {
    let dir = temp_dir("refused");
    project(&dir);
    let mut p = serve(&dir, &[], "2025-06-18");
    let refused = [
        json!({"tool": "build", "workdir": "..", "name": ".hol/logs/a"}),
        json!({"tool": "build", "workdir": "proj/../..", "name": ".hol/logs/a"}),
        json!({"tool": "build", "workdir": "/", "name": ".hol/logs/a"}),
        json!({"tool": "build", "workdir": "proj", "name": ".hol/logs/escape"}),
        json!({"tool": "build", "workdir": "proj", "name": "../../secret"}),
        json!({"tool": "build", "workdir": "proj", "name": ".hol/logs/../../../secret"}),
        json!({"tool": "build", "workdir": "proj", "name": "/etc/passwd"}),
        json!({"tool": "build", "workdir": "proj", "name": "a.src"}),
        json!({"tool": "count", "name": "x"}),
    ];
    for (i, args) in refused.iter().enumerate() {
        let r = call(&mut p, 100 + i as i64, "log", args.clone());
        assert!(is_error(&r), "{args}: {r}");
        assert!(!text(&r).contains("SECRET"), "{args}: {r}");
    }
    let r = call(
        &mut p,
        120,
        "logs",
        json!({"tool": "build", "workdir": ".."}),
    );
    assert!(is_error(&r) && text(&r).contains("outside"), "{r}");
    for (i, uri) in [
        "log://build/..%2F/secret",
        "log://build/proj/.hol/logs/escape",
        "log://build/%2F/etc/passwd",
        "log://build/proj/..%2F..%2Fsecret",
    ]
    .iter()
    .enumerate()
    {
        let r = request(
            &mut p,
            130 + i as i64,
            "resources/read",
            json!({"uri": uri}),
        );
        assert!(r.get("error").is_some(), "{uri}: {r}");
        assert!(!r.to_string().contains("SECRET"), "{uri}: {r}");
    }
    p.finish();
}

#[test]
fn a_tool_with_a_fixed_working_directory_has_its_logs_without_workdir() {
    let dir = temp_dir("fixed");
    let mut p = serve(&dir, &[], "2025-06-18");
    let r = call(&mut p, 1, "build_fixed", json!({"target": "b"}));
    assert!(!is_error(&r), "{r}");
    assert!(
        !text(&r).contains("--- log"),
        "a success carries no log: {r}"
    );
    let r = call(&mut p, 2, "logs", json!({"tool": "build_fixed"}));
    let rows = &r["result"]["structuredContent"]["logs"];
    assert_eq!(rows[0]["name"], ".hol/logs/b", "{r}");
    assert_eq!(rows[0]["uri"], "log://build_fixed/.hol/logs/b", "{r}");
    let r = call(
        &mut p,
        3,
        "logs",
        json!({"tool": "build_fixed", "workdir": "."}),
    );
    assert!(
        is_error(&r) && text(&r).contains("leave workdir out"),
        "{r}"
    );
    let r = request(&mut p, 4, "resources/templates/list", json!({}));
    assert!(
        r.to_string().contains("\"log://build_fixed/{name}\""),
        "{r}"
    );
    let r = request(
        &mut p,
        5,
        "resources/read",
        json!({"uri": "log://build_fixed/.hol/logs/b"}),
    );
    let log = std::fs::read_to_string(dir.join("work/fixed/.hol/logs/b")).unwrap();
    assert_eq!(r["result"]["contents"][0]["text"], json!(log));
    p.finish();
}

/// `seq 1 n` as bytes, from byte `from` on, `len` of them (generated, never held whole).
struct Seq {
    next: u64,
    buf: Vec<u8>,
}

impl Seq {
    fn new() -> Seq {
        Seq {
            next: 1,
            buf: Vec::new(),
        }
    }

    /// The next `len` bytes of the sequence.
    fn take(&mut self, len: usize) -> Vec<u8> {
        while self.buf.len() < len {
            self.buf
                .extend_from_slice(format!("{}\n", self.next).as_bytes());
            self.next += 1;
        }
        self.buf.drain(..len).collect()
    }
}

/// Bytes `seq 1 n` prints before the line of `k`.
fn seq_offset(k: u64) -> u64 {
    (1..k).map(|i| i.to_string().len() as u64 + 1).sum()
}

fn vm_hwm_kb(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn a_200_mb_output_is_read_back_completely_in_slices() {
    const N: u64 = 24_000_000;
    let total = seq_offset(N + 1);
    assert!(total > 200_000_000);
    let dir = temp_dir("big");
    let mut p = serve(&dir, &[], "2025-06-18");
    let started = Instant::now();
    let r = call(&mut p, 1, "count", json!({"n": N}));
    let ran = started.elapsed();
    assert!(!is_error(&r), "{r}");
    let call_id = r["result"]["structuredContent"]["callId"]
        .as_str()
        .unwrap()
        .to_owned();
    let t = first_text(&r);
    assert!(
        t.contains(&format!("stdout 4096 of {total} bytes shown")),
        "{t}"
    );
    assert!(
        t.contains(&format!("the complete output of call {call_id} is kept")),
        "{t}"
    );
    let link = &r["result"]["content"][1];
    assert_eq!(link["type"], "resource_link");
    assert_eq!(link["uri"], json!(format!("output://{call_id}/stdout")));
    assert_eq!(link["size"], json!(total));

    let started = Instant::now();
    let (mut offset, mut want, mut id) = (0u64, Seq::new(), 10);
    while offset < total {
        let r = call(
            &mut p,
            id,
            "output",
            json!({"call": call_id, "offset": offset, "limit": 1 << 20}),
        );
        id += 1;
        let s = &r["result"]["structuredContent"];
        assert_eq!(s["totalBytes"], json!(total), "{s}");
        assert!(!s["running"].as_bool().unwrap() && !s["cut"].as_bool().unwrap());
        let got = first_text(&r).as_bytes();
        assert!(!got.is_empty());
        assert_eq!(got, want.take(got.len()).as_slice(), "at offset {offset}");
        assert_eq!(s["nextOffset"], json!(offset + got.len() as u64));
        offset += got.len() as u64;
    }
    let read = started.elapsed();
    assert_eq!(want.take(1), b"2", "the last slice ended exactly after {N}");
    let hwm = vm_hwm_kb(p.pid());
    eprintln!(
        "FIGURES: {total} bytes: the call took {:.1} s; read back in {} slices of 1 MiB in {:.1} s; server peak RSS {hwm} KiB",
        ran.as_secs_f64(),
        id - 10,
        read.as_secs_f64()
    );

    greps_a_line_in_the_middle(&mut p, &call_id, total);
    // The resource gives the first MiB.
    let r = request(
        &mut p,
        2,
        "resources/read",
        json!({"uri": format!("output://{call_id}/stdout")}),
    );
    let head = r["result"]["contents"][0]["text"].as_str().unwrap();
    assert_eq!(head.len(), 1 << 20);
    assert_eq!(head.as_bytes(), Seq::new().take(1 << 20).as_slice());
    p.finish();
}

/// `grep` of the 200 MB output `call_id` (`seq 1 24000000`, `total` bytes): one call from the
/// start finds the line in the middle; one from a line start finds the lines after it.
fn greps_a_line_in_the_middle(p: &mut Proc, call_id: &str, total: u64) {
    // One grep from the start, with the default time bound, finds the line in the middle
    // (byte 114,888,888 of 204,888,897: past the 64 MiB one scan used to read). The default
    // bound is the point (what one call of an agent gets); this debug build scans the whole
    // output in about 1.6 s here with CI's other work running (the FIGURES line below), three
    // times within it.
    let started = Instant::now();
    let r = call(
        p,
        1,
        "output",
        json!({"call": call_id, "grep": "^14000000$"}),
    );
    let scanned = started.elapsed();
    let s = &r["result"]["structuredContent"];
    let middle = seq_offset(14_000_000);
    assert!(middle > 100_000_000);
    assert_eq!(
        s["matches"],
        json!([{"offset": middle, "line": "14000000"}]),
        "{s}"
    );
    assert!(s["nextOffset"].as_u64().unwrap() > middle, "{s}");
    eprintln!(
        "FIGURES: one grep of {total} bytes: {} scanned in {:.2} s",
        s["scannedBytes"],
        scanned.as_secs_f64()
    );
    // And by its offset, from a line start near it.
    let from = seq_offset(23_456_000);
    let r = call(
        p,
        3,
        "output",
        json!({"call": call_id, "grep": "^2345678[0-9]$", "offset": from}),
    );
    let s = &r["result"]["structuredContent"];
    assert_eq!(s["matches"].as_array().unwrap().len(), 10, "{s}");
    assert_eq!(
        s["matches"][9],
        json!({"offset": seq_offset(23_456_789), "line": "23456789"})
    );
    assert_eq!(s["nextOffset"], json!(total), "{s}");
}

/// The server's private directories under `tmp` (the spool is `spool/` in one).
fn privates(tmp: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("stdmcp-")
        })
        .collect()
}

/// The server's spool directories under `tmp`.
fn spools(tmp: &Path) -> Vec<PathBuf> {
    privates(tmp)
        .into_iter()
        .map(|p| p.join("spool"))
        .filter(|p| p.is_dir())
        .collect()
}

/// Waits (failing after PATIENCE) until the watchdog removed every private directory.
fn wait_no_privates(tmp: &Path) {
    let deadline = Instant::now() + PATIENCE;
    while !privates(tmp).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the watchdog did not remove the private directory: {:?}",
            privates(tmp)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_spool_cap_evicts_the_oldest_calls_and_the_spool_is_removed_at_exit() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("evict");
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let env = [
        ("STDMCP_SPOOL_MAX_BYTES", "300000"),
        ("TMPDIR", tmp.to_str().unwrap()),
    ];
    // 2025-03-26 has no resource_link: the link comes as text.
    let mut p = serve(&dir, &env, "2025-03-26");
    // No structuredContent before 2025-06-18 either: the text names the call.
    let id_of = |r: &Value| {
        let t = text(r);
        let at = t.find(" output of call ").unwrap() + 16;
        t[at..].split_whitespace().next().unwrap().to_owned()
    };
    let a = id_of(&call(&mut p, 1, "count", json!({"n": 30000})));
    let b = call(&mut p, 2, "count", json!({"n": 30000}));
    assert!(text(&b).contains("Resource: output://"), "{b}");
    assert!(!b.to_string().contains("resource_link"), "{b}");
    // Kept whole: the note and the link say so.
    assert!(text(&b).contains("the complete output of call "), "{b}");
    assert!(text(&b).contains("(the complete stdout of call "), "{b}");
    let b = id_of(&b);
    let spool = spools(&tmp);
    assert_eq!(spool.len(), 1, "{spool:?}");
    assert_eq!(
        std::fs::metadata(&spool[0]).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert_eq!(
        std::fs::metadata(spool[0].parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );

    let r = call(&mut p, 3, "output", json!({"call": a}));
    assert!(is_error(&r) && text(&r).contains("evicted"), "{r}");
    let r = call(&mut p, 4, "output", json!({"call": b, "limit": 6}));
    assert_eq!(first_text(&r), "1\n2\n3\n");

    // A call larger than the whole cap evicts b and keeps a prefix, and says so.
    let r = call(&mut p, 5, "count", json!({"n": 60000}));
    assert!(
        text(&r).contains("only the first 300000 bytes of its stdout were kept"),
        "{r}"
    );
    let c = id_of(&r);
    // Neither the note nor the link calls the prefix the complete output.
    assert!(!text(&r).contains("complete"), "{r}");
    assert!(
        text(&r).contains(&format!("part of the output of call {c} is kept")),
        "{r}"
    );
    assert!(
        text(&r).contains(&format!(
            "(the first 300000 bytes of the stdout of call {c}: only they were kept"
        )),
        "{r}"
    );
    assert!(is_error(&call(&mut p, 6, "output", json!({"call": b}))));
    let r = call(&mut p, 7, "output", json!({"call": c, "offset": 299_990}));
    assert_eq!(first_text(&r).len(), 10);
    assert!(text(&r).contains("only this much was kept"), "{r}");
    for bad in [
        json!({"call": "../../etc/passwd"}),
        json!({"call": c, "stream": "both"}),
        json!({"call": c, "limit": 0}),
        json!({"call": c, "grep": "("}),
    ] {
        assert!(is_error(&call(&mut p, 8, "output", bad.clone())), "{bad}");
    }
    p.finish();
    assert!(spools(&tmp).is_empty(), "the spool outlived the server");
    wait_no_privates(&tmp);
}

#[test]
fn the_watchdog_removes_the_spool_of_a_killed_server() {
    let dir = temp_dir("killed");
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut p = serve(&dir, &[("TMPDIR", tmp.to_str().unwrap())], "2025-06-18");
    call(&mut p, 1, "count", json!({"n": 10000}));
    assert_eq!(spools(&tmp).len(), 1);
    send_signal(p.pid(), libc::SIGKILL);
    p.wait_exit();
    wait_no_privates(&tmp);
}

#[test]
fn a_spool_that_cannot_be_created_is_named_as_the_reason() {
    let dir = temp_dir("nospool");
    // Nothing can be created in /proc: the spool fails, the call does not.
    let mut p = serve(&dir, &[("TMPDIR", "/proc")], "2025-06-18");
    let r = call(&mut p, 1, "count", json!({"n": 10000}));
    assert!(!is_error(&r), "{r}");
    let t = first_text(&r);
    assert!(
        t.contains("the output spool could not be created (the server's log says why), so the cut part is lost"),
        "{t}"
    );
    assert_eq!(
        r["result"]["content"].as_array().unwrap().len(),
        1,
        "no link to nothing"
    );
    p.finish();
    // A spool turned off says so, not that it could not be created.
    let mut p = serve(&dir, &[("STDMCP_SPOOL_MAX_BYTES", "0")], "2025-06-18");
    let r = call(&mut p, 1, "count", json!({"n": 10000}));
    let t = first_text(&r);
    assert!(
        t.contains(
            "the output spool is turned off (STDMCP_SPOOL_MAX_BYTES=0), so the cut part is lost"
        ),
        "{t}"
    );
    p.finish();
}

#[test]
fn the_private_directory_is_never_in_the_working_directory_or_a_root() {
    let dir = temp_dir("tmpdir-place");
    let work = dir.join("work");
    let manifest = manifest(&dir);
    // An empty TMPDIR is unset (/tmp), not the server's working directory; a TMPDIR inside a
    // root (here the root itself and a directory in it) is not used for the private directory.
    let inside = work.join("tmp");
    std::fs::create_dir_all(&inside).unwrap();
    for (tmpdir, looked) in [
        ("", &work),
        (work.to_str().unwrap(), &work),
        (inside.to_str().unwrap(), &inside),
    ] {
        let mut cmd = serve_command(&manifest);
        cmd.current_dir(&work).env("TMPDIR", tmpdir);
        let mut p = Proc::initialized(cmd, "2025-06-18");
        let r = call(&mut p, 1, "count", json!({"n": 10000}));
        assert!(first_text(&r).contains("is kept"), "TMPDIR={tmpdir:?}: {r}");
        assert!(
            privates(looked).is_empty(),
            "TMPDIR={tmpdir:?}: {:?}",
            privates(looked)
        );
        let stderr = std::sync::Arc::clone(&p.stderr);
        p.finish();
        if !tmpdir.is_empty() {
            let stderr = stderr.lock().unwrap();
            assert!(stderr.contains("is inside the root"), "{stderr}");
        }
    }
}
