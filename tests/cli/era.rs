//! `stdmcp serve --era legacy`: 2026-07-28 clients sent back to `initialize`.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests start bare programs as clients and controls

use std::process::Command;

use crate::common::{modern_meta_with, stdmcp_bin, temp_dir, Proc};
use serde_json::json;

#[test]
fn era_legacy_sends_2026_clients_back_to_initialize() {
    let root = temp_dir("era-legacy");
    let mut cmd = Command::new(stdmcp_bin());
    cmd.args(["serve", "--era", "legacy"])
        .env("STDMCP_ROOT", &root)
        .env_remove("STDMCP_CONFIG")
        .current_dir(&root);
    let mut p = Proc::start(cmd);
    p.request(
        json!(1),
        "server/discover",
        json!({"_meta": modern_meta_with(json!({}))}),
    );
    assert_eq!(p.response(&json!(1))["error"]["code"], -32601);
    let r = p.initialize("2025-11-25");
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
    p.request(json!(2), "tools/list", json!({}));
    assert!(p.response(&json!(2))["result"]["tools"].is_array());
    let (_, status) = p.finish();
    assert!(status.success());
    // Without the switch the same server answers server/discover.
    let mut cmd = Command::new(stdmcp_bin());
    cmd.args(["serve"])
        .env("STDMCP_ROOT", &root)
        .env_remove("STDMCP_CONFIG")
        .current_dir(&root);
    let mut p = Proc::start(cmd);
    p.request(
        json!(1),
        "server/discover",
        json!({"_meta": modern_meta_with(json!({}))}),
    );
    assert!(p.response(&json!(1))["result"]["supportedVersions"].is_array());
}
