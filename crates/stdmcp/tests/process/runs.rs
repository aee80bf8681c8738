//! The programs and specs the tests run, and how they run them (at once, or on a thread of
//! their own with a cancel token and the stdout lines).

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

use stdmcp::process::{run, LineFn, Outcome, RunError, RunSpec, Stream};
use stdmcp::CancelToken;

use crate::support::{runtime_fixture, target_dir};

/// `tests/fixtures/process/NAME` (`tree.sh` and `big.sh`, which the command's manifest tests
/// run too, are [`runtime_fixture`]s).
pub(crate) fn fixture(name: &str) -> PathBuf {
    runtime_fixture("process").join(name)
}

/// The runner-demo example (built by `cargo test` with the other examples).
pub(crate) fn runner_demo() -> PathBuf {
    target_dir().join("examples/runner-demo")
}

pub(crate) fn spec(program: impl Into<PathBuf>, args: &[&str]) -> RunSpec {
    let mut s = RunSpec::new(program);
    s.args = args.iter().map(OsString::from).collect();
    s.env = vec![("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into())];
    s.timeout = Some(Duration::from_secs(30)); // safety net only
    s
}

pub(crate) fn sh(script: &str) -> RunSpec {
    spec("/bin/sh", &["-c", script])
}

pub(crate) fn no_lines() -> LineFn {
    Arc::new(|_, _| {})
}

/// An `on_line` that forwards stdout lines to a channel.
pub(crate) fn line_channel() -> (LineFn, Receiver<String>) {
    let (tx, rx) = mpsc::channel();
    let f: LineFn = Arc::new(move |s, l| {
        if s == Stream::Stdout {
            let _ = tx.send(l.to_string());
        }
    });
    (f, rx)
}

pub(crate) fn run_plain(spec: &RunSpec) -> Outcome {
    run(spec, &CancelToken::new(), &mut |_| {}, no_lines()).expect("run")
}

/// Start `run` on its own thread; returns the join handle, the token and
/// the stdout line channel.
pub(crate) fn run_in_thread(
    spec: RunSpec,
) -> (
    thread::JoinHandle<Result<Outcome, RunError>>,
    CancelToken,
    Receiver<String>,
) {
    let token = CancelToken::new();
    let (on_line, rx) = line_channel();
    let t = token.clone();
    let h = thread::spawn(move || run(&spec, &t, &mut |_| {}, on_line));
    (h, token, rx)
}
