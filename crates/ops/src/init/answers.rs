//! `init`'s answers: each from its flag, else found (the region), else asked.

use std::io::{BufRead, Write};

use anyhow::{bail, Context as _};

use super::{ask, InitArgs};
use crate::preflight::parameters::DEFAULT_STACK;

/// The presets whose secret you choose and type into the provider's form (a random one is
/// created); every other provider issues its own, stored once it shows it (`pending`).
const CHOSEN_BY_YOU: &[&str] = &[
    "auth0",
    "bitbucket",
    "figma",
    "github",
    "gitlab",
    "jira",
    "sanity",
    "telegram",
    "typeform",
    "woocommerce",
];

/// Who makes a sender's secret.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecretOrigin {
    /// You do: `init` creates a random one, you paste it into the provider's form.
    Chosen,
    /// The provider does (Stripe once the endpoint exists, Slack with the app): the source is
    /// `pending` until `inbox-ops secret set` stores it.
    Issued,
}

/// One sender: its source name (the URL's last segment), its preset, its secret's origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sender {
    pub name: String,
    pub preset: String,
    pub origin: SecretOrigin,
}

/// Everything `init` writes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answers {
    pub region: String,
    pub stack: String,
    pub senders: Vec<Sender>,
    /// `ForwardUrl`; `None`: every event goes to a destination.
    pub forward_url: Option<String>,
    pub alarm_email: Option<String>,
    /// `Destinations`, JSON; `None`: none yet.
    pub destinations: Option<String>,
}

/// The answers: each flag, else the region found, else asked on `input` (prompts on `prompt`),
/// unless `--no-input`.
#[allow(
    clippy::too_many_lines,
    reason = "one question after another, in the order they are asked"
)]
pub fn gather(
    args: &InitArgs,
    found_region: Option<String>,
    input: &mut dyn BufRead,
    prompt: &mut dyn Write,
) -> anyhow::Result<Answers> {
    let interactive = !args.no_input;
    let region = match args.region.clone().or(found_region) {
        Some(region) => region,
        None if interactive => ask(
            input,
            prompt,
            "AWS region to deploy to (none found in AWS_REGION or the AWS config), e.g. eu-west-1",
            None,
            "--region",
        )?,
        None => {
            bail!("no region found (AWS_REGION, AWS_DEFAULT_REGION, the AWS config): give --region")
        }
    };
    check_region(&region)?;
    let stack = match &args.stack {
        Some(stack) => stack.clone(),
        None if interactive => ask(input, prompt, "Stack name", Some(DEFAULT_STACK), "--stack")?,
        None => DEFAULT_STACK.to_owned(),
    };
    check_stack(&stack)?;
    let senders = if args.senders.is_empty() {
        if !interactive {
            bail!("no senders: give --senders (preset names, docs/providers.md), e.g. --senders github,stripe");
        }
        let line = ask(
            input,
            prompt,
            "Senders, by preset name, comma separated (docs/providers.md)",
            Some("github"),
            "--senders",
        )?;
        line.split(',').map(|s| s.trim().to_owned()).collect()
    } else {
        args.senders.clone()
    };
    let senders = senders_of(&senders)?;
    let forward_url = match &args.forward_url {
        Some(url) => url.clone(),
        None if interactive => ask(
            input,
            prompt,
            "Your system of record's https:// URL, where every event is POSTed (none: destinations only)",
            None,
            "--forward-url",
        )?,
        None => bail!("no system of record: give --forward-url URL (or none, with --destinations)"),
    };
    let forward_url = none_or(&forward_url);
    if let Some(url) = &forward_url {
        if !url.starts_with("https://") || url.len() <= "https://".len() {
            bail!("ForwardUrl {url:?}: an https:// URL, or none");
        }
    }
    let alarm_email = match &args.alarm_email {
        Some(email) => email.clone(),
        None if interactive => ask(
            input,
            prompt,
            "An e-mail address for the alarms (none: the alarms notify nobody)",
            Some("none"),
            "--alarm-email",
        )?,
        None => "none".to_owned(),
    };
    let alarm_email = none_or(&alarm_email);
    if let Some(email) = &alarm_email {
        if !email.contains('@') || email.contains([' ', '"', '\'']) {
            bail!("alarm e-mail {email:?} is not an address");
        }
    }
    let destinations = match &args.destinations {
        Some(d) => d.clone(),
        None if interactive => ask(
            input,
            prompt,
            "Destinations (docs/routing.md): one JSON object, or @FILE (none: later)",
            Some("none"),
            "--destinations",
        )?,
        None => "none".to_owned(),
    };
    let destinations = match none_or(&destinations) {
        Some(d) => match d.strip_prefix('@') {
            Some(path) => {
                Some(std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?)
            }
            None => Some(d),
        },
        None => None,
    };
    if forward_url.is_none() && destinations.is_none() {
        bail!("neither a system of record (--forward-url) nor destinations (--destinations): every event would go nowhere");
    }
    Ok(Answers {
        region,
        stack,
        senders,
        forward_url,
        alarm_email,
        destinations,
    })
}

/// `None` for an empty answer or `none`.
fn none_or(answer: &str) -> Option<String> {
    let answer = answer.trim();
    (!answer.is_empty() && !answer.eq_ignore_ascii_case("none")).then(|| answer.to_owned())
}

/// A region's shape: `eu-west-1`, `us-gov-west-1`.
fn check_region(region: &str) -> anyhow::Result<()> {
    let parts: Vec<&str> = region.split('-').collect();
    let fits = parts.len() >= 3
        && parts[..parts.len() - 1]
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase()))
        && parts[parts.len() - 1].bytes().all(|b| b.is_ascii_digit())
        && !parts[parts.len() - 1].is_empty();
    if !fits {
        bail!("{region:?} is not an AWS region (eu-west-1, us-east-2, …)");
    }
    Ok(())
}

/// A CloudFormation stack name: a letter, then letters, digits and `-`, at most 128.
fn check_stack(stack: &str) -> anyhow::Result<()> {
    let fits = stack.len() <= 128
        && stack.starts_with(|c: char| c.is_ascii_alphabetic())
        && stack
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if !fits {
        bail!("{stack:?} is not a stack name (a letter, then letters, digits and -, at most 128)");
    }
    Ok(())
}

/// Each named preset as a sender; an unknown name, one given twice, or a preset that needs a
/// field `init` cannot know (`public_url`, `verify_token`) is refused.
fn senders_of(names: &[String]) -> anyhow::Result<Vec<Sender>> {
    let mut senders: Vec<Sender> = Vec::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        let Some(preset) = inbox::config::presets::get(name) else {
            bail!("no preset {name:?} (docs/providers.md lists the 51; a sender of your own is declared by hand, docs/configuration.md)");
        };
        if !preset.needs.is_empty() {
            bail!(
                "preset {name:?} needs {} in its source, which init cannot know: add the source to WebhookSources by hand (docs/providers.md)",
                preset.needs.join(", ")
            );
        }
        if senders.iter().any(|s| s.name == name) {
            bail!("sender {name:?} named twice");
        }
        let origin = if CHOSEN_BY_YOU.contains(&name) {
            SecretOrigin::Chosen
        } else {
            SecretOrigin::Issued
        };
        senders.push(Sender {
            name: name.to_owned(),
            preset: name.to_owned(),
            origin,
        });
    }
    if senders.is_empty() {
        bail!("no senders: name at least one preset");
    }
    Ok(senders)
}

#[cfg(test)]
mod tests {
    use super::super::{gather_from, samconfig_text, webhook_sources, InitArgs};
    use super::*;

    fn flags() -> InitArgs {
        InitArgs {
            region: Some("eu-west-1".into()),
            stack: Some("hooks".into()),
            senders: vec!["github".into(), "stripe".into(), "slack".into()],
            forward_url: Some("https://records.acme-corp.io/webhooks".into()),
            alarm_email: Some("ops@acme-corp.io".into()),
            destinations: Some("none".into()),
            no_input: true,
            ..InitArgs::default()
        }
    }

    #[test]
    fn flags_ask_nothing_and_sort_the_senders_by_who_makes_the_secret() {
        let (answers, prompts) = gather_from(&flags(), None, "").unwrap();
        assert_eq!(prompts, "", "nothing asked");
        assert_eq!(answers.region, "eu-west-1");
        assert_eq!(answers.stack, "hooks");
        let origins: Vec<_> = answers
            .senders
            .iter()
            .map(|s| (s.name.as_str(), s.origin))
            .collect();
        assert_eq!(
            origins,
            [
                ("github", SecretOrigin::Chosen),
                ("stripe", SecretOrigin::Issued),
                ("slack", SecretOrigin::Issued)
            ]
        );
        assert_eq!(answers.destinations, None);
        let sources = webhook_sources(&answers);
        assert_eq!(
            sources["github"],
            serde_json::json!({"preset": "github", "signature": {"secrets": ["secretsmanager:hooks/github"]}})
        );
        assert_eq!(sources["stripe"]["pending"], serde_json::json!(true));
        assert_eq!(sources["github"].get("pending"), None);
    }

    #[test]
    fn a_scripted_stdin_answers_the_questions_and_the_region_found_is_never_asked() {
        let args = InitArgs::default();
        let input = "\ngithub, stripe\nhttps://records.acme-corp.io/in\n\n\n";
        let (answers, prompts) = gather_from(&args, Some("eu-central-1".into()), input).unwrap();
        assert!(!prompts.contains("region"), "{prompts}");
        assert!(
            prompts.contains("Stack name [webhook-inbox]: "),
            "{prompts}"
        );
        assert!(prompts.contains("Senders"), "{prompts}");
        assert_eq!(answers.region, "eu-central-1");
        assert_eq!(answers.stack, "webhook-inbox", "Enter keeps the default");
        assert_eq!(answers.senders.len(), 2);
        assert_eq!(
            answers.forward_url.as_deref(),
            Some("https://records.acme-corp.io/in")
        );
        assert_eq!(answers.alarm_email, None, "Enter: none");
        // No region found: asked first. `@FILE` destinations are read from the file.
        let e = gather_from(
            &args,
            None,
            "us-west-2\nhooks\ngithub\nnone\nops@acme-corp.io\n@/nonexistent/never\n",
        )
        .expect_err("no such file");
        assert!(
            format!("{e:#}").contains("reading /nonexistent/never"),
            "{e:#}"
        );
        let (answers, prompts) = gather_from(
            &args,
            None,
            "us-west-2\nhooks\ngithub\nhttps://r.acme-corp.io\nops@acme-corp.io\nnone\n",
        )
        .unwrap();
        assert!(prompts.starts_with("AWS region to deploy to"), "{prompts}");
        assert_eq!(answers.region, "us-west-2");
        assert_eq!(answers.alarm_email.as_deref(), Some("ops@acme-corp.io"));
    }

    #[test]
    fn what_init_refuses() {
        let cases: Vec<(InitArgs, &str)> = vec![
            (
                InitArgs {
                    senders: vec!["nope".into()],
                    ..flags()
                },
                "no preset \"nope\"",
            ),
            (
                InitArgs {
                    senders: vec!["twilio".into()],
                    ..flags()
                },
                "needs public_url",
            ),
            (
                InitArgs {
                    senders: vec!["github".into(), "github".into()],
                    ..flags()
                },
                "named twice",
            ),
            (
                InitArgs {
                    senders: vec![],
                    ..flags()
                },
                "no senders: give --senders",
            ),
            (
                InitArgs {
                    forward_url: Some("http://r.acme-corp.io".into()),
                    ..flags()
                },
                "an https:// URL",
            ),
            (
                InitArgs {
                    forward_url: Some("none".into()),
                    ..flags()
                },
                "every event would go nowhere",
            ),
            (
                InitArgs {
                    region: Some(String::new()),
                    ..flags()
                },
                "is not an AWS region",
            ),
            (
                InitArgs {
                    region: None,
                    ..flags()
                },
                "give --region",
            ),
            (
                InitArgs {
                    stack: Some("9lives".into()),
                    ..flags()
                },
                "is not a stack name",
            ),
            (
                InitArgs {
                    alarm_email: Some("ops".into()),
                    ..flags()
                },
                "is not an address",
            ),
        ];
        for (args, why) in cases {
            let e = gather_from(&args, None, "").expect_err(why);
            assert!(e.to_string().contains(why), "{why}: {e}");
        }
        let e = gather_from(&InitArgs::default(), Some("eu-west-1".into()), "hooks\n")
            .expect_err("stdin ends");
        assert!(e.to_string().contains("give --senders"), "{e}");
    }

    #[test]
    fn destinations_list_their_arns_in_the_parameters() {
        let args = InitArgs {
            destinations: Some(
                r#"{"bus": {"target": "arn:aws:events:eu-west-1:123456789012:event-bus/payments", "sources": ["stripe"], "event_types": ["invoice.*"]},
                    "crm": {"target": "https://crm.acme-corp.io/in", "sources": ["stripe"]}}"#
                    .into(),
            ),
            ..flags()
        };
        let (answers, _) = gather_from(&args, None, "").unwrap();
        let text = samconfig_text(&answers).unwrap();
        let read = stack_config::Samconfig::parse(&text).unwrap();
        assert_eq!(
            read.get("DestinationBusArns"),
            Some("arn:aws:events:eu-west-1:123456789012:event-bus/payments")
        );
        assert_eq!(read.get("DestinationQueueArns"), None);
        assert!(read
            .get("Destinations")
            .is_some_and(|d| d.contains("invoice.*")));
        assert_eq!(read.get("AlarmEmail"), Some("ops@acme-corp.io"));
        assert_eq!(read.region.as_deref(), Some("eu-west-1"));
        assert_eq!(read.stack_name.as_deref(), Some("hooks"));
        let bad = InitArgs {
            destinations: Some(r#"{"x": {"target": "arn:aws:s3:::bucket"}}"#.into()),
            ..flags()
        };
        let (answers, _) = gather_from(&bad, None, "").unwrap();
        let e = samconfig_text(&answers).unwrap_err();
        assert!(
            format!("{e:#}").contains("destination `x`, field `target`"),
            "{e:#}"
        );
    }
}
