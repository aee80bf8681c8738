#!/usr/bin/env node
// The `stdmcp` command of the npm package: finds the static binary in the platform package npm
// installed as an optional dependency (@stdmcp/linux-x64 or @stdmcp/linux-arm64, chosen by
// their `os` and `cpu` fields; no postinstall, no download), then becomes it.
//
// On Node with process.execve (22.15, 23.11 and later) the launcher is replaced by the binary:
// same pid, so a client's signals reach the server directly. Elsewhere (Node 20) it runs the
// binary as a child, as esbuild and biome do, but asynchronously rather than with spawnSync, so
// that it can forward SIGINT, SIGTERM, SIGHUP and SIGQUIT to the binary and exit with its code
// (or die of its signal). The binary's stdout and stderr are inherited; its stdin is a pipe fed
// by the launcher, so that if the launcher itself is killed (SIGKILL cannot be forwarded) the
// server reads EOF and shuts down, its tools with it, instead of living on as an orphan.
'use strict';

const { spawn } = require('child_process');

const PACKAGES = {
  'linux x64': '@stdmcp/linux-x64',
  'linux arm64': '@stdmcp/linux-arm64',
};

function fail(message) {
  process.stderr.write(`stdmcp: ${message}\n`);
  process.exit(2);
}

function binaryPath() {
  const platform = `${process.platform} ${process.arch}`;
  const pkg = PACKAGES[platform];
  if (!pkg) {
    fail(
      `no binary for ${platform}: the npm package ships Linux x64 and arm64 (static, any ` +
        'distribution); elsewhere build it with cargo (https://github.com/stdmcp/stdmcp#install)',
    );
  }
  try {
    return require.resolve(`${pkg}/bin/stdmcp`);
  } catch (e) {
    return fail(
      `${pkg} is not installed. npm installs it as the optional dependency of stdmcp for ` +
        'this platform; --omit=optional (or --no-optional), or a node_modules copied from ' +
        'another platform, leaves it out: reinstall stdmcp without them.',
    );
  }
}

const bin = binaryPath();
const args = process.argv.slice(2);

if (typeof process.execve === 'function') {
  process.execve(bin, [bin, ...args], process.env); // does not return
}

const child = spawn(bin, args, { stdio: ['pipe', 'inherit', 'inherit'] });
child.on('error', (e) => fail(`cannot run ${bin}: ${e.message}`));
child.stdin.on('error', () => {}); // EPIPE: the server exited before reading everything
process.stdin.on('error', () => {});
process.stdin.pipe(child.stdin);

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'];
for (const signal of SIGNALS) {
  process.on(signal, () => child.kill(signal));
}

child.on('exit', (code, signal) => {
  if (signal) {
    for (const s of SIGNALS) process.removeAllListeners(s);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code === null ? 1 : code);
});
