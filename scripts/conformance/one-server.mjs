// A stdio -> HTTP bridge with ONE server process for every request, for the conformance
// suite's tasks scenarios (scripts/conformance.sh runs them through it).
//
// supergateway serves each stateless 2026-07-28 request with a fresh server process, so a task
// created by one request is gone when the next request (tasks/get) arrives: over stdio, a task
// lives as long as the server process that runs it. A real stdio client keeps one process;
// this bridge does the same: every POST's JSON-RPC message is written to the one server's
// stdin (request ids renumbered, since the suite's clients each count from 0), and the
// server's answer is sent back as the HTTP response (application/json; the suite's 2026-07-28
// client accepts it). Notifications get 202. JSON-RPC error codes map to HTTP statuses as
// supergateway maps them (-32601 -> 404; -32020, -32021, -32022 -> 400), and the SEP-2243
// routing headers (Mcp-Method, Mcp-Name) are checked against the body here, as supergateway does.
//
// usage: node --import loopback.mjs one-server.mjs --stdio "SERVER COMMAND" --port 0
import http from 'node:http';
import { spawn } from 'node:child_process';
import readline from 'node:readline';

const arg = (name) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const command = arg('--stdio');
const port = Number(arg('--port') ?? 0);
if (!command) {
  console.error('usage: one-server.mjs --stdio "SERVER COMMAND" --port N');
  process.exit(2);
}

const child = spawn('sh', ['-c', command], { stdio: ['pipe', 'pipe', 'inherit'] });
child.on('exit', (code, signal) => {
  console.error(`one-server: the server exited (${code ?? signal})`);
  process.exit(1);
});
const pending = new Map(); // bridge id -> { id, res }
let next = 1;

readline.createInterface({ input: child.stdout }).on('line', (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    console.error(`one-server: not JSON from the server: ${line.slice(0, 200)}`);
    return;
  }
  if (msg.id === undefined || msg.method !== undefined) return; // notifications, requests
  const p = pending.get(msg.id);
  if (!p) return;
  pending.delete(msg.id);
  msg.id = p.id;
  const code = msg.error?.code;
  const status = code === -32601 ? 404 : [-32020, -32021, -32022].includes(code) ? 400 : 200;
  p.res.writeHead(status, { 'content-type': 'application/json' });
  p.res.end(JSON.stringify(msg));
});

const server = http.createServer((req, res) => {
  if (req.method !== 'POST') {
    res.writeHead(405, { allow: 'POST' }).end();
    return;
  }
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    let msg;
    try {
      msg = JSON.parse(body);
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } }));
      return;
    }
    if (msg.id === undefined || msg.method === undefined) {
      if (msg.method === 'notifications/cancelled' && msg.params) {
        const to = [...pending].findLast(([, p]) => p.id === msg.params.requestId);
        if (to) msg = { ...msg, params: { ...msg.params, requestId: to[0] } };
      }
      child.stdin.write(JSON.stringify(msg) + '\n');
      res.writeHead(202).end();
      return;
    }
    // SEP-2243 routing headers, checked as an HTTP server must (a stdio server never sees them).
    const header = (name) => req.headers[name];
    const target = msg.params?.name ?? msg.params?.uri ?? msg.params?.taskId;
    const mismatch =
      (header('mcp-method') !== undefined && header('mcp-method') !== msg.method) ||
      (header('mcp-name') !== undefined && header('mcp-name') !== String(target));
    if (mismatch) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32020, message: 'Header mismatch: Mcp-Method/Mcp-Name disagree with the body' } }));
      return;
    }
    const id = next++;
    pending.set(id, { id: msg.id, res });
    res.on('close', () => pending.delete(id));
    child.stdin.write(JSON.stringify({ ...msg, id }) + '\n');
  });
});
server.listen(port);
const stop = () => {
  child.kill('SIGTERM');
  server.close();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
