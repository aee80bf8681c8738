// Interop checks with the TypeScript SDK 1.x (@modelcontextprotocol/sdk: Client + StdioClientTransport).
// usage: node ts_v1_client.mjs <target: everything|other name> <default|auto> <server command> [args...]
// SDK 1.x only speaks the initialize handshake (LATEST_PROTOCOL_VERSION 2025-11-25) and has
// no 2026-07-28 / negotiation option, so `auto` prints one SKIP line.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { runAll, withDeadline } from './checks.mjs';

const [target, era, command, ...args] = process.argv.slice(2);
if (!command || !['default', 'auto'].includes(era)) {
  console.error('usage: ts_v1_client.mjs <target: everything|other name> <default|auto> <cmd> [args...]');
  process.exit(2);
}
const prefix = `ts-v1 ${era} ${target}`;
if (era === 'auto') {
  console.log(`SKIP ${prefix}/*: @modelcontextprotocol/sdk 1.x has no 2026-07-28 mode (latest ${LATEST_PROTOCOL_VERSION}, no version-negotiation option)`);
  process.exit(0);
}

const client = new Client({ name: 'stdmcp-interop-ts-v1', version: '1.0.0' });
const transport = new StdioClientTransport({ command, args, stderr: 'inherit' });
// SDK 1.x keeps the negotiated version to itself; it hands it to the transport's optional hook.
let negotiated = 'unknown';
transport.setProtocolVersion = (v) => { negotiated = v; };
const sdk = { listTools: () => client.listTools(), callTool: (params, opts) => client.callTool(params, undefined, opts) };
const connect = async () => {
  await client.connect(transport);
  return `protocolVersion=${negotiated}`;
};
try {
  await withDeadline(120_000, runAll(prefix, target, sdk, connect), 'whole run');
} catch (e) {
  console.log(`FAIL ${prefix}/session: ${e.message}`);
}
await withDeadline(5_000, client.close(), 'close').catch(() => {});
process.exit(0);
