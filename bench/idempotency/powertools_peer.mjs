// THE COMPARISON, NOT THE PRODUCT: the bench's trivial handler made idempotent with Powertools
// for AWS Lambda (TypeScript), as its documentation shows (makeIdempotent,
// DynamoDBPersistenceLayer, the key from `order`), run through the paths of
// make bench-idempotency against the counting proxy. Installed from npm (package.json), never
// copied.
//
// Environment: BENCH_TABLE, BENCH_PROXY (host:port of the proxy, for marks), BENCH_CACHE
// (1: Powertools' local cache on), BENCH_SPAWN_NS (the runner's clock when it started this
// process), and the standard AWS_ENDPOINT_URL / AWS_REGION / credentials.
// Prints one JSON line: init time, peak RSS and each path's outcome.

import { performance } from 'node:perf_hooks';
import { readFileSync } from 'node:fs';

const t0 = performance.now();
// Imported after t0: the init figure includes loading Powertools and the SDK.
const { makeIdempotent, IdempotencyConfig } = await import('@aws-lambda-powertools/idempotency');
const { DynamoDBPersistenceLayer } = await import('@aws-lambda-powertools/idempotency/dynamodb');

const persistenceStore = new DynamoDBPersistenceLayer({ tableName: process.env.BENCH_TABLE });
const config = new IdempotencyConfig({
  eventKeyJmesPath: 'order',
  useLocalCache: process.env.BENCH_CACHE === '1',
});

// Invocations whose handler waits (by request id): inside, then let go.
function gate() {
  const g = {};
  g.enteredP = new Promise((r) => (g.entered = r));
  g.releaseP = new Promise((r) => (g.release = r));
  return g;
}
const gates = { 'hold-inflight': gate(), 'hold-abandoned': gate() }; // abandoned: never let go
// unref: a handler left waiting (the timed-out call) does not keep the process alive.
const timeout = (ms) => new Promise((r) => setTimeout(r, ms).unref());
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const handler = makeIdempotent(
  async (event, context) => {
    const g = gates[context.awsRequestId];
    if (g) {
      g.entered();
      await Promise.race([g.releaseP, timeout(30_000)]);
    }
    return { ok: true };
  },
  { persistenceStore, config },
);

const initMs = performance.now() - t0;
const readyEpochNs = BigInt(Date.now()) * 1_000_000n;

function context(requestId, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  return {
    functionName: 'bench',
    functionVersion: '$LATEST',
    memoryLimitInMB: '128',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:bench',
    awsRequestId: requestId,
    getRemainingTimeInMillis: () => deadline - Date.now(),
  };
}

async function mark(name) {
  const res = await fetch(`http://${process.env.BENCH_PROXY}/__bench/mark?name=${name}`);
  await res.text();
}

async function call(event, requestId, timeoutMs) {
  try {
    return { result: await handler(event, context(requestId, timeoutMs)) };
  } catch (e) {
    return { error: e.name || String(e) };
  }
}

function vmhwmKb() {
  const m = readFileSync('/proc/self/status', 'utf8').match(/^VmHWM:\s+(\d+)/m);
  return m ? Number(m[1]) : null;
}

const out = {};
const first = { order: 'o-1', amount: 42 };
await mark('first');
out.first = await call(first, 'r-1');
await mark('dup_done');
out.dup_done = await call({ ...first }, 'r-2');

const held = { order: 'o-2', amount: 42 };
await mark('inflight_held');
const firstP = call(held, 'hold-inflight');
await Promise.race([gates['hold-inflight'].enteredP, timeout(30_000)]);
await mark('inflight_dup');
out.inflight_dup = await call({ ...held }, 'r-4');
await mark('inflight_rest');
gates['hold-inflight'].release();
out.inflight_first = await firstP;

// A call that times out inside the handler (a 1 s invocation, never let go), then a retry once
// its lease has run out.
const lost = { order: 'o-3', amount: 42 };
await mark('abandoned');
void call(lost, 'hold-abandoned', 1_000);
await Promise.race([gates['hold-abandoned'].enteredP, timeout(30_000)]);
await sleep(1_500);
await mark('retry_after_timeout');
out.retry_after_timeout = await call({ ...lost }, 'r-6');
await mark('end');

console.log(
  JSON.stringify({
    init_ms: initMs,
    spawn_to_ready_ms: Number(readyEpochNs - BigInt(process.env.BENCH_SPAWN_NS)) / 1e6,
    vmhwm_kb: vmhwmKb(),
    outcomes: out,
  }),
);
