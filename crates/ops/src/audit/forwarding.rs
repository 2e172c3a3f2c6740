//! The audit of the forward to the system of record, which every source shares: whether it is
//! signed (`FORWARD_SIGNING_SECRET`, as given, else as the template sets the consumer's), and
//! when a failing event is dead-lettered (`MaxFailures` real failures; `maxReceiveCount` the
//! safety net). Unsigned is flagged `forward_unsigned`: anyone who learns `FORWARD_URL` could
//! then post to the system of record as if they were the inbox.

use inbox::config::env::parse_forward_signing_secrets;
use serde_yaml::Value;

use stack_config::Template;

/// The flag an unsigned forward raises.
pub const FORWARD_UNSIGNED: &str = "forward_unsigned";
const FORWARD_UNSIGNED_WHY: &str = "FORWARD_SIGNING_SECRET is not set: forwards carry no signature, so anyone who learns FORWARD_URL can post to the system of record as the inbox";

/// The template parameter with the consumer's MAX_FAILURES.
pub const MAX_FAILURES_PARAMETER: &str = "MaxFailures";

/// How the consumer forwards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forwarding {
    /// How many secrets sign each forward (0: unsigned).
    pub secrets: usize,
    /// Where that was read.
    pub origin: String,
    /// Real failures before the consumer dead-letters an event.
    pub max_failures: u32,
}

impl Forwarding {
    /// From `FORWARD_SIGNING_SECRET` as given (`Some`, even blank), else from the template's
    /// consumer environment; `MaxFailures` from the template's parameter default.
    pub fn new(given: Option<&str>, template: &Template) -> anyhow::Result<Forwarding> {
        let max_failures = template
            .parameter_default(MAX_FAILURES_PARAMETER)
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(inbox::consumer::DEFAULT_MAX_FAILURES);
        let (secrets, origin) = match given {
            Some(text) => (
                parse_forward_signing_secrets(text)?.len(),
                "$FORWARD_SIGNING_SECRET".to_owned(),
            ),
            None => match consumer_signing_secret(template) {
                // A literal is parsed as the consumer would; an intrinsic (the stack's own
                // generated secret) is one reference.
                Some(Value::String(text)) => (
                    parse_forward_signing_secrets(text)?.len(),
                    "the consumer's FORWARD_SIGNING_SECRET in the template".to_owned(),
                ),
                Some(_) => (
                    1,
                    "the consumer's FORWARD_SIGNING_SECRET in the template".to_owned(),
                ),
                None => (
                    0,
                    "neither $FORWARD_SIGNING_SECRET nor the template".to_owned(),
                ),
            },
        };
        Ok(Forwarding {
            secrets,
            origin,
            max_failures,
        })
    }

    /// The flag, with why, when forwards are unsigned.
    pub fn flag(&self) -> Option<(&'static str, &'static str)> {
        (self.secrets == 0).then_some((FORWARD_UNSIGNED, FORWARD_UNSIGNED_WHY))
    }

    /// One line for the table.
    pub fn describe(&self) -> String {
        let signed = match self.secrets {
            0 => "UNSIGNED".to_owned(),
            1 => "signed (Standard Webhooks, 1 secret)".to_owned(),
            n => format!("signed (Standard Webhooks, {n} secrets: a rotation)"),
        };
        format!(
            "{signed}, from {}; redirects are not followed; a 429 or 503 waits for its Retry-After",
            self.origin
        )
    }
}

/// The consumer's `FORWARD_SIGNING_SECRET` in the template (the function built from the
/// `consumer` binary), as written.
fn consumer_signing_secret(template: &Template) -> Option<&Value> {
    template
        .document()
        .get("Resources")?
        .as_mapping()?
        .values()
        .find(|r| {
            r.get("Metadata")
                .and_then(|m| m.get("BuildProperties"))
                .and_then(|b| b.get("Binary"))
                .and_then(Value::as_str)
                == Some("consumer")
        })?
        .get("Properties")?
        .get("Environment")?
        .get("Variables")?
        .get("FORWARD_SIGNING_SECRET")
}

#[cfg(test)]
mod tests {
    use super::*;
    use stack_config::template_path;

    #[test]
    fn the_shipped_template_signs_and_a_blank_variable_does_not() {
        let template = Template::load(&template_path()).expect("template.yaml");
        let shipped = Forwarding::new(None, &template).unwrap();
        assert_eq!(shipped.secrets, 1);
        assert_eq!(shipped.flag(), None);
        assert!(
            shipped.describe().starts_with("signed"),
            "{}",
            shipped.describe()
        );
        assert_eq!(shipped.max_failures, 5);

        let unsigned = Forwarding::new(Some(""), &template).unwrap();
        assert_eq!(unsigned.flag().map(|f| f.0), Some(FORWARD_UNSIGNED));
        assert!(unsigned.describe().starts_with("UNSIGNED"));

        let rotating = Forwarding::new(Some("env:A,env:B"), &template).unwrap();
        assert!(
            rotating.describe().contains("2 secrets"),
            "{}",
            rotating.describe()
        );
        let Err(e) = Forwarding::new(Some("whsec_abc"), &template) else {
            panic!("a secret, not a reference, is refused");
        };
        let e = e.to_string();
        assert!(
            e.contains("FORWARD_SIGNING_SECRET")
                && e.contains("`whsec_abc` is not a secret reference"),
            "{e}"
        );
    }
}
