// Interop checks with the TypeScript SDK 2.x client package (@modelcontextprotocol/client).
// usage: node ts_v2_client.mjs <target: everything|other name> <default|auto> <server command> [args...]
// `default` is the package default (versionNegotiation mode 'legacy': initialize handshake);
// `auto` sets versionNegotiation { mode: 'auto' }: probe server/discover (2026-07-28), fall back
// to initialize. The probe runs on a short-lived sibling server process on stdio.
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { runAll, withDeadline } from './checks.mjs';

const MODERN = '2026-07-28';
const [target, era, command, ...args] = process.argv.slice(2);
if (!command || !['default', 'auto'].includes(era)) {
  console.error('usage: ts_v2_client.mjs <target: everything|other name> <default|auto> <cmd> [args...]');
  process.exit(2);
}
const prefix = `ts-v2 ${era} ${target}`;

const options = era === 'auto' ? { versionNegotiation: { mode: 'auto', probe: { timeoutMs: 5000 } } } : {};
const client = new Client({ name: 'stdmcp-interop-ts-v2', version: '1.0.0' }, options);
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
try {
  await withDeadline(120_000, runAll(prefix, target, sdk, connect, eraCheck), 'whole run');
} catch (e) {
  console.log(`FAIL ${prefix}/session: ${e.message}`);
}
await withDeadline(5_000, client.close(), 'close').catch(() => {});
process.exit(0);
