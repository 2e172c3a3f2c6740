//! What of a source's events no destination takes (docs/routing.md): the gaps the consumer
//! sends to `FORWARD_URL` (the default destination), or, where none is set, nowhere, which the
//! audit and preflight say before the deploy.
//!
//! The filters are exact types and prefix patterns, so the event types fall into finitely many
//! classes that every filter treats alike: each exact type named anywhere, for each prefix the
//! types under it that no longer pattern names, and events without a type. One witness per
//! class, run through [`Routes::destinations_for`], finds the classes no destination takes:
//! the answer is exact, not sampled.

use std::collections::BTreeSet;
use std::fmt;

use super::{Pattern, Routes};

/// A class of events of one source that no destination takes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Gap {
    /// This exact type (named by a filter, or declared by the source's `metric_types`).
    Exact(String),
    /// The types starting with `prefix` (`""`: every type), less those the `except` patterns
    /// name (the longer patterns under it, each its own class).
    Under { prefix: String, except: Vec<String> },
    /// Events that carry no type.
    Untyped,
}

impl fmt::Display for Gap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Gap::Exact(t) => write!(f, "{t}"),
            Gap::Untyped => f.write_str("events without a type"),
            Gap::Under { prefix, except } => {
                match prefix.as_str() {
                    "" => f.write_str("every type")?,
                    p => write!(f, "{p}*")?,
                }
                if !except.is_empty() {
                    write!(f, " but {}", except.join(", "))?;
                }
                Ok(())
            }
        }
    }
}

/// The gaps as one phrase: `customer.created, every type but invoice.* and events without a
/// type`.
pub fn describe(gaps: &[Gap]) -> String {
    let parts: Vec<String> = gaps.iter().map(ToString::to_string).collect();
    match parts.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// No type holds this byte (a pattern is visible ASCII): appended to a prefix, it makes a type
/// that only the patterns it extends match.
const BEYOND: char = '\u{7f}';

fn written(p: &Pattern) -> String {
    match p {
        Pattern::Exact(t) => t.clone(),
        Pattern::Prefix(p) => format!("{p}*"),
    }
}

impl Routes {
    /// The events of `source` that no destination takes, by class; `known` adds exact types
    /// the source declares (its `metric_types`), so that they are named where they fall in a
    /// gap. Empty: every event of `source` goes to some destination. A source no destination
    /// names has every event in a gap.
    pub fn gaps(&self, source: &str, known: &[String]) -> Vec<Gap> {
        let mut exact: BTreeSet<String> = known.iter().cloned().collect();
        let mut prefixes: BTreeSet<String> = BTreeSet::from([String::new()]);
        for d in self.iter().filter(|d| d.sources.contains(source)) {
            let patterns = d.filter.include.iter().flatten().chain(&d.filter.exclude);
            for p in patterns {
                match p {
                    Pattern::Exact(t) => exact.insert(t.clone()),
                    Pattern::Prefix(p) => prefixes.insert(p.clone()),
                };
            }
        }
        let nobody = |t: Option<&str>| self.destinations_for(source, t).is_empty();
        let mut gaps: Vec<Gap> = exact
            .iter()
            .filter(|t| nobody(Some(t)))
            .map(|t| Gap::Exact(t.clone()))
            .collect();
        for prefix in &prefixes {
            if !nobody(Some(&format!("{prefix}{BEYOND}"))) {
                continue;
            }
            let under = |t: &str, p: &str| t.len() > p.len() && t.starts_with(p);
            let inner: Vec<&String> = prefixes.iter().filter(|q| under(q, prefix)).collect();
            // The classes carved out of this one: the outermost longer prefixes, and the exact
            // types under none of them that some destination takes (the others are gaps of
            // their own, listed apart).
            let except = inner
                .iter()
                .filter(|q| !inner.iter().any(|o| under(q, o)))
                .map(|q| written(&Pattern::Prefix((*q).clone())))
                .chain(
                    exact
                        .iter()
                        .filter(|t| under(t, prefix) && !inner.iter().any(|o| under(t, o)))
                        .filter(|t| !nobody(Some(t)))
                        .cloned(),
                )
                .collect();
            gaps.push(Gap::Under {
                prefix: prefix.clone(),
                except,
            });
        }
        if nobody(None) {
            gaps.push(Gap::Untyped);
        }
        gaps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SourceSpecs;

    fn routes(json: &str) -> Routes {
        let sources = SourceSpecs::parse(
            r#"{"stripe": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}},
                "github": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}}}"#,
        )
        .unwrap();
        Routes::parse(json, &sources).unwrap()
    }

    #[test]
    fn a_source_routed_by_type_leaves_every_other_type_in_a_gap() {
        let r = routes(
            r#"{"billing": {"target": "https://billing.example/in", "sources": ["stripe"],
                "event_types": ["invoice.*"], "exclude_event_types": ["invoice.upcoming"]}}"#,
        );
        let known = ["customer.created".to_owned(), "invoice.paid".to_owned()];
        let gaps = r.gaps("stripe", &known);
        assert_eq!(
            gaps,
            [
                Gap::Exact("customer.created".into()),
                Gap::Exact("invoice.upcoming".into()),
                Gap::Under {
                    prefix: String::new(),
                    except: vec!["invoice.*".into()]
                },
                Gap::Untyped,
            ]
        );
        assert_eq!(
            describe(&gaps),
            "customer.created, invoice.upcoming, every type but invoice.* and events without a type"
        );
        // A source no destination names: everything.
        assert_eq!(
            describe(&r.gaps("github", &[])),
            "every type and events without a type"
        );
    }

    #[test]
    fn an_open_destination_or_a_catch_all_closes_every_gap() {
        let open =
            routes(r#"{"bus": {"target": "https://bus.example/in", "sources": ["stripe"]}}"#);
        assert!(open.gaps("stripe", &[]).is_empty());
        // The exclusion of one destination taken by another; untyped events by the open one.
        let split = routes(
            r#"{"most": {"target": "https://a.example/in", "sources": ["stripe"], "exclude_event_types": ["invoice.*"]},
                "invoices": {"target": "https://b.example/in", "sources": ["stripe"], "event_types": ["invoice.*"]}}"#,
        );
        assert!(split.gaps("stripe", &[]).is_empty());
        // `*` takes every typed event but not an untyped one; a nested prefix left out.
        let typed = routes(
            r#"{"t": {"target": "https://a.example/in", "sources": ["stripe"], "event_types": ["*"],
                "exclude_event_types": ["invoice.payment.*"]}}"#,
        );
        assert_eq!(
            typed.gaps("stripe", &[]),
            [
                Gap::Under {
                    prefix: "invoice.payment.".into(),
                    except: vec![]
                },
                Gap::Untyped
            ]
        );
        assert_eq!(
            describe(&typed.gaps("stripe", &[])),
            "invoice.payment.* and events without a type"
        );
    }
}
