//! `inbox-ops receive`: a throwaway system of record for trying a stack. It listens on a local
//! address, answers every request 200, and prints one line per request: method, path, the
//! forward's `Idempotency-Key` and `webhook-id`, whether its Standard Webhooks signature verifies
//! with the stack's forward key (`--verify-with`, the secret `ForwardSigningSecretArn` names),
//! and the body's size (the body itself, shown escaped, with `--body`). A deployed consumer reaches
//! it only through an https tunnel to the address; the local stack reaches it directly.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, Context as _};
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, Uri};
use clap::Args;
use inbox::forward::signing::ForwardSigner;

/// `receive`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct ReceiveArgs {
    /// The address to listen on (port 0: any free port; the address is printed first).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// The forward signing secret to verify with (its name or ARN in Secrets Manager: the
    /// stack's output ForwardSigningSecretArn); without it, signatures are not checked.
    #[arg(long, value_name = "SECRET_ID")]
    pub verify_with: Option<String>,
    /// Print each body too (escaped), after its line.
    #[arg(long)]
    pub body: bool,
}

/// What every request is checked and printed with.
struct Receiver {
    signer: Option<ForwardSigner>,
    body: bool,
}

/// Runs until stopped (Ctrl-C).
pub async fn run(args: &ReceiveArgs) -> anyhow::Result<ExitCode> {
    let signer = match &args.verify_with {
        Some(id) => {
            let sdk = crate::aws::config().await;
            let value = aws_sdk_secretsmanager::Client::new(&sdk)
                .get_secret_value()
                .secret_id(id)
                .send()
                .await
                .map_err(|e| {
                    anyhow!(
                        "GetSecretValue {id}: {}",
                        aws_sdk_secretsmanager::error::DisplayErrorContext(e)
                    )
                })?
                .secret_string()
                .map(str::to_owned)
                .ok_or_else(|| anyhow!("secret {id} holds no string"))?;
            Some(
                ForwardSigner::new(&[value])
                    .map_err(|e| anyhow!("secret {id} is not a forward key: {e}"))?,
            )
        }
        None => None,
    };
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    let address = listener.local_addr()?;
    println!(
        "receive: listening on http://{address}/ (every request answered 200; Ctrl-C stops it); signatures {}",
        if signer.is_some() { "verified" } else { "not checked (no --verify-with)" }
    );
    let receiver = Arc::new(Receiver {
        signer,
        body: args.body,
    });
    let app = axum::Router::new().fallback(
        move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
            let receiver = Arc::clone(&receiver);
            async move {
                println!("{}", receiver.line(&method, &uri, &headers, &body));
                if receiver.body {
                    println!(
                        "  {}",
                        crate::text::shown_lines(&String::from_utf8_lossy(&body))
                    );
                }
                "ok"
            }
        },
    );
    axum::serve(listener, app).await?;
    Ok(ExitCode::SUCCESS)
}

impl Receiver {
    /// One request's line.
    fn line(&self, method: &Method, uri: &Uri, headers: &HeaderMap, body: &[u8]) -> String {
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let key = header("idempotency-key");
        let verdict = match (
            &self.signer,
            key,
            header("webhook-timestamp"),
            header("webhook-signature"),
        ) {
            (None, ..) => "not checked",
            (Some(_), None, ..) | (Some(_), _, None, _) | (Some(_), .., None) => "unsigned",
            (Some(signer), Some(key), Some(timestamp), Some(signature)) => {
                let signed = timestamp
                    .parse()
                    .map(|t| signer.sign(key, header("webhook-replay-id"), t, body));
                match signed {
                    Ok(s)
                        if header("webhook-id") == Some(s.id.as_str())
                            && signature.split(' ').any(|v| v == s.signature) =>
                    {
                        "verified"
                    }
                    _ => "INVALID",
                }
            }
        };
        crate::text::shown_lines(&format!(
            "{method} {uri} idempotency-key={} webhook-id={} signature={verdict} {} bytes",
            key.unwrap_or("-"),
            header("webhook-id").unwrap_or("-"),
            body.len()
        ))
    }
}
