//! The lines of a file that match a regular expression, scanned in bounded steps: one scan
//! runs at most [`scan_time`] (5 s by default; a costly pattern matches slowly), skips the
//! holes of a sparse file without reading them (`lseek(SEEK_DATA)`, `lseek(SEEK_HOLE)`), stops
//! between buffers and between the lines it matches when its call is cancelled or its deadline
//! passes, and says where the next scan goes on.
//!
//! It runs at memory speed when the pattern has literals every match contains
//! ([`super::literal`]): each buffer is searched for them ([`super::find`]) and only the lines
//! that hold one are given to the regular expression; the lines between are skipped whole.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use memchr::{memchr, memrchr};
use regex_lite::Regex;

use super::find::{Finder, Hits};
use super::slice::{size, Stop};

/// A matching line is shown (and matched) up to this many bytes.
const GREP_LINE_MAX: usize = 4096;
/// Bytes a scan reads at once: cancellation, the deadline and the time bound are checked
/// between buffers (and between the lines given to the regular expression).
const SCAN_BUFFER: usize = 256 * 1024;
/// Longest time one scan runs by default: README "Limits".
pub(super) const MAX_SCAN_TIME: Duration = Duration::from_secs(5);
/// The environment variable that overrides [`MAX_SCAN_TIME`] (whole seconds, at least 1).
pub(super) const SCAN_SECONDS_ENV: &str = "STDMCP_GREP_SECONDS";

/// The time bound of one scan: [`SCAN_SECONDS_ENV`], else [`MAX_SCAN_TIME`].
pub(crate) fn scan_time() -> Duration {
    static TIME: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *TIME.get_or_init(|| match std::env::var(SCAN_SECONDS_ENV) {
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(n) if n >= 1 => Duration::from_secs(n),
            _ => {
                log::warn!("{SCAN_SECONDS_ENV}={v} ignored (whole seconds, at least 1)");
                MAX_SCAN_TIME
            }
        },
        Err(_) => MAX_SCAN_TIME,
    })
}

/// Why a scan stopped.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Ended {
    /// It reached the end of the file.
    End,
    /// The matching lines shown reached the read's `limit`.
    Limit,
    /// It ran for [`scan_time`].
    Bound,
}

/// Lines matching a pattern, from a scan that started at `offset`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Grep {
    /// `(byte offset of the line, the line)` for each match, lines cut to 4 KiB.
    pub lines: Vec<(u64, String)>,
    /// Where the scan stopped: the next scan starts here (`total` when it reached the end).
    pub next: u64,
    /// The file's size when the scan started.
    pub total: u64,
    /// Bytes of data read (holes skipped are not counted).
    pub scanned: u64,
    /// Why it stopped.
    pub ended: Ended,
    /// It stopped inside a line longer than one scan reaches (`next` is not a line start).
    pub inside_line: bool,
}

impl Grep {
    /// A search from `next` of a file of `total` bytes that has found nothing yet.
    fn nothing_yet(next: u64, total: u64) -> Grep {
        Grep {
            lines: Vec::new(),
            next,
            total,
            scanned: 0,
            ended: Ended::End,
            inside_line: false,
        }
    }
}

/// When a scan stops for its bound: at `until`; and, in the unit tests only, once it has
/// read `bytes` (so that they can stop a scan at a place they know).
#[derive(Clone, Copy, Debug)]
struct Bound {
    until: Instant,
    bytes: u64,
}

impl Bound {
    fn reached(&self, scanned: u64) -> bool {
        scanned >= self.bytes || self.time_up()
    }

    fn time_up(&self) -> bool {
        Instant::now() >= self.until
    }
}

/// Scans the lines from `offset` (a line start) for `re`, until the matches shown take
/// `limit` bytes, [`scan_time`] passed, or the file ends. Each line is matched on its first
/// 4 KiB. Cancellation and the deadline are checked between buffers and between the lines
/// given to `re`.
pub(crate) fn grep(
    file: Option<&File>,
    offset: u64,
    re: &Regex,
    limit: u64,
    stop: &Stop,
) -> io::Result<Grep> {
    let bound = Bound {
        until: Instant::now() + scan_time(),
        bytes: u64::MAX,
    };
    grep_within(file, (offset, limit), re, stop, bound)
}

/// [`grep`] within `bound`.
fn grep_within(
    file: Option<&File>,
    (offset, limit): (u64, u64),
    re: &Regex,
    stop: &Stop,
    bound: Bound,
) -> io::Result<Grep> {
    let total = size(file)?;
    let start = offset.min(total);
    let finder = super::literal::required(re.as_str()).map(|l| Finder::new(&l));
    let mut scan = Scan {
        out: Grep::nothing_yet(start, total),
        re,
        finder: finder.as_ref(),
        limit,
        shown: 0,
        line: Line {
            start,
            head: Vec::new(),
        },
        from: start,
        stop,
        bound,
    };
    let Some(f) = file else { return Ok(scan.out) };
    let mut pos = start;
    let mut buf = vec![0u8; SCAN_BUFFER];
    // The end of the data region `pos` is in (holes start there).
    let mut data_end = pos;
    while pos < total {
        stop.check()?;
        if bound.reached(scan.out.scanned) {
            scan.bound_reached(pos);
            return Ok(scan.out);
        }
        if pos >= data_end {
            match data_region(f, pos, total)? {
                Region::Hole(data) => {
                    // A hole reads as zeros: no newline, so it only lengthens the current line.
                    scan.line.push_zeros(data - pos);
                    pos = data;
                    continue;
                }
                Region::DataUntil(end) => data_end = end,
            }
        }
        let want = (data_end - pos)
            .min(SCAN_BUFFER as u64)
            .min(bound.bytes - scan.out.scanned) as usize;
        let n = match f.read_at(&mut buf[..want], pos) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        scan.out.scanned += n as u64;
        if let Some(ended) = scan.buffer(&buf[..n], pos)? {
            scan.out.ended = ended;
            return Ok(scan.out);
        }
        pos += n as u64;
    }
    if pos > scan.line.start {
        // The last line has no newline.
        scan.end_pending();
        scan.out.next = pos;
    }
    Ok(scan.out)
}

/// The line being read, begun in an earlier buffer (or a hole).
struct Line {
    start: u64,
    /// Its first [`GREP_LINE_MAX`] bytes so far.
    head: Vec<u8>,
}

impl Line {
    fn push(&mut self, bytes: &[u8]) {
        let room = GREP_LINE_MAX.saturating_sub(self.head.len());
        self.head.extend_from_slice(&bytes[..room.min(bytes.len())]);
    }

    fn push_zeros(&mut self, n: u64) {
        let room = GREP_LINE_MAX.saturating_sub(self.head.len()) as u64;
        self.head.resize(self.head.len() + n.min(room) as usize, 0);
    }
}

/// One scan under way.
struct Scan<'a> {
    out: Grep,
    re: &'a Regex,
    /// The pattern's literals: only lines holding one can match (`None`: any line can).
    finder: Option<&'a Finder>,
    limit: u64,
    /// Bytes of matches so far, as the limit counts them.
    shown: u64,
    /// The line that began before the buffer being read and goes on in it.
    line: Line,
    /// Where the scan started.
    from: u64,
    stop: &'a Stop,
    bound: Bound,
}

impl Scan<'_> {
    /// Scans the buffer `data`, which starts at byte `at` of the file: the line begun before
    /// it up to its first newline, then each line that holds a literal (every line, without
    /// literals). Whether the scan ends here: the matches reached the limit (`out.next` is
    /// after the last line matched), or the bound was reached (`out.next` is the line not
    /// matched yet). The buffer's last line, unless it ends with a newline, is left begun.
    fn buffer(&mut self, data: &[u8], at: u64) -> io::Result<Option<Ended>> {
        let mut i = 0;
        if self.line.start < at {
            let Some(nl) = memchr(b'\n', data) else {
                self.line.push(data);
                return Ok(None);
            };
            self.line.push(&data[..=nl]);
            self.stop.check()?;
            self.end_pending();
            i = nl + 1;
            if self.next_line(at + i as u64) {
                return Ok(Some(Ended::Limit));
            }
        }
        let mut hits = self.finder.map(|f| f.hits(data));
        while let Some(h) = next_candidate(hits.as_mut(), data, i) {
            let ls = memrchr(b'\n', &data[i..h]).map_or(i, |k| i + k + 1);
            let Some(k) = memchr(b'\n', &data[h..]) else {
                // It goes on in the next buffer: begun below.
                break;
            };
            let end = h + k + 1;
            // A costly pattern may take long per line: stop between lines, once the scan
            // has gone past its first line (so that every scan moves on).
            self.stop.check()?;
            if at + ls as u64 > self.from && self.bound.time_up() {
                self.out.next = at + ls as u64;
                return Ok(Some(Ended::Bound));
            }
            self.match_line(at + ls as u64, &data[ls..end.min(ls + GREP_LINE_MAX)]);
            i = end;
            if self.next_line(at + i as u64) {
                return Ok(Some(Ended::Limit));
            }
        }
        // The lines left hold no literal; the last one, after the last newline, is begun.
        let begun = memrchr(b'\n', &data[i..]).map_or(i, |k| i + k + 1);
        self.out.next = at + begun as u64;
        self.line.start = at + begun as u64;
        self.line.head.clear();
        self.line.push(&data[begun..]);
        Ok(None)
    }

    /// The next line starts at `pos`: the scan goes on from there. True when the matches
    /// reached the limit.
    fn next_line(&mut self, pos: u64) -> bool {
        self.out.next = pos;
        self.line.start = pos;
        self.line.head.clear();
        self.shown >= self.limit
    }

    /// Matches the line begun in an earlier buffer, as far as it was read.
    fn end_pending(&mut self) {
        let head = std::mem::take(&mut self.line.head);
        self.match_line(self.line.start, &head);
        self.line.head = head;
        self.line.head.clear();
    }

    /// Matches the line at `start` whose first bytes are `head` (its newline included, if
    /// within them).
    fn match_line(&mut self, start: u64, head: &[u8]) {
        if self.finder.is_some_and(|f| !f.is_in(head)) {
            return;
        }
        let text = String::from_utf8_lossy(head);
        let text = text.trim_end_matches(['\n', '\r']);
        if self.re.is_match(text) {
            self.shown += text.len() as u64 + 16;
            self.out.lines.push((start, text.to_owned()));
        }
    }

    /// The bound was reached at `pos`: the scan stops at the start of the line being read;
    /// or, when that is where it started (not one whole line in the bound), inside it: that
    /// line is matched as far as read, and the next scan goes on from `pos`.
    fn bound_reached(&mut self, pos: u64) {
        self.out.ended = Ended::Bound;
        if self.out.next == self.from && pos > self.from {
            self.end_pending();
            self.out.next = pos;
            self.out.inside_line = true;
        }
    }
}

/// Where the next line that may match lies in `data` from `i`: at a literal's place, or
/// (without literals) `i` itself while data is left.
fn next_candidate(hits: Option<&mut Hits<'_>>, data: &[u8], i: usize) -> Option<usize> {
    match hits {
        Some(hits) => hits.from(i),
        None => (i < data.len()).then_some(i),
    }
}

/// What the file holds at `pos`, `total` bytes long.
enum Region {
    /// A hole, up to the data at this offset.
    Hole(u64),
    /// Data, up to this offset (where a hole or the end begins).
    DataUntil(u64),
}

fn data_region(f: &File, pos: u64, total: u64) -> io::Result<Region> {
    let data = seek(f, pos, libc::SEEK_DATA)?.unwrap_or(total).min(total);
    if data > pos {
        return Ok(Region::Hole(data));
    }
    let end = seek(f, pos, libc::SEEK_HOLE)?.unwrap_or(total).min(total);
    Ok(Region::DataUntil(if end <= pos { total } else { end }))
}

/// `lseek(fd, pos, whence)` for `SEEK_DATA` or `SEEK_HOLE`: `None` past the last data
/// (ENXIO); a file system without holes answers as if the file were all data.
#[allow(unsafe_code)]
fn seek(f: &File, pos: u64, whence: libc::c_int) -> io::Result<Option<u64>> {
    let Ok(at) = libc::off_t::try_from(pos) else {
        return Ok(None);
    };
    // SAFETY: lseek on a descriptor we hold open; it moves only that file's offset, which no
    // read here uses (they are positioned reads).
    let r = unsafe { libc::lseek(f.as_raw_fd(), at, whence) };
    if r >= 0 {
        return Ok(Some(r as u64));
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENXIO) => Ok(None),
        // No SEEK_DATA/SEEK_HOLE here: all data from `pos` on.
        Some(libc::EINVAL) if whence == libc::SEEK_DATA => Ok(Some(pos)),
        Some(libc::EINVAL) => Ok(None),
        _ => Err(e),
    }
}

#[cfg(test)]
mod tests;
