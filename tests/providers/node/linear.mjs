// Linear: Linear-Signature = hex HMAC-SHA256(secret, raw body), no prefix. The time is
// the body's webhookTimestamp (unix ms, "when the webhook was sent"), covered by the
// signature; LinearWebhookClient.verify rejects |now - webhookTimestamp| > 60 s. The SDK
// only verifies, so the signature is made with node:crypto and verify() must accept it.
// https://linear.app/developers/webhooks ; SDK: @linear/sdk/webhooks LinearWebhookClient
import { createHmac } from "node:crypto";
import { LINEAR_WEBHOOK_SIGNATURE_HEADER, LinearWebhookClient } from "@linear/sdk/webhooks";
import { STALE_SECONDS, atClock, expectRejected, fail, packageVersion, post } from "./common.mjs";

export const preset = "linear";

const SECRET = "lin_wh_Xq9hT2vK7pLm4nR8sW3yB6cD1fG5jZ0a";
const WRONG_SECRET = "lin_wh_Pa3eU8kN1qV6tY9wC2xF5hJ7mL0oS4rB";
const ORG = "0f6a2e1c-6d6b-4b5e-9d4a-58c1d9e0b7a3";

// `createdSeconds`: when the issue was made (a retry keeps it); `sentSeconds`: this attempt.
function issueCreate(issueId, sentSeconds, createdSeconds = sentSeconds) {
  return JSON.stringify({
    action: "create",
    actor: { id: "2e7a9f5d-3b1c-4e8a-9f0d-6c5b4a3e2d1f", type: "user", name: "Jane Doe" },
    createdAt: new Date((createdSeconds - 1) * 1000).toISOString(),
    data: {
      id: issueId,
      identifier: "ENG-123",
      title: "Checkout fails when the cart is empty",
      priority: 2,
      teamId: "72b2a2dc-6f4f-4423-9d34-24b5bd10634a",
      stateId: "c1f9e0b2-0d3b-4b6e-8a55-0a7f6f1c2d3e",
      createdAt: new Date((createdSeconds - 1) * 1000).toISOString(),
    },
    url: "https://linear.app/acme/issue/ENG-123/checkout-fails-when-the-cart-is-empty",
    type: "Issue",
    organizationId: ORG,
    webhookTimestamp: sentSeconds * 1000,
    webhookId: "000042e3-d123-4980-b49f-8e140eef9329",
  });
}

function signature(body, secret) {
  return createHmac("sha256", secret).update(body).digest("hex");
}

export async function cases({ now, firstNow = now }) {
  if (LINEAR_WEBHOOK_SIGNATURE_HEADER !== "linear-signature") fail("linear: the SDK names another header");
  const client = new LinearWebhookClient(SECRET);
  const other = new LinearWebhookClient(WRONG_SECRET);
  const verifyAt = (clock, c, body, sig) =>
    atClock(clock * 1000, () => c.verify(Buffer.from(body, "utf8"), sig));

  const body = issueCreate("a6c4b6f2-1d5e-4f0e-8a7b-3c2d1e0f9a8b", now, firstNow);
  const sig = signature(body, SECRET);
  if ((await verifyAt(now, client, body, sig)) !== true) fail("linear: verify did not return true");
  await expectRejected(() => verifyAt(now, other, body, sig), "linear: wrong secret");

  const staleAt = now - STALE_SECONDS;
  const staleBody = issueCreate("5d1e8c7b-9a2f-4c3d-b6e5-0f1a2b3c4d5e", staleAt);
  const staleSig = signature(staleBody, SECRET);
  await verifyAt(staleAt, client, staleBody, staleSig); // genuine at its own time
  await expectRejected(() => verifyAt(now, client, staleBody, staleSig), "linear: stale at now");

  const base = {
    preset,
    signed_by: `node:crypto HMAC-SHA256 of the body (algorithm from the docs), verified by @linear/sdk ${packageVersion("@linear/sdk")} LinearWebhookClient.verify`,
    secret: SECRET,
    wrong_secret: WRONG_SECRET,
    source: {},
  };
  const headers = (delivery, s) => ({
    "Content-Type": "application/json; charset=utf-8",
    "Linear-Delivery": delivery,
    "Linear-Event": "Issue",
    "Linear-Signature": s,
  });
  const delivery = "234d1a4e-b617-4388-90fe-adc3633d6b72";
  // Another issue created in the same second: another delivery.
  const otherBody = issueCreate("b7d5c7a3-2e6f-4a1f-9b8c-4d3e2f1a0b9c", now, firstNow);
  const otherDelivery = "5e2a9c4b-7d1f-4b3a-8c6e-9f0a1b2c3d4e";
  if ((await verifyAt(now, client, otherBody, signature(otherBody, SECRET))) !== true) fail("linear: the look-alike");
  return [
    {
      ...base,
      kind: "distinct",
      name: "another issue created in the same second, alike",
      request: post(preset, headers(otherDelivery, signature(otherBody, SECRET)), otherBody),
      expect: { key: otherDelivery, event_type: "Issue" },
    },
    {
      ...base,
      kind: "event",
      name: "Issue create event, keyed on the Linear-Delivery header",
      request: post(preset, headers(delivery, sig), body),
      expect: { key: delivery, event_type: "Issue" },
    },
    {
      ...base,
      kind: "stale",
      name: `Issue create with webhookTimestamp ${STALE_SECONDS} s before now (verify rejects it: more than 60 s)`,
      request: post(preset, headers("8f3b2c1d-4e5f-4a6b-9c7d-0e1f2a3b4c5d", staleSig), staleBody),
      expect: { status: 401 },
    },
  ];
}
