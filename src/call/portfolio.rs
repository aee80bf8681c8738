//! Running a portfolio (README "Portfolios"): every member starts at once on a thread of its
//! own, each through the process runner with its own limits, marker, spool entry, process
//! group and cancel token. The first member that ends with a decisive verdict (whatever its
//! exit code) wins and is answered at once; the others are stopped as for a cancel (their
//! tokens cancelled before the answer, which wakes each member's own thread: SIGTERM to its
//! group, SIGKILL after the member's kill grace, the sweep), by those threads, which go on
//! after the answer until their programs are reaped.
//!
//! A cancel, the portfolio's deadline or the server's shutdown cancels the portfolio's token,
//! whose hook cancels every member's with the same reason; the portfolio then waits for every
//! member to end.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Instant;

use serde_json::{json, Map, Value};

use super::plan;
use super::run::{execute, How, Ran};
use crate::spec::ToolSpec;
use stdmcp::mailbox::Mailbox;
use stdmcp::mcp::{CallToolResult, Content};
use stdmcp::{CancelReason, CancelToken};
use stdmcp::{Ctx, Reporter};

/// What became of a member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Running,
    Won,
    Stopped,
    Finished,
    Failed,
    TimedOut,
}

impl State {
    fn word(self) -> &'static str {
        match self {
            State::Running => "running",
            State::Won => "won",
            State::Stopped => "stopped",
            State::Finished => "finished",
            State::Failed => "failed",
            State::TimedOut => "timed out",
        }
    }
}

/// One member's entry on the portfolio's board.
struct Member {
    tool: String,
    call: String,
    state: State,
    verdict: Option<String>,
    seconds: f64,
    code: Option<i32>,
    /// `confined` and `notConfined` of its own result, when it ran.
    confined: Option<(Value, Value)>,
    /// Its latest output line, for the heartbeat.
    line: String,
}

/// The members' states, shared with their output handlers (for the heartbeat).
struct Board {
    members: Mutex<Vec<Member>>,
    status: Option<Reporter>,
    /// The portfolio was answered: members' lines no longer feed its heartbeat.
    answered: AtomicBool,
}

impl Board {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Member>> {
        stdmcp::sync::lock(&self.members)
    }

    /// A member's line: kept as its latest, and the heartbeat names every member's state.
    fn line(&self, i: usize, line: &str) {
        let line = line.trim();
        if self.status.is_none() || line.is_empty() || self.answered.load(Ordering::Relaxed) {
            return;
        }
        line.clone_into(&mut self.lock()[i].line);
        self.show();
    }

    /// Passes every member's state and latest line on to the heartbeat.
    fn show(&self) {
        if let Some(status) = &self.status {
            let summary = summary(&self.lock());
            status.set_status(summary);
        }
    }
}

/// `e: running (# SZS status…); spass: failed`: each member's state and latest line.
fn summary(members: &[Member]) -> String {
    members
        .iter()
        .map(|m| {
            let mut s = format!("{}: {}", m.tool, m.state.word());
            if let Some(v) = &m.verdict {
                let _ = write!(s, " ({v})");
            } else if m.state == State::Running && !m.line.is_empty() {
                let line: String = m.line.chars().take(120).collect();
                let _ = write!(s, " ({line})");
            }
            s
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Runs one call of the portfolio `spec` whose members are `members`.
pub(crate) fn call(
    ctx: &Ctx,
    spec: &ToolSpec,
    members: &[Arc<ToolSpec>],
    roots: &Arc<BTreeMap<String, PathBuf>>,
    args: &Value,
) -> CallToolResult {
    if let Err(why) = plan::plan(spec, roots, args) {
        return CallToolResult::error(format!("Refused: {why}. Nothing was run."));
    }
    let args = with_defaults(spec, args);
    let start = Instant::now();
    let reporter = ctx.reporter();
    let board = Arc::new(Board {
        members: Mutex::new(
            members
                .iter()
                .map(|m| Member {
                    tool: m.name.clone(),
                    call: super::new_call_id(),
                    state: State::Running,
                    verdict: None,
                    seconds: 0.0,
                    code: None,
                    confined: None,
                    line: String::new(),
                })
                .collect(),
        ),
        status: reporter.wants_progress().then(|| reporter.clone()),
        answered: AtomicBool::new(false),
    });
    let tokens: Vec<CancelToken> = members.iter().map(|_| CancelToken::new()).collect();
    // Every member stops with the portfolio, for the portfolio's reason.
    let _hook = {
        let (parent, tokens) = (ctx.cancel_token().clone(), tokens.clone());
        ctx.cancel_token().on_cancel(move || {
            let reason = parent.reason().unwrap_or(CancelReason::Client);
            for t in &tokens {
                t.cancel(reason);
            }
        })
    };
    let (rx, running) = start_members(&board, members, &tokens, roots, &args);
    board.show();
    let winner = first_decisive(ctx, &board, (members, &args), &tokens, (rx, running), start);
    board.answered.store(true, Ordering::Relaxed);
    let timed_out = ctx.cancel_reason() == Some(CancelReason::Deadline);
    let members = board.lock();
    answer(spec, &members, winner, timed_out)
}

/// Starts every member on a thread of its own; returns where their ends arrive and how many
/// will (each member's: a member whose thread could not be started, or panicked, ends
/// without a run, and has failed).
fn start_members(
    board: &Arc<Board>,
    members: &[Arc<ToolSpec>],
    tokens: &[CancelToken],
    roots: &Arc<BTreeMap<String, PathBuf>>,
    args: &Value,
) -> (Arc<Ends>, usize) {
    let ends = Arc::new(Ends::default());
    for (i, m) in members.iter().enumerate() {
        let how = How {
            cancel: tokens[i].clone(),
            call_id: board.lock()[i].call.clone(),
            timeout: Some(m.timeout),
            on_line: {
                let board = Arc::clone(board);
                Arc::new(move |_, line| board.line(i, line))
            },
        };
        let (member, roots, args) = (Arc::clone(m), Arc::clone(roots), args.clone());
        let end = End {
            i,
            ends: Arc::clone(&ends),
            ran: None,
        };
        let started = thread::Builder::new()
            .name("stdmcp-member".into())
            .spawn(move || {
                // The whole `End` is the thread's (not only its field): it is sent when the
                // thread ends, or dropped with the closure if the thread cannot start.
                let mut end = end;
                end.ran = Some(execute(&member, &roots, &args, how));
            });
        if let Err(e) = started {
            log::error!("cannot start a thread for member {}: {e}", m.name);
        }
    }
    (ends, members.len())
}

/// Where the members' ends arrive: each member's index and its run (`None`: its thread
/// panicked).
type Ends = Mailbox<(usize, Option<Ran>)>;

/// Sends a member's end when its thread ends, however it ends.
struct End {
    i: usize,
    ends: Arc<Ends>,
    ran: Option<Ran>,
}

impl Drop for End {
    fn drop(&mut self) {
        self.ends.send((self.i, self.ran.take()));
    }
}

/// Waits for the members' ends until one decides (it is returned, and every other member is
/// signalled to stop before this returns) or all have ended.
fn first_decisive(
    ctx: &Ctx,
    board: &Board,
    (members, args): (&[Arc<ToolSpec>], &Value),
    tokens: &[CancelToken],
    (ends, mut running): (Arc<Ends>, usize),
    start: Instant,
) -> Option<(usize, Ran)> {
    while running > 0 {
        let Some((i, ran)) = ends.recv() else { break };
        running -= 1;
        let Some(ran) = ran else {
            log::error!("member {} ended without a run", members[i].name);
            board.lock()[i].state = State::Failed;
            continue;
        };
        let decisive = ended(board, i, &ran, &members[i], start);
        let call = board.lock()[i].call.clone();
        super::run::ended(ctx, &members[i], args, &call);
        if decisive && !ctx.is_cancelled() {
            for (j, t) in tokens.iter().enumerate() {
                if j != i {
                    t.cancel(CancelReason::Client);
                }
            }
            let mut b = board.lock();
            b[i].state = State::Won;
            for m in b.iter_mut().filter(|m| m.state == State::Running) {
                m.state = State::Stopped;
                m.seconds = start.elapsed().as_secs_f64();
            }
            return Some((i, ran));
        }
        board.show();
    }
    None
}

/// The portfolio's defaults filled in, so that every member gets them.
fn with_defaults(spec: &ToolSpec, args: &Value) -> Value {
    let mut given: Map<String, Value> = args.as_object().cloned().unwrap_or_default();
    for (name, p) in &spec.params {
        if let (None | Some(Value::Null), Some(d)) = (given.get(name), &p.default) {
            given.insert(name.clone(), d.clone());
        }
    }
    Value::Object(given)
}

/// Puts member `i`'s end on the board; returns whether it decides: a decisive verdict from a
/// run that ended by itself, whatever its exit code (a solver that reports an error about one
/// command, answers the next and exits 1 has answered), not stopped nor out of time.
fn ended(board: &Board, i: usize, ran: &Ran, spec: &ToolSpec, start: Instant) -> bool {
    let decisive = !ran.cancelled
        && !ran.timed_out
        && matches!((&spec.verdict, &ran.verdict), (Some(v), Some(w)) if v.is_decisive(w));
    let mut b = board.lock();
    let m = &mut b[i];
    m.verdict.clone_from(&ran.verdict);
    m.code = ran.code;
    m.confined = ran.result.structured_content.as_ref().and_then(|s| {
        let c = s.get("confined")?.clone();
        Some((c, s.get("notConfined").cloned().unwrap_or(Value::Null)))
    });
    m.seconds = start.elapsed().as_secs_f64();
    m.state = if ran.timed_out {
        State::TimedOut
    } else if ran.cancelled {
        State::Stopped
    } else if ran.success {
        State::Finished
    } else {
        State::Failed
    };
    decisive
}

/// A member's row in the portfolio's `structuredContent.members`.
fn member_row(m: &Member) -> Value {
    let mut o = json!({"tool": m.tool, "state": m.state.word(),
                       "seconds": (m.seconds * 1000.0).round() / 1000.0, "call": m.call});
    if let Some(v) = &m.verdict {
        o["verdict"] = json!(v);
    }
    if let Some(c) = m.code {
        o["exitCode"] = json!(c);
    }
    if let Some((confined, not)) = &m.confined {
        o["confined"] = confined.clone();
        if !not.is_null() {
            o["notConfined"] = not.clone();
        }
    }
    o
}

/// The portfolio's result: the winner's, or every member's state.
fn answer(
    spec: &ToolSpec,
    members: &[Member],
    winner: Option<(usize, Ran)>,
    timed_out: bool,
) -> CallToolResult {
    let list: Vec<Value> = members.iter().map(member_row).collect();
    let mut text = match (&winner, timed_out) {
        (Some((i, ran)), _) => format!(
            "{}: {} won with {} after {:.2} s; the other members were stopped.\n",
            spec.name,
            members[*i].tool,
            ran.verdict.as_deref().unwrap_or("?"),
            members[*i].seconds
        ),
        (None, true) => format!(
            "{} timed out after {:.1} s: every member was stopped, none decided.\n",
            spec.name,
            spec.timeout.as_secs_f64()
        ),
        (None, false) => format!("{}: no member decided.\n", spec.name),
    };
    for m in members {
        let _ = write!(text, "- {}: {}", m.tool, m.state.word());
        if let Some(v) = &m.verdict {
            let _ = write!(text, ", verdict {v}");
        }
        if let Some(c) = m.code {
            let _ = write!(text, ", exit {c}");
        }
        let _ = writeln!(text, ", {:.2} s (call {})", m.seconds, m.call);
    }
    let _ = writeln!(
        text,
        "The output tool reads each member's output, as the output spool kept it, by its call id."
    );
    let mut structured = json!({ "members": list });
    let mut content = vec![];
    if let Some((i, ran)) = winner {
        structured["winner"] = json!(members[i].tool);
        if let Some(v) = &ran.verdict {
            structured["verdict"] = json!(v);
        }
        if let Some(out) = ran
            .result
            .structured_content
            .as_ref()
            .and_then(|s| s.get("stdout"))
        {
            structured["stdout"] = out.clone();
        }
        let _ = writeln!(text, "--- {}'s output ---", members[i].tool);
        for c in ran.result.content {
            match c {
                Content::Text { text: t, .. } if content.is_empty() => text.push_str(&t),
                other => content.push(other),
            }
        }
    }
    content.insert(0, Content::text(text));
    CallToolResult {
        content,
        structured_content: Some(structured),
        is_error: timed_out,
        meta: None,
    }
}
