//! A long-lived child that speaks a protocol on its stdin/stdout: the MCP server that the
//! client commands (`stdmcp call … -- SERVER`) and the benchmark driver talk to. Same rules
//! as [`super::run`]: its own process group, a private stdin pipe, stdout piped, stderr
//! drained (copied to ours), PDEATHSIG and the watchdog, a call marker in its environment
//! (see [`super::marker_instance`]), killed as a group with everything that carries the
//! marker, always reaped; its owner (`group.rs`) alone signals it.

use std::io::{self, Read, Write};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::group::{Group, Reach};
use super::spawn::harden;

/// A running server process.
pub struct ServerProcess {
    group: Group,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
}

impl ServerProcess {
    /// Starts `argv[0]` with the rest as arguments, in the caller's environment and directory.
    /// Spawn from a thread that outlives the child (PDEATHSIG follows the spawning thread).
    #[allow(clippy::disallowed_methods)] // a spawn point of the runner
    pub fn spawn(argv: &[String]) -> io::Result<ServerProcess> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| io::Error::other("empty command"))?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        harden(&mut cmd);
        let mut group = Group::spawn(&mut cmd, Reach::All, None)?;
        if let Some(mut err) = group.take_stderr() {
            // The server's log lines pass through; the copy ends at EOF. Without the copy the
            // server would block once the pipe is full: then it is not started at all
            // (dropping `group` kills, sweeps and reaps it).
            thread::Builder::new()
                .name("stdmcp-server-stderr".into())
                .spawn(move || {
                    let mut buf = [0u8; 8192];
                    while let Ok(n) = err.read(&mut buf) {
                        if n == 0 || io::stderr().write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                })
                .map_err(|e| io::Error::new(e.kind(), format!("cannot start a thread: {e}")))?;
        }
        Ok(ServerProcess {
            stdin: group.take_stdin(),
            stdout: group.take_stdout(),
            group,
        })
    }

    /// The server's pid (also its process group id).
    pub fn pid(&self) -> u32 {
        self.group.pid()
    }

    /// The server's stdout (to read) and stdin (to write); once.
    pub fn take_pipes(&mut self) -> (Box<dyn Read + Send>, Box<dyn Write + Send>) {
        let out: Box<dyn Read + Send> = match self.stdout.take() {
            Some(s) => Box::new(s),
            None => Box::new(io::empty()),
        };
        let inp: Box<dyn Write + Send> = match self.stdin.take() {
            Some(s) => Box::new(s),
            None => Box::new(io::sink()),
        };
        (out, inp)
    }

    /// Ends the server as MCP clients should: with its stdin closed, waits up to `wait` for
    /// it to exit, then SIGTERM to its group, a second, then SIGKILL; sweeps and reaps it.
    /// Returns its exit status when it exited by itself.
    pub fn finish(mut self, wait: Duration) -> Option<std::process::ExitStatus> {
        self.stdin = None;
        let until = Instant::now().checked_add(wait);
        let by_itself = self.wait_until(until);
        if !by_itself {
            self.group.stop(Duration::from_secs(1));
            self.wait_until(None);
        }
        // Whatever is left of its group, and whatever it started that left the group but
        // carries its marker, goes with it; then it is reaped.
        let status = self.group.end().ok();
        status.filter(|_| by_itself)
    }

    /// Waits until the server exits (true), or `until` passes or the wait fails (false).
    fn wait_until(&mut self, until: Option<Instant>) -> bool {
        loop {
            match self.group.wait(until, None) {
                Ok(true) => return true,
                Ok(false) if until.is_none_or(|u| Instant::now() < u) => {}
                Ok(false) | Err(_) => return false,
            }
        }
    }
}
