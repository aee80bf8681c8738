//! What a line of the stream is: its content without BOM and `\r`, blank or not, the start
//! of a header block or a header, a `Content-Length` value.

/// The UTF-8 byte order mark, which a line may start with.
pub(super) const BOM: &[u8] = b"\xEF\xBB\xBF";

const HEADER_STARTS: [&[u8]; 2] = [b"content-length:", b"content-type:"];

pub(super) fn find_nl(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

/// Line content without a leading BOM and one trailing `\r`.
pub(super) fn strip_line(line: &[u8]) -> &[u8] {
    let line = line.strip_prefix(BOM).unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

pub(super) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r')
}

pub(super) fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|&b| is_ws(b))
}

/// A blank line between frames, skipped. One longer than the limit is too large instead, as
/// it is when it arrives in pieces (then it is refused before its end is seen, to bound memory).
pub(super) fn is_blank_frame(line: &[u8], max: usize) -> bool {
    line.len() <= max && is_blank(line)
}

/// Does this line begin a header block? `None`: cannot tell yet (partial line).
pub(super) fn header_start(line: &[u8], complete: bool) -> Option<bool> {
    let skip = line
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(line.len());
    let rest = &line[skip..];
    let mut maybe = false;
    for name in HEADER_STARTS {
        if rest.len() >= name.len() {
            if rest[..name.len()].eq_ignore_ascii_case(name) {
                return Some(true);
            }
        } else if name[..rest.len()].eq_ignore_ascii_case(rest) {
            maybe = true;
        }
    }
    if maybe && !complete {
        None
    } else {
        Some(false)
    }
}

/// Is this a `Name: value` header line? `None`: cannot tell yet (partial line).
pub(super) fn header_like(line: &[u8], complete: bool) -> Option<bool> {
    for (i, &b) in line.iter().enumerate() {
        match b {
            b':' => return Some(i > 0),
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'-' | b'_' if i > 0 => {}
            _ => return Some(false),
        }
    }
    if complete {
        Some(false)
    } else {
        None
    }
}

pub(super) fn parse_len(value: &[u8]) -> Option<usize> {
    if value.is_empty() {
        return None;
    }
    value.iter().try_fold(0usize, |acc, &b| {
        let digit = b.checked_sub(b'0').filter(|d| *d < 10)?;
        acc.checked_mul(10)?.checked_add(usize::from(digit))
    })
}
