//! An event's trace id as a link the operator chooses (docs/operations.md, "Traces"):
//! `TRACE_LINK_FORMAT`, a URL holding `{trace_id}` (the W3C id, 32 hex digits) or
//! `{xray_trace_id}` (X-Ray's `1-<8 hex>-<24 hex>` form of the same id). `lookup`, `why` and the
//! console show the link beside the id.
//!
//! Both parts are checked before a link is made: the format must be an `https://` or
//! `http://` URL (never `javascript:` or the like), and the id, read from a ledger item or a
//! dead-lettered envelope, must be 32 lowercase hex digits, so nothing else reaches the URL.

/// The variable holding the format.
pub const TRACE_LINK_FORMAT: &str = "TRACE_LINK_FORMAT";

/// The link to `trace_id` under `format`; `None` where there is no format, the format is no
/// `http(s)://` URL holding a placeholder, or the id is not a W3C trace id (32 lowercase hex
/// digits, not all zeros: [`inbox::trace::context::trace_id_from_hex`]).
pub fn link(format: Option<&str>, trace_id: &str) -> Option<String> {
    let format = format?.trim();
    let web = format.starts_with("https://") || format.starts_with("http://");
    let placed = format.contains("{trace_id}") || format.contains("{xray_trace_id}");
    if !web || !placed {
        return None;
    }
    let xray =
        inbox::trace::context::xray_trace_id(&inbox::trace::context::trace_id_from_hex(trace_id)?);
    Some(
        format
            .replace("{trace_id}", trace_id)
            .replace("{xray_trace_id}", &xray),
    )
}

/// `TRACE_LINK_FORMAT` as set (blank: unset).
pub fn format_from_env() -> Option<String> {
    std::env::var(TRACE_LINK_FORMAT)
        .ok()
        .filter(|v| !v.trim().is_empty())
}

/// [`link`] under `TRACE_LINK_FORMAT`.
pub fn link_from_env(trace_id: &str) -> Option<String> {
    link(format_from_env().as_deref(), trace_id)
}

/// `lookup`'s item with `trace_link` beside its `trace_id`, where [`link`] makes one.
pub fn with_trace_link(item: &mut serde_json::Value, format: Option<&str>) {
    let made = item["trace_id"].as_str().and_then(|id| link(format, id));
    if let Some(made) = made {
        item["trace_link"] = serde_json::Value::String(made);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

    #[test]
    fn each_placeholder_is_filled_with_its_form_of_the_id() {
        assert_eq!(
            link(
                Some("https://console.aws.amazon.com/xray/home#/traces/{xray_trace_id}"),
                ID
            )
            .as_deref(),
            Some("https://console.aws.amazon.com/xray/home#/traces/1-4bf92f35-77b34da6a3ce929d0e0e4736")
        );
        assert_eq!(
            link(Some("http://localhost:16686/trace/{trace_id}"), ID).as_deref(),
            Some("http://localhost:16686/trace/4bf92f3577b34da6a3ce929d0e0e4736")
        );
    }

    #[test]
    fn no_link_from_a_format_or_an_id_that_is_not_one() {
        for format in [
            "javascript:alert(1)//{trace_id}",
            "data:text/html,{trace_id}",
            "https://ui.honeycomb.io/trace",
            "",
        ] {
            assert_eq!(link(Some(format), ID), None, "{format}");
        }
        assert_eq!(link(None, ID), None);
        let f = Some("https://x.example/{trace_id}");
        for id in [
            "",
            "4BF92F3577B34DA6A3CE929D0E0E4736",
            "00000000000000000000000000000000",
            "4bf92f3577b34da6a3ce929d0e0e473\"",
            "4bf92f3577b34da6a3ce929d0e0e4736/../x",
        ] {
            assert_eq!(link(f, id), None, "{id}");
        }
    }

    #[test]
    fn lookup_s_item_gets_its_link_beside_its_id() {
        let mut item = serde_json::json!({"pk": "github:1", "trace_id": ID});
        with_trace_link(&mut item, Some("https://x.example/t/{trace_id}"));
        assert_eq!(item["trace_link"], format!("https://x.example/t/{ID}"));
        let mut without = serde_json::json!({"pk": "github:1"});
        with_trace_link(&mut without, Some("https://x.example/t/{trace_id}"));
        assert!(without.get("trace_link").is_none());
    }
}
