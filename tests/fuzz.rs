//! Seeded, deterministic fuzzing in `cargo test`: mutated frames (bit flips, truncation,
//! splicing, huge numbers, deep nesting, odd ids, invalid UTF-8, Content-Length lies) through
//! the frame decoder and the peer in both roles, with the invariants of tests/fuzz_harness/
//! (the same checks the cargo-fuzz targets in fuzz/ run). Also the regression inputs of the
//! crashes fuzzing found.
#![allow(clippy::unwrap_used)]

mod fuzz_harness;

use fuzz_harness::{decoder, jsonrpc, program, Rng};
use stdmcp_proto::peer::Role;

/// Mutated frames the seeded test feeds at least.
const MUTATED_FRAMES: u64 = 100_000;

#[test]
fn seeded_mutated_frames_through_decoder_and_peer() {
    let mut rng = Rng::new(0x5EED_F00D);
    let (mut written, mut mutated, mut delivered, mut sessions) = (0, 0, 0, 0u64);
    while mutated < MUTATED_FRAMES {
        let role = if sessions % 2 == 0 {
            Role::Server
        } else {
            Role::Client
        };
        let counts = program::run_seeded(&mut rng, role, 60);
        // The same stream, cut differently, decodes the same.
        let pieces: Vec<usize> = (0..32).map(|_| 1 + rng.below(700)).collect();
        let max = *rng.pick(&[300, 64 * 1024]);
        decoder::check_split_invariance(&counts.wire, &pieces, max, sessions % 16 == 0);
        written += counts.written;
        mutated += counts.mutated;
        delivered += counts.delivered;
        sessions += 1;
    }
    eprintln!(
        "{sessions} sessions: {written} frames written, {mutated} mutated, {delivered} delivered"
    );
    assert!(
        delivered > MUTATED_FRAMES / 2,
        "too few frames got through: {delivered}"
    );
}

#[test]
fn seeded_bodies_through_the_jsonrpc_parser() {
    let mut rng = Rng::new(0x0BAD_CAFE);
    for i in 0..10_000 {
        let role = if i % 2 == 0 {
            Role::Server
        } else {
            Role::Client
        };
        let mut body = program::template_for(role, rng.below(64), rng.below(64)).into_bytes();
        let other = program::template_for(role, rng.below(64), rng.below(64));
        fuzz_harness::frames::mutate(&mut rng, &mut body, other.as_bytes());
        jsonrpc::check(&body);
        decoder::check_round_trip(&body);
    }
}

// Regression tests for the defects the fuzzing found ---------------------------------------

mod regressions {
    use std::sync::Arc;
    use std::time::Instant;

    use serde_json::{json, Value};
    use stdmcp_proto::framing::{Frame, FrameDecoder, FrameError, Framing};
    use stdmcp_proto::jsonrpc::{self, Incoming, Message, RequestId};
    use stdmcp_proto::mcp::CallToolResult;
    use stdmcp_proto::peer::{Config, Effect, Peer};

    use super::fuzz_harness::peer::catalog;

    fn feed(peer: &mut Peer, now: Instant, json: &str) {
        let frame = Frame {
            body: json.as_bytes().to_vec(),
            framing: Framing::Newline,
        };
        peer.handle_frame(now, frame);
    }

    /// The JSON texts of the frames sent, and the ids of work started.
    fn drain(peer: &mut Peer) -> (Vec<Value>, Vec<RequestId>) {
        let (mut sent, mut started) = (Vec::new(), Vec::new());
        while let Some(e) = peer.poll_effect() {
            match e {
                Effect::Send(bytes) => {
                    let mut dec = FrameDecoder::default();
                    dec.push(&bytes);
                    while let Some(Ok(f)) = dec.next_frame() {
                        sent.push(serde_json::from_slice(&f.body).unwrap());
                    }
                }
                Effect::Start(call) => started.push(call.id),
                _ => {}
            }
        }
        (sent, started)
    }

    /// Found by cargo-fuzz (target `decoder`, limit 0): a whitespace line longer than the
    /// limit was skipped when read whole but refused as too large when read in pieces (its
    /// pending part is refused before its end is seen, to bound memory). Now too large both
    /// ways.
    #[test]
    fn a_blank_line_over_the_limit_decodes_the_same_in_any_pieces() {
        let crash = b"ssag*\":\xff\xff\x05\x07\x01@\x02Content-Length: 7\r\nContent-Type: x\r\n\r\n{\"content-len\n\r\r\n\xd3\xd3\xd3\xd3\xd3";
        super::decoder::check_split_invariance(crash, &[256, 35, 110, 102], 0, true);
        for (line, max) in [
            (&b"\r\r\n"[..], 0),
            (b"     \t\n", 4),
            (b"\xef\xbb\xbf  \r\n", 1),
        ] {
            let got = super::decoder::check_split_invariance(line, &[1], max, true);
            assert!(
                matches!(got[..], [Err(FrameError::TooLarge { .. })]),
                "{line:?}: {got:?}"
            );
        }
        // Within the limit, blank lines are skipped as before.
        let got = super::decoder::check_split_invariance(b" \r\n\t\n{}\n", &[1], 2, true);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].as_ref().unwrap().body, b"{}");
    }

    /// Found by the seeded test: a second 2025-03-26 batch reusing the id of a call still
    /// running from a first batch made the refusal complete the first batch, which was
    /// removed under the second's index: "index out of bounds" in peer/batch.rs.
    #[test]
    fn a_batch_reusing_a_running_batch_id_is_answered_in_its_own_array() {
        let now = Instant::now();
        let mut peer = Peer::server(Arc::new(catalog()), Config::default());
        feed(
            &mut peer,
            now,
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
        );
        feed(
            &mut peer,
            now,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        );
        drain(&mut peer);
        let call = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"sleep","arguments":{}}}"#;
        feed(&mut peer, now, &format!("[{call}]"));
        let (sent, started) = drain(&mut peer);
        assert!(sent.is_empty());
        assert_eq!(started, vec![RequestId::number(7)]);
        // Same id while 7 runs: refused, in the second batch's own array.
        let ping = r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#;
        feed(&mut peer, now, &format!("[{call},{ping}]"));
        let (sent, started) = drain(&mut peer);
        assert!(started.is_empty());
        assert_eq!(sent.len(), 1, "{sent:?}");
        let second = sent[0].as_array().unwrap();
        assert_eq!(second.len(), 2);
        assert_eq!(second[0]["id"], 7);
        assert_eq!(second[0]["error"]["code"], -32600);
        assert_eq!(second[1]["id"], 8);
        // The first batch still gets its call's result, in its own array.
        peer.finish_tool(now, &RequestId::number(7), CallToolResult::text("slept"));
        let (sent, _) = drain(&mut peer);
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!(sent[0][0]["id"], 7);
        assert_eq!(sent[0][0]["result"]["content"][0]["text"], "slept");
    }

    /// Found by the seeded test: the client role delivered a progress notification without
    /// a token whenever some request without a token was pending (`None == None`).
    #[test]
    fn progress_without_a_token_matches_no_request() {
        let now = Instant::now();
        let mut client = Peer::client(Config::default());
        client.request("tools/call", json!({"name": "x"}), false);
        drain(&mut client);
        feed(
            &mut client,
            now,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#,
        );
        feed(
            &mut client,
            now,
            r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#,
        );
        assert!(
            client.poll_effect().is_none(),
            "progress for no request delivered"
        );
        // A request with a token still gets its progress.
        let id = client.request("tools/call", json!({"name": "x"}), true);
        drain(&mut client);
        let mut token = Vec::new();
        id.write_json(&mut token);
        let token = String::from_utf8(token).unwrap();
        feed(
            &mut client,
            now,
            &format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{token},"progress":1}}}}"#
            ),
        );
        assert!(matches!(
            client.poll_effect(),
            Some(Effect::Notification(_))
        ));
    }

    /// Found by the parser round trip: `null` params were written as `"params":null`, which
    /// JSON-RPC 2.0 and our own parser refuse (a notification sent with `Peer::notify(m,
    /// Value::Null)` was answered with an Invalid Request error).
    #[test]
    fn null_params_are_omitted_and_parse_back() {
        let mut out = Vec::new();
        jsonrpc::write_notification(&mut out, "a/b", &Value::Null).unwrap();
        assert_eq!(out, br#"{"jsonrpc":"2.0","method":"a/b"}"#);
        let mut out = Vec::new();
        jsonrpc::write_request(&mut out, &RequestId::number(1), "ping", &Value::Null).unwrap();
        let Ok(Incoming::Single(Ok(Message::Request(r)))) = jsonrpc::parse(&out) else {
            panic!("{}", String::from_utf8_lossy(&out));
        };
        assert_eq!((r.method.as_str(), r.params), ("ping", Value::Null));

        let now = Instant::now();
        let mut server = Peer::server(Arc::new(catalog()), Config::default());
        let mut client = Peer::client(Config::default());
        client.notify("notifications/initialized", Value::Null);
        let Some(Effect::Send(bytes)) = client.poll_effect() else {
            panic!("nothing sent");
        };
        let mut dec = FrameDecoder::default();
        dec.push(&bytes);
        server.handle_frame(now, dec.next_frame().unwrap().unwrap());
        assert!(
            drain(&mut server).0.is_empty(),
            "a valid notification was answered"
        );
    }
}

mod more_regressions {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use stdmcp_cli::testing::Manifest;
    use stdmcp_proto::framing::Frame;
    use stdmcp_proto::peer::{Config, Peer};

    use super::fuzz_harness::{decoder, peer::catalog};

    /// Found by cargo-fuzz (target `decoder`, limit 0): a UTF-8 BOM arriving a byte at a time
    /// was refused as too large before its last byte could make it a BOM.
    #[test]
    fn a_bom_split_across_reads_is_still_a_bom() {
        let crash = b"\x01\nCon99999998\r\n\r\"9999h:\nCon999]99999999998\r\x1a\r\n\xef\xbb\xbf";
        decoder::check_split_invariance(crash, &[256, 256, 6, 8], 0, true);
        let got = decoder::check_split_invariance(b"\xef\xbb\xbf{}\n", &[1], 2, true);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].as_ref().unwrap().body, b"{}");
    }

    /// Found by cargo-fuzz (target `manifest`): `"timeoutSeconds": 4e100` panicked in
    /// `Duration::from_secs_f64` while loading the manifest; durations are now a located
    /// manifest error beyond a year (`heartbeatSeconds` and `killGraceMs` too).
    #[test]
    fn huge_manifest_durations_are_errors_not_panics() {
        for (key, value) in [
            ("timeoutSeconds", "4e100"),
            ("heartbeatSeconds", "1e300"),
            ("killGraceMs", "1e308"),
            ("timeoutSeconds", "31536001"),
        ] {
            let text = format!(
                r#"{{"name":"m","version":"1","defaults":{{"{key}":{value}}},"tools":[]}}"#
            );
            let errors = Manifest::parse(&text, &std::env::temp_dir()).unwrap_err();
            let shown = errors[0].to_string();
            assert!(shown.contains(key) && shown.contains("a year"), "{shown}");
        }
        let text =
            r#"{"name":"m","version":"1","defaults":{"timeoutSeconds":31536000},"tools":[]}"#;
        assert!(Manifest::parse(text, &std::env::temp_dir()).is_ok());
    }

    /// A relative of the manifest crash: a heartbeat interval the clock cannot add (the Rust
    /// API takes any `Duration`) panicked in `Instant + Duration`; now it means no heartbeat.
    #[test]
    fn an_endless_heartbeat_interval_means_no_heartbeat() {
        let mut config = Config::default();
        config.heartbeat = Duration::MAX;
        let mut peer = Peer::server(Arc::new(catalog()), config);
        let now = Instant::now();
        for body in [
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{},"_meta":{"progressToken":1}}}"#,
        ] {
            let frame = Frame {
                body: body.as_bytes().to_vec(),
                framing: stdmcp_proto::framing::Framing::Newline,
            };
            peer.handle_frame(now, frame);
        }
        assert_eq!(peer.calls_in_flight(), 1);
        assert_eq!(peer.poll_timeout(), None);
        peer.handle_timeout(now + Duration::from_secs(3600));
    }
}
