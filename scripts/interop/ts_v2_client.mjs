// Interop checks with the TypeScript SDK 2.x client package (@modelcontextprotocol/client).
// usage: node ts_v2_client.mjs <target: everything|other name> <default|auto> <server command> [args...]
// `default` is the package default (versionNegotiation mode 'legacy': initialize handshake);
// `auto` sets versionNegotiation { mode: 'auto' }: probe server/discover (2026-07-28), fall back
// to initialize. The probe runs on a short-lived sibling server process on stdio.
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { check, runAll, withDeadline } from './checks.mjs';

const MODERN = '2026-07-28';
const [target, era, command, ...args] = process.argv.slice(2);
if (!command || !['default', 'auto'].includes(era)) {
  console.error('usage: ts_v2_client.mjs <target: everything|other name> <default|auto> <cmd> [args...]');
  process.exit(2);
}
const prefix = `ts-v2 ${era} ${target}`;

// The client declares elicitation and roots and answers them: through server -> client requests
// in the handshake era, through input_required results (auto-fulfilled by the client, then
// retried with inputResponses and requestState) at 2026-07-28.
const options = { capabilities: { elicitation: { form: {} }, roots: {} } };
if (era === 'auto') options.versionNegotiation = { mode: 'auto', probe: { timeoutMs: 5000 } };
const client = new Client({ name: 'stdmcp-interop-ts-v2', version: '1.0.0' }, options);
client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { username: 'ada', email: 'ada@example.org' } }));
client.setRequestHandler('roots/list', async () => ({ roots: [{ uri: 'file:///interop/root', name: 'root' }] }));
const transport = new StdioClientTransport({ command, args, stderr: 'inherit' });
const sdk = { listTools: () => client.listTools(), callTool: (params, opts) => client.callTool(params, opts) };
const connect = async () => {
  await client.connect(transport);
  return `protocolVersion=${client.getNegotiatedProtocolVersion()}, era=${client.getProtocolEra()}`;
};
const eraCheck = era === 'auto' && (async () => {
  const v = client.getNegotiatedProtocolVersion();
  if (v !== MODERN) throw new Error(`auto mode negotiated ${v}, not ${MODERN}`);
});
const asks = async () => {
  for (const [name, tool, args, want] of [
    ['elicitation', 'test_elicitation', { message: 'Who are you?' }, 'ada@example.org'],
    ['roots', 'test_roots', {}, 'file:///interop/root'],
  ]) {
    await check(prefix, name, async () => {
      const r = await client.callTool({ name: tool, arguments: args });
      const text = (r.content ?? []).map((c) => c.text).join(' ');
      if (r.isError || !text.includes(want)) throw new Error(`got ${JSON.stringify(r).slice(0, 200)}`);
      return `protocolVersion=${client.getNegotiatedProtocolVersion()}`;
    });
  }
};
try {
  await withDeadline(120_000, runAll(prefix, target, sdk, connect, eraCheck), 'whole run');
  if (target === 'everything') await withDeadline(30_000, asks(), 'elicitation and roots');
} catch (e) {
  console.log(`FAIL ${prefix}/session: ${e.message}`);
}
await withDeadline(5_000, client.close(), 'close').catch(() => {});
process.exit(0);
