//! The event-type filter of a destination (docs/routing.md): exact names and prefix patterns
//! (`invoice.*`), and an exclude list that wins over them.

/// One pattern: an exact event type, or a prefix ending in `*` (`invoice.*` matches
/// `invoice.paid` and `invoice.payment.failed`, not `invoice`; `*` alone matches every type).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pattern {
    Exact(String),
    Prefix(String),
}

impl Pattern {
    /// A pattern as written; `None` where it is empty, holds a `*` anywhere but at its end, or
    /// a character that is not visible ASCII.
    pub fn parse(text: &str) -> Option<Pattern> {
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_graphic()) {
            return None;
        }
        match text.strip_suffix('*') {
            Some(prefix) if !prefix.contains('*') => Some(Pattern::Prefix(prefix.to_owned())),
            Some(_) => None,
            None if text.contains('*') => None,
            None => Some(Pattern::Exact(text.to_owned())),
        }
    }

    pub fn matches(&self, event_type: &str) -> bool {
        match self {
            Pattern::Exact(name) => name == event_type,
            Pattern::Prefix(prefix) => {
                event_type.len() > prefix.len() && event_type.starts_with(prefix.as_str())
            }
        }
    }
}

/// Which event types a destination takes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// `None`: every event type, and events without one. `Some`: only types one of these
    /// matches; an event without a type never matches.
    pub include: Option<Vec<Pattern>>,
    /// Types one of these matches are left out, whatever `include` says.
    pub exclude: Vec<Pattern>,
}

impl Filter {
    /// Whether an event of this type (`None`: the event carries none) goes to the destination.
    pub fn admits(&self, event_type: Option<&str>) -> bool {
        let included = match (&self.include, event_type) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(patterns), Some(t)) => patterns.iter().any(|p| p.matches(t)),
        };
        included && !event_type.is_some_and(|t| self.exclude.iter().any(|p| p.matches(t)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patterns(list: &[&str]) -> Vec<Pattern> {
        list.iter().map(|p| Pattern::parse(p).unwrap()).collect()
    }

    #[test]
    fn patterns_are_exact_or_a_trailing_prefix() {
        assert_eq!(
            Pattern::parse("invoice.paid"),
            Some(Pattern::Exact("invoice.paid".into()))
        );
        assert_eq!(
            Pattern::parse("invoice.*"),
            Some(Pattern::Prefix("invoice.".into()))
        );
        assert_eq!(Pattern::parse("*"), Some(Pattern::Prefix(String::new())));
        for bad in ["", "in*voice", "*.paid", "**", "invoice paid", "é"] {
            assert_eq!(Pattern::parse(bad), None, "{bad}");
        }
        let p = Pattern::parse("invoice.*").unwrap();
        assert!(p.matches("invoice.paid"));
        assert!(p.matches("invoice.payment.failed"));
        assert!(!p.matches("invoice."));
        assert!(!p.matches("invoice"));
        assert!(!p.matches("invoices.paid"));
    }

    #[test]
    fn exclude_wins_and_no_type_only_passes_an_open_filter() {
        let open = Filter::default();
        assert!(open.admits(None));
        assert!(open.admits(Some("push")));
        let billing = Filter {
            include: Some(patterns(&["invoice.*", "customer.created"])),
            exclude: patterns(&["invoice.upcoming"]),
        };
        assert!(billing.admits(Some("invoice.paid")));
        assert!(billing.admits(Some("customer.created")));
        assert!(!billing.admits(Some("invoice.upcoming")));
        assert!(!billing.admits(Some("customer.updated")));
        assert!(!billing.admits(None));
        let all_but = Filter {
            include: None,
            exclude: patterns(&["ping"]),
        };
        assert!(all_but.admits(None));
        assert!(!all_but.admits(Some("ping")));
        assert!(all_but.admits(Some("push")));
    }
}
