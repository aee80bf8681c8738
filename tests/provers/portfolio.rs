//! Portfolios over pipes with deterministic members: small sh scripts in the test's temp dir
//! that print an SZS verdict line when they are done. Members synchronise on files the others
//! write (their pids, a `done` mark); the test waits for files and for processes to go, never
//! for a time. Only the member scripts sleep, to model slow provers.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // tests and benchmarks start bare programs as clients and controls

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::{alive, send_signal, serve_manifest, temp_dir, wait_gone, Proc, PATIENCE};
use serde_json::{json, Value};

/// `member.sh NAME SECONDS VERDICT CODE [WAIT_FOR...]`: writes its pid, waits until each
/// WAIT_FOR member has left /proc (reaped; `+NAME`: until NAME sleeps; `deaf`: ignores
/// SIGTERM, and so does its sleep), sleeps SECONDS
/// (writing the sleep's pid), prints
/// `SZS status VERDICT` (none for `-`), marks itself done and exits with CODE.
const MEMBER: &str = r##"#!/bin/sh
dir=$(dirname "$0"); name=$1; secs=$2; verdict=$3; code=$4; shift 4
cat > /dev/null
echo $$ > "$dir/$name.pid.tmp" && mv "$dir/$name.pid.tmp" "$dir/$name.pid"
for other in "$@"; do
  case $other in
    deaf) trap '' TERM ;;
    +*) while [ ! -s "$dir/${other#+}.sleep" ]; do sleep 0.01; done ;;
    *) while [ ! -s "$dir/$other.pid" ]; do sleep 0.01; done
       while [ -e "/proc/$(cat "$dir/$other.pid")" ]; do sleep 0.01; done ;;
  esac
done
echo "searching as $name"
sleep "$secs" &
echo $! > "$dir/$name.sleep.tmp" && mv "$dir/$name.sleep.tmp" "$dir/$name.sleep"
wait $!
[ "$verdict" = - ] || echo "# SZS status $verdict"
touch "$dir/$name.done"
exit "$code"
"##;

fn member(dir: &Path, name: &str, args: &[&str], grace_ms: u64) -> Value {
    let mut argv = vec![json!(dir.join("member.sh")), json!(name)];
    argv.extend(args.iter().map(|a| json!(a)));
    json!({
        "name": name, "description": "a deterministic member", "program": "/bin/sh",
        "args": argv, "stdin": "problem", "killGraceMs": grace_ms, "successCodes": [0, 1],
        // The members' script and marker files are in the test's directory.
        "writable": [dir],
        "params": {"problem": {"type": "string", "required": true}},
        "verdict": {"rules": [{"pattern": "SZS status (\\w+)"}],
                    "decisive": ["Theorem", "CounterSatisfiable"]}
    })
}

/// Serves a portfolio `race` of `members` (each `(name, [secs, verdict, code, wait_for...])`),
/// each with a kill grace of 10 s.
fn serve(dir: &Path, members: &[(&str, &[&str])], timeout: f64) -> Proc {
    serve_with_grace(dir, members, timeout, 10_000)
}

fn serve_with_grace(dir: &Path, members: &[(&str, &[&str])], timeout: f64, grace_ms: u64) -> Proc {
    std::fs::write(dir.join("member.sh"), MEMBER).unwrap();
    let mut tools: Vec<Value> = members
        .iter()
        .map(|(n, a)| member(dir, n, a, grace_ms))
        .collect();
    let names: Vec<&str> = members.iter().map(|(n, _)| *n).collect();
    tools.push(
        json!({"name": "race", "description": "first verdict wins", "portfolio": names,
                      "timeoutSeconds": timeout,
                      "params": {"problem": {"type": "string", "required": true}}}),
    );
    serve_manifest(
        &json!({"name": "p", "tools": tools}),
        dir,
        &[("STDMCP_HEARTBEAT_MS", "100")],
    )
}

/// The pid in `dir/file`, once it is there.
fn pid_file(dir: &Path, file: &str) -> i32 {
    let path: PathBuf = dir.join(file);
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Ok(s) = std::fs::read_to_string(&path) {
            if let Ok(pid) = s.trim().parse() {
                return pid;
            }
        }
        assert!(Instant::now() < deadline, "{file} never appeared");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Every process of member `name`: its shell and its sleep.
fn member_pids(dir: &Path, name: &str) -> Vec<i32> {
    vec![
        pid_file(dir, &format!("{name}.pid")),
        pid_file(dir, &format!("{name}.sleep")),
    ]
}

fn structured(r: &Value) -> &Value {
    &r["result"]["structuredContent"]
}

/// Member `tool` of a portfolio's result (tests/provers/example.rs too).
pub(super) fn state_of<'a>(r: &'a Value, tool: &str) -> &'a Value {
    structured(r)["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool"] == tool)
        .unwrap()
}

#[test]
fn the_fast_decisive_member_wins_and_the_slow_one_is_stopped() {
    let dir = temp_dir("portfolio-win");
    // `fast` proves once `slow` is sleeping (it waits for slow's sleep to be there).
    let mut p = serve(
        &dir,
        &[
            ("slow", &["300", "Theorem", "0"]),
            ("fast", &["0", "Theorem", "0", "+slow"]),
        ],
        60.0,
    );
    p.call(
        json!(1),
        "race",
        json!({"problem": "fof(a, conjecture, $true)."}),
        None,
    );
    let slow = member_pids(&dir, "slow");
    let r = p.response(&json!(1));
    let answered = Instant::now();
    assert_eq!(r["result"].get("isError"), None, "{r}");
    let s = structured(&r);
    assert_eq!(s["winner"], "fast", "{r}");
    assert_eq!(s["verdict"], "Theorem");
    assert_eq!(state_of(&r, "fast")["state"], "won");
    assert_eq!(state_of(&r, "fast")["exitCode"], 0);
    assert_eq!(state_of(&r, "slow")["state"], "stopped");
    // A member that ended says what the kernel confined of it (README "Security model");
    // one still being stopped when the portfolio answers has no result yet.
    assert!(state_of(&r, "fast")["confined"].is_boolean(), "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("race: fast won with Theorem") && text.contains("- slow: stopped"),
        "{text}"
    );
    // The slow member obeys SIGTERM: it is gone long before its 10 s kill grace.
    while slow.iter().any(|p| alive(*p)) {
        assert!(
            answered.elapsed() < Duration::from_secs(3),
            "the loser outlived the answer: {slow:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // Each member's whole output is kept under its own call id.
    let call = state_of(&r, "fast")["call"].as_str().unwrap().to_owned();
    p.call(
        json!(2),
        "output",
        json!({"call": call, "stream": "stdout"}),
        None,
    );
    let out = p.response(&json!(2));
    assert!(out.to_string().contains("SZS status Theorem"), "{out}");
    p.finish();
}

#[test]
fn a_loser_that_ignores_sigterm_is_killed_after_its_grace() {
    let dir = temp_dir("portfolio-deaf");
    let mut p = serve_with_grace(
        &dir,
        &[
            ("deaf", &["300", "Theorem", "0", "deaf"]),
            ("fast", &["0", "Theorem", "0", "+deaf"]),
        ],
        60.0,
        300,
    );
    p.call(json!(1), "race", json!({"problem": "x"}), None);
    let deaf = member_pids(&dir, "deaf");
    let r = p.response(&json!(1));
    assert_eq!(structured(&r)["winner"], "fast", "{r}");
    assert_eq!(state_of(&r, "deaf")["state"], "stopped");
    wait_gone(&deaf);
    p.finish();
}

#[test]
fn a_failing_or_undecided_first_finisher_does_not_end_the_portfolio() {
    let dir = temp_dir("portfolio-undecided");
    let mut p = serve(
        &dir,
        &[
            ("gaveup", &["0", "GaveUp", "0"]),
            ("crash", &["0", "-", "3"]),
            (
                "prover",
                &["0.5", "CounterSatisfiable", "1", "gaveup", "crash"],
            ),
        ],
        60.0,
    );
    p.call(json!(1), "race", json!({"problem": "x"}), None);
    let r = p.response(&json!(1));
    assert_eq!(structured(&r)["winner"], "prover", "{r}");
    assert_eq!(structured(&r)["verdict"], "CounterSatisfiable");
    assert_eq!(state_of(&r, "prover")["exitCode"], 1);
    assert_eq!(state_of(&r, "gaveup")["state"], "finished", "{r}");
    assert_eq!(state_of(&r, "gaveup")["verdict"], "GaveUp");
    assert_eq!(state_of(&r, "crash")["state"], "failed", "{r}");
    assert_eq!(state_of(&r, "crash")["exitCode"], 3);
    p.finish();
}

#[test]
fn a_decisive_verdict_wins_whatever_the_members_exit_code() {
    let dir = temp_dir("portfolio-exit-code");
    // `erring` prints its verdict and exits 3, outside its success codes (as Z3 exits 1 after
    // an error about one command of a script it answers); `slow` would decide much later.
    let mut p = serve(
        &dir,
        &[
            ("slow", &["300", "Theorem", "0"]),
            ("erring", &["0", "CounterSatisfiable", "3", "+slow"]),
        ],
        60.0,
    );
    p.call(json!(1), "race", json!({"problem": "x"}), None);
    let slow = member_pids(&dir, "slow");
    let r = p.response(&json!(1));
    assert_eq!(r["result"].get("isError"), None, "{r}");
    assert_eq!(structured(&r)["winner"], "erring", "{r}");
    assert_eq!(structured(&r)["verdict"], "CounterSatisfiable");
    assert_eq!(state_of(&r, "erring")["state"], "won");
    assert_eq!(state_of(&r, "erring")["exitCode"], 3);
    assert_eq!(state_of(&r, "slow")["state"], "stopped");
    wait_gone(&slow);
    p.finish();
}

#[test]
fn no_decisive_member_gives_a_listed_result_that_is_not_an_error() {
    let dir = temp_dir("portfolio-none");
    let mut p = serve(
        &dir,
        &[("a", &["0", "GaveUp", "0"]), ("b", &["0", "-", "2"])],
        60.0,
    );
    p.call(json!(1), "race", json!({"problem": "x"}), None);
    let r = p.response(&json!(1));
    assert_eq!(r["result"].get("isError"), None, "{r}");
    let s = structured(&r);
    assert!(
        s.get("winner").is_none() && s.get("verdict").is_none(),
        "{r}"
    );
    assert_eq!(state_of(&r, "a")["verdict"], "GaveUp");
    assert_eq!(state_of(&r, "b")["state"], "failed");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("race: no member decided"), "{text}");
    p.finish();
}

#[test]
fn cancel_stops_every_member_and_is_never_answered() {
    let dir = temp_dir("portfolio-cancel");
    let mut p = serve(
        &dir,
        &[
            ("a", &["300", "Theorem", "0"]),
            ("b", &["300", "Theorem", "0"]),
        ],
        60.0,
    );
    p.call(json!(1), "race", json!({"problem": "x"}), Some(json!("t")));
    let mut pids = member_pids(&dir, "a");
    pids.extend(member_pids(&dir, "b"));
    // The heartbeat names each member's state.
    p.recv_where("a heartbeat naming the members", |m| {
        m["params"]["message"]
            .as_str()
            .is_some_and(|s| s.contains("a: running (searching as a)") && s.contains("b: running"))
    });
    p.notify("notifications/cancelled", json!({"requestId": 1}));
    wait_gone(&pids);
    let (rest, _) = p.finish();
    assert!(
        rest.iter().all(|m| m["id"] != json!(1)),
        "answered: {rest:?}"
    );
}

#[test]
fn the_deadline_stops_every_member_and_says_so() {
    let dir = temp_dir("portfolio-deadline");
    let mut p = serve(
        &dir,
        &[
            ("a", &["300", "Theorem", "0"]),
            ("b", &["300", "Theorem", "0"]),
        ],
        1.0,
    );
    p.call(json!(1), "race", json!({"problem": "x"}), None);
    let mut pids = member_pids(&dir, "a");
    pids.extend(member_pids(&dir, "b"));
    let r = p.response(&json!(1));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(state_of(&r, "a")["state"], "timed out", "{r}");
    assert_eq!(state_of(&r, "b")["state"], "timed out", "{r}");
    wait_gone(&pids);
    p.finish();
}

#[test]
fn the_servers_death_leaves_no_member() {
    for (i, how) in ["SIGKILL", "SIGTERM", "SIGINT", "EOF"]
        .into_iter()
        .enumerate()
    {
        let dir = temp_dir(&format!("portfolio-death-{i}"));
        let mut p = serve(
            &dir,
            &[
                ("a", &["300", "Theorem", "0"]),
                ("b", &["300", "Theorem", "0"]),
            ],
            60.0,
        );
        p.call(json!(1), "race", json!({"problem": "x"}), None);
        let mut pids = member_pids(&dir, "a");
        pids.extend(member_pids(&dir, "b"));
        match how {
            "SIGKILL" => send_signal(p.pid(), libc::SIGKILL),
            "SIGTERM" => send_signal(p.pid(), libc::SIGTERM),
            "SIGINT" => send_signal(p.pid(), libc::SIGINT),
            _ => p.close_stdin(),
        }
        p.drain_to_exit();
        wait_gone(&pids);
    }
}

#[test]
fn members_count_as_calls_and_start_together() {
    let dir = temp_dir("portfolio-slots");
    std::fs::write(dir.join("member.sh"), MEMBER).unwrap();
    let slow = ["300", "Theorem", "0"];
    let tools = json!([
        member(&dir, "solo", &slow, 10_000),
        member(&dir, "a", &slow, 10_000),
        member(&dir, "b", &slow, 10_000),
        {"name": "race", "description": "d", "portfolio": ["a", "b"],
         "params": {"problem": {"type": "string", "required": true}}}
    ]);
    let m = json!({"name": "p", "defaults": {"maxConcurrentCalls": 2}, "tools": tools});
    let mut p = serve_manifest(&m, &dir, &[("STDMCP_HEARTBEAT_MS", "100")]);
    p.call(json!(1), "solo", json!({"problem": "x"}), None);
    let solo = member_pids(&dir, "solo");
    // One slot is free, the portfolio needs two: it waits, and starts no member meanwhile.
    p.call(json!(2), "race", json!({"problem": "x"}), Some(json!("r")));
    p.recv_where("the portfolio's queued heartbeat", |m| {
        m["params"]["progressToken"] == "r"
            && m["params"]["message"]
                .as_str()
                .is_some_and(|s| s.starts_with("queued"))
    });
    assert!(!dir.join("a.pid").exists() && !dir.join("b.pid").exists());
    // The single call ends: both members start.
    p.notify("notifications/cancelled", json!({"requestId": 1}));
    wait_gone(&solo);
    let mut pids = member_pids(&dir, "a");
    pids.extend(member_pids(&dir, "b"));
    p.notify("notifications/cancelled", json!({"requestId": 2}));
    wait_gone(&pids);
    p.finish();
}

#[test]
fn a_portfolio_can_become_a_background_job() {
    let dir = temp_dir("portfolio-job");
    std::fs::write(dir.join("member.sh"), MEMBER).unwrap();
    let tools = json!([
        member(&dir, "a", &["300", "Theorem", "0"], 10_000),
        // b proves once the test writes `release.sleep`.
        member(&dir, "b", &["0", "Theorem", "0", "+release"], 10_000),
        {"name": "race", "description": "d", "portfolio": ["a", "b"],
         "background": {"afterSeconds": 1},
         "params": {"problem": {"type": "string", "required": true}}}
    ]);
    let mut p = serve_manifest(&json!({"name": "p", "tools": tools}), &dir, &[]);
    p.call(json!(1), "race", json!({"problem": "x"}), None);
    let r = p.response(&json!(1));
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("job-1") && text.contains("job_wait"), "{r}");
    let a = member_pids(&dir, "a");
    std::fs::write(dir.join("release.sleep"), "1").unwrap();
    p.call(json!(2), "job_wait", json!({"id": "job-1"}), None);
    let r = p.response(&json!(2));
    assert_eq!(structured(&r)["winner"], "b", "{r}");
    assert_eq!(state_of(&r, "a")["state"], "stopped", "{r}");
    wait_gone(&a);
    p.finish();
}
