//! Bounded reads of a file that may be huge: a slice at a byte offset and the tail (the
//! lines matching a regular expression are in `grep.rs`). Used by the `output` tool (kept
//! outputs) and the `log` tool (log files); nothing ever reads a whole file into memory, and
//! every read stops between buffers when its call is cancelled or its deadline passes
//! ([`Stop`]).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::time::Instant;

use stdmcp::CancelToken;

/// Bytes a read returns when it gives no `limit`.
pub(crate) const DEFAULT_LIMIT: u64 = 64 * 1024;
/// The largest `limit` a read may ask for.
pub(crate) const MAX_LIMIT: u64 = 1024 * 1024;
/// Bytes read at once; cancellation and the deadline are checked between buffers.
pub(super) const BUFFER: usize = 64 * 1024;

/// When a server-side read gives up: its call's cancel token (which also fires at the call's
/// deadline and at shutdown) and deadline, checked between buffers.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stop {
    cancel: Option<CancelToken>,
    deadline: Option<Instant>,
}

impl Stop {
    /// Never gives up (for reads that are not a call's).
    pub(crate) fn never() -> Stop {
        Stop::default()
    }

    /// Gives up when `cancel` is cancelled or `deadline` passes.
    pub(crate) fn new(cancel: Option<CancelToken>, deadline: Option<Instant>) -> Stop {
        Stop { cancel, deadline }
    }

    /// The call of `ctx`: its cancel token and deadline.
    pub(crate) fn of(ctx: &stdmcp::Ctx) -> Stop {
        Stop::new(Some(ctx.cancel_token().clone()), ctx.deadline())
    }

    /// An error when the read must stop now.
    pub(crate) fn check(&self) -> io::Result<()> {
        if self.cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
            return Err(io::Error::new(
                io::ErrorKind::Interrupted,
                "the read stopped: the call was cancelled",
            ));
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the read stopped: the call's deadline passed",
            ));
        }
        Ok(())
    }
}

/// A slice of a file.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Slice {
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
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.data).into_owned()
    }
}

pub(super) fn size(file: Option<&File>) -> io::Result<u64> {
    file.map_or(Ok(0), |f| f.metadata().map(|m| m.len()))
}

/// Up to `limit` bytes from `offset` (clamped to the file's size). A slice that ends before
/// the file does ends on a UTF-8 character boundary when it can (so consecutive slices of
/// UTF-8 text decode exactly); `next` says where the following slice starts.
pub(crate) fn read_slice(
    file: Option<&File>,
    offset: u64,
    limit: u64,
    stop: &Stop,
) -> io::Result<Slice> {
    let total = size(file)?;
    let offset = offset.min(total);
    let want = limit.min(total - offset);
    let mut data = Vec::new();
    if let Some(f) = file {
        let mut buf = vec![0; BUFFER];
        while (data.len() as u64) < want {
            stop.check()?;
            let room = (want - data.len() as u64).min(BUFFER as u64) as usize;
            let n = match f.read_at(&mut buf[..room], offset + data.len() as u64) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            data.extend_from_slice(&buf[..n]);
        }
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
pub(crate) fn tail_slice(
    file: Option<&File>,
    tail: u64,
    limit: u64,
    stop: &Stop,
) -> io::Result<Slice> {
    let total = size(file)?;
    let n = tail.min(limit).min(total);
    let mut s = read_slice(file, total - n, n, stop)?;
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
                let s = read_slice(Some(&f), at, limit, &Stop::never()).unwrap();
                assert_eq!(s.total, text.len() as u64);
                if s.data.is_empty() && s.next < s.total {
                    // A character longer than the limit comes whole with a larger limit.
                    let s = read_slice(Some(&f), at, 4, &Stop::never()).unwrap();
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
        let past = read_slice(Some(&f), 1 << 40, 10, &Stop::never()).unwrap();
        assert_eq!((past.data.len(), past.next), (0, text.len() as u64));
        assert_eq!(read_slice(None, 0, 10, &Stop::never()).unwrap().total, 0);
    }

    #[test]
    fn a_cancelled_read_stops() {
        let f = file("cancel", &[b'x'; 1000]);
        let token = CancelToken::new();
        token.cancel(stdmcp::CancelReason::Client);
        let stop = Stop::new(Some(token), None);
        let e = read_slice(Some(&f), 0, 100, &stop).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Interrupted);
        assert!(tail_slice(Some(&f), 100, 100, &stop).is_err());
        // Nothing to read: nothing to stop.
        assert!(read_slice(Some(&f), 1000, 100, &stop).is_ok());
    }

    #[test]
    fn tails_start_on_characters() {
        let f = file("tail", "x€y".as_bytes());
        let t = tail_slice(Some(&f), 3, 100, &Stop::never()).unwrap();
        assert_eq!(t.text(), "y");
        assert_eq!(t.offset, 4);
        assert_eq!(
            tail_slice(Some(&f), 100, 2, &Stop::never()).unwrap().text(),
            "y"
        );
        assert_eq!(
            tail_slice(Some(&f), 100, 100, &Stop::never())
                .unwrap()
                .text(),
            "x€y"
        );
    }
}
