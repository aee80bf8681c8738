"""The benchmark tools served with the official Python SDK (mcp 2.x, MCPServer)."""

import math

import anyio
from mcp.server.mcpserver import Context, MCPServer

mcp = MCPServer("python-peer")
# structured_output=False: reply with text content only, like the other peers
# (by default a `-> str` tool also sends structuredContent {"result": ...}).


@mcp.tool(structured_output=False)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool(structured_output=False)
async def sleep(ms: int, ctx: Context) -> str:
    """Sleep ms milliseconds, reporting progress every 100 ms."""
    # Cancellation: the SDK cancels this task on notifications/cancelled.
    total, left, done = math.ceil(ms / 100), ms, 0
    while left > 0:
        step = min(left, 100)
        await anyio.sleep(step / 1000)
        left -= step
        done += 1
        await ctx.report_progress(done, total)  # no-op without a progressToken
    return "slept"


@mcp.tool(structured_output=False)
async def spawn(ms: int) -> str:
    """Run the system `sleep` for ms milliseconds."""
    # On cancellation anyio kills the child and reaps it before re-raising.
    await anyio.run_process(["sleep", str(ms / 1000)])
    return "spawned"


@mcp.tool(structured_output=False)
async def true() -> str:
    """Run /bin/true (the command-tool benchmark: one spawn and reap per call)."""
    await anyio.run_process(["/bin/true"])
    return "ok"


if __name__ == "__main__":
    mcp.run("stdio")
