//! The `stdmcp` command line: client commands against the `everything` example.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::common::{everything_bin, send_signal, stdmcp_bin, wait_gone};

fn stdmcp(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(stdmcp_bin())
        .args(args)
        .arg("--")
        .arg(everything_bin())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn call_prints_content_and_exit_codes_tell_what_happened() {
    assert_eq!(
        stdmcp(&["call", "add", r#"{"a": 2, "b": 3}"#]),
        (0, "{\"sum\":5}\n".into(), String::new())
    );
    assert_eq!(
        stdmcp(&["call", "echo", "--arg", "text=42", "--era", "legacy"]).1,
        "42\n"
    );
    let (code, out, err) = stdmcp(&["call", "fail"]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(err.contains("this tool always fails"), "{err}");
    let (code, _, err) = stdmcp(&["call", "no_such_tool"]);
    assert_eq!(code, 2);
    assert!(err.contains("Unknown tool: no_such_tool"), "{err}");
    let (code, out, _) = stdmcp(&[
        "call", "add", "--json", "--era", "modern", "--arg", "a=1", "--arg", "b=1",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["structuredContent"]["sum"], 2);
}

#[test]
fn tools_and_ping() {
    let (code, out, _) = stdmcp(&["tools"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("echo (Echo)") && out.contains("    - text (string, required)"),
        "{out}"
    );
    for era in ["legacy", "modern", "auto"] {
        let (code, out, err) = stdmcp(&["ping", "--era", era]);
        assert_eq!(code, 0, "{era}: {err}");
        assert!(
            out.starts_with("stdmcp-everything answered"),
            "{era}: {out}"
        );
    }
    let out = Command::new(stdmcp_bin())
        .args(["ping", "--", "/nonexistent/server"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn interrupt_cancels_the_call_and_ends_the_server() {
    let mut child = Command::new(stdmcp_bin())
        .args(["call", "sleep", "--arg", "ms=60000", "--"])
        .arg(everything_bin())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.starts_with("progress 1/600"), "{line}");
    let server = crate::common::children_named(child.id() as i32, "everything");
    assert_eq!(server.len(), 1);
    send_signal(child.id() as i32, 2);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert!(rest.contains("cancelling sleep"), "{rest}");
    wait_gone(&server);
}

/// Every command takes `--flag=value` as well as `--flag value` (one parser, lexopt).
#[test]
fn options_take_their_value_inline_or_next() {
    assert_eq!(
        stdmcp(&[
            "call",
            "echo",
            "--arg=text=42",
            "--era=legacy",
            "--timeout=30"
        ])
        .1,
        "42\n"
    );
    assert_eq!(
        stdmcp(&["call", "echo", "-a", "text=7", "--era", "modern"]).1,
        "7\n"
    );
    let (code, out, _) = stdmcp(&["tools", "--era=modern", "--json"]);
    assert_eq!(code, 0);
    assert!(out.contains("\"echo\""), "{out}");
    let (code, _, err) = stdmcp(&["ping", "--era=ancient"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--era takes handshake, stateless or auto"),
        "{err}"
    );
    let (code, _, err) = stdmcp(&["ping", "--json=yes"]);
    assert_eq!(code, 2);
    assert!(err.contains("--json"), "{err}");
    // serve: the manifest and the era inline.
    let out = Command::new(stdmcp_bin())
        .args(["serve", "--era=legacy", "--config=/nonexistent/stdmcp.json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/stdmcp.json"), "{err}");
    let out = Command::new(stdmcp_bin())
        .args(["serve", "--era=modern"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("use auto or handshake"));
}

#[test]
fn usage_errors() {
    let out = Command::new(stdmcp_bin())
        .arg("frobnicate")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown command"));
    let out = Command::new(stdmcp_bin())
        .args(["call", "echo"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(stdmcp_bin()).arg("--help").output().unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("stdmcp call TOOL")
    );
}
