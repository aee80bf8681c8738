#!/usr/bin/env bash
# The stdmcp benchmark, end to end: installs/builds the SDK peers (bench/peers/install.sh),
# builds stdmcp in release, runs the driver (cargo bench --bench mcp) and writes the report.
#
#   scripts/bench.sh                 # full run (quiet, then under contention; about 15 minutes):
#                                    #   docs/bench.md, docs/bench.svg,
#                                    #   docs/bench-table.md (the README table)
#   scripts/bench.sh --quick         # tiny counts (CI: builds and completes in well under 2 min);
#                                    #   report in bench/results/quick/, docs/ left alone
#   scripts/bench.sh [--quick] --only stdmcp,floor,pipe   # further arguments go to the driver
#   scripts/bench.sh [--quick] --portfolio  # only the portfolio figures (cargo bench --bench
#                                    #   portfolio): the "Portfolios" section of bench.md and,
#                                    #   on a full run, README's portfolio table
#   scripts/bench.sh [--quick] --grep       # only the grep scan against GNU grep (cargo bench
#                                    #   --bench grep): a table on the terminal
#   scripts/bench.sh [--quick] --sessions   # only the session figures (cargo bench --bench
#                                    #   sessions, needs python3 and z3): the "Sessions" section
#                                    #   of bench.md and, on a full run, README's session table
#
# Every figure is taken twice: quiet, then under contention (`--busy`: the servers pinned to one
# CPU that a spinning process shares). Raw results: bench/results/mcp[-quick].json and
# mcp[-quick]-busy.json; the driver's logs (including the servers' own stderr):
# bench/results/mcp[-quick][-busy].log.
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK=()
if [ "${1:-}" = "--quick" ]; then
  QUICK=(--quick)
  shift
fi
SUFFIX="${QUICK:+-quick}"
RESULTS=bench/results
OUT="$RESULTS/mcp$SUFFIX.json"
BUSY_OUT="$RESULTS/mcp$SUFFIX-busy.json"
DOCS=docs
[ -n "$SUFFIX" ] && DOCS="$RESULTS/quick"
mkdir -p "$RESULTS" "$DOCS"

# beside NAME: a bench of its own (cargo bench --bench NAME), quiet then under contention, and
# its section of bench.md (and, on a full run, its table in README.md). `sessions`: K_send
# round trip against the same REPL over a bare pipe, idle memory; `portfolio`: the winner's
# release to the answer against one tool, the answer to the last loser's reap.
beside() {
  local name="$1" out="$RESULTS/$1$SUFFIX.json" busy="$RESULTS/$1$SUFFIX-busy.json"
  echo "== $name: cargo bench --bench $name -- ${QUICK[*]} --out $out (and --busy)"
  cargo bench --bench "$name" -- "${QUICK[@]}" --out "$out" >/dev/null
  cargo bench --bench "$name" -- "${QUICK[@]}" --busy --out "$busy" >/dev/null
  local readme=()
  [ -z "$SUFFIX" ] && readme=(README.md)
  python3 scripts/bench_report.py "--$name" "$out" "$DOCS" "${readme[@]}" --busy "$busy"
}
if [ "${1:-}" = "--sessions" ] || [ "${1:-}" = "--portfolio" ]; then
  beside "${1#--}"
  exit 0
fi
# `--grep`: the scan of `output`/`log` grep against GNU grep on a 200 MB build log (cargo bench
# --bench grep); its table goes to the terminal, and by hand to docs/bench-analysis.md ("Grep of a
# large output"), which every report copies into docs/bench.md.
if [ "${1:-}" = "--grep" ]; then
  cargo bench --bench grep -- "${QUICK[@]}" --out "$RESULTS/grep$SUFFIX.json"
  exit 0
fi

echo "== peers"
bash bench/peers/install.sh
echo "== stdmcp (release)"
cargo build --release --bins --examples
if [ -z "$SUFFIX" ]; then
  # The static binary as scripts/dist.sh ships it, for its cold start (`stdmcp-static`).
  scripts/static-build.sh >/dev/null
fi
cargo bench --bench mcp --no-run

# driver OUT [ARGS...]: one run of the driver; progress lines to the terminal, everything,
# with the servers' stderr, to OUT's .log.
driver() {
  local out="$1" log="${1%.json}.log"
  shift
  echo "== driver: cargo bench --bench mcp -- ${QUICK[*]} --out $out $* (log: $log)"
  set +e
  cargo bench --bench mcp -- "${QUICK[@]}" --out "$out" "$@" \
    2> >(tee "$log" | grep --line-buffered -E '^(\[|bench:)' >&2)
  local status=$?
  set -e
  sleep 0.2  # let the stderr filter drain
  if [ "$status" -ne 0 ] || [ ! -s "$out" ]; then
    echo "bench: the driver failed (exit $status); see $log" >&2
    exit 1
  fi
}
driver "$OUT" "$@"
driver "$BUSY_OUT" --busy "$@"

echo "== report: $DOCS/bench.md, $DOCS/bench.svg, $DOCS/bench-table.md"
python3 scripts/bench_report.py "$OUT" "$DOCS" --busy "$BUSY_OUT"
if [ $# -eq 0 ]; then beside sessions; beside portfolio; fi

# A full run (all servers, all groups) also replaces the README's benchmark table.
if [ -z "$SUFFIX" ] && [ $# -eq 0 ]; then
  python3 - "$DOCS/bench-table.md" README.md <<'PY'
import sys
table, readme = open(sys.argv[1]).read().strip(), sys.argv[2]
text = open(readme).read()
start, end = "<!-- bench:start -->", "<!-- bench:end -->"
a, b = text.index(start) + len(start), text.index(end)
open(readme, "w").write(text[:a] + "\n" + table + "\n" + text[b:])
PY
  echo "== README.md benchmark table updated"
fi
