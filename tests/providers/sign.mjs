// Signed webhook requests for the presets whose provider publishes an npm library, for the
// preset test (cases as in tests/providers/README.md, "## sign.mjs"): one JSON object on stdin
//   {"now": <unix seconds>, "base_url": "https://...", "presets": ["github", ...] | null}
// and {"cases": [...]} on stdout; on any failure a message on stderr and exit 1.
// Run from the repository root: `node tests/providers/sign.mjs`.
import * as discord from "./node/discord.mjs";
import * as github from "./node/github.mjs";
import * as githubApp from "./node/github-app.mjs";
import * as linear from "./node/linear.mjs";
import * as mux from "./node/mux.mjs";
import * as paddle from "./node/paddle.mjs";
import * as sanity from "./node/sanity.mjs";
import * as sendgrid from "./node/sendgrid.mjs";
import { SignerError, checkCase } from "./node/common.mjs";

const PROVIDERS = new Map(
  [github, githubApp, sendgrid, discord, mux, linear, sanity, paddle].map((m) => [m.preset, m]),
);

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

function parseRequest(text) {
  let input;
  try {
    input = JSON.parse(text);
  } catch (e) {
    throw new SignerError(`stdin is not JSON: ${e.message}`);
  }
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw new SignerError("stdin must be one JSON object");
  }
  const { now, base_url: baseUrl, presets } = input;
  if (!Number.isSafeInteger(now) || now < 1_600_000_000) {
    throw new SignerError(`"now" must be unix seconds as an integer, got ${JSON.stringify(now)}`);
  }
  if (typeof baseUrl !== "string" || !/^https?:\/\/[^/\s]+/.test(baseUrl)) {
    throw new SignerError(`"base_url" must be an http(s) URL, got ${JSON.stringify(baseUrl)}`);
  }
  if (presets !== null && !(Array.isArray(presets) && presets.every((p) => typeof p === "string"))) {
    throw new SignerError('"presets" must be null or an array of preset names');
  }
  const wanted = presets ?? [...PROVIDERS.keys()];
  const unknown = wanted.filter((p) => !PROVIDERS.has(p));
  if (unknown.length > 0) {
    throw new SignerError(`unknown preset(s) for sign.mjs: ${unknown.join(", ")} (known: ${[...PROVIDERS.keys()].join(", ")})`);
  }
  return { now, baseUrl: baseUrl.replace(/\/+$/, ""), wanted: [...new Set(wanted)] };
}

// A retry is the signer run again this much later as attempt 1 (as sign.py's): new timestamps
// and signatures, the per-attempt fields changed where the signer knows them; its key must be
// the first's.
const RETRY_AFTER_SECONDS = 30;

async function retries(name, now, baseUrl, first) {
  // An event case that is itself a retry (named so) is not retried again.
  const byName = new Map(first.filter((c) => c.kind === "event" && !/retr(y|ied)/i.test(c.name)).map((c) => [c.name, c]));
  const later = await PROVIDERS.get(name).cases({ now: now + RETRY_AFTER_SECONDS, baseUrl, attempt: 1, firstNow: now });
  return later
    .filter((c) => c.kind === "event" && byName.has(c.name))
    .map((c) => {
      const original = byName.get(c.name);
      if (c.expect.key !== original.expect.key) {
        throw new SignerError(`${name}/${c.name}: its retry has another key (${c.expect.key} against ${original.expect.key})`);
      }
      return { ...c, kind: "retry", name: `${c.name}: resent ${RETRY_AFTER_SECONDS} s later as attempt 1`, expect: { key: c.expect.key } };
    });
}

async function main() {
  const { now, baseUrl, wanted } = parseRequest(await readStdin());
  const cases = [];
  for (const name of wanted) {
    const made = await PROVIDERS.get(name).cases({ now, baseUrl });
    if (!made.some((c) => c.kind === "event")) throw new SignerError(`${name}: no event case`);
    made.push(...(await retries(name, now, baseUrl, made)));
    cases.push(...made.map(checkCase));
  }
  process.stdout.write(`${JSON.stringify({ cases })}\n`);
}

main().catch((e) => {
  const message = e instanceof SignerError ? e.message : (e?.stack ?? String(e));
  process.stderr.write(`sign.mjs: ${message}\n`);
  process.exit(1);
});
