//! The lines of a file that match a regular expression, scanned in bounded steps: one scan
//! reads at most [`MAX_SCAN`] bytes of data and runs at most [`MAX_SCAN_TIME`] (a costly
//! pattern matches slowly), skips the holes of a sparse file without reading them
//! (`lseek(SEEK_DATA)`, `lseek(SEEK_HOLE)`), stops between buffers when its call is
//! cancelled or its deadline passes, and says where the next scan goes on.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use regex_lite::Regex;

use super::slice::{size, Stop, BUFFER};

/// A matching line is shown (and matched) up to this many bytes.
const GREP_LINE_MAX: usize = 4096;
/// Most bytes of data one scan reads (holes of a sparse file are skipped without reading and
/// do not count): README "Limits".
pub(crate) const MAX_SCAN: u64 = 64 * 1024 * 1024;
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
    /// It read [`MAX_SCAN`] bytes, or ran for [`MAX_SCAN_TIME`].
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

/// The line being read.
struct Line {
    start: u64,
    /// Its first [`GREP_LINE_MAX`] bytes.
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

/// Scans the lines from `offset` (a line start) for `re`, until the matches shown take
/// `limit` bytes, [`MAX_SCAN`] bytes were read, [`scan_time`] passed, or the file ends.
/// Each line is matched on its first 4 KiB. Cancellation and the deadline are checked
/// between lines.
pub(crate) fn grep(
    file: Option<&File>,
    offset: u64,
    re: &Regex,
    limit: u64,
    stop: &Stop,
) -> io::Result<Grep> {
    let until = Instant::now() + scan_time();
    grep_within(file, (offset, limit), re, stop, (MAX_SCAN, until))
}

/// [`grep`] reading at most `bound.0` bytes, until `bound.1`.
fn grep_within(
    file: Option<&File>,
    (offset, limit): (u64, u64),
    re: &Regex,
    stop: &Stop,
    (max_scan, until): (u64, Instant),
) -> io::Result<Grep> {
    let total = size(file)?;
    let mut out = Grep::nothing_yet(offset.min(total), total);
    let Some(f) = file else { return Ok(out) };
    let mut pos = out.next;
    let mut line = Line {
        start: pos,
        head: Vec::new(),
    };
    let mut shown = 0u64;
    let mut buf = vec![0u8; BUFFER];
    // The end of the data region `pos` is in (holes start there).
    let mut data_end = pos;
    let from = pos;
    while pos < total {
        stop.check()?;
        if out.scanned >= max_scan || Instant::now() >= until {
            out.ended = Ended::Bound;
            if out.next == from && pos > from {
                // Not one whole line in the bound: go on inside it next time.
                end_line(&mut out, &mut line, re, &mut shown);
                out.next = pos;
                out.inside_line = true;
            }
            return Ok(out);
        }
        if pos >= data_end {
            match data_region(f, pos, total)? {
                Region::Hole(data) => {
                    // A hole reads as zeros: no newline, so it only lengthens the current line.
                    line.push_zeros(data - pos);
                    pos = data;
                    continue;
                }
                Region::DataUntil(end) => data_end = end,
            }
        }
        let want = (data_end - pos)
            .min(BUFFER as u64)
            .min(max_scan - out.scanned) as usize;
        let n = match f.read_at(&mut buf[..want], pos) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        out.scanned += n as u64;
        let mut rest = &buf[..n];
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            line.push(&rest[..=i]);
            pos += i as u64 + 1;
            rest = &rest[i + 1..];
            // A costly pattern may take long per line: stop between lines.
            stop.check()?;
            end_line(&mut out, &mut line, re, &mut shown);
            out.next = pos;
            line.start = pos;
            if shown >= limit {
                out.ended = Ended::Limit;
                return Ok(out);
            }
        }
        line.push(rest);
        pos += rest.len() as u64;
    }
    if pos > line.start {
        // The last line has no newline.
        end_line(&mut out, &mut line, re, &mut shown);
        out.next = pos;
    }
    Ok(out)
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

/// Matches the line read and starts the next.
fn end_line(out: &mut Grep, line: &mut Line, re: &Regex, shown: &mut u64) {
    let text = String::from_utf8_lossy(&line.head);
    let text = text.trim_end_matches(['\n', '\r']);
    if re.is_match(text) {
        *shown += text.len() as u64 + 16;
        out.lines.push((line.start, text.to_owned()));
    }
    line.head.clear();
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
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(name: &str, data: &[u8]) -> File {
        let p = std::env::temp_dir().join(format!("stdmcp-grep-{}-{name}", std::process::id()));
        std::fs::File::create(&p).unwrap().write_all(data).unwrap();
        let f = File::open(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        f
    }

    fn scan(f: &File, offset: u64, re: &Regex, limit: u64) -> Grep {
        grep(Some(f), offset, re, limit, &Stop::never()).unwrap()
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
        let all = scan(&f, 0, &re, super::super::MAX_LIMIT);
        assert_eq!(all.lines.len(), 11);
        assert_eq!(all.lines[0].1, "line 7 ERROR");
        assert_eq!(all.lines[0].0, data.find("line 7 ").unwrap() as u64);
        // The long last line is matched on its first 4 KiB only.
        assert!(!all.lines[10].1.contains("end"));
        assert_eq!(all.next, data.len() as u64);
        assert_eq!(all.ended, Ended::End);
        // A small limit stops early; the next scan resumes where it stopped.
        let first = scan(&f, 0, &re, 1);
        assert_eq!((first.lines.len(), first.ended), (1, Ended::Limit));
        let rest = scan(&f, first.next, &re, super::super::MAX_LIMIT);
        assert_eq!(rest.lines.len(), 10);
        assert_eq!(rest.lines[0].1, "line 107 ERROR");
    }

    #[test]
    fn holes_are_skipped_and_the_scan_is_bounded() {
        let p = std::env::temp_dir().join(format!("stdmcp-grep-{}-sparse", std::process::id()));
        let mut w = File::create(&p).unwrap();
        w.write_all(b"first ERROR\n").unwrap();
        // 1 TiB of hole, then a line; then more data than one scan reads.
        w.set_len(1 << 40).unwrap();
        w.write_all_at(b"\nlast ERROR\n", 1 << 40).unwrap();
        let big = vec![b'y'; 1 << 20];
        for i in 0..(MAX_SCAN >> 20) + 2 {
            w.write_all_at(&big, (1 << 40) + 12 + (i << 20)).unwrap();
        }
        w.write_all_at(b"\nvery last ERROR\n", w.metadata().unwrap().len())
            .unwrap();
        let f = File::open(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        let re = Regex::new("ERROR").unwrap();
        let g = scan(&f, 0, &re, super::super::MAX_LIMIT);
        let found: Vec<&str> = g.lines.iter().map(|l| l.1.as_str()).collect();
        assert_eq!(found, ["first ERROR", "last ERROR"]);
        assert_eq!(g.lines[1].0, (1 << 40) + 1);
        assert_eq!(g.ended, Ended::Bound);
        assert!(g.scanned <= MAX_SCAN + BUFFER as u64, "{}", g.scanned);
        // It stopped at the start of the long line (one whole line was read), and the long
        // line alone exceeds a scan: the next scan goes on inside it.
        assert_eq!((g.next, g.inside_line), ((1 << 40) + 12, false));
        let mut at = g.next;
        let mut seen = Vec::new();
        for _ in 0..4 {
            let g = scan(&f, at, &re, super::super::MAX_LIMIT);
            seen.extend(g.lines.iter().map(|l| l.1.clone()));
            at = g.next;
            if g.ended == Ended::End {
                break;
            }
            assert!(g.inside_line || g.next > at.saturating_sub(MAX_SCAN));
        }
        assert_eq!(at, f.metadata().unwrap().len());
        assert_eq!(seen.last().map(String::as_str), Some("very last ERROR"));
    }

    #[test]
    fn a_slow_scan_stops_at_its_time_bound() {
        let f = file("time", &b"a\n".repeat(100_000));
        let re = Regex::new("a").unwrap();
        let g = grep_within(
            Some(&f),
            (0, u64::MAX),
            &re,
            &Stop::never(),
            (MAX_SCAN, Instant::now()),
        )
        .unwrap();
        assert_eq!((g.ended, g.next, g.lines.len()), (Ended::Bound, 0, 0));
        let g = grep_within(
            Some(&f),
            (0, u64::MAX),
            &re,
            &Stop::never(),
            (1000, Instant::now() + MAX_SCAN_TIME),
        )
        .unwrap();
        assert_eq!((g.ended, g.next, g.lines.len()), (Ended::Bound, 1000, 500));
    }

    #[test]
    fn a_cancelled_scan_stops() {
        let f = file("cancel", &b"a\n".repeat(1000));
        let token = stdmcp::CancelToken::new();
        token.cancel(stdmcp::CancelReason::Client);
        let e = grep(
            Some(&f),
            0,
            &Regex::new("a").unwrap(),
            10,
            &Stop::new(Some(token), None),
        )
        .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Interrupted);
        let past = Stop::new(None, Some(std::time::Instant::now()));
        let e = grep(Some(&f), 0, &Regex::new("a").unwrap(), 10, &past).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    }
}
