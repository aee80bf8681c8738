#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for SECONDS each (default 60), one job at a time,
# from the seed corpus in fuzz/seeds/TARGET (for the cursor also the proof files of examples/proofs
# and tests/fixtures/cursor) plus what earlier runs kept in fuzz/corpus/TARGET.
# Prints libFuzzer's executions per target; exits 1 if any target crashed (the input is then
# in fuzz/artifacts/TARGET/; replay it with `cargo +nightly fuzz run TARGET FILE` and turn it
# into a regression test in tests/fuzz.rs).
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_FUZZ_VERSION=0.13.2
seconds=${1:-60}
shift || true
case $seconds in '' | *[!0-9]*) echo "usage: $0 [SECONDS] [TARGET...]" >&2; exit 2 ;; esac

# cargo-fuzz needs a nightly toolchain (unstable -Z flags for the coverage instrumentation);
# install it and cargo-fuzz (pinned) if missing.
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version 2>/dev/null | grep -qF "$CARGO_FUZZ_VERSION"; then
  cargo install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION"
fi

cd fuzz
if [ $# -gt 0 ]; then targets=("$@"); else mapfile -t targets < <(cargo +nightly fuzz list); fi
# No AddressSanitizer: the fuzzed code has no `unsafe` (the crate denies it outside the process
# runner), and without it each target runs several times faster.
cargo +nightly fuzz build --sanitizer none

# Seed directories (read, never written): the target's own, and for the cursor the proof files
# the examples and the cursor tests hold (libFuzzer reads them recursively).
seeds_for() {
  case $1 in cursor) echo "seeds/cursor ../examples/proofs ../tests/fixtures/cursor" ;; *) echo "seeds/$1" ;; esac
}

dict_for() {
  case $1 in manifest) echo dict/manifest.dict ;; cursor) echo dict/cursor.dict ;; *) echo dict/json.dict ;; esac
}

failed=()
summary=()
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  log="artifacts/$t/last-run.log"
  echo "== fuzz $t for ${seconds}s"
  status=0
  read -r -a seeds <<<"$(seeds_for "$t")"
  cargo +nightly fuzz run --sanitizer none "$t" "corpus/$t" "${seeds[@]}" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -dict="$(dict_for "$t")" -print_final_stats=1 >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  if [ "$status" -ne 0 ]; then
    failed+=("$t")
    summary+=("$t: CRASH after ${runs:-?} executions (log: fuzz/$log)")
    grep -E "panicked|ERROR: libFuzzer|Test unit written|^SUMMARY" "$log" | head -n 20 >&2 || true
  else
    summary+=("$t: ${runs:-?} executions in ${seconds}s (${rate:-?}/s), no crash")
  fi
done

echo "== fuzz summary (${seconds}s per target, one job)"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "crashed: ${failed[*]}" >&2
  exit 1
fi
