// Paddle Billing: Paddle-Signature "ts=<unix seconds>;h1=<hex HMAC-SHA256(secret,
// "{ts}:{raw body}")>". @paddle/paddle-node-sdk only verifies (webhooks.unmarshal; it
// rejects a ts more than 5 s in the past), so the header is made with node:crypto and
// unmarshal must accept it at the run's "now".
// https://developer.paddle.com/webhooks/signature-verification
import { createHmac } from "node:crypto";
import { Paddle } from "@paddle/paddle-node-sdk";
import { STALE_SECONDS, atClock, expectRejected, fail, packageVersion, post } from "./common.mjs";

export const preset = "paddle";

// The secret key example from Paddle's docs (GET /notification-settings/{id} response).
const SECRET = "pdl_ntfset_01gkpjp8bkm3tm53kdgkx6sms7_6h3qd3uFSi9YCD3OLYAShQI90XTI5vEI";
const WRONG_SECRET = "pdl_ntfset_01hv8x2k3m4n5p6q7r8s9t0v1w_Zb4cX8yT1uV5wN9qR2sL6mK0jH3gF7d";

function customerCreated(eventId, at) {
  const iso = new Date(at * 1000).toISOString();
  return JSON.stringify({
    event_id: eventId,
    event_type: "customer.created",
    occurred_at: iso,
    notification_id: "ntf_01hv8x2mt5q3n4k7c9b2d6f8gh",
    data: {
      id: "ctm_01hv8x2m7s6q9w4e3r2t1y5u8i",
      name: "Jo Brown",
      email: "jo@example.com",
      locale: "en",
      status: "active",
      custom_data: null,
      import_meta: null,
      marketing_consent: false,
      created_at: iso,
      updated_at: iso,
    },
  });
}

function header(ts, body, secret) {
  return `ts=${ts};h1=${createHmac("sha256", secret).update(`${ts}:${body}`).digest("hex")}`;
}

export async function cases({ now, firstNow = now }) {
  const paddle = new Paddle("pdl_sdbx_apikey_unused_by_webhooks");
  const unmarshalAt = (clock, body, secret, sig) =>
    atClock(clock * 1000, () => paddle.webhooks.unmarshal(body, secret, sig));

  const eventId = "evt_01hv8x2mt5c4kq3n9b7d2f6g8h";
  const body = customerCreated(eventId, firstNow); // occurred_at: a retry keeps it
  const sig = header(now, body, SECRET);
  const event = await unmarshalAt(now, body, SECRET, sig);
  if (event.eventId !== eventId || event.eventType !== "customer.created") fail("paddle: unmarshal returned another event");
  await expectRejected(() => unmarshalAt(now, body, WRONG_SECRET, sig), "paddle: wrong secret");

  const staleTs = now - STALE_SECONDS;
  const staleBody = customerCreated("evt_01hv8x2mt5stale0000000000", staleTs);
  const staleSig = header(staleTs, staleBody, SECRET);
  await unmarshalAt(staleTs, staleBody, SECRET, staleSig); // genuine at its own time
  await expectRejected(() => unmarshalAt(now, staleBody, SECRET, staleSig), "paddle: stale at now");

  const base = {
    preset,
    signed_by: `node:crypto HMAC-SHA256 over "{ts}:{body}" (algorithm from the docs), verified by @paddle/paddle-node-sdk ${packageVersion("@paddle/paddle-node-sdk")} webhooks.unmarshal`,
    secret: SECRET,
    wrong_secret: WRONG_SECRET,
    source: {},
  };
  const headers = (s) => ({ "Content-Type": "application/json", "Paddle-Signature": s });
  return [
    {
      ...base,
      kind: "event",
      name: "customer.created event, keyed on the body's event_id",
      request: post(preset, headers(sig), body),
      expect: { key: eventId, event_type: "customer.created" },
    },
    {
      ...base,
      kind: "stale",
      name: `customer.created signed ${STALE_SECONDS} s before now (unmarshal rejects a ts more than 5 s old)`,
      request: post(preset, headers(staleSig), staleBody),
      expect: { status: 401 },
    },
  ];
}
