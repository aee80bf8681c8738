//! Kernel-enforced confinement (README "Security model"): a harmless adversary
//! (tests/fixtures/adversary.sh) run as a tool's program, a session's program and an `onCancel`
//! command tries to read a file outside its roots, to write outside through a directory
//! swapped for a symlink after the path check, to write in a root not declared writable, to
//! connect to a TCP listener the test runs, and to signal the server and another call's
//! process. Confined, each fails with the kernel's error; with `"confine": "off"` each
//! succeeds (so every test can fail). Where the kernel lacks the Landlock ABI a part needs, the
//! test asserts the honest degraded answer instead (`confined: false` naming the part) and says
//! so on stderr; `STDMCP_LANDLOCK_ABI` simulates such kernels here.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests start bare programs as clients and controls

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use crate::common::sessions::text;
use crate::common::{fixture, pids_from_progress, serve_command, stdmcp_check, temp_dir, Proc};
use serde_json::{json, Value};

/// The test's own places: the adversary, a root it may write (`r`), one it may only read
/// (`ro`), and `outside/` with a marker file no rule names.
struct Place {
    dir: PathBuf,
    adversary: String,
}

impl Place {
    fn new(name: &str) -> Place {
        let dir = temp_dir(name);
        for d in ["r/sub", "ro", "outside"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        std::fs::write(dir.join("outside/secret"), "MARKER").unwrap();
        let adversary = fixture("adversary.sh").display().to_string();
        Place { dir, adversary }
    }

    fn at(&self, rel: &str) -> String {
        self.dir.join(rel).display().to_string()
    }

    /// The adversary's tools, confined in `mode` (`on`, `off`, `require`), TCP allowed to
    /// `port` for `net_port`.
    fn manifest(&self, mode: &str, port: u16) -> Value {
        let adv = &self.adversary;
        let s = json!({"type": "string"});
        let path = |root: &str| json!({"type": "path", "root": root, "mustExist": false, "required": true});
        json!({
            "name": "adversary",
            "roots": {"r": {"path": "r", "write": true}, "ro": "ro"},
            "defaults": {"confine": mode, "heartbeatSeconds": 0.05},
            "tools": [
                {"name": "act", "description": "an action on strings the path check never sees",
                 "program": adv, "args": [{"param": "action"}, {"param": "a"}, {"param": "b"}],
                 "params": {"action": {"type": "enum", "values": ["read", "connect", "signal"], "required": true},
                            "a": s, "b": s}},
                {"name": "net_port", "description": "connect, with its port declared",
                 "program": adv, "args": ["connect", {"param": "a"}], "network": [port],
                 "params": {"a": s}},
                {"name": "write_ro", "description": "writes a file of a read-only root",
                 "program": adv, "args": ["write", {"param": "f"}], "params": {"f": path("ro")}},
                {"name": "swap", "description": "swaps a directory of its root for a symlink out, then writes in it",
                 "program": adv, "args": ["swap", {"param": "dir"}, {"param": "out"}, {"param": "f"}],
                 "params": {"dir": s, "out": s, "f": path("r")}},
                {"name": "victim", "description": "another call: says its pid, waits for a stop file, reports a SIGUSR1",
                 "program": "sh",
                 "args": ["-c", "trap 'echo got-usr1; exit 0' USR1; echo \"pids $$\"; while [ ! -e \"$0\" ]; do sleep 0.05; done; echo no-signal", {"param": "stop"}],
                 "params": {"stop": s}},
                {"name": "hang", "description": "runs until its deadline; its onCancel is the adversary",
                 "program": "sh", "args": ["-c", "exec sleep 1000", {"param": "f"}], "timeoutSeconds": 1,
                 "params": {"f": path("r")},
                 "onCancel": [adv, "all", self.at("r/report"), self.at("outside/secret"), self.at("outside/oncancel-escaped"), port.to_string(), "parent"]}
            ],
            "sessions": [
                {"name": "shell", "description": "sh reading commands, answers ended by NUL", "program": "sh",
                 "readable": [fixture("")],
                 "args": ["-c", "printf 'ready\\0'; while IFS= read -r l; do eval \"$l\"; printf '\\0'; done"],
                 "answer": {"mode": "nul"}}
            ]
        })
    }

    fn serve(&self, mode: &str, port: u16, env: &[(&str, &str)]) -> Proc {
        let m = self.manifest(mode, port).to_string();
        let path = self.dir.join(format!("{mode}.json"));
        std::fs::write(&path, m).unwrap();
        let mut cmd = serve_command(&path);
        cmd.envs(env.iter().copied());
        Proc::initialized(cmd, "2025-06-18")
    }
}

/// The kernel's Landlock ABI as the server uses it (0: none), from `stdmcp check`.
fn abi() -> u32 {
    let dir = temp_dir("abi");
    let m = json!({"name": "a", "tools": [{"name": "t", "description": "d", "program": "true"}]});
    let (_, out, _) = stdmcp_check(&dir, &m);
    out.lines()
        .find_map(|l| l.trim().strip_prefix("confinement: Landlock ABI "))
        .and_then(|rest| {
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// Calls `tool` and returns (text, structuredContent).
fn call(p: &mut Proc, id: i64, tool: &str, args: Value) -> (String, Value) {
    p.call(json!(id), tool, args, None);
    let r = p.response(&json!(id));
    (text(&r), r["result"]["structuredContent"].clone())
}

/// Asserts that `text` shows the adversary's `action` denied with `error` where the kernel
/// enforces `part` (from ABI `needs`), else the honest degraded answer: it ran, and the
/// result says the part was not confined.
fn denied(
    abi: u32,
    needs: u32,
    (text, structured): &(String, Value),
    action: &str,
    error: &str,
    part: &str,
) {
    if abi >= needs {
        let said = text.lines().find(|l| l.starts_with(&format!("{action} ")));
        assert!(
            said.is_some_and(|l| l.starts_with(&format!("{action} denied")) && l.contains(error)),
            "{action}: {text}"
        );
        assert_eq!(structured["confined"], json!(true), "{structured}");
    } else {
        eprintln!("DEGRADED: Landlock ABI {abi} < {needs}: {action} is not confined here; checking that the result says so");
        assert_eq!(structured["confined"], json!(false), "{structured}");
        assert!(
            structured["notConfined"]
                .as_array()
                .unwrap()
                .contains(&json!(part)),
            "{structured}"
        );
    }
}

/// Asserts that `text` shows the adversary's `action` done (confine: off).
fn done((text, structured): &(String, Value), action: &str) {
    assert!(text.contains(&format!("{action} ok")), "{action}: {text}");
    assert_eq!(structured["confined"], json!(false), "{structured}");
}

fn listener() -> (TcpListener, u16) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

/// The hello the adversary sent, if it got through (the call has ended: a connection made
/// is in the backlog already, so a non-blocking accept tells).
fn greeted(l: &TcpListener) -> bool {
    match l.accept() {
        Ok((mut s, _)) => {
            s.set_nonblocking(false).unwrap();
            let mut got = String::new();
            let _ = s.read_to_string(&mut got);
            got.contains("hello")
        }
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
        Err(e) => panic!("accept: {e}"),
    }
}

#[test]
fn a_tool_reads_writes_connects_and_signals_only_what_it_is_given() {
    let abi = abi();
    for mode in ["on", "off"] {
        let place = Place::new(&format!("confine-tool-{mode}"));
        let (l, port) = listener();
        let mut p = place.serve(mode, port, &[]);
        let server = p.pid().to_string();
        let on = mode == "on";
        let check =
            |r: &(String, Value), action: &str, error: &str, part: &str, needs: u32| match on {
                true => denied(abi, needs, r, action, error, part),
                false => done(r, action),
            };
        // A file outside the roots, named by a string the path check never sees.
        let r = call(
            &mut p,
            1,
            "act",
            json!({"action": "read", "a": place.at("outside/secret")}),
        );
        check(&r, "read", "Permission denied", "filesystem", 1);
        assert_eq!(r.0.contains("MARKER"), !on || abi < 1, "{}", r.0);
        // The race: the directory the checked path runs through becomes a symlink out.
        let r = call(
            &mut p,
            2,
            "swap",
            json!({"dir": place.at("r/sub"), "out": place.at("outside"), "f": "sub/escaped"}),
        );
        check(&r, "write", "Permission denied", "filesystem", 1);
        assert_eq!(place.dir.join("outside/escaped").exists(), !on || abi < 1);
        // A root not declared writable.
        let r = call(&mut p, 3, "write_ro", json!({"f": "new"}));
        check(&r, "write", "Permission denied", "filesystem", 1);
        assert_eq!(place.dir.join("ro/new").exists(), !on || abi < 1);
        // A listener the test runs; then the same with the port declared.
        let r = call(
            &mut p,
            4,
            "act",
            json!({"action": "connect", "a": port.to_string()}),
        );
        check(&r, "connect", "Permission denied", "network", 4);
        assert_eq!(greeted(&l), !on || abi < 4);
        let r = call(&mut p, 5, "net_port", json!({"a": port.to_string()}));
        assert!(r.0.contains("connect ok"), "{}", r.0);
        assert!(greeted(&l));
        // The server (signal 0: EPERM proves the scope).
        let r = call(
            &mut p,
            6,
            "act",
            json!({"action": "signal", "a": "0", "b": server}),
        );
        check(&r, "signal", "Operation not permitted", "signals", 6);
        p.finish();
        let _ = std::fs::remove_dir_all(&place.dir);
    }
}

#[test]
fn a_tool_cannot_signal_another_calls_process() {
    let abi = abi();
    for mode in ["on", "off"] {
        let place = Place::new(&format!("confine-victim-{mode}"));
        let mut p = place.serve(mode, 1, &[]);
        let stop = place.at("stop");
        p.call(json!(1), "victim", json!({"stop": stop}), Some(json!("v")));
        let victim = pids_from_progress(&mut p, "v")[0];
        let r = call(
            &mut p,
            2,
            "act",
            json!({"action": "signal", "a": "USR1", "b": victim.to_string()}),
        );
        std::fs::write(&stop, "").unwrap();
        let v = p.response(&json!(1));
        let said = v["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if mode == "on" {
            denied(abi, 6, &r, "signal", "Operation not permitted", "signals");
            assert_eq!(said.contains("no-signal"), abi >= 6, "{said}");
        } else {
            done(&r, "signal");
            assert!(said.contains("got-usr1"), "{said}");
        }
        p.finish();
        let _ = std::fs::remove_dir_all(&place.dir);
    }
}

#[test]
fn a_session_program_is_confined_too() {
    let abi = abi();
    for mode in ["on", "off"] {
        let place = Place::new(&format!("confine-session-{mode}"));
        let (l, port) = listener();
        let mut p = place.serve(mode, port, &[]);
        let server = p.pid();
        let (started, _) = call(&mut p, 1, "shell_start", json!({}));
        assert!(started.contains("Started"), "{started}");
        let (list, listed) = call(&mut p, 2, "sessions", json!({}));
        let structured = listed["sessions"][0].clone();
        let send = |p: &mut Proc, id: i64, args: String| {
            let input = format!("{} {args}", place.adversary);
            call(p, id, "shell_send", json!({"input": input})).0
        };
        let sent = [
            (
                send(&mut p, 3, format!("read {}", place.at("outside/secret"))),
                "read",
                "Permission denied",
                "filesystem",
                1,
            ),
            (
                send(&mut p, 4, format!("write {}", place.at("ro/new"))),
                "write",
                "Permission denied",
                "filesystem",
                1,
            ),
            (
                send(&mut p, 5, format!("connect {port}")),
                "connect",
                "Permission denied",
                "network",
                4,
            ),
            (
                send(&mut p, 6, format!("signal 0 {server}")),
                "signal",
                "Operation not permitted",
                "signals",
                6,
            ),
        ];
        for (text, action, error, part, needs) in sent {
            let r = (text, structured.clone());
            match mode {
                "on" => denied(abi, needs, &r, action, error, part),
                _ => done(&r, action),
            }
        }
        assert_eq!(greeted(&l), mode == "off" || abi < 4, "{list}");
        p.finish();
        let _ = std::fs::remove_dir_all(&place.dir);
    }
}

#[test]
fn an_on_cancel_command_is_confined_too() {
    let abi = abi();
    for mode in ["on", "off"] {
        let place = Place::new(&format!("confine-oncancel-{mode}"));
        let (l, port) = listener();
        let mut p = place.serve(mode, port, &[]);
        // The deadline (1 s) runs the onCancel command; its result comes after it ran.
        let (text, _) = call(&mut p, 1, "hang", json!({"f": "x"}));
        assert!(
            text.contains("timed out") && text.contains("onCancel (adversary.sh) ran"),
            "{text}"
        );
        let report = std::fs::read_to_string(place.dir.join("r/report")).unwrap();
        for (action, error, part, needs) in [
            ("read", "Permission denied", "filesystem", 1),
            ("write", "Permission denied", "filesystem", 1),
            ("connect", "Permission denied", "network", 4),
            ("signal", "Operation not permitted", "signals", 6),
        ] {
            let line = report
                .lines()
                .find(|l| l.starts_with(action))
                .unwrap_or_default();
            match mode {
                "on" if abi >= needs => assert!(line.starts_with(&format!("{action} denied")) && line.contains(error), "{report}"),
                "on" => eprintln!("DEGRADED: Landlock ABI {abi}: onCancel's {action} ({part}) is not confined here: {line}"),
                _ => assert!(line.starts_with(&format!("{action} ok")), "{report}"),
            }
        }
        assert_eq!(
            place.dir.join("outside/oncancel-escaped").exists(),
            mode == "off" || abi < 1
        );
        assert_eq!(greeted(&l), mode == "off" || abi < 4);
        p.finish();
        let _ = std::fs::remove_dir_all(&place.dir);
    }
}

/// Simulated kernels (`STDMCP_LANDLOCK_ABI`): without Landlock the program runs and the
/// result says `confined: false`; `confine: require` refuses the call, naming what is missing.
#[test]
fn without_landlock_results_say_so_and_require_refuses() {
    let real = abi();
    for (simulated, missing) in [
        (
            "0",
            &[
                "filesystem",
                "truncate",
                "ioctl",
                "network",
                "signals",
                "abstractUnixSockets",
            ][..],
        ),
        (
            "3",
            &["ioctl", "network", "signals", "abstractUnixSockets"][..],
        ),
    ] {
        if simulated.parse::<u32>().unwrap() >= real && simulated != "0" {
            eprintln!("SKIPPED: simulating ABI {simulated} needs a newer kernel (ABI {real})");
            continue;
        }
        let place = Place::new(&format!("confine-sim-{simulated}"));
        let env = [("STDMCP_LANDLOCK_ABI", simulated)];
        let mut p = place.serve("on", 1, &env);
        let (text, s) = call(
            &mut p,
            1,
            "act",
            json!({"action": "read", "a": place.at("outside/secret")}),
        );
        assert_eq!(s["confined"], json!(false), "{s}");
        assert_eq!(s["notConfined"], json!(missing), "{s}");
        // Without Landlock the read goes through (and says so); at ABI 3 the file system
        // is still enforced.
        assert_eq!(text.contains("MARKER"), simulated == "0", "{text}");
        p.finish();
        let mut p = place.serve("require", 1, &env);
        let (text, s) = call(
            &mut p,
            2,
            "act",
            json!({"action": "read", "a": place.at("outside/secret")}),
        );
        assert!(
            text.starts_with("Refused:") && text.contains("confine: require"),
            "{text}"
        );
        assert!(
            text.contains("Nothing was run") && !text.contains("MARKER"),
            "{text}"
        );
        assert!(text.contains(missing[0]) || simulated == "0", "{text}");
        assert!(s.is_null(), "{s}");
        // A session of the same manifest is refused too.
        let (text, _) = call(&mut p, 3, "shell_start", json!({}));
        assert!(text.contains("confine: require"), "{text}");
        p.finish();
        let _ = std::fs::remove_dir_all(&place.dir);
    }
    // On the real kernel, a required confinement runs (where it can be enforced in full).
    if real >= 6 {
        let place = Place::new("confine-require");
        let mut p = place.serve("require", 1, &[]);
        let r = call(
            &mut p,
            1,
            "act",
            json!({"action": "read", "a": place.at("outside/secret")}),
        );
        denied(real, 1, &r, "read", "Permission denied", "filesystem");
        p.finish();
        let _ = std::fs::remove_dir_all(&place.dir);
    }
}

/// `stdmcp check` and the startup line say what the kernel enforces.
#[test]
fn check_and_the_startup_line_say_what_is_enforced() {
    let place = Place::new("confine-check");
    let (code, out, err) = stdmcp_check(&place.dir, &place.manifest("on", 1));
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("confinement: "), "{out}");
    assert!(
        out.contains("root r = ") && out.contains("(writable)"),
        "{out}"
    );
    assert!(
        out.contains("confine: on;") && out.contains("network: TCP ports 1"),
        "{out}"
    );
    let path: &Path = &place.dir.join("m.json");
    let out = serve_command(path)
        .env("STDMCP_LANDLOCK_ABI", "0")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("stdmcp: serving")
            && err.contains("confinement: no Landlock (STDMCP_LANDLOCK_ABI=0"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&place.dir);
}

/// Each run's rules are its own (README "Security model"): a tool's rules stay its own even when
/// another tool of the same program ran first with more, a place made after the first call is
/// in the rules of the next, and each run's `TMPDIR` is fresh. (A cache of rules or domains
/// shared between runs, keyed wrongly, would break the first two; a `TMPDIR` handed on after
/// a run used it, the third.)
#[test]
fn each_tool_keeps_its_own_rules_and_each_run_a_fresh_tmpdir() {
    let abi = abi();
    if abi == 0 {
        eprintln!("DEGRADED: no Landlock here: the spawners' rules cannot be checked");
        return;
    }
    let dir = temp_dir("confine-spawners");
    std::fs::create_dir_all(dir.join("w")).unwrap();
    let at = |rel: &str| dir.join(rel).display().to_string();
    let s = json!({"type": "string"});
    let write = "echo x > \"$0\" && echo wrote";
    let m = json!({"name": "spawners", "tools": [
        {"name": "may_write", "description": "writes its argument", "program": "sh",
         "writable": [at("w")], "args": ["-c", write, {"param": "f"}], "params": {"f": s}},
        {"name": "may_not", "description": "the same, with no writable place", "program": "sh",
         "args": ["-c", write, {"param": "f"}], "params": {"f": s}},
        {"name": "later", "description": "reads a place not there at the start", "program": "sh",
         "readable": [at("later")], "args": ["-c", "cat \"$0\"", {"param": "f"}], "params": {"f": s}},
        {"name": "tmp", "description": "lists its TMPDIR, then leaves a file in it", "program": "sh",
         "args": ["-c", "echo \"in tmp: [$(ls -A \"$TMPDIR\")]\"; echo left > \"$TMPDIR/left\""]}
    ]});
    let path = dir.join("spawners.json");
    std::fs::write(&path, m.to_string()).unwrap();
    let mut p = Proc::initialized(serve_command(&path), "2025-06-18");
    let (out, _) = call(&mut p, 1, "may_write", json!({"f": at("w/a")}));
    assert!(out.contains("wrote"), "{out}");
    let (out, _) = call(&mut p, 2, "may_not", json!({"f": at("w/b")}));
    assert!(out.contains("Permission denied"), "{out}");
    assert!(!dir.join("w/b").exists());
    let (out, _) = call(&mut p, 3, "later", json!({"f": at("later/f")}));
    assert!(!out.contains("MARKER"), "{out}");
    std::fs::create_dir_all(dir.join("later")).unwrap();
    std::fs::write(dir.join("later/f"), "MARKER").unwrap();
    let (out, _) = call(&mut p, 4, "later", json!({"f": at("later/f")}));
    assert!(out.contains("MARKER"), "{out}");
    for id in 5..8 {
        let (out, _) = call(&mut p, id, "tmp", json!({}));
        assert!(out.contains("in tmp: []"), "{out}");
    }
    p.finish();
    let _ = std::fs::remove_dir_all(&dir);
}
