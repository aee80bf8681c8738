// The benchmark tools served with the official TypeScript SDK (McpServer).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { setTimeout as delay } from "node:timers/promises";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "typescript-peer", version: "0.0.0" });
const text = (t) => ({ content: [{ type: "text", text: t }] });

server.registerTool(
  "echo",
  { description: "Return the text unchanged", inputSchema: { text: z.string() } },
  async ({ text: t }) => text(t),
);

server.registerTool(
  "sleep",
  { description: "Sleep ms milliseconds, reporting progress every 100 ms", inputSchema: { ms: z.number().int() } },
  async ({ ms }, extra) => {
    const progressToken = extra._meta?.progressToken;
    const total = Math.ceil(ms / 100);
    for (let left = ms, done = 1; left > 0; left -= 100, done++) {
      await delay(Math.min(left, 100), undefined, { signal: extra.signal }); // rejects on cancel
      if (progressToken !== undefined) {
        await extra.sendNotification({
          method: "notifications/progress",
          params: { progressToken, progress: done, total },
        });
      }
    }
    return text("slept");
  },
);

server.registerTool(
  "spawn",
  { description: "Run the system `sleep` for ms milliseconds", inputSchema: { ms: z.number().int() } },
  async ({ ms }, extra) => {
    // With `signal`, Node kills the child when the request is cancelled.
    const child = spawn("sleep", [String(ms / 1000)], { signal: extra.signal, stdio: "ignore" });
    await once(child, "exit"); // rejects with AbortError on cancel
    return text("spawned");
  },
);

server.registerTool(
  "true",
  { description: "Run /bin/true (the command-tool benchmark: one spawn and reap per call)", inputSchema: {} },
  async () => {
    // Output captured (stdout and stderr piped), as a command tool returns it, and as
    // stdmcp's manifest tools and the Python peer's `anyio.run_process` do.
    const child = spawn("/bin/true", [], { stdio: ["ignore", "pipe", "pipe"] });
    const out = [];
    const err = [];
    child.stdout.on("data", (d) => out.push(d));
    child.stderr.on("data", (d) => err.push(d));
    const [code] = await once(child, "close"); // after the exit and both pipes' EOF
    if (code !== 0) throw new Error(`/bin/true exited with ${code}: ${Buffer.concat(err)}`);
    return text("ok" + Buffer.concat(out).toString());
  },
);

await server.connect(new StdioServerTransport());
