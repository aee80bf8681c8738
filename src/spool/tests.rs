#![allow(clippy::unwrap_used)]

use super::*;

fn spool(name: &str, cap: u64) -> Arc<Spool> {
    let dir = std::env::temp_dir().join(format!("stdmcp-spool-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    Arc::new(Spool::new(dir, cap))
}

fn read_all(s: &Spool, id: &str, stream: Stream) -> Vec<u8> {
    let (f, _) = s.open(id, stream).unwrap();
    read_slice(f.as_ref(), 0, u64::MAX, &super::Stop::never())
        .unwrap()
        .data
}

#[test]
fn keeps_everything_written_in_a_private_directory() {
    use std::os::unix::fs::PermissionsExt;
    let s = spool("keep", 1000);
    let e = s.begin("1-a-1").unwrap();
    e.write(Stream::Stdout, b"hello ");
    e.write(Stream::Stdout, b"world");
    e.write(Stream::Stderr, b"oops");
    let mode = std::fs::metadata(s.dir().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    assert_eq!(read_all(&s, "1-a-1", Stream::Stdout), b"hello world");
    assert_eq!(read_all(&s, "1-a-1", Stream::Stderr), b"oops");
    assert!(s.kept("1-a-1", Stream::Stdout).unwrap().running);
    drop(e);
    let k = s.kept("1-a-1", Stream::Stdout).unwrap();
    assert_eq!((k.bytes, k.cut, k.running), (11, false, false));
    // A call that wrote nothing to a stream reads as empty.
    let quiet = s.begin("1-a-2").unwrap();
    assert_eq!(read_all(&s, "1-a-2", Stream::Stderr), b"");
    drop(quiet);
    assert!(s
        .kept("nope", Stream::Stdout)
        .unwrap_err()
        .to_string()
        .contains("no kept output"));
    assert!(s.begin("../x").is_none());
    let late = s.begin("1-a-3").unwrap();
    s.clear();
    assert!(!s.dir().unwrap().exists());
    // A write after serving ended (an abandoned reader) keeps nothing and creates nothing.
    late.write(Stream::Stdout, b"late");
    assert!(!s.dir().unwrap().exists());
    assert!(s
        .kept("1-a-1", Stream::Stdout)
        .unwrap_err()
        .to_string()
        .contains("evicted"));
}

#[test]
fn oldest_finished_calls_are_evicted_first_and_running_ones_never() {
    let s = spool("evict", 100);
    let a = s.begin("1-a-1").unwrap();
    a.write(Stream::Stdout, &[b'a'; 40]);
    drop(a);
    let b = s.begin("1-a-2").unwrap();
    b.write(Stream::Stdout, &[b'b'; 40]);
    drop(b);
    let c = s.begin("1-a-3").unwrap();
    c.write(Stream::Stdout, &[b'c'; 40]);
    // a was evicted for c, b is kept.
    assert!(s
        .kept("1-a-1", Stream::Stdout)
        .unwrap_err()
        .to_string()
        .contains("evicted"));
    assert!(!s.dir().unwrap().join("1-a-1.stdout").exists());
    assert_eq!(read_all(&s, "1-a-2", Stream::Stdout), [b'b'; 40]);
    // A running call is never evicted: d, running with c, evicts b and then keeps a prefix.
    let d = s.begin("1-a-4").unwrap();
    d.write(Stream::Stdout, &[b'd'; 70]);
    assert!(s.kept("1-a-2", Stream::Stdout).is_err());
    let k = d.kept(Stream::Stdout);
    assert_eq!((k.bytes, k.cut), (60, true));
    assert_eq!(read_all(&s, "1-a-4", Stream::Stdout), [b'd'; 60]);
    // Once cut, a stream stays a prefix even when room comes back.
    drop(c);
    d.write(Stream::Stdout, b"more");
    assert_eq!(d.kept(Stream::Stdout).bytes, 60);
    assert_eq!(read_all(&s, "1-a-3", Stream::Stdout), [b'c'; 40]);
    drop(d);
    s.clear();
}

#[test]
fn an_unusable_directory_keeps_nothing_and_says_so() {
    let s = Arc::new(Spool::new("/proc/stdmcp-cannot-be-here".into(), 1000));
    let e = s.begin("1-a-1").unwrap();
    e.write(Stream::Stdout, b"x");
    assert_eq!(e.kept(Stream::Stdout).bytes, 0);
    assert!(e.broken());
    assert!(
        e.why_not_kept().contains("could not be created ("),
        "{}",
        e.why_not_kept()
    );
    // Not a passing reason: the next call does not try again, and says the same.
    let f = s.begin("1-a-2").unwrap();
    f.write(Stream::Stdout, b"x");
    assert!(f.broken() && f.kept(Stream::Stdout).cut);
    assert!(spool("off", 0).begin("1-a-1").is_none());
}

#[test]
fn a_directory_that_could_not_be_made_for_now_is_tried_again_at_the_next_call() {
    let s = spool("later", 1000);
    let parent = s.dir().unwrap().to_owned();
    // A passing failure (a full disk, as tests/security/full_disk.rs makes for real), simulated.
    let e = s.begin("1-a-1").unwrap();
    lock(&s.state).failed = true;
    e.write(Stream::Stdout, b"lost");
    assert!(e.broken());
    assert!(
        e.why_not_kept().contains("this time"),
        "{}",
        e.why_not_kept()
    );
    // The next call starts: one more try, which works; the first stream stays a prefix (empty).
    let f = s.begin("1-a-2").unwrap();
    f.write(Stream::Stdout, b"kept");
    assert!(!f.broken() && !e.broken());
    e.write(Stream::Stdout, b"late");
    assert_eq!(read_all(&s, "1-a-2", Stream::Stdout), b"kept");
    let k = e.kept(Stream::Stdout);
    assert_eq!((k.bytes, k.cut), (0, true));
    assert!(parent.is_dir());
    drop((e, f));
    s.clear();
}

#[test]
fn the_number_of_calls_kept_is_bounded_too() {
    let s = spool("many", 1000);
    let running = s.begin("1-a-0").unwrap();
    for i in 1..=MAX_CALLS {
        drop(s.begin(&format!("1-a-{i}")).unwrap());
    }
    // The running call stays; the oldest finished one made room for the newest.
    assert!(s.kept("1-a-0", Stream::Stdout).is_ok());
    assert!(s
        .kept("1-a-1", Stream::Stdout)
        .unwrap_err()
        .to_string()
        .contains("evicted"));
    assert!(s.kept("1-a-2", Stream::Stdout).is_ok());
    assert!(s.kept(&format!("1-a-{MAX_CALLS}"), Stream::Stdout).is_ok());
    drop(running);
    s.clear();
}

#[test]
fn a_note_says_whether_the_output_is_kept_whole_in_part_or_not_at_all() {
    use super::tool::kept_sentence;
    let s = spool("sentence", 10);
    let whole = s.begin("1-a-1").unwrap();
    whole.write(Stream::Stdout, b"12345");
    drop(whole);
    let said = kept_sentence(&s, "1-a-1");
    assert!(said.starts_with("Its whole output is kept: "), "{said}");
    assert!(
        said.contains(r#"{"call": "1-a-1", "stream": "stdout"}"#),
        "{said}"
    );
    // Past the cap: the first call gives way, the second keeps a prefix.
    let part = s.begin("1-a-2").unwrap();
    part.write(Stream::Stderr, &[b'x'; 20]);
    drop(part);
    let said = kept_sentence(&s, "1-a-2");
    assert!(
        said.starts_with("Only part of its output is kept"),
        "{said}"
    );
    let said = kept_sentence(&s, "1-a-1");
    assert!(said.starts_with("Its output is not kept: "), "{said}");
    assert!(said.contains("evicted"), "{said}");
    s.clear();
}

/// A small deterministic generator (xorshift), for the tests of the scan and of the literals.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    /// A number below `n`.
    pub(super) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}
