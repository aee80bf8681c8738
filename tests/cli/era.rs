//! `stdmcp serve --era legacy`: 2026-07-28 clients sent back to `initialize`.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests start bare programs as clients and controls

use std::process::Command;

use crate::common::{modern_meta_with, stdmcp_bin, temp_dir, Proc};
use serde_json::json;

#[test]
fn era_legacy_sends_2026_clients_back_to_initialize() {
    let root = temp_dir("era-legacy");
    // `stdmcp serve ARGS` with no manifest of its own, in an empty root.
    let serve = |args: &[&str]| {
        let mut cmd = Command::new(stdmcp_bin());
        cmd.arg("serve")
            .args(args)
            .env("STDMCP_ROOT", &root)
            .env_remove("STDMCP_CONFIG")
            .current_dir(&root);
        Proc::start(cmd)
    };
    let discover = |p: &mut Proc| {
        p.request(
            json!(1),
            "server/discover",
            json!({"_meta": modern_meta_with(json!({}))}),
        );
        p.response(&json!(1))
    };
    let mut p = serve(&["--era", "legacy"]);
    assert_eq!(discover(&mut p)["error"]["code"], -32601);
    let r = p.initialize("2025-11-25");
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
    p.request(json!(2), "tools/list", json!({}));
    assert!(p.response(&json!(2))["result"]["tools"].is_array());
    let (_, status) = p.finish();
    assert!(status.success());
    // Without the switch the same server answers server/discover.
    let mut p = serve(&[]);
    assert!(discover(&mut p)["result"]["supportedVersions"].is_array());
}
