//! Which bytes of a proof file are code: comments (nested or not, block or line) and string
//! literals are not. Block patterns only match where the code is, so a `Theorem` or `QED`
//! inside a comment or a string never starts or ends a block. Pure: text in, mask out.

use crate::spec::cursor::{Comment, Lexicon, Quote};

/// For each byte of `text`: true when it is code (not inside a comment or a string literal;
/// the delimiters themselves are not code either). An unclosed comment or string runs to
/// the end of the text.
pub(super) fn code_mask(text: &str, lex: &Lexicon) -> Vec<bool> {
    let b = text.as_bytes();
    let mut mask = vec![true; b.len()];
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if let Some(c) = lex
            .comments
            .iter()
            .find(|c| rest.starts_with(c.open.as_bytes()))
        {
            let end = comment_end(b, i, c);
            mask[i..end].fill(false);
            i = end;
        } else if lex
            .line_comments
            .iter()
            .any(|l| rest.starts_with(l.as_bytes()))
        {
            let end = b[i..]
                .iter()
                .position(|&x| x == b'\n')
                .map_or(b.len(), |p| i + p);
            mask[i..end].fill(false);
            i = end;
        } else if let Some(q) = lex
            .strings
            .iter()
            .find(|q| rest.starts_with(q.open.as_bytes()))
        {
            let end = string_end(text, i + q.open.len(), q);
            mask[i..end].fill(false);
            i = end;
        } else {
            i += 1;
        }
    }
    mask
}

/// Where the comment opened at `start` ends (after its closer), counting nested openers.
fn comment_end(b: &[u8], start: usize, c: &Comment) -> usize {
    let (open, close) = (c.open.as_bytes(), c.close.as_bytes());
    let mut depth = 1;
    let mut i = start + open.len();
    while i < b.len() {
        if b[i..].starts_with(close) {
            depth -= 1;
            i += close.len();
            if depth == 0 {
                return i;
            }
        } else if c.nested && b[i..].starts_with(open) {
            depth += 1;
            i += open.len();
        } else {
            i += 1;
        }
    }
    b.len()
}

/// Where the string whose contents start at `from` ends (after its closer). Bytes, not
/// characters, are stepped over, so that no position inside a character is ever sliced at.
fn string_end(text: &str, from: usize, q: &Quote) -> usize {
    let b = text.as_bytes();
    let mut esc = [0u8; 4];
    let esc = q
        .escape
        .map(|e| e.encode_utf8(&mut esc).as_bytes().to_vec());
    let mut i = from;
    while i < b.len() {
        if let Some(e) = esc.as_deref().filter(|e| b[i..].starts_with(e)) {
            // Skip the escaped character whole (it may be several bytes long).
            i += e.len();
            i += b.get(i).map_or(0, |&lead| utf8_len(lead));
            continue;
        }
        if b[i..].starts_with(q.close.as_bytes()) {
            return i + q.close.len();
        }
        i += 1;
    }
    b.len()
}

/// The length of the UTF-8 character whose first byte is `lead` (1 for a byte that cannot
/// start one).
fn utf8_len(lead: u8) -> usize {
    match lead {
        0xF0..=0xF7 => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

/// True when brackets `()`, `[]`, `{}` are balanced in the code of `text[from..to]`.
pub(super) fn balanced(text: &str, mask: &[bool], from: usize, to: usize) -> bool {
    let mut stack = Vec::new();
    for (i, c) in text[from..to].char_indices() {
        if !mask.get(from + i).copied().unwrap_or(false) {
            continue;
        }
        match c {
            '(' | '[' | '{' => stack.push(c),
            ')' | ']' | '}' => {
                let want = match c {
                    ')' => '(',
                    ']' => '[',
                    _ => '{',
                };
                if stack.pop() != Some(want) {
                    return false;
                }
            }
            _ => {}
        }
    }
    stack.is_empty()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(super) mod tests {
    use super::*;

    /// The lexicon of the ML family: nested `(* *)` comments, `"` strings with `escape`.
    pub(crate) fn ml(escape: Option<char>) -> Lexicon {
        Lexicon {
            comments: vec![Comment {
                open: "(*".into(),
                close: "*)".into(),
                nested: true,
            }],
            line_comments: vec![],
            strings: vec![Quote {
                open: "\"".into(),
                close: "\"".into(),
                escape,
            }],
        }
    }

    pub(crate) fn sml() -> Lexicon {
        ml(Some('\\'))
    }

    /// The code of `text`, non-code bytes shown as `_`.
    fn code(text: &str, lex: &Lexicon) -> String {
        let mask = code_mask(text, lex);
        text.bytes()
            .zip(mask)
            .map(|(b, m)| if m { b as char } else { '_' })
            .collect()
    }

    #[test]
    fn comments_nest_and_strings_escape() {
        let lex = sml();
        assert_eq!(code("a (* b *) c", &lex), "a _______ c");
        assert_eq!(
            code("a (* (* b *) QED *) c", &lex),
            format!("a {} c", "_".repeat(17))
        );
        assert_eq!(
            code("x \"(* \\\" *)\" y", &lex),
            format!("x {} y", "_".repeat(10))
        );
        assert_eq!(code("\"a\"\"b\" z", &lex), "______ z");
        assert_eq!(code("a (* open", &lex), "a _______");
        let flat = Lexicon {
            comments: vec![Comment {
                open: "/-".into(),
                close: "-/".into(),
                nested: false,
            }],
            line_comments: vec!["--".into()],
            strings: vec![],
        };
        assert_eq!(code("a /- /- b -/ c -/", &flat), "a __________ c -/");
        assert_eq!(code("x -- y\nz", &flat), "x ____\nz");
    }

    #[test]
    fn brackets_balance_only_in_code() {
        let lex = sml();
        let t = "simp [(* ] *) a] >> (fs \")\")";
        let m = code_mask(t, &lex);
        assert!(balanced(t, &m, 0, t.len()));
        let t = "simp [a, b";
        assert!(!balanced(t, &code_mask(t, &lex), 0, t.len()));
    }

    #[test]
    fn strings_with_characters_of_several_bytes_are_scanned_by_bytes() {
        let lex = sml();
        // A string holding characters of two, three and four bytes, one escaped, and an
        // unterminated one at the end: never a slice inside a character.
        let t = "x \"é ‘∀’ \\é 𝔸\" y \"ü\\";
        let got = code(t, &lex);
        assert!(got.starts_with("x _") && got.contains(" y "), "{got}");
        for end in 0..t.len() {
            if t.is_char_boundary(end) {
                let _ = code_mask(&t[..end], &lex);
            }
        }
    }
}
