//! The one admission queue: a call's work starts only when the peer admits it, a start the
//! runtime gives back (no thread) waits at the head of the line until a running call ends,
//! and is answered at once when nothing runs that could free a thread.

use std::time::Duration;

use serde_json::{json, Value};

use super::edges::limited;
use super::{call, H};
use crate::jsonrpc::RequestId;
use crate::peer::{Effect, Reply};

fn id(n: i64) -> RequestId {
    RequestId::number(n)
}

/// The ids of the starts emitted.
fn starts(out: &super::Out) -> Vec<RequestId> {
    out.started.iter().map(|c| c.id.clone()).collect()
}

fn sleep(h: &mut H, n: i64) -> super::Out {
    h.req(call(json!(n), "sleep", json!({}), None))
}

#[test]
fn work_starts_only_when_the_call_is_admitted() {
    let mut h = limited(1);
    assert_eq!(starts(&sleep(&mut h, 1)), [id(1)]);
    assert!(starts(&sleep(&mut h, 2)).is_empty(), "call 2 waits in line");
    assert!(starts(&sleep(&mut h, 3)).is_empty(), "call 3 waits in line");
    assert_eq!(h.peer.calls_in_flight(), 3);
    // Call 3 is cancelled while it waits: it has no work to stop, leaves at once, and is
    // never answered.
    let out =
        h.req(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}));
    assert!(out.cancelled.is_empty() && out.sent.is_empty(), "{out:?}");
    assert_eq!(h.peer.calls_in_flight(), 2);
    // Call 1 ends: call 2 (and only it) starts, with the work of its request.
    h.peer.finish(h.now, &id(1), Reply::Value(json!({})));
    let out = h.drain();
    assert_eq!(starts(&out), [id(2)]);
    assert_eq!(
        out.started[0].deadline,
        Some(h.now + Duration::from_secs(30))
    );
    h.peer.finish(h.now, &id(2), Reply::Value(json!({})));
    let out = h.drain();
    assert!(starts(&out).is_empty(), "call 3 never starts: {out:?}");
    let answered: Vec<&Value> = out.sent.iter().map(|m| &m["id"]).collect();
    assert_eq!(answered, [&json!(2)]);
    assert_eq!(h.peer.calls_in_flight(), 0);
}

#[test]
fn a_start_given_back_waits_at_the_head_of_the_line_until_a_call_ends() {
    let mut h = limited(3);
    let mut given = Vec::new();
    for n in 1..=3 {
        given.extend(sleep(&mut h, n).started);
    }
    assert_eq!(given.len(), 3);
    // No thread for call 2: calls 1 and 3 run, so it waits for one of them to end.
    let two = given.remove(1);
    h.peer
        .start_refused(h.now, two.clone(), "Resource temporarily unavailable");
    let out = h.drain();
    assert!(out.sent.is_empty() && out.started.is_empty(), "{out:?}");
    // A slot is free, but nothing more is admitted until a running call ends.
    assert!(starts(&sleep(&mut h, 4)).is_empty(), "call 4 waits too");
    // Call 3 ends: call 2 starts again, first, with the same start, then call 4.
    h.peer.finish(h.now, &id(3), Reply::Value(json!({})));
    let out = h.drain();
    assert_eq!(starts(&out), [id(2), id(4)]);
    assert_eq!(out.started[0], two);
    assert_eq!(out.sent[0]["id"], 3);
    for n in [1, 2, 4] {
        h.peer.finish(h.now, &id(n), Reply::Value(json!({})));
    }
    let out = h.drain();
    assert_eq!(out.sent.len(), 3, "{out:?}");
    assert_eq!(h.peer.calls_in_flight(), 0);
}

#[test]
fn a_start_given_back_with_nothing_else_running_is_answered_at_once() {
    let mut h = limited(4);
    let one = sleep(&mut h, 1).started.remove(0);
    let two = sleep(&mut h, 2).started.remove(0);
    // Call 1 comes back while call 2 runs: it waits.
    h.peer.start_refused(h.now, one, "EAGAIN one");
    assert!(h.drain().sent.is_empty());
    // Call 2 comes back too: nothing runs that could free a thread, so both are answered
    // now, with the -32603 error that says why.
    h.peer.start_refused(h.now, two, "EAGAIN two");
    let out = h.drain();
    assert!(out.started.is_empty(), "{out:?}");
    assert_eq!(out.sent.len(), 2, "{out:?}");
    for (m, n) in out.sent.iter().zip(["two", "one"]) {
        assert_eq!(m["error"]["code"], -32603, "{m}");
        let text = m["error"]["message"].as_str().unwrap();
        assert!(
            text.starts_with(&format!(
                "Internal error: the server could not run this request: no thread could be \
                 started to run it (EAGAIN {n})."
            )),
            "{text}"
        );
    }
    assert_eq!(h.peer.calls_in_flight(), 0);
    // A later call is admitted as usual.
    assert_eq!(starts(&sleep(&mut h, 3)), [id(3)]);
}

#[test]
fn a_start_given_back_ends_at_its_deadline_still_waiting_for_a_thread() {
    let mut h = limited(4);
    let t0 = h.now;
    sleep(&mut h, 1);
    h.now = t0 + Duration::from_secs(10);
    let two = sleep(&mut h, 2).started.remove(0);
    h.peer.start_refused(h.now, two, "EAGAIN");
    h.drain();
    // `sleep` has a 30 s deadline: call 1's passes first (it runs), then call 2's.
    let out = h.step().unwrap();
    assert_eq!(h.now, t0 + Duration::from_secs(30));
    assert_eq!(out.other, [Effect::Deadline(id(1))]);
    let out = h.step().unwrap();
    assert_eq!(h.now, t0 + Duration::from_secs(40));
    assert_eq!(out.other, [Effect::Unstarted(id(2))]);
    assert_eq!(out.sent.len(), 1, "{out:?}");
    let text = out.sent[0]["error"]["message"].as_str().unwrap();
    assert!(
        text.contains(
            "could not run this request: it was still waiting for a worker thread when its \
             deadline passed (none could be started: EAGAIN)"
        ),
        "{text}"
    );
    assert_eq!(h.peer.calls_in_flight(), 1);
}

#[test]
fn a_call_cancelled_after_its_start_and_given_back_just_ends() {
    let mut h = limited(4);
    sleep(&mut h, 1);
    let two = sleep(&mut h, 2).started.remove(0);
    let out =
        h.req(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}));
    assert_eq!(out.cancelled, [id(2)]);
    h.peer.start_refused(h.now, two, "EAGAIN");
    let out = h.drain();
    assert!(out.sent.is_empty() && out.started.is_empty(), "{out:?}");
    assert_eq!(h.peer.calls_in_flight(), 1);
}
