use super::*;

type Item = Result<Frame, FrameError>;

fn nd(s: &str) -> Item {
    Ok(Frame {
        body: s.as_bytes().to_vec(),
        framing: Framing::Newline,
    })
}
fn cl(s: &str) -> Item {
    Ok(Frame {
        body: s.as_bytes().to_vec(),
        framing: Framing::ContentLength,
    })
}
fn too_large(framing: Framing, limit: usize) -> Item {
    Err(FrameError::TooLarge { framing, limit })
}
fn is_bad(item: &Item) -> bool {
    matches!(item, Err(FrameError::BadHeader { .. }))
}
fn drain(d: &mut FrameDecoder, out: &mut Vec<Item>) {
    while let Some(r) = d.next_frame() {
        out.push(r);
    }
}
fn finish(d: &mut FrameDecoder, out: &mut Vec<Item>) {
    while let Some(r) = d.finish() {
        out.push(r);
    }
}
/// Feed `s` in chunks of `chunk` bytes, draining after each push; returns the items and
/// the largest `buffered()` seen right after a push.
fn feed(limit: usize, s: &[u8], chunk: usize) -> (Vec<Item>, usize) {
    let mut d = FrameDecoder::new(limit);
    let (mut out, mut peak) = (Vec::new(), 0);
    for c in s.chunks(chunk) {
        d.push(c);
        peak = peak.max(d.buffered());
        drain(&mut d, &mut out);
    }
    finish(&mut d, &mut out);
    (out, peak)
}

fn streams() -> Vec<(&'static [u8], Vec<Item>)> {
    vec![
            (b"{\"a\":1}\n{\"b\":2}\n[3]\n", vec![nd("{\"a\":1}"), nd("{\"b\":2}"), nd("[3]")]),
            (
                b"Content-Length: 7\r\n\r\n{\"a\":1}content-length:3\ncontent-type: x\n\n[2]CONTENT-LENGTH:  2 \r\n\r\n{}",
                vec![cl("{\"a\":1}"), cl("[2]"), cl("{}")],
            ),
            (
                b"\xEF\xBB\xBF{\"a\":1}\r\n\r\n \t\r\nContent-Type: application/json\r\nContent-Length: 8\r\n\r\n{\"b\":\n2}\n\xEF\xBB\xBF {\"c\":3} \r\n",
                vec![nd("{\"a\":1}"), cl("{\"b\":\n2}"), nd(" {\"c\":3} ")],
            ),
            (b"\r\n\n  \n{}\r\n\r\n\t\r\n[1]", vec![nd("{}"), nd("[1]")]),
        ]
}

#[test]
fn every_split_point_and_byte_by_byte() {
    for (s, expected) in streams() {
        for i in 0..=s.len() {
            let mut d = FrameDecoder::default();
            let mut out = Vec::new();
            d.push(&s[..i]);
            drain(&mut d, &mut out);
            d.push(&s[i..]);
            drain(&mut d, &mut out);
            finish(&mut d, &mut out);
            assert_eq!(
                out,
                expected,
                "split at {i} of {:?}",
                String::from_utf8_lossy(s)
            );
            assert_eq!(d.buffered(), 0);
        }
        assert_eq!(feed(DEFAULT_MAX_FRAME_LEN, s, 1).0, expected);
    }
}

#[test]
fn strict_prefixes_are_incomplete() {
    let frames: [&[u8]; 3] = [
        b"{\"a\":1}\r\n",
        b"\xEF\xBB\xBFContent-Length: 7\r\nX-Y: z\r\n\r\n{\"a\":1}",
        b"\n\r\n[1]\n",
    ];
    for s in frames {
        for i in 0..s.len() {
            let mut d = FrameDecoder::default();
            d.push(&s[..i]);
            assert_eq!(
                d.next_frame(),
                None,
                "prefix {i} of {:?}",
                String::from_utf8_lossy(s)
            );
        }
        let mut d = FrameDecoder::default();
        d.push(s);
        assert!(matches!(d.next_frame(), Some(Ok(_))));
        assert_eq!(d.next_frame(), None);
    }
}

#[test]
fn oversize_ndjson_then_valid_frame() {
    let limit = 64;
    let mut s = vec![b'x'; 1000];
    s.extend_from_slice(b"\n{\"ok\":1}\n");
    for chunk in [1, 7, 64, 65, 200, s.len()] {
        let (out, peak) = feed(limit, &s, chunk);
        assert_eq!(
            out,
            vec![too_large(Framing::Newline, limit), nd("{\"ok\":1}")],
            "chunk {chunk}"
        );
        assert!(peak <= limit + chunk + 4, "chunk {chunk}: peak {peak}");
    }
    // Exactly at the limit (with CRLF and BOM) is fine; one byte over is not.
    let ok = format!("\u{feff}{}\r\n", "y".repeat(limit));
    let over = format!("{}\r\n[1]\n", "z".repeat(limit + 1));
    for chunk in [1, 3, 100] {
        assert_eq!(
            feed(limit, ok.as_bytes(), chunk).0,
            vec![nd(&"y".repeat(limit))]
        );
        assert_eq!(
            feed(limit, over.as_bytes(), chunk).0,
            vec![too_large(Framing::Newline, limit), nd("[1]")]
        );
    }
}

#[test]
fn oversize_content_length_is_skipped_without_buffering() {
    let limit = 64;
    let mut s = b"Content-Length: 1000\r\n\r\n".to_vec();
    s.extend_from_slice(&[b'{'; 1000]);
    s.extend_from_slice(b"Content-Length: 2\r\n\r\n{}[1]\n");
    for chunk in [1, 10, 100, s.len()] {
        let (out, peak) = feed(limit, &s, chunk);
        assert_eq!(
            out,
            vec![
                too_large(Framing::ContentLength, limit),
                cl("{}"),
                nd("[1]")
            ],
            "chunk {chunk}"
        );
        assert!(peak <= limit + chunk + 4, "chunk {chunk}: peak {peak}");
    }
    // A huge declared length never allocates; the body bytes are dropped as they come.
    let mut d = FrameDecoder::new(limit);
    d.push(b"Content-Length: 1000000000000000\r\n\r\n");
    assert_eq!(
        d.next_frame(),
        Some(too_large(Framing::ContentLength, limit))
    );
    for _ in 0..100 {
        d.push(&[b'a'; 4096]);
        assert_eq!(d.next_frame(), None);
        assert_eq!(d.buffered(), 0);
    }
    assert!(d.buf.capacity() < 64 * 1024);
    assert_eq!(d.finish(), None);
}

#[test]
fn bad_headers_resync() {
    let cases: [&[u8]; 6] = [
        b"Content-Length: abc\r\n\r\n{\"a\":1}\n",
        b"Content-Length: -1\r\nContent-Type: x\r\n\r\n{\"a\":1}\n",
        b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{\"a\":1}\n",
        b"Content-Type: x\r\n\r\n{\"a\":1}\n",
        b"Content-Length: 99999999999999999999999\r\n\r\n{\"a\":1}\n",
        b"Content-Length: 5\r\n{\"a\":1}\n",
    ];
    for s in cases {
        for chunk in [1, 2, 5, s.len()] {
            let (out, _) = feed(64, s, chunk);
            assert_eq!(
                out.len(),
                2,
                "{:?} chunk {chunk}: {out:?}",
                String::from_utf8_lossy(s)
            );
            assert!(is_bad(&out[0]));
            assert_eq!(out[1], nd("{\"a\":1}"));
        }
    }
    // Header block too long (one huge line, or many lines), then a valid frame.
    let long_line = format!(
        "Content-Length: 5\r\nX-Pad: {}\r\n\r\n[1]\n",
        "p".repeat(9000)
    );
    let many = format!(
        "Content-Length: 5\r\n{}\r\n[1]\n",
        "X-A: b\r\n".repeat(2000)
    );
    let first = format!("Content-Length: 5{}\r\n\r\n[1]\n", " ".repeat(9000));
    for s in [long_line, many, first] {
        for chunk in [1, 7, 1000, s.len()] {
            let (out, peak) = feed(64, s.as_bytes(), chunk);
            assert_eq!(out.len(), 2, "chunk {chunk}: {out:?}");
            assert!(is_bad(&out[0]));
            assert_eq!(out[1], nd("[1]"));
            assert!(peak <= MAX_HEADER_BLOCK_LEN + chunk);
        }
    }
}

#[test]
fn finish_behaviour() {
    let cases: [(&[u8], Option<Item>); 6] = [
        (b"{\"a\":1}\n{\"b\":2}\r", Some(nd("{\"b\":2}"))),
        (b"{\"a\":1}\n  \r", None),
        (
            b"{\"a\":1}\nContent-Length: 10\r\n\r\n{\"a\"",
            Some(Err(bad(ENDED_INSIDE))),
        ),
        (
            b"{\"a\":1}\nContent-Length: 10\r\n",
            Some(Err(bad(ENDED_INSIDE))),
        ),
        (
            b"{\"a\":1}\ncontent-length: 10",
            Some(Err(bad(ENDED_INSIDE))),
        ),
        (b"{\"a\":1}\nhello", Some(nd("hello"))),
    ];
    for (s, last) in cases {
        let mut d = FrameDecoder::default();
        d.push(s);
        assert_eq!(d.next_frame(), Some(nd("{\"a\":1}")));
        assert_eq!(d.next_frame(), None);
        assert_eq!(d.finish(), last);
        assert_eq!(d.finish(), None);
        assert_eq!(d.buffered(), 0);
    }
}

#[test]
fn encode_round_trip() {
    let msgs: [&str; 4] = [
        "{\"jsonrpc\":\"2.0\",\"id\":1}",
        "[]",
        "{}",
        &"9".repeat(12345),
    ];
    for framing in [Framing::Newline, Framing::ContentLength] {
        let mut wire = Vec::new();
        for m in msgs {
            encode(m.as_bytes(), framing, &mut wire);
        }
        let expected: Vec<Item> = msgs
            .iter()
            .map(|m| {
                Ok(Frame {
                    body: m.as_bytes().to_vec(),
                    framing,
                })
            })
            .collect();
        for chunk in [1, 13, wire.len()] {
            assert_eq!(feed(DEFAULT_MAX_FRAME_LEN, &wire, chunk).0, expected);
        }
    }
    let mut out = Vec::new();
    encode(b"{}", Framing::ContentLength, &mut out);
    assert_eq!(out, b"Content-Length: 2\r\n\r\n{}");
    let e = FrameError::TooLarge {
        framing: Framing::Newline,
        limit: 5,
    };
    assert_eq!(
        e.to_string(),
        "newline-delimited frame exceeds the limit of 5 bytes"
    );
}

#[test]
fn frame_matches_encode_for_both_framings() {
    for framing in [Framing::Newline, Framing::ContentLength] {
        let mut want = Vec::new();
        encode(br#"{"a":1}"#, framing, &mut want);
        assert_eq!(frame(br#"{"a":1}"#.to_vec(), framing), want);
    }
}

/// A reader that is interrupted by a signal before each chunk it gives.
struct Interrupting {
    chunks: Vec<&'static [u8]>,
    interrupted: bool,
}

impl std::io::Read for Interrupting {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.chunks.is_empty() {
            return Ok(0);
        }
        self.interrupted = !self.interrupted;
        if self.interrupted {
            return Err(std::io::ErrorKind::Interrupted.into());
        }
        let chunk = self.chunks.remove(0);
        buf[..chunk.len()].copy_from_slice(chunk);
        Ok(chunk.len())
    }
}

#[test]
fn read_frames_retries_interrupted_reads_and_leaves_the_tail_to_finish() {
    let mut input = Interrupting {
        chunks: vec![b"{\"a\":1}\n{\"b\"", b":2}\n{\"c\":3}"],
        interrupted: false,
    };
    let mut decoder = FrameDecoder::default();
    let mut got = Vec::new();
    let ended = read_frames(&mut input, &mut decoder, |frames| {
        got.extend(frames);
        true
    });
    assert!(ended.unwrap());
    assert_eq!(got, vec![nd(r#"{"a":1}"#), nd(r#"{"b":2}"#)]);
    assert_eq!(decoder.finish(), Some(nd(r#"{"c":3}"#)));
}

#[test]
fn read_frames_stops_when_told() {
    let mut input: &[u8] = b"{\"a\":1}\n{\"b\":2}\n";
    let mut decoder = FrameDecoder::default();
    let mut calls = 0;
    let ended = read_frames(&mut input, &mut decoder, |_| {
        calls += 1;
        false
    });
    assert!(!ended.unwrap());
    assert_eq!(calls, 1);
}
