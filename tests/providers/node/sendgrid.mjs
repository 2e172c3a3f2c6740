// SendGrid Event Webhook: ECDSA P-256 / SHA-256 over timestamp + raw body (no separator),
// a base64 DER signature in X-Twilio-Email-Event-Webhook-Signature, the timestamp (unix
// seconds) in X-Twilio-Email-Event-Webhook-Timestamp. @sendgrid/eventwebhook only verifies,
// so the request is signed with node:crypto and EventWebhook.verifySignature must accept it.
// https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook-security-features
import eventwebhook from "@sendgrid/eventwebhook";
import {
  expectRejected, expectTrue, p256FromScalar, p256SignBase64, packageVersion, post, sha256Hex,
} from "./common.mjs";

const { EventWebhook, EventWebhookHeader } = eventwebhook;

export const preset = "sendgrid";

// Fixed private scalars, so the public keys (the "secret" a user pastes) are the same each run.
const SIGNER = p256FromScalar("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318");
const OTHER = p256FromScalar("2b7e151628aed2a6abf7158809cf4f3c762e7160f38b4da56a784d9045190cfe");

function batchBody(now) {
  const message = "14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0";
  return JSON.stringify([
    {
      email: "example@test.com",
      timestamp: now - 2,
      "smtp-id": "<14c5d75ce93.dfd.64b469@ismtpd-555>",
      event: "processed",
      category: ["cat facts"],
      sg_event_id: "rbtnWrG1DVDGGGFHFyun0A==",
      sg_message_id: message,
    },
    {
      email: "example@test.com",
      timestamp: now - 1,
      "smtp-id": "<14c5d75ce93.dfd.64b469@ismtpd-555>",
      event: "delivered",
      category: ["cat facts"],
      sg_event_id: "AIdmJ2kN3ckkrISBrs96ew==",
      sg_message_id: message,
      response: "250 OK",
    },
  ]);
}

// A later batch overlapping the first (docs/design.md §14): its delivered event again (the same
// bytes) and a new open of the same message.
function overlapBody(now) {
  const [, delivered] = JSON.parse(batchBody(now));
  return JSON.stringify([
    delivered,
    {
      email: "example@test.com",
      timestamp: now,
      event: "open",
      category: ["cat facts"],
      sg_event_id: "Lq5Q4m2sRf2PzXc9b1YtWg==",
      sg_message_id: delivered.sg_message_id,
      useragent: "Mozilla/5.0",
      ip: "255.255.255.255",
    },
  ]);
}

// A retry still carrying its first timestamp this long after signing: SendGrid retries for 24 h
// and does not say it re-signs, so the preset takes 3600 s (chosen); past the old 300 s.
const LATE_RETRY_SECONDS = 1800;
// Beyond the preset's 3600 s: refused.
const STALE_SECONDS = 7200;

export async function cases({ now, firstNow = now }) {
  const verifier = new EventWebhook();
  const publicKey = verifier.convertPublicKeyToECDSA(SIGNER.spkiBase64);
  const otherKey = verifier.convertPublicKeyToECDSA(OTHER.spkiBase64);
  const version = packageVersion("@sendgrid/eventwebhook");
  const request = async (body, at) => {
    const timestamp = String(at);
    const signature = p256SignBase64(SIGNER.privateKey, Buffer.from(timestamp + body, "utf8"));
    expectTrue(verifier.verifySignature(publicKey, body, signature, timestamp), "sendgrid: verifySignature");
    await expectRejected(
      () => verifier.verifySignature(otherKey, body, signature, timestamp),
      "sendgrid: the other public key",
    );
    return post(preset, {
      "Content-Type": "application/json",
      [EventWebhookHeader.SIGNATURE()]: signature,
      [EventWebhookHeader.TIMESTAMP()]: timestamp,
    }, body);
  };
  const base = {
    preset,
    signed_by: `node:crypto ECDSA P-256/SHA-256 over timestamp+body (algorithm from the docs), verified by @sendgrid/eventwebhook ${version} EventWebhook.verifySignature`,
    secret: SIGNER.spkiBase64,
    wrong_secret: OTHER.spkiBase64,
    source: {},
  };
  const body = batchBody(firstNow); // the events' times: a retry keeps them
  const late = batchBody(now - LATE_RETRY_SECONDS);
  return [
    {
      ...base,
      kind: "event",
      name: "event batch (processed + delivered)",
      request: await request(body, now),
      // The batch is split (docs/design.md §14): each element is keyed by its own
      // sg_event_id (SendGrid: "unique for every event"), typed by its `event`.
      expect: { key: "rbtnWrG1DVDGGGFHFyun0A==", event_type: "processed" },
    },
    {
      ...base,
      kind: "event",
      name: "event batch retried with its first timestamp, 30 min on (tolerance 3600 s)",
      request: await request(late, now - LATE_RETRY_SECONDS),
      // The same events again: each a duplicate of the first batch's.
      expect: { key: "rbtnWrG1DVDGGGFHFyun0A==", event_type: "processed" },
    },
    {
      ...base,
      kind: "distinct",
      name: "a later batch overlapping it: the delivered event again and an open, its new event",
      request: await request(overlapBody(firstNow), now),
      expect: { key: "Lq5Q4m2sRf2PzXc9b1YtWg==", event_type: "open" },
    },
    {
      ...base,
      kind: "stale",
      name: "event batch signed 2 h ago (beyond 3600 s)",
      request: await request(late, now - STALE_SECONDS),
      expect: { status: 401 },
    },
  ];
}
