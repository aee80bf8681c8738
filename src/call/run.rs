//! Running a manifest tool: plan, run through the process runner, report progress from its
//! output, and build the result (text first for the reader, structured for programs).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::hooks::Hooks;
use super::plan::{plan, Plan};
use super::verdict::Tracker;
use crate::spec::confine::Rules;
use crate::spec::{remote, ArgPart, Cwd, ParamType, ProgressLines, ToolSpec};
use crate::spool::{stream_name as spool_name, Entry, Kept};
use stdmcp::beneath::{beneath, Dir};
use stdmcp::mcp::{CallToolResult, Content};
use stdmcp::process::confine::{Confinement, Mode};
use stdmcp::process::{self, Outcome, RunError, RunSpec, Stream};
use stdmcp::{CancelReason, CancelToken};
use stdmcp::{Ctx, Reporter};

/// Runs one call of a manifest tool.
pub(crate) fn call(
    ctx: &Ctx,
    spec: &ToolSpec,
    roots: &BTreeMap<String, PathBuf>,
    args: &serde_json::Value,
) -> CallToolResult {
    let call_id = super::new_call_id();
    let how = How {
        cancel: ctx.cancel_token().clone(),
        call_id: call_id.clone(),
        // The call's deadline is the tool's (`ToolDef::timeout`, set in `into_server`): the
        // peer fires it and the runner reports the cancel as a timeout.
        timeout: None,
        on_line: line_handler(ctx.reporter(), spec.progress.clone()),
    };
    let result = execute(spec, roots, args, how).result;
    ended(ctx, spec, args, &call_id);
    result
}

/// The run `call_id` of `spec` with `args` ended: its kept output (`output://CALL/…`) is
/// final and its logs (`log://…`) are as it left them; a client subscribed to any of them
/// is told (`notifications/resources/updated`, handshake era).
pub(super) fn ended(ctx: &Ctx, spec: &ToolSpec, args: &serde_json::Value, call_id: &str) {
    let output = format!("output://{call_id}/");
    let logs = crate::logs::tools::updated_by(spec, args);
    ctx.resources_updated(|uri| uri.starts_with(&output) || logs(uri));
}

/// How one run is made: its cancel token, call id, own deadline (if the peer does not fire
/// one), and what each output line feeds besides the verdict.
pub(crate) struct How {
    pub cancel: stdmcp::CancelToken,
    pub call_id: String,
    pub timeout: Option<Duration>,
    pub on_line: process::LineFn,
}

/// How one run ended, for a portfolio.
pub(crate) struct Ran {
    pub result: CallToolResult,
    pub verdict: Option<String>,
    /// Exit code, if the program exited.
    pub code: Option<i32>,
    /// Exited with a success code.
    pub success: bool,
    pub timed_out: bool,
    pub cancelled: bool,
}

/// Plans and runs one call of `spec` through the process runner, and builds its result.
pub(crate) fn execute(
    spec: &ToolSpec,
    roots: &BTreeMap<String, PathBuf>,
    args: &serde_json::Value,
    how: How,
) -> Ran {
    let How {
        cancel,
        call_id,
        timeout,
        on_line,
    } = how;
    let values = remote::built_in(&call_id, spec.timeout);
    let (mut plan, cwd_dir, confinement) = match planned(spec, roots, args, &values) {
        Ok(planned) => planned,
        Err(why) => {
            return Ran::failed(CallToolResult::error(format!(
                "Refused: {why}. Nothing was run."
            )))
        }
    };
    plan.env
        .push(("STDMCP_CALL_ID".into(), call_id.clone().into()));
    let verdict = super::verdict::for_call(spec, roots, &plan.values, &cancel);
    let hooks = Hooks::new(spec, &call_id, values, &plan.env);
    let spool = crate::spool::Spool::global().begin(&call_id);
    let logs = crate::logs::Snapshot::take(spec, roots, args);
    let mut run = RunSpec::new(spec.program.clone())
        .kill_grace(spec.kill_grace)
        .output_cap(spec.max_output_bytes)
        .limits(spec.limits);
    run.args = plan.argv;
    run.cwd = plan.cwd;
    run.cwd_dir = cwd_dir.map(Arc::new);
    run.env = plan.env;
    run.stdin = plan.stdin;
    run.timeout = timeout;
    run.line_buffered = spec.line_buffered;
    run.confine = Some(confinement);
    run.sink = spool
        .clone()
        .map(|e| Arc::new(e) as Arc<dyn process::OutputSink>);
    let tracker = Tracker::default();
    let on_line = with_hooks_and_verdict(verdict, on_line, hooks.as_ref(), &tracker);
    let mut pid = None;
    let result = process::run(&run, &cancel, &mut |p| pid = Some(p), on_line);
    drop(run.cwd_dir);
    let abandoned = match &result {
        Ok(o) => o.started && (o.cancelled || o.timed_out),
        Err(RunError::Spawn { .. }) => false,
        Err(_) => true,
    };
    let note = hooks.and_then(|h| h.finish(abandoned));
    log::debug!(
        "{} (pid {pid:?}) ended: {:?}",
        spec.name,
        result.as_ref().map(|o| (o.code, o.signal, o.timed_out))
    );
    let verdict = tracker.get();
    let mut ran = match result {
        Ok(outcome) => {
            let mut r = result_of(spec, &outcome, verdict.as_deref());
            cut_note(&mut r, &call_id, &outcome, spool.as_ref());
            if r.is_error {
                if let Some(logs) = &logs {
                    logs.add_changed(&mut r, &tails_stop(&cancel));
                }
            }
            Ran::of(r, verdict, &outcome)
        }
        Err(e) => Ran::failed(CallToolResult::error(run_error(spec, e))),
    };
    if let Some(note) = note {
        ran.result.content.push(Content::text(note));
    }
    if pid.is_some() && stdmcp::process::watchdog_missing() {
        ran.result.content.push(Content::text(WITHOUT_WATCHDOG));
    }
    ran
}

/// The note of a call that ran while the process watchdog was missing.
const WITHOUT_WATCHDOG: &str =
    "This call ran without the server's process watchdog, which could not be started \
     (the server's log says why; the next call tries again): had the server been \
     killed, processes the call started outside its process group could have outlived it.";

/// The plan of a call (its built-in values expanded in the tool's arguments), the working
/// directory it starts in, checked and held open until the program has started, and its
/// confinement; or why the call is refused.
fn planned(
    spec: &ToolSpec,
    roots: &BTreeMap<String, PathBuf>,
    args: &serde_json::Value,
    values: &BTreeMap<String, String>,
) -> Result<(Plan, Option<Dir>, Confinement), String> {
    let expanded;
    let template = if ArgPart::uses_built_in(&spec.args) {
        expanded = ToolSpec {
            args: ArgPart::expand_built_in(&spec.args, values),
            ..spec.clone()
        };
        &expanded
    } else {
        spec
    };
    let plan = plan(template, roots, args)?;
    let cwd_dir = held_cwd(spec, roots, plan.cwd.as_deref())?;
    let confinement = confinement(&spec.confine, &plan.writable)?;
    Ok((plan, cwd_dir, confinement))
}

/// Chains the hooks' and the verdict tracker's (with the rules that apply to this call)
/// line handlers in front of `on_line`.
fn with_hooks_and_verdict(
    verdict: Option<crate::spec::verdict::Verdict>,
    mut on_line: process::LineFn,
    hooks: Option<&Arc<Hooks>>,
    tracker: &Tracker,
) -> process::LineFn {
    if let Some(h) = hooks {
        let (h, inner) = (Arc::clone(h), on_line);
        on_line = Arc::new(move |stream, line| {
            h.on_line(stream, line);
            inner(stream, line);
        });
    }
    if let Some(v) = verdict {
        let (t, inner) = (tracker.clone(), on_line);
        on_line = Arc::new(move |stream, line| {
            t.feed(&v, line);
            inner(stream, line);
        });
    }
    on_line
}

/// The confinement of one run under `rules`, with the places its writable path arguments
/// name (`writable`: root and checked path), each opened beneath its root so
/// that a name swapped since the check gives nothing (a missing file: the directory it would
/// be made in); or why the call is refused.
pub(crate) fn confinement(
    rules: &Rules,
    writable: &[(PathBuf, PathBuf)],
) -> Result<Confinement, String> {
    let mut c = rules.confinement();
    if c.mode == Mode::Off {
        return Ok(c);
    }
    for (root, path) in writable {
        let place = match path.symlink_metadata() {
            Ok(_) => path.as_path(),
            Err(_) => path.parent().unwrap_or(root),
        };
        let fd = beneath(root, place)
            .ok_or_else(|| format!("{} is outside its root", place.display()))
            .and_then(|rel| {
                Dir::open(root)
                    .and_then(|r| r.place(rel))
                    .map_err(|e| format!("{} cannot be made writable: {e}", path.display()))
            })?;
        c.write_held.push(Arc::new(fd));
    }
    Ok(c)
}

/// What a call's text says when the runner could not run its program.
fn run_error(spec: &ToolSpec, e: RunError) -> String {
    match e {
        e @ RunError::Confinement { .. } => format!("Refused: {e}. Nothing was run."),
        RunError::Spawn { program, source } => format!(
            "{} could not be started ({}): {source}",
            spec.name,
            program.display()
        ),
        e => format!("{} failed to run: {e}", spec.name),
    }
}

impl Ran {
    /// A run that ended with `outcome`, answered with `result`.
    fn of(result: CallToolResult, verdict: Option<String>, outcome: &Outcome) -> Ran {
        Ran {
            success: !result.is_error,
            result,
            verdict,
            code: outcome.code,
            timed_out: outcome.timed_out,
            cancelled: outcome.cancelled,
        }
    }

    /// A run refused or not started.
    fn failed(result: CallToolResult) -> Ran {
        Ran {
            result,
            verdict: None,
            code: None,
            success: false,
            timed_out: false,
            cancelled: false,
        }
    }
}

/// When reading the tails of a failed call's logs gives up: when the client cancelled the
/// call or the server shuts down (nobody reads the result), not at the deadline, whose
/// result says it timed out and carries the tails (three of 4 KiB: bounded anyway).
fn tails_stop(cancel: &CancelToken) -> crate::spool::Stop {
    match cancel.reason() {
        Some(CancelReason::Deadline) => crate::spool::Stop::never(),
        _ => crate::spool::Stop::new(Some(cancel.clone()), None),
    }
}

/// The working directory `cwd` (a `cwd` parameter's checked value) opened beneath its root,
/// so that the program starts in the directory the check resolved even if a name on the way
/// is swapped meanwhile (README "Security model"); `None` for a fixed `cwd` or none.
fn held_cwd(
    spec: &ToolSpec,
    roots: &BTreeMap<String, PathBuf>,
    cwd: Option<&Path>,
) -> Result<Option<Dir>, String> {
    let (Some(Cwd::Param(p)), Some(cwd)) = (&spec.cwd, cwd) else {
        return Ok(None);
    };
    let Some(ParamType::Path { root, .. }) = spec.params.get(p).map(|p| &p.kind) else {
        return Ok(None);
    };
    let root = roots
        .get(root)
        .ok_or("the working directory's root is missing")?;
    let rel = beneath(root, cwd).ok_or_else(|| format!("{} is outside its root", cwd.display()))?;
    Dir::open(root)
        .and_then(|r| r.dir(rel))
        .map(Some)
        .map_err(|e| format!("the working directory cannot be used: {e}"))
}

/// `confined` (everything the tool's rules ask was enforced by the kernel) and, when it is
/// false, `notConfined`: the parts that were not (README "Security model").
pub(crate) fn confined_fields(
    structured: &mut serde_json::Value,
    report: &process::confine::Report,
) {
    structured["confined"] = json!(report.confined());
    if !report.confined() {
        let parts: Vec<&str> = report.missing.iter().map(|p| p.name()).collect();
        structured["notConfined"] = json!(parts);
    }
}

/// Output lines feed progress: declared progress lines become notifications; any other line
/// becomes the message of the next heartbeat: the latest complete line of either stream. A
/// line only fills the call's status slot, which the peer reads when the heartbeat fires (no
/// thread, no throttle, no lock of the peer per line).
pub(super) fn line_handler(reporter: Reporter, progress: Option<ProgressLines>) -> process::LineFn {
    if !reporter.wants_progress() {
        return Arc::new(|_, _| {});
    }
    Arc::new(move |stream, line| {
        if let Some(p) = &progress {
            if stream == p.stream {
                if let Some(rest) = line.strip_prefix(p.prefix.as_str()) {
                    if let Some((value, total, message)) = parse_progress(rest) {
                        reporter.progress(value, total, message);
                        return;
                    }
                }
            }
        }
        let line = line.trim();
        if !line.is_empty() {
            reporter.set_status(line);
        }
    })
}

/// `progress[/total] [message]`.
pub(crate) fn parse_progress(s: &str) -> Option<(f64, Option<f64>, Option<&str>)> {
    let s = s.trim_start();
    let (head, message) = match s.split_once(char::is_whitespace) {
        Some((h, m)) => (h, Some(m.trim()).filter(|m| !m.is_empty())),
        None => (s, None),
    };
    let (value, total) = match head.split_once('/') {
        Some((v, t)) => (v.parse().ok()?, Some(t.parse().ok()?)),
        None => (head.parse().ok()?, None),
    };
    Some((value, total, message))
}

/// When a stream was cut, says so at the end of the text, names the call and how to read the
/// rest (the `output` tool), and links the kept streams.
fn cut_note(r: &mut CallToolResult, call_id: &str, o: &Outcome, spool: Option<&Entry>) {
    if let Some(s) = r.structured_content.as_mut() {
        s["callId"] = json!(call_id);
    }
    let cut: Vec<(Stream, &process::Captured)> =
        [(Stream::Stdout, &o.stdout), (Stream::Stderr, &o.stderr)]
            .into_iter()
            .filter(|(_, c)| c.truncated())
            .collect();
    if cut.is_empty() {
        return;
    }
    let mut note = String::from("\n[Output was cut:");
    for (s, c) in &cut {
        note.push_str(&format!(
            " {} {} of {} bytes shown;",
            spool_name(*s),
            c.total_bytes() - c.omitted_bytes(),
            c.total_bytes()
        ));
    }
    let mut links = Vec::new();
    match spool {
        Some(entry) if entry.broken() => {
            note.push_str(&format!(
                " {}, so the cut part is lost",
                entry.why_not_kept()
            ));
        }
        Some(entry) => {
            // A stream the spool kept only a prefix of is never called complete.
            let kept: Vec<(Stream, Kept)> = cut
                .iter()
                .map(|(s, c)| {
                    let k = entry.kept(*s);
                    let cut = k.cut || k.bytes < c.total_bytes();
                    (*s, Kept { cut, ..k })
                })
                .collect();
            let what = if kept.iter().any(|(_, k)| k.cut) {
                "part of the output"
            } else {
                "the complete output"
            };
            note.push_str(&format!(
                " {what} of call {call_id} is kept: read it with the `output` tool, "
            ));
            let stream = spool_name(cut[0].0);
            let example = format!(r#"{{"call": "{call_id}", "stream": "{stream}", "offset": 0}}"#);
            note.push_str(&format!(r#"e.g. {example} (or "grep": a pattern)"#));
            for (s, k) in &kept {
                if k.cut {
                    note.push_str(&format!(
                        "; only the first {} bytes of its {} were kept (the output spool is full, or could not be written)",
                        k.bytes,
                        spool_name(*s)
                    ));
                }
                links.push(crate::spool::tool::link(call_id, *s, k));
            }
        }
        None => note.push_str(&format!(
            " {}, so the cut part is lost",
            crate::spool::TURNED_OFF
        )),
    }
    note.push_str(".]");
    if let Some(Content::Text { text, .. }) = r.content.first_mut() {
        text.push_str(&note);
    }
    r.content.extend(links);
}

/// The first line of a run's text when it did not simply succeed: why.
fn verdict_of(spec: &ToolSpec, o: &Outcome, success: bool) -> Option<String> {
    if !o.started {
        Some(format!(
            "{} never started: {} before it could start; nothing was run.",
            spec.name,
            if o.timed_out {
                "its time limit ran out"
            } else {
                "it was cancelled"
            }
        ))
    } else if o.timed_out {
        Some(format!(
            "{} timed out after {}; its process group was killed.",
            spec.name,
            stdmcp_proto::human::setting(spec.timeout)
        ))
    } else if o.cancelled {
        Some(format!(
            "{} was cancelled; its process group was killed.",
            spec.name
        ))
    } else if let Some(libc::SIGKILL) = o.signal {
        // Timeouts and cancels are said above: this SIGKILL did not come from the server.
        let cpu = spec.limits.cpu_seconds.map_or_else(String::new, |c| {
            format!(", or its CPU time limit ({c} s, cpuSeconds) ran out")
        });
        Some(format!(
            "{} was killed by signal 9 (SIGKILL), not by the server: perhaps out of memory{cpu}.",
            spec.name
        ))
    } else if let Some(sig) = o.signal {
        Some(format!("{} was killed by signal {sig}.", spec.name))
    } else if !success {
        Some(format!(
            "{} exited with code {}.",
            spec.name,
            o.code.map_or_else(|| "?".into(), |c| c.to_string())
        ))
    } else {
        None
    }
}

fn result_of(spec: &ToolSpec, o: &Outcome, verdict_word: Option<&str>) -> CallToolResult {
    let stdout = o.stdout.text();
    let stderr = o.stderr.text();
    let success =
        !o.timed_out && !o.cancelled && o.code.is_some_and(|c| spec.success_codes.contains(&c));
    let verdict = verdict_of(spec, o, success);
    let mut text = String::new();
    if let Some(v) = &verdict {
        text.push_str(v);
        text.push('\n');
    }
    text.push_str(&stdout);
    let show_stderr = !stderr.trim().is_empty() && (verdict.is_some() || stdout.trim().is_empty());
    if show_stderr {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("--- stderr ---\n");
        text.push_str(&stderr);
    }
    if text.trim().is_empty() {
        text = "(no output)".into();
    }
    if let Some(v) = verdict_word {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("Verdict: {v}\n"));
    }
    let mut structured = json!({
        "exitCode": o.code,
        "signal": o.signal,
        "stdout": stdout,
        "stderr": stderr,
        "durationMs": u64::try_from(o.duration.as_millis()).unwrap_or(u64::MAX),
        "timedOut": o.timed_out,
        "truncated": {"stdout": o.stdout.omitted_bytes(), "stderr": o.stderr.omitted_bytes()},
    });
    if let Some(v) = verdict_word {
        structured["verdict"] = json!(v);
    }
    if let Some(report) = &o.confined {
        confined_fields(&mut structured, report);
    }
    CallToolResult {
        content: vec![Content::text(text)],
        structured_content: Some(structured),
        is_error: !success,
        meta: None,
    }
}

#[cfg(test)]
mod tests {
    use super::parse_progress;

    #[test]
    fn progress_lines() {
        assert_eq!(
            parse_progress("3/10 compiling x"),
            Some((3.0, Some(10.0), Some("compiling x")))
        );
        assert_eq!(parse_progress(" 0.5"), Some((0.5, None, None)));
        assert_eq!(parse_progress("x/10"), None);
        assert_eq!(parse_progress("3/y"), None);
    }
}
