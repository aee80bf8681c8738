#!/usr/bin/env python3
"""Turns the benchmark driver's JSON into docs: bench.md, bench.svg and bench-table.md.

Usage: python3 scripts/bench_report.py RESULTS.json OUTDIR [--busy BUSY.json]
         (BUSY.json: the driver's `--busy` run, reported under "Under contention")
       python3 scripts/bench_report.py --sessions SESSIONS.json OUTDIR [README.md] [--busy SESSIONS-busy.json]
       python3 scripts/bench_report.py --portfolio PORTFOLIO.json OUTDIR [README.md] [--busy PORTFOLIO-busy.json]
         (the figures of `cargo bench --bench portfolio`: replaces the "Portfolios" section)
         (the session figures of `cargo bench --bench sessions`: replaces the "Sessions" section
         of OUTDIR/bench.md, and the session table of README.md when given)

python3 standard library only. Machine information and the peers' versions are read here
(nproc, /proc/cpuinfo, uname, the installed SDK packages), so run it on the machine that ran
the benchmark, right after it (scripts/bench.sh does).
"""

import datetime
import html
import json
import math
import os
import platform
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "bench", "peers", ".build")


def sh(*argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=20, cwd=ROOT).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


def machine():
    cpu = ""
    for line in read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = ""
    m = re.search(r"MemTotal:\s+(\d+) kB", read("/proc/meminfo"))
    if m:
        mem = f"{int(m.group(1)) / 1024 / 1024:.1f} GiB"
    return {
        "nproc": sh("nproc") or str(os.cpu_count()),
        "cpu": cpu or platform.processor() or "?",
        "memory": mem,
        "kernel": f"{platform.system()} {platform.release()}",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "load": read("/proc/loadavg").split(" ")[:3],
        "rustc": sh("rustc", "-V"),
    }


def cargo_lock_version(lock, name):
    text = read(lock)
    m = re.search(r'\[\[package\]\]\nname = "' + re.escape(name) + r'"\nversion = "([^"]+)"', text)
    return m.group(1) if m else "?"


def package_json_version(path):
    try:
        return json.loads(read(path)).get("version", "?")
    except ValueError:
        return "?"


def versions():
    py = os.path.join(BUILD, "venv", "bin", "python")
    mcp_py = sh(py, "-c", "import importlib.metadata as m; print(m.version('mcp'))") if os.path.exists(py) else ""
    nm = os.path.join(BUILD, "ts", "node_modules")
    stdmcp = re.search(r'^version = "([^"]+)"', read(os.path.join(ROOT, "Cargo.toml")), re.M)
    rev = sh("git", "rev-parse", "--short", "HEAD")
    dirty = sh("git", "status", "--porcelain", "--untracked-files=no")
    return {
        "stdmcp": (stdmcp.group(1) if stdmcp else "?") + (f" (git {rev}{', modified' if dirty else ''})" if rev else ""),
        "rmcp": cargo_lock_version(os.path.join(ROOT, "bench", "peers", "rmcp", "Cargo.lock"), "rmcp")
        + ", tokio " + cargo_lock_version(os.path.join(ROOT, "bench", "peers", "rmcp", "Cargo.lock"), "tokio"),
        "python": f"mcp {mcp_py or '?'} on " + (sh(py, "-V") if os.path.exists(py) else "?"),
        "typescript": "@modelcontextprotocol/sdk "
        + package_json_version(os.path.join(nm, "@modelcontextprotocol", "sdk", "package.json"))
        + ", zod " + package_json_version(os.path.join(nm, "zod", "package.json"))
        + " on Node.js " + (sh("node", "--version") or "?"),
    }


def fmt(v):
    if v is None:
        return "n/a"
    a = abs(v)
    if a >= 10000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def pct(x):
    """A relative margin: +12%, -3.4%."""
    p = x * 100
    return f"{p:+.1f}%" if abs(p) < 10 else f"{p:+.0f}%"


def fmt_ratio(r):
    if r is None:
        return ""
    if r >= 100:
        return f"{r:.0f}×"
    if r >= 10:
        return f"{r:.1f}×"
    return f"{r:.2f}×"


class Results:
    def __init__(self, doc):
        self.doc = doc
        self.servers = [s["name"] for s in doc["servers"]]
        self.metrics = {m["key"]: m for m in doc["metrics"]}

    def entry(self, server, key):
        return self.doc["results"].get(server, {}).get(key, {"na": "not measured"})

    def value(self, server, key):
        return self.entry(server, key).get("value")

    def cell(self, server, key, ratio=True):
        e = self.entry(server, key)
        if "value" not in e:
            return "n/a"
        text = fmt(e["value"])
        if e.get("failures"):
            text += "†"
        if ratio and server != "stdmcp" and e.get("ratio") is not None:
            text += f" ({fmt_ratio(e['ratio'])})"
        return text


def targets(res):
    """(target, measured, met, margin) rows; None when a figure is missing. The targets of
    issue #16, checked the same way on the quiet and on the contended run."""
    rows = []
    s = lambda k: res.value("stdmcp", k)  # noqa: E731
    rmcps = [n for n in res.servers if n.startswith("rmcp")]
    peers = [n for n in res.servers if n not in ("stdmcp", "stdmcp-serve", "stdmcp-static", "floor")]

    def versus(text, key, others, need, higher=True, unit="", who="stdmcp"):
        """stdmcp's figure against the best of `others`: ratio (better direction) >= need."""
        base = res.value(who, key)
        vals = [(o, res.value(o, key)) for o in others if res.value(o, key) is not None]
        if base is None or not vals:
            rows.append((text, "n/a (" + ", ".join(others) + " not measured)", None, ""))
            return
        name, best = (max if higher else min)(vals, key=lambda x: x[1])
        got = base / best if higher else best / base
        label = f"{fmt(base)} vs {name} {fmt(best)} {unit} = {got:.2f}×"
        rows.append((text, label, got >= need, f"{pct(got / need - 1)} vs the {need:.2f}× needed"))

    def limit_row(text, key, limit, unit, who="stdmcp"):
        v = res.value(who, key)
        if v is None:
            rows.append((text, "n/a", None, ""))
            return
        rows.append((text, f"{fmt(v)} {unit}", v < limit, f"{pct(v / limit - 1)} vs the {fmt(limit)} {unit} limit"))

    for who in ("stdmcp", "stdmcp-serve", "stdmcp-static"):
        versus(f"cold start ({who}) at most 1.2× the floor's", "cold_init_ms", ["floor"], 1 / 1.2,
               higher=False, unit="ms", who=who)
        versus(f"cold start ({who}) below rmcp's", "cold_init_ms", rmcps, 1.0, higher=False, unit="ms", who=who)
    versus("pipelined echo ≥ 2× rmcp's fastest transport", "pipe_calls_per_s", rmcps, 2.0, unit="calls/s")
    versus("pipelined echo ≥ 3× the TypeScript SDK", "pipe_calls_per_s", ["typescript"], 3.0, unit="calls/s")
    for key, what in (("cmd_seq_per_s", "one at a time"), ("cmd_par_per_s", "16 in flight")):
        versus(f"`/bin/true` tool, {what}: at least the fastest peer", key, peers, 1.0, unit="calls/s")
        versus(f"`/bin/true` tool, {what}: within 1.5× of the spawn floor", key, ["floor"], 1 / 1.5,
               unit="calls/s")
    versus("output drain at 0.8× `cat` or better", "drain_mib_per_s", ["floor"], 0.8, unit="MiB/s")
    limit_row("output drain under 8 MiB peak RSS", "drain_peak_rss_mib", 8.0, "MiB")
    base, fl = s("seq_p50_us"), res.value("floor", "seq_p50_us")
    if base is not None and fl is not None:
        got = base / fl
        rows.append(("sequential p50 within 1.5× of the floor",
                     f"{fmt(base)} µs vs floor {fmt(fl)} µs = {got:.2f}×", got <= 1.5,
                     f"{pct(got / 1.5 - 1)} vs the 1.5× allowed"))
    else:
        rows.append(("sequential p50 within 1.5× of the floor", "n/a", None, ""))
    limit_row("idle RSS < 3 MiB", "idle_rss_mib", 3.0, "MiB")
    limit_row("200 concurrent sleeps < 8 MiB peak RSS", "conc_peak_rss_mib", 8.0, "MiB")
    limit_row("cancel → child gone < 2 ms", "child_gone_ms", 2.0, "ms")
    limit_row("Landlock confinement under 5% of a `/bin/true` call, one at a time",
              "confine_seq_cost_pct", 5.0, "%")
    limit_row("Landlock confinement under 5% of a `/bin/true` call, 16 in flight",
              "confine_par_cost_pct", 5.0, "%")
    return rows


def confine_line(res, busy=None):
    """What confinement costs a call, from the `confine` group (the `true` tool confined
    against `confine: off`, alternately on one server): one sentence, or "" if not measured."""
    def part(r):
        v = [r.value("stdmcp", k) for k in ("confine_seq_on_per_s", "confine_seq_off_per_s",
                                             "confine_seq_cost_pct", "confine_par_on_per_s",
                                             "confine_par_off_per_s", "confine_par_cost_pct")]
        if any(x is None for x in v):
            return None
        return (f"{v[2]:+.1f}% one at a time ({fmt(v[0])} vs {fmt(v[1])} calls/s), "
                f"{v[5]:+.1f}% with 16 in flight ({fmt(v[3])} vs {fmt(v[4])} calls/s)")
    quiet = part(res)
    if quiet is None:
        return ""
    text = ("Landlock confinement (the default) of the `true` tool, against the same tool with "
            f"`\"confine\": \"off\"` in the same run, extra time per call: {quiet}")
    contended = part(busy) if busy else None
    if contended:
        text += f"; under contention {contended}"
    return text + "."


def targets_table(res):
    trows = targets(res)
    met = sum(1 for r in trows if r[2] is True)
    return (md_table(["target", "measured", "result", "margin"],
                     [[t, m, "n/a" if ok is None else ("**met**" if ok else "**missed**"), margin]
                      for t, m, ok, margin in trows])
            + f"\n\n{met} of {len(trows)} targets met."), trows


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


HEADLINE = [
    ("cold start", "cold_init_ms", "ms"),
    ("echo p50", "seq_p50_us", "µs"),
    ("pipelined", "pipe_calls_per_s", "calls/s"),
    ("`true` tool, 16 in flight", "cmd_par_per_s", "calls/s"),
    ("idle RSS", "idle_rss_mib", "MiB"),
    ("200 sleeps peak RSS", "conc_peak_rss_mib", "MiB"),
    ("cancel → child gone", "child_gone_ms", "ms"),
    ("size", "size_mib", "MiB"),
]
BUSY_HEADLINE = [
    ("cold start", "cold_init_ms", "ms"),
    ("echo p50", "seq_p50_us", "µs"),
    ("pipelined", "pipe_calls_per_s", "calls/s"),
    ("`true` tool, one at a time", "cmd_seq_per_s", "calls/s"),
    ("`true` tool, 16 in flight", "cmd_par_per_s", "calls/s"),
    ("drain", "drain_mib_per_s", "MiB/s"),
]


def headline_table(res, cols=HEADLINE):
    header = ["server"] + [f"{c} ({u})" for c, _, u in cols]
    rows = [[f"**{n}**" if n == "stdmcp" else n] + [res.cell(n, k) for _, k, _ in cols] for n in res.servers]
    return md_table(header, rows)


def svg_chart(res):
    """Two horizontal bar panels on log scales: pipelined calls/s and sequential p50 µs."""
    panels = [
        ("Pipelined echo throughput, calls/s (64 in flight; higher is better)", "pipe_calls_per_s"),
        ("Sequential echo latency p50, µs (lower is better)", "seq_p50_us"),
    ]
    names = res.servers
    width, left, right, bar_h, gap = 760, 110, 90, 18, 6
    panel_h = 40 + len(names) * (bar_h + gap) + 24
    height = 36 + panel_h * len(panels)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="Helvetica, Arial, sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">'
        "stdmcp vs the official MCP SDKs over stdio (log scales)</text>",
    ]
    plot_w = width - left - right
    for p, (title, key) in enumerate(panels):
        top = 36 + p * panel_h
        vals = {n: res.value(n, key) for n in names}
        present = [v for v in vals.values() if v]
        out.append(f'<text x="{left}" y="{top + 16}" font-weight="bold">{html.escape(title)}</text>')
        if not present:
            out.append(f'<text x="{left}" y="{top + 40}">no data</text>')
            continue
        lo = 10 ** math.floor(math.log10(min(present)))
        if min(present) / lo < 2:  # keep the shortest bar visible
            lo /= 10
        hi = 10 ** math.ceil(math.log10(max(present)))
        if hi <= lo:
            hi = lo * 10
        span = math.log10(hi) - math.log10(lo)
        x = lambda v: left + (math.log10(v) - math.log10(lo)) / span * plot_w  # noqa: E731
        y0 = top + 28
        y1 = y0 + len(names) * (bar_h + gap)
        d = lo
        while d <= hi * 1.0001:
            gx = x(d)
            out.append(f'<line x1="{gx:.1f}" y1="{y0 - 4}" x2="{gx:.1f}" y2="{y1}" stroke="#dddddd"/>')
            label = f"{d:,.0f}" if d >= 1 else f"{d:g}"
            out.append(f'<text x="{gx:.1f}" y="{y1 + 14}" text-anchor="middle" fill="#666666" font-size="10">{label}</text>')
            d *= 10
        for i, n in enumerate(names):
            y = y0 + i * (bar_h + gap)
            out.append(f'<text x="{left - 8}" y="{y + bar_h - 5}" text-anchor="end">{html.escape(n)}</text>')
            v = vals[n]
            if not v:
                out.append(f'<text x="{left + 4}" y="{y + bar_h - 5}" fill="#999999">n/a</text>')
                continue
            color = "#d9534f" if n == "stdmcp" else ("#999999" if n == "floor" else "#4a78b5")
            w = max(x(v) - left, 1.0)
            out.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{color}"/>')
            out.append(f'<text x="{left + w + 5:.1f}" y="{y + bar_h - 5}">{html.escape(fmt(v))}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def describe(plan, pinned):
    q = " (`--quick`: tiny counts, not for comparison)" if plan.get("quick") else ""
    pin_note = (f"; client and server pinned to CPU {pinned} (see below)" if pinned
                else "; unpinned")
    return f"""Counts{q}: every figure is the median over repeated runs, each run against a freshly
spawned server; in each repetition the servers take turns in a rotated order.

| measurement | what is timed | runs |
|---|---|---|
| cold start | spawn → `initialize` response; spawn → first `tools/list` response (after `notifications/initialized`); for every server, and also for `stdmcp serve` with the built-in manifest (`stdmcp-serve`) and for the same statically linked as `scripts/dist.sh` ships it (`stdmcp-static`) | {plan['cold_reps']} |
| idle RSS | VmRSS summed over the server and its descendants, {plan['idle_settle_ms']} ms after `tools/list` | {plan['idle_reps']} |
| sequential echo | {plan['seq_calls']:,} `tools/call echo` one at a time (after {plan['seq_warmup']:,} warm-up calls): p50, p99, mean round trip{pin_note} | {plan['seq_reps']} |
| pipelined echo | {plan['pipe_calls']:,} echo calls, {plan['in_flight']} kept in flight (after {plan['pipe_warmup']:,} warm-up calls): calls/s | {plan['pipe_reps']} |
| concurrent sleeps | {plan['conc_calls']} × `sleep {{ms: {plan['conc_ms']}}}` sent at once: wall time to the last answer; peak tree VmRSS sampled every 2 ms | {plan['conc_reps']} |
| progress | `sleep {{ms: {plan['progress_ms']}}}` with a progress token: notifications, mean and max gap (the first gap counted from the request) | {plan['progress_reps']} |
| cancel → next answer | `sleep {{ms: 60000}}` with progress; after the first progress: `notifications/cancelled` and at once an echo; cancel sent → echo answered | {plan['cancel_reps']} |
| cancel → child gone | `spawn {{ms: 60000}}`; once the child `sleep` shows in /proc: cancel; time until its /proc entry is gone or a zombie (tight polling) | {plan['child_reps']} |
| command tool | a tool running `/bin/true` through each server's own process API, its stdout and stderr captured through pipes as a command tool returns them (stdmcp: a manifest tool of `stdmcp serve --config bench/stdmcp/tools.json`; Python: `anyio.run_process`; TypeScript: `child_process.spawn`, piped stdio read until `close`; rmcp: `tokio::process::Command::output`): {plan.get('cmd_calls', '?')} calls one at a time, then {plan.get('cmd_calls', '?')} with {plan.get('cmd_in_flight', '?')} in flight (after {plan.get('cmd_warmup', '?')} warm-up calls): calls/s. Floor: a program (`mcp --spawn-floor`) that spawns `/bin/true` with std's `Command` (posix_spawn, output to `/dev/null`) and reaps it with `waitpid`, in a loop, as many at once | {plan.get('cmd_reps', '?')} |
| output drain | the manifest tool `drain` (`head -c {plan.get('drain_bytes', 0) // (1 << 20)} MiB /dev/zero`, output capped at 64 KiB as any manifest tool's): call → answer, peak tree VmRSS sampled every 5 ms (`head` included). Floor: `sh -c 'head -c … /dev/zero \| cat > /dev/null'`, spawn → exit. Not run for the SDK peers: their process APIs keep a tool's whole output in memory | {plan.get('drain_reps', '?')} |
| size | stdmcp and rmcp: the release binary as built (stripped); Python: the venv; TypeScript: node_modules (apparent bytes, like `du -sb`; the Python and Node.js runtimes themselves not counted) | 1 |

The client is stdmcp's own synchronous client (`stdmcp::client::Client`, handshake-era
`initialize`), the same for every server, so its cost is in every figure: the floor shows it.
The FLOOR is a program that answers each request line with a canned response line (id copied
by string scanning, no JSON parsing): the cost of the pipes and of the client alone.

Sequential latency is a ping-pong of thread wake-ups. On this VM a wake-up across vCPUs
costs tens of microseconds or almost nothing depending on where the scheduler placed the
threads, and unpinned runs came out bimodal (about 14 or 65 µs for the same server, 5 or
60 µs for the floor). The sequential group therefore runs with the driver and the server on
one CPU (`taskset`; the driver's `--no-pin` turns this off): it measures the work and the
thread switches each call costs. The other groups run unpinned on all CPUs."""


SESSIONS_START, SESSIONS_END = "<!-- sessions:start -->", "<!-- sessions:end -->"


def replace_between(text, start, end, body):
    """text with what lies between the markers replaced by body (markers appended if absent)."""
    if start in text and end in text:
        a, b = text.index(start) + len(start), text.index(end)
        return text[:a] + "\n" + body + "\n" + text[b:]
    return text.rstrip("\n") + "\n\n" + start + "\n" + body + "\n" + end + "\n"


def roundtrip_table(doc):
    rows = []
    for kind, r in doc["roundtrip"].items():
        argv = r["argv"][:5] + (["…"] if len(r["argv"]) > 5 else [])
        rows.append([kind, "`" + " ".join(argv) + "`", "`" + r["input"] + "`",
                     fmt(r["floor_ms"] * 1e3), fmt(r["stdmcp_ms"] * 1e3), fmt(r["overhead_ms"] * 1e3)])
    return md_table(["session", "argv (as in repls.json)", "input", "floor (µs)", "K_send (µs)",
                     "overhead (µs)"], rows)


def busy_roundtrips(busy):
    """The round trips under contention (`cargo bench --bench sessions -- --busy`), if run."""
    if not busy:
        return ""
    return ("\n\n" + f"Under contention (`--busy`): the server, the floor's program and a spinning "
            f"process share CPU {busy.get('busy_cpu')}, the driver runs on the other CPUs.\n\n"
            + roundtrip_table(busy))


def tries_line(doc, busy=None):
    """The try of 10 tactics against 10 steps and undos, if coqtop was there."""
    out = ""
    for label, d in (("", doc), (" Under contention", busy)):
        t = (d or {}).get("tries")
        if not t:
            continue
        out += (f"\n\n{label.strip() + ': ' if label else ''}`rocq_cursor_try` of {t['tactics']} tactics on a real "
                f"coqtop: **{fmt(t['try_ms'])} ms** in one call, against {fmt(t['step_undo_ms'])} ms "
                f"for the same tactics as {2 * t['tactics']} calls of `rocq_cursor_step` and "
                f"`rocq_cursor_undo` ({fmt(t['try_ms'] / t['step_undo_ms'])}x the time, "
                f"{t['calls_saved']} round trips fewer: each is a model turn for an agent, seconds "
                "against these milliseconds).")
    return out


def sessions_table(doc, busy=None):
    idle = doc["idle"]
    return (roundtrip_table(doc)
            + "\n\n" + f"Server memory per idle session, {idle['sessions']} python3 sessions open: "
            f"**{fmt(idle['per_session_kib'])} KiB** (server RSS {fmt(idle['rss_before_kib'] / 1024)} → "
            f"{fmt(idle['rss_after_kib'] / 1024)} MiB, threads {idle['threads_before']} → "
            f"{idle['threads_after']}; the sessions' programs are not counted)."
            + busy_roundtrips(busy)
            + tries_line(doc, busy))


def load_beside(src, busy_src):
    """A bench's results, those under contention (or None), the machine, and the quick-run note."""
    with open(src, encoding="utf-8") as f:
        doc = json.load(f)
    busy = None
    if busy_src:
        with open(busy_src, encoding="utf-8") as f:
            busy = json.load(f)
    quick = ("**Quick run (`--quick`): a smoke test of the benchmark, not numbers to compare.**\n\n"
             if doc.get("quick") else "")
    return doc, busy, machine(), quick


def sessions_report(src, outdir, readme, busy_src=None):
    doc, busy, mach, quick = load_beside(src, busy_src)
    p = doc["plan"]
    body = "\n".join([
        "## Sessions",
        "",
        quick + "Driver: `cargo bench --bench sessions` (benches/sessions.rs). Round trip: one-line "
        "input to a warm session of `examples/repls.json` through `K_send`, one call at a time, "
        "against the floor: the same input and the same end-of-answer sentinel written straight to "
        "the same program (same argv) over a pipe, read up to the marker. "
        f"Median of {p['calls']} calls after {p['warmup']} warm-up calls, median of {p['reps']} "
        "runs, floor and stdmcp alternating. Memory: the server's own RSS before and after "
        f"opening {p['sessions']} idle python3 sessions.",
        "",
        sessions_table(doc, busy),
        "",
        f"{mach['nproc']} CPUs ({mach['cpu']}), {mach['kernel']}, {mach['date']}.",
    ])
    put_section(outdir, (SESSIONS_START, SESSIONS_END), body, readme, "sessions",
                sessions_table(doc, busy), mach)


def put_section(outdir, markers, body, readme, name, table, mach):
    """Replaces the section between `markers` in OUTDIR/bench.md with body, and the README's
    table between <!-- bench-NAME:start/end --> with table (when readme is given)."""
    path = os.path.join(outdir, "bench.md")
    with open(path, "a+", encoding="utf-8") as f:
        f.seek(0)
        text = f.read()
    with open(path, "w", encoding="utf-8") as f:
        f.write(replace_between(text, markers[0], markers[1], body))
    print(body)
    if readme:
        anchor = "sessions" if name == "sessions" else "portfolios"
        table += "\n\n" + (
            f"{mach['nproc']} CPUs, {mach['date']}; details in [docs/bench.md](docs/bench.md#{anchor}).")
        with open(readme, encoding="utf-8") as f:
            text = f.read()
        with open(readme, "w", encoding="utf-8") as f:
            f.write(replace_between(text, f"<!-- bench-{name}:start -->", f"<!-- bench-{name}:end -->", table))


PORTFOLIO_START, PORTFOLIO_END = "<!-- portfolio:start -->", "<!-- portfolio:end -->"


def portfolio_table(doc):
    f = doc["figures"]
    floor = f["floor"]["answer_ms"]
    rows = [["one tool (floor)", "1", fmt(floor * 1e3), "", ""]]
    for name in ("race2", "race4"):
        r = f[name]
        rows.append([f"portfolio `{name}`", str(r["members"]), fmt(r["answer_ms"] * 1e3),
                     fmt((r["answer_ms"] - floor) * 1e3),
                     f"{fmt(r['reap_ms'] * 1e3)} (max {fmt(r['reap_max_ms'] * 1e3)})"])
    worst = max(f[n]["reap_ms"] for n in ("race2", "race4"))
    verdict = "**met**" if worst < 5 else "**missed**"
    return md_table(["call", "members", "winner released → answer (µs)",
                     "over the floor (µs)", "answer → last loser reaped (µs)"], rows) + (
        f"\n\nTarget, the last loser reaped under 5 ms after the answer (median): {verdict} "
        f"(worst median {fmt(worst * 1e3)} µs).")


def portfolio_body(doc, busy):
    text = portfolio_table(doc)
    if busy:
        text += ("\n\nUnder contention (`--busy`): the server, its members and a spinning process "
                 "share one CPU, the driver runs on the other (a portfolio of 4 members on 2 CPUs "
                 "when the machine has 2).\n\n" + portfolio_table(busy))
    return text


def portfolio_report(src, outdir, readme, busy_src=None):
    doc, busy, mach, quick = load_beside(src, busy_src)
    body = "\n".join([
        "## Portfolios",
        "",
        quick + "Driver: `cargo bench --bench portfolio` (benches/portfolio.rs). The winner's "
        "program waits on a FIFO; once every loser (`sleep`, which obeys SIGTERM) runs, the "
        "driver writes the FIFO, the winner prints `# SZS status Theorem` and exits, and the "
        "answer arrives. The floor is the same program called alone; the difference is what a "
        "portfolio adds between the winner's exit and the answer (its member thread hands the "
        "end to the portfolio's worker, which cancels the losers' tokens before it answers; "
        "each loser's own thread, woken, signals its group). "
        "Then the driver waits for every loser's pid to leave /proc (reaped by the server; "
        f"0 when it was reaped before the answer arrived). Medians of {doc['calls']} calls "
        "(the reap also its maximum); target: the last loser reaped under 5 ms after the answer.",
        "",
        portfolio_body(doc, busy),
        "",
        f"{mach['nproc']} CPUs ({mach['cpu']}), {mach['kernel']}, {mach['date']}.",
    ])
    put_section(outdir, (PORTFOLIO_START, PORTFOLIO_END), body, readme, "portfolio",
                portfolio_body(doc, busy), mach)


def main():
    args = sys.argv[1:]
    beside = {"--sessions": sessions_report, "--portfolio": portfolio_report}
    if args[:1] and args[0] in beside and len(args) >= 3:
        busy_src = None
        if "--busy" in args:
            i = args.index("--busy")
            busy_src = args[i + 1] if i + 1 < len(args) else None
            args = args[:i] + args[i + 2:]
        return beside[args[0]](args[1], args[2], args[3] if len(args) > 3 else None, busy_src)
    busy = None
    if "--busy" in args:
        i = args.index("--busy")
        if i + 1 >= len(args):
            sys.exit(__doc__)
        with open(args[i + 1], encoding="utf-8") as f:
            busy = Results(json.load(f))
        del args[i:i + 2]
    if len(args) < 2:
        sys.exit(__doc__)
    src, outdir = args[0], args[1]
    with open(src, encoding="utf-8") as f:
        doc = json.load(f)
    res = Results(doc)
    mach, vers = machine(), versions()
    os.makedirs(outdir, exist_ok=True)

    lines = ["# stdmcp benchmark", ""]
    if doc["plan"].get("quick"):
        lines += ["**Quick run (`--quick`): tiny counts, one repetition; a smoke test of the benchmark, "
                  "not numbers to compare.**", ""]
    lines += [
        "Generated by `scripts/bench.sh` (driver: `cargo bench --bench mcp`, report: "
        "`scripts/bench_report.py`). The machine is shared and noisy: read ratios, not digits.",
        "",
        "## Machine",
        "",
        f"- CPUs (`nproc`): {mach['nproc']}; CPU: {mach['cpu']}; memory: {mach['memory']}",
        f"- Kernel: {mach['kernel']}; load average when the report was made: {' '.join(mach['load'])}",
        f"- Date: {mach['date']}; benchmark ran {doc.get('duration_s', 0):.0f} s; {mach['rustc']}",
        "",
        "## Servers",
        "",
        md_table(["server", "what", "argv"], [
            [s["name"],
             {"stdmcp": "stdmcp " + vers["stdmcp"] + ", `everything` example (command tools: "
              "`stdmcp serve --config bench/stdmcp/tools.json`)",
              "stdmcp-serve": "`stdmcp serve`, the built-in manifest (cold start only)",
              "stdmcp-static": "the same, statically linked as `scripts/dist.sh` ships it (cold start only)",
              "floor": "canned answers, no JSON parsing (the transport's floor)"}.get(
                 s["name"], vers["python"] if s["name"] == "python" else vers["typescript"]
                 if s["name"] == "typescript" else "rmcp " + vers["rmcp"] if s["name"].startswith("rmcp") else ""),
             "`" + " ".join(os.path.relpath(a, ROOT) if a.startswith(ROOT) else a for a in s["argv"]) + "`"]
            for s in doc["servers"]
        ]),
        "",
        "## Targets",
        "",
    ]
    table, trows = targets_table(res)
    lines += ["Quiet (the servers on all CPUs):", "", table, ""]
    btrows = []
    if busy:
        table, btrows = targets_table(busy)
        lines += [f"Under contention (the servers on CPU {busy.doc.get('busy_cpu')}, shared with a "
                  "spinning process):", "", table, ""]
    # Why targets are missed, with the profiles behind it: written by hand, kept beside the
    # generated report so that a rerun keeps it.
    analysis = os.path.join(ROOT, "docs", "bench-analysis.md")
    if os.path.exists(analysis):
        with open(analysis) as f:
            lines += [f.read().rstrip(), ""]
    lines += [
        "## Headline",
        "",
        headline_table(res),
        "",
        confine_line(res, busy),
        "",
        "![pipelined throughput and sequential latency per server](bench.svg)",
        "",
        "## Every figure",
        "",
        "Medians; in parentheses the ratio to stdmcp's figure (value ÷ stdmcp's: above 1 is more "
        "time, memory or calls/s than stdmcp). † some runs failed (see below).",
        "",
    ]
    header = ["figure", "unit"] + res.servers
    rows = []
    for m in doc["metrics"]:
        rows.append([m["label"], m["unit"]] + [res.cell(n, m["key"]) for n in res.servers])
    lines += [md_table(header, rows), ""]
    if busy:
        lines += [
            "## Under contention",
            "",
            f"The same figures from the driver's second run (`--busy`): every server, floor and "
            f"spawn floor started on CPU {busy.doc.get('busy_cpu')}, which a process spinning in a "
            "busy loop (`mcp --spin`, same priority) shares; the driver on the other CPUs. A "
            "server's thread hand-offs then wait for the scheduler to take the CPU from the "
            "spinner, as on a user's busy machine. Ratios are to stdmcp's figure of this run.",
            "",
            headline_table(busy, BUSY_HEADLINE),
            "",
            md_table(["figure", "unit"] + busy.servers,
                     [[m["label"], m["unit"]] + [busy.cell(n, m["key"]) for n in busy.servers]
                      for m in busy.doc["metrics"]]),
            "",
        ]

    notes = []
    for n in res.servers:
        seen = set()
        for m in doc["metrics"]:
            e = res.entry(n, m["key"])
            why = e.get("na")
            if why and why not in seen and "no tools" not in why and "variant of the spawn floor" not in why:
                seen.add(why)
                notes.append(f"- {n}, {m['label']}: n/a: {why}")
            for f in e.get("failures", []) if "value" in e else []:
                if f not in seen:
                    seen.add(f)
                    notes.append(f"- {n}, {m['label']}: a run failed: {f}")
    if notes:
        lines += ["Not measured or failed:", ""] + notes + [""]
    lines += ["The floor has no tools: the sleep, progress and cancel figures do not apply to it.", ""]
    lines += ["## Method", "", describe(doc["plan"], doc.get("seq_pinned_cpu")), ""]
    lines += [
        "## Reproduce",
        "",
        "```sh",
        "scripts/bench.sh            # peers, release build, full run (several minutes), docs/bench.*",
        "scripts/bench.sh --quick    # the same in seconds, report in bench/results/quick/",
        "cargo bench --bench mcp -- --only stdmcp,floor,pipe     # a subset (servers and/or groups)",
        "cargo bench --bench mcp -- --busy --only stdmcp,floor,seq   # the same under contention",
        "STDMCP_BENCH_BIN=/tmp/old/stdmcp cargo bench --bench mcp -- --only stdmcp,floor,cmd   # another stdmcp serve",
        "```",
        "",
        "Profiling stdmcp under the same load: build it unstripped "
        "(`CARGO_PROFILE_RELEASE_STRIP=false CARGO_PROFILE_RELEASE_DEBUG=line-tables-only cargo build "
        "--release --example everything --target-dir /tmp/prof`) and run e.g. "
        "`STDMCP_BENCH_SERVER=\"perf record -g -o /tmp/perf.data /tmp/prof/release/examples/everything\" "
        "cargo bench --bench mcp -- --only stdmcp,pipe`.",
        "",
    ]
    # The session figures come from another driver (see sessions_report): keep them.
    old = read(os.path.join(outdir, "bench.md"))
    if SESSIONS_START in old and SESSIONS_END in old:
        lines += [old[old.index(SESSIONS_START):old.index(SESSIONS_END) + len(SESSIONS_END)], ""]
    if PORTFOLIO_START in old and PORTFOLIO_END in old:
        lines += [old[old.index(PORTFOLIO_START):old.index(PORTFOLIO_END) + len(PORTFOLIO_END)], ""]
    with open(os.path.join(outdir, "bench.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    with open(os.path.join(outdir, "bench.svg"), "w", encoding="utf-8") as f:
        f.write(svg_chart(res))
    table = headline_table(res) + "\n\n"
    if busy:
        table += ("Under contention (the servers on one CPU shared with a spinning process):\n\n"
                  + headline_table(busy, BUSY_HEADLINE) + "\n\n")
    if confine_line(res, busy):
        table += confine_line(res, busy) + "\n\n"
    table += (
        f"{mach['nproc']} CPUs ({mach['cpu']}), {mach['kernel']}, {mach['date']}; medians, "
        "ratios to stdmcp in parentheses; details in [docs/bench.md](docs/bench.md).\n")
    with open(os.path.join(outdir, "bench-table.md"), "w", encoding="utf-8") as f:
        f.write(table)
    print(table)
    print("targets: " + "; ".join(
        f"{t}: {'n/a' if ok is None else ('met' if ok else 'MISSED')} ({m})" for t, m, ok, _ in trows))
    if btrows:
        print("targets under contention: " + "; ".join(
            f"{t}: {'n/a' if ok is None else ('met' if ok else 'MISSED')} ({m})" for t, m, ok, _ in btrows))


if __name__ == "__main__":
    main()
