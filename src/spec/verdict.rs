//! A tool's verdict (README "Verdicts"): rules that read it from the program's output lines,
//! and the verdicts that settle a portfolio's question.
//!
//! ```json
//! "verdict": {"rules": [{"pattern": "SZS status (\\w+)"},
//!                       {"pattern": "^SPASS beiseite: Proof found", "is": "Theorem"}],
//!             "decisive": ["Theorem", "CounterSatisfiable"]}
//! ```
//!
//! Rules are tried in order on each line of stdout and stderr; the first that matches sets
//! the verdict (its `is`, else the pattern's first group, else the whole match); a later
//! line may change it: the last line that matches wins. A rule with `when` applies only to a
//! call whose input has a line that matches (`{"param": "file", "matches": "conjecture"}`:
//! SPASS's `Proof found` is `Theorem` for a problem with a conjecture, `Unsatisfiable` for
//! one without); the call decides which rules apply before its program starts
//! ([`Verdict::for_input`]).

use regex_lite::Regex;

/// How a tool's verdict is read, and which verdicts are decisive.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// Tried in order on each output line.
    pub rules: Vec<Rule>,
    /// Verdicts that settle a portfolio.
    pub decisive: Vec<String>,
}

/// One rule: a pattern, and the verdict it gives.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The pattern as written in the manifest.
    pub pattern: String,
    regex: Regex,
    /// The verdict a match gives; `None`: the pattern's first group (or the whole match).
    pub is: Option<String>,
    /// The rule applies only to calls whose input this holds for.
    pub when: Option<When>,
}

/// A condition on a call's input: a line of a parameter's value (of the file a path
/// parameter names) matches a pattern.
#[derive(Clone, Debug)]
pub struct When {
    /// The parameter looked at.
    pub param: String,
    /// The pattern as written in the manifest.
    pub matches: String,
    regex: Regex,
}

impl When {
    /// The condition that a line of `param`'s value matches `matches`.
    pub fn new(param: String, matches: String) -> Result<When, regex_lite::Error> {
        let regex = Regex::new(&matches)?;
        Ok(When {
            param,
            matches,
            regex,
        })
    }

    /// The compiled pattern.
    pub fn regex(&self) -> &Regex {
        &self.regex
    }

    /// Whether a line of `text` matches.
    pub fn holds_for_text(&self, text: &str) -> bool {
        text.lines().any(|l| self.regex.is_match(l))
    }
}

impl Verdict {
    /// The verdict `line` gives, if a rule matches it.
    pub fn read(&self, line: &str) -> Option<String> {
        self.rules.iter().find_map(|r| {
            let caps = r.regex.captures(line)?;
            let word = match &r.is {
                Some(is) => is.clone(),
                None => caps.get(1).or_else(|| caps.get(0))?.as_str().to_owned(),
            };
            Some(word)
        })
    }

    /// The rules that apply to one call: those without `when`, and those whose `when`
    /// `holds` for the call's input, asked once for each distinct condition (a file is read
    /// once for the rules that share it).
    pub fn for_input(&self, mut holds: impl FnMut(&When) -> bool) -> Verdict {
        let mut asked: Vec<(&When, bool)> = Vec::new();
        let mut rules = Vec::new();
        for r in &self.rules {
            let applies = match &r.when {
                None => true,
                Some(w) => match asked
                    .iter()
                    .find(|(a, _)| a.param == w.param && a.matches == w.matches)
                {
                    Some((_, held)) => *held,
                    None => {
                        let held = holds(w);
                        asked.push((w, held));
                        held
                    }
                },
            };
            if applies {
                rules.push(r.clone());
            }
        }
        Verdict {
            rules,
            decisive: self.decisive.clone(),
        }
    }

    /// Whether a rule depends on the call's input.
    pub fn reads_input(&self) -> bool {
        self.rules.iter().any(|r| r.when.is_some())
    }

    /// Whether `verdict` settles a portfolio.
    pub fn is_decisive(&self, verdict: &str) -> bool {
        self.decisive.iter().any(|d| d == verdict)
    }

    /// The rules and decisive verdicts in a few lines, for `stdmcp check`.
    pub fn describe(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .rules
            .iter()
            .map(|r| {
                let gives = match &r.is {
                    Some(is) => format!("/{}/ => {is}", r.pattern),
                    None => format!("/{}/ => its first group", r.pattern),
                };
                match &r.when {
                    Some(w) => format!(
                        "{gives}, when a line of {} matches /{}/",
                        w.param, w.matches
                    ),
                    None => gives,
                }
            })
            .collect();
        lines.push(format!("decisive: {}", self.decisive.join(", ")));
        lines
    }
}

impl Rule {
    /// A rule: `pattern` compiled, and the verdict a match gives (`None`: the pattern's first
    /// group, or the whole match).
    pub fn new(pattern: String, is: Option<String>) -> Result<Rule, regex_lite::Error> {
        let regex = Regex::new(&pattern)?;
        Ok(Rule {
            pattern,
            regex,
            is,
            when: None,
        })
    }
}
