//! The log files a tool's program writes (README "Log files"): globs relative to the call's
//! working directory. Finding and reading them is `crate::logs`.
//!
//! A glob is a relative path whose components may use `*` (any run of characters, a leading
//! dot included) and `?` (one character); they never match `/`, so every file found lies at
//! the glob's depth below the working directory.

/// The log files a tool's program writes.
#[derive(Clone, Debug, PartialEq)]
pub struct Logs {
    /// Globs relative to the call's working directory, split into components.
    pub globs: Vec<Vec<String>>,
}

/// `name` matches the pattern component `pat` (`*` and `?`).
pub(crate) fn component_matches(pat: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pat.get(p) {
            Some(b'*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == b'?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pat[p..].iter().all(|&c| c == b'*')
}

impl Logs {
    /// `name` (a path relative to the working directory) is one of the declared logs.
    pub fn matches(&self, name: &str) -> bool {
        let parts: Vec<&str> = name.split('/').collect();
        if parts
            .iter()
            .any(|p| p.is_empty() || *p == "." || *p == "..")
        {
            return false;
        }
        self.globs.iter().any(|g| {
            g.len() == parts.len()
                && g.iter()
                    .zip(&parts)
                    .all(|(p, n)| component_matches(p.as_bytes(), n.as_bytes()))
        })
    }

    /// The globs as written.
    pub fn describe(&self) -> String {
        self.globs
            .iter()
            .map(|g| g.join("/"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A glob's components.
    fn glob(s: &str) -> Vec<String> {
        s.split('/').map(str::to_owned).collect()
    }
    #[test]
    fn components_match_star_and_question_mark() {
        let m = |p: &str, n: &str| component_matches(p.as_bytes(), n.as_bytes());
        assert!(m("*", "fooTheory"));
        assert!(m("*", ".hidden"));
        assert!(m("*.log", "a.log"));
        assert!(!m("*.log", "a.log.1"));
        assert!(m("a?c*", "abcdef"));
        assert!(m("*a*b", "xaxxab"));
        assert!(!m("a", "ab"));
        assert!(m("**", ""));
        let logs = Logs {
            globs: vec![glob(".hol/logs/*"), glob("build.log")],
        };
        assert!(logs.matches(".hol/logs/demoTheory"));
        assert!(logs.matches("build.log"));
        for bad in [
            ".hol/logs/../../x",
            ".hol/logs",
            ".hol/logs/a/b",
            "/build.log",
            "./build.log",
            ".hol//logs/x",
        ] {
            assert!(!logs.matches(bad), "{bad}");
        }
    }
}
