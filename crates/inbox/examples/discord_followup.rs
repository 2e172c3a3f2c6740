//! Following up a Discord interaction (the `discord` preset, docs/providers.md): the receiver
//! verifies the interaction, queues it and answers Discord at once with a deferred response
//! (`{"type":5}` for a slash command); a `Processor` then finishes the work and edits that
//! response through Discord's interaction webhook,
//! `PATCH {api}/webhooks/{application_id}/{interaction token}/messages/@original`, which
//! Discord accepts for 15 minutes after the interaction (its token's lifetime). The queued
//! event carries all it needs: the interaction's own body (`application_id`, `token`, `id`).
//!
//! Here against a local stand-in for Discord's API: the whole path, a signed interaction
//! through the `Receiver` to the queue, then through the `Consumer` to the stand-in.
//! `cargo run -p inbox --example discord_followup`; `tests/readme_example.rs` runs it too.

use std::sync::{Arc, Mutex};

use aws_lambda_events::sqs::SqsMessage;
use ed25519_dalek::{Signer, SigningKey};
use inbox::clock::{Clock, SystemClock};
use inbox::config::{SecretRef, SecretResolver};
use inbox::queue::{Outgoing, Queue, QueueError};
use inbox::{
    Consumer, ConsumerSettings, Job, MemoryLedger, Metrics, ProcessError, Processor, Receiver,
    ReceiverSettings, SourceSpecs,
};
use lambda_http::Body;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long Discord keeps an interaction's token valid for follow-ups.
pub const TOKEN_LIFETIME_MS: i64 = 15 * 60 * 1000;
/// Discord's epoch: a snowflake's top 42 bits are milliseconds since it.
const DISCORD_EPOCH_MS: i64 = 1_420_070_400_000;

/// When Discord created the interaction, from its snowflake `id`.
pub fn created_ms(snowflake: &str) -> Option<i64> {
    let id: u64 = snowflake.parse().ok()?;
    i64::try_from(id >> 22).ok().map(|ms| ms + DISCORD_EPOCH_MS)
}

/// A snowflake for an interaction created at `ms` (what Discord would send).
pub fn snowflake_at(ms: i64) -> String {
    let since = u64::try_from(ms - DISCORD_EPOCH_MS).unwrap_or(0);
    (since << 22 | 0x2a).to_string()
}

/// Edits the deferred answer of each slash command with its result.
pub struct FollowUp {
    /// Discord's API base (`https://discord.com/api/v10`), a stand-in's here.
    pub api: String,
    pub http: reqwest::Client,
}

impl Processor for FollowUp {
    async fn process(&self, job: &Job) -> Result<(), ProcessError> {
        let interaction: serde_json::Value = serde_json::from_slice(&job.body)
            .map_err(|e| ProcessError(format!("not an interaction: {e}")))?;
        let field = |name: &str| {
            interaction[name]
                .as_str()
                .ok_or_else(|| ProcessError(format!("the interaction has no {name}")))
        };
        let (application, token, id) = (field("application_id")?, field("token")?, field("id")?);
        let created = created_ms(id).ok_or_else(|| ProcessError("not a snowflake id".into()))?;
        // Past its 15 minutes the token is refused (404 Unknown Webhook): say so rather
        // than call. (A job retried after that fails here each time, then dead-letters.)
        if SystemClock.now_ms() > created + TOKEN_LIFETIME_MS {
            return Err(ProcessError(
                "the interaction's token has expired (15 minutes)".into(),
            ));
        }
        let command = interaction["data"]["name"].as_str().unwrap_or("command");
        let url = format!(
            "{}/webhooks/{application}/{token}/messages/@original",
            self.api
        );
        let resp = self
            .http
            .patch(url)
            .header("content-type", "application/json")
            .body(serde_json::json!({"content": format!("/{command}: done")}).to_string())
            .send()
            .await
            .map_err(|e| ProcessError(format!("Discord unreachable: {e}")))?;
        if resp.status().is_success() {
            Ok(())
        } else {
            Err(ProcessError(format!("Discord answered {}", resp.status())))
        }
    }
}

/// What the stand-in for Discord's API received: the request line and the body of each call.
pub type Seen = Arc<Mutex<Vec<(String, String)>>>;

/// A stand-in for Discord's API on loopback: answers every request 200 `{}` and keeps it.
pub async fn stand_in() -> std::io::Result<(String, Seen)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/api/v10", listener.local_addr()?);
    let seen: Seen = Arc::default();
    let kept = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let mut data = Vec::new();
            let mut buf = [0u8; 4096];
            // Headers, then as many body bytes as Content-Length says.
            let (line, body) = loop {
                let Ok(n) = conn.read(&mut buf).await else {
                    break (String::new(), String::new());
                };
                data.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&data).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let length = text[..end]
                        .lines()
                        .find_map(|l| {
                            let (name, value) = l.split_once(':')?;
                            name.eq_ignore_ascii_case("content-length")
                                .then(|| value.trim().parse::<usize>().ok())?
                        })
                        .unwrap_or(0);
                    if data.len() >= end + 4 + length || n == 0 {
                        let line = text.lines().next().unwrap_or_default().to_owned();
                        break (line, text[end + 4..].to_owned());
                    }
                } else if n == 0 {
                    break (String::new(), String::new());
                }
            };
            kept.lock().map(|mut s| s.push((line, body))).ok();
            let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}";
            conn.write_all(answer.as_bytes()).await.ok();
        }
    });
    Ok((url, seen))
}

/// The queue the receiver sends to, kept in memory for the consumer.
#[derive(Clone, Default)]
struct Kept(Arc<Mutex<Vec<Outgoing>>>);

impl Queue for Kept {
    async fn send(&self, msg: Outgoing) -> Result<(), QueueError> {
        self.0
            .lock()
            .map_err(|_| QueueError("poisoned".into()))?
            .push(msg);
        Ok(())
    }
}

struct Key(String);

impl SecretResolver for Key {
    async fn resolve(&self, _: &SecretRef) -> Result<String, String> {
        Ok(self.0.clone())
    }
}

/// What one run came to: the receiver's answer to Discord, and the stand-in's calls.
pub struct Run {
    pub status: u16,
    pub answer: String,
    pub calls: Vec<(String, String)>,
}

/// A slash command signed as Discord signs it, through the receiver (answered at once with a
/// deferred response), then the queued event through the consumer and `FollowUp`, which
/// edits the response on the stand-in at `api`.
pub async fn run(api: &str, seen: &Seen) -> Result<Run, Box<dyn std::error::Error>> {
    let key = SigningKey::from_bytes(&[7u8; 32]);
    let public = hex::encode(key.verifying_key().to_bytes());
    let config = r#"{"discord": {"preset": "discord", "signature": {"secrets": ["env:DISCORD_PUBLIC_KEY"]}}}"#;
    let sources = SourceSpecs::parse(config)?.resolve(&Key(public)).await?;
    let queue = Kept::default();
    let ledger = Arc::new(MemoryLedger::new());
    let receiver = Receiver::new(
        sources,
        ledger.clone(),
        queue.clone(),
        SystemClock,
        ReceiverSettings::default(),
        Metrics::memory("receiver").0,
    );

    let now = SystemClock.now_ms();
    let body = serde_json::json!({
        "application_id": "1234560123453231555", "id": snowflake_at(now), "type": 2,
        "token": "A_UNIQUE_TOKEN", "version": 1, "channel_id": "645027906669510667",
        "data": {"id": "771825006014889984", "name": "blep", "type": 1},
    })
    .to_string();
    let timestamp = (now / 1000).to_string();
    let signature = key.sign(format!("{timestamp}{body}").as_bytes());
    let request = http::Request::builder()
        .method("POST")
        .uri("https://inbox.example/webhooks/discord")
        .header("content-type", "application/json")
        .header("x-signature-ed25519", hex::encode(signature.to_bytes()))
        .header("x-signature-timestamp", timestamp)
        .body(Body::from(body.into_bytes()))?;
    let answer = receiver.handle(request).await;
    let status = answer.status().as_u16();
    let answer = String::from_utf8_lossy(answer.body().as_ref()).to_string();

    let consumer = Consumer::new(
        SourceSpecs::parse(config)?,
        ledger,
        FollowUp {
            api: api.to_owned(),
            http: reqwest::Client::new(),
        },
        SystemClock,
        ConsumerSettings::default(),
        Metrics::memory("consumer").0,
    );
    let queued: Vec<Outgoing> = queue.0.lock().map(|q| q.clone()).unwrap_or_default();
    let messages: Vec<SqsMessage> = queued
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut message = SqsMessage::default();
            message.message_id = Some(format!("m-{i}"));
            message.body = Some(m.body().to_owned());
            message
        })
        .collect();
    let failures = consumer
        .handle_batch(&messages, "example", Some(SystemClock.now_ms() + 30_000))
        .await;
    if !failures.batch_item_failures.is_empty() {
        return Err("the follow-up failed".into());
    }
    let calls = seen.lock().map(|s| s.clone()).unwrap_or_default();
    Ok(Run {
        status,
        answer,
        calls,
    })
}

#[tokio::main(flavor = "current_thread")]
#[allow(
    dead_code,
    reason = "tests/readme_example.rs includes this file and calls run"
)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (api, seen) = stand_in().await?;
    let out = run(&api, &seen).await?;
    println!("answered Discord: {} {}", out.status, out.answer);
    for (line, body) in &out.calls {
        println!("follow-up: {line} {body}");
    }
    assert_eq!(out.calls.len(), 1);
    Ok(())
}
