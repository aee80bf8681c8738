//! `K_search {query, limit?}`: the kind's search input (HOL4 `DB.find` for a name,
//! `DB.match` for a term pattern; Rocq `Search`) sent in the session, with the cursor's file
//! loaded as far as it is (or the session as it is, when there is no cursor); the answer cut
//! like a send's, the whole of it kept in the output spool.

use super::env::Env;
use super::input::fill;
use super::ops::begin;
use super::reply::{Answer, Reply};
use crate::session::{Link, Said};

/// The most bytes of a search's answer shown (the rest is in the output spool).
pub(super) const MAX_LIMIT: usize = 1024 * 1024;

/// `K_search {query, limit?}`.
pub(super) fn search(env: &Env<'_>, query: &str, limit: usize) -> Answer {
    let spec = env.spec;
    let Some(rule) = spec
        .search
        .iter()
        .find(|r| r.when.as_ref().is_none_or(|w| w.is_match(query)))
    else {
        return Err(format!(
            "the {} cursor has no search for a query like {query:?}",
            env.kind.name
        )
        .into());
    };
    let escaped = query.replace('\\', "\\\\").replace('"', "\\\"");
    let input = fill(&rule.input, &[("query", query), ("query_string", &escaped)]);
    let said = match env.store.peek(&env.key()) {
        // The cursor's context: its program, with its file loaded as far as it is.
        Some(Ok(_)) => {
            let run = begin(env, None)?;
            let said = run.link.say_capped(&input, spec.timeout, limit);
            let reply = said_reply(said, &input, spec);
            return run.end(reply);
        }
        _ => {
            let dir = env.root.to_path_buf();
            let mut link = Link::open(env.reg, env.kind, &env.session, (dir, None), env.call)?;
            link.noise.clone_from(&spec.noise);
            link.say_capped(&input, spec.timeout, limit)
        }
    };
    said_reply(said, &input, spec)
}

fn said_reply(said: Said, input: &str, spec: &crate::spec::cursor::CursorSpec) -> Answer {
    let text = match said {
        Said::Answer(a) => a,
        Said::Stopped { partial, .. } => {
            return Err(format!("The search was interrupted; its output so far:\n{partial}").into())
        }
        Said::Died(m) => return Err(m.into()),
    };
    let reply = Reply::from(text.clone())
        .with("input", input)
        .with("results", text.as_str());
    match spec.error_line(&text) {
        Some(_) => Err(reply),
        None => Ok(reply),
    }
}
