// Shared helpers for the Node signers (tests/providers/sign.mjs): the case shape (see
// tests/providers/README.md, "## sign.mjs"), a clock the providers' verifiers can be run at,
// and the key material made from fixed seeds so every run shows the same secrets.
import { createECDH, createHash, createPrivateKey, createPublicKey, sign } from "node:crypto";
import { readFileSync } from "node:fs";

/** Seconds a stale case is signed before "now": outside every provider's tolerance. */
export const STALE_SECONDS = 7200;

/** The version of an installed package, read from its package.json in the repository's node_modules. */
export function packageVersion(name) {
  const file = new URL(`../../../node_modules/${name}/package.json`, import.meta.url);
  return JSON.parse(readFileSync(file, "utf8")).version;
}

export function sha256Hex(bytes) {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Stops the run: the message goes to stderr and sign.mjs exits 1. */
export class SignerError extends Error {}

export function fail(message) {
  throw new SignerError(message);
}

/** Fails loudly unless `ok` is true; `what` names the check. */
export function expectTrue(ok, what) {
  if (ok !== true) fail(`${what}: the provider's library said no`);
}

/** Fails loudly unless `run()` throws or rejects (or returns false). */
export async function expectRejected(run, what) {
  let outcome;
  try {
    outcome = await run();
  } catch {
    return;
  }
  if (outcome !== false) fail(`${what}: the provider's library accepted it`);
}

const RealDate = globalThis.Date;

/**
 * Runs `fn` with the global clock (Date.now and `new Date()`) set to `unixMs`, so a
 * verifier that checks a signed timestamp against the wall clock is checked against the
 * run's "now" (or against the stale time) instead. The real clock is back afterwards.
 */
export async function atClock(unixMs, fn) {
  class FixedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(unixMs);
      else super(...args);
    }
    static now() {
      return unixMs;
    }
  }
  globalThis.Date = FixedDate;
  try {
    return await fn();
  } finally {
    globalThis.Date = RealDate;
  }
}

/** An Ed25519 key pair from a 32-byte seed (hex); `publicHex` is the raw 32-byte key. */
export function ed25519FromSeed(seedHex) {
  const pkcs8 = Buffer.concat([
    Buffer.from("302e020100300506032b657004220420", "hex"),
    Buffer.from(seedHex, "hex"),
  ]);
  const privateKey = createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" });
  const spki = createPublicKey(privateKey).export({ format: "der", type: "spki" });
  return { privateKey, publicHex: spki.subarray(spki.length - 32).toString("hex") };
}

/** Ed25519 signature of `message`, hex. */
export function ed25519SignHex(privateKey, message) {
  return sign(null, message, privateKey).toString("hex");
}

/** A P-256 key pair from a private scalar (hex); `spkiBase64` is base64 DER SubjectPublicKeyInfo. */
export function p256FromScalar(scalarHex) {
  const ecdh = createECDH("prime256v1");
  ecdh.setPrivateKey(Buffer.from(scalarHex, "hex"));
  const point = ecdh.getPublicKey(null, "uncompressed");
  const b64url = (b) => b.toString("base64url");
  const jwk = {
    kty: "EC",
    crv: "P-256",
    d: b64url(Buffer.from(scalarHex, "hex")),
    x: b64url(point.subarray(1, 33)),
    y: b64url(point.subarray(33, 65)),
  };
  const privateKey = createPrivateKey({ key: jwk, format: "jwk" });
  const spki = createPublicKey(privateKey).export({ format: "der", type: "spki" });
  return { privateKey, spkiBase64: spki.toString("base64") };
}

/** ECDSA P-256 / SHA-256 signature of `message`, DER, base64. */
export function p256SignBase64(privateKey, message) {
  return sign("sha256", message, { key: privateKey, dsaEncoding: "der" }).toString("base64");
}

/** The request part of a case: a POST of `body` (a string, sent as its UTF-8 bytes). */
export function post(preset, headers, body) {
  return {
    method: "POST",
    path: `/webhooks/${preset}`,
    query: null,
    headers,
    body_base64: Buffer.from(body, "utf8").toString("base64"),
  };
}

const KINDS = new Set(["event", "stale", "handshake", "reused", "retry", "distinct"]);

/** Checks one case against the contract's shape; fails loudly on the first defect. */
export function checkCase(c) {
  const where = `case ${JSON.stringify(c?.name)} of ${c?.preset}`;
  const text = (v) => typeof v === "string" && v.length > 0;
  if (!text(c.preset) || !KINDS.has(c.kind) || !text(c.name) || !text(c.signed_by)) {
    fail(`${where}: preset, kind, name and signed_by are required`);
  }
  if (!text(c.secret) || !text(c.wrong_secret) || c.secret === c.wrong_secret) {
    fail(`${where}: secret and a different wrong_secret are required`);
  }
  if (typeof c.source !== "object" || c.source === null) fail(`${where}: source must be an object`);
  const r = c.request;
  if (!r || !["POST", "GET"].includes(r.method) || r.path !== `/webhooks/${c.preset}`) {
    fail(`${where}: request method/path`);
  }
  if (typeof r.body_base64 !== "string" || typeof r.headers !== "object") {
    fail(`${where}: request headers/body_base64`);
  }
  for (const [k, v] of Object.entries(r.headers)) {
    if (!text(k) || typeof v !== "string" || /[\r\n]/.test(v)) fail(`${where}: header ${k}`);
  }
  const e = c.expect;
  if (c.kind === "event" && (!text(e?.key) || !("event_type" in e))) {
    fail(`${where}: an event case needs expect.key and expect.event_type`);
  }
  if (c.kind === "handshake" && !Number.isInteger(e?.status)) {
    fail(`${where}: a handshake case needs expect.status`);
  }
  if (c.kind === "stale" && (typeof e !== "object" || e === null)) fail(`${where}: expect`);
  if ((c.kind === "reused" || c.kind === "retry") && !text(e?.key)) fail(`${where}: a ${c.kind} case needs expect.key`);
  if (c.kind === "distinct" && (!text(e?.key) || !("event_type" in e))) fail(`${where}: a distinct case needs a key and an event_type`);
  return c;
}
