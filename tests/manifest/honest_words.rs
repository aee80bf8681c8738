//! What the server says about itself is true (issue 21, "Honest words"): the startup line
//! lists the tools clients see, settings under a second are not shown as "0 s", and
//! `resources/subscribe` refuses a resource the server does not have.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests start bare programs as clients and controls

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::{stdmcp_bin, stdmcp_check, temp_dir};
use serde_json::json;

/// What `stdmcp serve` writes on stderr for this manifest, with stdin closed at once.
fn startup_line(manifest: &Path) -> String {
    let out = Command::new(stdmcp_bin())
        .arg("serve")
        .arg("--config")
        .arg(manifest)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    let line = err
        .lines()
        .find(|l| l.starts_with("stdmcp: serving"))
        .unwrap_or_else(|| panic!("no startup line: {err}"));
    // It ends with what the kernel confines (tests/security/confine.rs reads that part).
    let (tools, confinement) = line
        .split_once("; confinement: ")
        .unwrap_or_else(|| panic!("no confinement on the startup line: {line}"));
    assert!(
        confinement.starts_with("Landlock ABI ") || confinement.starts_with("no Landlock"),
        "{line}"
    );
    tools.to_owned()
}

#[test]
fn the_startup_line_lists_every_tool_clients_see() {
    // Sessions only: their tools (and `output`, which reads a long answer whole), not
    // "(0 tools: )".
    let repls = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/repls.json");
    let line = startup_line(&repls);
    assert!(
        line.contains("(22 tools: output, python_start, python_send, python_interrupt"),
        "{line}"
    );
    assert!(line.ends_with(", sessions)"), "{line}");
    // A tool with a background delay: the output tool and the job tools too.
    let dir = temp_dir("startup");
    let m = json!({"name": "s", "tools": [{"name": "t", "description": "d", "program": "true",
        "timeoutSeconds": 10, "background": {"afterSeconds": 2}}]});
    let path = dir.join("m.json");
    std::fs::write(&path, m.to_string()).unwrap();
    let line = startup_line(&path);
    assert!(
        line.ends_with("(5 tools: t, output, job_wait, job_cancel, jobs)"),
        "{line}"
    );
    // Nothing servable (every program missing, skipped).
    let m = json!({"name": "s", "missingPrograms": "skip", "tools": [{"name": "t",
        "description": "d", "program": "no-such-program-for-this-test"}]});
    std::fs::write(&path, m.to_string()).unwrap();
    assert!(startup_line(&path).ends_with("(no tools)"));
}

#[test]
fn sub_second_settings_are_shown_in_milliseconds() {
    let dir = temp_dir("subsecond");
    let m = json!({"name": "s", "tools": [{"name": "t", "description": "d", "program": "true",
        "timeoutSeconds": 0.25}]});
    let (code, out, err) = stdmcp_check(&dir, &m);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("timeout 250 ms,"), "{out}");
    assert!(!out.contains(" 0 s"), "{out}");
}
