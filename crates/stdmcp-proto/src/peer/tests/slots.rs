//! Calls that take several slots of `max_running` (portfolios): admitted all at once, in
//! order.

use std::time::Duration;

use serde_json::json;

use super::{call, catalog, H};
use crate::jsonrpc::RequestId;
use crate::peer::Reply;

#[test]
fn a_call_of_several_slots_waits_until_all_are_free_and_later_calls_wait_behind_it() {
    let mut c = catalog();
    c.tool_slots = vec![1, 1, 2, 1]; // `sleep` is a portfolio of two
    let mut h = super::edges::limited_with(c, 3);
    let t0 = h.now;
    for (id, tool, token) in [
        (1, "sleep", "a"),
        (2, "add", "b"),
        (3, "sleep", "c"),
        (4, "add", "d"),
    ] {
        let args = if tool == "add" {
            json!({"a": 1, "b": 2})
        } else {
            json!({})
        };
        h.req(call(json!(id), tool, args, Some(json!(token))));
    }
    let states = |h: &mut H, at: u64| {
        h.peer.handle_timeout(t0 + Duration::from_secs(at));
        let sent = h.drain().sent;
        ["a", "b", "c", "d"].map(|t| {
            sent.iter()
                .find(|m| m["params"]["progressToken"] == t)
                .map(|m| {
                    m["params"]["message"]
                        .as_str()
                        .unwrap()
                        .starts_with("running")
                })
        })
    };
    // a (two slots) and b run; c needs two slots, only one is free; d waits behind c.
    assert_eq!(
        states(&mut h, 5),
        [Some(true), Some(true), Some(false), Some(false)]
    );
    // b ends: still one slot short for c, and d stays behind it.
    h.peer.finish(
        t0 + Duration::from_secs(6),
        &RequestId::number(2),
        Reply::Value(json!({})),
    );
    assert_eq!(
        states(&mut h, 10),
        [Some(true), None, Some(false), Some(false)]
    );
    // a ends: c takes two slots and d the third.
    h.peer.finish(
        t0 + Duration::from_secs(11),
        &RequestId::number(1),
        Reply::Value(json!({})),
    );
    assert_eq!(states(&mut h, 15), [None, None, Some(true), Some(true)]);
}
