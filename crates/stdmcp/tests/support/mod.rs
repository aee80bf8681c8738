//! Support for the integration tests of both packages: the runtime's (crates/stdmcp/tests)
//! and the `stdmcp` command's (tests/, through `tests/common`, which includes this module by
//! path and adds what only the command's tests need). A harness that runs a server binary over
//! real pipes: a reader thread parses every stdout line (each must be a valid JSON-RPC frame)
//! and forwards it; deadlines only detect failure. And the one temp-dir helper, the runtime's
//! fixtures, and process inspection through /proc.
#![allow(dead_code, clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

pub(crate) mod paced;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use serde_json::{json, Value};

/// How long a test waits for anything before it fails.
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);

/// target/debug (or the profile dir the tests were built in).
pub(crate) fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// The runtime's `everything` example. Cargo builds it for the runtime's own tests; the
/// command's tests that run it need it built too: `cargo test --workspace` (or plain `cargo
/// test`, whose default members are all three packages) does.
pub(crate) fn everything_bin() -> PathBuf {
    let bin = target_dir().join("examples").join("everything");
    assert!(
        bin.is_file(),
        "{} is not built: run the tests with `cargo test --workspace`, or build it first with \
         `cargo build -p stdmcp --example everything`",
        bin.display()
    );
    bin
}

pub(crate) struct Proc {
    pub child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<Value>,
    /// Messages received but not yet taken by `recv_where`.
    pub backlog: Vec<Value>,
    bad_lines: Arc<Mutex<Vec<String>>>,
    /// Everything the server wrote on stderr.
    pub stderr: Arc<Mutex<String>>,
    content_length: bool,
}

impl Proc {
    pub(crate) fn start(mut cmd: Command) -> Proc {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start server");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = crossbeam_channel::unbounded();
        let bad_lines = Arc::new(Mutex::new(Vec::new()));
        let bad = bad_lines.clone();
        thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut line = String::new();
                match r.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                if line.to_ascii_lowercase().starts_with("content-length:") {
                    let n: usize = line[15..].trim().parse().unwrap();
                    let mut blank = String::new();
                    r.read_line(&mut blank).unwrap();
                    let mut body = vec![0; n];
                    r.read_exact(&mut body).unwrap();
                    line = String::from_utf8(body).unwrap();
                }
                match serde_json::from_str::<Value>(&line) {
                    Ok(v) if is_frame(&v) => {
                        let _ = tx.send(v);
                    }
                    _ => bad.lock().unwrap().push(line),
                }
            }
        });
        let err_text = Arc::new(Mutex::new(String::new()));
        let et = err_text.clone();
        thread::spawn(move || {
            let mut r = BufReader::new(stderr);
            let mut line = String::new();
            while matches!(r.read_line(&mut line), Ok(n) if n > 0) {
                et.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        Proc {
            child,
            stdin,
            rx,
            backlog: Vec::new(),
            bad_lines,
            stderr: err_text,
            content_length: false,
        }
    }

    /// Starts the server `cmd` and initializes it at `version`.
    pub(crate) fn initialized(cmd: Command, version: &str) -> Proc {
        let mut p = Proc::start(cmd);
        p.initialize(version);
        p
    }

    pub(crate) fn everything() -> Proc {
        Proc::everything_with(&[])
    }

    pub(crate) fn everything_with(env: &[(&str, &str)]) -> Proc {
        let mut cmd = Command::new(everything_bin());
        cmd.envs(env.iter().copied());
        Proc::start(cmd)
    }

    pub(crate) fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub(crate) fn use_content_length(&mut self) {
        self.content_length = true;
    }

    pub(crate) fn send(&mut self, v: Value) {
        let body = v.to_string();
        let bytes = if self.content_length {
            format!("Content-Length: {}\r\n\r\n{body}", body.len())
        } else {
            format!("{body}\n")
        };
        self.send_raw(bytes.as_bytes());
    }

    pub(crate) fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin already closed");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    pub(crate) fn request(&mut self, id: Value, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }

    pub(crate) fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    pub(crate) fn call(&mut self, id: Value, tool: &str, args: Value, token: Option<Value>) {
        let mut params = json!({"name": tool, "arguments": args});
        if let Some(t) = token {
            params["_meta"] = json!({"progressToken": t});
        }
        self.request(id, "tools/call", params);
    }

    /// The next message, failing after PATIENCE.
    pub(crate) fn recv(&mut self) -> Value {
        if !self.backlog.is_empty() {
            return self.backlog.remove(0);
        }
        match self.rx.recv_timeout(PATIENCE) {
            Ok(v) => v,
            Err(RecvTimeoutError::Timeout) => panic!(
                "timed out waiting for a message; stderr:\n{}",
                self.stderr.lock().unwrap()
            ),
            Err(RecvTimeoutError::Disconnected) => panic!(
                "server closed stdout; stderr:\n{}",
                self.stderr.lock().unwrap()
            ),
        }
    }

    /// The first message matching `pred`; others stay in the backlog, in order.
    pub(crate) fn recv_where(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let stderr = || format!("; stderr:\n{}", self.stderr.lock().unwrap());
        recv_matching(&self.rx, &mut self.backlog, what, pred, stderr)
    }

    /// The response to request `id`.
    pub(crate) fn response(&mut self, id: &Value) -> Value {
        let id = id.clone();
        self.recv_where(&format!("the response to {id}"), move |v| {
            v.get("id") == Some(&id) && v.get("method").is_none()
        })
    }

    pub(crate) fn initialize(&mut self, version: &str) -> Value {
        self.request(json!(0), "initialize", json!({"protocolVersion": version, "capabilities": {"sampling": {}, "elicitation": {}}, "clientInfo": {"name": "tests", "version": "0"}}));
        let r = self.response(&json!(0));
        self.notify("notifications/initialized", json!({}));
        r
    }

    /// Closes stdin, reads stdout to EOF, and waits for the exit: everything the server
    /// wrote (the backlog first) and its exit status. What this returns is final.
    pub(crate) fn finish(mut self) -> (Vec<Value>, ExitStatus) {
        self.stdin = None;
        self.drain_to_exit()
    }

    /// Reads stdout to EOF (the server must be ending by other means) and waits for the exit.
    pub(crate) fn drain_to_exit(&mut self) -> (Vec<Value>, ExitStatus) {
        let stderr = || format!("; stderr:\n{}", self.stderr.lock().unwrap());
        let all = drain(&self.rx, &mut self.backlog, stderr);
        let status = self.wait_exit();
        self.assert_clean();
        (all, status)
    }

    pub(crate) fn wait_exit(&mut self) -> ExitStatus {
        wait_exit(&mut self.child)
    }

    pub(crate) fn close_stdin(&mut self) {
        self.stdin = None;
    }

    pub(crate) fn assert_clean(&self) {
        let bad = self.bad_lines.lock().unwrap();
        assert!(bad.is_empty(), "stdout carried non-frames: {bad:?}");
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if !thread::panicking() {
            self.assert_clean();
        }
    }
}

/// The first message matching `pred`: from `backlog`, else from `rx` (a reader thread's
/// frames) within PATIENCE; the others join the backlog, in order. `context` tells more when
/// none comes (the server's stderr).
pub(crate) fn recv_matching(
    rx: &Receiver<Value>,
    backlog: &mut Vec<Value>,
    what: &str,
    pred: impl Fn(&Value) -> bool,
    context: impl Fn() -> String,
) -> Value {
    if let Some(i) = backlog.iter().position(&pred) {
        return backlog.remove(i);
    }
    let deadline = Instant::now() + PATIENCE;
    loop {
        match rx.recv_deadline(deadline) {
            Ok(v) if pred(&v) => return v,
            Ok(v) => backlog.push(v),
            Err(_) => panic!("timed out waiting for {what}; got {backlog:?}{}", context()),
        }
    }
}

/// Everything until the reader thread's channel closes (stdout at EOF), the backlog first.
pub(crate) fn drain(
    rx: &Receiver<Value>,
    backlog: &mut Vec<Value>,
    context: impl Fn() -> String,
) -> Vec<Value> {
    let mut all = std::mem::take(backlog);
    let deadline = Instant::now() + PATIENCE;
    loop {
        match rx.recv_deadline(deadline) {
            Ok(v) => all.push(v),
            Err(RecvTimeoutError::Disconnected) => return all,
            Err(RecvTimeoutError::Timeout) => panic!("server did not close stdout{}", context()),
        }
    }
}

/// Waits for `child` to exit, failing after PATIENCE.
pub(crate) fn wait_exit(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(Instant::now() < deadline, "server did not exit");
        thread::sleep(Duration::from_millis(5));
    }
}

pub(crate) fn is_frame(v: &Value) -> bool {
    match v {
        Value::Array(items) => !items.is_empty() && items.iter().all(is_frame),
        Value::Object(o) => {
            o.get("jsonrpc") == Some(&json!("2.0"))
                && (o.contains_key("method")
                    || (o.contains_key("result") ^ o.contains_key("error")))
        }
        _ => false,
    }
}

pub(crate) fn send_signal(pid: i32, sig: i32) {
    let status = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

/// Kills the escaped process if the test fails, so a failure leaves nothing behind.
pub(crate) struct KillOnDrop(pub i32);

impl Drop for KillOnDrop {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: kill has no memory-safety preconditions; the process may be gone already.
        unsafe { libc::kill(self.0, libc::SIGKILL) };
    }
}

/// The `_meta` of a 2026-07-28 request declaring `caps` and the client's name (Claude Code
/// declares elicitation with form and url in every request).
pub(crate) fn modern_meta_with(caps: Value) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": caps,
           "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "0"}})
}

pub(crate) fn modern_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}})
}

/// A fresh, empty directory for one test.
pub(crate) fn temp_dir(name: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("stdmcp-test-{}-{n}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

/// True while `pid` is a live process. A zombie counts as gone, unless threads of it still
/// run (its first thread exited: `Z` with more than one thread).
pub(crate) fn alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // Fields from the state (3) on; the thread count is field 20.
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let threads: i64 = fields.get(17).and_then(|t| t.parse().ok()).unwrap_or(1);
    fields.first() != Some(&"Z") || threads > 1
}

/// Waits (failing after PATIENCE) until none of `pids` is alive.
pub(crate) fn wait_gone(pids: &[i32]) {
    let deadline = Instant::now() + PATIENCE;
    while pids.iter().any(|p| alive(*p)) {
        assert!(
            Instant::now() < deadline,
            "processes still alive: {:?}",
            pids.iter().filter(|p| alive(**p)).collect::<Vec<_>>()
        );
        thread::sleep(Duration::from_millis(5));
    }
}

/// Every process as (pid, command name, state, parent pid), read from /proc.
pub(crate) fn processes() -> Vec<(i32, String, String, i32)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((head, tail)) = stat.rsplit_once(')') else {
            continue;
        };
        let comm = head.split_once('(').map_or("", |(_, n)| n).to_owned();
        let mut fields = tail.split_whitespace();
        let state = fields.next().unwrap_or("").to_owned();
        let ppid = fields.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        out.push((pid, comm, state, ppid));
    }
    out
}

/// Zombie children of `pid`.
pub(crate) fn zombies_of(pid: i32) -> Vec<i32> {
    processes()
        .into_iter()
        .filter(|(_, _, state, ppid)| state == "Z" && *ppid == pid)
        .map(|p| p.0)
        .collect()
}

/// Live children of `pid` whose command name is `comm`.
pub(crate) fn children_named(pid: i32, comm: &str) -> Vec<i32> {
    processes()
        .into_iter()
        .filter(|(_, c, state, ppid)| c == comm && *ppid == pid && state != "Z")
        .map(|p| p.0)
        .collect()
}

/// `crates/stdmcp/tests/fixtures/NAME`: a fixture of the runner's, from either package's tests
/// (the command's tests run some of them through manifests).
pub(crate) fn runtime_fixture(name: &str) -> PathBuf {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let runtime = if env!("CARGO_PKG_NAME") == "stdmcp" {
        here.to_path_buf()
    } else {
        here.join("crates/stdmcp")
    };
    runtime.join("tests/fixtures").join(name)
}
