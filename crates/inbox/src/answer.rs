//! The stored answer: what the receiver answers an accepted event with, stored by the claim
//! in the ledger and given again to every duplicate of the key. A leaf module: the receiver
//! writes it, the consumer and the tests check items against it.

/// The answer to an accepted event: 200 and `{"key":<key>,"status":"accepted"}`. The claim
/// stores it in the ledger and every duplicate of the key is answered with it again.
pub fn accepted_response(key: &str) -> (u16, String) {
    // The text `json!({"status": "accepted", "key": key})` gives (keys sorted), without
    // building a map per request.
    let key = serde_json::to_string(key).unwrap_or_default();
    (200, format!(r#"{{"key":{key},"status":"accepted"}}"#))
}

#[cfg(test)]
mod tests {
    #[test]
    fn accepted_response_is_what_json_would_write() {
        for key in [
            "github:d-1",
            "s:caf\u{e9}",
            "s:\"quoted\" \\ back",
            "orders:a|b",
        ] {
            let expected = serde_json::json!({"status": "accepted", "key": key}).to_string();
            assert_eq!(super::accepted_response(key), (200, expected));
        }
    }
}
