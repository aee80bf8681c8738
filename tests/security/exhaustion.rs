//! `stdmcp serve` when the machine says no: at the process and thread limit (`RLIMIT_NPROC`
//! of another user, a pids cgroup) every request is answered; a watchdog that could not start
//! at the first call (EMFILE) starts at the next, and a `setsid` child dies with a SIGKILLed
//! server; another user who made every name of `TMPDIR` it could predict takes nothing away
//! (cut output and the `onCancel` after SIGKILL); a relative `TMPDIR` works as well (and
//! reaches programs absolute); no zombie
//! stays under the server after cancels, without another call. Payloads are harmless: `true`,
//! `seq`, `sleep`, `touch` of a marker in the test's own directory.
#![cfg(target_os = "linux")]
#![allow(unsafe_code, clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests start bare programs as clients and controls

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{
    alive, fixture, send_signal, serve_command, stdmcp_bin, temp_dir, wait_gone, zombies_of,
    KillOnDrop, Proc, PATIENCE,
};
use serde_json::{json, Value};

/// The unprivileged user the limit tests run the server as (root ignores `RLIMIT_NPROC`).
const NOBODY: u32 = 65534;

/// A child that leaves its process group (`setpgid`) and exits; its parent, which never
/// reaps it, says `ready` once it is a zombie and becomes `sleep`.
const STRAY: &str = "import os\npid = os.fork()\nif pid == 0:\n    os.setpgid(0, 0)\n    os._exit(0)\nos.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)\nprint('ready', flush=True)\nos.execvp('sleep', ['sleep', '1000'])\n";

/// The test's manifest in `dir`, with the fixture it runs copied there: the test directory is
/// readable by the other user the limit test runs the server as; the checkout may not be.
fn manifest(dir: &Path) -> PathBuf {
    let marks = dir.join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let escape = dir.join("escape.sh");
    std::fs::copy(fixture("escape.sh"), &escape).unwrap();
    let m = json!({
        "name": "exhaustion",
        "version": "1.0.0",
        "defaults": {"killGraceMs": 200},
        "tools": [
            {"name": "quick", "description": "exits at once", "program": "true"},
            {"name": "escape", "description": "starts a process that leaves the call",
             "program": escape,
             "args": [{"param": "how"}, {"param": "then"}],
             "params": {"how": {"type": "string", "maxLength": 10, "required": true},
                        "then": {"type": "string", "maxLength": 10, "required": true}}},
            {"name": "count", "description": "counts", "program": "seq",
             "args": ["1", {"param": "n"}],
             "params": {"n": {"type": "integer", "minimum": 1, "required": true}},
             "maxOutputBytes": 4096},
            {"name": "hang", "description": "says it started, then waits; its onCancel leaves a marker",
             "program": "sh", "args": ["-c", "echo started; exec sleep 1000"],
             "onCancel": ["touch", format!("{}/cancelled-{{callId}}", marks.display())]},
            {"name": "short", "description": "exits at once, within a second", "program": "true",
             "timeoutSeconds": 1},
            {"name": "tmpdir", "description": "prints its TMPDIR", "program": "sh",
             "args": ["-c", "printf %s \"$TMPDIR\""]},
            {"name": "stray", "description": "leaves a zombie in a process group of its own",
             "program": "python3", "args": ["-c", STRAY], "readable": ["{programDir}/.."]}
        ]
    });
    let path = dir.join("tools.json");
    std::fs::write(&path, m.to_string()).unwrap();
    path
}

fn server(dir: &Path, tmp: &Path) -> Command {
    let mut cmd = serve_command(&manifest(dir));
    cmd.env("STDMCP_ROOT", dir)
        .env("TMPDIR", tmp)
        .env("STDMCP_HEARTBEAT_MS", "50")
        .env("STDMCP_DRAIN_MS", "100");
    cmd
}

fn serve(cmd: Command) -> Proc {
    Proc::initialized(cmd, "2025-06-18")
}

/// A directory anyone may create entries in, as `/tmp` is.
fn shared_tmp(dir: &Path) -> PathBuf {
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o1777)).unwrap();
    tmp
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn text(r: &Value) -> String {
    if let Some(e) = r.get("error") {
        return e["message"].as_str().unwrap_or_default().to_owned();
    }
    r["result"]["content"]
        .as_array()
        .map(|c| c.iter().filter_map(|b| b["text"].as_str()).collect())
        .unwrap_or_default()
}

fn is_error(r: &Value) -> bool {
    r.get("error").is_some() || r["result"]["isError"] == json!(true)
}

/// Sets the soft limit `resource` of process `pid` (the hard one stays); returns the old one.
fn set_soft_limit(pid: i32, resource: libc::__rlimit_resource_t, soft: u64) -> u64 {
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: prlimit reads and writes the two structs we own.
    let r = unsafe { libc::prlimit(pid, resource, std::ptr::null(), &mut old) };
    assert_eq!(r, 0, "prlimit: {}", std::io::Error::last_os_error());
    let new = libc::rlimit {
        rlim_cur: soft.min(old.rlim_max),
        rlim_max: old.rlim_max,
    };
    // SAFETY: as above.
    let r = unsafe { libc::prlimit(pid, resource, &new, std::ptr::null_mut()) };
    assert_eq!(r, 0, "prlimit: {}", std::io::Error::last_os_error());
    old.rlim_cur
}

/// Requests of every kind that needs a worker thread (and the timer, for a call with a
/// deadline), and a ping: each is answered. Returns the answers of the calls.
fn everything_answered(p: &mut Proc, first_id: i64) -> Vec<Value> {
    let mut ids = Vec::new();
    for i in 0..8 {
        let id = json!(first_id + i);
        // Half with a progress token, all with the manifest's default deadline.
        let token = (i % 2 == 0).then(|| json!(format!("t{first_id}-{i}")));
        p.call(id.clone(), "quick", json!({}), token);
        ids.push(id);
    }
    for i in 8..12 {
        let id = json!(first_id + i);
        let uri = format!("output://no-such-call-{i}/stdout");
        p.request(id.clone(), "resources/read", json!({"uri": uri}));
        ids.push(id);
    }
    p.request(json!(first_id + 12), "ping", json!({}));
    ids.push(json!(first_id + 12));
    ids.iter().map(|id| p.response(id)).collect()
}

/// The shared part of the limit tests: `limit(true)` puts the server at its limit of
/// processes and threads, `limit(false)` lifts it.
fn answered_at_the_limit(mut p: Proc, limit: &dyn Fn(i32, bool)) {
    let pid = p.pid();
    // No worker and no timer yet: neither can be started.
    limit(pid, true);
    let answers = everything_answered(&mut p, 100);
    for r in &answers[..12] {
        assert!(is_error(r), "{r}");
    }
    assert!(
        text(&answers[0]).contains("could not run this request"),
        "{}",
        answers[0]
    );
    assert!(alive(pid), "the server died at its limit");
    // Lifted: the next calls start the timer and a worker, and work.
    limit(pid, false);
    p.call(json!(1), "quick", json!({}), Some(json!("ok")));
    let r = p.response(&json!(1));
    assert!(!is_error(&r), "{r}");
    // At the limit again, with a worker and the timer running: answered all the same (the
    // programs cannot start, which the results say).
    limit(pid, true);
    for r in everything_answered(&mut p, 200) {
        assert!(r.get("result").is_some() || r.get("error").is_some(), "{r}");
    }
    // The one worker busy with a long call, and at the limit: a call with a one-second
    // deadline waits for it, and is answered at its deadline, not when the worker frees up.
    limit(pid, false);
    p.call(json!(2), "hang", json!({}), Some(json!("busy")));
    p.recv_where("the started line", |m| {
        m["params"]["progressToken"] == "busy" && m["params"]["message"] == "started"
    });
    limit(pid, true);
    p.call(json!(3), "short", json!({}), None);
    let r = p.response(&json!(3));
    assert!(
        is_error(&r) && text(&r).contains("still waiting for a worker thread"),
        "{r}"
    );
    limit(pid, false);
    p.notify(
        "notifications/cancelled",
        json!({"requestId": 2, "reason": "done"}),
    );
    let (_, status) = p.finish();
    assert!(status.success(), "{status:?}");
}

#[test]
fn every_request_is_answered_at_the_users_process_limit() {
    if !is_root() {
        eprintln!(
            "SKIPPED every_request_is_answered_at_the_users_process_limit: it runs the server \
             as another user (uid {NOBODY}), which only root can"
        );
        return;
    }
    let dir = temp_dir("nproc");
    let tmp = shared_tmp(&dir);
    let plain = server(&dir, &tmp);
    // The same command as user nobody, with no supplementary groups, on a copy of the binary
    // that user can run, in a directory it can enter.
    let bin = dir.join("stdmcp");
    std::fs::copy(stdmcp_bin(), &bin).unwrap();
    for (path, mode) in [
        (&dir, 0o755),
        (&bin, 0o755),
        (&dir.join("escape.sh"), 0o755),
        (&dir.join("tools.json"), 0o644),
    ] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let mut cmd = Command::new("setpriv");
    cmd.arg(format!("--reuid={NOBODY}"))
        .arg(format!("--regid={NOBODY}"))
        .args(["--clear-groups", "--"])
        .arg(&bin)
        .args(plain.get_args())
        .current_dir(&dir)
        .envs(plain.get_envs().filter_map(|(k, v)| Some((k, v?))));
    let p = serve(cmd);
    let original = soft_nproc(p.pid());
    // One task for the user: no process or thread of the server can be started. Set by
    // `prlimit` running as that user too (root may lack CAP_SYS_RESOURCE in a container,
    // which changing another user's limits takes).
    answered_at_the_limit(p, &|pid, on| {
        let soft = if on { "1".to_owned() } else { original.clone() };
        let set = Command::new("setpriv")
            .arg(format!("--reuid={NOBODY}"))
            .arg(format!("--regid={NOBODY}"))
            .args(["--clear-groups", "--", "prlimit", "--pid"])
            .arg(pid.to_string())
            .arg(format!("--nproc={soft}:"))
            .status()
            .unwrap();
        assert!(set.success(), "prlimit --nproc={soft}:");
    });
}

/// The soft limit of processes of `pid`, as `prlimit` spells it.
fn soft_nproc(pid: i32) -> String {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max processes"))
        .unwrap();
    line["Max processes".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}

/// A fresh pids cgroup (v2, or v1's pids hierarchy) that this process may write, or why not.
fn pids_cgroup() -> Result<PathBuf, String> {
    let name = format!("stdmcp-test-{}", std::process::id());
    let v2 = Path::new("/sys/fs/cgroup");
    let v1 = v2.join("pids");
    let mut why = Vec::new();
    for base in [v1, v2.to_path_buf()] {
        let dir = base.join(&name);
        match std::fs::create_dir(&dir) {
            Ok(()) if dir.join("pids.max").exists() => return Ok(dir),
            Ok(()) => {
                let _ = std::fs::remove_dir(&dir);
                why.push(format!("{}: no pids controller", base.display()));
            }
            Err(e) => why.push(format!("{}: {e}", base.display())),
        }
    }
    Err(why.join("; "))
}

#[test]
fn every_request_is_answered_at_a_pids_cgroup_limit() {
    let cgroup = match pids_cgroup() {
        Ok(c) => c,
        Err(why) => {
            eprintln!(
                "SKIPPED every_request_is_answered_at_a_pids_cgroup_limit: no pids cgroup can \
                 be made here ({why})"
            );
            return;
        }
    };
    let _remove = RemoveCgroup(cgroup.clone());
    let dir = temp_dir("pids");
    let tmp = shared_tmp(&dir);
    let p = serve(server(&dir, &tmp));
    if let Err(e) = std::fs::write(cgroup.join("cgroup.procs"), p.pid().to_string()) {
        eprintln!(
            "SKIPPED every_request_is_answered_at_a_pids_cgroup_limit: the server cannot be \
             moved into {} ({e})",
            cgroup.display()
        );
        return;
    }
    let limit = |_pid: i32, on: bool| {
        let max = if on {
            std::fs::read_to_string(cgroup.join("pids.current"))
                .unwrap()
                .trim()
                .to_owned()
        } else {
            "max".to_owned()
        };
        std::fs::write(cgroup.join("pids.max"), max).unwrap();
    };
    answered_at_the_limit(p, &limit);
}

/// Removes the test's cgroup, once the server and its watchdog are gone (also after a
/// failure, when the server was killed).
struct RemoveCgroup(PathBuf);

impl Drop for RemoveCgroup {
    fn drop(&mut self) {
        let deadline = Instant::now() + PATIENCE;
        while std::fs::remove_dir(&self.0).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        if self.0.exists() && !std::thread::panicking() {
            panic!("{} stays busy", self.0.display());
        }
    }
}

/// The lowest descriptor number `pid` does not use: with that as its limit, it can open none.
fn lowest_free_fd(pid: i32) -> u64 {
    let used: Vec<u64> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    (0..).find(|n| !used.contains(n)).unwrap()
}

#[test]
fn a_watchdog_that_could_not_start_at_the_first_call_guards_the_next() {
    let dir = temp_dir("emfile");
    let tmp = shared_tmp(&dir);
    let mut p = serve(server(&dir, &tmp));
    let pid = p.pid();
    // Out of descriptors for the first call: neither the watchdog nor the program starts.
    let old = set_soft_limit(pid, libc::RLIMIT_NOFILE, lowest_free_fd(pid));
    p.call(json!(1), "quick", json!({}), None);
    let r = p.response(&json!(1));
    assert!(is_error(&r), "{r}");
    set_soft_limit(pid, libc::RLIMIT_NOFILE, old);
    // The next call's process leaves its session, and the server is killed.
    p.call(
        json!(2),
        "escape",
        json!({"how": "setsid", "then": "wait"}),
        Some(json!("t")),
    );
    let escaped = p.escaped_pid_of("t");
    let _cleanup = KillOnDrop(escaped);
    assert!(alive(escaped));
    send_signal(pid, libc::SIGKILL);
    p.drain_to_exit();
    wait_gone(&[escaped]);
    let log = p.stderr.lock().unwrap().clone();
    assert!(
        log.contains("could not start the process watchdog"),
        "the first call's failure is not in the log:\n{log}"
    );
}

/// The watchdog (the server's `sh` child) once the first call started it.
fn watchdog_of(server: i32) -> i32 {
    crate::common::children_named(server, "sh")
        .into_iter()
        .find(|c| {
            std::fs::read(format!("/proc/{c}/cmdline"))
                .is_ok_and(|a| a.split(|&b| b == 0).any(|a| a == b"stdmcp-watchdog"))
        })
        .expect("the watchdog runs")
}

/// Every directory name in `tmp` another user can learn or derive from the server's
/// processes: the arguments of the watchdog's command line that name something in `tmp`, and
/// the names earlier versions made from its instance argument.
fn predictable_names(server: i32, tmp: &Path) -> Vec<PathBuf> {
    let argv = std::fs::read(format!("/proc/{}/cmdline", watchdog_of(server))).unwrap();
    let args: Vec<String> = argv
        .split(|&b| b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let mut names: Vec<PathBuf> = args
        .iter()
        .filter(|a| a.starts_with(tmp.to_str().unwrap()))
        .map(PathBuf::from)
        .collect();
    // `sh -c SCRIPT stdmcp-watchdog INSTANCE ...`
    let instance = args
        .iter()
        .skip_while(|a| *a != "stdmcp-watchdog")
        .nth(1)
        .expect("the instance argument");
    for kind in ["spool", "on-cancel"] {
        names.push(tmp.join(format!("stdmcp-{kind}-{instance}")));
    }
    names
}

/// Waits (failing after PATIENCE) for a file in `dir` whose name starts with `prefix`.
fn wait_for_file(dir: &Path, prefix: &str) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let found = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(prefix));
        if found {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no {prefix}* in {}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The server's own private directories in `tmp` (owned by this user).
fn own_privates(tmp: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("stdmcp-"))
        .filter(|e| e.metadata().is_ok_and(|m| m.uid() == me))
        .map(|e| e.path())
        .collect()
}

/// A call whose `onCancel` is pending when the server is SIGKILLed: the watchdog runs it (a
/// marker appears) and removes the server's private directory.
fn on_cancel_runs_after_sigkill(mut p: Proc, dir: &Path, tmp: &Path) {
    p.call(json!(50), "hang", json!({}), Some(json!("h")));
    p.recv_where("the started line", |m| {
        m["params"]["progressToken"] == "h" && m["params"]["message"] == "started"
    });
    send_signal(p.pid(), libc::SIGKILL);
    p.drain_to_exit();
    wait_for_file(&dir.join("marks"), "cancelled-");
    let deadline = Instant::now() + PATIENCE;
    while !own_privates(tmp).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the watchdog left {:?}",
            own_privates(tmp)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn names_another_user_could_predict_take_nothing_away() {
    if !is_root() {
        eprintln!(
            "SKIPPED names_another_user_could_predict_take_nothing_away: making directories \
             as another user (uid {NOBODY}) takes root"
        );
        return;
    }
    let dir = temp_dir("predict");
    let tmp = shared_tmp(&dir);
    let mut p = serve(server(&dir, &tmp));
    // The first call starts the watchdog; then the other user makes every name it can tell.
    p.call(json!(1), "quick", json!({}), None);
    assert!(!is_error(&p.response(&json!(1))));
    // Nothing names the private directory where others can read it.
    let watchdog = watchdog_of(p.pid());
    for what in ["cmdline", "environ"] {
        let text = std::fs::read(format!("/proc/{watchdog}/{what}")).unwrap();
        let text = String::from_utf8_lossy(&text);
        assert!(
            !text.contains(tmp.to_str().unwrap()),
            "the watchdog's {what} names a directory in TMPDIR ({})",
            tmp.display()
        );
    }
    let names = predictable_names(p.pid(), &tmp);
    for name in &names {
        let made = Command::new("setpriv")
            .arg(format!("--reuid={NOBODY}"))
            .arg(format!("--regid={NOBODY}"))
            .args(["--clear-groups", "--", "mkdir", "-p", "-m", "0777"])
            .arg(name)
            .status()
            .unwrap();
        assert!(made.success(), "mkdir {}", name.display());
    }
    // A cut output is kept whole: its last line can be read back.
    p.call(json!(2), "count", json!({"n": 20000}), None);
    let r = p.response(&json!(2));
    let t = text(&r);
    let at = t
        .find("the complete output of call ")
        .unwrap_or_else(|| panic!("the output was not kept: {t}"))
        + 28;
    let call = t[at..].split_whitespace().next().unwrap().to_owned();
    let total: usize = (1..=20000).map(|i: u32| i.to_string().len() + 1).sum();
    p.call(
        json!(3),
        "output",
        json!({"call": call, "offset": total - 6}),
        None,
    );
    let r = p.response(&json!(3));
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["result"]["content"][0]["text"], "20000\n", "{r}");
    on_cancel_runs_after_sigkill(p, &dir, &tmp);
}

#[test]
fn a_relative_tmpdir_keeps_on_cancel_after_sigkill() {
    let dir = temp_dir("relative");
    let tmp = shared_tmp(&dir);
    let mut cmd = server(&dir, Path::new("tmp"));
    cmd.current_dir(&dir);
    let mut p = serve(cmd);
    // Programs get it absolute too (they run in other directories): a confined one, a
    // directory of its own inside the server's private directory there.
    p.call(json!(1), "tmpdir", json!({}), None);
    let r = p.response(&json!(1));
    let got = r["result"]["structuredContent"]["stdout"]
        .as_str()
        .unwrap_or_default();
    assert!(
        got.starts_with(tmp.to_str().unwrap()) && got.starts_with('/'),
        "{r}"
    );
    on_cancel_runs_after_sigkill(p, &dir, &tmp);
}

#[test]
fn no_zombie_stays_after_cancels_without_another_call() {
    let dir = temp_dir("zombies");
    let tmp = shared_tmp(&dir);
    let mut p = serve(server(&dir, &tmp));
    let n = 8;
    for i in 0..n {
        p.call(json!(i), "stray", json!({}), Some(json!(format!("z{i}"))));
    }
    for i in 0..n {
        let token = json!(format!("z{i}"));
        p.recv_where("a ready line", move |m| {
            m["params"]["progressToken"] == token && m["params"]["message"] == "ready"
        });
    }
    for i in 0..n {
        p.notify(
            "notifications/cancelled",
            json!({"requestId": i, "reason": "test"}),
        );
    }
    // The calls end (their programs are gone); their strays, reparented to the server, are
    // zombies of the server then. No further call: they must go by themselves.
    let deadline = Instant::now() + PATIENCE;
    while !crate::common::children_named(p.pid(), "sleep").is_empty() {
        assert!(Instant::now() < deadline, "the cancelled calls go on");
        std::thread::sleep(Duration::from_millis(20));
    }
    while !zombies_of(p.pid()).is_empty() {
        assert!(
            Instant::now() < deadline,
            "zombies stay under the server: {:?}",
            zombies_of(p.pid())
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (all, status) = p.finish();
    assert!(status.success());
    // A cancelled request is never answered.
    for i in 0..n {
        assert!(
            !all.iter()
                .any(|m| m.get("id") == Some(&json!(i)) && m.get("method").is_none()),
            "call {i} was answered"
        );
    }
}
