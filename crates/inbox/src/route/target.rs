//! Where a destination delivers (docs/routing.md): an `https://` URL, or the ARN of an
//! EventBridge bus, an SQS queue or a Lambda function.

/// A destination's target, checked at start-up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// The signed HTTP forward to this URL (docs/design.md §11).
    Https(String),
    /// `PutEvents` on this bus (its ARN).
    EventBus { arn: String },
    /// `SendMessage` to this queue: its ARN, its URL, and whether it is FIFO (`.fifo`).
    Queue {
        arn: String,
        url: String,
        fifo: bool,
    },
    /// An asynchronous `Invoke` of this function (its ARN).
    Function { arn: String },
}

/// The parts of an ARN: partition, service, region, account, resource.
struct Arn<'a> {
    partition: &'a str,
    service: &'a str,
    region: &'a str,
    account: &'a str,
    resource: &'a str,
}

fn arn(text: &str) -> Option<Arn<'_>> {
    let mut parts = text.splitn(6, ':');
    if parts.next()? != "arn" {
        return None;
    }
    let arn = Arn {
        partition: parts.next()?,
        service: parts.next()?,
        region: parts.next()?,
        account: parts.next()?,
        resource: parts.next()?,
    };
    let plain = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
    };
    let fits = plain(arn.partition)
        && plain(arn.region)
        && arn.account.len() == 12
        && arn.account.bytes().all(|b| b.is_ascii_digit());
    fits.then_some(arn)
}

/// A name of a bus, queue or function: 1 to 80 (queue) / 256 letters, digits, `-`, `_`, `.`.
fn resource_name(name: &str, max: usize) -> bool {
    !name.is_empty()
        && name.len() <= max
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

impl Target {
    /// A target as written; the message says what was expected.
    pub fn parse(text: &str) -> Result<Target, String> {
        if let Some(rest) = text.strip_prefix("https://") {
            let url = reqwest::Url::parse(text).map_err(|e| format!("not a URL: {e}"))?;
            if rest.is_empty() || url.host_str().is_none_or(str::is_empty) {
                return Err("an https:// URL needs a host".into());
            }
            return Ok(Target::Https(text.to_owned()));
        }
        let expected = "an https:// URL, or the ARN of an EventBridge bus \
             (arn:aws:events:REGION:ACCOUNT:event-bus/NAME), an SQS queue \
             (arn:aws:sqs:REGION:ACCOUNT:NAME) or a Lambda function \
             (arn:aws:lambda:REGION:ACCOUNT:function:NAME)";
        let Some(a) = arn(text) else {
            return Err(format!("`{text}` is not {expected}"));
        };
        match (a.service, a.resource.split_once(['/', ':'])) {
            ("events", Some(("event-bus", name))) if resource_name(name, 256) => {
                Ok(Target::EventBus {
                    arn: text.to_owned(),
                })
            }
            ("sqs", None) if resource_name(a.resource, 80) => {
                let domain = if a.partition == "aws-cn" {
                    "amazonaws.com.cn"
                } else {
                    "amazonaws.com"
                };
                Ok(Target::Queue {
                    arn: text.to_owned(),
                    url: format!(
                        "https://sqs.{}.{domain}/{}/{}",
                        a.region, a.account, a.resource
                    ),
                    fifo: a.resource.ends_with(".fifo"),
                })
            }
            ("lambda", Some(("function", name)))
                if resource_name(name.split(':').next().unwrap_or_default(), 64) =>
            {
                Ok(Target::Function {
                    arn: text.to_owned(),
                })
            }
            _ => Err(format!("`{text}` is not {expected}")),
        }
    }

    /// The kind, as `inbox-ops` and the logs name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Target::Https(_) => "https",
            Target::EventBus { .. } => "eventbridge",
            Target::Queue { .. } => "sqs",
            Target::Function { .. } => "lambda",
        }
    }

    /// The ARN the consumer's permission names (none for an HTTP target).
    pub fn arn(&self) -> Option<&str> {
        match self {
            Target::Https(_) => None,
            Target::EventBus { arn } | Target::Queue { arn, .. } | Target::Function { arn } => {
                Some(arn)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_target_is_read_and_others_refused() {
        assert_eq!(
            Target::parse("https://billing.example/hooks"),
            Ok(Target::Https("https://billing.example/hooks".into()))
        );
        let bus = "arn:aws:events:eu-west-1:123456789012:event-bus/payments";
        assert_eq!(Target::parse(bus).unwrap().kind(), "eventbridge");
        let q = Target::parse("arn:aws:sqs:eu-west-1:123456789012:ci.fifo").unwrap();
        assert_eq!(
            q,
            Target::Queue {
                arn: "arn:aws:sqs:eu-west-1:123456789012:ci.fifo".into(),
                url: "https://sqs.eu-west-1.amazonaws.com/123456789012/ci.fifo".into(),
                fifo: true
            }
        );
        let f = "arn:aws:lambda:eu-west-1:123456789012:function:crm-sync";
        assert_eq!(Target::parse(f).unwrap().arn(), Some(f));
        for bad in [
            "http://billing.example/hooks",
            "https://",
            "arn:aws:events:eu-west-1:123456789012:rule/x",
            "arn:aws:sqs:eu-west-1:1234:ci",
            "arn:aws:sqs:eu-west-1:123456789012:a/b",
            "arn:aws:lambda:eu-west-1:123456789012:layer:x",
            "arn:aws:s3:::bucket",
            "billing",
        ] {
            let e = Target::parse(bad).unwrap_err();
            let said = if bad == "https://" {
                e.starts_with("not a URL") || e == "an https:// URL needs a host"
            } else {
                e.starts_with(&format!("`{bad}` is not an https:// URL, or the ARN"))
            };
            assert!(said, "{bad}: {e}");
        }
    }
}
