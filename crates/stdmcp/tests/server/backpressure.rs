//! Flow control over real pipes: a client that stops reading, or reads slowly while the
//! server shuts down (the `everything` example's `flood` tool).
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

use std::io::Write;
use std::thread;
use std::time::{Duration, Instant};

use crate::support::paced::{check_progress, Client, Pace};
use crate::support::{send_signal, PATIENCE};
use serde_json::json;

const MIB: u64 = 1 << 20;

/// A `/proc/PID/status` figure in bytes (`VmRSS`, `VmHWM`).
fn vm(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(key)).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// Done-when of the hardening issue: a client that stops reading for 20 s while ten tools
/// flood progress, log messages and large results leaves the server under 64 MiB, and gets
/// every result and every log message once it reads again.
#[test]
fn a_client_that_stops_reading_bounds_the_server_and_loses_nothing() {
    const CALLS: i64 = 10;
    const LOGS: usize = 100;
    const RESULT: usize = 256 * 1024;
    const CEILING: u64 = 64 * MIB;
    let mut c = Client::start(&[]);
    c.handshake();
    c.pace(Pace::Stopped);
    let pid = c.child.id();
    let idle = vm(pid, "VmRSS");
    for id in 1..=CALLS {
        let args = json!({"progress": 20_000, "message_bytes": 1000, "logs": LOGS, "log_bytes": 16 * 1024, "result_bytes": RESULT});
        c.call(id, args, Some(&format!("f{id}")));
    }
    // The stall: watch the server's memory the whole time (failing at once past the ceiling,
    // rather than letting an unbounded server eat the machine).
    let stall_end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < stall_end {
        let rss = vm(pid, "VmRSS");
        assert!(
            rss < CEILING,
            "server RSS {} MiB while the client was not reading",
            rss / MIB
        );
        thread::sleep(Duration::from_millis(50));
    }
    let peak = vm(pid, "VmHWM");
    eprintln!(
        "server RSS: idle {:.1} MiB, peak during the 20 s stall {:.1} MiB",
        idle as f64 / MIB as f64,
        peak as f64 / MIB as f64
    );
    assert!(peak < CEILING, "peak RSS {} MiB", peak / MIB);
    c.pace(Pace::Full);
    for id in 1..=CALLS {
        let r = c.recv_where("a flood result", |m| m["id"] == id);
        assert_eq!(
            r["result"]["content"][0]["text"].as_str().unwrap().len(),
            RESULT
        );
    }
    c.stdin = None;
    let (all, status) = c.read_to_exit();
    assert!(status.success());
    let logs = all
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .count();
    assert_eq!(logs, LOGS * CALLS as usize, "log messages were lost");
    let progress = check_progress(&all);
    assert_eq!(
        progress.len(),
        CALLS as usize,
        "every call reported progress"
    );
}

/// The reproducer of the hardening issue: a client reading 64 KiB every 30 ms while a tool
/// floods progress and six 1 MiB results are queued; SIGTERM. The client must receive whole
/// frames only, and every result that was computed.
#[test]
fn a_slow_reader_at_sigterm_gets_whole_frames_and_every_result() {
    // A generous drain: it ends as soon as the calls end, and they end on their own.
    // A generous stall timeout too: this client keeps reading, however loaded the machine.
    let mut c = Client::start(&[
        ("STDMCP_DRAIN_MS", "10000"),
        ("STDMCP_FLUSH_STALL_MS", "10000"),
    ]);
    c.handshake();
    c.pace(Pace::Slow {
        bytes: 64 * 1024,
        every: Duration::from_millis(30),
    });
    // The big results are asked for first: the server reads requests in order, so once call 1
    // reports progress all seven were read before the SIGTERM (after it, a new request is
    // refused), however late the reader thread runs on a loaded machine.
    for id in 2..=7 {
        c.call(id, json!({"result_bytes": 1 << 20}), None);
    }
    c.call(1, json!({"progress": 100_000}), Some("p"));
    c.recv_where("the first progress", |m| {
        m["params"]["progressToken"] == "p"
    });
    send_signal(c.child.id() as i32, 15);
    let (all, status) = c.read_to_exit();
    assert!(status.success(), "{status:?}");
    for id in 1..=7 {
        assert!(
            all.iter()
                .any(|m| m["id"] == id && m.get("result").is_some()),
            "the result of call {id} was lost"
        );
    }
    for id in 2..=7 {
        let r = all.iter().find(|m| m["id"] == id).unwrap();
        assert_eq!(
            r["result"]["content"][0]["text"].as_str().unwrap().len(),
            1 << 20
        );
    }
    check_progress(&all);
}

/// A client that reads nothing at all and sends SIGTERM: workers blocked on the full queue
/// are released by the cancel, and the server gives up on stdout once it accepted nothing for
/// the stall timeout, instead of hanging until SIGKILL.
#[test]
fn sigterm_with_a_client_that_reads_nothing_still_exits() {
    let mut c = Client::start(&[
        ("STDMCP_DRAIN_MS", "200"),
        ("STDMCP_FLUSH_STALL_MS", "500"),
        ("STDMCP_MAX_OUTGOING_BYTES", "65536"),
    ]);
    c.handshake();
    c.pace(Pace::Stopped);
    for id in 1..=4 {
        let args = json!({"progress": 1000, "logs": 1000, "log_bytes": 4096});
        c.call(id, args, Some(&format!("s{id}")));
    }
    // Proof that the queue is full and the workers wait: the server's stdout is not being
    // read, so its writer is stuck; wait until the log traffic has filled the pipe and the
    // queue (the writer thread blocks in write).
    let pid = c.child.id();
    let deadline = Instant::now() + PATIENCE;
    while !writer_blocked(pid) {
        assert!(Instant::now() < deadline, "the writer never blocked");
        thread::sleep(Duration::from_millis(10));
    }
    send_signal(pid as i32, 15);
    let status = loop {
        if let Some(s) = c.child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the server did not exit");
        thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status:?}");
}

/// True when the server's writer thread sleeps in a pipe write.
fn writer_blocked(pid: u32) -> bool {
    thread_waits(pid, "stdmcp-writer", "pipe_write")
}

/// True when the server's thread `name` sleeps in a kernel function containing `wchan`.
fn thread_waits(pid: u32, name: &str, wchan: &str) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|t| {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let at = std::fs::read_to_string(t.path().join("wchan")).unwrap_or_default();
        comm.trim() == name && at.contains(wchan)
    })
}

/// A client that sends requests without reading the answers: the reader answers them on
/// its own thread, so it is what must stop, at twice the queue bound (the client's writes
/// then block, as on any pipe), and every answer arrives once the client reads.
#[test]
fn a_client_that_writes_without_reading_pauses_the_reader() {
    const LISTS: i64 = 3000; // about 14 MB of answers
    const CEILING: u64 = 12 * MIB;
    let mut c = Client::start(&[("STDMCP_MAX_OUTGOING_BYTES", "65536")]);
    c.handshake();
    c.pace(Pace::Stopped);
    let mut stdin = c.stdin.take().unwrap();
    let sender = thread::spawn(move || {
        for id in 1..=LISTS {
            let r = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
            // Blocks while the server's reader pauses; fails only if the server died.
            stdin.write_all(format!("{r}\n").as_bytes()).unwrap();
        }
        stdin
    });
    let pid = c.child.id();
    let deadline = Instant::now() + PATIENCE;
    while !thread_waits(pid, "stdmcp-reader", "futex") {
        let rss = vm(pid, "VmRSS");
        assert!(rss < CEILING, "server RSS {} MiB", rss / MIB);
        assert!(Instant::now() < deadline, "the reader never paused");
        thread::sleep(Duration::from_millis(10));
    }
    let peak = vm(pid, "VmHWM");
    eprintln!(
        "peak RSS with the reader paused: {:.1} MiB",
        peak as f64 / MIB as f64
    );
    assert!(peak < CEILING, "peak RSS {} MiB", peak / MIB);
    c.pace(Pace::Full);
    drop(sender.join().unwrap()); // all sent: close stdin
    let (all, status) = c.read_to_exit();
    assert!(status.success());
    let answered = all
        .iter()
        .filter(|m| m["result"]["tools"].is_array())
        .count();
    assert_eq!(answered as i64, LISTS);
}
