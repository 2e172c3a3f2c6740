//! The frame every page shares: the navigation (a skip link first, access keys `o`, `e`, `a`),
//! the small inline style sheet (allowed by its hash in the Content-Security-Policy; no script
//! is allowed at all), and the little SVG bar chart of the overview. Every value reaches the
//! page through maud, which escapes it.

use base64::Engine as _;
use maud::{html, Markup, PreEscaped, DOCTYPE};
use sha2::Digest as _;

/// The style sheet, inline.
pub const CSS: &str = r#"
:root { color-scheme: light dark; --fg:#1b1f24; --bg:#fff; --muted:#57606a; --line:#d0d7de; --bad:#b42318; --ok:#1a7f37; --accent:#0b57d0; }
@media (prefers-color-scheme: dark) { :root { --fg:#e6edf3; --bg:#0d1117; --muted:#9da7b3; --line:#30363d; --bad:#ff7b72; --ok:#3fb950; --accent:#6cb6ff; } }
* { box-sizing: border-box; }
body { margin:0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color:var(--fg); background:var(--bg); }
a { color:var(--accent); }
a:focus, button:focus, input:focus, select:focus, summary:focus { outline:3px solid var(--accent); outline-offset:2px; }
.skip { position:absolute; left:-999px; } .skip:focus { left:1rem; top:.5rem; background:var(--bg); padding:.3rem .6rem; }
header { display:flex; gap:1.5rem; align-items:baseline; padding:.7rem 1.2rem; border-bottom:1px solid var(--line); flex-wrap:wrap; }
header strong { font-size:1.05rem; } header nav a { margin-right:1rem; } header .stack { color:var(--muted); }
main { padding:1rem 1.2rem 3rem; max-width:1280px; }
h1 { font-size:1.35rem; margin:.3rem 0 1rem; } h2 { font-size:1.1rem; margin:1.6rem 0 .6rem; }
table { border-collapse:collapse; width:100%; } th, td { text-align:left; padding:.35rem .5rem; border-bottom:1px solid var(--line); vertical-align:top; }
th { font-weight:600; color:var(--muted); font-size:.85rem; }
td.num { text-align:right; font-variant-numeric:tabular-nums; }
code, pre, .key { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size:.9em; }
pre { background:color-mix(in srgb, var(--line) 35%, transparent); padding:.8rem; overflow:auto; max-height:32rem; white-space:pre-wrap; word-break:break-word; }
.error { color:var(--bad); } .ok { color:var(--ok); } .muted { color:var(--muted); }
.status-FAILED { color:var(--bad); font-weight:600; } .status-COMPLETED { color:var(--ok); }
form.filters { display:flex; gap:.8rem; flex-wrap:wrap; align-items:end; margin-bottom:1rem; }
form.filters label { display:flex; flex-direction:column; font-size:.85rem; color:var(--muted); gap:.2rem; }
input, select, button { font:inherit; padding:.3rem .5rem; }
button { cursor:pointer; border:1px solid var(--line); border-radius:6px; background:var(--bg); color:var(--fg); }
button.danger { border-color:var(--bad); color:var(--bad); }
.cards { display:grid; grid-template-columns:repeat(auto-fill, minmax(16rem, 1fr)); gap:1rem; }
.card { border:1px solid var(--line); border-radius:8px; padding:.8rem 1rem; }
.card h3 { margin:0 0 .5rem; font-size:1rem; }
.chart { display:flex; align-items:center; gap:.6rem; font-size:.85rem; }
.chart span.label { width:6.5rem; color:var(--muted); } .chart span.total { width:3rem; text-align:right; font-variant-numeric:tabular-nums; }
svg.bars rect { fill:var(--accent); } svg.bars.bad rect { fill:var(--bad); } svg.bars line { stroke:var(--line); }
.confirm { border:1px solid var(--line); border-left:4px solid var(--accent); padding:.8rem 1rem; margin:1rem 0; }
"#;

/// The CSP `style-src` source of [`CSS`]: its SHA-256, base64.
pub fn css_hash() -> String {
    let digest = sha2::Sha256::digest(CSS.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// Which page the navigation marks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    Overview,
    Events,
    Actions,
}

/// A whole page.
pub fn page(stack: &str, title: &str, nav: Nav, body: Markup) -> Markup {
    let link = |href: &str, key: &str, label: &str, this: Nav| {
        html! {
            a href=(href) accesskey=(key) aria-current=[(nav == this).then_some("page")] { (label) }
        }
    };
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="same-origin";
                title { (title) " · inbox console · " (stack) }
                style { (PreEscaped(CSS)) }
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header {
                    strong { "webhook inbox" }
                    span.stack { "stack " code { (stack) } }
                    nav aria-label="sections" {
                        (link("/", "o", "Overview", Nav::Overview))
                        (link("/events", "e", "Events", Nav::Events))
                        (link("/actions", "a", "Actions", Nav::Actions))
                    }
                }
                main #main tabindex="-1" {
                    h1 { (title) }
                    (body)
                }
            }
        }
    }
}

/// A hidden field with the run's CSRF token: every form that acts carries it.
pub fn csrf_field(csrf: &str) -> Markup {
    html! { input type="hidden" name="csrf" value=(csrf); }
}

/// Epoch milliseconds as UTC, to the second.
pub fn time(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|_| ms.to_string())
}

/// Hourly counts as bars, oldest on the left; the total beside it and in the title.
pub fn bars(label: &str, values: &[f64], bad: bool) -> Markup {
    const W: f64 = 144.0;
    const H: f64 = 28.0;
    let max = values.iter().copied().fold(0.0_f64, f64::max);
    let total: f64 = values.iter().sum();
    let step = W / values.len().max(1) as f64;
    html! {
        div.chart {
            span.label { (label) }
            svg.bars.bad[bad] width=(W) height=(H) viewBox=(format!("0 0 {W} {H}")) role="img"
                aria-label=(format!("{label}: {total} in the last 24 hours")) {
                title { (format!("{label}: {total} in the last 24 hours, one bar an hour")) }
                line x1="0" y1=(H - 0.5) x2=(W) y2=(H - 0.5) {}
                @for (i, v) in values.iter().enumerate() {
                    @if *v > 0.0 {
                        @let h = (v / max * (H - 2.0)).max(1.5);
                        rect x=(format!("{:.1}", i as f64 * step + 0.5)) y=(format!("{:.1}", H - 1.0 - h))
                            width=(format!("{:.1}", step - 1.0)) height=(format!("{h:.1}")) {}
                    }
                }
            }
            span.total { (total) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_escaped_and_the_css_hash_is_its_digest() {
        let html = page(
            "s<1>",
            "a <script>alert(1)</script>",
            Nav::Events,
            html! { p { ("<img src=x onerror=alert(1)>") } },
        )
        .into_string();
        assert!(
            html.contains("a &lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"));
        assert!(!html.contains("<script"), "{html}");
        assert!(html.contains("s&lt;1&gt;"));
        assert!(css_hash().starts_with("'sha256-") && css_hash().ends_with("='"));
    }

    #[test]
    fn bars_draw_one_rect_per_hour_with_a_count() {
        let mut v = vec![0.0; 24];
        v[3] = 2.0;
        v[23] = 4.0;
        let svg = bars("failed", &v, true).into_string();
        assert_eq!(svg.matches("<rect").count(), 2, "{svg}");
        assert!(svg.contains("failed: 6 in the last 24 hours"), "{svg}");
        assert!(svg.contains("class=\"bars bad\""), "{svg}");
    }
}
