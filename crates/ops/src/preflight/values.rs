//! The checks on the parameter values themselves, before anything is asked of AWS: the
//! placeholders samconfig.toml and the docs ship with, `ForwardUrl`'s scheme and host, and the
//! stack's name.

use super::parameters::Parameters;
use super::report::Report;

/// The parameter the consumer forwards to.
pub const FORWARD_URL: &str = "ForwardUrl";

/// Words that stand for a value to fill in, as ARN segments (`...:REGION:ACCOUNT_ID:...`) or
/// on their own. Upper case only: `region` in a URL path is no placeholder.
const PLACEHOLDER_WORDS: &[&str] = &["REGION", "ACCOUNT_ID", "ACCOUNT"];

/// The domains reserved for documentation (RFC 2606); their subdomains too.
const EXAMPLE_DOMAINS: &[&str] = &["example.com", "example.org", "example.net"];

/// The invalid secret the docs show (`--secret-string 'whsec_…'`), and its ASCII spelling.
const WHSEC_PLACEHOLDERS: &[&str] = &["whsec_\u{2026}", "whsec_..."];

/// What `value` holds that stands for something to fill in, each said as a phrase
/// ("the placeholder REGION", ...), in a fixed order, each once.
pub fn placeholders(value: &str) -> Vec<String> {
    let mut found = Vec::new();
    for word in value.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        if PLACEHOLDER_WORDS.contains(&word) {
            found.push(format!("the placeholder {word}"));
        }
    }
    for host in example_hosts(value) {
        found.push(format!("the host {host} (a domain reserved for examples)"));
    }
    let lower = value.to_ascii_lowercase();
    if lower.contains("replace-me") || lower.contains("replace_me") {
        found.push("the placeholder replace-me".to_owned());
    }
    if let Some(whsec) = WHSEC_PLACEHOLDERS.iter().find(|p| value.contains(**p)) {
        found.push(format!("the docs' placeholder secret {whsec}"));
    } else if value.contains('\u{2026}') {
        found.push("an ellipsis (\u{2026}) copied from the docs".to_owned());
    }
    let mut unique = Vec::new();
    for phrase in found {
        if !unique.contains(&phrase) {
            unique.push(phrase);
        }
    }
    unique
}

/// Whether a secret's value is the docs' placeholder. Says nothing else about the value.
pub fn is_placeholder_secret(value: &str) -> bool {
    WHSEC_PLACEHOLDERS.iter().any(|p| value.contains(p))
}

/// The host names in `value` (in a URL, an e-mail address, or bare) under a reserved example
/// domain, lower-cased.
fn example_hosts(value: &str) -> Vec<String> {
    value
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-'))
        .map(|token| token.trim_end_matches('.').to_ascii_lowercase())
        .filter(|host| {
            EXAMPLE_DOMAINS
                .iter()
                .any(|domain| host == domain || host.ends_with(&format!(".{domain}")))
        })
        .collect()
}

/// Every parameter's placeholders, each a problem named after the parameter.
pub fn check_placeholders(parameters: &Parameters, report: &mut Report) {
    let before = report.problem_count();
    for (name, value) in parameters.iter() {
        for phrase in placeholders(value) {
            let consequence = if name == FORWARD_URL && phrase.starts_with("the host") {
                ": the consumer would post every accepted body there"
            } else {
                ": replace it before deploying"
            };
            report.refuse(name, format!("holds {phrase}{consequence}"));
        }
    }
    if report.problem_count() == before {
        report.pass(format!(
            "{} parameter values hold no placeholder (REGION, ACCOUNT_ID, ACCOUNT, example.com/.org/.net, replace-me, whsec_\u{2026})",
            parameters.len()
        ));
    }
}

/// `ForwardUrl`'s host, or why it is no target: the consumer forwards every accepted body
/// there, over https only (the template's AllowedPattern says so too).
pub fn forward_host(url: &str) -> Result<String, String> {
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| format!("{url:?} is not an https:// URL: the consumer forwards each body there, and only over TLS"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    let host = if let Some(bracketed) = host_port.strip_prefix('[') {
        bracketed.split(']').next().unwrap_or_default()
    } else {
        host_port.split(':').next().unwrap_or_default()
    };
    if host.is_empty() {
        return Err(format!("{url:?} has no host"));
    }
    Ok(host.to_ascii_lowercase())
}

/// `ForwardUrl` is there, https, with a host (a placeholder host is [`check_placeholders`]'s).
pub fn check_forward_url(parameters: &Parameters, report: &mut Report) {
    // A missing value is already refused as a parameter with no value.
    let Some(url) = parameters.get(FORWARD_URL) else {
        return;
    };
    if url.trim().is_empty() {
        report.refuse(
            FORWARD_URL,
            "empty: the consumer needs the system of record's https:// URL",
        );
        return;
    }
    match forward_host(url) {
        Ok(host) if example_hosts(&host).is_empty() => {
            report.pass(format!("{FORWARD_URL} is https, host {host}"));
        }
        Ok(_) => {}
        Err(why) => report.refuse(FORWARD_URL, why),
    }
}

/// A CloudFormation stack name: a letter, then letters, digits and hyphens, 128 at most.
pub fn check_stack_name(stack: &str, report: &mut Report) {
    let mut chars = stack.chars();
    let valid = stack.len() <= 128
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-');
    if !valid {
        report.refuse(
            "stack name",
            format!("{stack:?} is not a CloudFormation stack name (a letter, then letters, digits and hyphens)"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_shipped_placeholders() {
        let arn = "arn:aws:secretsmanager:REGION:ACCOUNT_ID:secret:webhook-inbox/stripe-??????";
        assert_eq!(
            placeholders(arn),
            ["the placeholder REGION", "the placeholder ACCOUNT_ID"]
        );
        assert_eq!(
            placeholders("arn:aws:sns:REGION:ACCOUNT:topic"),
            ["the placeholder REGION", "the placeholder ACCOUNT"]
        );
        assert_eq!(
            placeholders("https://example.com/replace-me"),
            [
                "the host example.com (a domain reserved for examples)",
                "the placeholder replace-me"
            ]
        );
        assert_eq!(
            placeholders("you@Mail.Example.ORG"),
            ["the host mail.example.org (a domain reserved for examples)"]
        );
        assert_eq!(
            placeholders("whsec_\u{2026}"),
            ["the docs' placeholder secret whsec_\u{2026}"]
        );
        assert_eq!(
            placeholders("arn:aws:secretsmanager:\u{2026}:secret:x"),
            ["an ellipsis (\u{2026}) copied from the docs"]
        );
    }

    #[test]
    fn real_values_hold_none() {
        for value in [
            "arn:aws:secretsmanager:eu-west-1:123456789012:secret:webhook-inbox/stripe-??????",
            "https://records.example-corp.com/region/account",
            "https://notexample.com/hooks",
            r#"{"github": {"signature": {"scheme": "github", "secrets": ["secretsmanager:webhook-inbox/github"]}, "key": {"from": "header", "name": "X-Account-Delivery"}}}"#,
            "INFO",
            "",
        ] {
            assert!(
                placeholders(value).is_empty(),
                "{value}: {:?}",
                placeholders(value)
            );
        }
        assert!(is_placeholder_secret("whsec_\u{2026}"));
        assert!(!is_placeholder_secret(
            "whsec_MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0"
        ));
    }

    #[test]
    fn forward_url_hosts() {
        assert_eq!(
            forward_host("https://Records.Acme.io/hooks?x=1").as_deref(),
            Ok("records.acme.io")
        );
        assert_eq!(forward_host("https://u:p@h.io:8443").as_deref(), Ok("h.io"));
        assert_eq!(forward_host("https://[::1]:443/x").as_deref(), Ok("::1"));
        assert!(forward_host("http://records.acme.io").is_err());
        assert!(forward_host("https:///path").is_err());
        assert!(forward_host("records.acme.io").is_err());
    }

    #[test]
    fn stack_names() {
        for (name, ok) in [
            ("webhook-inbox", true),
            ("a1", true),
            ("1a", false),
            ("a_b", false),
            ("a/b", false),
            ("", false),
        ] {
            let mut report = Report::default();
            check_stack_name(name, &mut report);
            assert_eq!(report.is_ready(), ok, "{name}");
        }
    }
}
