//! A full disk under the output spool recovers (README "Output spool"): on ENOSPC the oldest
//! finished calls are evicted and the write retried, so a later call's output is kept again.
//! The disk is a 1 MiB tmpfs mounted in a private mount namespace (`unshare -m`) around the
//! real binary, as its `TMPDIR`; where that cannot be mounted the test says so and is skipped.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests start bare programs as clients and controls

use std::path::Path;
use std::process::Command;

use crate::common::sessions::{call, is_error, text};
use crate::common::{stdmcp_bin, temp_dir, Proc};
use serde_json::{json, Value};

/// Mounts a 1 MiB tmpfs on `$0` in a fresh mount namespace, then runs the rest.
const MOUNT: &str = r#"mount -t tmpfs -o size=1m,mode=0700 stdmcp-full "$0" && exec "$@""#;

fn can_mount(dir: &Path) -> Result<(), String> {
    let out = Command::new("unshare")
        .args(["-m", "sh", "-c", MOUNT])
        .arg(dir)
        .arg("true")
        .output()
        .map_err(|e| format!("cannot run unshare: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
    }
}

/// Serves manifest `m` with `TMPDIR` a tmpfs mounted on `tmp` by `mount` (a script) in a
/// fresh mount namespace.
fn serve(mount: &str, dir: &Path, tmp: &Path, m: &Value) -> Proc {
    let path = dir.join("m.json");
    std::fs::write(&path, m.to_string()).unwrap();
    let mut cmd = Command::new("unshare");
    cmd.args(["-m", "sh", "-c", mount])
        .arg(tmp)
        .arg(stdmcp_bin())
        .args(["serve", "--config"])
        .arg(&path)
        .env("TMPDIR", tmp);
    Proc::initialized(cmd, "2025-06-18")
}

/// The note at the end of a cut result's text.
fn cut_note(r: &Value) -> String {
    let t = text(r);
    t[t.find("[Output was cut").unwrap()..].to_owned()
}

fn call_id(r: &Value) -> String {
    r["result"]["structuredContent"]["callId"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Calls `count` of 20 000 lines (request `id`): its output is kept whole (the note says so,
/// and its end reads back through `output`, request `id + 1`).
fn count_kept_whole(p: &mut Proc, id: i64) {
    let b = call(p, id, "count", json!({"n": 20_000}));
    assert!(!is_error(&b), "{b}");
    let note = cut_note(&b);
    assert!(note.contains("is kept"), "{note}");
    assert!(!note.contains("only the first"), "{note}");
    let b = call_id(&b);
    let r = call(
        p,
        id + 1,
        "output",
        json!({"call": b, "offset": 108_882, "limit": 100}),
    );
    assert_eq!(r["result"]["content"][0]["text"], "19999\n20000\n", "{r}");
}

/// A fresh test directory and its `tmp`, where a small tmpfs can be mounted (`None`, with the
/// reason on stderr, where it cannot).
fn mountable(name: &str) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let dir = temp_dir(name);
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    match can_mount(&tmp) {
        Ok(()) => Some((dir, tmp)),
        Err(why) => {
            eprintln!("SKIPPED: cannot mount a small tmpfs in a private mount namespace: {why}");
            None
        }
    }
}

#[test]
fn a_full_disk_evicts_old_outputs_and_later_outputs_are_kept_again() {
    let Some((dir, tmp)) = mountable("full") else {
        return;
    };
    let m = json!({
        "name": "full-disk",
        "tools": [{"name": "count", "description": "counts", "program": "seq",
                   "args": ["1", {"param": "n"}],
                   "params": {"n": {"type": "integer", "minimum": 1, "required": true}},
                   "maxOutputBytes": 4096}]
    });
    let mut p = serve(MOUNT, &dir, &tmp, &m);

    // 1.3 MB of output on a 1 MiB disk: an honest prefix is kept, and the result says so.
    let a = call(&mut p, 1, "count", json!({"n": 200_000}));
    assert!(!is_error(&a), "{a}");
    let note = cut_note(&a);
    assert!(
        note.contains("were kept (the output spool is full, or could not be written)"),
        "{note}"
    );
    let a = call_id(&a);
    // A later call finds the disk full of a finished call's output: that output gives way.
    count_kept_whole(&mut p, 2);
    let r = call(&mut p, 4, "output", json!({"call": a}));
    assert!(is_error(&r) && text(&r).contains("evicted"), "{r}");
    let (_, status) = p.finish();
    assert!(status.success(), "{status:?}");
}

/// Mounts a tmpfs of 8 inodes on `$0` in a fresh mount namespace, takes every inode with empty
/// files (`fill-N`), then runs the rest: the server's private directory cannot be made.
const MOUNT_FULL: &str = r#"mount -t tmpfs -o size=1m,nr_inodes=8,mode=0700 stdmcp-full "$0" || exit 1
i=0
while [ "$i" -lt 16 ] && true 2>/dev/null >"$0/fill-$i"; do i=$((i + 1)); done
exec "$@""#;

#[test]
fn a_disk_full_at_the_first_call_keeps_later_outputs() {
    let Some((dir, tmp)) = mountable("full-first") else {
        return;
    };
    // `grow` gives the full tmpfs more inodes (a remount in the server's own mount namespace,
    // which the test made): the disk is no longer full.
    let m = json!({
        "name": "full-first",
        "tools": [
            {"name": "count", "description": "counts", "program": "seq",
             "args": ["1", {"param": "n"}],
             "params": {"n": {"type": "integer", "minimum": 1, "required": true}},
             "maxOutputBytes": 4096},
            // A confined program may not mount (Landlock): this one is the test's own hand.
            {"name": "grow", "description": "more inodes", "program": "mount", "confine": "off",
             "args": ["-o", "remount,nr_inodes=64", tmp.to_str().unwrap()]}
        ]
    });
    let mut p = serve(MOUNT_FULL, &dir, &tmp, &m);

    // No inode left for the private directory: the cut part is lost, this time.
    let a = call(&mut p, 1, "count", json!({"n": 20_000}));
    assert!(!is_error(&a), "{a}");
    let note = cut_note(&a);
    assert!(note.contains("could not be created this time"), "{note}");
    assert!(!note.contains("turned off"), "{note}");
    let r = call(&mut p, 2, "grow", json!({}));
    assert!(!is_error(&r), "{r}");
    // The disk has room again: the next cut output is kept whole.
    count_kept_whole(&mut p, 3);
    let (_, status) = p.finish();
    assert!(status.success(), "{status:?}");
}
