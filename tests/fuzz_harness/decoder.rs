//! Frame decoder invariants: the frames (and errors) decoded from a byte stream do not depend
//! on how the stream was cut into reads; no frame exceeds the limit; an NDJSON frame holds no
//! newline; memory stays bounded by about the limit plus one read.

use stdmcp_proto::framing::{Frame, FrameDecoder, FrameError, Framing, MAX_HEADER_BLOCK_LEN};

pub(crate) type Decoded = Vec<Result<Frame, FrameError>>;

/// Decodes `data` pushed in pieces of the given lengths (the rest in one last piece),
/// checking the per-frame and memory invariants.
pub(crate) fn decode_in_pieces(data: &[u8], pieces: &[usize], max: usize) -> Decoded {
    let mut dec = FrameDecoder::new(max);
    let mut out = Vec::new();
    let mut rest = data;
    let mut cuts = pieces.iter();
    while !rest.is_empty() {
        let n = cuts.next().map_or(rest.len(), |&n| n.clamp(1, rest.len()));
        let (piece, tail) = rest.split_at(n);
        rest = tail;
        dec.push(piece);
        while let Some(r) = dec.next_frame() {
            check_item(&r, max);
            out.push(r);
        }
        let bound = max + MAX_HEADER_BLOCK_LEN + piece.len() + 8;
        assert!(
            dec.buffered() <= bound,
            "decoder buffers {} bytes after a push of {} (limit {max})",
            dec.buffered(),
            piece.len()
        );
    }
    while let Some(r) = dec.finish() {
        check_item(&r, max);
        out.push(r);
    }
    assert_eq!(dec.buffered(), 0, "finish left bytes buffered");
    assert!(dec.next_frame().is_none(), "a frame after finish");
    out
}

fn check_item(r: &Result<Frame, FrameError>, max: usize) {
    match r {
        Ok(f) => {
            assert!(
                f.body.len() <= max,
                "frame of {} > limit {max}",
                f.body.len()
            );
            if f.framing == Framing::Newline {
                assert!(!f.body.contains(&b'\n'), "NDJSON frame with a newline");
                assert!(
                    !f.body.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')),
                    "blank NDJSON frame"
                );
            }
        }
        Err(FrameError::TooLarge { limit, .. }) => assert_eq!(*limit, max),
        Err(FrameError::BadHeader { detail }) => assert!(!detail.is_empty()),
        Err(other) => panic!("a frame error the harness does not know: {other:?}"),
    }
}

/// Decodes `data` whole, in the given pieces and (with `bytewise`) a byte at a time, and
/// checks that all agree.
pub(crate) fn check_split_invariance(
    data: &[u8],
    pieces: &[usize],
    max: usize,
    bytewise: bool,
) -> Decoded {
    let whole = decode_in_pieces(data, &[], max);
    let split = decode_in_pieces(data, pieces, max);
    assert_eq!(
        whole, split,
        "decoding depends on read boundaries {pieces:?} (limit {max})"
    );
    if bytewise {
        let bytewise = decode_in_pieces(data, &vec![1; data.len()], max);
        assert_eq!(
            whole, bytewise,
            "byte-at-a-time decoding differs (limit {max})"
        );
    }
    whole
}

/// Encoding then decoding a frame gives the body back, in either framing.
pub(crate) fn check_round_trip(body: &[u8]) {
    let json_like = matches!(body.first(), Some(b'{' | b'['))
        && !body.contains(&b'\n')
        && body.last() != Some(&b'\r');
    for framing in [Framing::Newline, Framing::ContentLength] {
        if framing == Framing::Newline && !json_like {
            continue;
        }
        let mut wire = Vec::new();
        stdmcp_proto::framing::encode(body, framing, &mut wire);
        let got = decode_in_pieces(&wire, &[], body.len().max(1) + 4);
        let Some(Ok(frame)) = got.first() else {
            panic!("encoded {framing:?} frame not decoded: {got:?}");
        };
        assert_eq!(frame.body, body, "{framing:?} round trip");
        assert_eq!(frame.framing, framing);
        assert_eq!(got.len(), 1, "one frame in, several out: {got:?}");
    }
}
