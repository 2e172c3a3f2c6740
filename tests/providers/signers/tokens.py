"""Providers that authenticate with a shared token, not a MAC: the token in a header, in HTTP
Basic auth, or in the JSON body (tests/providers/README.md has each one's documentation). The
check reads the token back out of the emitted request and compares it with the secret."""

import base64
import hashlib
import json

from .common import (Context, SignerError, body_json, body_of, derived_text, derived_uuid, event_expect, header,
                     make_case, request)

JSON = {"Content-Type": "application/json"}
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _pair(preset: str, length: int, alphabet: str = ALNUM):
    return derived_text(f"{preset}/secret", length, alphabet), derived_text(f"{preset}/wrong", length, alphabet)


def _require_equal(preset: str, got: str, want: str) -> None:
    if got != want:
        raise SignerError(f"{preset}: the request does not carry the secret")


def _basic(user_pass: str) -> str:
    return "Basic " + base64.b64encode(user_pass.encode("utf-8")).decode("ascii")


def _basic_check(preset: str, req: dict, secret: str) -> None:
    value = header(req, "Authorization")
    scheme, _, encoded = value.partition(" ")
    _require_equal(preset, f"{scheme} {base64.b64decode(encoded).decode('utf-8')}", f"Basic {secret}")


def _case(preset, name, doc, secret, wrong, req, key, event_type, how, source=None):
    return make_case(preset, "event", name, f"algorithm from {doc} ({how}), read back from the request",
                     secret, wrong, req, event_expect(key, event_type), source)


def postmark(ctx: Context) -> list:
    doc = "https://postmarkapp.com/developer/webhooks/webhooks-overview"
    # The secret is "username:password", the credentials put in the webhook URL.
    secret, wrong = (f"postmark:{p}" for p in _pair("postmark", 24))
    body = {"RecordType": "Delivery", "ServerID": 23, "MessageStream": "outbound",
            "MessageID": "00000000-0000-0000-0000-000000000000", "Recipient": "john@example.com",
            "Tag": "welcome-email", "DeliveredAt": "2024-05-01T14:00:00Z", "Details": "Test delivery webhook details",
            "Metadata": {"a_key": "a_value"}}

    def sent(body: dict):
        req = request(ctx, "postmark", {**JSON, "Authorization": _basic(secret)}, body_json(body))
        _basic_check("postmark", req, secret)
        # No event id: "one event per unique click", and opens "every time an open occurs"
        # (PostFirstOpenOnly=false), so RecordType|MessageID|Recipient names several events.
        return req, hashlib.sha256(body_json(body)).hexdigest()

    def click(link: str, at: str) -> dict:
        # The Click webhook's documented fields (postmarkapp.com/developer/webhooks/click-webhook).
        return {"RecordType": "Click", "MessageStream": "outbound", "ClickLocation": "HTML",
                "Client": {"Name": "Chrome 35.0.1916.153", "Company": "Google", "Family": "Chrome"},
                "OS": {"Name": "OS X 10.7 Lion", "Company": "Apple Computer, Inc.", "Family": "OS X 10"},
                "Platform": "Desktop", "UserAgent": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_7_5)",
                "OriginalLink": link, "Geo": {"CountryISOCode": "RS", "Country": "Serbia"},
                "MessageID": "00000000-0000-0000-0000-000000000000", "Metadata": {"a_key": "a_value"},
                "ReceivedAt": at, "Tag": "welcome-email", "Recipient": "john@example.com"}

    # The Inbound webhook (postmarkapp.com/developer/webhooks/inbound-webhook): no RecordType, no
    # Recipient; under the body hash it is accepted with no event type.
    inbound = {"FromName": "Postmarkapp Support", "MessageStream": "inbound", "From": "support@postmarkapp.com",
               "FromFull": {"Email": "support@postmarkapp.com", "Name": "Postmarkapp Support", "MailboxHash": ""},
               "To": "yourhash+SampleHash@inbound.postmarkapp.com", "Cc": "", "Subject": "Test subject",
               "MessageID": "73e6d360-66eb-11e1-8e72-a8904824019b", "ReplyTo": "replyto@postmarkapp.com",
               "MailboxHash": "SampleHash", "Date": "Fri, 1 Aug 2014 16:45:32 -04:00",
               "TextBody": "This is a test text body.", "StrippedTextReply": "This is the reply text",
               "Tag": "TestTag", "Headers": [{"Name": "X-Spam-Status", "Value": "No"}], "Attachments": []}
    cases = []
    for name, event, event_type in (
            ("Inbound webhook (no RecordType)", inbound, None),
            ("Delivery webhook", body, "Delivery"),
            ("Click webhook, first link", click("https://example.com/pricing", "2024-05-01T14:05:00Z"), "Click"),
            ("Click webhook, another link of the same message", click("https://example.com/docs", "2024-05-01T14:06:00Z"),
             "Click")):
        req, key = sent(event)
        cases.append(_case("postmark", name, doc, secret, wrong, req, key, event_type, "HTTP Basic auth"))
    return cases



def postmark_inbound(ctx: Context) -> list:
    doc = "https://postmarkapp.com/developer/webhooks/inbound-webhook"
    # Postmark's inbound webhook posts one parsed mail per request, named by its MessageID; a
    # failed post is retried (10 times over about 10.5 h) and can be retried by hand with
    # PUT /messages/inbound/{messageid}/retry: the same message, the same MessageID
    # (postmarkapp.com/support/article/understanding-inbound-webhook-retries-in-postmark).
    secret, wrong = (f"postmark:{p}" for p in _pair("postmark-inbound", 24))

    def mail(message_id: str, subject: str) -> dict:
        return {"FromName": "Postmarkapp Support", "MessageStream": "inbound", "From": "support@postmarkapp.com",
                "FromFull": {"Email": "support@postmarkapp.com", "Name": "Postmarkapp Support", "MailboxHash": ""},
                "To": "yourhash+SampleHash@inbound.postmarkapp.com", "Cc": "", "Subject": subject,
                "MessageID": message_id, "ReplyTo": "replyto@postmarkapp.com", "MailboxHash": "SampleHash",
                "Date": "Fri, 1 Aug 2014 16:45:32 -04:00", "TextBody": "This is a test text body.",
                "StrippedTextReply": "This is the reply text", "Tag": "TestTag",
                "Headers": [{"Name": "X-Spam-Status", "Value": "No"}], "Attachments": []}

    cases = []
    for name, message_id, subject in (
            ("Inbound webhook", "73e6d360-66eb-11e1-8e72-a8904824019b", "Test subject"),
            ("Inbound webhook, another mail with the same subject", "8d1b7d2e-66eb-11e1-8e72-a8904824019b",
             "Test subject")):
        req = request(ctx, "postmark-inbound", {**JSON, "Authorization": _basic(secret)},
                      body_json(mail(message_id, subject)))
        _basic_check("postmark-inbound", req, secret)
        cases.append(_case("postmark-inbound", name, doc, secret, wrong, req, message_id, None, "HTTP Basic auth"))
    return cases

def gitlab(ctx: Context) -> list:
    doc = "https://docs.gitlab.com/user/project/integrations/webhooks/"
    secret, wrong = _pair("gitlab", 32)
    idempotency = derived_uuid("gitlab/idempotency")
    body = {"object_kind": "push", "event_name": "push", "before": "95790bf891e76fee5e1747ab589903a6a1f80f22",
            "after": "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", "ref": "refs/heads/master", "user_id": 4,
            "user_name": "John Smith", "project_id": 15, "project": {"id": 15, "name": "Diaspora",
                                                                    "path_with_namespace": "mike/diaspora"},
            "commits": [], "total_commits_count": 0}
    headers = {**JSON, "X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": secret,
               "X-Gitlab-Instance": "https://gitlab.example.com", "X-Gitlab-Webhook-UUID": derived_uuid("gitlab/hook"),
               "X-Gitlab-Event-UUID": derived_uuid("gitlab/event"), "Idempotency-Key": idempotency,
               "User-Agent": "GitLab/17.0.0"}
    req = request(ctx, "gitlab", headers, body_json(body))
    _require_equal("gitlab", header(req, "X-Gitlab-Token"), secret)
    # The next push to the same branch: another hook execution, another Idempotency-Key.
    other = derived_uuid("gitlab/idempotency/2")
    body2 = {**body, "before": body["after"], "after": "e83c5163316f89bfbde7d9ab23ca2e25604af290"}
    req2 = request(ctx, "gitlab", {**headers, "X-Gitlab-Event-UUID": derived_uuid("gitlab/event/2"),
                                   "Idempotency-Key": other}, body_json(body2))
    _require_equal("gitlab", header(req2, "X-Gitlab-Token"), secret)
    alike = _case("gitlab", "the next Push Hook, alike", doc, secret, wrong, req2, other, "Push Hook", "X-Gitlab-Token")
    alike["kind"] = "distinct"
    return [_case("gitlab", "Push Hook", doc, secret, wrong, req, idempotency, "Push Hook", "X-Gitlab-Token"), alike]


def auth0(ctx: Context) -> list:
    doc = "https://auth0.com/docs/customize/log-streams/custom-log-streams"
    # The secret is the log stream's "Authorization Token", sent as the Authorization header's value.
    secret, wrong = (f"Bearer {t}" for t in _pair("auth0", 40))
    log_id = "90020240501140000123456789012345678901234567890123"
    body = [{"log_id": log_id, "data": {"date": "2024-05-01T14:00:00.123Z", "type": "s", "description": "",
                                        "client_id": "AaiyAPdpYdesoKnqjj8HJqRn4T5titww", "client_name": "My App",
                                        "ip": "190.257.209.19", "user_id": "auth0|56c75c4e42b6359e98374bc2",
                                        "user_name": "alice@example.com", "log_id": log_id}}]
    req = request(ctx, "auth0", {**JSON, "Authorization": secret}, body_json(body))
    _require_equal("auth0", header(req, "Authorization"), secret)
    # The stream's default content format: JSON Lines, one log event a line ("The payload will be
    # delivered in JSON lines format", same page); each line is an event of its own.
    lines_ids = ["90020240501140001123456789012345678901234567890123", "90020240501140002123456789012345678901234567890123"]
    lines = b"".join(body_json({"log_id": i, "data": {**body[0]["data"], "type": t, "log_id": i}}) + b"\n"
                     for i, t in zip(lines_ids, ("s", "f")))
    lines_req = request(ctx, "auth0", {**JSON, "Authorization": secret}, lines)
    # A later delivery overlapping it: the second log again and a new one (design.md §14): the
    # new one gets its own key, the repeated one is a duplicate.
    new_id = "90020240501140003123456789012345678901234567890123"
    overlap = b"".join(body_json({"log_id": i, "data": {**body[0]["data"], "type": t, "log_id": i}}) + b"\n"
                       for i, t in ((lines_ids[1], "f"), (new_id, "s")))
    overlap_case = _case("auth0", "JSON Lines overlapping the last: its new log", doc, secret, wrong,
                         request(ctx, "auth0", {**JSON, "Authorization": secret}, overlap), new_id, "s",
                         "Authorization header")
    overlap_case["kind"] = "distinct"
    return [_case("auth0", "success login log", doc, secret, wrong, req, log_id, "s", "Authorization header"),
            _case("auth0", "two logs in JSON Lines", doc, secret, wrong, lines_req, lines_ids[1], "f",
                  "Authorization header"), overlap_case]


def okta(ctx: Context) -> list:
    doc = "https://developer.okta.com/docs/concepts/event-hooks/"
    secret, wrong = _pair("okta", 40)
    event_id = "b5a188b9-5ece-4636-b041-482ffda96311"
    body = {"eventType": "com.okta.event_hook", "eventTypeVersion": "1.0", "cloudEventsVersion": "0.1",
            "source": "https://example.okta.com/api/v1/eventHooks/whoql0HfiLGPWc8Jx0g3", "eventId": event_id,
            "data": {"events": [{"uuid": "79cd0f6b-8f8d-11eb-8c66-a3b4e5dda4d7", "published": "2024-05-01T14:00:00.000Z",
                                 "eventType": "user.session.start", "version": "0", "displayMessage": "User login to Okta",
                                 "severity": "INFO", "outcome": {"result": "SUCCESS"}}]},
            "eventTime": "2024-05-01T14:00:01.000Z", "contentType": "application/json"}
    req = request(ctx, "okta", {**JSON, "Authorization": secret}, body_json(body))
    _require_equal("okta", header(req, "Authorization"), secret)
    challenge = derived_text("okta/challenge", 40)
    verification = request(ctx, "okta", {"Authorization": secret, "x-okta-verification-challenge": challenge}, b"", "GET")
    # A later hook overlapping it: the same event again and a new one (design.md §14).
    new_event = {**body["data"]["events"][0], "uuid": "8a1e2c7d-8f8d-11eb-8c66-a3b4e5dda4d8",
                 "published": "2024-05-01T14:00:02.000Z"}
    body2 = {**body, "eventId": "c6b299ca-6fdf-4747-c152-593aaeb07422",
             "data": {"events": [body["data"]["events"][0], new_event]}}
    overlap = _case("okta", "an event hook overlapping it: its new event", doc, secret, wrong,
                    request(ctx, "okta", {**JSON, "Authorization": secret}, body_json(body2)),
                    new_event["uuid"], "user.session.start", "Authorization header")
    overlap["kind"] = "distinct"
    return [
        _case("okta", "user.session.start event hook", doc, secret, wrong, req, "79cd0f6b-8f8d-11eb-8c66-a3b4e5dda4d7", "user.session.start",
              "Authorization header"),
        overlap,
        make_case("okta", "handshake", "one-time verification", f"algorithm from {doc}", secret, wrong, verification,
                  {"status": 200, "json": {"verification": challenge}, "headers": {"X-Content-Type-Options": "nosniff"}}),
    ]


def telegram(ctx: Context) -> list:
    doc = "https://core.telegram.org/bots/api#setwebhook"
    secret, wrong = _pair("telegram", 64, ALNUM + "_-")
    body = {"update_id": 10000, "message": {"message_id": 1365, "date": 1714572000, "text": "/start",
                                            "chat": {"id": 1111111, "type": "private", "first_name": "Test"},
                                            "from": {"id": 1111111, "is_bot": False, "first_name": "Test"}}}
    req = request(ctx, "telegram", {**JSON, "X-Telegram-Bot-Api-Secret-Token": secret}, body_json(body))
    _require_equal("telegram", header(req, "X-Telegram-Bot-Api-Secret-Token"), secret)
    # The same text sent again: the next update.
    body2 = {"update_id": 10001, "message": {**body["message"], "message_id": 1366, "date": 1714572001}}
    req2 = request(ctx, "telegram", {**JSON, "X-Telegram-Bot-Api-Secret-Token": secret}, body_json(body2))
    alike = _case("telegram", "the same text again, alike", doc, secret, wrong, req2, "10001", None,
                  "X-Telegram-Bot-Api-Secret-Token")
    alike["kind"] = "distinct"
    return [_case("telegram", "message update", doc, secret, wrong, req, "10000", None,
                  "X-Telegram-Bot-Api-Secret-Token"), alike]


def chargebee(ctx: Context) -> list:
    doc = "https://www.chargebee.com/docs/billing/2.0/site-configuration/webhook_settings"
    secret, wrong = (f"chargebee:{p}" for p in _pair("chargebee", 24))
    body = {"id": "ev_16BHbhF4s42tO2lK", "occurred_at": 1714572000, "source": "admin_console", "object": "event",
            "api_version": "v2", "event_type": "subscription_created", "webhook_status": "scheduled",
            "content": {"subscription": {"id": "16BHbhF4s42tO2l1", "customer_id": "16BHbhF4s42tO2l1",
                                         "plan_id": "basic", "status": "active"}}}
    req = request(ctx, "chargebee", {**JSON, "Authorization": _basic(secret)}, body_json(body))
    _basic_check("chargebee", req, secret)
    # Another subscription created in the same second: its own event id.
    body2 = {**body, "id": "ev_16BHbhF4s42tO2lL",
             "content": {"subscription": {**body["content"]["subscription"], "id": "16BHbhF4s42tO2l2"}}}
    req2 = request(ctx, "chargebee", {**JSON, "Authorization": _basic(secret)}, body_json(body2))
    alike = _case("chargebee", "another subscription_created, alike", doc, secret, wrong, req2, "ev_16BHbhF4s42tO2lL",
                  "subscription_created", "HTTP Basic auth")
    alike["kind"] = "distinct"
    return [_case("chargebee", "subscription_created event", doc, secret, wrong, req, "ev_16BHbhF4s42tO2lK",
                  "subscription_created", "HTTP Basic auth"), alike]


def figma(ctx: Context) -> list:
    doc = "https://developers.figma.com/docs/rest-api/webhooks-security/"
    secret, wrong = _pair("figma", 32)

    def event(file_key: str, file_name: str):
        body = {"event_type": "FILE_UPDATE", "file_key": file_key, "file_name": file_name,
                "passcode": secret, "timestamp": "2024-05-01T14:00:00Z", "webhook_id": "22"}
        req = request(ctx, "figma", dict(JSON), body_json(body))
        _require_equal("figma", json.loads(body_of(req))["passcode"], secret)
        # Figma documents no event id, and `timestamp` is to the second: the key is the SHA-256
        # of the body the receiver keeps, the passcode member taken out.
        kept = {k: v for k, v in body.items() if k != "passcode"}
        return req, hashlib.sha256(body_json(kept)).hexdigest()

    first, first_key = event("zH7ZJkmxPRsnNVkd1BNxkD", "Design system")
    # A team webhook: another file updated in the same second, same webhook_id, type and timestamp.
    second, second_key = event("aB3CdEfGhIjKlMnOpQrStU", "Marketing site")
    cases = [
        _case("figma", "FILE_UPDATE event", doc, secret, wrong, first, first_key, "FILE_UPDATE",
              "passcode in the JSON body"),
        _case("figma", "FILE_UPDATE of another file in the same second", doc, secret, wrong, second, second_key,
              "FILE_UPDATE", "passcode in the JSON body"),
    ]
    # "If you receive a request with the wrong passcode, you should respond with a 400 Bad Request
    # HTTP response which will immediately stop the webhook" (developers.figma.com/docs/rest-api/webhooks-security).
    for case in cases:
        case["expect"]["refused_status"] = 400
    return cases


SIGNERS = {"postmark": postmark, "postmark-inbound": postmark_inbound, "gitlab": gitlab, "auth0": auth0, "okta": okta, "telegram": telegram,
           "chargebee": chargebee, "figma": figma}
