//! What the session tools do: start, send, interrupt, stop, restart, list.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use stdmcp::process::confine::Mode;

use super::child::Proc;
use super::exchange::{exchange, exchange_capped, Caller, ExchangeEnd, ExchangeWait, StopReason};
use super::launch::Launch;
use super::registry::{key_of, Key, Refused, Registry, Turn, SHUTDOWN};
use crate::spec::session::{signal_name, SessionKind, Workdir};
use stdmcp::process::interactive::describe_exit;

/// A tool's answer: text, and whether it is an error.
pub(crate) type OpResult = Result<String, String>;

fn label(key: &Key) -> String {
    format!("{} session `{}`", key.0, key.1)
}

pub(super) fn refused(key: &Key, r: Refused, kind: &SessionKind) -> String {
    match r {
        Refused::Cancelled => "cancelled while waiting for the session".into(),
        Refused::Deadline => format!(
            "the {} was busy with another input until the deadline; nothing was sent",
            label(key)
        ),
        Refused::Closed => "the server is shutting down".into(),
        Refused::Full(names) => format!(
            "cannot start {}: {} sessions of {} already run ({}), the most allowed (maxSessions). \
             Stop one with {}_stop first.",
            label(key),
            names.len(),
            kind.name,
            names.join(", "),
            kind.name
        ),
    }
}

/// The working directory for `K_start {workdir}`.
pub(super) fn workdir(kind: &SessionKind, asked: Option<&str>) -> Result<PathBuf, String> {
    match &kind.workdir {
        Workdir::Inherit => match asked {
            None => std::env::current_dir().map_err(|e| format!("no working directory: {e}")),
            Some(_) => Err(format!("{} sessions take no workdir", kind.name)),
        },
        Workdir::Fixed(d) => match asked {
            None => Ok(d.clone()),
            Some(_) => Err(format!(
                "{} sessions have a fixed working directory",
                kind.name
            )),
        },
        Workdir::Param { root, default, .. } => {
            crate::resolve::dir_within(root, asked.unwrap_or(default)).map_err(|e| e.to_string())
        }
    }
}

/// Starts the program and runs its greeting and startup inputs.
fn launch(
    kind: &SessionKind,
    key: &Key,
    (entry_workdir, start): (PathBuf, Launch),
    call: &Caller<'_>,
    transcript: Arc<std::sync::Mutex<super::child::Transcript>>,
) -> Result<(Arc<Proc>, String), String> {
    let proc = Proc::spawn(
        kind,
        entry_workdir,
        start,
        &format!("{}-{}", key.0, key.1),
        transcript,
    )
    .map_err(|e| format!("{} could not be started: {e}", label(key)))?;
    let extra = proc.launch.inputs.clone();
    let waiting = ExchangeWait {
        caller: Caller {
            deadline: (Instant::now() + kind.startup_timeout).min(call.deadline),
            ..*call
        },
        interrupt: false,
    };
    let mut greeting = Vec::new();
    let inputs = kind
        .greeting
        .then_some(None)
        .into_iter()
        .chain(kind.startup.iter().chain(&extra).map(|s| Some(s.as_str())));
    for input in inputs {
        let fail = match exchange(kind, &proc, input, &waiting) {
            ExchangeEnd::Answer(t) => {
                if !t.is_empty() {
                    greeting.push(t);
                }
                continue;
            }
            ExchangeEnd::Died { partial, how } => {
                format!("it {how} during start-up") + &output(&partial)
            }
            ExchangeEnd::Interrupted {
                why: StopReason::Cancelled,
                ..
            } => "start-up was cancelled".into(),
            ExchangeEnd::Interrupted { partial, .. } => {
                format!(
                    "it did not finish starting within {} s (startupTimeoutSeconds); it was killed",
                    kind.startup_timeout.as_secs_f64()
                ) + &output(&partial)
            }
        };
        proc.kill("its start-up failed", Duration::from_secs(5));
        return Err(format!("{} could not be started: {fail}", label(key)));
    }
    Ok((proc, greeting.join("\n")))
}

fn output(partial: &str) -> String {
    if partial.is_empty() {
        ". It printed nothing.".into()
    } else {
        format!(". Its output:\n{partial}")
    }
}

/// Starts the program of the session the turn is for; stores it; returns the greeting.
pub(super) fn start_in_turn(
    reg: &Registry,
    kind: &SessionKind,
    turn: &Turn,
    call: &Caller<'_>,
) -> Result<(Arc<Proc>, String), String> {
    let (dir, start, project, transcript) = reg
        .with(&turn.key, |e| {
            let (launch, project) = (e.launch.clone(), e.project.clone());
            (e.workdir.clone(), launch, project, e.transcript.clone())
        })
        .ok_or_else(|| "the session vanished".to_owned())?;
    let start = match start {
        Some(s) => s,
        None => kind.launch(serde_json::Map::new())?,
    }
    .with(project.as_ref());
    let (proc, greeting) = launch(kind, &turn.key, (dir, start), call, transcript)?;
    if reg.is_closed() {
        proc.kill(SHUTDOWN, Duration::from_secs(5));
        return Err("the server is shutting down".into());
    }
    reg.with(&turn.key, |e| {
        e.proc = Some(proc.clone());
        e.stopped = None;
        e.last_answer.clone_from(&greeting);
    });
    Ok((proc, greeting))
}

fn started_line(key: &Key, proc: &Proc) -> String {
    let mut line = format!(
        "Started {} (pid {}) in {}.",
        label(key),
        proc.pid,
        proc.workdir.display()
    );
    // Said once, at the start: a confinement the kernel does not enforce in full.
    if let Some(r) = proc
        .confined
        .as_ref()
        .filter(|r| r.mode != Mode::Off && !r.confined())
    {
        let parts: Vec<&str> = r.missing.iter().map(|p| p.name()).collect();
        line.push_str(&format!(
            " Its confinement is not enforced in full ({}): not confined: {}.",
            r.problem
                .clone()
                .unwrap_or_else(|| format!("Landlock ABI {}", r.abi)),
            parts.join(", ")
        ));
    }
    line
}

/// The session an operation is on: session `name` of `kind`, in `reg`.
#[derive(Clone, Copy)]
pub(super) struct Target<'a> {
    pub reg: &'a Arc<Registry>,
    pub kind: &'a Arc<SessionKind>,
    pub name: &'a str,
}

impl Target<'_> {
    /// The session's key in the registry.
    pub(super) fn key(&self) -> Key {
        key_of(self.kind, self.name)
    }
}

/// `K_start`.
pub(super) fn start(
    on: Target<'_>,
    (asked, params): (Option<&str>, serde_json::Map<String, serde_json::Value>),
    call: &Caller<'_>,
) -> OpResult {
    let Target { reg, kind, .. } = on;
    let key = on.key();
    let asked = StartAsked {
        dir: asked.map(|a| workdir(kind, Some(a))).transpose()?,
        launch: (!params.is_empty())
            .then(|| kind.launch(params))
            .transpose()?,
    };
    if let Some(reply) = already_running(reg, kind, &key, &asked, None) {
        return reply;
    }
    // A session that ran before starts again where it ran, unless a workdir is asked for.
    let dir = match asked
        .dir
        .clone()
        .or_else(|| reg.with(&key, |e| e.workdir.clone()))
    {
        Some(d) => d,
        None => workdir(kind, None)?,
    };
    let turn = reg
        .turn(kind, &key, || dir.clone(), call.cancelled, call.deadline)
        .map_err(|r| refused(&key, r, kind))?;
    if let Some(reply) = already_running(reg, kind, &key, &asked, Some((&turn, call))) {
        return reply;
    }
    let dead = reg
        .with(&key, |e| {
            if let Some(d) = &asked.dir {
                e.workdir.clone_from(d);
            }
            if let Some(l) = &asked.launch {
                e.launch = Some(l.clone());
            }
            e.proc.is_some().then(|| e.state())
        })
        .flatten();
    let (proc, greeting) = start_in_turn(reg, kind, &turn, call)?;
    drop(turn);
    reg.activity();
    let mut text = started_line(&key, &proc);
    if let Some(d) = dead {
        text.push_str(&format!(
            " The previous program was {d}; its state is lost."
        ));
    }
    if !greeting.is_empty() {
        text.push('\n');
        text.push_str(&greeting);
    }
    greeted(kind, &greeting, text)
}

/// A start's reply: an error when the greeting (the banner and the startup inputs' answers)
/// matches the kind's `error` pattern, though the session runs.
fn greeted(kind: &SessionKind, greeting: &str, text: String) -> OpResult {
    match &kind.error {
        Some(p) if p.regex.is_match(greeting) => Err(format!(
            "{text}\n[The greeting matches the kind's error pattern /{}/: a startup input \
             failed? The session runs.]",
            p.source
        )),
        _ => Ok(text),
    }
}

/// What `K_start` says about a session whose program runs (busy or not): the answer to the
/// kind's `status` input (sent only with the session's turn: without it, `None` asks the
/// caller to take it), else its last answer; or that it runs elsewhere than `asked` (it is not
/// moved: its state lives in that program).
fn already_running(
    reg: &Registry,
    kind: &SessionKind,
    key: &Key,
    asked: &StartAsked,
    turn: Option<(&Turn, &Caller<'_>)>,
) -> Option<OpResult> {
    let (p, last, busy) = reg
        .with(key, |e| {
            let p = e.proc.clone().filter(|_| e.alive())?;
            // With the turn in hand, the session is busy with this call.
            Some((p, e.last_answer.clone(), e.busy && turn.is_none()))
        })
        .flatten()?;
    let busy_note = if busy { ", busy with an input" } else { "" };
    let head = format!(
        "{} is already running (pid {}, in {}, up {}{busy_note})",
        label(key),
        p.pid,
        p.workdir.display(),
        stdmcp_proto::human::elapsed(p.started.elapsed())
    );
    // Compared by what they give (the same values spelled otherwise, or a default given, are
    // the same start).
    let differs = |l: &&Launch| (&l.argv, &l.env) != (&p.launch.argv, &p.launch.env);
    if let Some(l) = asked.launch.as_ref().filter(differs) {
        return Some(Err(format!(
            "{head} with other start parameters ({}); it was not restarted with {}: its \
             state lives in that program. To start over with these, call {k}_stop and then \
             {k}_start with them, or use another session name.",
            given(&p.launch),
            given(l),
            k = kind.name
        )));
    }
    if let Some(dir) = asked.dir.as_ref().filter(|d| **d != p.workdir) {
        return Some(Err(format!(
            "{head}; it was not moved to {}: its state lives in that program. To start over \
             there, call {k}_stop and then {k}_start with this workdir, or use another session \
             name.",
            dir.display(),
            k = kind.name
        )));
    }
    match (&kind.status, turn) {
        (Some(_), None) if !busy => None,
        (Some(input), Some((turn, call))) => Some(
            status(reg, kind, turn, &p, input, call)
                .map(|t| format!("{head}. Its status ({input}):\n{t}"))
                .map_err(|e| format!("{head}; its status input {input} did not answer: {e}")),
        ),
        _ => Some(Ok(format!("{head}. Its last answer:\n{last}"))),
    }
}

/// What `K_start` asks for: a working directory, start parameters.
struct StartAsked {
    dir: Option<PathBuf>,
    launch: Option<Launch>,
}

/// Start parameters as the caller gave them: `heap="x"`, or `none`.
fn given(l: &Launch) -> String {
    if l.given.is_empty() {
        return "none".into();
    }
    l.given
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Sends the kind's `status` input, within the kind's send timeout.
fn status(
    reg: &Registry,
    kind: &SessionKind,
    turn: &Turn,
    proc: &Proc,
    input: &str,
    call: &Caller<'_>,
) -> OpResult {
    let started = Instant::now();
    let waiting = ExchangeWait {
        caller: Caller {
            deadline: call.deadline.min(started + kind.timeout),
            ..*call
        },
        interrupt: true,
    };
    let outcome = exchange(kind, proc, Some(input), &waiting);
    settle(reg, kind, turn, outcome, started, kind.timeout, call)
}

/// `K_send`.
pub(super) fn send(
    on: Target<'_>,
    input: &str,
    (limit, cap): (Duration, usize),
    call: &Caller<'_>,
) -> OpResult {
    let Target { reg, kind, .. } = on;
    let key = on.key();
    let started = Instant::now();
    let deadline = call.deadline;
    let turn = reg
        .turn(
            kind,
            &key,
            || workdir(kind, None).unwrap_or_default(),
            call.cancelled,
            deadline,
        )
        .map_err(|r| refused(&key, r, kind))?;
    let mut prefix = String::new();
    let state = reg.with(&key, |e| {
        (e.proc.clone(), e.alive(), e.state(), e.note.take())
    });
    let (proc, alive, state, note) = state.ok_or_else(|| "the session vanished".to_owned())?;
    if let Some(n) = note {
        prefix.push_str(&n);
        prefix.push('\n');
    }
    let proc = match proc {
        Some(_) if !alive => {
            return Err(format!(
                "{} is {state}; its state is lost and the input was not sent. \
                 Call {}_start or {}_restart for a fresh session.",
                label(&key),
                kind.name,
                kind.name
            ))
        }
        Some(p) => p,
        None => {
            let (p, _) = start_in_turn(reg, kind, &turn, call)?;
            reg.activity();
            prefix.push_str(&started_line(&key, &p));
            prefix.push('\n');
            p
        }
    };
    let waiting = ExchangeWait {
        caller: Caller { deadline, ..*call },
        interrupt: true,
    };
    if (call.cancelled)() {
        return Err("cancelled before the input was sent".into());
    }
    let outcome = exchange_capped(kind, &proc, Some(input), &waiting, cap);
    let reply = settle(reg, kind, &turn, outcome, started, limit, call);
    if let Ok(text) = &reply {
        reg.with(&key, |e| e.last_answer.clone_from(text));
    }
    // An answer in which the kind's `error` pattern matches is an error, text unchanged.
    let failed = |t: &String| kind.error.as_ref().is_some_and(|p| p.regex.is_match(t));
    let reply = reply.and_then(|t| if failed(&t) { Err(t) } else { Ok(t) });
    reply
        .map(|t| (prefix.clone() + &t).trim_end().to_owned())
        .map_err(|t| (prefix + &t).trim_end().to_owned())
}

/// Turns an exchange's outcome into the reply; restarts a program that did not come back
/// from an interrupt.
fn settle(
    reg: &Registry,
    kind: &SessionKind,
    turn: &Turn,
    outcome: ExchangeEnd,
    started: Instant,
    limit: Duration,
    call: &Caller<'_>,
) -> OpResult {
    let key = &turn.key;
    match outcome {
        ExchangeEnd::Answer(t) => Ok(t),
        ExchangeEnd::Died { partial, how } => Err(format!(
            "{} ended: the program {how}. Its state is lost; call {}_start or {}_restart for a fresh session{}",
            label(key),
            kind.name,
            kind.name,
            output(&partial)
        )),
        ExchangeEnd::Interrupted { why, partial, recovered } => {
            let mut head = match why {
                StopReason::Deadline => format!(
                    "Interrupted after {} (the send's timeout of {} passed); {} was sent to the program.",
                    stdmcp_proto::human::elapsed(started.elapsed()),
                    stdmcp_proto::human::setting(limit),
                    signal_name(kind.interrupt_signal)
                ),
                StopReason::Cancelled => "Cancelled; the program was interrupted.".into(),
            };
            if (call.shutdown)() {
                return Err("the server is shutting down; its sessions are stopped".into());
            }
            if recovered {
                head.push_str(" The session is still usable and keeps its state.");
            } else {
                head.push_str(&restart_after_interrupt(reg, kind, turn, call));
            }
            let text = if partial.is_empty() { head } else { format!("{head}\nOutput so far:\n{partial}") };
            Err(text)
        }
    }
}

fn restart_after_interrupt(
    reg: &Registry,
    kind: &SessionKind,
    turn: &Turn,
    call: &Caller<'_>,
) -> String {
    let why = format!(
        "it did not come back within {} ms of an interrupt (interruptGraceMs)",
        kind.interrupt_grace.as_millis()
    );
    reg.kill(&turn.key, &why);
    let lost = format!(
        " The program did not come back within {} ms of the interrupt, so it was killed",
        kind.interrupt_grace.as_millis()
    );
    // The call's deadline has passed: the restart gets the kind's startup time of its own.
    let quiet = Caller {
        cancelled: call.shutdown,
        deadline: Instant::now() + kind.startup_timeout,
        shutdown: call.shutdown,
        status: call.status,
    };
    match start_in_turn(reg, kind, turn, &quiet) {
        Ok((p, _)) => {
            let note = format!(
                "(Note: {} was restarted (pid {}) after an interrupt; its earlier state was lost.)",
                label(&turn.key),
                p.pid
            );
            reg.with(&turn.key, |e| e.note = Some(note));
            format!("{lost} and restarted (pid {}): its state was lost.", p.pid)
        }
        Err(e) => format!("{lost}; restarting it failed: {e}"),
    }
}

/// `K_interrupt`.
pub(super) fn interrupt(on: Target<'_>) -> OpResult {
    let Target { reg, kind, .. } = on;
    let key = on.key();
    let found = reg.with(&key, |e| (e.proc.clone().filter(|_| e.alive()), e.busy));
    match found {
        None => Err(format!("there is no {}", label(&key))),
        Some((None, _)) => Err(format!("{} is not running", label(&key))),
        Some((Some(_), false)) => Ok(format!("{} is idle: nothing to interrupt.", label(&key))),
        Some((Some(p), true)) => {
            p.note(format!("\n[{}]\n", signal_name(kind.interrupt_signal)));
            p.signal(kind.interrupt_signal);
            if let Some(i) = &kind.interrupt_input {
                p.write(i.clone().into_bytes());
            }
            Ok(format!(
                "Sent {} to {} (pid {}); the running send answers with what the program printed.",
                signal_name(kind.interrupt_signal),
                label(&key),
                p.pid
            ))
        }
    }
}

/// `K_stop`.
pub(super) fn stop(on: Target<'_>, call: &Caller<'_>) -> OpResult {
    let Target { reg, kind, .. } = on;
    let key = on.key();
    if reg.with(&key, |_| ()).is_none() {
        return Ok(format!("There is no {}: nothing to stop.", label(&key)));
    }
    let why = format!("{}_stop was called", kind.name);
    let proc = reg.kill(&key, &why);
    let turn = reg.turn(kind, &key, PathBuf::new, call.cancelled, call.deadline);
    // A start that was under way when the stop came has finished now: its program goes too.
    let proc = reg.kill(&key, &why).or(proc);
    reg.remove(&key);
    drop(turn);
    Ok(match proc.and_then(|p| p.exit().map(|s| (p.pid, s))) {
        // Killed by the stop itself: say so, not "perhaps out of memory".
        Some((pid, s)) if s.signal() == Some(libc::SIGKILL) => format!(
            "Stopped {} (pid {pid}; its process group was killed).",
            label(&key)
        ),
        Some((pid, s)) => format!(
            "Stopped {} (pid {pid}; it had {}).",
            label(&key),
            describe_exit(&s)
        ),
        None => format!("Stopped {}.", label(&key)),
    })
}

/// `K_restart`.
pub(super) fn restart(on: Target<'_>, call: &Caller<'_>) -> OpResult {
    let Target { reg, kind, .. } = on;
    let key = on.key();
    let why = format!("{}_restart was called", kind.name);
    reg.kill(&key, &why);
    let dir = workdir(kind, None)?;
    let turn = reg
        .turn(kind, &key, || dir.clone(), call.cancelled, call.deadline)
        .map_err(|r| refused(&key, r, kind))?;
    reg.kill(&key, &why);
    let (proc, greeting) = start_in_turn(reg, kind, &turn, call)?;
    reg.with(&key, |e| e.note = None);
    drop(turn);
    reg.activity();
    let mut text = format!("Restarted: {}", started_line(&key, &proc));
    if !greeting.is_empty() {
        text.push('\n');
        text.push_str(&greeting);
    }
    greeted(kind, &greeting, text)
}
