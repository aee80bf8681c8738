//! Client-role tests: a client peer and a server peer wired frame to frame.

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;

use super::catalog;
use crate::framing::{Frame, FrameDecoder, Framing};
use crate::jsonrpc;
use crate::mcp::{CallToolResult, Implementation, ProtocolVersion};
use crate::peer::{ClientEra, Config, Effect, Peer};

/// Moves every Send of `from` into `to`; returns `from`'s other effects and whether anything moved.
fn forward(from: &mut Peer, to: &mut Peer, now: Instant, keep: &mut Vec<Effect>) -> bool {
    let mut moved = false;
    while let Some(e) = from.poll_effect() {
        match e {
            Effect::Send(bytes) | Effect::Progress { bytes, .. } => {
                moved = true;
                let mut dec = FrameDecoder::default();
                dec.push(&bytes);
                while let Some(f) = dec.next_frame() {
                    to.handle_frame(now, f.unwrap());
                }
            }
            other => keep.push(other),
        }
    }
    moved
}

/// Runs both peers until neither sends anything; returns the other effects of each side.
fn pump(a: &mut Peer, b: &mut Peer, now: Instant) -> (Vec<Effect>, Vec<Effect>) {
    let (mut ea, mut eb) = (Vec::new(), Vec::new());
    for _ in 0..100 {
        let moved_a = forward(a, b, now, &mut ea);
        let moved_b = forward(b, a, now, &mut eb);
        if !moved_a && !moved_b {
            return (ea, eb);
        }
    }
    panic!("peers did not settle");
}

#[test]
fn client_round_trip_with_progress_cancel_and_late_response() {
    let now = Instant::now();
    let mut client = Peer::client(Config::default());
    let mut server = Peer::server(Arc::new(catalog()), Config::default());
    let init = client.request("initialize", json!({"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}), false);
    let (c, _) = pump(&mut client, &mut server, now);
    let [Effect::Response(r)] = &c[..] else {
        panic!("{c:?}")
    };
    assert_eq!(r.id, init);
    assert_eq!(r.result.as_ref().unwrap()["protocolVersion"], "2025-11-25");
    client.notify("notifications/initialized", json!({}));

    let id = client.request(
        "tools/call",
        json!({"name":"sleep","arguments":{"ms":5000}}),
        true,
    );
    let (_, s) = pump(&mut client, &mut server, now);
    let [Effect::Start(call)] = &s[..] else {
        panic!("{s:?}")
    };
    assert!(call.wants_progress);
    server.progress(now, &call.id, 1.0, None, None);
    let (c, _) = pump(&mut client, &mut server, now);
    let [Effect::Notification(n)] = &c[..] else {
        panic!("{c:?}")
    };
    assert_eq!(n.params["progress"], 1.0);

    assert!(client.cancel_request(&id, Some("bored")));
    assert!(!client.cancel_request(&id, None), "only once");
    let (_, s) = pump(&mut client, &mut server, now);
    assert_eq!(s, vec![Effect::Cancel(call.id.clone())]);
    server.finish_tool(now, &call.id, CallToolResult::text("slept"));
    let (c, s) = pump(&mut client, &mut server, now);
    assert!(c.is_empty() && s.is_empty());

    // A server that answers a cancelled request anyway: the late response is dropped.
    let id2 = client.request("tools/call", json!({"name":"sleep","arguments":{}}), true);
    let _ = pump(&mut client, &mut server, now);
    client.cancel_request(&id2, None);
    let mut late = Vec::new();
    jsonrpc::write_result(&mut late, &id2, &json!({"content":[]})).unwrap();
    let mut progress = Vec::new();
    jsonrpc::write_notification(
        &mut progress,
        "notifications/progress",
        &json!({"progressToken":3,"progress":1}),
    )
    .unwrap();
    for body in [progress, late] {
        client.handle_frame(
            now,
            Frame {
                body,
                framing: Framing::Newline,
            },
        );
    }
    let _ = client.poll_effect(); // the cancel notification
    assert_eq!(client.poll_effect(), None);
    assert_eq!(client.requests_pending(), 0, "nothing is awaited any more");
}

#[test]
fn stateless_client_requests_carry_meta() {
    let now = Instant::now();
    let mut client = Peer::client(Config::default());
    client.set_client_era(ClientEra::Stateless {
        version: ProtocolVersion::V2026_07_28,
        capabilities: json!({}),
        client_info: Implementation::new("c", "1"),
    });
    let mut server = Peer::server(Arc::new(catalog()), Config::default());
    client.request("server/discover", json!({}), false);
    let (c, _) = pump(&mut client, &mut server, now);
    let [Effect::Response(r)] = &c[..] else {
        panic!("{c:?}")
    };
    assert_eq!(r.result.as_ref().unwrap()["resultType"], "complete");
}
