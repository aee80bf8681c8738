//! One exchange with a session's program: write an input, wait for the end of its answer;
//! on cancellation or deadline interrupt the program and resynchronise.

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use super::answer::{fresh_marker, Answer, End};
use super::child::{Proc, State};
use super::spill::Spill;
use crate::spec::session::{AnswerMode, SessionKind};

/// Longest wait between two looks at the cancel flag and the deadline.
const TICK: Duration = Duration::from_millis(50);
/// After the program ended, how long its last output may take to arrive (a process that
/// escaped its group may hold the pipe open).
const EOF_GRACE: Duration = Duration::from_millis(250);

/// Why an exchange must stop waiting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// The client cancelled the call (or the server is shutting down).
    Cancelled,
    /// The send's deadline passed.
    Deadline,
}

/// How an exchange ended.
#[derive(Debug)]
pub(super) enum ExchangeEnd {
    /// The answer, complete.
    Answer(String),
    /// Interrupted; `partial` is the output so far. `recovered`: the program came back
    /// within the grace period (else it must be killed and restarted).
    Interrupted {
        why: StopReason,
        partial: String,
        recovered: bool,
    },
    /// The program ended; what it printed before, and how it ended ([`Proc::describe`]).
    Died { partial: String, how: String },
}

/// What a call gives the operations: cancellation, deadline, heartbeat status.
#[derive(Clone, Copy)]
pub(crate) struct Caller<'a> {
    /// The client cancelled the call (the deadline is not a cancel here: see `deadline`).
    pub cancelled: &'a dyn Fn() -> bool,
    /// The call's deadline (the tool's, see `tools.rs`): waits end there.
    pub deadline: Instant,
    /// The server is shutting down (its sessions are about to be killed): give up at once.
    pub shutdown: &'a dyn Fn() -> bool,
    pub status: &'a dyn Fn(&str),
}

/// How an exchange waits: for its caller (whose deadline may be narrowed to the send's), and
/// what it does on a stop.
pub(super) struct ExchangeWait<'a> {
    pub caller: Caller<'a>,
    /// On stop, interrupt the program and wait for it to come back (else: give up at once).
    pub interrupt: bool,
}

/// Sends `input` (or nothing: `None` waits for the next answer end, e.g. the banner's) and
/// waits for its answer, cut to the kind's `maxOutputBytes`. Output left over from before an
/// input is discarded first; with no input, output already there is the start of the answer
/// awaited (a greeting the program printed before its start-up exchange began).
pub(super) fn exchange(
    kind: &SessionKind,
    proc: &Proc,
    input: Option<&str>,
    waiting: &ExchangeWait<'_>,
) -> ExchangeEnd {
    exchange_capped(kind, proc, input, waiting, kind.max_output_bytes)
}

/// [`exchange`], the answer cut to `cap` bytes (head and tail); a longer answer is kept whole
/// in the output spool and its text ends with a note that says how to read it.
pub(super) fn exchange_capped(
    kind: &SessionKind,
    proc: &Proc,
    input: Option<&str>,
    waiting: &ExchangeWait<'_>,
    cap: usize,
) -> ExchangeEnd {
    let spill = Spill::new();
    let stale = {
        let mut st = proc.lock();
        // The reader thread runs from the program's start: its banner (and the NUL, marker
        // or prompt that ends it) may be pending before the start-up waits for it. Dropped,
        // the start would wait for an end that already came, until startupTimeoutSeconds.
        let stale = if input.is_some() {
            st.pending.take_all()
        } else {
            super::answer::Answer::default()
        };
        st.pending.await_answer(Some(spill.sink()), cap);
        stale
    };
    let out = OutputCap { cap, spill: &spill };
    let end = run(kind, proc, input, waiting, &out);
    // Output between answers is nobody's: it is not kept.
    proc.lock().pending.idle(kind.max_output_bytes);
    if !stale.bytes.is_empty() {
        log::debug!(
            "session {}: {} stale bytes discarded",
            proc.pid,
            stale.bytes.len()
        );
    }
    end
}

/// How an answer becomes text: its cap, and where it is kept whole when longer.
struct OutputCap<'a> {
    cap: usize,
    spill: &'a Spill,
}

fn run(
    kind: &SessionKind,
    proc: &Proc,
    input: Option<&str>,
    waiting: &ExchangeWait<'_>,
    out: &OutputCap<'_>,
) -> ExchangeEnd {
    let marker = matches!(kind.answer, AnswerMode::Sentinel { .. }).then(fresh_marker);
    let mut bytes = Vec::new();
    if let Some(input) = input {
        proc.note(format!("\n» {input}\n"));
        bytes.extend_from_slice(input.as_bytes());
        bytes.extend_from_slice(kind.input_end());
    }
    if let Some(m) = &marker {
        bytes.extend_from_slice(&sentinel(kind, m));
    }
    if !bytes.is_empty() {
        proc.write(bytes);
    }
    let sent = Instant::now();
    let end = |st: &mut State| detect(kind, marker.as_deref(), st, sent);
    match wait(proc, &end, waiting, marker.as_deref()) {
        Waited::Done(a) => ExchangeEnd::Answer(text(kind, out, &a)),
        Waited::Died(a, status) => ExchangeEnd::Died {
            partial: text(kind, out, &a),
            how: proc.describe(&status),
        },
        Waited::Stopped(why) if waiting.interrupt && !(waiting.caller.shutdown)() => interrupt(
            kind,
            proc,
            marker.as_deref(),
            why,
            waiting.caller.shutdown,
            out,
        ),
        Waited::Stopped(why) => ExchangeEnd::Interrupted {
            why,
            partial: text(kind, out, &proc.lock().pending.take_all()),
            recovered: false,
        },
    }
}

fn sentinel(kind: &SessionKind, marker: &str) -> Vec<u8> {
    let AnswerMode::Sentinel { command } = &kind.answer else {
        return Vec::new();
    };
    let mut b = command.replace("{marker}", marker).into_bytes();
    b.extend_from_slice(kind.input_end());
    b
}

/// The answer's text, its middle dropped beyond the cap, and then a note that says where
/// the whole of it is.
fn text(kind: &SessionKind, out: &OutputCap<'_>, a: &Answer) -> String {
    let mut text = a.text(out.cap, kind.strip_ansi);
    let total = a.bytes.len() as u64 + a.omitted;
    if total > out.cap as u64 {
        text.push_str(&out.spill.note(out.cap as u64, total));
    }
    text
}

/// The answer, if it is complete.
fn detect(
    kind: &SessionKind,
    marker: Option<&str>,
    st: &mut State,
    sent: Instant,
) -> Option<Answer> {
    match &kind.answer {
        AnswerMode::Nul => st.pending.find_end(&End::Nul),
        AnswerMode::Sentinel { .. } => st
            .pending
            .find_end(&End::Marker(marker.unwrap_or_default().as_bytes())),
        AnswerMode::Prompt { regex, .. } => st.pending.find_end(&End::Prompt(regex)),
        AnswerMode::Quiet(ms) => {
            st.pending.searched();
            let since = st.last_output.max(sent);
            (since.elapsed() >= *ms).then(|| st.pending.take_all())
        }
    }
}

enum Waited {
    Done(Answer),
    Died(Answer, ExitStatus),
    Stopped(StopReason),
}

/// Waits until `end` finds the answer, the program ends, or `waiting` says stop. The
/// heartbeat's status is the program's latest line, unless it is the sentinel's own (`marker`).
fn wait(
    proc: &Proc,
    end: &dyn Fn(&mut State) -> Option<Answer>,
    waiting: &ExchangeWait<'_>,
    marker: Option<&str>,
) -> Waited {
    let mut seen = 0;
    let mut ended: Option<Instant> = None;
    loop {
        let line = {
            let mut st = proc.lock();
            if let Some(a) = end(&mut st) {
                return Waited::Done(a);
            }
            if let Some(status) = st.exit {
                let since = *ended.get_or_insert_with(Instant::now);
                if st.eof || since.elapsed() >= EOF_GRACE {
                    return Waited::Died(st.pending.take_all(), status);
                }
            }
            if (waiting.caller.cancelled)() {
                return Waited::Stopped(StopReason::Cancelled);
            }
            let now = Instant::now();
            if now >= waiting.caller.deadline {
                return Waited::Stopped(StopReason::Deadline);
            }
            let tick = TICK.min(waiting.caller.deadline - now);
            let (st, _) = stdmcp::sync::wait_timeout(&proc.cond, st, tick);
            let fresh = st.chunks != seen
                && !st.last_line.is_empty()
                && !marker.is_some_and(|m| st.last_line.contains(m));
            seen = st.chunks;
            fresh.then(|| st.last_line.clone())
        };
        // Outside the lock: reporting takes the dispatcher's lock.
        if let Some(line) = line {
            (waiting.caller.status)(&line);
        }
    }
}

/// Interrupts the program and waits up to the grace period for it to come back: a fresh
/// sentinel (sentinel mode), the next NUL or prompt, or a quiet spell.
fn interrupt(
    kind: &SessionKind,
    proc: &Proc,
    marker: Option<&str>,
    why: StopReason,
    shutdown: &dyn Fn() -> bool,
    out: &OutputCap<'_>,
) -> ExchangeEnd {
    proc.note(format!(
        "\n[interrupted: {}]\n",
        if why == StopReason::Deadline {
            "deadline"
        } else {
            "cancelled"
        }
    ));
    proc.signal(kind.interrupt_signal);
    if let Some(i) = &kind.interrupt_input {
        proc.write(i.clone().into_bytes());
    }
    let fresh = marker.map(|_| fresh_marker());
    if let Some(m) = &fresh {
        proc.write(sentinel(kind, m));
    }
    let sent = Instant::now();
    let end = |st: &mut State| {
        let a = detect(kind, fresh.as_deref(), st, sent)?;
        let (Some(first), Some(_)) = (marker, &fresh) else {
            return Some(a);
        };
        // Output before the first marker, if it came, is the input's; after it, noise.
        let mut p = super::answer::Pending::new(usize::MAX / 4);
        p.push(&a.bytes);
        Some(p.find_end(&End::Marker(first.as_bytes())).unwrap_or(a))
    };
    let waiting = ExchangeWait {
        caller: Caller {
            cancelled: shutdown,
            shutdown,
            deadline: sent + kind.interrupt_grace,
            status: &|_| {},
        },
        interrupt: false,
    };
    match wait(proc, &end, &waiting, None) {
        Waited::Done(a) => ExchangeEnd::Interrupted {
            why,
            partial: text(kind, out, &a),
            recovered: true,
        },
        Waited::Died(a, status) => ExchangeEnd::Died {
            partial: text(kind, out, &a),
            how: proc.describe(&status),
        },
        Waited::Stopped(_) => ExchangeEnd::Interrupted {
            why,
            partial: text(kind, out, &proc.lock().pending.take_all()),
            recovered: false,
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use super::{exchange, Caller, ExchangeEnd, ExchangeWait};
    use crate::session::child::{Proc, Transcript};

    /// The program's greeting arrives before the start-up waits for it (the reader thread
    /// runs from the program's start; on a loaded machine the starting call comes late): it
    /// is still the greeting's answer, not output left over.
    #[test]
    fn a_greeting_that_came_before_the_wait_is_its_answer() {
        let m = crate::spec::Manifest::parse(
            &serde_json::json!({"name": "m", "tools": [], "sessions": [
                {"name": "g", "description": "d", "program": "sh",
                 "args": ["-c", "printf 'ready\\0'; exec cat >/dev/null"],
                 "answer": {"mode": "nul"}}
            ]})
            .to_string(),
            std::path::Path::new("/"),
        )
        .unwrap();
        let kind = &m.sessions[0];
        let launch = kind.launch(serde_json::Map::new()).unwrap();
        let transcript = Arc::new(Mutex::new(Transcript::default()));
        let dir = std::env::current_dir().unwrap();
        let proc = Proc::spawn(kind, dir, launch, "greeting-test", transcript).unwrap();
        // The whole greeting is pending before the exchange begins.
        let until = Instant::now() + Duration::from_secs(10);
        let mut st = proc.lock();
        while !st.pending.has_byte(0) && Instant::now() < until {
            st = stdmcp::sync::wait_timeout(&proc.cond, st, Duration::from_millis(50)).0;
        }
        drop(st);
        let waiting = ExchangeWait {
            caller: Caller {
                cancelled: &|| false,
                shutdown: &|| false,
                deadline: Instant::now() + Duration::from_secs(5),
                status: &|_| {},
            },
            interrupt: false,
        };
        let end = exchange(kind, &proc, None, &waiting);
        proc.kill("the test ended", Duration::from_secs(5));
        assert!(
            matches!(&end, ExchangeEnd::Answer(t) if t == "ready"),
            "{end:?}"
        );
    }
}
