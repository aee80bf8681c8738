//! The `stdmcp` command's test support: the shared support module of the runtime's tests
//! (crates/stdmcp/tests/support: the pipe harness, the one temp-dir helper, process inspection),
//! and what only the command's tests need (its binary, its fixtures, manifests served and
//! checked; sessions and cursors with real programs).
#![allow(dead_code, clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests start bare programs as clients and controls

pub(crate) mod cursor;
pub(crate) mod sessions;
#[path = "../../crates/stdmcp/tests/support/mod.rs"]
mod support;

pub(crate) use support::*;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

pub(crate) fn stdmcp_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_stdmcp"))
}

/// `stdmcp serve --config MANIFEST`, for a test to add its environment to.
pub(crate) fn serve_command(manifest: &Path) -> Command {
    let mut cmd = Command::new(stdmcp_bin());
    cmd.arg("serve").arg("--config").arg(manifest);
    cmd
}

/// Puts `dir` first on `cmd`'s PATH.
pub(crate) fn path_first(cmd: &mut Command, dir: &Path) {
    let old = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![dir.to_path_buf()];
    dirs.extend(std::env::split_paths(&old));
    cmd.env("PATH", std::env::join_paths(dirs).unwrap());
}

/// `tests/fixtures/NAME` (the runner's own are [`runtime_fixture`]s).
pub(crate) fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The pid in an `escaped PID` line (`tests/fixtures/escape.sh`).
pub(crate) fn escaped_pid(text: &str) -> i32 {
    text.lines()
        .find_map(|l| l.strip_prefix("escaped "))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no `escaped PID` line in {text:?}"))
}

impl Proc {
    /// The escaped pid a call with progress token `token` reports in a heartbeat.
    pub(crate) fn escaped_pid_of(&mut self, token: &str) -> i32 {
        let token = json!(token);
        let m = self.recv_where("the escaped pid", move |m| {
            m["params"]["progressToken"] == token
                && m["params"]["message"]
                    .as_str()
                    .is_some_and(|s| s.starts_with("escaped "))
        });
        escaped_pid(m["params"]["message"].as_str().unwrap())
    }
}

/// `stdmcp serve --config PATH` with `manifest` written to `dir/tools.json`, initialized at
/// 2025-06-18.
pub(crate) fn serve_manifest(manifest: &Value, dir: &Path, env: &[(&str, &str)]) -> Proc {
    let path = dir.join("tools.json");
    std::fs::write(&path, manifest.to_string()).unwrap();
    let mut cmd = serve_command(&path);
    cmd.envs(env.iter().copied());
    Proc::initialized(cmd, "2025-06-18")
}

/// The pids a fixture reported as a `pids P1 P2...` progress message on `token` (heartbeats
/// may come first under load: they are skipped).
pub(crate) fn pids_from_progress(p: &mut Proc, token: &str) -> Vec<i32> {
    let token = json!(token);
    let m = p.recv_where("the pids line", |m| {
        m["params"]["progressToken"] == token
            && m["params"]["message"]
                .as_str()
                .is_some_and(|s| s.starts_with("pids "))
    });
    let msg = m["params"]["message"].as_str().unwrap();
    msg.trim_start_matches("pids ")
        .split_whitespace()
        .map(|s| s.parse().unwrap())
        .collect()
}

/// `stdmcp check` on the manifest `m`, written to `dir/m.json`: (exit code, stdout, stderr).
pub(crate) fn stdmcp_check(dir: &Path, m: &Value) -> (i32, String, String) {
    let path = dir.join("m.json");
    std::fs::write(&path, m.to_string()).unwrap();
    let out = Command::new(stdmcp_bin())
        .arg("check")
        .arg(&path)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}
