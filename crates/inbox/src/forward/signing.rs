//! Forwards signed in the Standard Webhooks format, so that the system of record can verify
//! them with the official libraries (docs/design.md §6):
//!
//! - `webhook-id`: `msg_` and the first 32 hex digits of the key's SHA-256: the same for every
//!   forward of one event, whatever the key holds (no `.`, which would make the signed content
//!   ambiguous, and nothing but letters, digits and `_` in a header). A replay's is derived
//!   from the key and the replay id instead ([`webhook_id`]): the replay's identity is inside
//!   what is signed, so a system of record deduplicating on `webhook-id` runs each replay
//!   once, and a captured forward cannot pass for a fresh replay by a changed header;
//! - `webhook-timestamp`: the forward's time, epoch seconds;
//! - `webhook-signature`: `v1,<base64 of HMAC-SHA256(key, "id.timestamp.body")>`, one entry per
//!   secret, separated by spaces (during a rotation the receiver verifies with either).
//!
//! The secrets come from `FORWARD_SIGNING_SECRET` (secret references, read once at start-up);
//! each value is a `whsec_` secret: `whsec_` and the base64 of a key of 24 to 64 bytes. The
//! prefix may be left out, as the Standard Webhooks libraries allow: that is how the
//! template's generated secret is stored (32 letters and digits, which is the base64 of 24
//! random bytes).

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::key::sha256_hex;

type HmacSha256 = Hmac<Sha256>;

pub use crate::whsec::{MAX_KEY_BYTES, MIN_KEY_BYTES};

/// The signing keys, in the order the references were listed.
#[derive(Clone)]
pub struct ForwardSigner {
    keys: Vec<Vec<u8>>,
}

impl std::fmt::Debug for ForwardSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the keys.
        write!(f, "ForwardSigner({} key(s))", self.keys.len())
    }
}

/// The three Standard Webhooks headers of one forward.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedHeaders {
    pub id: String,
    pub timestamp: String,
    pub signature: String,
}

impl ForwardSigner {
    /// From the secrets' values (`whsec_<base64>`, the prefix optional); the message names the
    /// secret by its position and says what is wrong, never what it holds.
    pub fn new<S: AsRef<str>>(secrets: &[S]) -> Result<ForwardSigner, String> {
        if secrets.is_empty() {
            return Err("no secret".into());
        }
        let keys = secrets
            .iter()
            .enumerate()
            .map(|(i, s)| key(i + 1, s.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ForwardSigner { keys })
    }

    /// The headers for `body` forwarded as the event of `key` (or its replay `replay_id`) at
    /// `timestamp` (epoch seconds).
    pub fn sign(
        &self,
        key: &str,
        replay_id: Option<&str>,
        timestamp: i64,
        body: &[u8],
    ) -> SignedHeaders {
        let id = webhook_id(key, replay_id);
        let timestamp = timestamp.to_string();
        let signature = self.signature(&id, &timestamp, body);
        SignedHeaders {
            id,
            timestamp,
            signature,
        }
    }

    /// `v1,<base64>` per key, space-separated, over `id.timestamp.body`.
    fn signature(&self, id: &str, timestamp: &str, body: &[u8]) -> String {
        self.keys
            .iter()
            .map(|k| {
                let mut mac =
                    HmacSha256::new_from_slice(k).expect("HMAC-SHA256 takes any key length");
                mac.update(id.as_bytes());
                mac.update(b".");
                mac.update(timestamp.as_bytes());
                mac.update(b".");
                mac.update(body);
                format!("v1,{}", B64.encode(mac.finalize().into_bytes()))
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The `webhook-id` of the event of `key`: `msg_` and 32 hex digits of its SHA-256; of its
/// replay `replay_id`, of the SHA-256 of `replay:`, the key's length, `:`, the key and the
/// replay id (the length keeps any two pairs apart, and no key starts with `replay:`).
pub fn webhook_id(key: &str, replay_id: Option<&str>) -> String {
    let digest = match replay_id {
        None => sha256_hex(key.as_bytes()),
        Some(rid) => sha256_hex(format!("replay:{}:{key}{rid}", key.len()).as_bytes()),
    };
    format!("msg_{}", &digest[..32])
}

fn key(position: usize, secret: &str) -> Result<Vec<u8>, String> {
    crate::whsec::decode_key(secret).map_err(|e| format!("secret #{position} {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Standard Webhooks specification's example secret and message.
    const SPEC_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    #[test]
    fn signs_as_the_specification_example() {
        let signer = ForwardSigner::new(&[SPEC_SECRET]).unwrap();
        assert_eq!(
            signer.signature(
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                "1614265330",
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
        let got = signer.sign("any:key", None, 1614265330, br#"{"test": 2432232314}"#);
        assert_eq!(got.id, webhook_id("any:key", None));
        assert_eq!(got.timestamp, "1614265330");
        assert_eq!(
            got.signature,
            signer.signature(&got.id, "1614265330", br#"{"test": 2432232314}"#)
        );
    }

    #[test]
    fn one_entry_per_secret_space_separated() {
        let other = format!("whsec_{}", B64.encode([7u8; 32]));
        let one = ForwardSigner::new(&[SPEC_SECRET])
            .unwrap()
            .sign("k", None, 1, b"x");
        let both = ForwardSigner::new(&[SPEC_SECRET, other.as_str()])
            .unwrap()
            .sign("k", None, 1, b"x");
        let entries: Vec<&str> = both.signature.split(' ').collect();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0], one.signature);
        assert_ne!(entries[1], one.signature);
    }

    #[test]
    fn webhook_id_is_stable_and_header_safe() {
        for key in ["stripe:evt_1", "a:x.y.z", "s:caf\u{e9} | \\ \"", ""] {
            let id = webhook_id(key, None);
            assert_eq!(id, webhook_id(key, None));
            assert_eq!(id.len(), 4 + 32);
            assert!(
                id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'),
                "{id}"
            );
        }
        assert_ne!(webhook_id("a:1", None), webhook_id("a:2", None));
    }

    #[test]
    fn a_replay_has_its_own_webhook_id_per_replay_id() {
        let original = webhook_id("a:1", None);
        let r1 = webhook_id("a:1", Some("rp-1"));
        assert_eq!(
            r1,
            webhook_id("a:1", Some("rp-1")),
            "the same replay, the same id"
        );
        assert_ne!(r1, original);
        assert_ne!(r1, webhook_id("a:1", Some("rp-2")));
        assert_ne!(r1, webhook_id("a:2", Some("rp-1")));
        // The key's length keeps (key, replay id) pairs apart where their texts join alike.
        assert_ne!(webhook_id("a:1", Some("2")), webhook_id("a:12", Some("")));
        assert!(r1.starts_with("msg_") && r1.len() == 36 && !r1.contains('.'));
        // Signed over: the replay's signature is not the original's.
        let signer = ForwardSigner::new(&[SPEC_SECRET]).expect("secret");
        assert_ne!(
            signer.sign("a:1", Some("rp-1"), 5, b"x").signature,
            signer.sign("a:1", None, 5, b"x").signature
        );
    }

    #[test]
    fn the_prefix_is_optional_and_anything_else_is_refused() {
        let bare = SPEC_SECRET.trim_start_matches("whsec_");
        assert!(ForwardSigner::new(&[bare]).is_ok());
        // A generated secret: 32 letters and digits is the base64 of 24 bytes.
        assert!(ForwardSigner::new(&["Ab3dEf5hIj7lMn9pQr1tUv3xYz5bCd7f"]).is_ok());
        for (bad, says) in [
            ("", "not a whsec_ secret"),
            ("whsec_", "not a whsec_ secret"),
            (
                " whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                "not a whsec_ secret",
            ),
            ("whsec_not base64!", "not valid base64"),
            // Unprefixed base64 of five bytes: a key, but too short.
            ("hunter2", "decodes to 5 bytes"),
            ("whsec_c2hvcnQ=", "decodes to 5 bytes"),
        ] {
            let e = ForwardSigner::new(&[SPEC_SECRET, bad]).unwrap_err();
            assert!(e.starts_with("secret #2"), "{e}");
            assert!(e.contains(says), "{bad:?}: {e}");
            assert!(
                bad.len() < 8 || !e.contains(bad),
                "the message never holds the secret"
            );
        }
        assert_eq!(
            ForwardSigner::new::<&str>(&[]).err(),
            Some("no secret".to_owned())
        );
        let long = format!("whsec_{}", B64.encode([1u8; 65]));
        let Err(e) = ForwardSigner::new(&[long]) else {
            panic!("65 bytes are refused");
        };
        assert!(e.starts_with("secret #1 decodes to 65 bytes"), "{e}");
    }

    #[test]
    fn debug_shows_no_key() {
        let text = format!("{:?}", ForwardSigner::new(&[SPEC_SECRET]).unwrap());
        assert_eq!(text, "ForwardSigner(1 key(s))");
    }
}
