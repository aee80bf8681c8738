//! What a program starts with: exactly the spec's environment (and the call's marker), its
//! working directory, no descriptor of the parent's; and clear errors when it cannot start.

use std::collections::BTreeSet;
use std::process::Command;

use stdmcp::process::{run, RunError, RunSpec};
use stdmcp::CancelToken;

use crate::runs::{fixture, no_lines, run_plain, runner_demo, sh, spec};

#[test]
fn environment_is_exactly_the_spec() {
    let mut s = spec("/usr/bin/env", &[]);
    s.env.push(("FOO".into(), "bar baz".into()));
    s.env.push(("EMPTY".into(), "".into()));
    let o = run_plain(&s);
    let mut got: BTreeSet<String> = o.stdout.text().lines().map(str::to_string).collect();
    // Plus the call's marker, which finds its processes (see `process::marker_instance`).
    let marker = format!("STDMCP_CALL={}.", stdmcp::process::marker_instance());
    let marked: Vec<String> = got
        .iter()
        .filter(|l| l.starts_with(&marker))
        .cloned()
        .collect();
    assert_eq!(marked.len(), 1, "{got:?}");
    got.remove(&marked[0]);
    let want: BTreeSet<String> = ["PATH=/usr/local/bin:/usr/bin:/bin", "FOO=bar baz", "EMPTY="]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(got, want);
}

#[test]
fn parent_environment_does_not_leak() {
    // The variable is set in the parent of the process that calls run().
    let out = Command::new(runner_demo())
        .arg("/usr/bin/env")
        .env("STDMCP_LEAK_CANARY", "tweet")
        .output()
        .expect("runner-demo");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("out PATH="), "{text}");
    assert!(!text.contains("STDMCP_LEAK_CANARY"), "{text}");
    assert!(text.contains("exit 0 -"), "{text}");
}

#[test]
fn cwd_is_applied() {
    let mut s = spec("/bin/pwd", &[]);
    s.cwd = Some("/tmp".into());
    assert_eq!(run_plain(&s).stdout.text(), "/tmp\n");
}

#[test]
fn parent_fds_do_not_leak() {
    // Opened WITHOUT O_CLOEXEC on purpose.
    // SAFETY: valid NUL-terminated path.
    let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY) };
    assert!(fd >= 3);
    let o = run_plain(&sh("ls /proc/$$/fd"));
    // SAFETY: closing the fd we opened.
    unsafe { libc::close(fd) };
    let fds: Vec<String> = o.stdout.text().lines().map(str::to_string).collect();
    assert!(!fds.contains(&fd.to_string()), "fd {fd} leaked: {fds:?}");
    assert_eq!(fds, ["0", "1", "2"]);
}

#[test]
fn spawn_failures_are_clear() {
    let err = |s: RunSpec| match run(&s, &CancelToken::new(), &mut |_| {}, no_lines()) {
        Err(e @ RunError::Spawn { .. }) => e.to_string(),
        other => panic!("expected a spawn error, got {other:?}"),
    };
    let msg = err(spec("/nonexistent/definitely-not-here", &[]));
    assert!(msg.contains("could not start program"), "{msg}");
    assert!(msg.contains("/nonexistent/definitely-not-here"), "{msg}");
    assert!(msg.contains("not found"), "{msg}");
    let msg = err(spec(fixture("not-executable.txt"), &[]));
    assert!(msg.contains("permission denied"), "{msg}");
    let mut s = spec("/bin/true", &[]);
    s.cwd = Some("/nonexistent/dir".into());
    let msg = err(s);
    assert!(msg.contains("working directory"), "{msg}");
}
