//! What the consumer checks of an envelope before any effect. The queue is a trust boundary
//! (docs/design.md §5): a principal that can send to it must not be able to make the
//! consumer forward a body under another source's key, read another source's large bodies,
//! or forward a body the receiver never hashed. Every part of an envelope that names another
//! must agree with it; an envelope whose parts disagree never will, so it is refused with no
//! side effect and dead-lettered at once.

use super::Job;
use crate::bucket::payload_key;
use crate::config::SourceSpec;
use crate::key::payload_sha256;
use crate::queue::Envelope;

/// A message the consumer admitted: its envelope, whose parts agree; its source's settings;
/// and the job its destinations get (a body behind a pointer is read once the key is taken).
pub(super) struct Admitted<'s> {
    pub envelope: Envelope,
    pub spec: &'s SourceSpec,
    pub job: Job,
}

/// Why an envelope was refused: its `last_error` and its log line's `error`.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The key does not start with `<source>:` (the receiver derives every key so).
    #[error("refused: the key is not of the envelope's source")]
    KeyOfAnotherSource,
    /// The key breaks the receiver's own key rules ([`crate::key::check`]): a space, a control
    /// or format character, over 1024 bytes. No receiver derives such a key.
    #[error("refused: the key breaks the key rules ({0})")]
    KeyBreaksRules(&'static str),
    /// A replay for a destination that the consumer does not have, or that takes no event of
    /// this source and type: it would run nothing and vanish.
    #[error("refused: no destination of this consumer by that name takes this event")]
    DestinationUnknown,
    /// The ledger's word on the event's item: not an accepted event, another body, or a
    /// replay nobody recorded (docs/design.md §5).
    #[error(transparent)]
    Ledger(#[from] crate::ledger::TakeRefusal),
    /// `body_ref.s3_key` is not the object the envelope's source, key and hash name.
    #[error("refused: body_ref.s3_key is not this event's payload object")]
    PointerElsewhere,
    /// `body_ref.sha256` is not the envelope's `payload_sha256`.
    #[error("refused: body_ref.sha256 is not payload_sha256")]
    PointerHashDiffers,
    /// The inline body does not hash to `payload_sha256`.
    #[error("refused: the body does not hash to payload_sha256")]
    BodyHashDiffers,
    /// Both an inline body and a pointer: which one is the event?
    #[error("refused: both an inline body and a body_ref")]
    BodyAndPointer,
    /// An `event_type` the receiver never writes (empty, over 256 bytes, a control
    /// character): routing would read it.
    #[error("refused: event_type is not one the receiver writes")]
    EventTypeUnusable,
    /// A `destination` on a message that is not a replay, or one that is no destination's
    /// name: only `inbox-ops replay --destination` writes one, and an ordinary delivery held
    /// to one destination would complete the event with its other destinations never run.
    #[error("refused: destination is set only by a replay, to a destination's name")]
    DestinationUnusable,
}

/// Checks that the envelope's parts agree; `body` is its inline body, decoded (empty where a
/// pointer carries it), hashed as the receiver hashed it: with the source's `attempt_fields`
/// left out ([`payload_sha256`]).
pub fn check(envelope: &Envelope, body: &[u8], attempt_fields: &[String]) -> Result<(), Refusal> {
    let of_source = envelope
        .key
        .strip_prefix(envelope.source.as_str())
        .and_then(|rest| rest.strip_prefix(':'))
        .is_some_and(|id| !id.is_empty());
    if !of_source {
        return Err(Refusal::KeyOfAnotherSource);
    }
    if let Err(e) = crate::key::check(&envelope.source, &envelope.key) {
        return Err(Refusal::KeyBreaksRules(match e {
            crate::key::KeyError::Invalid(_, why) => why,
            _ => "empty",
        }));
    }
    if let Some(event_type) = &envelope.event_type {
        let usable = !event_type.is_empty()
            && event_type.len() <= crate::config::MAX_EVENT_TYPE_BYTES
            && !event_type.chars().any(char::is_control);
        if !usable {
            return Err(Refusal::EventTypeUnusable);
        }
    }
    if let Some(destination) = &envelope.destination {
        if envelope.replay_id.is_none() || !crate::route::valid_name(destination) {
            return Err(Refusal::DestinationUnusable);
        }
    }
    match &envelope.body_ref {
        Some(pointer) => {
            if !body.is_empty() {
                return Err(Refusal::BodyAndPointer);
            }
            if pointer.sha256 != envelope.payload_sha256 {
                return Err(Refusal::PointerHashDiffers);
            }
            if pointer.s3_key
                != payload_key(&envelope.source, &envelope.key, &envelope.payload_sha256)
            {
                return Err(Refusal::PointerElsewhere);
            }
        }
        None => {
            if payload_sha256(body, attempt_fields) != envelope.payload_sha256 {
                return Err(Refusal::BodyHashDiffers);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::sha256_hex;
    use crate::queue::BodyRef;

    fn check(envelope: &Envelope, body: &[u8]) -> Result<(), Refusal> {
        super::check(envelope, body, &[])
    }

    fn inline(key: &str, source: &str, body: &[u8]) -> Envelope {
        Envelope::new(key, source, 1, &sha256_hex(body), Default::default(), body)
    }

    fn pointing(key: &str, source: &str, body: &[u8]) -> Envelope {
        let sha = sha256_hex(body);
        let mut env = Envelope::new(key, source, 1, &sha, Default::default(), b"");
        env.body = String::new();
        env.body_ref = Some(BodyRef {
            s3_key: payload_key(source, key, &sha),
            sha256: sha,
            size: body.len() as u64,
        });
        env
    }

    #[test]
    fn an_envelope_whose_parts_agree_is_admitted() {
        assert_eq!(check(&inline("github:1", "github", b"{}"), b"{}"), Ok(()));
        assert_eq!(check(&pointing("github:1", "github", b"{}"), b""), Ok(()));
    }

    #[test]
    fn a_destination_is_admitted_only_on_a_replay_and_by_its_name() {
        let mut env = inline("github:1", "github", b"{}");
        env.destination = Some("crm".into());
        assert_eq!(check(&env, b"{}"), Err(Refusal::DestinationUnusable));
        env.replay_id = Some("rp-1".into());
        assert_eq!(check(&env, b"{}"), Ok(()));
        for bad in ["", "a b", "crm to:x", &"x".repeat(65)] {
            env.destination = Some(bad.to_owned());
            assert_eq!(
                check(&env, b"{}"),
                Err(Refusal::DestinationUnusable),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_key_of_another_source_is_refused() {
        for (key, source) in [
            ("stripe:evt_1", "github"),
            ("githubx:1", "github"),
            ("github", "github"),
            ("github:", "github"),
            ("#guard:github:ab", "github"),
            ("", "github"),
        ] {
            let env = inline(key, source, b"{}");
            assert_eq!(
                check(&env, b"{}"),
                Err(Refusal::KeyOfAnotherSource),
                "{key:?} on {source:?}"
            );
        }
    }

    #[test]
    fn a_key_the_receiver_would_never_derive_is_refused() {
        // The probe's spaced key: it names the (event, destination) item of `stripe:evt_1`.
        for (key, why) in [
            ("stripe:evt_1 to:billing", "holds a space or separator"),
            ("stripe:evt\u{1b}[2J", "holds a control character"),
            ("stripe:evt\u{202e}1", "holds an invisible format character"),
        ] {
            let env = inline(key, "stripe", b"{}");
            assert_eq!(
                check(&env, b"{}"),
                Err(Refusal::KeyBreaksRules(why)),
                "{key:?}"
            );
        }
        let long = format!("stripe:{}", "k".repeat(1025));
        assert_eq!(
            check(&inline(&long, "stripe", b"{}"), b"{}"),
            Err(Refusal::KeyBreaksRules("longer than 1024 bytes"))
        );
        assert_eq!(
            check(&inline("stripe:evt_1", "stripe", b"{}"), b"{}"),
            Ok(())
        );
    }

    #[test]
    fn a_pointer_must_name_this_events_object_and_hash() {
        let mut env = pointing("github:1", "github", b"{}");
        env.body_ref.as_mut().expect("pointer").s3_key =
            payload_key("stripe", "stripe:evt_1", &env.payload_sha256);
        assert_eq!(check(&env, b""), Err(Refusal::PointerElsewhere));

        let mut env = pointing("github:1", "github", b"{}");
        env.body_ref.as_mut().expect("pointer").sha256 = sha256_hex(b"other");
        assert_eq!(check(&env, b""), Err(Refusal::PointerHashDiffers));

        // Hash and pointer moved together to another body: the object is not this event's.
        let mut env = pointing("github:1", "github", b"{}");
        env.payload_sha256 = sha256_hex(b"other");
        env.body_ref.as_mut().expect("pointer").sha256 = sha256_hex(b"other");
        assert_eq!(check(&env, b""), Err(Refusal::PointerElsewhere));

        let env = pointing("github:1", "github", b"{}");
        assert_eq!(check(&env, b"{}"), Err(Refusal::BodyAndPointer));
    }

    #[test]
    fn an_event_type_the_receiver_never_writes_is_refused() {
        let body = br#"{"id":1}"#;
        let typed = |t: &str| inline("s:1", "s", body).with_event_type(Some(t.to_owned()));
        assert_eq!(check(&typed("invoice.paid"), body), Ok(()));
        for bad in [String::new(), "a\u{1}b".to_owned(), "x".repeat(257)] {
            assert_eq!(
                check(&typed(&bad), body),
                Err(Refusal::EventTypeUnusable),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn an_inline_body_must_hash_to_payload_sha256() {
        let env = inline("github:1", "github", b"{}");
        assert_eq!(
            check(&env, b"{\"forged\":1}"),
            Err(Refusal::BodyHashDiffers)
        );
        let mut env = inline("github:1", "github", b"{}");
        env.payload_sha256 = "h".to_owned();
        assert_eq!(check(&env, b"{}"), Err(Refusal::BodyHashDiffers));
    }
}
