// Mux: Mux-Signature "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "{t}.{raw body}")>".
// @mux/mux-node only verifies (webhooks.verifySignature / unwrap, 300 s tolerance, past
// only), so the header is made with node:crypto and unwrap must accept it at the run's "now".
// https://docs.mux.com/docs/webhook-security (signature) and
// https://www.mux.com/docs/core/listen-for-webhooks (retries, duplicates)
import { createHmac } from "node:crypto";
import Mux from "@mux/mux-node";
import { STALE_SECONDS, atClock, expectRejected, packageVersion, post } from "./common.mjs";

export const preset = "mux";

const SECRET = "okhqk8bsfna91vskjl4r4a9a2rgdd1qv";
const WRONG_SECRET = "3v8ml7ud2ckp0h1tqj5xg4ws6ye9rzaf";

// `now`: when the event was created (a retry keeps it); `attempt`: earlier attempts listed.
function assetReady(id, now, attempt = 0) {
  const assetId = "0201p02fGKPE7MrbC269XRD7LpcHhrmbu0002";
  return JSON.stringify({
    type: "video.asset.ready",
    request_id: null,
    object: { type: "asset", id: assetId },
    id,
    environment: { name: "Production", id: "j0863n" },
    data: {
      id: assetId,
      status: "ready",
      playback_ids: [{ policy: "public", id: "OJ01EY2Fjh00KDrGLNvDA02FXflIUxrJTVf" }],
      duration: 23.857167,
      max_stored_resolution: "HD",
      aspect_ratio: "16:9",
      created_at: now - 40,
    },
    created_at: new Date(now * 1000).toISOString(),
    attempts: Array.from({ length: attempt }, (_, n) => ({
      webhook_id: 30417, response_status_code: 503, response_headers: {}, response_body: "",
      max_attempts: 30, id: `a${n}`, created_at: new Date(now * 1000).toISOString(), address: "https://example.com/webhooks",
    })),
    accessor_source: null,
    accessor: null,
  });
}

function header(t, body, secret) {
  return `t=${t},v1=${createHmac("sha256", secret).update(`${t}.${body}`).digest("hex")}`;
}

export async function cases({ now, firstNow = now, attempt = 0 }) {
  const mux = new Mux({ tokenId: "unused", tokenSecret: "unused", webhookSecret: SECRET });
  const unwrapAt = (clock, body, sig, secret) =>
    atClock(clock * 1000, () => mux.webhooks.unwrap(body, { "mux-signature": sig }, secret));

  const eventId = "3a56ac3d-33da-4366-855b-f592d898409d";
  const body = assetReady(eventId, firstNow, attempt);
  const sig = header(now, body, SECRET);
  const event = await unwrapAt(now, body, sig, SECRET);
  if (event.id !== eventId) throw new Error("mux: unwrap returned another event");
  await expectRejected(() => unwrapAt(now, body, sig, WRONG_SECRET), "mux: wrong secret");

  const staleT = now - STALE_SECONDS;
  const staleBody = assetReady("6e0c1ab2-5d2a-4a55-9c3e-2b8f0d7a41c9", staleT);
  const staleSig = header(staleT, staleBody, SECRET);
  await unwrapAt(staleT, staleBody, staleSig, SECRET); // genuine at its own time
  await expectRejected(() => unwrapAt(now, staleBody, staleSig, SECRET), "mux: stale at now");

  const version = packageVersion("@mux/mux-node");
  const base = {
    preset,
    signed_by: `node:crypto HMAC-SHA256 over "{t}.{body}" (algorithm from the docs), verified by @mux/mux-node ${version} webhooks.unwrap`,
    secret: SECRET,
    wrong_secret: WRONG_SECRET,
    source: {},
  };
  const headers = (s) => ({ "Content-Type": "application/json", "Mux-Signature": s });
  // Another asset ready in the same second: its own event id.
  const otherId = "4b67bd4e-44ec-4477-966c-06a9e9a8b2d7";
  const otherBody = assetReady(otherId, firstNow, attempt);
  const otherSig = header(now, otherBody, SECRET);
  if ((await unwrapAt(now, otherBody, otherSig, SECRET)).id !== otherId) throw new Error("mux: the look-alike");
  return [
    {
      ...base,
      kind: "distinct",
      name: "another video.asset.ready in the same second, alike",
      request: post(preset, headers(otherSig), otherBody),
      expect: { key: otherId, event_type: "video.asset.ready" },
    },
    {
      ...base,
      kind: "event",
      name: "video.asset.ready event",
      request: post(preset, headers(sig), body),
      expect: { key: eventId, event_type: "video.asset.ready" },
    },
    {
      ...base,
      kind: "stale",
      name: `video.asset.ready signed ${STALE_SECONDS} s before now (unwrap rejects it: older than 300 s)`,
      request: post(preset, headers(staleSig), staleBody),
      expect: { status: 401 },
    },
  ];
}
