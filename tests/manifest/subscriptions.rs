//! `resources/subscribe` is kept (README "Protocol", issue 21 follow-up): a client subscribed
//! to a call's kept output (`output://CALL/…`) or to a log (`log://TOOL/…`) gets
//! `notifications/resources/updated` when the call ends, before its result, and only for the
//! URIs it subscribed to and that the call could have changed.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests start bare programs as clients and controls

use std::io::Write;
use std::path::Path;

use crate::common::{serve_manifest, temp_dir, Proc};
use serde_json::{json, Value};

fn serve(dir: &Path) -> Proc {
    std::fs::create_dir_all(dir.join("work/proj/.hol/logs")).unwrap();
    std::fs::create_dir_all(dir.join("work/other/.hol/logs")).unwrap();
    let m = json!({
        "name": "subs", "roots": {"work": "work"},
        "tools": [
            {"name": "build", "description": "says its call id, writes its log, waits for the gate",
             "program": "sh", "cwd": {"param": "workdir"},
             "args": ["-c", "echo \"PROG 1 $STDMCP_CALL_ID\"; echo built >> .hol/logs/own; read x < ../gate; echo done"],
             "progress": {"prefix": "PROG", "stream": "stdout"},
             "params": {"workdir": {"type": "path", "root": "work", "kind": "dir", "required": true}},
             "logs": [".hol/logs/*"]}
        ]
    });
    serve_manifest(&m, dir, &[])
}

/// Starts `build` in `proj`; its call id (from its progress line) once it runs.
fn start_build(p: &mut Proc, id: i64, token: &str) -> String {
    p.call(
        json!(id),
        "build",
        json!({"workdir": "proj"}),
        Some(json!(token)),
    );
    let m = p.recv_where("the call id", |m| {
        m["params"]["progressToken"] == json!(token)
            && m["params"]["message"]
                .as_str()
                .is_some_and(|s| !s.is_empty())
    });
    m["params"]["message"].as_str().unwrap().to_owned()
}

fn ask(p: &mut Proc, id: i64, method: &str, uri: &str) -> Value {
    p.request(json!(id), method, json!({ "uri": uri }));
    p.response(&json!(id))
}

/// Opens the gate the build waits at, and collects what comes until its result.
fn release(p: &mut Proc, dir: &Path, id: i64) -> (Vec<String>, Value) {
    let mut gate = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("work/gate"))
        .unwrap();
    gate.write_all(b"go\n").unwrap();
    drop(gate);
    let mut updated = Vec::new();
    loop {
        let m = p.recv();
        if m["id"] == json!(id) && m.get("method").is_none() {
            return (updated, m);
        }
        if m["method"] == "notifications/resources/updated" {
            updated.push(m["params"]["uri"].as_str().unwrap().to_owned());
        }
    }
}

fn mkfifo(p: &Path) {
    let s = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .unwrap();
    assert!(s.success());
}

#[test]
fn subscribers_are_told_when_a_calls_output_and_logs_are_final() {
    let dir = temp_dir("subs");
    let mut p = serve(&dir);
    mkfifo(&dir.join("work/gate"));

    let call = start_build(&mut p, 1, "t1");
    let out = format!("output://{call}/stdout");
    let err = format!("output://{call}/stderr");
    let log = "log://build/proj/.hol/logs/own";
    for (i, uri) in [
        out.as_str(),
        err.as_str(),
        log,
        "log://build/other/.hol/logs/own",
        "output://someone-else/stdout",
    ]
    .iter()
    .enumerate()
    {
        let r = ask(&mut p, 10 + i as i64, "resources/subscribe", uri);
        assert_eq!(r["result"], json!({}), "{uri}: {r}");
    }
    let (updated, result) = release(&mut p, &dir, 1);
    assert!(result["result"]["structuredContent"]["stdout"]
        .as_str()
        .unwrap()
        .contains("done"));
    let mut updated = updated;
    updated.sort();
    let mut want = vec![out.clone(), err.clone(), log.to_owned()];
    want.sort();
    assert_eq!(updated, want);

    // Unsubscribed: no word of the log; another call's output is not this one's.
    let r = ask(&mut p, 20, "resources/unsubscribe", log);
    assert_eq!(r["result"], json!({}));
    start_build(&mut p, 2, "t2");
    let (updated, _) = release(&mut p, &dir, 2);
    assert!(updated.is_empty(), "{updated:?}");
    p.assert_clean();
}
