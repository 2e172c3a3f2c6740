// Sanity (GROQ-powered webhooks): sanity-webhook-signature "t=<unix ms>,v1=<base64url, no
// padding, of HMAC-SHA256(secret, "{t}.{raw body}")>", made by @sanity/webhook
// encodeSignatureHeader and checked by isValidSignature. The toolkit checks no tolerance
// (only t >= 2021-01-01), so no stale case is emitted (see tests/providers/README.md).
// https://www.sanity.io/docs/webhooks ; https://github.com/sanity-io/webhook-toolkit
import { SIGNATURE_HEADER_NAME, encodeSignatureHeader, isValidSignature } from "@sanity/webhook";
import { expectRejected, expectTrue, fail, packageVersion, post } from "./common.mjs";

export const preset = "sanity";

const SECRET = "sanity-hook-secret-8c41d7e2b9";
const WRONG_SECRET = "sanity-hook-secret-1f95a3c06e";

function documentCreated(now) {
  return JSON.stringify({
    _createdAt: new Date(now * 1000).toISOString(),
    _id: "9f3c1a52-7e8b-4d6a-b0c4-2e1f5d7a8b93",
    _rev: "Xa7hQ2mP9kL4nR1sT6vW8y",
    _type: "post",
    _updatedAt: new Date(now * 1000).toISOString(),
    slug: { _type: "slug", current: "hello-webhooks" },
    title: "Hello, webhooks",
  });
}

export async function cases({ now, firstNow = now }) {
  if (SIGNATURE_HEADER_NAME !== "sanity-webhook-signature") fail("sanity: the toolkit names another header");
  const body = documentCreated(firstNow); // the document's times: a retry keeps them
  const tMs = now * 1000;
  const signature = await encodeSignatureHeader(body, tMs, SECRET);
  expectTrue(await isValidSignature(body, signature, SECRET), "sanity: isValidSignature");
  await expectRejected(() => isValidSignature(body, signature, WRONG_SECRET), "sanity: wrong secret");
  const idempotencyKey = "idem-6a1f0c9e-2d4b-4f7a-8e3c-5b9d1a7e0f24";
  const signedBy = `@sanity/webhook ${packageVersion("@sanity/webhook")} encodeSignatureHeader, verified by isValidSignature`;
  const headers = (key, documentId, transaction, sig) => ({
    "content-type": "application/json",
    "idempotency-key": key,
    "sanity-project-id": "3do82whm",
    "sanity-dataset": "production",
    "sanity-document-id": documentId,
    "sanity-operation": "create",
    "sanity-transaction-id": transaction,
    "sanity-transaction-time": new Date(firstNow * 1000).toISOString(),
    "sanity-webhook-id": "aR1zK3xY7wQ9",
    [SIGNATURE_HEADER_NAME]: sig,
  });
  // Another document created with the same projection in another transaction: its own delivery.
  const other = "idem-0b7e5d3c-9a1f-4e2d-8c6b-5a4f3e2d1c0b";
  const otherSig = await encodeSignatureHeader(body, tMs, SECRET);
  expectTrue(await isValidSignature(body, otherSig, SECRET), "sanity: the look-alike");
  return [
    {
      preset,
      kind: "distinct",
      name: "another document, the same projection, another transaction, alike",
      signed_by: signedBy,
      secret: SECRET,
      wrong_secret: WRONG_SECRET,
      source: {},
      request: post(preset, headers(other, "0c4d2b63-8f9c-4e7b-a1d5-3f2a6e8b9c04", "Yb8iR3nQ0lM5oS2tU7wX9z", otherSig), body),
      expect: { key: other, event_type: "create" },
    },
    {
      preset,
      kind: "event",
      name: "document create (post), keyed on the idempotency-key header",
      signed_by: `@sanity/webhook ${packageVersion("@sanity/webhook")} encodeSignatureHeader, verified by isValidSignature`,
      secret: SECRET,
      wrong_secret: WRONG_SECRET,
      source: {},
      request: post(preset, {
        "content-type": "application/json",
        "idempotency-key": idempotencyKey,
        "sanity-project-id": "3do82whm",
        "sanity-dataset": "production",
        "sanity-document-id": "9f3c1a52-7e8b-4d6a-b0c4-2e1f5d7a8b93",
        "sanity-operation": "create",
        "sanity-transaction-id": "Xa7hQ2mP9kL4nR1sT6vW8y",
        "sanity-transaction-time": new Date(now * 1000).toISOString(),
        "sanity-webhook-id": "aR1zK3xY7wQ9",
        [SIGNATURE_HEADER_NAME]: signature,
      }, body),
      expect: { key: idempotencyKey, event_type: "create" },
    },
  ];
}
