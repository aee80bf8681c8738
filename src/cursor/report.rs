//! What the cursor says of a file: its outline, the theorem under the cursor, the blocks and
//! commands that failed; and `K_cursor_status`, from the stored state and the disk.

use super::engine::{Cursor, Failure};
use super::env::Env;
use super::file::read_beneath;
use super::reply::{Answer, Reply};
use crate::spec::cursor::CursorSpec;

/// The index after the last block.
pub(super) fn blocks_end(c: &Cursor) -> usize {
    c.outline.blocks().last().map_or(0, |(i, _, _)| i + 1)
}

/// The block named `name` whose goal can be entered.
pub(super) fn theorem(c: &Cursor, spec: &CursorSpec, name: &str) -> Result<usize, String> {
    let found = c
        .outline
        .blocks()
        .find(|(_, _, b)| b.name == name && spec.rules[b.rule].goal && b.proof.is_some());
    found.map(|(i, _, _)| i).ok_or_else(|| {
        let names: Vec<&str> = c
            .outline
            .blocks()
            .map(|(_, _, b)| b.name.as_str())
            .collect();
        format!(
            "{} has no theorem {name:?} (its blocks: {})",
            c.file,
            names.join(", ")
        )
    })
}

pub(super) fn entered(c: &Cursor) -> String {
    match c.current.and_then(|i| c.block(i)) {
        Some((s, b)) => {
            let (a, z) = c.outline.lines_of(s);
            format!("Goal of {} (lines {a}-{z}):", b.name)
        }
        None => String::new(),
    }
}

/// The outline: each block, its lines, and whether its proof is a placeholder.
pub(super) fn outline(c: &Cursor, spec: &CursorSpec) -> String {
    let mut out = format!(
        "{}: {} blocks, loaded to line {}.\n",
        c.file,
        c.outline.blocks().count(),
        c.outline.line(c.loaded_end().saturating_sub(1))
    );
    for (i, s, b) in c.outline.blocks() {
        let (a, z) = c.outline.lines_of(s);
        let mark = match (b.placeholder, b.abandoned) {
            (true, _) => " placeholder",
            (false, true) => " abandoned",
            (false, false) => "",
        };
        let goal = if spec.rules[b.rule].goal {
            ""
        } else {
            " (not a goal)"
        };
        let here = if Some(i) == c.current {
            "  <- cursor"
        } else {
            ""
        };
        out.push_str(&format!("  {} lines {a}-{z}{mark}{goal}{here}\n", b.name));
    }
    out
}

pub(super) fn failures(c: &Cursor) -> String {
    c.failed.iter().map(failure).collect()
}

/// One failure, on one line: a command's, or a block's (after a failed command or
/// definition: that it may be why, rather than the same error again).
pub(super) fn failure(f: &Failure) -> String {
    let (a, z) = f.lines;
    let lines = if a == z {
        format!("line {a}")
    } else {
        format!("lines {a}-{z}")
    };
    if f.command {
        return format!("FAILED {} ({lines}): {}\n", f.name, f.error);
    }
    let admitted = if f.admit_failed {
        "; it failed again with its proof left to later, so its name is unbound"
    } else {
        "; loaded again with its proof left to later"
    };
    let breaks = f
        .broken
        .as_ref()
        .map(|b| {
            format!(
                "; it breaks at step {} of {} (line {}: `{}`)",
                b["step"],
                b["of"],
                b["line"],
                b["tactic"].as_str().unwrap_or_default()
            )
        })
        .unwrap_or_default();
    let admitted = format!("{breaks}{admitted}");
    match &f.after {
        Some(cause) => format!(
            "FAILED {} ({lines}): after the failed {cause} ({}){admitted}\n",
            f.name, f.error
        ),
        None => format!("FAILED {} ({lines}): {}{admitted}\n", f.name, f.error),
    }
}

/// `K_cursor_status {}`: from the stored state and the disk, without taking the turn.
pub(super) fn status(env: &Env<'_>) -> Answer {
    let c = match env.store.peek(&env.key()) {
        None => {
            return Ok(format!(
                "No cursor on the {} session `{}`: call {} {{file}}.",
                env.kind.name,
                env.session,
                env.tool("cursor_init")
            )
            .into())
        }
        Some(Err(f)) => {
            return Ok(Reply::from(format!(
                "A cursor call on {f} is running; ask again when it ends."
            ))
            .with("running", f))
        }
        Some(Ok(c)) => c,
    };
    let spec = env.spec;
    let disk = read_beneath(env.root, &c.file);
    let changed = match &disk {
        Ok(d) if *d == c.text => "unchanged since it was loaded".to_owned(),
        Ok(d) if d.get(..c.loaded_end()) == c.text.get(..c.loaded_end()) => {
            "changed after the loaded part (the next call reads it)".to_owned()
        }
        Ok(_) => "CHANGED in the loaded part: the next cursor call reloads it".to_owned(),
        Err(e) => format!("unreadable: {e}"),
    };
    let current = match c.current.and_then(|i| c.block(i)) {
        Some((_, b)) => format!(
            "{}{}",
            b.name,
            if c.proved {
                " (proved: call complete)"
            } else {
                ""
            }
        ),
        None => "none".into(),
    };
    let mut out = format!(
        "File {}: {changed}.\nLoaded to line {}. Current theorem: {current}.\n",
        c.file,
        c.outline.line(c.loaded_end().saturating_sub(1))
    );
    out.push_str(&format!("Recorded steps ({}):\n", c.steps.len()));
    for (k, s) in c.steps.iter().enumerate() {
        out.push_str(&format!("  {}. {s}\n", k + 1));
    }
    let left: Vec<&str> = c
        .outline
        .blocks()
        .filter(|(_, _, b)| b.placeholder && spec.rules[b.rule].goal)
        .map(|(_, _, b)| b.name.as_str())
        .collect();
    out.push_str(&format!(
        "Placeholders left ({}): {}\n",
        left.len(),
        left.join(", ")
    ));
    out.push_str(&failures(&c));
    if let Some(r) = &c.resume {
        out.push_str(&format!("{r}\n"));
    }
    let mut r = Reply::from(out.trim_end().to_owned())
        .with("disk", changed)
        .with("placeholdersLeft", serde_json::json!(left));
    if let Some(resume) = &c.resume {
        r = r.with("resume", resume.as_str());
    }
    r.data.extend(super::reply::state(&c, spec));
    Ok(r)
}
