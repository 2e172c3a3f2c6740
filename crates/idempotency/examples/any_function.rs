//! Any async function, made idempotent with one call. Runs locally on the memory store:
//! `cargo run -p lambda-idempotency --example any_function --features memory`.

use lambda_idempotency::memory::MemoryStore;
use lambda_idempotency::{idempotent, Deadline, Error, Key};

/// The side effect: charge a card (here, print). The charge id is the result stored.
async fn charge(order: &str, cents: u64) -> Result<String, std::io::Error> {
    println!("charging {cents} cents for {order}");
    Ok(format!("ch_{order}"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = MemoryStore::new();
    let payload = br#"{"order":"o-17","cents":1250}"#;
    // The key is what the request is (its order id), never when it came or a random id.
    let key = Key::from_json_pointer(payload, "/order")?;
    for attempt in 1..=3 {
        let out = idempotent(&store, &key, payload, &Deadline::none(), || {
            charge("o-17", 1250)
        })
        .await?;
        println!(
            "attempt {attempt}: {} (replayed: {})",
            out.value, out.replayed
        );
    }
    // The same key with another payload is another operation: refused.
    let other = idempotent(&store, &key, b"{}", &Deadline::none(), || charge("o-17", 1)).await;
    assert!(matches!(other, Err(Error::PayloadMismatch { .. })));
    Ok(())
}
