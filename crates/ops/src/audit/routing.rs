//! The audit of the routes (docs/routing.md): the destinations as the consumer reads them
//! (`WEBHOOK_DESTINATIONS`, its own parser), where each source's events go, and two flags:
//! `events_go_nowhere` (no `FORWARD_URL`, and some events of a source no destination takes:
//! they complete uncalled, counted `Unrouted`), and `destination_unsigned` (an `https://`
//! destination declared `"unsigned": true`; one without `signing_secret` is signed with the
//! forward secret).

use inbox::route::coverage::describe;
use inbox::route::{Routes, Target};
use inbox::SourceSpecs;

/// The flag of events that go nowhere.
pub const EVENTS_GO_NOWHERE: &str = "events_go_nowhere";
/// The flag of a destination declared unsigned.
pub const DESTINATION_UNSIGNED: &str = "destination_unsigned";

/// Where each source's events go, and what is flagged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Routing {
    /// Where the destinations were read.
    pub origin: String,
    /// Whether a `FORWARD_URL` takes what no destination takes, and where that was read.
    pub forward: bool,
    pub forward_origin: String,
    /// One line per source: where its events go.
    pub lines: Vec<String>,
    /// `(code, subject, why)`.
    pub flags: Vec<(&'static str, String, String)>,
}

impl Routing {
    /// The routes of `text` (`WEBHOOK_DESTINATIONS`) over `specs`; `forward`: whether
    /// `FORWARD_URL` is set. A destination the consumer would refuse is an error, its message.
    pub fn new(
        text: &str,
        origin: String,
        specs: &SourceSpecs,
        forward: bool,
        forward_origin: String,
    ) -> anyhow::Result<Routing> {
        let routes = Routes::parse(text, specs)
            .map_err(|e| anyhow::anyhow!("{e} (destinations from {origin})"))?;
        let mut lines = Vec::new();
        let mut flags = Vec::new();
        for spec in specs.iter() {
            let source = spec.name.as_str();
            let takers: Vec<&str> = routes
                .iter()
                .filter(|d| d.sources.contains(source))
                .map(|d| d.name.as_str())
                .collect();
            let gaps = routes.gaps(source, &spec.event_type_metrics);
            let rest = describe(&gaps);
            let to = match takers.as_slice() {
                [] => String::new(),
                names => format!("destinations {} by their filters", names.join(", ")),
            };
            let line = match (gaps.is_empty(), forward, to.is_empty()) {
                (true, _, _) => format!("{source}: {to}; every event taken"),
                (false, true, true) => format!("{source}: every event to FORWARD_URL"),
                (false, true, false) => format!("{source}: {to}; {rest} to FORWARD_URL"),
                (false, false, true) => format!("{source}: every event goes NOWHERE"),
                (false, false, false) => format!("{source}: {to}; {rest} go NOWHERE"),
            };
            lines.push(line);
            if !gaps.is_empty() && !forward {
                flags.push((
                    EVENTS_GO_NOWHERE,
                    source.to_owned(),
                    format!(
                        "{source}: {rest} go nowhere: no destination takes them and no FORWARD_URL is set; each completes with no call, counted by the metric Unrouted"
                    ),
                ));
            }
        }
        for d in routes.iter() {
            if matches!(d.target, Target::Https(_)) && d.unsigned {
                flags.push((
                    DESTINATION_UNSIGNED,
                    d.name.clone(),
                    format!(
                        "destination `{}` is declared \"unsigned\": true: its receiver cannot tell the inbox's forwards from anyone's (without it, the forward secret signs them)",
                        d.name
                    ),
                ));
            }
        }
        Ok(Routing {
            origin,
            forward,
            forward_origin,
            lines,
            flags,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs() -> SourceSpecs {
        SourceSpecs::parse(
            r#"{"stripe": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"},
                           "event_type": {"from": "json", "pointer": "/type", "metric_types": ["customer.created", "invoice.paid"]}},
                "github": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}}}"#,
        )
        .unwrap()
    }

    const ROUTES: &str = r#"{"billing": {"target": "https://billing.acme-corp.io/in", "sources": ["stripe"], "event_types": ["invoice.*"]},
        "open": {"target": "https://open.acme-corp.io/in", "sources": ["github"], "unsigned": true}}"#;

    #[test]
    fn without_a_forward_url_what_no_destination_takes_is_flagged_as_going_nowhere() {
        let r = Routing::new(
            ROUTES,
            "test".into(),
            &specs(),
            false,
            "--forward-url".into(),
        )
        .unwrap();
        assert_eq!(
            r.lines,
            [
                "github: destinations open by their filters; every event taken",
                "stripe: destinations billing by their filters; customer.created, every type but invoice.* and events without a type go NOWHERE",
            ]
        );
        let codes: Vec<(&str, &str)> = r.flags.iter().map(|(c, s, _)| (*c, s.as_str())).collect();
        assert_eq!(
            codes,
            [
                (EVENTS_GO_NOWHERE, "stripe"),
                (DESTINATION_UNSIGNED, "open")
            ]
        );
        assert!(r.flags[0].2.starts_with(
            "stripe: customer.created, every type but invoice.* and events without a type go nowhere"
        ));
    }

    #[test]
    fn with_a_forward_url_the_rest_goes_there_and_only_the_unsigned_destination_is_flagged() {
        let r = Routing::new(ROUTES, "test".into(), &specs(), true, "assumed".into()).unwrap();
        assert_eq!(
            r.lines[1],
            "stripe: destinations billing by their filters; customer.created, every type but invoice.* and events without a type to FORWARD_URL"
        );
        assert_eq!(r.flags.len(), 1);
        assert_eq!(r.flags[0].0, DESTINATION_UNSIGNED);
        let none = Routing::new("", "test".into(), &specs(), false, "x".into()).unwrap();
        assert_eq!(none.lines[0], "github: every event goes NOWHERE");
        let e = Routing::new(
            r#"{"b": {"target": "http://x", "sources": ["stripe"]}}"#,
            "f.json".into(),
            &specs(),
            true,
            "x".into(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with(
                "environment variable WEBHOOK_DESTINATIONS: destination `b`, field `target`"
            ) && e.ends_with("(destinations from f.json)"),
            "{e}"
        );
    }
}
