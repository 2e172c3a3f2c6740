//! A second DynamoDB: `dynalite` (npm, pinned in the root package.json and package-lock.json,
//! installed into `node_modules/` by `npm ci`, which `make test` runs) on a free loopback port.
//!
//! It is an independent implementation of DynamoDB's API on LevelDB: it validates requests
//! strictly and, unlike DynamoDB and moto, does not return the old item on a failed condition
//! (`ReturnValuesOnConditionCheckFailure`), so the ledger adapter's fallback read runs on it.
//! The ledger transition tests run every scenario on the in-memory twin, on moto and on it.
//!
//! As with moto, one server per process (a test binary's tests share it); it stops when its
//! standard input closes, so a crashed test run leaves nothing behind. It has no
//! `UpdateTimeToLive`: the table gets the template's key schema, and no transition depends on
//! TTL deleting anything (an item past `expires_at` counts as absent in every condition).

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;

use anyhow::{bail, Context};
use aws_sdk_dynamodb::config::{Credentials, Region};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType, TableStatus,
};
use inbox::ledger::dynamo::DynamoLedger;
use serde_json::Value;

use crate::cloudformation::Translated;
use crate::moto::workspace_root;

const GUARD: &str = include_str!("dynalite_guard.js");

/// A running dynalite server.
pub struct Dynalite {
    endpoint: String,
    _stdin: ChildStdin,
    child: Child,
}

impl Dynalite {
    /// Starts one (with `node`, from the workspace's `node_modules/`) and waits until it listens.
    pub fn start() -> anyhow::Result<Dynalite> {
        let root = workspace_root();
        if !root.join("node_modules/dynalite/package.json").exists() {
            bail!(
                "dynalite is not installed in {}: run `npm ci` (package-lock.json pins it)",
                root.join("node_modules").display()
            );
        }
        let mut child = Command::new("node")
            .arg("-e")
            .arg(GUARD)
            .current_dir(&root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting dynalite (is node on PATH?)")?;
        let stdin = child.stdin.take().context("dynalite stdin")?;
        let stdout = child.stdout.take().context("dynalite stdout")?;
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .context("reading dynalite's port")?;
        let port: u16 = match line.trim().strip_prefix("ready ") {
            Some(p) => p.parse().context("dynalite port")?,
            None => bail!("dynalite did not start (said {line:?})"),
        };
        Ok(Dynalite {
            endpoint: format!("http://127.0.0.1:{port}"),
            _stdin: stdin,
            child,
        })
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// A DynamoDB client for this server (its own endpoint, a region, dummy credentials;
    /// nothing from the environment, which may point at moto).
    pub fn client(&self) -> aws_sdk_dynamodb::Client {
        let config = aws_sdk_dynamodb::Config::builder()
            .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
            .endpoint_url(&self.endpoint)
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new(
                "testing", "testing", None, None, "dynalite",
            ))
            .build();
        aws_sdk_dynamodb::Client::from_conf(config)
    }

    /// A fresh ledger table named `name`, with template.yaml's `LedgerTable` key schema and
    /// attribute definitions (pay per request), and the ledger adapter on it.
    pub async fn ledger(&self, name: &str) -> anyhow::Result<DynamoLedger> {
        let (keys, attributes) = ledger_key_schema()?;
        let client = self.client();
        client
            .create_table()
            .table_name(name)
            .set_key_schema(Some(keys))
            .set_attribute_definitions(Some(attributes))
            .billing_mode(BillingMode::PayPerRequest)
            .send()
            .await
            .with_context(|| format!("creating table {name} on dynalite"))?;
        // As on DynamoDB, a new table is CREATING until a moment after CreateTable answers
        // (dynalite flips it on a timer, even with `createTableMs: 0`), and an item call on it
        // meanwhile is ResourceNotFoundException: poll until it is ACTIVE.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let described = client
                .describe_table()
                .table_name(name)
                .send()
                .await
                .with_context(|| format!("describing table {name} on dynalite"))?;
            let status = described.table().and_then(|t| t.table_status());
            if status == Some(&TableStatus::Active) {
                break;
            }
            if std::time::Instant::now() > deadline {
                bail!("table {name} on dynalite is still {status:?} after 30 s");
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        Ok(DynamoLedger::new(client, name))
    }
}

impl Drop for Dynalite {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

type KeySchema = (Vec<KeySchemaElement>, Vec<AttributeDefinition>);

/// `LedgerTable`'s `KeySchema` and `AttributeDefinitions`, from the translated template (read
/// once per process).
fn ledger_key_schema() -> anyhow::Result<KeySchema> {
    static SCHEMA: OnceLock<KeySchema> = OnceLock::new();
    if let Some(schema) = SCHEMA.get() {
        return Ok(schema.clone());
    }
    let schema = read_key_schema()?;
    Ok(SCHEMA.get_or_init(|| schema).clone())
}

fn read_key_schema() -> anyhow::Result<KeySchema> {
    let template = Translated::project()?;
    let table = template.properties("LedgerTable");
    let list = |name: &str| -> anyhow::Result<Vec<Value>> {
        table
            .get(name)
            .and_then(Value::as_array)
            .cloned()
            .with_context(|| format!("LedgerTable has no {name}"))
    };
    let field = |v: &Value, name: &str| -> anyhow::Result<String> {
        v.get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .with_context(|| format!("LedgerTable: {name} missing in {v}"))
    };
    let mut keys = Vec::new();
    for k in list("KeySchema")? {
        keys.push(
            KeySchemaElement::builder()
                .attribute_name(field(&k, "AttributeName")?)
                .key_type(KeyType::from(field(&k, "KeyType")?.as_str()))
                .build()?,
        );
    }
    let mut attributes = Vec::new();
    // Only the table key's: the others define the console's index, which the transitions
    // never read (and a CreateTable refuses a definition no key uses).
    let keyed = |a: &Value| {
        keys.iter()
            .any(|k| a.get("AttributeName").and_then(Value::as_str) == Some(k.attribute_name()))
    };
    for a in list("AttributeDefinitions")?.into_iter().filter(keyed) {
        attributes.push(
            AttributeDefinition::builder()
                .attribute_name(field(&a, "AttributeName")?)
                .attribute_type(ScalarAttributeType::from(
                    field(&a, "AttributeType")?.as_str(),
                ))
                .build()?,
        );
    }
    Ok((keys, attributes))
}

static SHARED: OnceLock<Dynalite> = OnceLock::new();

/// One server per process (a test binary's tests share it).
pub fn shared() -> &'static Dynalite {
    SHARED.get_or_init(|| Dynalite::start().unwrap_or_else(|e| panic!("dynalite: {e:#}")))
}
