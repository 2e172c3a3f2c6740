//! The item that keeps a handshake's secret (Asana's `X-Hook-Secret`) and the window an
//! operator opens for it: the conditions and their in-memory twins.

/// The item that keeps a source's handshake secret (Asana's `X-Hook-Secret`): its `pk` starts
/// with `#` like a guard's, so no event key collides with it, and it has no `expires_at`, so
/// the table's TTL never removes it (docs/providers.md, "asana").
pub fn hook_secret_key(source: &str) -> String {
    format!("#hook-secret:{source}")
}

/// open a handshake window (`inbox-ops handshake open`): PutItem `{pk:
/// "#hook-secret:<source>", source, open_until, expires_at}` (epoch seconds, both), unless a
/// secret is kept already.
pub const OPEN_HANDSHAKE_CONDITION: &str = "attribute_not_exists(secret)";

/// keep a hook secret: PutItem `{pk: "#hook-secret:<source>", source, secret, kept_at}`.
/// Only inside a window an operator opened, and once: the first handshake's secret stays
/// until an operator deletes the item, so no stranger's handshake sets or replaces it.
pub const KEEP_HOOK_SECRET_CONDITION: &str =
    "attribute_exists(pk) AND attribute_not_exists(secret) AND open_until > :now_s";

/// The in-memory twin of [`OPEN_HANDSHAKE_CONDITION`].
pub fn open_handshake_allowed(kept: Option<&str>) -> bool {
    kept.is_none()
}

/// The in-memory twin of [`KEEP_HOOK_SECRET_CONDITION`]: no secret kept, a window open at
/// `now_s`.
pub fn keep_hook_secret_allowed(kept: Option<&str>, open_until: Option<i64>, now_s: i64) -> bool {
    kept.is_none() && open_until.is_some_and(|until| until > now_s)
}
