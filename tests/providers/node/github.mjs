// GitHub: X-Hub-Signature-256 = "sha256=" + hex HMAC-SHA256(secret, raw body), made by
// @octokit/webhooks-methods sign() and checked by its verify(). No timestamp is signed.
// https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
import { sign, verify } from "@octokit/webhooks-methods";
import { expectRejected, expectTrue, fail, packageVersion, post } from "./common.mjs";

export const preset = "github";

const SECRET = "gh-webhook-secret-4f1c2a9e7b";
const WRONG_SECRET = "gh-webhook-secret-0d8e6b3c51";
const HOOK_ID = "292430182";
const REPO_ID = "1296269";

// The documentation's own test values (validating-webhook-deliveries, "Testing the webhook
// payload validation"): the library must reproduce them before it signs anything else.
const DOC_SECRET = "It's a Secret to Everybody";
const DOC_PAYLOAD = "Hello, World!";
const DOC_SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

function pushBody(now) {
  return JSON.stringify({
    ref: "refs/heads/main",
    before: "6dcb09b5b57875f334f61aebed695e2e4193db5e",
    after: "7fd1a60b01f91b314f59955a4e4d4e80d8edf11d",
    repository: {
      id: Number(REPO_ID),
      node_id: "MDEwOlJlcG9zaXRvcnkxMjk2MjY5",
      name: "Hello-World",
      full_name: "octocat/Hello-World",
      private: false,
      owner: { login: "octocat", id: 1 },
    },
    pusher: { name: "octocat", email: "octocat@github.com" },
    sender: { login: "octocat", id: 1, type: "User" },
    created: false,
    deleted: false,
    forced: false,
    compare: "https://github.com/octocat/Hello-World/compare/6dcb09b5b578...7fd1a60b01f9",
    commits: [
      {
        id: "7fd1a60b01f91b314f59955a4e4d4e80d8edf11d",
        message: "Fix the build",
        timestamp: new Date(now * 1000).toISOString(),
        author: { name: "Monalisa Octocat", email: "octocat@github.com", username: "octocat" },
      },
    ],
  });
}

function pingBody() {
  return JSON.stringify({
    zen: "Design for failure.",
    hook_id: Number(HOOK_ID),
    hook: {
      type: "Repository",
      id: Number(HOOK_ID),
      name: "web",
      active: true,
      events: ["push", "ping"],
      config: { content_type: "json", insecure_ssl: "0", url: "https://example.invalid/webhooks/github" },
    },
    repository: { id: Number(REPO_ID), full_name: "octocat/Hello-World" },
    sender: { login: "octocat", id: 1, type: "User" },
  });
}

async function signed(event, delivery, body) {
  const signature = await sign(SECRET, body);
  expectTrue(await verify(SECRET, body, signature), `github ${event}: verify()`);
  await expectRejected(() => verify(WRONG_SECRET, body, signature), `github ${event}: wrong secret`);
  return post(preset, {
    "Content-Type": "application/json",
    "User-Agent": "GitHub-Hookshot/a1b2c3d",
    "X-GitHub-Event": event,
    "X-GitHub-Delivery": delivery,
    "X-GitHub-Hook-ID": HOOK_ID,
    "X-GitHub-Hook-Installation-Target-Type": "repository",
    "X-GitHub-Hook-Installation-Target-ID": REPO_ID,
    "X-Hub-Signature-256": signature,
  }, body);
}

export async function cases({ now, firstNow = now }) {
  if ((await sign(DOC_SECRET, DOC_PAYLOAD)) !== DOC_SIGNATURE) {
    fail("github: @octokit/webhooks-methods does not reproduce the documentation's test signature");
  }
  const by = `@octokit/webhooks-methods ${packageVersion("@octokit/webhooks-methods")} sign(), verified by verify()`;
  const base = { preset, signed_by: by, secret: SECRET, wrong_secret: WRONG_SECRET, source: {} };
  const pushDelivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958";
  const pingDelivery = "9c1d3e5a-4b7f-11ef-8a2d-0242ac120002";
  return [
    {
      ...base,
      kind: "event",
      name: "push event",
      request: await signed("push", pushDelivery, pushBody(firstNow)),
      expect: { key: pushDelivery, event_type: "push" },
    },
    {
      ...base,
      kind: "event",
      name: "ping event (sent when the webhook is created; needs only a 2xx)",
      request: await signed("ping", pingDelivery, pingBody()),
      expect: { key: pingDelivery, event_type: "ping" },
    },
  ];
}
