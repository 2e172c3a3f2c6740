//! Requests that miss the route: unknown sources, paths outside `/webhooks/{source}` (404
//! `unknown_source`), and methods other than POST (405 `method_not_allowed`, answered before
//! anything else).

use super::case::{case, gh, Case, GITHUB_BODY, METHOD, UNKNOWN};

pub(crate) fn cases() -> Vec<Case> {
    let body = GITHUB_BODY;
    let mut cases = Vec::new();
    // --- Sources and paths ----------------------------------------------------------------
    for (name, path) in [
        ("unknown source", "/webhooks/nobody"),
        ("source in the wrong case", "/webhooks/GitHub"),
        ("empty source", "/webhooks/"),
        ("no source", "/webhooks"),
        ("extra segment", "/webhooks/github/extra"),
        ("another prefix", "/hooks/github"),
        ("encoded traversal", "/webhooks/..%2Fgithub"),
        ("encoded NUL", "/webhooks/github%00"),
    ] {
        let mut c = case(
            &format!("path: {name}"),
            "github",
            gh("d", body),
            body,
            UNKNOWN,
        );
        c.path = path.to_owned();
        cases.push(c);
    }

    // --- Methods: answered before anything else -------------------------------------------
    for method in [
        "GET", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE", "PURGE",
    ] {
        let mut c = case(
            &format!("method {method}"),
            "github",
            gh("d", body),
            body,
            METHOD,
        );
        c.method = method;
        cases.push(c);
    }
    let mut c = case("method GET, unknown source", "nobody", vec![], b"", METHOD);
    c.method = "GET";
    cases.push(c);
    cases
}
