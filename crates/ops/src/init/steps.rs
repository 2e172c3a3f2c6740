//! What `init` prints: what it wrote and created, then each step in the order that works
//! (deploy, the URL, then each provider: a secret you chose pasted into its form; a secret it
//! issues stored with `inbox-ops secret set` before (Slack, which checks the URL at once) or
//! after (Stripe, which shows it once the endpoint exists) the URL is pasted).

use std::fmt::Write as _;
use std::path::Path;

use super::{secret_name, Answers, SecretOrigin, SecretOutcome, Sender};
use crate::preflight::parameters::DEFAULT_STACK;

/// How the docs run the operator's CLI from a clone.
const OPS: &str = "cargo run -q -p inbox-ops --";

/// The whole text.
pub fn render(answers: &Answers, outcomes: &[(String, SecretOutcome)], config: &Path) -> String {
    let mut out = String::new();
    let r = &answers.region;
    let stack = &answers.stack;
    let _ = writeln!(
        out,
        "Wrote {}: stack {stack} in {r}, {} sender(s), ForwardUrl {}, alarms to {}{}.",
        config.display(),
        answers.senders.len(),
        answers
            .forward_url
            .as_deref()
            .unwrap_or("none (destinations only)"),
        answers.alarm_email.as_deref().unwrap_or("nobody"),
        if answers.destinations.is_some() {
            ", destinations given"
        } else {
            ""
        },
    );
    let _ = writeln!(out, "\nSecrets (Secrets Manager, {r}):");
    for (name, outcome) in outcomes {
        let secret = secret_name(stack, name);
        let what = match outcome {
            SecretOutcome::Created => "created, a random value".to_owned(),
            SecretOutcome::Kept => "exists already: kept".to_owned(),
            SecretOutcome::Pending => format!(
                "pending: the provider issues it; `{OPS} secret set {name}{}` stores it (its requests get 503 and are retried until then)",
                stack_flag(stack)
            ),
        };
        let _ = writeln!(out, "  {name:<12} {secret:<32} {what}");
    }
    let _ = writeln!(out, "\nNext, in this order:");
    let _ = writeln!(
        out,
        "1. export AWS_REGION={r}    # the commands below act in this region\n\
         2. make deploy             # preflight, sam build (the first build takes minutes), sam deploy; answer y to apply the change set"
    );
    let names: Vec<&str> = answers.senders.iter().map(|s| s.name.as_str()).collect();
    let _ = writeln!(
        out,
        "3. Each sender's URL, once the stack exists (the stack's WebhookUrl, {{source}} replaced by its name):\n   \
         WEBHOOK_URL=$(aws cloudformation describe-stacks --stack-name {stack} --query \"Stacks[0].Outputs[?OutputKey=='WebhookUrl'].OutputValue\" --output text)\n   \
         for s in {}; do echo \"$s: $(echo \"$WEBHOOK_URL\" | sed \"s/{{source}}/$s/\")\"; done",
        names.join(" ")
    );
    let _ = writeln!(out, "4. Each sender:");
    for sender in &answers.senders {
        out.push_str(&sender_steps(sender, stack));
    }
    if let Some(chosen) = answers
        .senders
        .iter()
        .find(|s| s.origin == SecretOrigin::Chosen)
    {
        let _ = writeln!(
            out,
            "5. A signed test event and its duplicate (any time): {OPS} smoke --url \"$WEBHOOK_URL\" --source {}",
            chosen.name
        );
    }
    out
}

/// ` --stack NAME` where the stack is not the default.
fn stack_flag(stack: &str) -> String {
    if stack == DEFAULT_STACK {
        String::new()
    } else {
        format!(" --stack {stack}")
    }
}

/// One sender's steps, indented.
fn sender_steps(sender: &Sender, stack: &str) -> String {
    let name = &sender.name;
    let url = format!("https://…/webhooks/{name} (step 3)");
    let secret = secret_name(stack, name);
    let read_back = format!(
        "aws secretsmanager get-secret-value --secret-id {secret} --query SecretString --output text"
    );
    let set = format!("{OPS} secret set {name}{}", stack_flag(stack));
    match (sender.preset.as_str(), sender.origin) {
        ("github", _) => format!(
            "   github: repository (or organisation) Settings > Webhooks > Add webhook: Payload URL {url},\n   \
             Content type application/json, Secret: the value of {secret} ({read_back}).\n"
        ),
        ("stripe", _) => format!(
            "   stripe: Dashboard > Workbench > Webhooks > Create new destination, in test mode first (test and\n   \
             live mode destinations are apart, each with its own secret): events on your account, the\n   \
             events to send (for invoices: invoice.paid, invoice.payment_failed, invoice.finalized, or\n   \
             invoice.*), Webhook endpoint, Endpoint URL {url}. Then on the destination,\n   \
             Signing secret > Reveal, and: {set}\n   \
             (Stripe's deliveries before that are answered 503 and retried.) Try it: stripe trigger invoice.paid\n"
        ),
        ("slack", _) => format!(
            "   slack: api.slack.com/apps > your app > Basic Information > App Credentials > Signing Secret, first:\n   \
             {set}\n   \
             then Event Subscriptions > Enable Events > Request URL {url}\n   \
             (Slack checks it at once: Verified), and Subscribe to bot events.\n"
        ),
        (preset, SecretOrigin::Chosen) => format!(
            "   {name}: register {url} with the provider (docs/providers.md, preset {preset}) and give it the\n   \
             secret in {secret} ({read_back}).\n"
        ),
        (preset, SecretOrigin::Issued) => format!(
            "   {name}: register {url} with the provider (docs/providers.md, preset {preset}), then store the\n   \
             secret it shows: {set}\n"
        ),
    }
}
