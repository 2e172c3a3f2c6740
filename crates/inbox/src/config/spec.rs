//! What one source declares, every field checked: [`SourceSpec`] and the choices it is made
//! of (where the key and the FIFO group come from, the delivery semantics, the answer to a
//! changed payload).

use crate::signature::Scheme;

use super::secrets::SecretRef;

/// Where a source's key comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeySpec {
    /// A request header, such as `X-GitHub-Delivery` or `webhook-id`.
    Header(http::HeaderName),
    /// One or more JSON pointers into the body; several make a composite business key.
    Json(Vec<String>),
    /// SHA-256 of the raw body. Only where declared: never a fallback.
    PayloadSha256,
    /// One or more fields of a form-encoded body (Twilio's `MessageSid`).
    Form(Vec<String>),
}

impl KeySpec {
    pub fn needs_json(&self) -> bool {
        matches!(self, KeySpec::Json(_))
    }
    pub fn needs_form(&self) -> bool {
        matches!(self, KeySpec::Form(_))
    }
    pub fn describe(&self) -> String {
        match self {
            KeySpec::Header(name) => format!("header {name}"),
            KeySpec::Json(pointers) => format!("body {}", pointers.join(" + ")),
            KeySpec::PayloadSha256 => "SHA-256 of the raw body".to_owned(),
            KeySpec::Form(names) => format!("form {}", names.join(" + ")),
        }
    }
}

/// Where a source's event type is (docs/providers.md): read after the signature, carried in
/// the envelope and the ledger item, logged. Absent or unusable is no error: the event has no
/// type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventTypeSpec {
    Header(http::HeaderName),
    /// A JSON pointer into the body (a string, or a number as written).
    Json(String),
    /// A field of a form-encoded body.
    Form(String),
}

impl EventTypeSpec {
    pub fn describe(&self) -> String {
        match self {
            EventTypeSpec::Header(name) => format!("header {name}"),
            EventTypeSpec::Json(pointer) => format!("body {pointer}"),
            EventTypeSpec::Form(name) => format!("form {name}"),
        }
    }
}

/// What an accepted event is answered with (`answer`, a preset setting: docs/providers.md).
/// The claim stores it and every duplicate gets it again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AcceptedAnswer {
    /// 200 and `{"key": <key>, "status": "accepted"}`.
    #[default]
    Key,
    /// 204 and no body (Discord's Webhook Events).
    NoContent,
    /// 200 and no body: Xero ("no body in the response", its intent-to-receive check
    /// included) and Okta's event hooks (responses "should all be empty").
    Empty,
    /// 200 and a deferred interaction response: `{"type": 6}` for a message component
    /// (interaction type 3), `{"type": 5}` for any other (Discord's Interactions).
    DiscordInteraction,
    /// 200 and the text `[accepted]` (Adyen's standard notifications: an endpoint that
    /// answers anything else is retried and, after failures, queues every later one).
    AdyenAccepted,
    /// 200, `text/xml`, the empty TwiML document `<Response/>`: Twilio "requires TwiML in XML
    /// format for incoming call and incoming SMS webhook responses" (error 12300 on JSON), and
    /// an empty `<Response/>` asks it to do nothing; its status callbacks ignore the body.
    Twiml,
}

impl AcceptedAnswer {
    pub const ALL: [AcceptedAnswer; 6] = [
        AcceptedAnswer::Key,
        AcceptedAnswer::NoContent,
        AcceptedAnswer::Empty,
        AcceptedAnswer::DiscordInteraction,
        AcceptedAnswer::AdyenAccepted,
        AcceptedAnswer::Twiml,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AcceptedAnswer::Key => "key",
            AcceptedAnswer::NoContent => "no_content",
            AcceptedAnswer::Empty => "empty",
            AcceptedAnswer::DiscordInteraction => "discord_interaction",
            AcceptedAnswer::AdyenAccepted => "adyen_accepted",
            AcceptedAnswer::Twiml => "twiml",
        }
    }
}

/// What a request whose signature or token does not verify is answered with
/// (`on_invalid_signature`, a preset setting: docs/providers.md). The code is
/// `invalid_signature` either way; nothing is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SignatureRefusal {
    /// 401.
    #[default]
    Unauthorized,
    /// 400: Figma stops a webhook answered 400 ("If you receive a request with the wrong
    /// passcode, you should respond with a 400 Bad Request HTTP response which will
    /// immediately stop the webhook", developers.figma.com/docs/rest-api/webhooks-security).
    BadRequest,
}

impl SignatureRefusal {
    pub const ALL: [SignatureRefusal; 2] =
        [SignatureRefusal::Unauthorized, SignatureRefusal::BadRequest];

    pub fn name(self) -> &'static str {
        match self {
            SignatureRefusal::Unauthorized => "unauthorized",
            SignatureRefusal::BadRequest => "bad_request",
        }
    }
}

/// A check of the verified content before the key (`body_check`, a preset setting:
/// docs/providers.md): where the signature alone would let a request be re-read as another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyCheck {
    /// The body is a JSON object (X: the CRC answer is the signature of a body holding the
    /// token alone).
    JsonObject,
    /// A form whose names are Twilio's (`[A-Z][A-Za-z0-9]*`, each once), whose `MessageSid`
    /// (`SmsSid`, `SmsMessageSid`) is two capitals and 32 hex digits and whose `SmsStatus`
    /// (`MessageStatus`, Voice's `CallStatus`) is lower-case letters, `_` and `-`: `{url}{form_sorted}` has no
    /// separators, and these shapes leave one way to split it.
    TwilioForm,
    /// Every Adyen notification item's `pspReference`, `originalReference` and `eventCode`
    /// free of `:` and its `success` `true` or `false`: the fields Adyen joins with `:`
    /// unescaped that the key is read from, so a signed string re-split around a `:` in a
    /// `merchantReference` keeps its key (docs/providers.md, "Batches").
    AdyenItems,
}

impl BodyCheck {
    pub const ALL: [BodyCheck; 3] = [
        BodyCheck::JsonObject,
        BodyCheck::TwilioForm,
        BodyCheck::AdyenItems,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BodyCheck::JsonObject => "json_object",
            BodyCheck::TwilioForm => "twilio_form",
            BodyCheck::AdyenItems => "adyen_items",
        }
    }
}

/// A provider's URL check, answered by the receiver without claiming a key or sending
/// anything (docs/providers.md, "Handshakes").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handshake {
    /// POST `{"type": "url_verification", "challenge": ...}`, signed: the challenge, as text.
    Slack,
    /// POST `event: endpoint.url_validation`, signed: `plainToken` and its HMAC.
    Zoom,
    /// GET `hub.mode=subscribe`, `hub.verify_token`, `hub.challenge`: the challenge.
    Meta,
    /// GET `?challenge=`: the challenge, as text, `nosniff`.
    Dropbox,
    /// POST with `X-Hook-Secret`: the header echoed, the secret kept for the signatures after.
    Asana,
    /// `Twitch-Eventsub-Message-Type: webhook_callback_verification`, signed: the challenge.
    Twitch,
    /// Intent to receive: a signed request with no events gets 200 and an empty body.
    Xero,
    /// GET `?crc_token=`: `{"response_token": "sha256=" + base64 HMAC}`.
    X,
    /// Interactions `PING` (`type` 1): `{"type": 1}`; Webhook Events `PING` (`type` 0): 204.
    Discord,
    /// GET with `x-okta-verification-challenge`, authorised: `{"verification": ...}`.
    Okta,
    /// WooCommerce's creation ping: an unsigned form `webhook_id=<digits>`, no signature
    /// header: 200 and no body, nothing claimed or sent.
    WooCommerce,
    /// Microsoft Graph's notification URL validation: a `POST ?validationToken=…`, unsigned,
    /// answered 200 with the token (decoded) as `text/plain` within Graph's 10 seconds.
    Graph,
}

impl Handshake {
    pub const ALL: [Handshake; 12] = [
        Handshake::Slack,
        Handshake::Zoom,
        Handshake::Meta,
        Handshake::Dropbox,
        Handshake::Asana,
        Handshake::Twitch,
        Handshake::Xero,
        Handshake::X,
        Handshake::Discord,
        Handshake::Okta,
        Handshake::WooCommerce,
        Handshake::Graph,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Handshake::Slack => "slack",
            Handshake::Zoom => "zoom",
            Handshake::Meta => "meta",
            Handshake::Dropbox => "dropbox",
            Handshake::Asana => "asana",
            Handshake::Twitch => "twitch",
            Handshake::Xero => "xero",
            Handshake::X => "x",
            Handshake::Discord => "discord",
            Handshake::Okta => "okta",
            Handshake::WooCommerce => "woocommerce",
            Handshake::Graph => "graph",
        }
    }

    pub fn from_name(name: &str) -> Option<Handshake> {
        Handshake::ALL.into_iter().find(|h| h.name() == name)
    }

    /// Whether the provider checks the URL with a `GET` (the route then admits `GET`).
    pub fn uses_get(self) -> bool {
        matches!(
            self,
            Handshake::Meta | Handshake::Dropbox | Handshake::X | Handshake::Okta
        )
    }
}

/// What sets the FIFO `MessageGroupId` (the rule: [`crate::fifo`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupSpec {
    /// The key itself: per-event order, full parallelism.
    Key,
    /// Values from the body (per-customer order, say).
    Json(Vec<String>),
}

/// How a batch's events sit in the body (`batch.format`, docs/design.md §14).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchFormat {
    /// The elements of the JSON array at the pointer `at` (`""`: the body itself).
    JsonArray { at: String },
    /// JSON values separated by whitespace (JSON Lines, or one object), or one JSON array of
    /// them.
    JsonLines,
}

/// `batch`: the body carries several events, each keyed, claimed and queued on its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchSpec {
    pub format: BatchFormat,
    /// The most events one request may carry (more: 413 `too_many_events`).
    pub max_events: usize,
    /// `signed: "each_event"`: the signature is in each event and verified there (Adyen's
    /// `hmacSignature`, Microsoft Graph's `clientState`), not over the request.
    pub signed_each_event: bool,
}

impl BatchSpec {
    /// The JSON pointer of the array whose every element carries its own signature, where the
    /// source declares `signed: "each_event"`.
    pub fn each_event_signed_at(&self) -> Option<&str> {
        match &self.format {
            BatchFormat::JsonArray { at } if self.signed_each_event => Some(at),
            _ => None,
        }
    }

    pub fn describe(&self) -> String {
        let format = match &self.format {
            BatchFormat::JsonArray { at } if at.is_empty() => "a JSON array".to_owned(),
            BatchFormat::JsonArray { at } => format!("the JSON array at {at}"),
            BatchFormat::JsonLines => "JSON Lines (or one JSON array)".to_owned(),
        };
        let signed = if self.signed_each_event {
            ", each event signed"
        } else {
            ""
        };
        format!("{format}, at most {} events{signed}", self.max_events)
    }
}

/// The delivery semantics a source declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    EffectivelyOnce,
    /// Skips the ledger. Must be written out; the audit lists it.
    AtMostOnce,
}

/// What to do with a duplicate whose body hash differs from the first delivery's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnPayloadMismatch {
    /// Replay as a duplicate, count it (senders do vary payloads between retries).
    Accept,
    /// Answer 422 `payload_mismatch`.
    Reject,
}

/// One source, every field checked, secrets not yet read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceSpec {
    pub name: String,
    pub scheme: Scheme,
    pub secrets: Vec<SecretRef>,
    pub tolerance_seconds: u64,
    pub key: KeySpec,
    pub group: GroupSpec,
    pub delivery: Delivery,
    pub retention_hours: u64,
    pub on_payload_mismatch: OnPayloadMismatch,
    /// `replay_guard_seconds`: for a body-only scheme, how long a body brought by one event
    /// key is refused under any other (a captured request resent under fresh delivery ids).
    pub replay_guard_seconds: Option<u64>,
    /// `archive`: whether the receiver archives this source's envelopes for replay;
    /// `None` follows `ARCHIVE_BODIES` (docs/design.md §12).
    pub archive: Option<bool>,
    /// `preset`: the provider preset the source was declared with.
    pub preset: Option<String>,
    /// The fields the source sets over its preset's (dotted paths, for the audit).
    pub overrides: Vec<String>,
    /// `event_type`: where the event type is.
    pub event_type: Option<EventTypeSpec>,
    /// `event_type.metric_types`: the types counted with their own dimension (the rest as
    /// `other`); empty: no per-type count.
    pub event_type_metrics: Vec<String>,
    /// `handshake`: the provider's URL check the receiver answers.
    pub handshake: Option<Handshake>,
    /// `answer`: what an accepted event is answered with.
    pub answer: AcceptedAnswer,
    /// `body_check`: the verified content's shape, checked before the key.
    pub body_check: Option<BodyCheck>,
    /// `on_invalid_signature`: the status a request that does not verify is answered with.
    pub on_invalid_signature: SignatureRefusal,
    /// `public_url`: the URL the sender calls, which Twilio, Square and HubSpot sign.
    pub public_url: Option<String>,
    /// `verify_token`: Meta's verify token, by reference.
    pub verify_token: Option<SecretRef>,
    /// The shortest secret taken: [`crate::signature::MIN_SECRET_BYTES`], or a preset's
    /// floor for the secrets its provider issues.
    pub min_secret_bytes: usize,
    /// `pending`: the secret is stored after the deploy. Until the receiver reads a valid one,
    /// the source's requests are answered 503 with `Retry-After` (docs/design.md §3).
    pub pending: bool,
    /// `batch`: the body carries several events (docs/design.md §14); `None`: one event.
    pub batch: Option<BatchSpec>,
    /// `attempt_fields`: members of the body (JSON pointers; of each event, for a batch)
    /// that change per delivery attempt, left out of the payload hash
    /// ([`crate::key::payload_sha256`]); empty: the hash is of the body as sent.
    pub attempt_fields: Vec<String>,
}

impl SourceSpec {
    /// Where each event carries its own signature (`batch.signed: "each_event"`): the JSON
    /// pointer of the events' array.
    pub fn each_event_signed_at(&self) -> Option<&str> {
        self.batch
            .as_ref()
            .and_then(BatchSpec::each_event_signed_at)
    }

    /// The header names the queue envelope carries along: the scheme's, the key's, and the content type.
    pub fn envelope_headers(&self) -> Vec<String> {
        let mut names = self.scheme.header_names();
        if let KeySpec::Header(name) = &self.key {
            names.push(name.as_str().to_owned());
        }
        if let Some(EventTypeSpec::Header(name)) = &self.event_type {
            names.push(name.as_str().to_owned());
        }
        names.push("content-type".to_owned());
        names.sort();
        names.dedup();
        names
    }
}
