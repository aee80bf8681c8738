//! Sans-IO framing for JSON-RPC over a byte stream: push bytes in, pull frames out.
//!
//! Two framings are accepted and detected per frame:
//! * newline-delimited JSON: one frame per `\n`-terminated line (trailing `\r` and a
//!   leading UTF-8 BOM stripped, blank lines skipped, though one longer than the frame limit is too large);
//! * LSP style: a header block (`Content-Length: N`, other headers ignored, lines ending in
//!   `\n` or `\r\n`) terminated by an empty line, then exactly `N` body bytes.
//!
//! A line starting (after an optional BOM and spaces/tabs) with `Content-Length:` or
//! `Content-Type:` (case-insensitive) begins a header block; any other non-blank line is
//! an NDJSON frame. Memory use is bounded by about `max_frame_len` plus one push.

use std::fmt;

mod line;
use line::{
    find_nl, header_like, header_start, is_blank, is_blank_frame, parse_len, strip_line, BOM,
};

/// Default limit on the size of one frame body.
pub const DEFAULT_MAX_FRAME_LEN: usize = 64 * 1024 * 1024;
/// Limit on the total size of one Content-Length header block.
pub const MAX_HEADER_BLOCK_LEN: usize = 8 * 1024;

const ENDED_INSIDE: &str = "stream ended inside a frame";

/// How a frame was delimited on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One JSON text per line (the MCP stdio transport).
    Newline,
    /// `Content-Length` headers, a blank line, then the body (LSP style).
    ContentLength,
}

/// One decoded frame body (JSON text, not validated here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The body: JSON text, not validated here.
    pub body: Vec<u8>,
    /// How the frame was delimited.
    pub framing: Framing,
}

/// A frame that was discarded. The decoder stays usable after any error.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameError {
    /// A frame exceeded the limit; its bytes were discarded up to the next boundary.
    TooLarge {
        /// How the frame was delimited.
        framing: Framing,
        /// The limit it exceeded, in bytes.
        limit: usize,
    },
    /// A Content-Length header block that cannot be used (missing/invalid/duplicate length,
    /// header block too long); discarded up to the blank line ending the header block (or
    /// the next line if it is not a header).
    BadHeader {
        /// What is wrong with the header block.
        detail: String,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::TooLarge { framing, limit } => {
                let kind = match framing {
                    Framing::Newline => "newline-delimited",
                    Framing::ContentLength => "Content-Length",
                };
                write!(f, "{kind} frame exceeds the limit of {limit} bytes")
            }
            FrameError::BadHeader { detail } => {
                write!(f, "bad Content-Length header block: {detail}")
            }
        }
    }
}

impl std::error::Error for FrameError {}

fn bad(detail: impl Into<String>) -> FrameError {
    FrameError::BadHeader {
        detail: detail.into(),
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct HeaderBlock {
    len: Option<usize>,
    error: Option<String>,
    /// Bytes of header lines seen so far (only counted until an error is reported).
    size: usize,
    /// An error was already yielded for this block; just skip to its end.
    reported: bool,
}

impl HeaderBlock {
    fn skipping() -> Self {
        HeaderBlock {
            reported: true,
            ..Default::default()
        }
    }

    fn apply(&mut self, line: &[u8]) {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return;
        };
        if self.error.is_some()
            || !line[..colon]
                .trim_ascii()
                .eq_ignore_ascii_case(b"content-length")
        {
            return;
        }
        let value = line[colon + 1..].trim_ascii();
        if self.len.is_some() {
            self.error = Some("duplicate Content-Length header".into());
        } else if let Some(n) = parse_len(value) {
            self.len = Some(n);
        } else {
            let shown = String::from_utf8_lossy(&value[..value.len().min(64)]);
            self.error = Some(format!("invalid Content-Length value {shown:?}"));
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Between frames: NDJSON lines or the first line of a header block.
    Line,
    /// Dropping bytes through the next `\n`; afterwards `Line`, or skipping a header block.
    Discard { in_headers: bool },
    /// Inside a header block.
    Headers(HeaderBlock),
    /// Waiting for this many body bytes.
    Body(usize),
    /// Dropping this many more body bytes of an oversize frame.
    SkipBody(usize),
}

enum Step {
    Again,
    Wait,
    Out(Result<Frame, FrameError>),
}

/// Incremental decoder: [`push`](Self::push) bytes, then call
/// [`next_frame`](Self::next_frame) until it returns `None`.
#[derive(Debug)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    /// Start of unconsumed data in `buf`.
    pos: usize,
    /// `buf[pos..scan]` is known to contain no `\n`.
    scan: usize,
    max: usize,
    state: State,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FRAME_LEN)
    }
}

impl FrameDecoder {
    /// A decoder that discards frames longer than `max_frame_len` bytes.
    pub fn new(max_frame_len: usize) -> Self {
        FrameDecoder {
            buf: Vec::new(),
            pos: 0,
            scan: 0,
            max: max_frame_len,
            state: State::Line,
        }
    }

    /// The frame length limit, in bytes.
    pub fn max_frame_len(&self) -> usize {
        self.max
    }

    /// Bytes currently buffered (for tests/diagnostics).
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Append bytes read from the stream.
    pub fn push(&mut self, mut bytes: &[u8]) {
        if self.pos == self.buf.len() {
            // Drop discarded bytes straight away instead of buffering them.
            match self.state {
                State::Discard { in_headers } => match find_nl(bytes) {
                    None => return,
                    Some(i) => {
                        bytes = &bytes[i + 1..];
                        self.state = after_discard(in_headers);
                    }
                },
                State::SkipBody(n) => {
                    let k = n.min(bytes.len());
                    bytes = &bytes[k..];
                    self.state = if k == n {
                        State::Line
                    } else {
                        State::SkipBody(n - k)
                    };
                }
                _ => {}
            }
        }
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
            self.scan = 0;
        } else if self.pos > 0 && self.pos >= self.buf.len() - self.pos {
            self.buf.drain(..self.pos);
            self.scan -= self.pos;
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Next complete frame, an error for a discarded frame, or `None` when more input is
    /// needed. Incomplete input is never an error.
    pub fn next_frame(&mut self) -> Option<Result<Frame, FrameError>> {
        loop {
            let step = match std::mem::replace(&mut self.state, State::Line) {
                State::Line => self.step_line(),
                State::Discard { in_headers } => self.step_discard(in_headers),
                State::Headers(h) => self.step_headers(h),
                State::Body(n) => self.step_body(n),
                State::SkipBody(n) => self.skip_body(n),
            };
            match step {
                Step::Again => {}
                Step::Wait => return None,
                Step::Out(r) => return Some(r),
            }
        }
    }

    /// Call at end of stream: drains complete frames, then returns a final unterminated
    /// NDJSON line as a frame (if non-blank), or an error for a truncated Content-Length
    /// header/body, then `None`.
    pub fn finish(&mut self) -> Option<Result<Frame, FrameError>> {
        if let Some(r) = self.next_frame() {
            return Some(r);
        }
        let result = match std::mem::replace(&mut self.state, State::Line) {
            State::Line => {
                let line = strip_line(&self.buf[self.pos..]);
                if is_blank_frame(line, self.max) {
                    None
                } else if header_start(line, true) == Some(true) {
                    Some(Err(bad(ENDED_INSIDE)))
                } else if line.len() > self.max {
                    Some(Err(FrameError::TooLarge {
                        framing: Framing::Newline,
                        limit: self.max,
                    }))
                } else {
                    Some(Ok(Frame {
                        body: line.to_vec(),
                        framing: Framing::Newline,
                    }))
                }
            }
            State::Headers(h) if !h.reported => Some(Err(bad(ENDED_INSIDE))),
            State::Body(_) => Some(Err(bad(ENDED_INSIDE))),
            _ => None,
        };
        self.drop_pending();
        result
    }

    fn drop_pending(&mut self) {
        self.buf.clear();
        self.pos = 0;
        self.scan = 0;
    }

    /// Position of the next `\n` at or after `pos`, searching only new bytes.
    fn find_newline(&mut self) -> Option<usize> {
        match find_nl(&self.buf[self.scan..]) {
            Some(i) => Some(self.scan + i),
            None => {
                self.scan = self.buf.len();
                None
            }
        }
    }

    fn consume_to(&mut self, end: usize) {
        self.pos = end;
        self.scan = end;
    }

    fn step_line(&mut self) -> Step {
        let Some(nl) = self.find_newline() else {
            return self.line_pending();
        };
        let start = self.pos;
        self.pos = nl + 1;
        self.scan = nl + 1;
        let line = strip_line(&self.buf[start..nl]);
        if is_blank_frame(line, self.max) {
            return Step::Again;
        }
        if header_start(line, true) == Some(true) {
            let mut h = HeaderBlock {
                size: nl + 1 - start,
                ..Default::default()
            };
            h.apply(line);
            return self.after_header_line(h);
        }
        if line.len() > self.max {
            return Step::Out(Err(FrameError::TooLarge {
                framing: Framing::Newline,
                limit: self.max,
            }));
        }
        Step::Out(Ok(Frame {
            body: line.to_vec(),
            framing: Framing::Newline,
        }))
    }

    /// Unterminated line in `Line` state: wait, or give up on it if it is already too long.
    fn line_pending(&mut self) -> Step {
        let pending = &self.buf[self.pos..];
        let body = pending.strip_prefix(BOM).unwrap_or(pending);
        // The body may still lose one trailing `\r`, and a partial BOM may still become one.
        if body.len() <= self.max.saturating_add(1) || BOM.starts_with(pending) {
            return Step::Wait;
        }
        let kind = header_start(body, false);
        if kind != Some(false) && pending.len() <= MAX_HEADER_BLOCK_LEN {
            return Step::Wait;
        }
        self.drop_pending();
        if kind == Some(true) {
            self.state = State::Discard { in_headers: true };
            return Step::Out(Err(bad("header block too long")));
        }
        self.state = State::Discard { in_headers: false };
        Step::Out(Err(FrameError::TooLarge {
            framing: Framing::Newline,
            limit: self.max,
        }))
    }

    fn step_discard(&mut self, in_headers: bool) -> Step {
        match self.find_newline() {
            Some(nl) => {
                self.consume_to(nl + 1);
                self.state = after_discard(in_headers);
                Step::Again
            }
            None => {
                self.drop_pending();
                self.state = State::Discard { in_headers };
                Step::Wait
            }
        }
    }

    fn after_header_line(&mut self, mut h: HeaderBlock) -> Step {
        let too_long = !h.reported && h.size > MAX_HEADER_BLOCK_LEN;
        h.reported |= too_long;
        self.state = State::Headers(h);
        if too_long {
            Step::Out(Err(bad("header block too long")))
        } else {
            Step::Again
        }
    }

    /// Header block ended by a non-header line (left in the buffer).
    fn unterminated_headers(&mut self, h: &HeaderBlock) -> Step {
        self.state = State::Line;
        if h.reported {
            Step::Again
        } else {
            Step::Out(Err(bad("header block not terminated by an empty line")))
        }
    }

    fn step_headers(&mut self, mut h: HeaderBlock) -> Step {
        let Some(nl) = self.find_newline() else {
            let pending = &self.buf[self.pos..];
            if !is_blank(pending) && header_like(pending, false) == Some(false) {
                return self.unterminated_headers(&h);
            }
            let used = if h.reported { 0 } else { h.size };
            if used + pending.len() <= MAX_HEADER_BLOCK_LEN {
                self.state = State::Headers(h);
                return Step::Wait;
            }
            self.drop_pending();
            self.state = State::Discard { in_headers: true };
            return if h.reported {
                Step::Wait
            } else {
                Step::Out(Err(bad("header block too long")))
            };
        };
        let start = self.pos;
        let raw = &self.buf[start..nl];
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if is_blank(line) {
            self.consume_to(nl + 1);
            return self.end_headers(h);
        }
        if header_like(line, true) != Some(true) {
            return self.unterminated_headers(&h);
        }
        if !h.reported {
            h.apply(line);
            h.size += nl + 1 - start;
        }
        self.consume_to(nl + 1);
        self.after_header_line(h)
    }

    fn end_headers(&mut self, h: HeaderBlock) -> Step {
        if h.reported {
            return Step::Again;
        }
        if let Some(e) = h.error {
            return Step::Out(Err(bad(e)));
        }
        match h.len {
            None => Step::Out(Err(bad("missing Content-Length header"))),
            Some(n) if n > self.max => {
                // Never allocate for the declared length: skip the body as it arrives.
                let _ = self.skip_body(n);
                Step::Out(Err(FrameError::TooLarge {
                    framing: Framing::ContentLength,
                    limit: self.max,
                }))
            }
            Some(n) => self.step_body(n),
        }
    }

    fn step_body(&mut self, n: usize) -> Step {
        if self.buf.len() - self.pos < n {
            self.state = State::Body(n);
            return Step::Wait;
        }
        let body = self.buf[self.pos..self.pos + n].to_vec();
        self.consume_to(self.pos + n);
        Step::Out(Ok(Frame {
            body,
            framing: Framing::ContentLength,
        }))
    }

    fn skip_body(&mut self, n: usize) -> Step {
        let k = n.min(self.buf.len() - self.pos);
        self.consume_to(self.pos + k);
        if k == n {
            Step::Again
        } else {
            self.state = State::SkipBody(n - k);
            Step::Wait
        }
    }
}

fn after_discard(in_headers: bool) -> State {
    if in_headers {
        State::Headers(HeaderBlock::skipping())
    } else {
        State::Line
    }
}

/// Append one encoded frame for `json` (compact JSON text, no newline inside) to `out`:
/// `Newline` => `json + "\n"`; `ContentLength` => `"Content-Length: N\r\n\r\n" + json`.
pub fn encode(json: &[u8], framing: Framing, out: &mut Vec<u8>) {
    match framing {
        Framing::Newline => {
            out.reserve(json.len() + 1);
            out.extend_from_slice(json);
            out.push(b'\n');
        }
        Framing::ContentLength => {
            use std::io::Write;
            out.reserve(json.len() + 40);
            // Writing into a Vec cannot fail.
            let _ = write!(out, "Content-Length: {}\r\n\r\n", json.len());
            out.extend_from_slice(json);
        }
    }
}

/// How much [`read_frames`] asks `read` for at a time.
const READ_CHUNK: usize = 64 * 1024;

/// Reads `input` until end of input, a read error, or `each` returns false, pushing what it
/// reads into `decoder` and handing `each` the frames every read completes. A read that was
/// interrupted by a signal is retried. Returns whether input ended (`Ok(true)`) or `each`
/// stopped (`Ok(false)`); what is left in `decoder` at the end is the caller's, to `finish`.
pub fn read_frames(
    input: &mut dyn std::io::Read,
    decoder: &mut FrameDecoder,
    mut each: impl FnMut(&mut dyn Iterator<Item = Result<Frame, FrameError>>) -> bool,
) -> std::io::Result<bool> {
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        match input.read(&mut buf) {
            Ok(0) => return Ok(true),
            Ok(n) => {
                decoder.push(&buf[..n]);
                if !each(&mut std::iter::from_fn(|| decoder.next_frame())) {
                    return Ok(false);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Frames an owned message: with newline framing its own buffer gets the newline (no copy).
pub fn frame(mut json: Vec<u8>, framing: Framing) -> Vec<u8> {
    match framing {
        Framing::Newline => {
            json.push(b'\n');
            json
        }
        Framing::ContentLength => {
            let mut out = Vec::with_capacity(json.len() + 24);
            encode(&json, framing, &mut out);
            out
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
