//! The Standard Webhooks secret format (`whsec_` and base64 of the key): its bounds, shared
//! by the verifier of incoming signatures and the signer of forwards. A leaf module.

/// The Standard Webhooks specification's bounds on a secret key, in bytes.
pub const MIN_KEY_BYTES: usize = 24;
pub const MAX_KEY_BYTES: usize = 64;
