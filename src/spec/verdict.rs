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
//! line may change it: the last line that matches wins.

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

    /// Whether `verdict` settles a portfolio.
    pub fn is_decisive(&self, verdict: &str) -> bool {
        self.decisive.iter().any(|d| d == verdict)
    }

    /// The rules and decisive verdicts in a few lines, for `stdmcp check`.
    pub fn describe(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .rules
            .iter()
            .map(|r| match &r.is {
                Some(is) => format!("/{}/ => {is}", r.pattern),
                None => format!("/{}/ => its first group", r.pattern),
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
        Ok(Rule { pattern, regex, is })
    }
}
