"""Interop checks with the official Python SDK (`mcp`, ClientSession + stdio_client).

usage: py_client.py <target: everything|other name> <default|auto> <server command> [args...]

Eras: `default` runs `ClientSession.initialize()` (the legacy handshake);
`auto` runs `ClientSession.discover()` (server/discover at 2026-07-28) and falls
back to `initialize()` when the server rejects the probe, like `Client(mode="auto")`.
Prints one `PASS|FAIL py <era> <target>/<check>` line per check; never hangs:
every step runs under an anyio deadline.
"""

import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

MODERN = "2026-07-28"
STEP = 10  # seconds allowed per check


class Checks:
    def __init__(self, era: str, target: str):
        self.prefix = f"py {era} {target}"

    async def run(self, name, fn, *args):
        """Run one check under a deadline; return its value, or None after printing FAIL."""
        try:
            with anyio.fail_after(STEP):
                note = await fn(*args)
        except TimeoutError:
            print(f"FAIL {self.prefix}/{name}: no answer within {STEP}s", flush=True)
            return None
        except Exception as e:  # noqa: BLE001 - any error is a failed check
            print(f"FAIL {self.prefix}/{name}: {type(e).__name__}: {e}", flush=True)
            return None
        print(f"PASS {self.prefix}/{name}" + (f" ({note})" if note else ""), flush=True)
        return note or True


def expect(cond, why):
    if not cond:
        raise AssertionError(why)


def texts(result):
    return [c.text for c in result.content if c.type == "text"]


async def connect(session: ClientSession, era: str):
    if era == "auto":
        try:
            await session.discover()
        except MCPError as e:  # a legacy server rejects server/discover: fall back
            await session.initialize()
            return f"protocolVersion={session.protocol_version}; discover rejected: {e}"
    else:
        await session.initialize()
    return f"protocolVersion={session.protocol_version}"


async def check_modern(session):
    expect(session.protocol_version == MODERN, f"auto mode negotiated {session.protocol_version}, not {MODERN}")


async def tools_list(session, wanted):
    names = [t.name for t in (await session.list_tools()).tools]
    missing = [n for n in wanted if n not in names]
    expect(names and not missing, f"missing {missing or 'all tools'} in {names}")
    return f"{len(names)} tools"


async def echo(session):
    r = await session.call_tool("echo", {"text": "hello interop"})
    expect(not r.is_error and texts(r) == ["hello interop"], f"got {r}")


async def add(session):
    r = await session.call_tool("add", {"a": 2, "b": 3})
    expect((r.structured_content or {}).get("sum") == 5, f"structuredContent={r.structured_content}")
    parsed = []
    for t in texts(r):
        try:
            parsed.append(json.loads(t))
        except ValueError:
            pass
    expect({"sum": 5} in parsed, f"no JSON text block {{'sum': 5}} in {texts(r)}")


async def progress(session):
    seen = []

    async def on_progress(value, total, message):
        seen.append(value)

    r = await session.call_tool("sleep", {"ms": 600}, progress_callback=on_progress)
    expect(not r.is_error and texts(r) == ["slept"], f"got {r}")
    expect(len(seen) >= 3, f"only {len(seen)} progress notifications: {seen}")
    expect(all(a < b for a, b in zip(seen, seen[1:])), f"not strictly increasing: {seen}")
    return f"{len(seen)} notifications"


async def cancel(session):
    first_progress = anyio.Event()

    async def on_progress(value, total, message):
        first_progress.set()

    async with anyio.create_task_group() as tg:
        scope = anyio.CancelScope()

        async def long_sleep():
            with scope:  # cancelling the scope makes the SDK send notifications/cancelled
                await session.call_tool("sleep", {"ms": 30000}, progress_callback=on_progress)
                raise AssertionError("sleep 30000 returned instead of being cancelled")

        tg.start_soon(long_sleep)
        await first_progress.wait()
        scope.cancel()
    with anyio.fail_after(2):
        r = await session.call_tool("echo", {"text": "after cancel"})
    expect(texts(r) == ["after cancel"], f"echo after cancel got {r}")


async def fail(session):
    r = await session.call_tool("fail", {})
    expect(r.is_error, f"isError is {r.is_error}")


async def unknown(session):
    try:
        r = await session.call_tool("no_such_tool", {})
    except MCPError as e:
        return f"JSON-RPC error {e.code}"
    expect(r.is_error, f"neither an error nor isError: {r}")
    return "isError result"


def job_of(result):
    return (result.meta or {}).get("stdmcp/job")


async def job(session, tool="slow_compute", args=None, expected="interop-job: computed for 3 s"):
    """A call outliving its tool's background delay is answered with a job while it runs;
    job_wait then returns the tool's own result (README "Long runs")."""
    args = {"seconds": 3, "label": "interop-job"} if args is None else args
    r = await session.call_tool(tool, args)
    started = job_of(r)
    expect(started and started["state"] == "working", f"not answered with a job: {r}")
    expect(any("job_wait" in t for t in texts(r)), f"no hint how to go on: {texts(r)}")
    waits = 0
    while job_of(r) and waits < 4:
        r = await session.call_tool("job_wait", {"id": started["id"], "seconds": 2})
        waits += 1
    expect(not r.is_error and texts(r) == [expected], f"job_wait got {r}")
    return f"{started['id']}, {waits} job_wait calls"


async def manifest_calls(session):
    """The test manifest's tools: a program's output as text, its exit code as structured content."""
    r = await session.call_tool("echo_args", {"text": "hello interop"})
    expect(texts(r) == ["hello interop\n"], f"echo_args got {r}")
    expect((r.structured_content or {}).get("exitCode") == 0, f"structuredContent={r.structured_content}")
    r = await session.call_tool("word_count", {"text": "one two three"})
    expect(texts(r) and texts(r)[0].strip() == "3", f"word_count got {r}")
    r = await session.call_tool("echo_args", {"text": "-rf"})
    expect(r.is_error and "starts with '-'" in texts(r)[0], f"a leading dash was not refused: {r}")


async def main(target, era, command):
    checks = Checks(era, target)
    params = StdioServerParameters(command=command[0], args=command[1:])
    try:
        with anyio.fail_after(120):  # the whole run, including server shutdown
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                if not await checks.run("initialize", connect, session, era):
                    return
                if era == "auto":
                    await checks.run("era", check_modern, session)
                if target != "everything":
                    await checks.run("tools/list", tools_list, session, ["echo_args", "word_count", "job_wait"])
                    await checks.run("manifest-calls", manifest_calls, session)
                    # A manifest tool's result has structured content (an output schema).
                    await checks.run("job", job, session, "slow_job", {}, "done\n")
                    return
                await checks.run("tools/list", tools_list, session, ["echo", "add", "sleep", "fail"])
                await checks.run("echo", echo, session)
                await checks.run("add", add, session)
                await checks.run("progress", progress, session)
                await checks.run("cancel", cancel, session)
                await checks.run("fail", fail, session)
                await checks.run("unknown-tool", unknown, session)
                await checks.run("job", job, session)
    except TimeoutError:
        print(f"FAIL {checks.prefix}/session: client did not finish within 120s", flush=True)
    except Exception as e:  # noqa: BLE001
        print(f"FAIL {checks.prefix}/session: {type(e).__name__}: {e}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[2] not in ("default", "auto"):
        sys.exit(__doc__)
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3:])
