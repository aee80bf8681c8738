//! Frames for the peer: well-formed templates of every message the protocol knows (so that
//! fuzzing reaches deep states), and the mutations the seeded test applies to them.

use super::Rng;

/// Ids the templates use: few, so that cancels, duplicates and reuse hit live requests.
const IDS: [&str; 5] = ["1", "2", "3", "\"a\"", "0"];
/// Progress tokens: numbers and strings, some equal to ids.
const TOKENS: [&str; 4] = ["1", "\"t\"", "2", "\"\""];
/// Ids a well-behaved client would not send.
const ODD_IDS: [&str; 16] = [
    "null",
    "-1",
    "1.0",
    "1.5",
    "1e400",
    "-0",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "\"\"",
    "\"1\"",
    "true",
    "[]",
    "{}",
    "\"\\u0000\"",
    "\"\\ud800\"",
];
const VERSIONS: [&str; 6] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
    "1999-01-01",
];
const MODERN_META: &str = r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}"#;

/// Messages a client sends to a server (template number `n`, ids and tokens from `pick`).
pub(crate) fn to_server(n: usize, pick: usize) -> String {
    let id = IDS[pick % IDS.len()];
    let tok = TOKENS[(pick / 5) % TOKENS.len()];
    let ver = VERSIONS[(pick / 3) % VERSIONS.len()];
    let tool = ["echo", "add", "sleep", "ask", "nope"][(pick / 2) % 5];
    let args = [
        r#"{"text":"hi"}"#,
        r#"{"a":1,"b":2}"#,
        r#"{"ms":5}"#,
        "{}",
        r#"{"a":"x"}"#,
    ][pick % 5];
    let body = match n % 20 {
        0 => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":"{ver}","capabilities":{{"sampling":{{}},"roots":{{}}}},"clientInfo":{{"name":"f","version":"0"}}}}}}"#
        ),
        1 => r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
        2 => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{args},"_meta":{{"progressToken":{tok}}}}}}}"#
        ),
        3 => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{args}}}}}"#
        ),
        4 => format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id},"reason":"r"}}}}"#
        ),
        5 => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{args},"_meta":{{{MODERN_META},"progressToken":{tok},"io.modelcontextprotocol/logLevel":"debug"}}}}}}"#
        ),
        6 => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"server/discover","params":{{"_meta":{{{MODERN_META}}}}}}}"#
        ),
        7 => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#),
        8 => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{"cursor":"{tok}"}}}}"#
        ),
        9 => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"logging/setLevel","params":{{"level":"debug"}}}}"#
        ),
        10 => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/read","params":{{"uri":"test://r","_meta":{{"progressToken":{tok}}}}}}}"#
        ),
        11 => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"prompts/get","params":{{"name":"p","arguments":{{"x":"1"}}}}}}"#
        ),
        12 => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"completion/complete","params":{{"ref":{{"type":"ref/prompt","name":"p"}},"argument":{{"name":"x","value":""}}}}}}"#
        ),
        13 => format!(r#"[{},{}]"#, to_server(2, pick + 1), to_server(7, pick + 2)),
        14 => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"role":"assistant","content":{{"type":"text","text":"x"}},"model":"m"}}}}"#
        ),
        15 => format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-1,"message":"no"}}}}"#),
        16 => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"subscriptions/listen","params":{{"_meta":{{{MODERN_META}}}}}}}"#
        ),
        17 => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/subscribe","params":{{"uri":"test://r"}}}}"#
        ),
        18 => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"prompts/list","params":{{"_meta":{{{MODERN_META}}}}}}}"#
        ),
        _ => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/templates/list"}}"#),
    };
    body
}

/// Messages a server sends to a client.
pub(crate) fn to_client(n: usize, pick: usize) -> String {
    let id = ["1", "2", "3", "4", "\"1\""][pick % 5];
    let tok = ["1", "2", "3", "\"1\""][(pick / 5) % 4];
    let value = ["1", "0.5", "2", "1e300", "-1"][(pick / 3) % 5];
    match n % 10 {
        0 => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"x"}}]}}}}"#),
        1 => format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32602,"message":"bad","data":{{}}}}}}"#),
        2 => format!(r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{tok},"progress":{value},"total":10}}}}"#),
        3 => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#),
        4 => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"sampling/createMessage","params":{{"messages":[],"maxTokens":1}}}}"#),
        5 => r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}"#.to_owned(),
        6 => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"roots/list"}}"#),
        7 => format!(r#"[{},{}]"#, to_client(0, pick + 1), to_client(2, pick + 2)),
        8 => r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#.to_owned(),
        _ => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#),
    }
}

/// Applies one to three random mutations to a frame body.
pub(crate) fn mutate(rng: &mut Rng, body: &mut Vec<u8>, other: &[u8]) {
    for _ in 0..1 + rng.below(3) {
        mutate_once(rng, body, other);
    }
}

/// Numbers beyond i64, u64 and f64, and number-like words JSON does not have.
const BIG: [&[u8]; 8] = [
    b"1e999999",
    b"-0.0",
    b"18446744073709551616",
    b"1e-400",
    b"NaN",
    b"Infinity",
    b"123456789012345678901234567890",
    b"-9223372036854775808",
];
/// Invalid UTF-8 (lone bytes, a surrogate, beyond U+10FFFF) and NUL.
const BAD_UTF8: [&[u8]; 5] = [
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\0",
];
/// Framing noise inside a body.
const NOISE: [&[u8]; 8] = [
    b"\n",
    b"\r\n",
    b" ",
    b"Content-Length: 3\r\n\r\n",
    b"\xef\xbb\xbf",
    b",",
    b"\"",
    b"\\",
];
/// Duplicated or conflicting members, inserted after the first `{`.
const DUP: [&[u8]; 5] = [
    b"\"id\":7,",
    b"\"method\":\"ping\",",
    b"\"jsonrpc\":\"1.0\",",
    b"\"result\":{},",
    b"\"params\":null,",
];

fn mutate_once(rng: &mut Rng, body: &mut Vec<u8>, other: &[u8]) {
    let at = rng.below(body.len() + 1);
    match rng.below(12) {
        0 if !body.is_empty() => {
            let i = at.min(body.len() - 1);
            body[i] ^= 1 << rng.below(8);
        }
        1 => body.truncate(at),
        2 => {
            // Splice: our head, the other frame's tail.
            body.truncate(at);
            body.extend_from_slice(&other[rng.below(other.len() + 1)..]);
        }
        3 => {
            let with = *rng.pick(&BIG);
            replace_number(rng, body, with);
        }
        4 => {
            let depth = *rng.pick(&[64, 127, 128, 129, 1000]);
            let (open, close) = *rng.pick(&[("[", "]"), ("{\"a\":", "}")]);
            let nest = format!("{}{}", open.repeat(depth), close.repeat(depth));
            insert_value(rng, body, nest.as_bytes());
        }
        5 => {
            let id = *rng.pick(&ODD_IDS);
            replace_id(rng, body, id.as_bytes());
        }
        6 => drop(body.splice(at..at, rng.pick(&BAD_UTF8).iter().copied())),
        7 => drop(body.splice(at..at, rng.pick(&NOISE).iter().copied())),
        8 => {
            if let Some(i) = body.iter().position(|&b| b == b'{') {
                body.splice(i + 1..i + 1, rng.pick(&DUP).iter().copied());
            }
        }
        9 => {
            // Mostly short of the limits; now and then over the 64 KiB one.
            let long = "x".repeat(if rng.one_in(50) { 70_000 } else { 400 });
            insert_value(rng, body, format!("\"{long}\"").as_bytes());
        }
        10 => {
            // Repeat a chunk.
            let n = rng.below(body.len() - at + 1).min(16);
            let chunk = body[at..at + n].to_vec();
            body.splice(at..at, chunk);
        }
        _ => {
            let n = rng.below(body.len() - at + 1).min(8);
            body.drain(at..at + n);
        }
    }
}

fn replace_number(rng: &mut Rng, body: &mut Vec<u8>, with: &[u8]) {
    let digits: Vec<usize> = (0..body.len())
        .filter(|&i| body[i].is_ascii_digit())
        .collect();
    if digits.is_empty() {
        return;
    }
    let start = digits[rng.below(digits.len())];
    let end = (start..body.len())
        .find(|&i| !body[i].is_ascii_digit())
        .unwrap_or(body.len());
    body.splice(start..end, with.iter().copied());
}

/// Inserts `value` after a `:` (as a member value) or replaces the params.
fn insert_value(rng: &mut Rng, body: &mut Vec<u8>, value: &[u8]) {
    let colons: Vec<usize> = (0..body.len()).filter(|&i| body[i] == b':').collect();
    if colons.is_empty() {
        body.extend_from_slice(value);
        return;
    }
    let i = colons[rng.below(colons.len())] + 1;
    let mut v = value.to_vec();
    v.push(b',');
    v.extend_from_slice(b"\"z\":");
    body.splice(i..i, v);
}

fn replace_id(rng: &mut Rng, body: &mut Vec<u8>, with: &[u8]) {
    let key: &[u8] = if rng.one_in(3) {
        b"\"requestId\":"
    } else {
        b"\"id\":"
    };
    let Some(k) = body.windows(key.len()).position(|w| w == key) else {
        return;
    };
    let start = k + key.len();
    let end = (start..body.len())
        .find(|&i| matches!(body[i], b',' | b'}'))
        .unwrap_or(body.len());
    body.splice(start..end, with.iter().copied());
}

/// Frames one body for the wire, sometimes with a wrong Content-Length or extra headers.
pub(crate) fn encode(rng: &mut Rng, body: &[u8], content_length: bool, out: &mut Vec<u8>) {
    if !content_length {
        if rng.one_in(20) {
            out.extend_from_slice(b"\xef\xbb\xbf");
        }
        out.extend_from_slice(body);
        out.extend_from_slice(if rng.one_in(4) { b"\r\n" } else { b"\n" });
        if rng.one_in(20) {
            out.extend_from_slice(b"\n \t\r\n");
        }
        return;
    }
    let n = body.len();
    let len = match rng.below(16) {
        0 => n.saturating_sub(1 + rng.below(4)).to_string(),
        1 => (n + 1 + rng.below(4)).to_string(),
        2 => rng
            .pick(&["", "-1", "0x10", "99999999999999999999999", "1 2", "+5"])
            .to_string(),
        _ => n.to_string(),
    };
    if rng.one_in(8) {
        out.extend_from_slice(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n");
    }
    let name = *rng.pick(&["Content-Length", "content-length", "CONTENT-LENGTH"]);
    out.extend_from_slice(format!("{name}: {len}\r\n").as_bytes());
    if rng.one_in(30) {
        out.extend_from_slice(format!("{name}: {len}\r\n").as_bytes());
    }
    out.extend_from_slice(if rng.one_in(6) { b"\n" } else { b"\r\n" });
    out.extend_from_slice(body);
}
