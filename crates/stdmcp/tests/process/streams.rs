//! A run's streams and status: exit codes and signals, output lines as they come and the output
//! cap (head and tail), stdin bytes (or none), line-buffered programs.

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use stdmcp::process::{run, LineFn, RunError, Stream};
use stdmcp::{CancelReason, CancelToken};

use crate::procs::FAIL_AFTER;
use crate::runs::{line_channel, no_lines, run_plain, sh, spec};
use crate::support::runtime_fixture;

#[test]
fn exit_codes_and_signals() {
    let o = run_plain(&sh("exit 0"));
    assert_eq!((o.code, o.signal), (Some(0), None));
    let o = run_plain(&sh("echo oops >&2; exit 3"));
    assert_eq!((o.code, o.signal), (Some(3), None));
    assert_eq!(o.stderr.text(), "oops\n");
    let o = run_plain(&sh("kill -KILL $$"));
    assert_eq!((o.code, o.signal), (None, Some(libc::SIGKILL)));
    assert!(!o.cancelled && !o.timed_out);
}

#[test]
fn on_spawn_and_on_line_are_called() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = Arc::clone(&seen);
    let on_line: LineFn = Arc::new(move |s, l| {
        if let Ok(mut v) = s2.lock() {
            v.push((s, l.to_string()));
        }
    });
    let mut spawned = Vec::new();
    let o = run(
        &sh("echo one; echo two >&2; printf 'three'"),
        &CancelToken::new(),
        &mut |pid| spawned.push(pid),
        on_line,
    )
    .expect("run");
    assert_eq!(spawned, vec![o.pid]);
    let mut lines = seen.lock().expect("lock").clone();
    lines.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        lines,
        vec![
            (Stream::Stdout, "one".to_string()),
            (Stream::Stdout, "three".to_string()),
            (Stream::Stderr, "two".to_string()),
        ]
    );
    assert_eq!(o.stdout.text(), "one\nthree");
}

#[test]
fn output_is_capped_head_and_tail() {
    let mut s = spec(runtime_fixture("big.sh"), &[]);
    s.stdout_cap = 1000;
    let o = run_plain(&s);
    assert_eq!(o.code, Some(0));
    let total = 6 + 1_000_000 + 1 + 4;
    assert_eq!(o.stdout.total_bytes(), total);
    assert!(o.stdout.truncated());
    assert_eq!(o.stdout.omitted_bytes(), total - 1000);
    let text = o.stdout.text();
    assert!(text.starts_with("START\n0123456789\n"), "{text:.40}");
    let marker = format!("\n[... {} bytes omitted ...]\n", total - 1000);
    assert!(text.contains(&marker), "{text}");
    assert!(text.ends_with("\nEND\n"), "{text}");
    assert_eq!(text.len(), 1000 + marker.len());
}

#[test]
fn stdin_bytes_reach_the_child() {
    let mut s = spec("cat", &[]);
    s.stdin = Some(b"hello\nworld".to_vec());
    let o = run_plain(&s);
    assert_eq!(o.code, Some(0));
    assert_eq!(o.stdout.text(), "hello\nworld");

    // Larger than a pipe buffer, so writer and reader must run concurrently.
    let big: Vec<u8> = (0..1_000_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let mut s = spec("cat", &[]);
    s.stdin = Some(big.clone());
    s.stdout_cap = 2_000_000;
    let o = run_plain(&s);
    assert_eq!(o.stdout.total_bytes(), big.len() as u64);
    assert_eq!(o.stdout.kept_bytes(), big);
}

#[test]
fn no_stdin_means_immediate_eof() {
    let start = Instant::now();
    let o = run_plain(&spec("cat", &[]));
    assert_eq!(o.code, Some(0));
    assert!(!o.timed_out);
    assert_eq!(o.stdout.total_bytes(), 0);
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn child_stdin_closed_early_is_fine() {
    let mut s = sh("head -c 1 >/dev/null");
    s.stdin = Some(vec![b'x'; 4_000_000]);
    let o = run_plain(&s);
    assert_eq!(o.code, Some(0));
}

#[test]
fn line_buffered_output_arrives_before_the_program_ends() {
    // sed (C stdio) block-buffers its output into a pipe; its input stays open, so without
    // line buffering nothing would arrive before the cancel.
    let mut s = sh("(printf 'first\\n'; exec sleep 1000) | sed -e 's/^/got /'");
    s.line_buffered = true;
    let (on_line, lines) = line_channel();
    let token = CancelToken::new();
    let t = token.clone();
    let h = thread::spawn(move || run(&s, &t, &mut |_| {}, on_line));
    assert_eq!(lines.recv_timeout(FAIL_AFTER).expect("a line"), "got first");
    token.cancel(CancelReason::Client);
    assert!(h.join().expect("thread").expect("run").cancelled);
}

#[test]
fn line_buffered_program_not_found_is_a_spawn_error() {
    let mut s = spec("definitely-not-a-program-here", &[]);
    s.line_buffered = true;
    match run(&s, &CancelToken::new(), &mut |_| {}, no_lines()) {
        Err(e @ RunError::Spawn { .. }) => assert!(e.to_string().contains("not found"), "{e}"),
        other => panic!("expected a spawn error, got {other:?}"),
    }
}
