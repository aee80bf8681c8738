//! One call's remote-work hooks ([`crate::spec::remote`]): captures values from its first output
//! lines, keeps its `onCancel` command registered with the watchdog while it runs
//! ([`stdmcp::process::on_cancel`]), and runs that command through the runner when the call
//! is abandoned (cancelled, timed out, or stopped by the server's shutdown).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::spec::remote::{self, CAPTURE_LINES};
use crate::spec::ToolSpec;
use stdmcp::process::on_cancel::{Command, Registration};
use stdmcp::process::{self, RunSpec, Stream};
use stdmcp::CancelToken;

/// A call's hooks.
pub(super) struct Hooks {
    spec: Arc<ToolSpec>,
    env: Vec<(OsString, OsString)>,
    call_id: String,
    lines: [AtomicUsize; 2],
    state: Mutex<State>,
}

struct State {
    values: BTreeMap<String, String>,
    pending: Option<Registration>,
}

impl Hooks {
    /// Hooks for a call of `spec` with id `call_id` and environment `env` (also the
    /// `onCancel` command's); `None` when the tool has neither `capture` nor `onCancel`.
    pub(super) fn new(
        spec: &ToolSpec,
        call_id: &str,
        values: BTreeMap<String, String>,
        env: &[(OsString, OsString)],
    ) -> Option<Arc<Hooks>> {
        if spec.remote.capture.is_empty() && spec.remote.on_cancel.is_none() {
            return None;
        }
        let hooks = Hooks {
            spec: Arc::new(spec.clone()),
            env: env.to_vec(),
            call_id: call_id.to_owned(),
            lines: [AtomicUsize::new(0), AtomicUsize::new(0)],
            state: Mutex::new(State {
                values,
                pending: None,
            }),
        };
        hooks.register(&mut stdmcp::sync::lock(&hooks.state));
        Some(Arc::new(hooks))
    }

    /// The `onCancel` command with the values known so far; `None` while a captured value
    /// it names is missing.
    fn command(&self, values: &BTreeMap<String, String>) -> Option<Command> {
        let (program, template) = self.spec.remote.on_cancel.as_ref()?;
        let wanted: Vec<&str> = self
            .spec
            .remote
            .capture
            .iter()
            .flat_map(|re| re.capture_names().flatten())
            .collect();
        let args = template
            .iter()
            .map(|a| remote::expand(a, values, &wanted).map(OsString::from))
            .collect::<Option<Vec<_>>>()?;
        Some(Command::new(
            program.clone(),
            args,
            self.env.clone(),
            self.spec.remote.on_cancel_timeout,
        ))
    }

    fn register(&self, st: &mut State) {
        if let Some(cmd) = self.command(&st.values) {
            st.pending = Registration::register(&self.call_id, &cmd);
        }
    }

    /// Feeds one output line (only the first [`CAPTURE_LINES`] of each stream are looked at).
    pub(super) fn on_line(&self, stream: Stream, line: &str) {
        let n = &self.lines[usize::from(stream == Stream::Stderr)];
        if self.spec.remote.capture.is_empty() || n.fetch_add(1, Ordering::Relaxed) >= CAPTURE_LINES
        {
            return;
        }
        let found = remote::capture_line(&self.spec.remote.capture, line);
        if found.is_empty() {
            return;
        }
        let mut st = stdmcp::sync::lock(&self.state);
        let mut changed = false;
        for (k, v) in found {
            // The first value of a name wins: later output cannot redirect the cancel.
            if let std::collections::btree_map::Entry::Vacant(e) = st.values.entry(k) {
                log::debug!("call {}: captured {}={v}", self.call_id, e.key());
                e.insert(v);
                changed = true;
            }
        }
        if changed {
            self.register(&mut st);
        }
    }

    /// The call ended. If it was abandoned, runs `onCancel` (if it can be formed) and says
    /// how that went; in any case unregisters it from the watchdog.
    pub(super) fn finish(&self, abandoned: bool) -> Option<String> {
        let mut st = stdmcp::sync::lock(&self.state);
        let cmd = if abandoned {
            self.command(&st.values)
        } else {
            None
        };
        let note = match (abandoned, cmd) {
            (false, _) => None,
            (true, Some(cmd)) => Some(run(&cmd, &self.spec.confine)),
            (true, None) if self.spec.remote.on_cancel.is_some() => Some(
                "onCancel was not run: a value it needs was never captured from the output."
                    .to_owned(),
            ),
            (true, None) => None,
        };
        st.pending = None;
        note
    }
}

/// Runs an `onCancel` command through the runner, confined by its tool's rules; a sentence
/// on how it went.
fn run(cmd: &Command, rules: &crate::spec::confine::Rules) -> String {
    let mut spec = RunSpec::new(cmd.program.clone())
        .timeout(cmd.timeout)
        .kill_grace(std::time::Duration::from_millis(500))
        .output_cap(4096);
    spec.args = cmd.args.clone();
    spec.env = cmd.env.clone();
    spec.confine = Some(rules.confinement());
    let name = cmd
        .program
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    match process::run(&spec, &CancelToken::new(), &mut |_| {}, Arc::new(|_, _| {})) {
        Ok(o) if o.timed_out => format!(
            "onCancel ({name}) timed out after {}.",
            stdmcp_proto::human::setting(cmd.timeout)
        ),
        Ok(o) if o.code == Some(0) => format!(
            "onCancel ({name}) ran in {}.",
            stdmcp_proto::human::elapsed(o.duration)
        ),
        Ok(o) => format!(
            "onCancel ({name}) failed (exit code {:?}, signal {:?}): {}",
            o.code,
            o.signal,
            o.stderr.text().trim()
        ),
        Err(e) => format!("onCancel ({name}) could not run: {e}"),
    }
}
