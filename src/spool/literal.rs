//! The literals a regular expression's every match contains, read from the pattern (the
//! `regex-lite` syntax), so that a scan gives the regular expression only the lines that
//! contain one of them ([`super::find`]): `error` in `^\d+ error: (.*)$`, one of `warning`
//! and `error` in `warning|error`, `FAILED` (any case) in `(?i)failed`.
//!
//! The reading is conservative: what it cannot read for sure (verbose mode, escapes it does
//! not know) gives no literal, and then every line goes to the regular expression. Each
//! literal is a run of plain characters that every match has, side by side: a character
//! repeated at least once ends a run (`ab+c` has `ab`), one that may be left out breaks it
//! (`ab?c` has `a` and `c`), as do classes, `.`, assertions and escapes of classes; a group
//! repeated at least once gives what its own alternatives all give. Of the candidates, the one
//! whose shortest literal is longest is kept. A character under the `i` flag matches both
//! ASCII cases (as `regex-lite` folds case: ASCII only).

/// A literal: its bytes (UTF-8), matched exactly or, when `fold`, ignoring ASCII case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Literal {
    /// The bytes, never empty.
    pub bytes: Vec<u8>,
    /// Matched ignoring ASCII case.
    pub fold: bool,
}

/// Most literals one pattern is searched for (an alternation of more gives none).
const MAX_LITERALS: usize = 8;

/// Literals, one of which every match of `pattern` contains; `None` when no such set is read
/// (then any line may match). `pattern` is one that `regex_lite::Regex::new` accepted.
pub(super) fn required(pattern: &str) -> Option<Vec<Literal>> {
    let mut p = Parser {
        chars: pattern.chars().collect(),
        at: 0,
        fold: false,
    };
    let set = p.alternation().ok()??;
    // The whole pattern was read (a `)` left over would be an error of the pattern's).
    (p.at == p.chars.len()).then_some(set)
}

/// The pattern is one this reading does not follow: no literal at all.
struct Unread;

/// What part of a pattern requires: one of these literals (`None`: nothing).
type Need = Option<Vec<Literal>>;

/// What one item of a sequence is.
enum Atom {
    /// A plain character.
    Char(char),
    /// A group, and what it requires.
    Group(Need),
    /// Anything else: a class, `.`, an assertion.
    Other,
}

struct Parser {
    chars: Vec<char>,
    at: usize,
    /// The `i` flag is on.
    fold: bool,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn next(&mut self) -> Result<char, Unread> {
        let c = self.peek().ok_or(Unread)?;
        self.at += 1;
        Ok(c)
    }

    fn eat(&mut self, s: &str) -> bool {
        let n = s.chars().count();
        let here = self.chars.get(self.at..self.at + n);
        if here.is_some_and(|h| h.iter().copied().eq(s.chars())) {
            self.at += n;
            return true;
        }
        false
    }

    /// Alternatives up to a `)` or the end: each must require something.
    fn alternation(&mut self) -> Result<Need, Unread> {
        let mut all = Vec::new();
        let mut every = true;
        loop {
            match self.sequence()? {
                Some(set) => all.extend(set),
                None => every = false,
            }
            if self.peek() != Some('|') {
                break;
            }
            self.at += 1;
        }
        if !every || all.len() > MAX_LITERALS {
            return Ok(None);
        }
        all.dedup();
        Ok(Some(all))
    }

    /// A sequence up to a `|`, a `)` or the end: its best literal set.
    fn sequence(&mut self) -> Result<Need, Unread> {
        let mut best: Need = None;
        let mut run = Run::default();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let Some(atom) = self.atom()? else {
                // A flag directive: the case may have changed.
                run.end(&mut best);
                continue;
            };
            match (atom, self.repetitions()?) {
                (Atom::Char(c), Once) => run.push(c, self.fold, &mut best),
                // Repeated: it ends the run (`ab+c` has `ab`, not `abc`).
                (Atom::Char(c), AtLeastOnce) => {
                    run.push(c, self.fold, &mut best);
                    run.end(&mut best);
                }
                (Atom::Group(need), Once | AtLeastOnce) => {
                    run.end(&mut best);
                    best = better(best, need);
                }
                _ => run.end(&mut best),
            }
        }
        run.end(&mut best);
        Ok(best)
    }

    /// One item; `None` for a flag directive such as `(?i)`.
    fn atom(&mut self) -> Result<Option<Atom>, Unread> {
        let atom = match self.next()? {
            '(' => return self.group(),
            '[' => {
                self.class()?;
                Atom::Other
            }
            '\\' => self.escape()?,
            '.' | '^' | '$' => Atom::Other,
            '?' | '*' | '+' | '{' => return Err(Unread),
            // A line never holds a newline: a pattern that needs one matches no line.
            '\n' => Atom::Other,
            // The text matched is decoded lossily: this may stand for bytes that are not
            // UTF-8, which the line's bytes never spell.
            char::REPLACEMENT_CHARACTER => Atom::Other,
            c => Atom::Char(c),
        };
        Ok(Some(atom))
    }

    /// After a `(`: a group and what it requires, or a flag directive (`None`).
    fn group(&mut self) -> Result<Option<Atom>, Unread> {
        let outer = self.fold;
        if self.eat("?P<") || self.eat("?<") {
            while self.next()? != '>' {}
        } else if self.eat("?") && !self.flags()? {
            // `(?flags)`: they stay on to the end of the enclosing group.
            return Ok(None);
        }
        let need = self.alternation()?;
        if self.next()? != ')' {
            return Err(Unread);
        }
        self.fold = outer;
        Ok(Some(Atom::Group(need)))
    }

    /// Flags after `(?`, up to `:` (true: a group follows) or `)` (false).
    fn flags(&mut self) -> Result<bool, Unread> {
        let mut on = true;
        loop {
            match self.next()? {
                ':' => return Ok(true),
                ')' => return Ok(false),
                '-' => on = false,
                'i' => self.fold = on,
                'm' | 's' | 'U' | 'R' => {}
                // Verbose mode (`x`) changes what every character means.
                _ => return Err(Unread),
            }
        }
    }

    /// Skips a class after its `[`.
    fn class(&mut self) -> Result<(), Unread> {
        self.eat("^");
        if self.peek() == Some(']') {
            self.at += 1;
        }
        loop {
            match self.next()? {
                ']' => return Ok(()),
                '\\' => {
                    self.next()?;
                }
                '[' => {
                    if !self.eat(":") {
                        return Err(Unread);
                    }
                    while !self.eat(":]") {
                        self.next()?;
                    }
                }
                _ => {}
            }
        }
    }

    /// After a `\`: an escaped character, or something that is not a plain character.
    fn escape(&mut self) -> Result<Atom, Unread> {
        let c = self.next()?;
        Ok(match c {
            't' => Atom::Char('\t'),
            'd' | 'D' | 's' | 'S' | 'w' | 'W' | 'A' | 'z' | 'B' | '<' | '>' => Atom::Other,
            'b' => {
                if self.peek() == Some('{')
                    && self
                        .chars
                        .get(self.at + 1)
                        .is_some_and(char::is_ascii_alphabetic)
                {
                    while self.next()? != '}' {}
                }
                Atom::Other
            }
            'x' | 'u' | 'U' => {
                if self.eat("{") {
                    while self.next()? != '}' {}
                } else {
                    let digits = match c {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    for _ in 0..digits {
                        self.next()?;
                    }
                }
                Atom::Other
            }
            c if c.is_ascii() && !c.is_ascii_alphanumeric() => Atom::Char(c),
            // `\a`, `\n`, `\f`, `\v`, `\r` and anything unknown.
            _ => Atom::Other,
        })
    }

    /// The repetition operators after an item (`a*+` is `(a*)+`: it may be left out).
    fn repetitions(&mut self) -> Result<Times, Unread> {
        let mut times = Once;
        while let Some(c) = self.peek() {
            self.at += 1;
            let least = match c {
                '?' | '*' => 0,
                '+' => 1,
                '{' => self.counted()?,
                _ => {
                    self.at -= 1;
                    break;
                }
            };
            // A lazy marker.
            self.eat("?");
            times = match (times, least) {
                (Optional, _) | (_, 0) => Optional,
                _ => AtLeastOnce,
            };
        }
        Ok(times)
    }

    /// A counted repetition after its `{`: `{n}`, `{n,}` or `{n,m}`; the least, `n`.
    fn counted(&mut self) -> Result<u32, Unread> {
        let least = self.number()?;
        if self.eat(",") && self.peek() != Some('}') {
            self.number()?;
        }
        match self.next()? {
            '}' => Ok(least),
            _ => Err(Unread),
        }
    }

    fn number(&mut self) -> Result<u32, Unread> {
        let mut n: u32 = 0;
        let mut digits = 0;
        while let Some(d) = self.peek().and_then(|c| c.to_digit(10)) {
            n = n.saturating_mul(10).saturating_add(d);
            digits += 1;
            self.at += 1;
        }
        if digits == 0 {
            return Err(Unread);
        }
        Ok(n)
    }
}

/// How many times an item occurs.
#[derive(Clone, Copy)]
enum Times {
    /// Exactly once: no repetition operator.
    Once,
    /// At least once, maybe more.
    AtLeastOnce,
    /// Maybe not at all.
    Optional,
}
use Times::{AtLeastOnce, Once, Optional};

/// A run of plain characters read so far, side by side in every match.
#[derive(Default)]
struct Run {
    bytes: Vec<u8>,
    fold: bool,
}

impl Run {
    /// Adds `c` (under the `i` flag when `fold`); a change of case mode starts another run.
    fn push(&mut self, c: char, fold: bool, best: &mut Need) {
        if !self.bytes.is_empty() && self.fold != fold {
            self.end(best);
        }
        self.fold = fold;
        let mut utf8 = [0; 4];
        self.bytes
            .extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
    }

    /// Ends the run: it becomes a candidate.
    fn end(&mut self, best: &mut Need) {
        if !self.bytes.is_empty() {
            let literal = Literal {
                bytes: std::mem::take(&mut self.bytes),
                fold: self.fold,
            };
            *best = better(best.take(), Some(vec![literal]));
        }
    }
}

/// The better of two requirements: the one whose shortest literal is longest, then the one
/// with fewer literals, then the one with fewer folded.
fn better(a: Need, b: Need) -> Need {
    let score = |set: &Vec<Literal>| {
        let shortest = set.iter().map(|l| l.bytes.len()).min().unwrap_or(0);
        let folded = set.iter().filter(|l| l.fold).count();
        (shortest, usize::MAX - set.len(), usize::MAX - folded)
    };
    match (a, b) {
        (Some(a), Some(b)) => Some(if score(&b) > score(&a) { b } else { a }),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::spool::tests::Rng;

    fn lits(pattern: &str) -> Option<Vec<(String, bool)>> {
        assert!(regex_lite::Regex::new(pattern).is_ok(), "{pattern}");
        required(pattern).map(|set| {
            set.into_iter()
                .map(|l| (String::from_utf8(l.bytes).unwrap(), l.fold))
                .collect()
        })
    }

    fn exact(words: &[&str]) -> Option<Vec<(String, bool)>> {
        Some(words.iter().map(|w| ((*w).to_owned(), false)).collect())
    }

    #[test]
    fn the_literals_every_match_contains() {
        assert_eq!(lits("error"), exact(&["error"]));
        assert_eq!(lits(r"^\d+ error: (.*)$"), exact(&[" error: "]));
        assert_eq!(lits("warning|error"), exact(&["warning", "error"]));
        assert_eq!(lits("(?i)failed"), Some(vec![("failed".into(), true)]));
        assert_eq!(lits("(?i:fail)ED"), Some(vec![("fail".into(), true)]));
        assert_eq!(lits("(?i:fa)ED"), exact(&["ED"]));
        assert_eq!(lits("ab+c"), exact(&["ab"]));
        assert_eq!(lits("xab?cde"), exact(&["cde"]));
        assert_eq!(lits("ab*"), exact(&["a"]));
        assert_eq!(lits("a{0,3}bc"), exact(&["bc"]));
        assert_eq!(lits("(foo|bar)+baz"), exact(&["baz"]));
        assert_eq!(lits("x(foo|bars)y"), exact(&["foo", "bars"]));
        assert_eq!(lits(r"step 29[0-9]"), exact(&["step 29"]));
        assert_eq!(lits(r"^2345678[0-9]$"), exact(&["2345678"]));
        assert_eq!(lits(r"a\.b\tc"), exact(&["a.b\tc"]));
        assert_eq!(lits(r"\bword\b"), exact(&["word"]));
        assert_eq!(lits(r"(?P<n>name)\s"), exact(&["name"]));
        assert_eq!(lits("ü+ber"), exact(&["ber"]));
        // Nothing every match contains, or a reading too unsure: no literal.
        for none in [
            "", ".", r"\d+", "[a-z]+", "a?", "a|", "(a|)b?", "(?x)a b", r"\x41+", "a*|b", "(?:)",
            "\u{fffd}",
        ] {
            assert_eq!(lits(none), None, "{none:?}");
        }
        // Too many alternatives.
        assert_eq!(lits("a1|a2|a3|a4|a5|a6|a7|a8|a9"), None);
    }

    /// Random patterns and lines: whenever a pattern matches a line, the line holds one of
    /// the pattern's literals.
    #[test]
    fn a_line_that_matches_holds_a_literal() {
        const PIECES: [&str; 28] = [
            "a", "b", "E", "e", "ab", "Ab", "x", ".", "[ab]", r"\d", r"\.", r"\t", "^", "$", r"\b",
            "(", ")", "(?:", "(?i)", "(?-i)", "(?i:", "|", "?", "*", "+", "{2}", "{0,2}", "{1,}",
        ];
        const ALPHABET: &[u8] = b"abABeEx.\t 0";
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut patterns, mut matches) = (0, 0);
        for _ in 0..20_000 {
            let n = 1 + rng.below(8);
            let pattern: String = (0..n).map(|_| PIECES[rng.below(PIECES.len())]).collect();
            let Ok(re) = regex_lite::Regex::new(&pattern) else {
                continue;
            };
            let Some(set) = required(&pattern) else {
                continue;
            };
            patterns += 1;
            let finder = super::super::find::Finder::new(&set);
            for _ in 0..40 {
                let len = rng.below(12);
                let line: Vec<u8> = (0..len)
                    .map(|_| ALPHABET[rng.below(ALPHABET.len())])
                    .collect();
                let text = String::from_utf8(line).unwrap();
                if re.is_match(&text) {
                    matches += 1;
                    assert!(
                        finder.is_in(text.as_bytes()),
                        "{pattern:?} {set:?} {text:?}"
                    );
                }
            }
        }
        assert!(patterns > 2000 && matches > 10_000, "{patterns} {matches}");
    }
}
