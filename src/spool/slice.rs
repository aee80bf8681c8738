//! Bounded reads of a file that may be huge: a slice at a byte offset, the tail, and the
//! lines matching a regular expression. Used by the `output` tool (kept outputs) and the
//! `log` tool (log files); nothing ever reads a whole file into memory.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};

use regex_lite::Regex;

/// Bytes a read returns when it gives no `limit`.
pub const DEFAULT_LIMIT: u64 = 64 * 1024;
/// The largest `limit` a read may ask for.
pub const MAX_LIMIT: u64 = 1024 * 1024;
/// A matching line is shown (and matched) up to this many bytes.
const GREP_LINE_MAX: usize = 4096;

/// A slice of a file.
#[derive(Clone, Debug, PartialEq)]
pub struct Slice {
    /// The bytes, from `offset` to `next`.
    pub data: Vec<u8>,
    /// Where they start.
    pub offset: u64,
    /// Where the next slice starts (`total` at the end).
    pub next: u64,
    /// The file's size when it was read.
    pub total: u64,
}

impl Slice {
    /// The bytes as text (lossy UTF-8).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.data).into_owned()
    }
}

fn size(file: Option<&File>) -> io::Result<u64> {
    file.map_or(Ok(0), |f| f.metadata().map(|m| m.len()))
}

/// Up to `limit` bytes from `offset` (clamped to the file's size). A slice that ends before
/// the file does ends on a UTF-8 character boundary when it can (so consecutive slices of
/// UTF-8 text decode exactly); `next` says where the following slice starts.
pub fn read_slice(file: Option<&File>, offset: u64, limit: u64) -> io::Result<Slice> {
    let total = size(file)?;
    let offset = offset.min(total);
    let want = limit.min(total - offset);
    let mut data = Vec::with_capacity(usize::try_from(want).unwrap_or(0));
    if let Some(mut f) = file {
        f.seek(SeekFrom::Start(offset))?;
        f.take(want).read_to_end(&mut data)?;
    }
    if offset + (data.len() as u64) < total {
        let keep = char_boundary(&data);
        data.truncate(keep);
    }
    Ok(Slice {
        next: offset + data.len() as u64,
        offset,
        total,
        data,
    })
}

/// The last `tail` bytes, at most `limit` of them.
pub fn tail_slice(file: Option<&File>, tail: u64, limit: u64) -> io::Result<Slice> {
    let total = size(file)?;
    let n = tail.min(limit).min(total);
    let mut s = read_slice(file, total - n, n)?;
    // Do not start inside a character either.
    let skip = s
        .data
        .iter()
        .take(3)
        .take_while(|&&c| c & 0xC0 == 0x80)
        .count();
    if skip < s.data.len() {
        s.data.drain(..skip);
        s.offset += skip as u64;
    }
    Ok(s)
}

/// The length of the longest prefix of `b` that does not end inside a UTF-8 character
/// (`b.len()` for bytes that are not UTF-8 there).
fn char_boundary(b: &[u8]) -> usize {
    let n = b.len();
    for back in 1..=n.min(4) {
        let c = b[n - back];
        if c & 0xC0 == 0x80 {
            continue;
        }
        let need = match c {
            0xF0..=0xF7 => 4,
            0xE0..=0xEF => 3,
            0xC0..=0xDF => 2,
            _ => 1,
        };
        return if need > back { n - back } else { n };
    }
    n
}

/// Lines matching a pattern, from a scan that started at `offset`.
#[derive(Clone, Debug, PartialEq)]
pub struct Grep {
    /// `(byte offset of the line, the line)` for each match, lines cut to 4 KiB.
    pub lines: Vec<(u64, String)>,
    /// Where the scan stopped: the next scan starts here (`total` when it reached the end).
    pub next: u64,
    /// The file's size when the scan started.
    pub total: u64,
}

/// Scans the lines from `offset` (a line start) for `re`, until the matches shown take
/// `limit` bytes or the file ends. Each line is matched on its first 4 KiB.
pub fn grep(file: Option<&File>, offset: u64, re: &Regex, limit: u64) -> io::Result<Grep> {
    let total = size(file)?;
    let mut out = Grep {
        lines: Vec::new(),
        next: offset.min(total),
        total,
    };
    let Some(mut f) = file else { return Ok(out) };
    f.seek(SeekFrom::Start(out.next))?;
    let mut r = BufReader::with_capacity(64 * 1024, f.take(total - out.next));
    let mut shown = 0u64;
    let mut line = Vec::new();
    loop {
        let start = out.next;
        line.clear();
        let n = read_line_capped(&mut r, &mut line)?;
        if n == 0 {
            break;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        if re.is_match(text) {
            shown += text.len() as u64 + 16;
            out.lines.push((start, text.to_owned()));
        }
        out.next += n;
        if shown >= limit {
            break;
        }
    }
    Ok(out)
}

/// Reads one line (through its newline) and returns its length, keeping only its first
/// [`GREP_LINE_MAX`] bytes in `line`.
fn read_line_capped(r: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<u64> {
    let mut n = 0u64;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(n);
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        let room = GREP_LINE_MAX.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..room.min(chunk.len())]);
        let used = chunk.len();
        n += used as u64;
        r.consume(used);
        if done {
            return Ok(n);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(name: &str, data: &[u8]) -> File {
        let p = std::env::temp_dir().join(format!("stdmcp-slice-{}-{name}", std::process::id()));
        std::fs::File::create(&p).unwrap().write_all(data).unwrap();
        let f = File::open(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        f
    }

    #[test]
    fn slices_cover_the_file_exactly_and_end_on_characters() {
        let text = "aé€😀z".repeat(50);
        let f = file("utf8", text.as_bytes());
        for limit in 1..9 {
            let (mut at, mut back) = (0, String::new());
            loop {
                let s = read_slice(Some(&f), at, limit).unwrap();
                assert_eq!(s.total, text.len() as u64);
                if s.data.is_empty() && s.next < s.total {
                    // A character longer than the limit comes whole with a larger limit.
                    let s = read_slice(Some(&f), at, 4).unwrap();
                    back.push_str(&s.text());
                    at = s.next;
                    continue;
                }
                back.push_str(&s.text());
                if s.next == s.total {
                    break;
                }
                at = s.next;
            }
            assert_eq!(back, text, "limit {limit}");
        }
        let past = read_slice(Some(&f), 1 << 40, 10).unwrap();
        assert_eq!((past.data.len(), past.next), (0, text.len() as u64));
        assert_eq!(read_slice(None, 0, 10).unwrap().total, 0);
    }

    #[test]
    fn tails_start_on_characters() {
        let f = file("tail", "x€y".as_bytes());
        let t = tail_slice(Some(&f), 3, 100).unwrap();
        assert_eq!(t.text(), "y");
        assert_eq!(t.offset, 4);
        assert_eq!(tail_slice(Some(&f), 100, 2).unwrap().text(), "y");
        assert_eq!(tail_slice(Some(&f), 100, 100).unwrap().text(), "x€y");
    }

    #[test]
    fn grep_finds_lines_and_resumes() {
        let mut data = String::new();
        for i in 0..1000 {
            data.push_str(&format!(
                "line {i}{}\n",
                if i % 100 == 7 { " ERROR" } else { "" }
            ));
        }
        data.push_str("ERROR ");
        data.push_str(&"x".repeat(10_000));
        data.push_str(" the end");
        let f = file("grep", data.as_bytes());
        let re = Regex::new("ERR(OR)").unwrap();
        let all = grep(Some(&f), 0, &re, MAX_LIMIT).unwrap();
        assert_eq!(all.lines.len(), 11);
        assert_eq!(all.lines[0].1, "line 7 ERROR");
        assert_eq!(all.lines[0].0, data.find("line 7 ").unwrap() as u64);
        // The long last line is matched on its first 4 KiB only.
        assert!(!all.lines[10].1.contains("end"));
        assert_eq!(all.next, data.len() as u64);
        // A small limit stops early; the next scan resumes where it stopped.
        let first = grep(Some(&f), 0, &re, 1).unwrap();
        assert_eq!(first.lines.len(), 1);
        let rest = grep(Some(&f), first.next, &re, MAX_LIMIT).unwrap();
        assert_eq!(rest.lines.len(), 10);
        assert_eq!(rest.lines[0].1, "line 107 ERROR");
    }
}
