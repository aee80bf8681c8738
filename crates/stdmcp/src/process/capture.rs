//! Bounded capture of a child's output stream and splitting it into lines.

use std::collections::VecDeque;

/// Lines passed to `on_line` are cut to this many bytes.
pub(crate) const LINE_MAX: usize = 1024;

/// Bounded capture of one stream: the first `cap/2` bytes, a ring of the
/// last `cap - cap/2` bytes, and the total byte count.
#[derive(Clone, Debug, Default)]
pub struct Captured {
    head: Vec<u8>,
    head_cap: usize,
    tail: VecDeque<u8>,
    tail_cap: usize,
    total: u64,
}

impl Captured {
    /// An empty capture keeping at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        Captured {
            head: Vec::new(),
            head_cap,
            tail: VecDeque::new(),
            tail_cap: cap - head_cap,
            total: 0,
        }
    }

    /// Append bytes.
    pub fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        let room = self.head_cap - self.head.len();
        if room > 0 {
            let n = room.min(data.len());
            self.head.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        if data.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&data[data.len() - self.tail_cap..]);
        } else {
            let excess = (self.tail.len() + data.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..excess);
            self.tail.extend(data);
        }
    }

    /// Bytes the stream produced in total.
    pub fn total_bytes(&self) -> u64 {
        self.total
    }

    /// True if bytes were dropped from the middle.
    pub fn truncated(&self) -> bool {
        self.omitted_bytes() > 0
    }

    /// Bytes dropped from the middle.
    pub fn omitted_bytes(&self) -> u64 {
        self.total - (self.head.len() + self.tail.len()) as u64
    }

    /// The kept bytes (head then tail), without any marker.
    pub fn kept_bytes(&self) -> Vec<u8> {
        let mut v = self.head.clone();
        v.extend(self.tail.iter());
        v
    }

    /// Lossy UTF-8 text; when truncated: the head, then a line
    /// `"\n[... N bytes omitted ...]\n"`, then the tail. Multi-byte characters
    /// cut at the seams are dropped rather than shown as U+FFFD.
    pub fn text(&self) -> String {
        if !self.truncated() {
            return String::from_utf8_lossy(&self.kept_bytes()).into_owned();
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        format!(
            "{}\n[... {} bytes omitted ...]\n{}",
            String::from_utf8_lossy(complete_prefix(&self.head)),
            self.omitted_bytes(),
            String::from_utf8_lossy(complete_suffix(&tail)),
        )
    }
}

/// `b` without an incomplete UTF-8 sequence at its end.
fn complete_prefix(b: &[u8]) -> &[u8] {
    let n = b.len();
    for back in 1..=n.min(4) {
        let c = b[n - back];
        if c & 0xC0 == 0x80 {
            continue; // continuation byte
        }
        let need = match c {
            0xF0..=0xF7 => 4,
            0xE0..=0xEF => 3,
            0xC0..=0xDF => 2,
            _ => 1,
        };
        return if need > back { &b[..n - back] } else { b };
    }
    b
}

/// `b` without continuation bytes (of a character cut off) at its start.
fn complete_suffix(b: &[u8]) -> &[u8] {
    let skip = b.iter().take(3).take_while(|&&c| c & 0xC0 == 0x80).count();
    &b[skip..]
}

/// The index of the first `\n` in `data`. C's `memchr` scans many bytes per instruction;
/// the byte-at-a-time search it replaced was half of what draining a large output cost
/// (docs/bench.md, output drain).
#[allow(unsafe_code)]
fn find_newline(data: &[u8]) -> Option<usize> {
    // SAFETY: memchr reads at most `data.len()` bytes from `data`'s start, all in bounds,
    // and returns null or a pointer into that range.
    let at = unsafe { libc::memchr(data.as_ptr().cast(), i32::from(b'\n'), data.len()) };
    (!at.is_null()).then(|| at as usize - data.as_ptr() as usize)
}

/// Splits a byte stream into lines of at most `LINE_MAX` bytes.
#[derive(Default)]
pub(crate) struct LineSplitter {
    buf: Vec<u8>,
    pending: bool,
}

impl LineSplitter {
    pub(crate) fn feed(&mut self, mut data: &[u8], emit: &dyn Fn(&str)) {
        while let Some(i) = find_newline(data) {
            self.push(&data[..i]);
            self.flush(emit);
            data = &data[i + 1..];
        }
        self.push(data);
    }

    fn push(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        self.pending = true;
        let room = LINE_MAX.saturating_sub(self.buf.len());
        self.buf.extend_from_slice(&data[..room.min(data.len())]);
    }

    fn flush(&mut self, emit: &dyn Fn(&str)) {
        let mut line: &[u8] = &self.buf;
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        emit(&String::from_utf8_lossy(complete_prefix(line)));
        self.buf.clear();
        self.pending = false;
    }

    pub(crate) fn finish(&mut self, emit: &dyn Fn(&str)) {
        if self.pending {
            self.flush(emit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(cap: usize, chunks: &[&[u8]]) -> Captured {
        let mut c = Captured::new(cap);
        for ch in chunks {
            c.push(ch);
        }
        c
    }

    #[test]
    fn find_newline_finds_the_first_one_anywhere() {
        assert_eq!(find_newline(b""), None);
        assert_eq!(find_newline(b"no newline here"), None);
        assert_eq!(find_newline(b"\n"), Some(0));
        assert_eq!(find_newline(b"ab\ncd\n"), Some(2));
        let mut long = vec![b'x'; 1000];
        assert_eq!(find_newline(&long), None);
        long[999] = b'\n';
        long[700] = b'\n';
        assert_eq!(find_newline(&long), Some(700));
        assert_eq!(find_newline(&long[701..]), Some(298));
    }

    #[test]
    fn captured_small_output_is_kept_whole() {
        let c = cap(10, &[b"abc", b"def", b"ghij"]);
        assert_eq!(c.total_bytes(), 10);
        assert!(!c.truncated());
        assert_eq!(c.omitted_bytes(), 0);
        assert_eq!(c.text(), "abcdefghij");
    }

    #[test]
    fn captured_keeps_head_and_tail() {
        let c = cap(10, &[b"0123", b"456789", b"ABCDEFGHIJ", b"KLMNOP"]);
        assert_eq!(c.total_bytes(), 26);
        assert!(c.truncated());
        assert_eq!(c.omitted_bytes(), 16);
        assert_eq!(c.kept_bytes(), b"01234LMNOP");
        assert_eq!(c.text(), "01234\n[... 16 bytes omitted ...]\nLMNOP");
        // One big chunk behaves the same as many small ones.
        let d = cap(10, &[b"0123456789ABCDEFGHIJKLMNOP"]);
        assert_eq!(d.text(), c.text());
        let bytes: Vec<&[u8]> = b"0123456789ABCDEFGHIJKLMNOP".chunks(1).collect();
        assert_eq!(cap(10, &bytes).text(), c.text());
    }

    #[test]
    fn captured_odd_and_zero_caps() {
        let c = cap(5, &[b"abcdefgh"]);
        assert_eq!(c.kept_bytes(), b"abfgh");
        let z = cap(0, &[b"abc"]);
        assert_eq!(z.omitted_bytes(), 3);
        assert_eq!(z.text(), "\n[... 3 bytes omitted ...]\n");
    }

    #[test]
    fn captured_text_drops_cut_characters() {
        // "é" is 2 bytes; cap 6 => head 3 bytes "aé" ... tail 3 bytes.
        let c = cap(6, &["aéé-xyzéb".as_bytes()]);
        assert!(c.truncated());
        let t = c.text();
        assert!(!t.contains('\u{fffd}'), "{t:?}");
        assert!(t.starts_with("aé\n[..."), "{t:?}");
        assert!(t.ends_with("]\nb") || t.ends_with("]\néb"), "{t:?}");
        assert_eq!(complete_prefix("aé".as_bytes()), "aé".as_bytes());
        assert_eq!(complete_prefix(&"a€".as_bytes()[..3]), b"a");
        assert_eq!(complete_suffix(&"€b".as_bytes()[1..]), b"b");
    }

    fn split(chunks: &[&[u8]]) -> Vec<String> {
        let out = std::cell::RefCell::new(Vec::new());
        let emit = |l: &str| out.borrow_mut().push(l.to_string());
        let mut s = LineSplitter::default();
        for ch in chunks {
            s.feed(ch, &emit);
        }
        s.finish(&emit);
        out.into_inner()
    }

    #[test]
    fn line_splitter() {
        assert_eq!(
            split(&[b"a\nb", b"c\r\n\n", b"tail"]),
            ["a", "bc", "", "tail"]
        );
        assert_eq!(split(&[b"x\n"]), ["x"]);
        let long = vec![b'z'; 5000];
        let lines = split(&[&long, b"\nnext\n"]);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].len(), LINE_MAX);
        assert_eq!(lines[1], "next");
    }
}
