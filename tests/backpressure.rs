//! Flow control over real pipes: a client that stops reading, or reads slowly while the
//! server shuts down (the `everything` example's `flood` tool).
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::{everything_bin, is_frame, send_signal, PATIENCE};
use crossbeam_channel::{Receiver, RecvTimeoutError};
use serde_json::{json, Value};

const MIB: u64 = 1 << 20;

/// How the client reads stdout.
#[derive(Clone, Copy, PartialEq)]
enum Pace {
    /// Reads nothing.
    Stopped,
    /// Reads at most `bytes` every `every`.
    Slow { bytes: usize, every: Duration },
    /// Reads as fast as it can.
    Full,
}

/// A client whose reading of stdout the test controls. Every stdout line must be a whole
/// JSON-RPC frame; a line cut short (no newline at EOF) or not JSON is recorded as bad.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<Value>,
    backlog: Vec<Value>,
    bad: Arc<Mutex<Vec<String>>>,
    pace: Arc<(Mutex<Pace>, Condvar)>,
}

impl Client {
    fn start(env: &[(&str, &str)]) -> Client {
        let mut cmd = Command::new(everything_bin());
        cmd.envs(env.iter().copied());
        Client::spawn(cmd)
    }

    fn spawn(mut cmd: Command) -> Client {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let mut stdout = child.stdout.take().unwrap();
        let (tx, rx) = crossbeam_channel::unbounded();
        let bad = Arc::new(Mutex::new(Vec::new()));
        let pace = Arc::new((Mutex::new(Pace::Full), Condvar::new()));
        let (bad2, pace2) = (bad.clone(), pace.clone());
        thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            let mut line = Vec::new();
            loop {
                let now = {
                    let (m, c) = &*pace2;
                    let mut p = m.lock().unwrap();
                    while *p == Pace::Stopped {
                        p = c.wait(p).unwrap();
                    }
                    *p
                };
                let want = match now {
                    Pace::Slow { bytes, .. } => bytes.min(buf.len()),
                    _ => buf.len(),
                };
                let n = match stdout.read(&mut buf[..want]) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                for &b in &buf[..n] {
                    if b != b'\n' {
                        line.push(b);
                        continue;
                    }
                    match serde_json::from_slice::<Value>(&line) {
                        Ok(v) if is_frame(&v) => {
                            let _ = tx.send(v);
                        }
                        _ => bad2
                            .lock()
                            .unwrap()
                            .push(String::from_utf8_lossy(&line).into_owned()),
                    }
                    line.clear();
                }
                if let Pace::Slow { every, .. } = now {
                    thread::sleep(every); // a slow client, not synchronisation
                }
            }
            if !line.is_empty() {
                let cut = String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned();
                bad2.lock().unwrap().push(format!("cut frame: {cut}"));
            }
        });
        Client {
            child,
            stdin,
            rx,
            backlog: Vec::new(),
            bad,
            pace,
        }
    }

    fn pace(&self, pace: Pace) {
        let (m, c) = &*self.pace;
        *m.lock().unwrap() = pace;
        c.notify_all();
    }

    fn send(&mut self, v: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(format!("{v}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    fn call(&mut self, id: i64, args: Value, token: Option<&str>) {
        self.call_tool(id, "flood", args, token);
    }

    fn call_tool(&mut self, id: i64, tool: &str, args: Value, token: Option<&str>) {
        let mut params = json!({"name": tool, "arguments": args});
        if let Some(t) = token {
            params["_meta"] = json!({ "progressToken": t });
        }
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}));
    }

    fn recv_where(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.backlog.iter().position(&pred) {
            return self.backlog.remove(i);
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            match self.rx.recv_deadline(deadline) {
                Ok(v) if pred(&v) => return v,
                Ok(v) => self.backlog.push(v),
                Err(_) => panic!("timed out waiting for {what}"),
            }
        }
    }

    fn handshake(&mut self) {
        self.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "tests", "version": "0"}}}));
        self.recv_where("initialize", |m| m["id"] == 0);
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        self.send(json!({"jsonrpc": "2.0", "id": "lvl", "method": "logging/setLevel", "params": {"level": "info"}}));
        self.recv_where("setLevel", |m| m["id"] == "lvl");
    }

    /// Everything until stdout closes (the backlog first), and the exit status.
    fn read_to_exit(&mut self) -> (Vec<Value>, ExitStatus) {
        let mut all = std::mem::take(&mut self.backlog);
        let deadline = Instant::now() + PATIENCE;
        loop {
            match self.rx.recv_deadline(deadline) {
                Ok(v) => all.push(v),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => panic!("server did not close stdout"),
            }
        }
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < deadline, "server did not exit");
            thread::sleep(Duration::from_millis(5));
        };
        let bad = self.bad.lock().unwrap();
        assert!(bad.is_empty(), "stdout carried bad or cut frames: {bad:?}");
        (all, status)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `/proc/PID/status` figure in bytes (`VmRSS`, `VmHWM`).
fn vm(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(key)).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// Progress values per token, in the order received; each token's must strictly increase.
fn check_progress(all: &[Value]) -> HashMap<String, Vec<f64>> {
    let mut by_token: HashMap<String, Vec<f64>> = HashMap::new();
    for m in all
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
    {
        let token = m["params"]["progressToken"].as_str().unwrap().to_owned();
        by_token
            .entry(token)
            .or_default()
            .push(m["params"]["progress"].as_f64().unwrap());
    }
    for (token, values) in &by_token {
        assert!(
            values.windows(2).all(|w| w[0] < w[1]),
            "progress of {token} does not increase"
        );
    }
    by_token
}

/// Done-when of the hardening issue: a client that stops reading for 20 s while ten tools
/// flood progress, log messages and large results leaves the server under 64 MiB, and gets
/// every result and every log message once it reads again.
#[test]
fn a_client_that_stops_reading_bounds_the_server_and_loses_nothing() {
    const CALLS: i64 = 10;
    const LOGS: usize = 100;
    const RESULT: usize = 256 * 1024;
    const CEILING: u64 = 64 * MIB;
    let mut c = Client::start(&[]);
    c.handshake();
    c.pace(Pace::Stopped);
    let pid = c.child.id();
    let idle = vm(pid, "VmRSS");
    for id in 1..=CALLS {
        let args = json!({"progress": 20_000, "message_bytes": 1000, "logs": LOGS, "log_bytes": 16 * 1024, "result_bytes": RESULT});
        c.call(id, args, Some(&format!("f{id}")));
    }
    // The stall: watch the server's memory the whole time (failing at once past the ceiling,
    // rather than letting an unbounded server eat the machine).
    let stall_end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < stall_end {
        let rss = vm(pid, "VmRSS");
        assert!(
            rss < CEILING,
            "server RSS {} MiB while the client was not reading",
            rss / MIB
        );
        thread::sleep(Duration::from_millis(50));
    }
    let peak = vm(pid, "VmHWM");
    eprintln!(
        "server RSS: idle {:.1} MiB, peak during the 20 s stall {:.1} MiB",
        idle as f64 / MIB as f64,
        peak as f64 / MIB as f64
    );
    assert!(peak < CEILING, "peak RSS {} MiB", peak / MIB);
    c.pace(Pace::Full);
    for id in 1..=CALLS {
        let r = c.recv_where("a flood result", |m| m["id"] == id);
        assert_eq!(
            r["result"]["content"][0]["text"].as_str().unwrap().len(),
            RESULT
        );
    }
    c.stdin = None;
    let (all, status) = c.read_to_exit();
    assert!(status.success());
    let logs = all
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .count();
    assert_eq!(logs, LOGS * CALLS as usize, "log messages were lost");
    let progress = check_progress(&all);
    assert_eq!(
        progress.len(),
        CALLS as usize,
        "every call reported progress"
    );
}

/// The reproducer of the hardening issue: a client reading 64 KiB every 30 ms while a tool
/// floods progress and six 1 MiB results are queued; SIGTERM. The client must receive whole
/// frames only, and every result that was computed.
#[test]
fn a_slow_reader_at_sigterm_gets_whole_frames_and_every_result() {
    // A generous drain: it ends as soon as the calls end, and they end on their own.
    // A generous stall timeout too: this client keeps reading, however loaded the machine.
    let mut c = Client::start(&[
        ("STDMCP_DRAIN_MS", "10000"),
        ("STDMCP_FLUSH_STALL_MS", "10000"),
    ]);
    c.handshake();
    c.pace(Pace::Slow {
        bytes: 64 * 1024,
        every: Duration::from_millis(30),
    });
    // The big results are asked for first: the server reads requests in order, so once call 1
    // reports progress all seven were read before the SIGTERM (after it, a new request is
    // refused), however late the reader thread runs on a loaded machine.
    for id in 2..=7 {
        c.call(id, json!({"result_bytes": 1 << 20}), None);
    }
    c.call(1, json!({"progress": 100_000}), Some("p"));
    c.recv_where("the first progress", |m| {
        m["params"]["progressToken"] == "p"
    });
    send_signal(c.child.id() as i32, 15);
    let (all, status) = c.read_to_exit();
    assert!(status.success(), "{status:?}");
    for id in 1..=7 {
        assert!(
            all.iter()
                .any(|m| m["id"] == id && m.get("result").is_some()),
            "the result of call {id} was lost"
        );
    }
    for id in 2..=7 {
        let r = all.iter().find(|m| m["id"] == id).unwrap();
        assert_eq!(
            r["result"]["content"][0]["text"].as_str().unwrap().len(),
            1 << 20
        );
    }
    check_progress(&all);
}

/// A client that reads nothing at all and sends SIGTERM: workers blocked on the full queue
/// are released by the cancel, and the server gives up on stdout once it accepted nothing for
/// the stall timeout, instead of hanging until SIGKILL.
#[test]
fn sigterm_with_a_client_that_reads_nothing_still_exits() {
    let mut c = Client::start(&[
        ("STDMCP_DRAIN_MS", "200"),
        ("STDMCP_FLUSH_STALL_MS", "500"),
        ("STDMCP_MAX_OUTGOING_BYTES", "65536"),
    ]);
    c.handshake();
    c.pace(Pace::Stopped);
    for id in 1..=4 {
        let args = json!({"progress": 1000, "logs": 1000, "log_bytes": 4096});
        c.call(id, args, Some(&format!("s{id}")));
    }
    // Proof that the queue is full and the workers wait: the server's stdout is not being
    // read, so its writer is stuck; wait until the log traffic has filled the pipe and the
    // queue (the writer thread blocks in write).
    let pid = c.child.id();
    let deadline = Instant::now() + PATIENCE;
    while !writer_blocked(pid) {
        assert!(Instant::now() < deadline, "the writer never blocked");
        thread::sleep(Duration::from_millis(10));
    }
    send_signal(pid as i32, 15);
    let status = loop {
        if let Some(s) = c.child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the server did not exit");
        thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status:?}");
}

/// True when the server's writer thread sleeps in a pipe write.
fn writer_blocked(pid: u32) -> bool {
    thread_waits(pid, "stdmcp-writer", "pipe_write")
}

/// True when the server's thread `name` sleeps in a kernel function containing `wchan`.
fn thread_waits(pid: u32, name: &str, wchan: &str) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|t| {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let at = std::fs::read_to_string(t.path().join("wchan")).unwrap_or_default();
        comm.trim() == name && at.contains(wchan)
    })
}

/// A client that sends requests without reading the answers: the reader answers them on
/// its own thread, so it is what must stop, at twice the queue bound (the client's writes
/// then block, as on any pipe), and every answer arrives once the client reads.
#[test]
fn a_client_that_writes_without_reading_pauses_the_reader() {
    const LISTS: i64 = 3000; // about 14 MB of answers
    const CEILING: u64 = 12 * MIB;
    let mut c = Client::start(&[("STDMCP_MAX_OUTGOING_BYTES", "65536")]);
    c.handshake();
    c.pace(Pace::Stopped);
    let mut stdin = c.stdin.take().unwrap();
    let sender = thread::spawn(move || {
        for id in 1..=LISTS {
            let r = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
            // Blocks while the server's reader pauses; fails only if the server died.
            stdin.write_all(format!("{r}\n").as_bytes()).unwrap();
        }
        stdin
    });
    let pid = c.child.id();
    let deadline = Instant::now() + PATIENCE;
    while !thread_waits(pid, "stdmcp-reader", "futex") {
        let rss = vm(pid, "VmRSS");
        assert!(rss < CEILING, "server RSS {} MiB", rss / MIB);
        assert!(Instant::now() < deadline, "the reader never paused");
        thread::sleep(Duration::from_millis(10));
    }
    let peak = vm(pid, "VmHWM");
    eprintln!(
        "peak RSS with the reader paused: {:.1} MiB",
        peak as f64 / MIB as f64
    );
    assert!(peak < CEILING, "peak RSS {} MiB", peak / MIB);
    c.pace(Pace::Full);
    drop(sender.join().unwrap()); // all sent: close stdin
    let (all, status) = c.read_to_exit();
    assert!(status.success());
    let answered = all
        .iter()
        .filter(|m| m["result"]["tools"].is_array())
        .count();
    assert_eq!(answered as i64, LISTS);
}

/// The reproducer as written: a manifest tool `seq -f 'P %g' 1 100000` with progress
/// prefix `P`, a client reading 64 KiB every 30 ms, SIGTERM once progress flows. Whole frames
/// only, and the result of the call.
#[test]
fn a_slow_reader_at_sigterm_gets_the_manifest_tools_result() {
    let dir = common::temp_dir("seq-progress");
    let manifest = dir.join("m.json");
    let tool = json!({"name": "seqp", "description": "counts", "program": "seq",
        "args": ["-f", "P %g", "1", "100000"], "progress": {"prefix": "P", "stream": "stdout"}});
    let m = json!({"name": "repro", "version": "1.0.0", "tools": [tool]});
    std::fs::write(&manifest, m.to_string()).unwrap();
    let mut cmd = Command::new(common::stdmcp_bin());
    cmd.args(["serve", "--config"]).arg(&manifest);
    cmd.env("STDMCP_DRAIN_MS", "10000")
        .env("STDMCP_FLUSH_STALL_MS", "10000");
    let mut c = Client::spawn(cmd);
    c.handshake();
    c.pace(Pace::Slow {
        bytes: 64 * 1024,
        every: Duration::from_millis(30),
    });
    c.call_tool(1, "seqp", json!({}), Some("p"));
    c.recv_where("the first progress", |m| {
        m["params"]["progressToken"] == "p"
    });
    send_signal(c.child.id() as i32, 15);
    let (all, status) = c.read_to_exit();
    assert!(status.success(), "{status:?}");
    let r = all
        .iter()
        .find(|m| m["id"] == 1)
        .expect("the result was lost");
    assert_eq!(r["result"]["structuredContent"]["exitCode"], 0, "{r}");
    check_progress(&all);
}
