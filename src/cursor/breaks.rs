//! Where a failing proof breaks: its first step that fails, and the goals it faced. The proof
//! is cut into steps by the cursor's `stateAt` rule. Rocq: the goal entered and the sentences
//! sent one by one, the first one refused is the step. HOL4: the longest prefix of the
//! top-level tactic chain that succeeds, applied as one tactic, found by bisection; the step
//! after it is the one that breaks, and the goals after the prefix are what it faced. A proof
//! whose every step succeeds breaks at its end (goals were left).

use serde_json::{json, Value};

use super::input::{answer, enter_input, fill, Halt};
use super::outline::Outline;
use super::split::{steps, Step};
use crate::session::Link;
use crate::spec::cursor::{CursorSpec, StateAt};

/// Where the proof of block `i` of `text` (cut as `outline`) breaks, as fields and as a line
/// of text (`None`: it cannot be entered as a goal, or has no steps). The program is left
/// with no proof under way.
pub(super) fn locate(
    (text, outline): (&str, &Outline),
    link: &Link<'_>,
    spec: &CursorSpec,
    i: usize,
) -> Result<Option<(Value, String)>, Halt> {
    let Some((seg, b)) = outline.block(i) else {
        return Ok(None);
    };
    let Some(proof) = b.proof.filter(|_| spec.rules[b.rule].goal) else {
        return Ok(None);
    };
    let all = steps(spec, text, (proof.1, b.end_at));
    let Ok(enter) = enter_input(text, (seg, b), spec) else {
        return Ok(None);
    };
    if all.is_empty() {
        return Ok(None);
    }
    let probe = Probe {
        link,
        spec,
        enter: &enter,
        text,
        all: &all,
    };
    let found = match &spec.state_at {
        StateAt::Sentences { .. } => probe.sentences()?,
        StateAt::Prefix { .. } => probe.bisect()?,
    };
    answer(link.say(&spec.drop, spec.timeout))?;
    let Some((k, goals, error)) = found else {
        return Ok(None);
    };
    let (tactic, line) = match all.get(k) {
        Some(s) => (text[s.start..s.end].to_owned(), outline.line(s.start)),
        None => (
            "(the end of the proof: goals are left)".to_owned(),
            outline.line(b.end_at),
        ),
    };
    let fields = json!({
        "step": k + 1,
        "of": all.len(),
        "line": line,
        "tactic": tactic,
        "error": error,
        "goalsFaced": goals,
    });
    let text = format!(
        "it breaks at step {} of {} (line {line}: `{tactic}`){}",
        k + 1,
        all.len(),
        if error.is_empty() {
            String::new()
        } else {
            format!(": {error}")
        }
    );
    Ok(Some((fields, text)))
}

/// A proof being probed: its goal's input and its steps.
struct Probe<'a> {
    link: &'a Link<'a>,
    spec: &'a CursorSpec,
    enter: &'a str,
    text: &'a str,
    all: &'a [Step],
}

/// The step that breaks (an index; the number of steps: the end), the goals it faced, and its
/// error.
type Found = Option<(usize, String, String)>;

impl Probe<'_> {
    fn say(&self, input: &str) -> Result<String, Halt> {
        answer(self.link.say(input, self.spec.timeout))
    }

    /// Drops any proof and enters the goal; `None` when that fails.
    fn enter(&self) -> Result<Option<String>, Halt> {
        self.say(&self.spec.drop)?;
        let goal = self.say(self.enter)?;
        Ok(self.spec.error_line(&goal).is_none().then_some(goal))
    }

    fn step(&self, tactic: &str) -> Result<String, Halt> {
        self.say(&fill(&self.spec.step, &[("tactic", tactic)]))
    }

    /// Rocq: the sentences one by one.
    fn sentences(&self) -> Result<Found, Halt> {
        let Some(mut faced) = self.enter()? else {
            return Ok(None);
        };
        for (k, s) in self.all.iter().enumerate() {
            let a = self.step(&self.text[s.start..s.end])?;
            if let Some(e) = self.spec.error_line(&a) {
                return Ok(Some((k, faced, e)));
            }
            if !a.trim().is_empty() {
                faced = a;
            }
        }
        Ok(Some((self.all.len(), faced, String::new())))
    }

    /// The chain up to step `n` (exclusive) as one tactic.
    fn prefix(&self, n: usize) -> &str {
        &self.text[self.all[0].start..self.all[n - 1].end]
    }

    /// Whether the chain's first `n` steps succeed; the goals after them, or the error.
    fn holds(&self, n: usize) -> Result<Option<Result<String, String>>, Halt> {
        let Some(goal) = self.enter()? else {
            return Ok(None);
        };
        if n == 0 {
            return Ok(Some(Ok(goal)));
        }
        let a = self.step(self.prefix(n))?;
        Ok(Some(match self.spec.error_line(&a) {
            Some(e) => Err(e),
            None => Ok(a),
        }))
    }

    /// HOL4: the longest prefix that succeeds, by bisection.
    fn bisect(&self) -> Result<Found, Halt> {
        let n = self.all.len();
        let whole = match self.holds(n)? {
            None => return Ok(None),
            Some(Ok(goals)) => return Ok(Some((n, goals, String::new()))),
            Some(Err(e)) => e,
        };
        // holds(lo) and !holds(hi); the error of hi.
        let (mut lo, mut hi, mut error) = (0, n, whole);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            match self.holds(mid)? {
                None => return Ok(None),
                Some(Ok(_)) => lo = mid,
                Some(Err(e)) => {
                    hi = mid;
                    error = e;
                }
            }
        }
        let faced = match self.holds(lo)? {
            Some(Ok(g)) => g,
            _ => String::new(),
        };
        Ok(Some((lo, faced, error)))
    }
}
