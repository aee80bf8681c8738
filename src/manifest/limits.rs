//! The manifest keys of the process runner's options: resource limits (for `defaults`, a
//! tool, or anything else that runs programs) and line buffering.

use std::path::Path;

use super::json::{Errors, Obj};
use stdmcp::process::Limits;

/// The resource limit keys of an object (`defaults`, a tool, a session kind): each one
/// given replaces `base`'s.
pub(super) fn limits(o: &Obj<'_>, base: Limits, errs: &mut Errors) -> Limits {
    let mb = |key: &str, errs: &mut Errors| o.count(key, errs).map(|n| n as u64);
    let nice = o.int("nice", errs).and_then(|n| match i32::try_from(n) {
        Ok(n @ 0..=19) => Some(n),
        _ => {
            errs.add(
                &o.at("nice"),
                "must be an integer from 0 to 19 (only lowering the priority is allowed)",
            );
            None
        }
    });
    let mut own = Limits::default();
    own.max_memory_mb = mb("maxMemoryMB", errs);
    own.cpu_seconds = mb("cpuSeconds", errs);
    own.max_file_size_mb = mb("maxFileSizeMB", errs);
    own.nice = nice;
    own.or(base)
}

/// `lineBuffered`: runs the program under `stdbuf`, which must exist.
pub(super) fn line_buffered(o: &Obj<'_>, base: &Path, errs: &mut Errors) -> bool {
    let on = o.boolean("lineBuffered", errs).unwrap_or(false);
    if on
        && super::fields::find_program("stdbuf", base).is_err()
        && !Path::new("/usr/bin/stdbuf").is_file()
    {
        errs.add(
            &o.at("lineBuffered"),
            "needs stdbuf (GNU coreutils), which is not on PATH",
        );
    }
    on
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: serde_json::Value, base: Limits) -> (Limits, Vec<String>) {
        let mut errs = Errors(Vec::new());
        let o = Obj::new(&v, "tools[0]", &mut errs).expect("object");
        let l = limits(&o, base, &mut errs);
        (
            l,
            errs.0
                .iter()
                .map(|e| format!("{}: {}", e.path, e.problem))
                .collect(),
        )
    }

    #[test]
    fn limits_override_the_base_and_are_checked() {
        let mut base = Limits::default();
        base.max_memory_mb = Some(100);
        base.nice = Some(5);
        let (l, errs) = read(json!({"cpuSeconds": 3, "nice": 10}), base);
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(l.to_string(), "memory 100 MiB, CPU 3 s, nice 10");
        let (l, errs) = read(
            json!({"maxMemoryMB": 0, "maxFileSizeMB": -1, "nice": 20, "cpuSeconds": "9"}),
            base,
        );
        assert_eq!(l, base, "invalid values keep the base");
        assert_eq!(errs.len(), 4, "{errs:?}");
        assert!(errs
            .iter()
            .any(|e| e.starts_with("tools[0].nice: must be an integer from 0 to 19")));
        assert!(errs
            .iter()
            .any(|e| e.starts_with("tools[0].maxMemoryMB: must be a positive")));
        let (_, errs) = read(json!({"nice": -5}), Limits::default());
        assert_eq!(errs.len(), 1, "{errs:?}");
    }
}
