//! The sessions of a server: names, turns (one input at a time per session), limits,
//! start/stop/restart, the idle timer, and shutdown.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};
use stdmcp::sync;

use super::child::{Proc, Transcript};
use super::launch::{Launch, ProjectLaunch};
use crate::spec::SessionKind;

/// Longest wait between two looks at the cancel flag while waiting for a turn.
const TICK: Duration = Duration::from_millis(50);
/// How long a kill may take to be reaped.
const REAP_WAIT: Duration = Duration::from_secs(5);

/// Why the server kills its sessions' programs when it shuts down.
pub(super) const SHUTDOWN: &str = "the server is shutting down";

/// Key of a session: (kind, name).
pub(crate) type Key = (String, String);

/// The key of the session `name` of `kind`.
pub(super) fn key_of(kind: &SessionKind, name: &str) -> Key {
    (kind.name.clone(), name.to_owned())
}

/// One named session.
pub(crate) struct SessionEntry {
    pub kind: Arc<SessionKind>,
    /// The program, once started (it may have ended since).
    pub proc: Option<Arc<Proc>>,
    /// An input (or start-up) is running.
    pub busy: bool,
    /// Tickets of the calls waiting for their turn, first come first served.
    waiting: VecDeque<u64>,
    pub last_used: Instant,
    pub workdir: PathBuf,
    /// Start parameters asked for (`None`: the kind's defaults); kept across restarts.
    pub launch: Option<Launch>,
    /// What the project of the proof cursor's file adds to the program (`None`: no project).
    pub project: Option<ProjectLaunch>,
    pub transcript: Arc<Mutex<Transcript>>,
    /// Why the program is gone although it did not exit by itself (idle stop).
    pub stopped: Option<String>,
    /// Said at the start of the next answer (the state was lost…).
    pub note: Option<String>,
    /// The last answer (what `K_start` shows when the session already runs).
    pub last_answer: String,
}

impl SessionEntry {
    /// Running, busy, starting, or dead with why.
    pub(crate) fn state(&self) -> String {
        match (&self.proc, &self.stopped) {
            (_, Some(why)) => format!("dead ({why})"),
            (None, None) => "starting".into(),
            (Some(p), None) => match p.exit() {
                Some(s) => format!("dead ({})", p.describe(&s)),
                None if self.busy => "busy".into(),
                None => "running".into(),
            },
        }
    }

    /// True while the program runs (or is being started).
    pub(crate) fn alive(&self) -> bool {
        self.stopped.is_none() && self.proc.as_ref().is_none_or(|p| p.exit().is_none())
    }
}

#[derive(Default)]
struct Inner {
    entries: BTreeMap<Key, SessionEntry>,
    next_ticket: u64,
    closed: bool,
    timer: bool,
    /// While the idle timer sleeps: until when.
    timer_until: Option<Instant>,
}

/// All sessions of a server.
#[derive(Default)]
pub(crate) struct Registry {
    inner: Mutex<Inner>,
    /// Notified when a turn ends, a session is added or removed, and on close.
    cond: Condvar,
    /// The idle timer's own: notified on close, and when a session's idle deadline comes
    /// before the timer's next wake-up (not at every turn: under contention each thread woken
    /// per call can cost a time slice, docs/bench.md, sessions under contention).
    timer_cond: Condvar,
}

/// The right to use one session until dropped.
pub(crate) struct Turn {
    registry: Arc<Registry>,
    pub key: Key,
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut inner = sync::lock(&self.registry.inner);
        let mut idle_at = None;
        if let Some(e) = inner.entries.get_mut(&self.key) {
            e.busy = false;
            e.last_used = Instant::now();
            if e.proc.is_none() && e.stopped.is_none() {
                // A start that failed: forget the name.
                inner.entries.remove(&self.key);
            } else if !e.kind.idle.is_zero() {
                idle_at = Some(e.last_used + e.kind.idle);
            }
        }
        // The idle timer sleeps at most until `now + idle` of a busy session (see
        // `idle_timer`), so it is woken only if it sleeps longer than this session may idle.
        let wake_timer = idle_at.is_some_and(|at| inner.timer_until.is_some_and(|t| t > at));
        drop(inner);
        self.registry.cond.notify_all();
        if wake_timer {
            self.registry.timer_cond.notify_all();
        }
    }
}

/// Why no turn was given.
#[derive(Debug, PartialEq)]
pub(crate) enum Refused {
    Cancelled,
    Deadline,
    Closed,
    /// `maxSessions` reached; the names of the running ones.
    Full(Vec<String>),
}

impl Registry {
    /// Waits for the turn on session `key`, creating it (not started) with `workdir` if it
    /// does not exist and the kind's limit allows.
    pub(crate) fn turn(
        self: &Arc<Self>,
        kind: &Arc<SessionKind>,
        key: &Key,
        workdir: impl Fn() -> PathBuf,
        cancelled: &dyn Fn() -> bool,
        deadline: Instant,
    ) -> Result<Turn, Refused> {
        let mut inner = sync::lock(&self.inner);
        if !inner.entries.contains_key(key) {
            let alive: Vec<String> = inner
                .entries
                .iter()
                .filter(|((k, _), e)| *k == kind.name && e.alive())
                .map(|((_, n), _)| n.clone())
                .collect();
            if alive.len() >= kind.max_sessions {
                return Err(Refused::Full(alive));
            }
            inner
                .entries
                .insert(key.clone(), new_entry(kind, workdir()));
        }
        let ticket = inner.next_ticket;
        inner.next_ticket += 1;
        loop {
            let closed = inner.closed;
            let e = inner
                .entries
                .entry(key.clone())
                .or_insert_with(|| new_entry(kind, workdir()));
            if !e.waiting.contains(&ticket) {
                e.waiting.push_back(ticket);
            }
            // Cancellation first: a call cancelled while it waited must never get the turn.
            let refusal = if closed {
                Some(Refused::Closed)
            } else if cancelled() {
                Some(Refused::Cancelled)
            } else if !e.busy && e.waiting.front() == Some(&ticket) {
                e.waiting.pop_front();
                e.busy = true;
                return Ok(Turn {
                    registry: Arc::clone(self),
                    key: key.clone(),
                });
            } else if Instant::now() >= deadline {
                Some(Refused::Deadline)
            } else {
                None
            };
            if let Some(r) = refusal {
                e.waiting.retain(|t| *t != ticket);
                let unused = e.proc.is_none() && !e.busy && e.waiting.is_empty();
                if unused && e.stopped.is_none() {
                    inner.entries.remove(key);
                }
                drop(inner);
                self.cond.notify_all();
                return Err(r);
            }
            let tick = TICK.min(deadline.saturating_duration_since(Instant::now()));
            inner = sync::wait_timeout(&self.cond, inner, tick).0;
        }
    }

    /// True once the server shut down.
    pub(crate) fn is_closed(&self) -> bool {
        sync::lock(&self.inner).closed
    }

    /// Runs `f` on the entry of `key`, if there is one.
    pub(crate) fn with<T>(&self, key: &Key, f: impl FnOnce(&mut SessionEntry) -> T) -> Option<T> {
        sync::lock(&self.inner).entries.get_mut(key).map(f)
    }

    /// Runs `f` on every entry, in order.
    pub(crate) fn each(&self, mut f: impl FnMut(&Key, &SessionEntry)) {
        for (k, e) in &sync::lock(&self.inner).entries {
            f(k, e);
        }
    }

    /// Kills the program of `key` (busy or not), saying `why`, and waits until it was reaped;
    /// returns it.
    pub(crate) fn kill(&self, key: &Key, why: &str) -> Option<Arc<Proc>> {
        let proc = self.with(key, |e| e.proc.clone()).flatten()?;
        proc.kill(why, REAP_WAIT);
        self.cond.notify_all();
        Some(proc)
    }

    /// Forgets `key` (its program must be dead).
    pub(crate) fn remove(&self, key: &Key) {
        sync::lock(&self.inner).entries.remove(key);
        self.cond.notify_all();
    }

    /// Starts the idle timer if it does not run yet (after a session started).
    pub(crate) fn activity(self: &Arc<Self>) {
        let start = {
            let mut inner = sync::lock(&self.inner);
            !std::mem::replace(&mut inner.timer, true)
        };
        if start {
            let me = Arc::clone(self);
            let spawned = thread::Builder::new()
                .name("stdmcp-sessions-idle".into())
                .spawn(move || me.idle_timer());
            if let Err(e) = spawned {
                log::warn!("cannot start the idle-session timer: {e}");
                sync::lock(&self.inner).timer = false;
            }
        }
        self.cond.notify_all();
        self.timer_cond.notify_all();
    }

    /// Stops sessions idle for longer than their kind's `idleSeconds`; sleeps until the
    /// next one is due or something changes.
    fn idle_timer(self: Arc<Self>) {
        let mut inner = sync::lock(&self.inner);
        loop {
            if inner.closed {
                return;
            }
            let now = Instant::now();
            let mut next: Option<Instant> = None;
            let mut due = Vec::new();
            for (k, e) in inner.entries.iter_mut() {
                if e.kind.idle.is_zero() || !e.alive() {
                    continue;
                }
                if e.busy {
                    // Its turn ends later than now, so it idles out after `now + idle` at the
                    // earliest: waking by then, the timer need not be woken when the turn ends.
                    let at = now + e.kind.idle;
                    next = Some(next.map_or(at, |n| n.min(at)));
                    continue;
                }
                let Some(p) = e.proc.clone() else {
                    continue;
                };
                let at = e.last_used + e.kind.idle;
                if at <= now {
                    e.busy = true;
                    due.push((k.clone(), p, e.kind.idle));
                } else {
                    next = Some(next.map_or(at, |n| n.min(at)));
                }
            }
            if !due.is_empty() {
                drop(inner);
                for (key, proc, idle) in due {
                    log::info!("session {}/{} idle for {idle:?}: stopping it", key.0, key.1);
                    let idle = stdmcp_proto::human::setting(idle);
                    proc.note(format!("\n[stopped after {idle} idle]\n"));
                    let why = format!("idle for {idle} (idleSeconds)");
                    proc.kill(&why, REAP_WAIT);
                    self.with(&key, |e| {
                        e.busy = false;
                        e.stopped = Some(format!("stopped after being idle for {idle}"));
                    });
                }
                self.cond.notify_all();
                inner = sync::lock(&self.inner);
                continue;
            }
            let wait = next.map_or(Duration::from_secs(3600), |n| n - now);
            inner.timer_until = Some(now + wait);
            inner = sync::wait_timeout(&self.timer_cond, inner, wait).0;
            inner.timer_until = None;
        }
    }

    /// Server shutdown: refuses new turns, kills every program and waits for the reaps.
    pub(crate) fn close(&self) {
        let procs: Vec<Arc<Proc>> = {
            let mut inner = sync::lock(&self.inner);
            inner.closed = true;
            inner
                .entries
                .values()
                .filter_map(|e| e.proc.clone())
                .collect()
        };
        self.cond.notify_all();
        self.timer_cond.notify_all();
        for p in procs {
            p.kill(SHUTDOWN, REAP_WAIT);
        }
    }
}

fn new_entry(kind: &Arc<SessionKind>, workdir: PathBuf) -> SessionEntry {
    SessionEntry {
        kind: Arc::clone(kind),
        proc: None,
        busy: false,
        waiting: VecDeque::new(),
        last_used: Instant::now(),
        workdir,
        launch: None,
        project: None,
        transcript: Arc::new(Mutex::new(Transcript::default())),
        stopped: None,
        note: None,
        last_answer: String::new(),
    }
}
