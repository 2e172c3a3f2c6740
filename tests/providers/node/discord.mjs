// Discord (Interactions endpoint and Webhook Events): Ed25519 over timestamp + raw body,
// the signature hex in X-Signature-Ed25519, the timestamp (unix seconds) in
// X-Signature-Timestamp, the application's public key as hex. discord-interactions only
// verifies, so the request is signed with node:crypto and verifyKey must accept it.
// https://discord.com/developers/docs/interactions/overview
// https://discord.com/developers/docs/events/webhook-events
import { InteractionResponseType, InteractionType, verifyKey } from "discord-interactions";
import {
  ed25519FromSeed, ed25519SignHex, expectRejected, expectTrue, packageVersion, post, sha256Hex,
} from "./common.mjs";

export const preset = "discord";

const SIGNER = ed25519FromSeed("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");
const OTHER = ed25519FromSeed("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb");
const APPLICATION_ID = "1234560123453231555";

const user = { id: "53908232506183680", username: "mason", discriminator: "0", global_name: "Mason", avatar: null };

function interactionPing() {
  return JSON.stringify({
    application_id: APPLICATION_ID,
    id: "1247693461253771264",
    token: "aW50ZXJhY3Rpb246MTI0NzY5MzQ2MTI1Mzc3MTI2NDpwaW5n",
    type: InteractionType.PING,
    user,
    version: 1,
  });
}

function slashCommand(id) {
  return JSON.stringify({
    app_permissions: "442368",
    application_id: APPLICATION_ID,
    channel_id: "645027906669510667",
    data: { id: "771825006014889984", name: "blep", options: [{ name: "animal", type: 3, value: "dog" }], type: 1 },
    entitlements: [],
    guild_id: "613425648685547541",
    id,
    locale: "en-US",
    member: { user, roles: [], joined_at: "2017-03-13T19:19:14.040000+00:00", permissions: "2147483647" },
    token: "A_UNIQUE_TOKEN",
    type: InteractionType.APPLICATION_COMMAND,
    version: 1,
  });
}

function buttonClick(id) {
  return JSON.stringify({
    application_id: APPLICATION_ID,
    channel_id: "645027906669510667",
    data: { component_type: 2, custom_id: "click_one" },
    guild_id: "613425648685547541",
    id,
    message: { id: "1247693530841296000", channel_id: "645027906669510667", content: "Pick one" },
    member: { user, roles: [], joined_at: "2017-03-13T19:19:14.040000+00:00", permissions: "2147483647" },
    token: "A_UNIQUE_COMPONENT_TOKEN",
    type: InteractionType.MESSAGE_COMPONENT,
    version: 1,
  });
}

function autocomplete() {
  return JSON.stringify({
    application_id: APPLICATION_ID,
    data: { id: "771825006014889984", name: "blep", options: [{ name: "animal", type: 3, value: "d", focused: true }], type: 1 },
    id: "1247693530841296999",
    token: "A_UNIQUE_AUTOCOMPLETE_TOKEN",
    type: InteractionType.APPLICATION_COMMAND_AUTOCOMPLETE,
    version: 1,
  });
}

function webhookEventsPing() {
  return JSON.stringify({ version: 1, application_id: APPLICATION_ID, type: 0 });
}

function applicationAuthorized(now) {
  return JSON.stringify({
    version: 1,
    application_id: APPLICATION_ID,
    type: 1,
    event: {
      type: "APPLICATION_AUTHORIZED",
      timestamp: new Date(now * 1000).toISOString().replace("Z", ""),
      data: { integration_type: 1, scopes: ["applications.commands"], user },
    },
  });
}

async function signed(what, body, now, to = preset) {
  const timestamp = String(now);
  const signature = ed25519SignHex(SIGNER.privateKey, Buffer.from(timestamp + body, "utf8"));
  expectTrue(await verifyKey(body, signature, timestamp, SIGNER.publicHex), `discord ${what}: verifyKey`);
  await expectRejected(() => verifyKey(body, signature, timestamp, OTHER.publicHex), `discord ${what}: other key`);
  return post(to, {
    "Content-Type": "application/json",
    "X-Signature-Ed25519": signature,
    "X-Signature-Timestamp": timestamp,
  }, body);
}

export async function cases({ now, firstNow = now }) {
  const by = `node:crypto Ed25519 over timestamp+body (algorithm from the docs), verified by discord-interactions ${packageVersion("discord-interactions")} verifyKey`;
  const base = { preset, signed_by: by, secret: SIGNER.publicHex, wrong_secret: OTHER.publicHex, source: {} };
  const commandId = "1247693530841296896";
  const componentId = "1247693530841296897";
  const authorized = applicationAuthorized(firstNow);
  // Discord retries a webhook event "for up to 10 minutes" and does not say a retry is
  // re-signed: a retry 8 minutes on with its first timestamp is inside the preset's 900 s.
  const lateAt = now - 480;
  const late = applicationAuthorized(lateAt);
  return [
    {
      ...base,
      kind: "event",
      name: "interaction: APPLICATION_COMMAND (type 2), keyed on the body's id",
      request: await signed("interaction", slashCommand(commandId), now),
      expect: {
        key: commandId,
        event_type: String(InteractionType.APPLICATION_COMMAND),
        status: 200,
        json: { type: InteractionResponseType.DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE },
      },
    },
    {
      ...base,
      kind: "event",
      name: "interaction: MESSAGE_COMPONENT (type 3), answered with a deferred update",
      request: await signed("component", buttonClick(componentId), now),
      expect: {
        key: componentId,
        event_type: String(InteractionType.MESSAGE_COMPONENT),
        status: 200,
        json: { type: InteractionResponseType.DEFERRED_UPDATE_MESSAGE },
      },
    },
    {
      ...base,
      kind: "handshake",
      name: "interaction: APPLICATION_COMMAND_AUTOCOMPLETE (type 4), not supported: no choices, nothing kept",
      request: await signed("autocomplete", autocomplete(), now),
      expect: {
        status: 200,
        json: { type: InteractionResponseType.APPLICATION_COMMAND_AUTOCOMPLETE_RESULT, data: { choices: [] } },
        content_type: "application/json",
      },
    },
    {
      ...base,
      preset: "discord-events",
      kind: "event",
      name: "webhook event APPLICATION_AUTHORIZED (outer type 1); no id in the payload, keyed on the body's SHA-256",
      request: await signed("webhook event", authorized, now, "discord-events"),
      expect: {
        key: sha256Hex(Buffer.from(authorized, "utf8")),
        event_type: "APPLICATION_AUTHORIZED",
        status: 204,
        body: "",
      },
    },
    {
      ...base,
      preset: "discord-events",
      kind: "event",
      name: "webhook event retried with its first timestamp, 8 min on (tolerance 900 s)",
      request: await signed("late webhook event", late, lateAt, "discord-events"),
      expect: {
        key: sha256Hex(Buffer.from(late, "utf8")),
        event_type: "APPLICATION_AUTHORIZED",
        status: 204,
        body: "",
      },
    },
    {
      ...base,
      preset: "discord-events",
      kind: "stale",
      name: "webhook event signed 20 min ago (beyond 900 s)",
      request: await signed("stale webhook event", late, now - 1200, "discord-events"),
      expect: { status: 401 },
    },
    {
      ...base,
      kind: "handshake",
      name: "interactions PING (type 1): 200 with a PONG",
      request: await signed("interactions PING", interactionPing(), now),
      expect: { status: 200, json: { type: InteractionResponseType.PONG }, content_type: "application/json" },
    },
    {
      ...base,
      preset: "discord-events",
      kind: "handshake",
      name: "webhook events PING (type 0): 204 with an empty body",
      request: await signed("webhook events PING", webhookEventsPing(), now, "discord-events"),
      expect: { status: 204, body: "" },
    },
  ];
}
