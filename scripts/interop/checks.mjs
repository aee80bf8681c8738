// Shared check bodies for the two TypeScript clients. Each check gets `sdk`, a thin adapter
// over a connected Client ({ listTools(), callTool(params, requestOptions) }, because 1.x takes
// callTool(params, resultSchema, options) and 2.x callTool(params, options)), and returns an
// optional note, or throws.

export const STEP_MS = 10_000; // deadline per check

function expect(cond, why) {
  if (!cond) throw new Error(why);
}

const texts = (r) => (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text);

export function withDeadline(ms, promise, what) {
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** Runs `fn` under a deadline and prints PASS/FAIL; returns true on PASS. */
export async function check(prefix, name, fn) {
  try {
    const note = await withDeadline(STEP_MS, Promise.resolve().then(fn), name);
    console.log(`PASS ${prefix}/${name}${note ? ` (${note})` : ''}`);
    return true;
  } catch (e) {
    console.log(`FAIL ${prefix}/${name}: ${String(e?.message ?? e).split('\n')[0]}`);
    return false;
  }
}

export async function toolsList(sdk, wanted) {
  const names = (await sdk.listTools()).tools.map((t) => t.name);
  const missing = wanted.filter((n) => !names.includes(n));
  expect(names.length > 0 && missing.length === 0, `missing ${missing.join(',') || 'all tools'} in [${names}]`);
  return `${names.length} tools`;
}

export async function echo(sdk) {
  const r = await sdk.callTool({ name: 'echo', arguments: { text: 'hello interop' } });
  expect(!r.isError && texts(r).join() === 'hello interop', `got ${JSON.stringify(r)}`);
}

export async function add(sdk) {
  const r = await sdk.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
  expect(r.structuredContent?.sum === 5, `structuredContent=${JSON.stringify(r.structuredContent)}`);
  const parsed = texts(r).map((t) => { try { return JSON.parse(t); } catch { return null; } });
  expect(parsed.some((p) => p?.sum === 5 && Object.keys(p).length === 1), `no JSON text {"sum":5} in ${JSON.stringify(texts(r))}`);
}

export async function progress(sdk) {
  const seen = [];
  const r = await sdk.callTool({ name: 'sleep', arguments: { ms: 600 } }, { onprogress: (p) => seen.push(p.progress) });
  expect(!r.isError && texts(r).join() === 'slept', `got ${JSON.stringify(r)}`);
  expect(seen.length >= 3, `only ${seen.length} progress notifications: [${seen}]`);
  expect(seen.every((v, i) => i === 0 || seen[i - 1] < v), `not strictly increasing: [${seen}]`);
  return `${seen.length} notifications`;
}

export async function cancel(sdk) {
  const abort = new AbortController();
  // Abort on the first progress notification: the SDK then sends notifications/cancelled.
  const call = sdk.callTool({ name: 'sleep', arguments: { ms: 30000 } }, { signal: abort.signal, onprogress: () => abort.abort('interop cancel') });
  const outcome = await call.then(() => 'resolved', () => 'rejected');
  expect(outcome === 'rejected' && abort.signal.aborted, `sleep 30000 ${outcome} without being aborted`);
  const r = await withDeadline(2000, sdk.callTool({ name: 'echo', arguments: { text: 'after cancel' } }), 'echo after cancel');
  expect(texts(r).join() === 'after cancel', `echo after cancel got ${JSON.stringify(r)}`);
}

export async function fail(sdk) {
  const r = await sdk.callTool({ name: 'fail', arguments: {} });
  expect(r.isError === true, `isError is ${r.isError}`);
}

export async function unknownTool(sdk) {
  let r;
  try {
    r = await sdk.callTool({ name: 'no_such_tool', arguments: {} });
  } catch (e) {
    expect(typeof e?.code === 'number', `threw a non-JSON-RPC error: ${e}`);
    return `JSON-RPC error ${e.code}`;
  }
  expect(r.isError === true, `neither an error nor isError: ${JSON.stringify(r)}`);
  return 'isError result';
}

/** The test manifest's tools: a program's output as text, its exit code as structured content. */
export async function manifestCalls(sdk) {
  let r = await sdk.callTool({ name: 'echo_args', arguments: { text: 'hello interop' } });
  expect(texts(r).join() === 'hello interop\n', `echo_args got ${JSON.stringify(r)}`);
  expect(r.structuredContent?.exitCode === 0, `structuredContent=${JSON.stringify(r.structuredContent)}`);
  r = await sdk.callTool({ name: 'word_count', arguments: { text: 'one two three' } });
  expect(texts(r)[0]?.trim() === '3', `word_count got ${JSON.stringify(r)}`);
  r = await sdk.callTool({ name: 'echo_args', arguments: { text: '-rf' } });
  expect(r.isError === true && texts(r)[0]?.includes("starts with '-'"), `a leading dash was not refused: ${JSON.stringify(r)}`);
}

/**
 * A call outliving its tool's background delay is answered with a job while it runs; job_wait
 * then returns the tool's own result (README "Long runs"). On a manifest tool the result carries
 * structured content: the tool is listed without an outputSchema, or the SDK would refuse the
 * job answer.
 */
export async function job(sdk, name, args, expected) {
  let r = await sdk.callTool({ name, arguments: args });
  const started = r._meta?.['stdmcp/job'];
  expect(started?.state === 'working', `not answered with a job: ${JSON.stringify(r)}`);
  let waits = 0;
  while (r._meta?.['stdmcp/job'] && waits < 4) {
    r = await sdk.callTool({ name: 'job_wait', arguments: { id: started.id, seconds: 2 } });
    waits += 1;
  }
  expect(!r.isError && texts(r).join() === expected, `job_wait got ${JSON.stringify(r)}`);
  return `${started.id}, ${waits} job_wait calls`;
}

/** The check list for one target; `connectFn` connects and returns a note with the version. */
export async function runAll(prefix, target, sdk, connectFn, eraCheck) {
  if (!(await check(prefix, 'initialize', connectFn))) return;
  if (eraCheck) await check(prefix, 'era', eraCheck);
  if (target !== 'everything') {
    await check(prefix, 'tools/list', () => toolsList(sdk, ['echo_args', 'word_count']));
    await check(prefix, 'manifest-calls', () => manifestCalls(sdk));
    await check(prefix, 'job', () => job(sdk, 'slow_job', {}, 'done\n'));
    return;
  }
  await check(prefix, 'tools/list', () => toolsList(sdk, ['echo', 'add', 'sleep', 'fail']));
  await check(prefix, 'echo', () => echo(sdk));
  await check(prefix, 'add', () => add(sdk));
  await check(prefix, 'progress', () => progress(sdk));
  await check(prefix, 'cancel', () => cancel(sdk));
  await check(prefix, 'fail', () => fail(sdk));
  await check(prefix, 'unknown-tool', () => unknownTool(sdk));
  await check(prefix, 'job', () => job(sdk, 'slow_compute', { seconds: 3, label: 'interop-job' }, 'interop-job: computed for 3 s'));
}
