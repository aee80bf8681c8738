//! Finding where an answer ends in a session's output (NUL byte, sentinel marker, prompt),
//! keeping answers within their byte cap, fresh random markers, and ANSI stripping. Pure:
//! no I/O, no clock.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes kept unscanned-safe at the end when the middle of a long answer is dropped: more
/// than any marker, and the window a prompt pattern is matched in.
const WINDOW: usize = 4096;
/// How far past its cap an answer may grow before its middle is dropped.
const SLACK: usize = 64 * 1024;

/// What ends an answer.
pub(crate) enum End<'a> {
    /// A NUL byte.
    Nul,
    /// This marker followed by a line end.
    Marker(&'a [u8]),
    /// This pattern (anchored at the end) matching the end of the output.
    Prompt(&'a regex_lite::Regex),
}

/// One answer's bytes (the middle dropped beyond the cap) and how many were dropped.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Answer {
    /// The bytes kept: all of them, or the head and the tail.
    pub bytes: Vec<u8>,
    /// Bytes dropped from the middle.
    pub omitted: u64,
}

impl Answer {
    /// The answer as text: lossy UTF-8, ANSI sequences removed if `strip`, the dropped
    /// middle marked, trailing white space trimmed.
    pub(crate) fn text(&self, cap: usize, strip: bool) -> String {
        let (head, tail, omitted) = if self.bytes.len() > cap {
            let half = cap / 2;
            let cut = self.bytes.len() - (cap - half);
            let dropped = (cut - half) as u64;
            (
                &self.bytes[..half],
                &self.bytes[cut..],
                self.omitted + dropped,
            )
        } else {
            (&self.bytes[..], &[][..], self.omitted)
        };
        let mut text = String::from_utf8_lossy(head).into_owned();
        if omitted > 0 {
            text.push_str(&format!("\n[… {omitted} bytes of output omitted …]\n"));
            text.push_str(&String::from_utf8_lossy(tail));
        }
        let text = if strip { strip_ansi(&text) } else { text };
        text.trim_end().to_owned()
    }
}

/// Where the whole of a long answer goes (the output spool): its bytes in order.
pub(super) type Sink = Box<dyn FnMut(&[u8]) + Send>;

/// Output received since the current answer began.
pub(crate) struct Pending {
    buf: Vec<u8>,
    /// Bytes before this offset were searched for a NUL or marker already.
    scanned: usize,
    omitted: u64,
    cap: usize,
    /// Gets every byte of an answer longer than `cap`: each middle part before it is
    /// dropped, the rest when the answer ends.
    sink: Option<Sink>,
    /// Bytes of `buf` before this offset went to the sink already.
    spilled: usize,
    /// An answer is awaited: its end is searched for, so only bytes searched already may be
    /// dropped from the middle (else any may: output between answers is discarded).
    awaited: bool,
}

impl Pending {
    /// Empty, for answers of at most `cap` bytes.
    pub(crate) fn new(cap: usize) -> Pending {
        Pending {
            buf: Vec::new(),
            scanned: 0,
            omitted: 0,
            cap: cap.max(2),
            sink: None,
            spilled: 0,
            awaited: false,
        }
    }

    /// An answer is awaited: keep `cap` bytes of it, and give the whole of a longer one to
    /// `sink` (`None`: the dropped middle is lost).
    pub(crate) fn await_answer(&mut self, sink: Option<Sink>, cap: usize) {
        self.sink = sink;
        self.cap = cap.max(2);
        self.awaited = true;
    }

    /// No answer is awaited any more: what comes is kept within `cap` and discarded later.
    pub(crate) fn idle(&mut self, cap: usize) {
        self.sink = None;
        self.cap = cap.max(2);
        self.awaited = false;
    }

    /// Every pending byte was looked at and none ends the answer (quiet mode, whose answer
    /// ends by time, not by a byte): the middle may be dropped.
    pub(crate) fn searched(&mut self) {
        self.scanned = self.buf.len();
    }

    /// Gives `buf[spilled..end]` to the sink.
    fn spill(&mut self, end: usize) {
        if let Some(sink) = self.sink.as_mut() {
            if end > self.spilled {
                sink(&self.buf[self.spilled..end]);
                self.spilled = end;
            }
        }
    }

    /// The answer is `buf[..end]`: if it is longer than the cap, the sink gets what it has
    /// not had yet. Nothing is spilled any more.
    fn spill_answer(&mut self, end: usize) {
        if self.spilled > 0 || end as u64 + self.omitted > self.cap as u64 {
            self.spill(end);
        }
        self.spilled = 0;
    }

    /// Appends output; drops the middle of an answer that grew far past its cap.
    pub(crate) fn push(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
        if self.buf.len() > self.cap + SLACK + WINDOW {
            let from = self.cap / 2;
            let mut to = self.buf.len() - (self.cap - from) - WINDOW;
            if self.awaited {
                // Never drop an end unseen: only what was searched, less the window in which
                // an end (a marker, a prompt) may have begun. The waiter searches at every
                // chunk, so this lags by little.
                to = to.min(self.scanned.saturating_sub(WINDOW));
            }
            if to <= from {
                return;
            }
            self.spill(to);
            self.spilled = self.spilled.saturating_sub(to - from);
            self.buf.drain(from..to);
            self.omitted += (to - from) as u64;
            self.scanned = self.scanned.saturating_sub(to - from).max(from);
        }
    }

    /// Whether byte `b` is pending.
    #[cfg(test)]
    pub(crate) fn has_byte(&self, b: u8) -> bool {
        self.buf.contains(&b)
    }

    /// True when nothing is pending.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// All that is pending, as one answer; leaves nothing pending.
    pub(crate) fn take_all(&mut self) -> Answer {
        self.spill_answer(self.buf.len());
        let bytes = std::mem::take(&mut self.buf);
        let omitted = std::mem::take(&mut self.omitted);
        self.scanned = 0;
        Answer { bytes, omitted }
    }

    /// If the answer is complete: the answer (without its end), leaving pending only what
    /// followed the end.
    pub(crate) fn find_end(&mut self, end: &End<'_>) -> Option<Answer> {
        let (stop, resume) = match end {
            End::Nul => {
                let i = memchr(0, &self.buf[self.scanned..]).map(|i| i + self.scanned);
                i.map(|i| (i, i + 1))
            }
            End::Marker(m) => {
                let from = self.scanned.saturating_sub(m.len() + 2);
                find_marker(&self.buf, m, from)
            }
            End::Prompt(re) => find_prompt(&self.buf, re).map(|i| (i, self.buf.len())),
        }
        .or_else(|| {
            self.scanned = self.buf.len();
            None
        })?;
        self.spill_answer(stop);
        let rest = self.buf.split_off(resume);
        self.buf.truncate(stop);
        let bytes = std::mem::replace(&mut self.buf, rest);
        let omitted = std::mem::take(&mut self.omitted);
        self.scanned = 0;
        Some(Answer { bytes, omitted })
    }
}

fn memchr(b: u8, s: &[u8]) -> Option<usize> {
    s.iter().position(|&x| x == b)
}

/// `marker` followed by `\n` or `\r\n` (so an echo of the command that prints it, where the
/// marker is followed by a quote, does not count): (marker start, after the line end).
fn find_marker(buf: &[u8], marker: &[u8], from: usize) -> Option<(usize, usize)> {
    let mut at = from;
    while at + marker.len() <= buf.len() {
        let i = buf[at..].windows(marker.len()).position(|w| w == marker)? + at;
        let after = &buf[i + marker.len()..];
        if after.starts_with(b"\n") {
            return Some((i, i + marker.len() + 1));
        }
        if after.starts_with(b"\r\n") {
            return Some((i, i + marker.len() + 2));
        }
        at = i + 1;
    }
    None
}

/// Where a prompt matching `re` (anchored at the end) starts in the last [`WINDOW`] bytes.
fn find_prompt(buf: &[u8], re: &regex_lite::Regex) -> Option<usize> {
    let mut start = buf.len().saturating_sub(WINDOW);
    // Start on a character boundary.
    while start < buf.len() && (buf[start] & 0xC0) == 0x80 {
        start += 1;
    }
    let text = String::from_utf8_lossy(&buf[start..]);
    let m = re.find(&text)?;
    // The match is at the end; count its length back from the end of the bytes (exact for
    // valid UTF-8, the usual case).
    let matched = text.len() - m.start();
    Some(buf.len().saturating_sub(matched))
}

/// A marker no program prints by chance and no one can predict: 128 fresh random bits from
/// the kernel per send. Without the kernel's randomness (never seen on Linux 3.17+) it falls
/// back to the clock, the pid and a counter, which is unique but guessable (logged).
pub(super) fn fresh_marker() -> String {
    let mut b = [0u8; 16];
    if let Err(e) = stdmcp::fill_random(&mut b) {
        static COUNT: AtomicU64 = AtomicU64::new(0);
        log::warn!("getrandom failed ({e}): this session marker is unique but predictable");
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        b[..8].copy_from_slice(&t.to_le_bytes());
        let n = COUNT.fetch_add(1, Ordering::Relaxed) ^ u64::from(std::process::id()) << 32;
        b[8..].copy_from_slice(&n.to_le_bytes());
    }
    format!("__stdmcp_{:032x}__", u128::from_le_bytes(b))
}

/// Removes ANSI escape sequences: CSI (`ESC [ … final`), OSC (`ESC ] … BEL` or `ESC \`), and
/// two-byte escapes; other control characters but tab, newline and carriage return too.
pub(super) fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn pending(parts: &[&[u8]]) -> Pending {
        let mut p = Pending::new(1 << 20);
        for part in parts {
            p.push(part);
        }
        p
    }

    #[test]
    fn nul_ends_an_answer_and_keeps_what_follows() {
        let mut p = pending(&[b"val x = 1", b"\0next"]);
        let a = p.find_end(&End::Nul).unwrap();
        assert_eq!(a.bytes, b"val x = 1");
        assert_eq!(p.take_all().bytes, b"next");
        let mut p = pending(&[b"no end yet"]);
        assert!(p.find_end(&End::Nul).is_none());
        p.push(b" now\0");
        assert_eq!(p.find_end(&End::Nul).unwrap().bytes, b"no end yet now");
    }

    #[test]
    fn marker_must_end_its_line() {
        let m = b"__m__";
        let mut p = pending(&[b"print(\"__m__\")\n1\n__m", b"__\r\n> "]);
        let a = p.find_end(&End::Marker(m)).unwrap();
        assert_eq!(a.bytes, b"print(\"__m__\")\n1\n");
        assert_eq!(p.take_all().bytes, b"> ");
        let mut p = pending(&[b"x __m__"]);
        assert!(p.find_end(&End::Marker(m)).is_none());
        p.push(b"\n");
        assert_eq!(p.find_end(&End::Marker(m)).unwrap().bytes, b"x ");
    }

    #[test]
    fn prompt_matches_only_at_the_end() {
        let re = regex_lite::Regex::new(r"(?:\?- )\z").unwrap();
        let mut p = pending(&[b"X = 1.\n\n?- ", b"more"]);
        assert!(p.find_end(&End::Prompt(&re)).is_none());
        let mut p = pending(&[b"X = 1.\n\n?- "]);
        assert_eq!(p.find_end(&End::Prompt(&re)).unwrap().bytes, b"X = 1.\n\n");
        assert!(p.is_empty());
        let mut p = pending(&["é → ?- ".as_bytes()]);
        assert_eq!(
            p.find_end(&End::Prompt(&re)).unwrap().bytes,
            "é → ".as_bytes()
        );
    }

    #[test]
    fn long_answers_keep_head_and_tail() {
        let mut p = Pending::new(100);
        p.push(b"HEAD");
        for _ in 0..100 {
            p.push(&[b'x'; 1000]);
        }
        p.push(b"TAIL\0");
        assert!(p.buf.len() < 100 + SLACK + WINDOW + 1000);
        let a = p.find_end(&End::Nul).unwrap();
        let text = a.text(100, true);
        assert!(text.starts_with("HEAD"), "{text}");
        assert!(text.ends_with("TAIL"), "{text}");
        assert!(text.contains("bytes of output omitted"), "{text}");
        let total = a.bytes.len() as u64 + a.omitted;
        assert_eq!(total, 100_008);
    }

    #[test]
    fn a_long_answer_goes_whole_to_the_sink_and_a_short_one_not_at_all() {
        let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let g = got.clone();
        let mut p = Pending::new(100);
        p.await_answer(
            Some(Box::new(move |b| g.lock().unwrap().extend_from_slice(b))),
            100,
        );
        p.push(b"short\0");
        assert_eq!(p.find_end(&End::Nul).unwrap().bytes, b"short");
        assert!(got.lock().unwrap().is_empty());
        let mut whole = Vec::new();
        for i in 0..200u32 {
            let chunk = format!("{i:04} ").repeat(200);
            whole.extend_from_slice(chunk.as_bytes());
            p.push(chunk.as_bytes());
            // The waiter looks at every chunk; then the middle is dropped as it comes.
            assert!(p.find_end(&End::Nul).is_none());
        }
        p.push(b"\0after");
        let a = p.find_end(&End::Nul).unwrap();
        assert!(a.omitted > 0);
        assert_eq!(*got.lock().unwrap(), whole);
        // What followed the end is the next answer's: not spilled with this one.
        assert_eq!(p.take_all().bytes, b"after");
        assert_eq!(got.lock().unwrap().len(), whole.len());
    }

    #[test]
    fn an_end_is_never_dropped_unseen() {
        // Many chunks arrive before the waiter looks: the NUL among them is still found.
        let mut p = Pending::new(100);
        p.await_answer(None, 100);
        for i in 0..200 {
            p.push(if i == 120 { b"x\0" } else { &[b'x'; 1000][..] });
        }
        let a = p.find_end(&End::Nul).expect("the NUL was kept");
        assert_eq!(a.bytes.len() as u64 + a.omitted, 120_000 + 1);
        // Searched output is dropped from the middle as it comes (memory stays bounded).
        for _ in 0..200 {
            p.push(&[b'y'; 1000]);
            assert!(p.find_end(&End::Nul).is_none());
        }
        assert!(p.buf.len() < 100 + SLACK + WINDOW + 2000, "{}", p.buf.len());
        // Between answers, anything goes.
        p.idle(100);
        for _ in 0..200 {
            p.push(&[b'z'; 1000]);
        }
        assert!(p.buf.len() < 100 + SLACK + WINDOW + 1000, "{}", p.buf.len());
    }

    #[test]
    fn markers_are_fresh() {
        let a = fresh_marker();
        let b = fresh_marker();
        assert_ne!(a, b);
        assert!(a.starts_with("__stdmcp_") && a.len() > 20);
    }

    #[test]
    fn no_marker_predicts_the_next() {
        // Each marker is random as a whole: two markers share no run of 8 hex digits, so
        // one seen in a transcript (a program's output, a log) does not give away the next.
        let hex = |m: &str| m.trim_matches('_').trim_start_matches("stdmcp_").to_owned();
        let (a, b) = (hex(&fresh_marker()), hex(&fresh_marker()));
        assert!(a.len() >= 32, "{a}");
        for i in 0..=a.len() - 8 {
            assert!(
                !b.contains(&a[i..i + 8]),
                "{a} and {b} share {}",
                &a[i..i + 8]
            );
        }
    }

    #[test]
    fn ansi_sequences_are_removed() {
        assert_eq!(strip_ansi("\u{1b}[1;31merror\u{1b}[0m: x"), "error: x");
        assert_eq!(strip_ansi("\u{1b}]0;title\u{7}ok"), "ok");
        assert_eq!(strip_ansi("\u{1b}]8;;http://x\u{1b}\\link"), "link");
        assert_eq!(strip_ansi("a\u{1b}=b\u{8}c\td\r\n"), "abc\td\r\n");
        assert_eq!(strip_ansi("plain → text"), "plain → text");
    }
}
