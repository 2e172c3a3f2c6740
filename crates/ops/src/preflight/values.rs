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

/// The top-level names reserved for testing, examples and invalid or local names (RFC 2606,
/// RFC 6761), with the RFC that reserves each: no URL under one reaches a system of record.
const RESERVED_TLDS: &[(&str, &str)] = &[
    ("example", "RFC 2606"),
    ("test", "RFC 2606"),
    ("invalid", "RFC 2606"),
    ("localhost", "RFC 6761"),
];

/// Whether `host` is a reserved placeholder name, and the RFC that reserves it: under a
/// reserved top-level name (`.example`, `.test`, `.invalid`, `.localhost`, or the name
/// itself), or `example.com`/`.net`/`.org` or a subdomain of one. Case and a trailing dot are
/// ignored; `api.example-corp.com` and `examples.io` are ordinary hosts.
pub fn reserved_host(host: &str) -> Option<&'static str> {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let tld = host.rsplit('.').next().unwrap_or_default();
    if let Some((_, rfc)) = RESERVED_TLDS.iter().find(|(name, _)| *name == tld) {
        return Some(rfc);
    }
    EXAMPLE_DOMAINS
        .iter()
        .any(|domain| host == *domain || host.ends_with(&format!(".{domain}")))
        .then_some("RFC 2606")
}

/// The `https://` URLs in `value` (a bare URL, or inside JSON such as `Destinations`), each
/// whose host is a reserved placeholder name, with its host and the RFC: (url, host, rfc).
pub fn reserved_urls(value: &str) -> Vec<(String, String, &'static str)> {
    let mut found = Vec::new();
    let lower = value.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find("https://") {
        let start = from + at;
        let end = value[start..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '}' | ']' | '>'))
            .map_or(value.len(), |n| start + n);
        let url = &value[start..end];
        // `https://` itself is matched case-insensitively; forward_host wants it lower-case.
        let normalized = format!("https://{}", &url["https://".len()..]);
        if let Ok(host) = forward_host(&normalized) {
            if let Some(rfc) = reserved_host(&host) {
                found.push((url.to_owned(), host, rfc));
            }
        }
        from = end.max(start + "https://".len());
    }
    found
}

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
    for host in example_hosts(&without_https_urls(value)) {
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

/// `value` with its `https://` URLs blanked out: their hosts are [`reserved_urls`]'.
fn without_https_urls(value: &str) -> String {
    let mut out = value.to_owned();
    for (url, _, _) in reserved_urls(value) {
        out = out.replace(&url, " ");
    }
    out
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
        for (url, host, rfc) in reserved_urls(value) {
            let fix = if name == FORWARD_URL {
                "set your system of record's URL (the consumer would post every accepted body there, and every event would be retried and dead-lettered)"
            } else {
                "set the real destination's URL before deploying"
            };
            report.refuse(
                name,
                format!("{url}: its host {host} is a reserved placeholder name ({rfc}): {fix}"),
            );
        }
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
            "{} parameter values hold no placeholder (REGION, ACCOUNT_ID, ACCOUNT, example.com/.org/.net, .example/.test/.invalid/.localhost, replace-me, whsec_\u{2026})",
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

/// `ForwardUrl` is there (empty: none), https, with a host (a reserved placeholder host is
/// [`check_placeholders`]').
pub fn check_forward_url(parameters: &Parameters, report: &mut Report) {
    // A missing value is already refused as a parameter with no value.
    let Some(url) = parameters.get(FORWARD_URL) else {
        return;
    };
    // Empty: no default destination; whether every event still goes somewhere is
    // `destinations::check_coverage`'s.
    if url.trim().is_empty() {
        return;
    }
    match forward_host(url) {
        Ok(host) if reserved_host(&host).is_none() => {
            report.pass(format!("{FORWARD_URL} is https, host {host}"));
        }
        Ok(_) => {}
        Err(why) => report.refuse(FORWARD_URL, why),
    }
}

/// Services whose ARNs have an empty region field by design (global resources).
const GLOBAL_SERVICES: &[&str] = &["iam", "s3", "cloudfront", "route53", "sts"];

/// The entries of an ARN list parameter (`*Arns`, a CommaDelimitedList, or one `*Arn`) whose
/// region field is empty (`arn:aws:sqs::123456789012:q`) for a regional service: an IAM
/// resource that matches nothing, as `sed s/REGION/$AWS_REGION/` writes with `AWS_REGION`
/// unset. Each a problem naming the parameter and the entry.
pub fn check_arn_regions(parameters: &Parameters, report: &mut Report) {
    for (name, value) in parameters.iter() {
        if !(name.ends_with("Arns") || name.ends_with("Arn")) {
            continue;
        }
        for entry in value.split(',').map(str::trim) {
            if let Some(service) = empty_region_service(entry) {
                report.refuse(
                    name,
                    format!("{entry} has an empty region field (arn:partition:{service}:REGION:account:…): IAM would match no {service} resource; was it written from an unset $AWS_REGION? Give the region"),
                );
            }
        }
    }
}

/// The service of `arn` when its region field is empty and the service is regional.
fn empty_region_service(arn: &str) -> Option<&str> {
    let mut fields = arn.strip_prefix("arn:")?.splitn(5, ':');
    let _partition = fields.next()?;
    let service = fields.next()?;
    let region = fields.next()?;
    // Needs the account and resource fields after it: otherwise not an ARN (malformed's).
    fields.next()?;
    (region.is_empty() && !GLOBAL_SERVICES.contains(&service)).then_some(service)
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
        // The URL's host is reserved_urls' (one problem, not two).
        assert_eq!(
            placeholders("https://example.com/replace-me"),
            ["the placeholder replace-me"]
        );
        assert_eq!(
            placeholders("http://example.com/x"),
            ["the host example.com (a domain reserved for examples)"]
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
        let not_https = |url: &str| {
            Err(format!(
                "{url:?} is not an https:// URL: the consumer forwards each body there, and only over TLS"
            ))
        };
        assert_eq!(
            forward_host("http://records.acme.io"),
            not_https("http://records.acme.io")
        );
        assert_eq!(
            forward_host("https:///path"),
            Err(r#""https:///path" has no host"#.to_owned())
        );
        assert_eq!(
            forward_host("records.acme.io"),
            not_https("records.acme.io")
        );
    }

    #[test]
    fn reserved_placeholder_hosts_are_refused() {
        for (host, rfc) in [
            ("your-system-of-record.example", "RFC 2606"),
            ("example", "RFC 2606"),
            ("records.test", "RFC 2606"),
            ("a.b.TEST.", "RFC 2606"),
            ("nowhere.invalid", "RFC 2606"),
            ("localhost", "RFC 6761"),
            ("api.localhost", "RFC 6761"),
            ("example.com", "RFC 2606"),
            ("Example.NET", "RFC 2606"),
            ("example.org", "RFC 2606"),
            ("hooks.example.com", "RFC 2606"),
            ("a.b.example.org.", "RFC 2606"),
        ] {
            assert_eq!(reserved_host(host), Some(rfc), "{host}");
        }
        for host in [
            "api.example-corp.com",
            "examples.io",
            "notexample.com",
            "example.com.au",
            "example.co",
            "test.io",
            "localhost.io",
            "records.acme-corp.io",
            "invalid.example-corp.com",
            "10.0.0.1",
            "::1",
        ] {
            assert_eq!(reserved_host(host), None, "{host}");
        }
    }

    #[test]
    fn reserved_urls_in_a_value_or_in_json() {
        assert_eq!(
            reserved_urls("https://your-system-of-record.example/webhooks"),
            [(
                "https://your-system-of-record.example/webhooks".to_owned(),
                "your-system-of-record.example".to_owned(),
                "RFC 2606"
            )]
        );
        let destinations = r#"{"billing": {"target": "https://billing.example/hooks", "sources": ["stripe"]}, "crm": {"target": "https://crm.acme.io/in"}, "dev": {"target": "HTTPS://Dev.Localhost:8443/x"}}"#;
        let found: Vec<_> = reserved_urls(destinations)
            .into_iter()
            .map(|(url, host, _)| (url, host))
            .collect();
        assert_eq!(
            found,
            [
                (
                    "https://billing.example/hooks".to_owned(),
                    "billing.example".to_owned()
                ),
                (
                    "HTTPS://Dev.Localhost:8443/x".to_owned(),
                    "dev.localhost".to_owned()
                ),
            ]
        );
        assert!(reserved_urls("https://api.example-corp.com/x, https://examples.io").is_empty());
        assert!(reserved_urls("arn:aws:sqs:eu-west-1:123456789012:q").is_empty());
    }

    #[test]
    fn the_readme_placeholder_forward_url_is_refused_by_name() {
        let template = stack_config::Template::load(&stack_config::template_path()).unwrap();
        let samconfig = super::super::parameters::Samconfig::parse(
            "[default.deploy.parameters]\nparameter_overrides = [\"ForwardUrl=https://your-system-of-record.example/webhooks\", \"LogLevel=INFO\"]\n",
        )
        .unwrap();
        let mut report = Report::default();
        let parameters = Parameters::resolve(&template, &samconfig, &mut report);
        assert!(report.is_ready(), "{:?}", report.problems());
        check_placeholders(&parameters, &mut report);
        check_forward_url(&parameters, &mut report);
        let text = report.problems_text("h");
        assert_eq!(
            text,
            "h\npreflight: 1 problem (fix them before sam deploy):\n  - ForwardUrl: https://your-system-of-record.example/webhooks: its host your-system-of-record.example is a reserved placeholder name (RFC 2606): set your system of record's URL (the consumer would post every accepted body there, and every event would be retried and dead-lettered)\n"
        );
        assert!(
            !report.passed().iter().any(|l| l.starts_with("ForwardUrl")),
            "{:?}",
            report.passed()
        );
    }

    fn resolved(overrides: &str) -> (Parameters, Report) {
        let template = stack_config::Template::load(&stack_config::template_path()).unwrap();
        let samconfig = super::super::parameters::Samconfig::parse(&format!(
            "[default.deploy.parameters]\nparameter_overrides = [\"ForwardUrl=https://records.acme.io/x\", {overrides}]\n"
        ))
        .unwrap();
        let mut report = Report::default();
        let parameters = Parameters::resolve(&template, &samconfig, &mut report);
        assert!(report.is_ready(), "{:?}", report.problems());
        (parameters, report)
    }

    #[test]
    fn an_arn_with_an_empty_region_is_refused_by_parameter() {
        let (parameters, mut report) = resolved(
            "\"DestinationQueueArns=arn:aws:sqs::123456789012:q,arn:aws:sqs:eu-west-1:123456789012:ok\", \"SecretArns=arn:aws:secretsmanager::123456789012:secret:webhook-inbox/*\", \"DestinationFunctionArns=arn:aws:lambda:*:123456789012:function:f\", \"AlarmTopicArn=arn:aws:sns::123456789012:alarms\"",
        );
        check_arn_regions(&parameters, &mut report);
        let lines: Vec<String> = report.problems().iter().map(ToString::to_string).collect();
        assert_eq!(lines.len(), 3, "{lines:#?}");
        assert!(
            lines[0].starts_with(
                "AlarmTopicArn: arn:aws:sns::123456789012:alarms has an empty region field"
            ),
            "{}",
            lines[0]
        );
        assert!(lines[1].starts_with("DestinationQueueArns: arn:aws:sqs::123456789012:q has an empty region field (arn:partition:sqs:REGION:account:…)"), "{}", lines[1]);
        assert!(lines[2].starts_with("SecretArns: arn:aws:secretsmanager::123456789012:secret:webhook-inbox/* has an empty region field"), "{}", lines[2]);
    }

    #[test]
    fn arns_with_a_region_or_of_a_global_service_pass() {
        for arn in [
            "arn:aws:sqs:eu-west-1:123456789012:q",
            "arn:aws:sqs:*:123456789012:q",
            "arn:aws:s3:::bucket",
            "arn:aws:iam::123456789012:role/r",
            "*",
            "",
            "arn:aws:sqs:",
        ] {
            assert_eq!(empty_region_service(arn), None, "{arn}");
        }
        assert_eq!(empty_region_service("arn:aws:sqs::1:q"), Some("sqs"));
        assert_eq!(
            empty_region_service("arn:aws-cn:events::1:event-bus/b"),
            Some("events")
        );
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
