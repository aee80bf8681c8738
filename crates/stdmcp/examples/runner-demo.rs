//! Test helper: runs one program through `process::run` and reports on its
//! stdout, line by line (flushed):
//!   `spawned PID WATCHDOG_PID`, then `out LINE` / `err LINE` for the
//!   child's output, then `exit CODE SIGNAL` (`-` for none).
//! The child gets only `PATH` in its environment.
//! Usage: runner-demo PROGRAM [ARG...]

use std::io::Write;
use std::sync::Arc;

use stdmcp::process::{run, RunSpec, Stream};
use stdmcp::CancelToken;

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn main() {
    let mut args = std::env::args_os().skip(1);
    let Some(program) = args.next() else {
        eprintln!("usage: runner-demo PROGRAM [ARG...]");
        std::process::exit(2);
    };
    let spec = RunSpec::new(program)
        .args(args)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin");
    let cancel = CancelToken::new();
    let on_line = Arc::new(|stream: Stream, line: &str| {
        let tag = match stream {
            Stream::Stdout => "out",
            Stream::Stderr => "err",
        };
        say(&format!("{tag} {line}"));
    });
    let mut on_spawn = |pid: u32| {
        let wd = stdmcp::process::watchdog_pid().map_or("-".to_string(), |p| p.to_string());
        say(&format!("spawned {pid} {wd}"));
    };
    match run(&spec, &cancel, &mut on_spawn, on_line) {
        Ok(o) => {
            let show = |v: Option<i32>| v.map_or("-".to_string(), |v| v.to_string());
            say(&format!("exit {} {}", show(o.code), show(o.signal)));
        }
        Err(e) => {
            eprintln!("runner-demo: {e}");
            std::process::exit(1);
        }
    }
}
