//! The FLOOR server: answers every input line that carries an `"id"` with one canned
//! JSON-RPC response line, the id copied by string scanning (no JSON parser), and ignores
//! lines without one (notifications). The same canned result serves `initialize`,
//! `tools/list` and `tools/call`, so the driver's client accepts it for all three. Output is
//! flushed whenever no further input is already buffered, so a burst of requests costs one
//! write. It is what the transport alone costs: a pipe, a read, a copy, a write.
//!
//! It runs as `mcp --floor` (the driver re-executes itself), which keeps the bench to one
//! Cargo target; nothing of the driver runs in this mode (no threads, no JSON).

use std::io::{self, BufRead, BufReader, BufWriter, Write};

const HEAD: &[u8] = br#"{"jsonrpc":"2.0","id":"#;
const TAIL: &[u8] = br#","result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"floor","version":"0.0.0"},"tools":[],"content":[{"type":"text","text":"hello"}],"isError":false}}
"#;

/// The raw text of the first `"id": VALUE` member of `line`, if any.
fn find_id(line: &[u8]) -> Option<&[u8]> {
    let key = b"\"id\"";
    let at = line.windows(key.len()).position(|w| w == key)?;
    let mut i = at + key.len();
    while line.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    if line.get(i) != Some(&b':') {
        return None;
    }
    i += 1;
    while line.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    let start = i;
    if line.get(i) == Some(&b'"') {
        i += 1;
        while let Some(&c) = line.get(i) {
            i += 1;
            match c {
                b'\\' => i += 1,
                b'"' => return line.get(start..i),
                _ => {}
            }
        }
        return None;
    }
    while line
        .get(i)
        .is_some_and(|c| !matches!(c, b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n'))
    {
        i += 1;
    }
    (i > start).then(|| &line[start..i])
}

pub(crate) fn serve() -> io::Result<()> {
    let mut input = BufReader::with_capacity(1 << 16, io::stdin().lock());
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            out.flush()?;
            return Ok(());
        }
        if let Some(id) = find_id(&line) {
            if id != b"null" {
                out.write_all(HEAD)?;
                out.write_all(id)?;
                out.write_all(TAIL)?;
            }
        }
        if input.buffer().is_empty() {
            out.flush()?;
        }
    }
}
