//! A client whose reading of stdout the test controls (flow control: a client that stops
//! reading, or reads slowly while the server shuts down).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use crossbeam_channel::Receiver;
use serde_json::{json, Value};

use super::{drain, everything_bin, is_frame, recv_matching, wait_exit};

/// How the client reads stdout.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Pace {
    /// Reads nothing.
    Stopped,
    /// Reads at most `bytes` every `every`.
    Slow { bytes: usize, every: Duration },
    /// Reads as fast as it can.
    Full,
}

/// A client whose reading of stdout the test controls. Every stdout line must be a whole
/// JSON-RPC frame; a line cut short (no newline at EOF) or not JSON is recorded as bad.
pub(crate) struct Client {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    rx: Receiver<Value>,
    backlog: Vec<Value>,
    bad: Arc<Mutex<Vec<String>>>,
    pace: Arc<(Mutex<Pace>, Condvar)>,
}

impl Client {
    /// The `everything` example with `env` added.
    pub(crate) fn start(env: &[(&str, &str)]) -> Client {
        let mut cmd = Command::new(everything_bin());
        cmd.envs(env.iter().copied());
        Client::spawn(cmd)
    }

    pub(crate) fn spawn(mut cmd: Command) -> Client {
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

    pub(crate) fn pace(&self, pace: Pace) {
        let (m, c) = &*self.pace;
        *m.lock().unwrap() = pace;
        c.notify_all();
    }

    pub(crate) fn send(&mut self, v: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(format!("{v}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// A call of the `everything` example's `flood`.
    pub(crate) fn call(&mut self, id: i64, args: Value, token: Option<&str>) {
        self.call_tool(id, "flood", args, token);
    }

    pub(crate) fn call_tool(&mut self, id: i64, tool: &str, args: Value, token: Option<&str>) {
        let mut params = json!({"name": tool, "arguments": args});
        if let Some(t) = token {
            params["_meta"] = json!({ "progressToken": t });
        }
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}));
    }

    pub(crate) fn recv_where(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        recv_matching(&self.rx, &mut self.backlog, what, pred, String::new)
    }

    pub(crate) fn handshake(&mut self) {
        self.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "tests", "version": "0"}}}));
        self.recv_where("initialize", |m| m["id"] == 0);
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        self.send(json!({"jsonrpc": "2.0", "id": "lvl", "method": "logging/setLevel", "params": {"level": "info"}}));
        self.recv_where("setLevel", |m| m["id"] == "lvl");
    }

    /// Everything until stdout closes (the backlog first), and the exit status.
    pub(crate) fn read_to_exit(&mut self) -> (Vec<Value>, ExitStatus) {
        let all = drain(&self.rx, &mut self.backlog, String::new);
        let status = wait_exit(&mut self.child);
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

/// Progress values per token, in the order received; each token's must strictly increase.
pub(crate) fn check_progress(all: &[Value]) -> HashMap<String, Vec<f64>> {
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
