// GitHub Apps: one webhook per App, signed with the App's webhook secret exactly as a repository
// or organization webhook is (X-Hub-Signature-256 = "sha256=" + hex HMAC-SHA256 of the raw body),
// made by @octokit/webhooks-methods sign() and checked by its verify(). What differs is the
// sender: X-GitHub-Hook-Installation-Target-Type is "integration" (the App), and the App alone
// receives the installation events. Cases: an `installation` event, its redelivery (GitHub never
// retries on its own; a redelivery by hand keeps X-GitHub-Delivery), and another installation of
// the same App (another delivery, another body).
// https://docs.github.com/en/apps/creating-github-apps/registering-a-github-app/using-webhooks-with-github-apps
import { sign, verify } from "@octokit/webhooks-methods";
import { expectRejected, expectTrue, packageVersion, post } from "./common.mjs";

export const preset = "github-app";

const SECRET = "gh-app-webhook-secret-7c21e9d04a";
const WRONG_SECRET = "gh-app-webhook-secret-3b6f0a85e2";
const APP_ID = "1090123";
const HOOK_ID = "480223011";

function installationBody(installationId, account) {
  return JSON.stringify({
    action: "created",
    installation: {
      id: installationId,
      account: { login: account.login, id: account.id, type: "Organization" },
      app_id: Number(APP_ID),
      app_slug: "octo-inbox",
      target_type: "Organization",
      repository_selection: "selected",
      permissions: { contents: "read", metadata: "read" },
      events: ["push", "pull_request"],
      created_at: "2024-05-01T14:00:00.000Z",
    },
    repositories: [{ id: 1296269, name: "Hello-World", full_name: `${account.login}/Hello-World`, private: false }],
    sender: { login: "octocat", id: 1, type: "User" },
  });
}

async function signed(event, delivery, body) {
  const signature = await sign(SECRET, body);
  expectTrue(await verify(SECRET, body, signature), `github-app ${event}: verify()`);
  await expectRejected(() => verify(WRONG_SECRET, body, signature), `github-app ${event}: wrong secret`);
  return post(preset, {
    "Content-Type": "application/json",
    "User-Agent": "GitHub-Hookshot/a1b2c3d",
    "X-GitHub-Event": event,
    "X-GitHub-Delivery": delivery,
    "X-GitHub-Hook-ID": HOOK_ID,
    "X-GitHub-Hook-Installation-Target-Type": "integration",
    "X-GitHub-Hook-Installation-Target-ID": APP_ID,
    "X-Hub-Signature-256": signature,
  }, body);
}

export async function cases() {
  const by = `@octokit/webhooks-methods ${packageVersion("@octokit/webhooks-methods")} sign() with the App's webhook secret, verified by verify()`;
  const base = { preset, signed_by: by, secret: SECRET, wrong_secret: WRONG_SECRET, source: {} };
  const first = "d4c0a7e0-0a7b-11ef-9a3e-1f0c2b7d4e61";
  const second = "d4c0a7e0-0a7b-11ef-9a3e-1f0c2b7d4e62";
  const body = installationBody(48215233, { login: "octo-org", id: 6811672 });
  return [
    {
      ...base,
      kind: "event",
      name: "installation created",
      request: await signed("installation", first, body),
      expect: { key: first, event_type: "installation" },
    },
    {
      ...base,
      kind: "event",
      name: "installation created, redelivered (the same delivery GUID and body)",
      request: await signed("installation", first, body),
      expect: { key: first, event_type: "installation", duplicate: true },
    },
    {
      ...base,
      kind: "event",
      name: "installation created in another organization (another delivery)",
      request: await signed("installation", second, installationBody(48215234, { login: "octo-org-2", id: 6811673 })),
      expect: { key: second, event_type: "installation" },
    },
  ];
}
