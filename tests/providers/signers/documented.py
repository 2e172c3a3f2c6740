"""Providers that publish no verifier library and sign the raw body with an HMAC (no timestamp):
one table row each, signed and checked through hmac_family. Sources: tests/providers/README.md."""

import copy
import hashlib
from dataclasses import dataclass

from . import hmac_family as hf
from .common import Context, body_json, derived_hex, derived_text, derived_uuid, event_expect, make_case, request

JSON = {"Content-Type": "application/json"}
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


@dataclass(frozen=True)
class Event:
    name: str
    body: object  # JSON value, serialised compactly
    headers: dict  # the provider's other headers (not the signature)
    key: str
    event_type: str | None


@dataclass(frozen=True)
class Row:
    scheme: hf.Scheme
    secret: str
    wrong_secret: str
    doc: str
    event: object  # (Context) -> Event


def _secret_pair(preset: str, length: int, alphabet: str = "abcdefghijklmnopqrstuvwxyz0123456789"):
    return derived_text(f"{preset}/secret", length, alphabet), derived_text(f"{preset}/wrong", length, alphabet)


def shopify_event(ctx: Context) -> Event:
    # The orders/create sample order of Shopify's webhook reference (id 820982911946154508).
    body = {"id": 820982911946154508, "admin_graphql_api_id": "gid://shopify/Order/820982911946154508",
            "email": "jon@example.com", "created_at": "2024-05-01T10:00:00-04:00", "currency": "USD",
            "financial_status": "paid", "total_price": "403.00", "name": "#9999",
            "line_items": [{"id": 866550311766439020, "title": "IPod Nano - 8GB", "quantity": 1, "price": "199.00"}]}
    event_id = derived_uuid("shopify/event")
    return Event("orders/create", body, {
        **JSON, "X-Shopify-Topic": "orders/create", "X-Shopify-Shop-Domain": "example.myshopify.com",
        "X-Shopify-API-Version": "2025-07", "X-Shopify-Webhook-Id": derived_uuid("shopify/webhook"),
        "X-Shopify-Event-Id": event_id, "X-Shopify-Triggered-At": "2024-05-01T14:00:00.000000Z",
    }, event_id, "orders/create")


def intercom_event(ctx: Context) -> Event:
    # The "Signed Notifications" example body of Intercom's developer reference.
    # delivery_attempts counts the attempts (the preset's attempt_fields leave it out of the hash).
    body = {"type": "notification_event", "id": "notif_78c122d0-23ba-11e4-9464-79b01267cc2e",
            "topic": "user.created", "app_id": "a86dr8yl", "delivery_attempts": 1 + ctx.attempt,
            "first_sent_at": 1714572000,
            "data": {"type": "notification_event_data", "item": {
                "type": "user", "id": "530370b477ad7120001d", "user_id": "25", "name": "Hoban Washburne",
                "unsubscribed_from_emails": False, "custom_attributes": {}}}}
    return Event("user.created", body, {**JSON, "User-Agent": "intercom-parrot-service-client/1.0"},
                 "notif_78c122d0-23ba-11e4-9464-79b01267cc2e", "user.created")


def lemon_squeezy_event(ctx: Context) -> Event:
    # The example payload of Lemon Squeezy's webhooks page (an order_created order object).
    body = {"meta": {"event_name": "order_created"},
            "data": {"type": "orders", "id": "1", "attributes": {
                "store_id": 1, "identifier": "636f855c-1fb9-4c07-b75c-3a10afef010a", "order_number": 1,
                "user_name": "Darlene Daugherty", "user_email": "gernser@yahoo.com", "currency": "USD",
                "subtotal": 999, "tax": 200, "total": 1199, "status": "paid"}}}
    # No event id is documented: the key is the body's SHA-256 (retries resend the same body).
    return Event("order_created", body, {**JSON, "X-Event-Name": "order_created"},
                 hashlib.sha256(body_json(body)).hexdigest(), "order_created")


def bitbucket_event(ctx: Context) -> Event:
    body = {"push": {"changes": [{"new": {"type": "branch", "name": "main",
                                          "target": {"hash": "709d658dc5b6d6afcd46049c2f332ee3f515a67d"}},
                                  "old": {"type": "branch", "name": "main",
                                          "target": {"hash": "1e65c05c1d5171631d92438a13901ca7dae9618c"}}}]},
            "repository": {"type": "repository", "full_name": "team/repo", "uuid": "{" + derived_uuid("bb/repo") + "}"},
            "actor": {"type": "user", "display_name": "Ada"}}
    request_uuid = derived_uuid("bitbucket/request")
    return Event("repo:push", body, {
        **JSON, "X-Event-Key": "repo:push", "X-Hook-UUID": derived_uuid("bitbucket/hook"),
        "X-Request-UUID": request_uuid, "X-Attempt-Number": str(1 + ctx.attempt), "User-Agent": "Bitbucket-Webhooks/2.0",
    }, request_uuid, "repo:push")


def sentry_event(ctx: Context) -> Event:
    body = {"action": "created", "installation": {"uuid": derived_uuid("sentry/installation")},
            "data": {"issue": {"id": "1170820242", "shortId": "EXAMPLE-1", "title": "ZeroDivisionError",
                               "status": "unresolved", "project": {"slug": "example"}}},
            "actor": {"type": "application", "id": "sentry", "name": "Sentry"}}
    request_id = derived_uuid("sentry/request")
    return Event("issue created", body, {
        **JSON, "Request-ID": request_id, "Sentry-Hook-Resource": "issue",
        "Sentry-Hook-Timestamp": str(ctx.now),
    }, request_id, "issue")


def pagerduty_event(ctx: Context) -> Event:
    body = {"event": {"id": "01DEN4HPBQAIHJDSXAMX6OLC5B", "event_type": "incident.triggered",
                      "resource_type": "incident", "occurred_at": "2024-05-01T14:00:00.000Z",
                      "agent": None, "client": None,
                      "data": {"id": "PGR0VU2", "type": "incident", "title": "A little bump in the road",
                               "status": "triggered", "urgency": "high",
                               "service": {"id": "PF9KMXH", "type": "service_reference"}}}}
    return Event("incident.triggered", body, {
        **JSON, "X-Webhook-Id": derived_uuid("pagerduty/delivery"),
        "X-Webhook-Subscription": "PY1OQQW", "User-Agent": "PagerDuty-Webhook/V3.0",
    }, "01DEN4HPBQAIHJDSXAMX6OLC5B", "incident.triggered")


def docusign_event(ctx: Context) -> Event:
    envelope = derived_uuid("docusign/envelope")
    body = {"event": "envelope-completed", "apiVersion": "v2.1",
            "uri": f"/restapi/v2.1/accounts/{derived_uuid('docusign/account')}/envelopes/{envelope}",
            "retryCount": ctx.attempt, "configurationId": 10418264, "generatedDateTime": "2024-05-01T14:00:00.0000000Z",
            "data": {"accountId": derived_uuid("docusign/account"), "userId": derived_uuid("docusign/user"),
                     "envelopeId": envelope}}
    return Event("envelope-completed", body, JSON, f"envelope-completed|{envelope}|2024-05-01T14:00:00.0000000Z",
                 "envelope-completed")


def typeform_event(ctx: Context) -> Event:
    body = {"event_id": "01HX4ZJ4RM6ZMDD1PHH96BF1ZC", "event_type": "form_response",
            "form_response": {"form_id": "lT4Z3j", "token": "a3a12ec67a1365927098a606107fac15",
                              "submitted_at": "2024-05-01T14:00:00Z", "landed_at": "2024-05-01T13:58:00Z",
                              "answers": [{"type": "text", "text": "Lorem ipsum",
                                           "field": {"id": "DlXFaesGBpoF", "type": "short_text"}}]}}
    return Event("form_response", body, JSON, "01HX4ZJ4RM6ZMDD1PHH96BF1ZC", "form_response")


# X-WC-Webhook-Delivery-ID is wp_hash(webhook id . strtotime('now')) (class-wc-webhook.php,
# get_new_delivery_id): two deliveries of one webhook in one second share it. No stable id
# exists, so the preset keys on the body's SHA-256; WooCommerce builds the body at send time.
WOOCOMMERCE_DELIVERY = derived_hex("woocommerce/delivery", 32)


def _woocommerce(topic: str, status: str) -> Event:
    body = {"id": 727, "parent_id": 0, "status": status, "currency": "USD", "total": "29.35",
            "date_created": "2024-05-01T14:00:00", "billing": {"first_name": "John", "last_name": "Doe"},
            "line_items": [{"id": 315, "name": "Woo Single #1", "product_id": 93, "quantity": 2}]}
    return Event(topic, body, {
        **JSON, "X-WC-Webhook-Source": "https://shop.example.com/", "X-WC-Webhook-Topic": topic,
        "X-WC-Webhook-Resource": "order", "X-WC-Webhook-Event": topic.split(".")[1], "X-WC-Webhook-ID": "14",
        "X-WC-Webhook-Delivery-ID": WOOCOMMERCE_DELIVERY,
    }, hashlib.sha256(body_json(body)).hexdigest(), topic)


def woocommerce_event(ctx: Context) -> Event:
    return _woocommerce("order.created", "pending")


def woocommerce_second(ctx: Context) -> Event:
    """The order paid in the same second: a second delivery of webhook 14 with the same delivery id."""
    return _woocommerce("order.updated", "processing")


def vercel_event(ctx: Context) -> Event:
    body = {"id": "uev_Gs2IL0eiHqmXb4dO7Qat3yZ6", "type": "deployment.created", "createdAt": 1714572000000,
            "region": "iad1", "payload": {"deployment": {"id": "dpl_2kcKjaDgrHNMbZ6PqRBNeVu7pgna",
                                                          "url": "example-git-main.vercel.app", "name": "example"},
                                           "project": {"id": "prj_12HKQaOmR5t5Uy6vdcQsNIiZgHGB"}}}
    return Event("deployment.created", body, JSON, "uev_Gs2IL0eiHqmXb4dO7Qat3yZ6", "deployment.created")


def segment_event(ctx: Context) -> Event:
    body = {"type": "track", "event": "Order Completed", "messageId": "ajs-next-69ea2d7f0d3e8c9f5c0a1b2c3d4e5f60",
            "userId": "019mr8mf4r", "properties": {"order_id": "50314b8e9bcf000000000000", "total": 27.5},
            "timestamp": "2024-05-01T14:00:00.000Z", "sentAt": "2024-05-01T14:00:00.100Z"}
    return Event("track", body, JSON, "ajs-next-69ea2d7f0d3e8c9f5c0a1b2c3d4e5f60", "track")


def jira_event(ctx: Context) -> Event:
    body = {"timestamp": 1714572000000, "webhookEvent": "jira:issue_created", "issue_event_type_name": "issue_created",
            "user": {"accountId": "5b10a2844c20165700ede21g", "displayName": "Ada"},
            "issue": {"id": "10002", "key": "ED-1", "fields": {"summary": "I feel the need for speed"}}}
    identifier = "1714572000000-" + derived_hex("jira/identifier", 12)
    return Event("jira:issue_created", body, {
        **JSON, "X-Atlassian-Webhook-Identifier": identifier, "X-Atlassian-Webhook-Retry": str(ctx.attempt),
    }, identifier, "jira:issue_created")


ROWS = {
    "shopify": Row(hf.Scheme("X-Shopify-Hmac-Sha256", encoding="base64"), *_secret_pair("shopify", 32, "0123456789abcdef"),
                   "https://shopify.dev/docs/apps/build/webhooks/verify-deliveries", shopify_event),
    "intercom": Row(hf.Scheme("X-Hub-Signature", digest="sha1", prefix="sha1="), *_secret_pair("intercom", 36),
                    "https://developers.intercom.com/docs/references/webhooks/webhook-models", intercom_event),
    "lemon-squeezy": Row(hf.Scheme("X-Signature"), *_secret_pair("lemon-squeezy", 24),
                         "https://docs.lemonsqueezy.com/help/webhooks/signing-requests", lemon_squeezy_event),
    "bitbucket": Row(hf.Scheme("X-Hub-Signature", prefix="sha256="), *_secret_pair("bitbucket", 32),
                     "https://support.atlassian.com/bitbucket-cloud/docs/manage-webhooks/", bitbucket_event),
    "sentry": Row(hf.Scheme("Sentry-Hook-Signature"), *_secret_pair("sentry", 64, "0123456789abcdef"),
                  "https://docs.sentry.io/organization/integrations/integration-platform/webhooks/", sentry_event),
    "pagerduty": Row(hf.Scheme("X-PagerDuty-Signature", prefix="v1="), *_secret_pair("pagerduty", 64, B64[:62]),
                     "https://developer.pagerduty.com/docs/webhooks/webhook-signatures/", pagerduty_event),
    "docusign": Row(hf.Scheme("X-DocuSign-Signature-1", encoding="base64"), *_secret_pair("docusign", 44, B64),
                    "https://developers.docusign.com/platform/webhooks/connect/hmac/", docusign_event),
    "typeform": Row(hf.Scheme("Typeform-Signature", encoding="base64", prefix="sha256="), *_secret_pair("typeform", 32),
                    "https://www.typeform.com/developers/webhooks/secure-your-webhooks/", typeform_event),
    "woocommerce": Row(hf.Scheme("X-WC-Webhook-Signature", encoding="base64"), *_secret_pair("woocommerce", 40),
                       "https://woocommerce.github.io/woocommerce-rest-api-docs/#webhooks", woocommerce_event),
    "vercel": Row(hf.Scheme("x-vercel-signature", digest="sha1"), *_secret_pair("vercel", 24),
                  "https://vercel.com/docs/webhooks/webhooks-api#securing-webhooks", vercel_event),
    "segment": Row(hf.Scheme("X-Signature", digest="sha1"), *_secret_pair("segment", 32),
                   "https://segment.com/docs/connections/destinations/catalog/actions-webhook/", segment_event),
    "jira": Row(hf.Scheme("X-Hub-Signature", prefix="sha256="), *_secret_pair("jira", 32),
                "https://developer.atlassian.com/cloud/jira/platform/webhooks/", jira_event),
}


def _alike(event: Event, label: str, key: str, headers: dict | None = None, **changes) -> Event:
    """A second, distinct event that looks like `event`: the same type and shape, its own id
    (the members in `changes`, as JSON pointers with `/` written `__`, and `headers`)."""
    body = copy.deepcopy(event.body)
    for path, value in changes.items():
        parts = path.split("__")
        target = body
        for part in parts[:-1]:
            target = target[part]
        target[parts[-1]] = value
    return Event(label, body, {**event.headers, **(headers or {})}, key, event.event_type)


def lookalike(ctx: Context, preset: str, event: Event):
    """Each row's look-alike: another event of the same type a moment later, which must get its
    own key (None where the row has its own second event)."""
    if preset == "shopify":
        other = derived_uuid("shopify/event/2")
        return _alike(event, "another order", other, {"X-Shopify-Event-Id": other},
                      id=820982911946154509, name="#10000")
    if preset == "intercom":
        return _alike(event, "another user", "notif_78c122d0-23ba-11e4-9464-79b01267cc2f",
                      id="notif_78c122d0-23ba-11e4-9464-79b01267cc2f")
    if preset == "lemon-squeezy":
        alike = _alike(event, "another order", "", data__id="2")
        return Event(alike.name, alike.body, alike.headers, hashlib.sha256(body_json(alike.body)).hexdigest(),
                     alike.event_type)
    if preset == "bitbucket":
        other = derived_uuid("bitbucket/request/2")
        alike = _alike(event, "another push", other, {"X-Request-UUID": other})
        alike.body["push"]["changes"][0]["new"]["target"]["hash"] = "8a1d6b2e5f4c3b2a1908f7e6d5c4b3a291807f6e"
        return alike
    if preset == "sentry":
        other = derived_uuid("sentry/request/2")
        alike = _alike(event, "another issue", other, {"Request-ID": other})
        alike.body["data"]["issue"]["id"] = "1170820243"
        return alike
    if preset == "pagerduty":
        alike = _alike(event, "another incident", "01DEN4HPBQAIHJDSXAMX6OLC5C")
        alike.body["event"]["id"] = "01DEN4HPBQAIHJDSXAMX6OLC5C"
        alike.body["event"]["data"]["id"] = "PGR0VU3"
        return alike
    if preset == "docusign":
        # The same event of the same envelope for another recipient, generated 1 ms later.
        at = "2024-05-01T14:00:00.0010000Z"
        envelope = event.body["data"]["envelopeId"]
        return _alike(event, "the same event of the envelope, 1 ms later", f"envelope-completed|{envelope}|{at}",
                      generatedDateTime=at)
    if preset == "typeform":
        alike = _alike(event, "another response", "01HX4ZJ4RM6ZMDD1PHH96BF1ZD", event_id="01HX4ZJ4RM6ZMDD1PHH96BF1ZD")
        alike.body["form_response"]["token"] = "b3a12ec67a1365927098a606107fac16"
        return alike
    if preset == "vercel":
        alike = _alike(event, "another deployment", "uev_Gs2IL0eiHqmXb4dO7Qat3yZ7", id="uev_Gs2IL0eiHqmXb4dO7Qat3yZ7")
        alike.body["payload"]["deployment"]["id"] = "dpl_2kcKjaDgrHNMbZ6PqRBNeVu7pgnb"
        return alike
    if preset == "segment":
        return _alike(event, "another track", "ajs-next-69ea2d7f0d3e8c9f5c0a1b2c3d4e5f61",
                      messageId="ajs-next-69ea2d7f0d3e8c9f5c0a1b2c3d4e5f61")
    if preset == "jira":
        other = "1714572000000-" + derived_hex("jira/identifier/2", 12)
        alike = _alike(event, "another issue", other, {"X-Atlassian-Webhook-Identifier": other})
        alike.body["issue"] = {"id": "10003", "key": "ED-2", "fields": {"summary": "I feel the need for speed"}}
        return alike
    return None


def sign(ctx: Context, preset: str) -> list:
    row = ROWS[preset]
    event = row.event(ctx)
    raw = body_json(event.body)
    headers = {**event.headers, row.scheme.header: row.scheme.sign(row.secret, raw)}
    req = request(ctx, preset, headers, raw)
    hf.check(row.scheme, row.secret, req)
    signed_by = f"algorithm from {row.doc} (HMAC-{row.scheme.digest.upper()} of the raw body, " \
                f"{row.scheme.encoding}{', prefix ' + row.scheme.prefix if row.scheme.prefix else ''}), " \
                "recomputed by the cryptography package"
    cases = [make_case(preset, "event", f"{event.name} event", signed_by, row.secret, row.wrong_secret, req,
                       event_expect(event.key, event.event_type))]
    alike = lookalike(ctx, preset, event)
    if alike is not None:
        raw = body_json(alike.body)
        req = request(ctx, preset, {**alike.headers, row.scheme.header: row.scheme.sign(row.secret, raw)}, raw)
        hf.check(row.scheme, row.secret, req)
        cases.append(make_case(preset, "distinct", f"{alike.name}, alike", signed_by, row.secret, row.wrong_secret,
                               req, event_expect(alike.key, alike.event_type)))
    if preset == "woocommerce":
        second = woocommerce_second(ctx)
        raw = body_json(second.body)
        req = request(ctx, preset, {**second.headers, row.scheme.header: row.scheme.sign(row.secret, raw)}, raw)
        hf.check(row.scheme, row.secret, req)
        cases.append(make_case(preset, "event", f"{second.name} event in the same second (same delivery id)",
                               signed_by, row.secret, row.wrong_secret, req,
                               event_expect(second.key, second.event_type)))
        # WooCommerce's creation ping: the form webhook_id=<id>, unsigned, and WooCommerce shows an
        # error for any status but 200 (class-wc-webhook.php, deliver_ping).
        ping = request(ctx, preset, {"Content-Type": "application/x-www-form-urlencoded"}, b"webhook_id=14")
        cases.append(make_case(preset, "handshake", "creation ping (webhook_id=14, unsigned)",
                               "the form WooCommerce's deliver_ping posts (class-wc-webhook.php)", row.secret,
                               row.wrong_secret, ping, {"status": 200, "body": ""}))
    return cases
