//! Which secrets the receiver's role may read (`secretsmanager:GetSecretValue` in
//! template.yaml): the resources listed in `SecretArns`, matched as IAM matches a policy's
//! `Resource` (each colon-separated segment on its own, `*` any run of characters, `?` one
//! character, a `*` ending a segment free to run on over colons), or, when `SecretArns` is
//! empty, the stack's own secrets: those named `<stack>/...` in the deploying region.

/// The secrets the receiver may read, as the deploy would grant them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// `SecretArns`' entries (IAM resource patterns).
    Listed(Vec<String>),
    /// `SecretArns` empty: `arn:<partition>:secretsmanager:<region>:<account>:secret:<stack>/*`.
    StackSecrets { stack: String, region: String },
}

impl Access {
    /// From `SecretArns`' value (a CommaDelimitedList: entries trimmed, empty ones dropped).
    pub fn new(secret_arns: &str, stack: &str, region: &str) -> Access {
        let entries: Vec<String> = secret_arns
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(str::to_owned)
            .collect();
        if entries.is_empty() {
            Access::StackSecrets {
                stack: stack.to_owned(),
                region: region.to_owned(),
            }
        } else {
            Access::Listed(entries)
        }
    }

    /// The listed entries that no IAM policy would take as a resource: neither `*` nor an ARN
    /// (`arn:` and six colon-separated parts).
    pub fn malformed(&self) -> Vec<&str> {
        match self {
            Access::Listed(entries) => entries
                .iter()
                .filter(|e| *e != "*" && !(e.starts_with("arn:") && e.split(':').count() >= 6))
                .map(String::as_str)
                .collect(),
            Access::StackSecrets { .. } => Vec::new(),
        }
    }

    /// What grants reading `arn` (a secret's full ARN), if anything: the matching entry, or
    /// the stack's rule.
    pub fn grant(&self, arn: &str) -> Option<String> {
        match self {
            Access::Listed(entries) => entries
                .iter()
                .find(|pattern| arn_matches(pattern, arn))
                .map(|pattern| format!("SecretArns entry {pattern}")),
            Access::StackSecrets { stack, region } => {
                arn_matches(&self.stack_pattern(stack, region), arn)
                    .then(|| format!("the stack's own secrets, {stack}/* in {region}"))
            }
        }
    }

    /// The parameter a refusal names, and what the receiver may read instead.
    pub fn describe(&self) -> String {
        match self {
            Access::Listed(entries) => format!("not matched by any SecretArns entry ({})", entries.join(", ")),
            Access::StackSecrets { stack, region } => format!(
                "SecretArns is empty, so the receiver may read only the secrets named {stack}/* in {region}; list this one in SecretArns or name it {stack}/..."
            ),
        }
    }

    fn stack_pattern(&self, stack: &str, region: &str) -> String {
        format!("arn:*:secretsmanager:{region}:*:secret:{stack}/*")
    }
}

/// Whether the IAM resource `pattern` matches `arn` (case-sensitive).
pub fn arn_matches(pattern: &str, arn: &str) -> bool {
    let pattern: Vec<&str> = pattern.split(':').collect();
    let arn: Vec<&str> = arn.split(':').collect();
    segments_match(&pattern, &arn)
}

/// Segment by segment; a pattern segment ending in `*` may also take several ARN segments.
fn segments_match(pattern: &[&str], arn: &[&str]) -> bool {
    let Some((first, rest)) = pattern.split_first() else {
        return arn.is_empty();
    };
    if arn.is_empty() {
        return false;
    }
    let widest = if first.ends_with('*') { arn.len() } else { 1 };
    (1..=widest)
        .any(|taken| glob(first, &arn[..taken].join(":")) && segments_match(rest, &arn[taken..]))
}

/// `*` any run of characters (none too), `?` exactly one, anything else itself.
fn glob(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    // Where the last `*` was, and the text position it has taken up to.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRIPE: &str =
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:webhook-inbox/stripe-AbCdEf";

    #[test]
    fn wildcards_as_iam_matches_them() {
        for pattern in [
            STRIPE,
            "arn:aws:secretsmanager:eu-west-1:123456789012:secret:webhook-inbox/stripe-??????",
            "arn:aws:secretsmanager:eu-west-1:123456789012:secret:webhook-inbox/*",
            "arn:aws:secretsmanager:*:*:secret:*",
            "arn:aws:secretsmanager:eu-*-1:123456789012:secret:webhook-inbox/stripe-*",
            "arn:aws:secretsmanager:eu-west-1:*",
            "*",
        ] {
            assert!(arn_matches(pattern, STRIPE), "{pattern}");
        }
        for pattern in [
            "arn:aws:secretsmanager:eu-west-1:123456789012:secret:webhook-inbox/stripe-?????",
            "arn:aws:secretsmanager:eu-west-1:123456789012:secret:webhook-inbox/stripe",
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:webhook-inbox/*",
            "arn:aws:secretsmanager:eu-west-1:210987654321:secret:webhook-inbox/*",
            "arn:aws:secretsmanager:eu-west-1:123456789012:secret:Webhook-inbox/*",
            "arn:aws:secretsmanager:REGION:ACCOUNT_ID:secret:webhook-inbox/stripe-??????",
            // `?` and a mid-segment `*` stay inside their segment.
            "arn:aws:secretsmanager:eu-west-1:123456789012?secret:webhook-inbox/stripe-AbCdEf",
            "arn:aws:secretsmanager:eu*1:secret:webhook-inbox/stripe-AbCdEf",
        ] {
            assert!(!arn_matches(pattern, STRIPE), "{pattern}");
        }
    }

    #[test]
    fn glob_basics() {
        assert!(glob("a*b?d", "aXXbcd"));
        assert!(glob("*", ""));
        assert!(glob("a**", "a"));
        assert!(!glob("a?", "a"));
        assert!(!glob("abc", "abd"));
    }

    #[test]
    fn listed_or_the_stacks_own() {
        let listed = Access::new(
            " arn:aws:secretsmanager:eu-west-1:123456789012:secret:webhook-inbox/stripe-??????, ,not-an-arn",
            "webhook-inbox",
            "eu-west-1",
        );
        assert!(listed.grant(STRIPE).is_some());
        assert!(listed
            .grant(
                "arn:aws:secretsmanager:eu-west-1:123456789012:secret:webhook-inbox/github-AbCdEf"
            )
            .is_none());
        assert_eq!(listed.malformed(), ["not-an-arn"]);

        let own = Access::new("", "webhook-inbox", "eu-west-1");
        assert!(own.grant(STRIPE).is_some());
        assert!(own.malformed().is_empty());
        assert!(Access::new("", "other", "eu-west-1")
            .grant(STRIPE)
            .is_none());
        assert!(Access::new("", "webhook-inbox", "us-east-1")
            .grant(STRIPE)
            .is_none());
        assert!(
            Access::new("", "webhook", "eu-west-1")
                .grant(STRIPE)
                .is_none(),
            "webhook/ is not webhook-inbox/"
        );
    }
}
