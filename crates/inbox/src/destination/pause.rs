//! Which destinations are paused (`inbox-ops pause --destination`): one item of the ledger's
//! table, `pk` `#destinations`, whose string set `paused` names them. The consumer reads it
//! once per batch (a strongly consistent `GetItem`); a paused destination's events wait on the
//! queue (docs/routing.md), the others run. A `#` starts no event key, so no event collides.

use std::collections::BTreeSet;

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::AttributeValue;

/// The item's `pk`.
pub const PAUSES_PK: &str = "#destinations";

/// The pause switches, in the ledger's table.
#[derive(Clone, Debug)]
pub struct PauseBoard {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

impl PauseBoard {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    /// The paused destinations' names.
    pub async fn paused(&self) -> Result<BTreeSet<String>, String> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(PAUSES_PK.into()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| format!("{}: {}", e.code().unwrap_or("error"), e))?;
        Ok(out
            .item()
            .and_then(|i| i.get("paused"))
            .and_then(|v| v.as_ss().ok())
            .map(|names| names.iter().cloned().collect())
            .unwrap_or_default())
    }

    /// Pauses (`true`) or resumes one destination.
    pub async fn set(&self, destination: &str, paused: bool) -> Result<(), String> {
        let expression = if paused {
            "ADD paused :d"
        } else {
            "DELETE paused :d"
        };
        self.client
            .update_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(PAUSES_PK.into()))
            .update_expression(expression)
            .expression_attribute_values(":d", AttributeValue::Ss(vec![destination.to_owned()]))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| format!("{}: {}", e.code().unwrap_or("error"), e))
    }
}
