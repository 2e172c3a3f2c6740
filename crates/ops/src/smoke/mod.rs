//! `inbox-ops smoke --url <WebhookUrl> --source <name>`: one signed test event and its
//! duplicate sent to a receiver, deployed or local, and the answers checked: the first `200`
//! (accepted), the second the same answer replayed (`Idempotent-Replayed: true`). Exit code 0
//! only then.
//!
//! The source's configuration comes from `--sources FILE`, else `WEBHOOK_SOURCES`, else the
//! deployed stack's `WebhookSources` parameter (`DescribeStacks` of `--stack`): what the
//! receiver runs with, not the template's default. Its first secret is read as the
//! receiver reads it, with the library's resolver (`env:` from the environment,
//! `secretsmanager:` from Secrets Manager). The event is made to fit the source ([`event`]):
//! its key a fresh `smoke-…` id (in the key header, or at each key pointer of a JSON body),
//! its FIFO group pointers filled, and signed per the source's scheme ([`sign`]): every
//! family the library verifies. A family verified with the provider's public key (Ed25519:
//! Discord, Telnyx; ECDSA P-256: SendGrid) cannot be signed without the provider's private key:
//! for those the event goes unsigned, once, and only the documented refusal (401
//! `invalid_signature`) passes.

pub mod sign;

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _};
use inbox::config::{AwsSecretResolver, Delivery, GroupSpec, KeySpec, SecretResolver as _};
use inbox::config::{SourceSpec, SourceSpecs};
use inbox::receiver::REPLAYED_HEADER;
use inbox::signature::Scheme;
use serde_json::{json, Value};

use sign::{set_pointer, Payload, Signing};

use crate::stack::{StackResources, SOURCES_PARAMETER};

/// `smoke`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq, clap::Args)]
pub struct SmokeArgs {
    /// The receiver's URL: the stack's WebhookUrl output (its `{source}` becomes --source), or
    /// the source's own URL [default: the WebhookUrl of --stack].
    #[arg(long, env = "WEBHOOK_URL", value_name = "URL", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub url: Option<String>,
    /// The stack whose WebhookUrl output and WebhookSources parameter are used where --url,
    /// and --sources or WEBHOOK_SOURCES, are not given.
    #[arg(long, value_name = "NAME", default_value = crate::stack::DEFAULT_STACK, value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub stack: String,
    /// The source to send as: a key of the sources configuration.
    #[arg(long, value_name = "NAME", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub source: String,
    /// The sources configuration (JSON, as WEBHOOK_SOURCES takes it) [default: $WEBHOOK_SOURCES,
    /// else the WebhookSources parameter of --stack].
    #[arg(long = "sources", value_name = "FILE")]
    pub sources_file: Option<std::path::PathBuf>,
    /// Seconds to wait for each answer.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub timeout: u64,
}

/// A test event, ready to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The delivery id: the key's value (or part of it).
    pub id: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// What the receiver answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub replayed: bool,
    pub body: String,
}

/// `url` for `source`: the stack's `WebhookUrl` output holds a literal `{source}`.
pub fn endpoint(url: &str, source: &str) -> String {
    url.replace("{source}", source)
}

/// The sources configuration: `--sources FILE`, else `WEBHOOK_SOURCES`, else the stack's
/// `WebhookSources` parameter (`stack`: the stack as `DescribeStacks` read it, or why it could
/// not be read). Returns (where it came from, the JSON text).
fn sources_text(
    file: Option<&Path>,
    env: Option<String>,
    stack: impl FnOnce() -> anyhow::Result<StackResources>,
) -> anyhow::Result<(String, String)> {
    if let Some(file) = file {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        return Ok((file.display().to_string(), text));
    }
    if let Some(text) = env.filter(|t| !t.trim().is_empty()) {
        return Ok(("$WEBHOOK_SOURCES".to_owned(), text));
    }
    let stack = stack().context(
        "the sources: no --sources FILE, no WEBHOOK_SOURCES, and the stack could not be read",
    )?;
    let text = stack
        .sources_json
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| {
            anyhow!(
                "stack {} has no {SOURCES_PARAMETER} parameter; give --sources FILE",
                stack.name
            )
        })?;
    Ok((
        format!("the {SOURCES_PARAMETER} parameter of stack {}", stack.name),
        text,
    ))
}

/// A form field's made-up value: Twilio's shapes where the body check reads them (a
/// `…Sid` is two capitals and 32 hex digits, a `…Status` lower-case letters), else the id.
fn form_value(name: &str, id: &str) -> String {
    if name.ends_with("Sid") {
        format!("SM{}", &inbox::key::sha256_hex(id.as_bytes())[..32])
    } else if name.ends_with("Status") {
        "received".to_owned()
    } else {
        id.to_owned()
    }
}

/// The test event for `spec`, delivery `id`, sent at `now_ms`, signed with `secret` (or, for a
/// family whose private key only the provider holds, unsigned: [`sign::Signing`]).
pub fn event(spec: &SourceSpec, secret: &str, id: &str, now_ms: i64) -> anyhow::Result<Event> {
    let mut payload = if let KeySpec::Form(names) = &spec.key {
        Payload::Form(
            names
                .iter()
                .map(|name| (name.clone(), form_value(name, id)))
                .collect(),
        )
    } else {
        let mut doc = json!({
            "type": "inbox.smoke",
            "id": id,
            "smoke": true,
            "sent_at_ms": now_ms,
        });
        if let KeySpec::Json(pointers) = &spec.key {
            for pointer in pointers {
                set_pointer(&mut doc, pointer, Value::String(id.to_owned()))?;
            }
        }
        if let GroupSpec::Json(pointers) = &spec.group {
            for pointer in pointers {
                if doc.pointer(pointer).is_none() {
                    set_pointer(&mut doc, pointer, Value::String("smoke".to_owned()))?;
                }
            }
        }
        Payload::Json(doc)
    };
    let ctx = sign::Context {
        id,
        now_ms,
        public_url: spec.public_url.as_deref(),
    };
    let mut headers = sign::sign(&spec.scheme, secret, ctx, &mut payload)
        .with_context(|| format!("signing for source {}", spec.name))?;
    if let KeySpec::Header(name) = &spec.key {
        if !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name.as_str()))
        {
            headers.push((name.as_str().to_owned(), id.to_owned()));
        }
    }
    headers.push(("Content-Type".to_owned(), payload.content_type().to_owned()));
    Ok(Event {
        id: id.to_owned(),
        headers,
        body: payload.bytes(),
    })
}

/// Whether an unsigned event sent to a source whose family only the provider can sign was
/// refused as the receiver documents it: 401 `invalid_signature`. `Err` says what is wrong.
pub fn check_refused(first: &Answer) -> Result<(), String> {
    if first.status == 401 && first.body.contains("\"invalid_signature\"") {
        Ok(())
    } else {
        Err(format!(
            "an unsigned event was answered {}, not 401 invalid_signature: {}",
            first.status, first.body
        ))
    }
}

/// Whether the two answers are an accepted event and its replay (for an `at_most_once`
/// source, which keeps no ledger: two acceptances). `Err` says what is wrong.
pub fn check(delivery: Delivery, first: &Answer, second: &Answer) -> Result<(), String> {
    if !(200..300).contains(&first.status) {
        return Err(format!(
            "the event was answered {}, not 2xx: {}",
            first.status, first.body
        ));
    }
    if first.replayed {
        return Err("the first delivery was already a replay (a key sent before?)".to_owned());
    }
    if second.status != first.status {
        return Err(format!(
            "the duplicate was answered {}, not {}: {}",
            second.status, first.status, second.body
        ));
    }
    match delivery {
        Delivery::EffectivelyOnce if !second.replayed => {
            Err("the duplicate was not replayed (no Idempotent-Replayed: true)".to_owned())
        }
        Delivery::EffectivelyOnce if second.body != first.body => Err(format!(
            "the duplicate's answer {} differs from the first's {}",
            second.body, first.body
        )),
        _ => Ok(()),
    }
}

async fn send(client: &reqwest::Client, url: &str, event: &Event) -> anyhow::Result<Answer> {
    let mut request = client.post(url).body(event.body.clone());
    for (name, value) in &event.headers {
        request = request.header(name, value);
    }
    let response = request
        .send()
        .await
        .with_context(|| format!("POST {url}"))?;
    let status = response.status().as_u16();
    let replayed = response
        .headers()
        .get(REPLAYED_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let body = response.text().await.unwrap_or_default();
    Ok(Answer {
        status,
        replayed,
        body,
    })
}

/// The spec of `name`, read as the receiver reads it, and where the sources came from.
fn source_spec(
    args: &SmokeArgs,
    env_sources: Option<String>,
    stack: impl FnOnce() -> anyhow::Result<StackResources>,
) -> anyhow::Result<(SourceSpec, String)> {
    let (origin, text) = sources_text(args.sources_file.as_deref(), env_sources, stack)?;
    let specs = SourceSpecs::parse(&text).map_err(|e| anyhow!("{e} (sources from {origin})"))?;
    let spec = specs.get(&args.source).cloned().ok_or_else(|| {
        let names: Vec<_> = specs.iter().map(|s| s.name.as_str()).collect();
        anyhow!(
            "no source {:?} in {origin} (it has {})",
            args.source,
            names.join(", ")
        )
    })?;
    Ok((spec, origin))
}

/// Prints and judges the answer to an unsigned event for a source smoke cannot sign for.
fn report_refusal(why: &str, first: &Answer) -> ExitCode {
    println!(
        "  unsigned:  {} {}",
        first.status,
        crate::text::shown(&first.body)
    );
    match check_refused(first) {
        Ok(()) => {
            println!(
                "ok: refused unsigned, as it must be; {why}, so send a test event from the provider's dashboard to see one accepted"
            );
            ExitCode::SUCCESS
        }
        Err(problem) => {
            println!("FAILED: {}", crate::text::shown(&problem));
            ExitCode::FAILURE
        }
    }
}

/// The test event, and why it goes unsigned where smoke cannot sign for the source: a source
/// with no secret of its own (Asana's, established by its handshake and kept by the receiver),
/// or a family only the provider signs (its private key).
fn signed_or_not(
    spec: &SourceSpec,
    secret: &str,
    id: &str,
    now_ms: i64,
) -> anyhow::Result<(Event, Option<String>)> {
    if spec.secrets.is_empty() && spec.scheme != Scheme::None {
        let unsigned = SourceSpec {
            scheme: Scheme::None,
            ..spec.clone()
        };
        let why = "the source's secret is established by its provider's handshake and kept by the receiver";
        return Ok((event(&unsigned, "", id, now_ms)?, Some(why.to_owned())));
    }
    let why = (Signing::of(&spec.scheme) == Signing::ProviderOnly).then(|| {
        format!(
            "only the provider holds the {} private key",
            sign::family_name(&spec.scheme)
        )
    });
    Ok((event(spec, secret, id, now_ms)?, why))
}

/// Sends the event and its duplicate and checks the answers; prints what happened.
pub async fn run(args: &SmokeArgs, env_sources: Option<String>) -> anyhow::Result<ExitCode> {
    let sdk = crate::aws::config().await;
    // The stack, read once where a flag or variable leaves something to it.
    let sources_given =
        args.sources_file.is_some() || env_sources.as_deref().is_some_and(|t| !t.trim().is_empty());
    let stack = match (sources_given, args.url.as_deref()) {
        (true, Some(url)) if !url.is_empty() => None,
        _ => Some(crate::stack::resolve(&sdk, &args.stack).await),
    };
    let (spec, origin) = source_spec(args, env_sources, || match &stack {
        Some(Ok(resources)) => Ok(resources.clone()),
        Some(Err(e)) => Err(anyhow!("{e:#}")),
        None => Err(anyhow!("stack {} not read", args.stack)),
    })?;
    let secret = match spec.secrets.first() {
        None => String::new(),
        Some(reference) => AwsSecretResolver::new(&sdk)
            .resolve(reference)
            .await
            .map_err(|e| anyhow!("source {}: {e}", spec.name))?,
    };
    let now_ms = jiff::Timestamp::now().as_millisecond();
    let id = format!("smoke-{now_ms}-{}", std::process::id());
    let (event, unsigned) = signed_or_not(&spec, &secret, &id, now_ms)?;
    let given = match (args.url.as_deref().filter(|u| !u.is_empty()), &stack) {
        (Some(url), _) => url.to_owned(),
        (None, Some(Ok(resources))) => resources
            .need(&resources.webhook_url, crate::stack::WEBHOOK_URL_OUTPUT)?
            .to_owned(),
        (None, Some(Err(e))) => bail!("{e:#}"),
        (None, None) => bail!("no --url and stack {} not read", args.stack),
    };
    let url = endpoint(&given, &spec.name);
    if !url.starts_with("https://") && !url.starts_with("http://") {
        bail!("--url {url} is not an http(s) URL");
    }
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(args.timeout))
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("inbox-ops-smoke/", env!("CARGO_PKG_VERSION")))
        .build()?;
    println!(
        "smoke: POST {url} as source {} ({}, family {}, key {}; sources from {origin}), delivery {id}",
        spec.name,
        spec.scheme.name(),
        sign::family_name(&spec.scheme),
        spec.key.describe()
    );
    let first = send(&client, &url, &event).await?;
    if let Some(why) = unsigned {
        return Ok(report_refusal(&why, &first));
    }
    let second = send(&client, &url, &event).await?;
    println!(
        "  duplicate: {}{} {}",
        second.status,
        if second.replayed {
            " (Idempotent-Replayed: true)"
        } else {
            ""
        },
        crate::text::shown(&second.body)
    );
    match check(spec.delivery, &first, &second) {
        Ok(()) => {
            println!("ok: accepted once, the duplicate answered from the ledger");
            Ok(ExitCode::SUCCESS)
        }
        Err(problem) => {
            println!("FAILED: {}", crate::text::shown(&problem));
            Ok(ExitCode::FAILURE)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCES: &str = r#"{
      "orders": {"signature": {"scheme": "hmac-sha256", "secrets": ["env:X"], "header": "X-Signature", "encoding": "hex"},
                 "key": {"from": "json", "pointers": ["/type", "/order/id"]},
                 "group": {"from": "json", "pointers": ["/customer/id"]}},
      "acme":   {"signature": {"scheme": "standard-webhooks", "secrets": ["env:Y"]},
                 "key": {"from": "header", "name": "webhook-id"}},
      "github": {"signature": {"scheme": "github", "secrets": ["env:X"]},
                 "key": {"from": "header", "name": "X-GitHub-Delivery"}}
    }"#;

    fn spec(name: &str) -> SourceSpec {
        SourceSpecs::parse(SOURCES)
            .unwrap()
            .get(name)
            .unwrap()
            .clone()
    }

    #[test]
    fn the_event_fits_the_sources_key_and_group() {
        let e = event(&spec("orders"), "s", "smoke-1", 1_700_000_000_000).unwrap();
        let body: Value = serde_json::from_slice(&e.body).unwrap();
        assert_eq!(body["type"], "smoke-1");
        assert_eq!(body["order"]["id"], "smoke-1");
        assert_eq!(body["customer"]["id"], "smoke");
        assert!(e
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("X-Signature")));

        let e = event(&spec("github"), "s", "smoke-2", 0).unwrap();
        assert!(e
            .headers
            .iter()
            .any(|(n, v)| n.eq_ignore_ascii_case("X-GitHub-Delivery") && v == "smoke-2"));

        let e = event(&spec("acme"), "whsec_c2VjcmV0", "smoke-3", 0).unwrap();
        let ids: Vec<_> = e
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("webhook-id"))
            .collect();
        assert_eq!(ids.len(), 1, "the key header is the signed webhook-id");
    }

    #[test]
    fn the_answers_must_be_an_acceptance_and_its_replay() {
        let accepted = Answer {
            status: 200,
            replayed: false,
            body: r#"{"key":"k","status":"accepted"}"#.into(),
        };
        let replayed = Answer {
            replayed: true,
            ..accepted.clone()
        };
        let once = Delivery::EffectivelyOnce;
        assert_eq!(check(once, &accepted, &replayed), Ok(()));
        let said = |first: &Answer, second: &Answer| check(once, first, second).unwrap_err();
        assert_eq!(
            said(&accepted, &accepted),
            "the duplicate was not replayed (no Idempotent-Replayed: true)"
        );
        assert_eq!(
            said(&replayed, &replayed),
            "the first delivery was already a replay (a key sent before?)"
        );
        let refused = Answer {
            status: 401,
            replayed: false,
            body: "{}".into(),
        };
        assert_eq!(
            said(&refused, &replayed),
            "the event was answered 401, not 2xx: {}"
        );
        assert_eq!(
            said(&accepted, &refused),
            "the duplicate was answered 401, not 200: {}"
        );
        let other = Answer {
            body: "{}".into(),
            ..replayed.clone()
        };
        assert_eq!(
            said(&accepted, &other),
            r#"the duplicate's answer {} differs from the first's {"key":"k","status":"accepted"}"#
        );
        assert_eq!(check(Delivery::AtMostOnce, &accepted, &accepted), Ok(()));
    }

    #[test]
    fn the_command_line_takes_a_url_and_a_source() {
        use clap::Parser as _;

        use crate::cli::{Cli, Command};

        let parse = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("inbox-ops").chain(args.iter().copied()))
                .map(|cli| cli.command)
        };
        assert_eq!(
            parse(&[
                "smoke",
                "--url",
                "https://x/webhooks/{source}",
                "--source",
                "github",
                "--sources",
                "s.json"
            ])
            .unwrap(),
            Some(Command::Smoke(SmokeArgs {
                url: Some("https://x/webhooks/{source}".into()),
                stack: crate::stack::DEFAULT_STACK.into(),
                source: "github".into(),
                sources_file: Some("s.json".into()),
                timeout: 30,
            }))
        );
        let kind = |args: &[&str]| parse(args).map(|_| ()).unwrap_err().kind();
        assert_eq!(
            kind(&["smoke", "--url", "https://x", "--source", ""]),
            clap::error::ErrorKind::InvalidValue
        );
        assert_eq!(
            kind(&["smoke", "--source", "github", "--url"]),
            clap::error::ErrorKind::InvalidValue
        );
    }

    #[test]
    fn the_sources_are_the_flags_else_the_deployed_stacks() {
        let stack = || {
            Ok(StackResources {
                name: "prod".into(),
                sources_json: Some(SOURCES.into()),
                ..StackResources::default()
            })
        };
        let (origin, text) = sources_text(None, None, stack).unwrap();
        assert_eq!(origin, "the WebhookSources parameter of stack prod");
        assert_eq!(text, SOURCES);
        // The variable wins, and the stack is not needed then.
        let unread = || -> anyhow::Result<StackResources> { panic!("the stack was read") };
        let (origin, text) = sources_text(None, Some("{}".into()), unread).unwrap();
        assert_eq!((origin.as_str(), text.as_str()), ("$WEBHOOK_SOURCES", "{}"));
        // A stack that cannot be read, or that holds no sources: said, never the template's.
        let e = sources_text(None, Some(" ".into()), || {
            Err(anyhow!("DescribeStacks prod: denied"))
        })
        .unwrap_err();
        let said = format!("{e:#}");
        assert!(
            said.contains("no --sources FILE, no WEBHOOK_SOURCES") && said.contains("denied"),
            "{said}"
        );
        let e = sources_text(None, None, || {
            Ok(StackResources {
                name: "bare".into(),
                ..StackResources::default()
            })
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "stack bare has no WebhookSources parameter; give --sources FILE"
        );
    }

    #[test]
    fn the_url_takes_the_source() {
        assert_eq!(
            endpoint("https://a.example/webhooks/{source}", "github"),
            "https://a.example/webhooks/github"
        );
        assert_eq!(endpoint("http://h/webhooks/x", "y"), "http://h/webhooks/x");
    }
}
