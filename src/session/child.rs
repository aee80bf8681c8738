//! One running program of a session: the owner thread that spawns it, waits for it and reaps
//! it (it lives as long as the child, as `PR_SET_PDEATHSIG` requires), the reader thread that
//! moves its merged output into the shared state, and the writer thread that feeds its stdin.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant, SystemTime};
use stdmcp::sync::{self, lock};

use super::answer::Pending;
use super::feed::Feed;
use super::launch::Launch;
use crate::spec::session::{SessionKind, Workdir};
use stdmcp::beneath::{beneath, Dir};
use stdmcp::mailbox::{Closing, Mailbox};
use stdmcp::process::confine::Report;
use stdmcp::process::interactive::{self, Interactive, InteractiveSpec, Signaller};
use stdmcp::process::minimal_environment;

/// Bytes of transcript kept per session.
pub(super) const TRANSCRIPT_BYTES: usize = 64 * 1024;

/// A session's recent transcript (inputs and output), bounded; shared across restarts.
#[derive(Default)]
pub(crate) struct Transcript {
    chunks: VecDeque<String>,
    len: usize,
}

impl Transcript {
    /// Appends text, dropping the oldest beyond [`TRANSCRIPT_BYTES`].
    pub(crate) fn push(&mut self, text: impl Into<String>) {
        let text = text.into();
        self.len += text.len();
        self.chunks.push_back(text);
        while self.len > TRANSCRIPT_BYTES && self.chunks.len() > 1 {
            if let Some(old) = self.chunks.pop_front() {
                self.len -= old.len();
            }
        }
    }

    /// The whole transcript.
    pub(crate) fn text(&self) -> String {
        self.chunks.iter().map(String::as_str).collect()
    }
}

/// What the threads of one program share.
pub(crate) struct State {
    /// Output since the current answer began.
    pub pending: Pending,
    /// Set by the owner thread once the program was reaped.
    pub exit: Option<ExitStatus>,
    /// When output last arrived.
    pub last_output: Instant,
    /// The latest non-empty line of output (for heartbeats).
    pub last_line: String,
    /// Bumped on every output chunk.
    pub chunks: u64,
    /// The output pipe reached end of file.
    pub eof: bool,
}

/// A running (or ended) program of a session.
pub(crate) struct Proc {
    pub pid: u32,
    pub started: Instant,
    pub started_at: SystemTime,
    pub workdir: PathBuf,
    /// What it was started with.
    pub launch: Launch,
    state: Mutex<State>,
    /// Notified on output, on exit, and by cancel hooks.
    pub cond: Condvar,
    input: Arc<Feed>,
    /// Asks the owner thread to signal the program's group (it alone does).
    signaller: Signaller,
    transcript: Arc<Mutex<Transcript>>,
    /// Why the server killed the program, when it did (said instead of "perhaps out of
    /// memory" when it then ends by SIGKILL).
    killed_by: Mutex<Option<String>>,
    /// Its CPU time limit, if any (the kernel kills with SIGKILL when it runs out).
    cpu_seconds: Option<u64>,
    /// What the kernel enforces of its confinement.
    pub confined: Option<Report>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        // The writer thread ends, and the program's stdin is closed.
        self.input.close();
    }
}

impl Proc {
    /// Starts `kind`'s program in `workdir`; the threads are named after `label`.
    pub(crate) fn spawn(
        kind: &SessionKind,
        workdir: PathBuf,
        launch: Launch,
        label: &str,
        transcript: Arc<Mutex<Transcript>>,
    ) -> Result<Arc<Proc>, String> {
        // A workdir under a root starts the program in the directory checked, held open
        // until the program has started (README "Security model").
        let held = match &kind.workdir {
            Workdir::Param { root, .. } => Some(
                beneath(root, &workdir)
                    .ok_or_else(|| format!("{} is outside its root", workdir.display()))
                    .and_then(|rel| {
                        Dir::open(root)
                            .and_then(|r| r.dir(rel))
                            .map_err(|e| format!("the working directory cannot be used: {e}"))
                    })?,
            ),
            _ => None,
        };
        let mut env = environment(kind);
        crate::call::plan::set_env(&mut env, launch.env.clone());
        let mut spec = InteractiveSpec::new(kind.program.clone());
        spec.args = launch.argv.clone();
        spec.cwd = Some(workdir.clone());
        spec.cwd_dir = held.map(Arc::new);
        spec.env = env;
        spec.limits = kind.limits;
        spec.confine = Some(
            crate::call::run::confinement(&kind.confine, &launch.writable)
                .map_err(|e| format!("Refused: {e}. Nothing was started."))?,
        );
        let mailbox = Arc::new(Mailbox::default());
        let tx = Closing(Arc::clone(&mailbox));
        let input = Arc::new(Feed::default());
        let input_rx = Arc::clone(&input);
        let cap = kind.max_output_bytes;
        thread::Builder::new()
            .name(format!("stdmcp-session-{label}"))
            .spawn(move || own(spec, &tx, input_rx))
            .map_err(|e| format!("cannot start the session's thread: {e}"))?;
        let started = mailbox
            .recv()
            .ok_or_else(|| "the session thread ended early".to_owned())?;
        let (pid, signaller, reader_start, confined) = started?;
        let proc = Arc::new(Proc {
            pid,
            started: Instant::now(),
            started_at: SystemTime::now(),
            workdir,
            launch,
            state: Mutex::new(State {
                pending: Pending::new(cap),
                exit: None,
                last_output: Instant::now(),
                last_line: String::new(),
                chunks: 0,
                eof: false,
            }),
            cond: Condvar::new(),
            input,
            signaller,
            transcript,
            killed_by: Mutex::new(None),
            cpu_seconds: kind.limits.cpu_seconds,
            confined,
        });
        // The owner thread waits for this before waiting, the reader thread before reading:
        // one each.
        let _ = reader_start.send(Arc::clone(&proc));
        let _ = reader_start.send(Arc::clone(&proc));
        Ok(proc)
    }

    /// The shared state, locked.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Queues bytes for the program's stdin (written by the writer thread).
    pub(crate) fn write(&self, bytes: Vec<u8>) {
        self.input.send(bytes);
    }

    /// Adds to the transcript.
    pub(crate) fn note(&self, text: impl Into<String>) {
        lock(&self.transcript).push(text);
    }

    /// Has the owner thread send `sig` to the program's process group, unless it was reaped
    /// already.
    pub(crate) fn signal(&self, sig: i32) {
        self.signaller.send(sig);
    }

    /// Kills the group, saying `why` (the server killed it: by `K_stop`, after an idle
    /// spell…), and waits (up to `wait`) until the owner thread reaped the program.
    pub(crate) fn kill(&self, why: &str, wait: Duration) -> Option<ExitStatus> {
        {
            let st = self.lock();
            let mut by = lock(&self.killed_by);
            if st.exit.is_none() && by.is_none() {
                *by = Some(why.to_owned());
            }
        }
        self.signal(libc::SIGKILL);
        let deadline = Instant::now() + wait;
        let mut st = self.lock();
        while st.exit.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                log::warn!("session process {} was not reaped in time", self.pid);
                return None;
            }
            st = sync::wait_timeout(&self.cond, st, left).0;
        }
        st.exit
    }

    /// How the program ended: [`interactive::describe_exit`], and for a SIGKILL, who sent
    /// it: the server (and why), or not the server (out of memory, its CPU time limit).
    pub(crate) fn describe(&self, status: &ExitStatus) -> String {
        use std::os::unix::process::ExitStatusExt;
        if status.signal() != Some(libc::SIGKILL) {
            return interactive::describe_exit(status);
        }
        match (lock(&self.killed_by).as_deref(), self.cpu_seconds) {
            (Some(why), _) => format!("killed (SIGKILL) by the server: {why}"),
            (None, Some(cpu)) => format!(
                "killed (SIGKILL), not by the server: its CPU time limit ({cpu} s, cpuSeconds) \
                 ran out, or it was out of memory"
            ),
            (None, None) => "killed (SIGKILL), not by the server: perhaps out of memory".into(),
        }
    }

    /// The exit status, once reaped.
    pub(crate) fn exit(&self) -> Option<ExitStatus> {
        self.lock().exit
    }

    fn output(&self, data: &[u8]) {
        let text = String::from_utf8_lossy(data);
        {
            let mut st = self.lock();
            st.pending.push(data);
            st.last_output = Instant::now();
            st.chunks += 1;
            if let Some(line) = text.lines().rev().map(str::trim).find(|l| !l.is_empty()) {
                st.last_line = line.chars().take(200).collect();
            }
        }
        self.note(text.replace('\0', ""));
        self.cond.notify_all();
    }

    fn exited(&self, status: ExitStatus) {
        self.lock().exit = Some(status);
        self.note(format!(
            "\n[session process {} {}]\n",
            self.pid,
            self.describe(&status)
        ));
        self.cond.notify_all();
    }
}

/// What the owner thread hands out: the program's pid, what signals its group, and where its
/// [`Proc`] is to be sent, once for the owner and once for the reader (closed when dropped),
/// or why it did not start.
type Started = Result<(u32, Signaller, Closing<Arc<Proc>>, Option<Report>), String>;

/// The owner thread: spawn, start the reader and writer threads, hand out the pid, then
/// wait for the program; reap it and record its status. A helper thread that cannot be
/// started is an error of the start: the program is killed and reaped (dropping `child`),
/// and the helpers started already end (their mailbox and feed close).
fn own(spec: InteractiveSpec, started: &Mailbox<Started>, input: Arc<Feed>) {
    let spawned = Interactive::spawn(&spec);
    // The held working directory's descriptor is not kept for the session's life.
    drop(spec);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            let _ = started.send(Err(e.to_string()));
            return;
        }
    };
    let proc_rx = Arc::new(Mailbox::<Arc<Proc>>::default());
    let proc_tx = Closing(Arc::clone(&proc_rx));
    let helpers = start_reader(&mut child, Arc::clone(&proc_rx))
        .and_then(|()| start_writer(&mut child, Arc::clone(&input)));
    if let Err(e) = helpers {
        input.close();
        drop(proc_tx);
        let _ = started.send(Err(format!("cannot start a thread of the session: {e}")));
        return; // dropping `child` kills and reaps it
    }
    let confined = child.confined().cloned();
    if !started.send(Ok((child.pid(), child.signaller(), proc_tx, confined))) {
        input.close();
        return;
    }
    let Some(proc) = proc_rx.recv() else { return };
    match child.wait() {
        Ok(status) => proc.exited(status),
        Err(e) => {
            log::warn!("waiting for session process {}: {e}", proc.pid);
            drop(child); // kills and reaps
            proc.exited(std::os::unix::process::ExitStatusExt::from_raw(
                libc::SIGKILL,
            ));
        }
    }
}

/// The thread that writes queued input to the program's stdin; it ends when the feed closes
/// or the pipe breaks.
fn start_writer(child: &mut Interactive, input: Arc<Feed>) -> std::io::Result<()> {
    let Some(mut stdin) = child.take_stdin() else {
        return Ok(());
    };
    thread::Builder::new()
        .name("stdmcp-session-in".into())
        .spawn(move || {
            while let Some(bytes) = input.recv() {
                if stdin
                    .write_all(&bytes)
                    .and_then(|()| stdin.flush())
                    .is_err()
                {
                    break;
                }
            }
        })
        .map(drop)
}

/// The thread that reads the program's output into its `Proc` (which it gets once the
/// session has one; it ends at once if it never does).
fn start_reader(child: &mut Interactive, proc: Arc<Mailbox<Arc<Proc>>>) -> std::io::Result<()> {
    let Some(mut out) = child.take_output() else {
        return Ok(());
    };
    thread::Builder::new()
        .name("stdmcp-session-out".into())
        .spawn(move || {
            let Some(proc) = proc.recv() else { return };
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                match out.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => proc.output(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            proc.lock().eof = true;
            proc.cond.notify_all();
        })
        .map(drop)
}

/// The program's whole environment: the few variables every tool gets, `passEnv`, `env`, and
/// settings that keep REPL output plain.
fn environment(kind: &SessionKind) -> Vec<(OsString, OsString)> {
    let plain = [("TERM", "dumb"), ("NO_COLOR", "1"), ("PAGER", "cat")];
    minimal_environment(&kind.pass_env, plain, &kind.env)
}
