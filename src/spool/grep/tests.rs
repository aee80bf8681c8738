#![allow(clippy::unwrap_used)]

use super::*;
use crate::spool::tests::Rng;
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

/// A scan that reads at most `bytes` (or stops at `until`).
fn scan_within(f: &File, offset: u64, re: &Regex, (bytes, until): (u64, Instant)) -> Grep {
    let bound = Bound { until, bytes };
    grep_within(Some(f), (offset, u64::MAX), re, &Stop::never(), bound).unwrap()
}

fn far() -> Instant {
    Instant::now() + MAX_SCAN_TIME
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
    // A line is matched on its first 4 KiB, whatever finds its literal beyond them.
    let end = Regex::new("the end").unwrap();
    assert_eq!(scan(&f, 0, &end, u64::MAX).lines, []);
    let cased = Regex::new("(?i)LINE 99[0-9] error$").unwrap();
    let g = scan(&f, 0, &cased, u64::MAX);
    assert_eq!(g.lines.len(), 0, "{g:?}");
    let cased = Regex::new("(?i)LINE 9[0-9]7 error$").unwrap();
    let g = scan(&f, 0, &cased, u64::MAX);
    let found: Vec<&str> = g.lines.iter().map(|l| l.1.as_str()).collect();
    assert_eq!(found, ["line 907 ERROR"]);
}

/// A sparse file: `first ERROR`, 1 TiB of hole, `last ERROR`, then `long` MiB of one line of
/// `y`s and `very last ERROR`.
fn sparse(name: &str, long: u64) -> File {
    let p = std::env::temp_dir().join(format!("stdmcp-grep-{}-{name}", std::process::id()));
    let mut w = File::create(&p).unwrap();
    w.write_all(b"first ERROR\n").unwrap();
    w.set_len(1 << 40).unwrap();
    w.write_all_at(b"\nlast ERROR\n", 1 << 40).unwrap();
    let big = vec![b'y'; 1 << 20];
    for i in 0..long {
        w.write_all_at(&big, (1 << 40) + 12 + (i << 20)).unwrap();
    }
    w.write_all_at(b"\nvery last ERROR\n", w.metadata().unwrap().len())
        .unwrap();
    let f = File::open(&p).unwrap();
    std::fs::remove_file(&p).unwrap();
    f
}

#[test]
fn holes_are_skipped_and_the_scan_is_bounded() {
    // A bound of `max` bytes read, and a line longer than that.
    let max: u64 = 4 << 20;
    let f = sparse("sparse", (max >> 20) + 2);
    let re = Regex::new("ERROR").unwrap();
    let g = scan_within(&f, 0, &re, (max, far()));
    let found: Vec<&str> = g.lines.iter().map(|l| l.1.as_str()).collect();
    assert_eq!(found, ["first ERROR", "last ERROR"]);
    assert_eq!(g.lines[1].0, (1 << 40) + 1);
    assert_eq!(g.ended, Ended::Bound);
    assert!(g.scanned <= max, "{}", g.scanned);
    // It stopped at the start of the long line (one whole line was read), and the long
    // line alone exceeds a scan: the next scan goes on inside it.
    assert_eq!((g.next, g.inside_line), ((1 << 40) + 12, false));
    let mut at = g.next;
    let mut seen = Vec::new();
    for _ in 0..4 {
        let g = scan_within(&f, at, &re, (max, far()));
        seen.extend(g.lines.iter().map(|l| l.1.clone()));
        at = g.next;
        if g.ended == Ended::End {
            break;
        }
        assert!(g.inside_line || g.next > at.saturating_sub(max));
    }
    assert_eq!(at, f.metadata().unwrap().len());
    assert_eq!(seen.last().map(String::as_str), Some("very last ERROR"));
}

#[test]
fn one_scan_reads_past_any_amount_of_data_within_its_time() {
    // 70 MiB of data (more than the 64 MiB one scan used to read) and 1 TiB of hole.
    let f = sparse("whole", 70);
    let g = scan(&f, 0, &Regex::new("ERROR").unwrap(), u64::MAX);
    let found: Vec<&str> = g.lines.iter().map(|l| l.1.as_str()).collect();
    assert_eq!(found, ["first ERROR", "last ERROR", "very last ERROR"]);
    assert_eq!((g.ended, g.next), (Ended::End, g.total));
    // Only the data is read (a file system keeps data in blocks of a few KiB).
    assert!(
        g.scanned >= 70 << 20 && g.scanned < 71 << 20,
        "{}",
        g.scanned
    );
}

#[test]
fn a_slow_scan_stops_at_its_time_bound() {
    let f = file("time", &b"a\n".repeat(100_000));
    let re = Regex::new("a").unwrap();
    let g = scan_within(&f, 0, &re, (u64::MAX, Instant::now()));
    assert_eq!((g.ended, g.next, g.lines.len()), (Ended::Bound, 0, 0));
    let g = scan_within(&f, 0, &re, (1000, far()));
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

/// What a scan of `data` must find: each line (its first 4 KiB, newline included, then
/// without its trailing `\n` and `\r`) given to `re`.
fn reference(data: &[u8], re: &Regex) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < data.len() {
        let end = memchr(b'\n', &data[start..]).map_or(data.len(), |k| start + k + 1);
        let head = &data[start..end.min(start + GREP_LINE_MAX)];
        let text = String::from_utf8_lossy(head);
        let text = text.trim_end_matches(['\n', '\r']);
        if re.is_match(text) {
            out.push((start as u64, text.to_owned()));
        }
        start = end;
    }
    out
}

/// About 2 MB of lines of every length that matters: short ones, ones around 4 KiB, ones
/// longer than a buffer; words at random places (across 4 KiB, across buffers), invalid
/// UTF-8, `\r`, empty lines.
fn mixed_lines(rng: &mut Rng) -> Vec<u8> {
    const WORDS: [&[u8]; 9] = [
        b"ERROR",
        b"error",
        b"Error: ",
        b"warn",
        b"E R",
        b"\xff\xfe",
        b"\r",
        b"12345",
        b" ",
    ];
    let mut data = Vec::new();
    while data.len() < 2_000_000 {
        let len = match rng.below(20) {
            0 => 3500 + rng.below(1200),
            1 if rng.below(10) == 0 => SCAN_BUFFER + rng.below(100_000),
            _ => rng.below(120),
        };
        let start = data.len();
        while data.len() - start < len {
            match rng.below(8) {
                0 => data.extend_from_slice(WORDS[rng.below(WORDS.len())]),
                _ => data.push(b'a' + rng.below(26) as u8),
            }
        }
        data.push(b'\n');
    }
    data.truncate(data.len() - rng.below(2));
    data
}

#[test]
fn the_literal_prefilter_finds_what_every_line_given_to_the_pattern_finds() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let data = mixed_lines(&mut rng);
    let f = file("same", &data);
    for pattern in [
        "ERROR",
        "(?i)error",
        "(?i)ERROR: ",
        "warn|ERROR",
        "^ERR",
        "E.R",
        "ERROR$",
        r"\d+ ?ERROR",
        "[Ee]rror",
        "err(?i:OR)",
        "(?:w(a)rn|Err)or",
        "",
        "^$",
        "\r$",
        r"\xff",
        "\u{fffd}",
        "x{2,}y",
    ] {
        let re = Regex::new(pattern).unwrap();
        let want = reference(&data, &re);
        let got = scan(&f, 0, &re, u64::MAX);
        assert_eq!((got.ended, got.next), (Ended::End, data.len() as u64));
        assert_eq!(got.lines.len(), want.len(), "{pattern:?}");
        assert!(got.lines == want, "{pattern:?}");
        // In steps: one match at a time, or a bounded amount of data at a time.
        let mut stepped = Vec::new();
        let mut at = 0;
        loop {
            let g = scan(&f, at, &re, 1);
            stepped.extend(g.lines);
            at = g.next;
            if g.ended == Ended::End || stepped.len() > 50 {
                break;
            }
        }
        assert!(stepped[..] == want[..stepped.len()], "{pattern:?}");
        let mut bounded = Vec::new();
        let mut at = 0;
        while at < data.len() as u64 {
            let g = scan_within(&f, at, &re, (600_000, far()));
            assert!(!g.inside_line && g.next > at);
            bounded.extend(g.lines);
            at = g.next;
        }
        assert!(bounded == want, "{pattern:?}");
    }
}
