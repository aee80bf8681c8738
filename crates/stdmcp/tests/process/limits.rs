//! Resource limits applied before exec: CPU time, file size, memory, niceness.

use stdmcp::process::{Limits, Outcome};

use crate::runs::{run_plain, sh};
use crate::support::temp_dir;

fn limited(script: &str, limits: Limits) -> Outcome {
    let mut s = sh(script);
    s.limits = limits;
    run_plain(&s)
}

#[test]
fn cpu_limit_stops_a_busy_loop_with_sigxcpu() {
    let o = limited(
        "exec sh -c 'while :; do :; done'",
        Limits::default().with_cpu_seconds(1),
    );
    assert_eq!(o.signal, Some(libc::SIGXCPU), "{o:?}");
}

#[test]
fn file_size_limit_stops_a_big_write() {
    let dir = temp_dir("fsize");
    let file = dir.join("big");
    let o = limited(
        &format!("head -c 3000000 /dev/zero > '{}'; echo $?", file.display()),
        Limits::default().with_max_file_size_mb(1),
    );
    let size = std::fs::metadata(&file).map(|m| m.len());
    let _ = std::fs::remove_dir_all(&dir);
    // 128 + SIGXFSZ: head was killed at the limit.
    assert_eq!(o.stdout.text().trim(), (128 + libc::SIGXFSZ).to_string());
    assert_eq!(size.unwrap(), 1024 * 1024);
}

#[test]
fn memory_limit_makes_a_big_allocation_fail() {
    let big = "python3 -c 'bytearray(512 * 1024 * 1024)' 2>&1; echo exit $?";
    let o = limited(big, Limits::default().with_max_memory_mb(200));
    let text = o.stdout.text();
    assert!(
        text.contains("MemoryError") && text.contains("exit 1"),
        "{text}"
    );
    // Without the limit the same allocation succeeds.
    assert!(limited(big, Limits::default())
        .stdout
        .text()
        .contains("exit 0"));
}

#[test]
fn nice_is_applied_before_exec() {
    let o = limited(
        "cut -d' ' -f19 /proc/self/stat",
        Limits::default().with_nice(11),
    );
    assert_eq!(o.stdout.text().trim(), "11");
}
