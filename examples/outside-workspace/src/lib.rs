//! What every function here shares: the idempotency configuration over the DynamoDB table
//! named by `IDEMPOTENCY_TABLE` (partition key `pk`, a string; TTL on `expires_at`).

use lambda_idempotency::dynamodb::DynamoStore;
use lambda_idempotency::Idempotency;

/// The configuration every function uses: the table, a one-day retention (the default) and
/// a 1 MiB in-process cache of completed results for warm duplicates.
pub async fn idempotency() -> Result<Idempotency<DynamoStore>, lambda_runtime::Error> {
    let table = std::env::var("IDEMPOTENCY_TABLE").map_err(|_| "IDEMPOTENCY_TABLE is not set")?;
    let config = aws_config::load_from_env().await;
    let store = DynamoStore::new(aws_sdk_dynamodb::Client::new(&config), table);
    Ok(Idempotency::new(store).cache_bytes(1 << 20))
}
