//! The router: the guard in front of every route ([`guard`]), the security headers on every
//! answer, and the read-only pages' handlers (overview, events, one event); the actions are in
//! [`super::actions`].

use std::sync::Arc;

use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use maud::Markup;
use serde::Deserialize;

use super::error::ConsoleError;
use super::listing::{Cursor, ListFilter, Lister, DEFAULT_PAGE};
use super::pages::{self, EventView, ListQuery, Overview};
use super::{actions, figures, layout, show, Console};

/// Every route, behind the guard.
pub fn router(console: Arc<Console>) -> Router {
    Router::new()
        .route("/", get(overview))
        .route("/events", get(events))
        .route("/event", get(event))
        .route("/actions", get(actions::actions))
        .route(
            "/replay",
            get(actions::replay_confirm).post(actions::replay_send),
        )
        .route(
            "/redrive",
            get(actions::redrive_confirm).post(actions::redrive_send),
        )
        .route(
            "/delivery",
            get(actions::delivery_confirm).post(actions::delivery_send),
        )
        .fallback(|| async { ConsoleError::NotFound("no such page".into()) })
        .layer(middleware::from_fn_with_state(console.clone(), guard))
        .with_state(console)
}

/// Host, then the first visit's token (cookie set, redirected without it), then the session
/// cookie, then a POST's Origin; the CSRF form token is checked by each action.
async fn guard(State(c): State<Arc<Console>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    let checked = (|| {
        c.guard.check_host(text(header::HOST))?;
        if c.guard.check_login(request.uri().query())? {
            return Ok(Some(request.uri().path().to_owned()));
        }
        c.guard.check_session(
            headers
                .get_all(header::COOKIE)
                .iter()
                .filter_map(|v| v.to_str().ok()),
        )?;
        if request.method() == Method::POST {
            c.guard.check_origin(text(header::ORIGIN))?;
        }
        Ok::<_, ConsoleError>(None)
    })();
    let mut response = match checked {
        Err(e) => e.into_response(),
        Ok(Some(path)) => {
            let mut r = StatusCode::SEE_OTHER.into_response();
            let h = r.headers_mut();
            if let Ok(v) = HeaderValue::from_str(&path) {
                h.insert(header::LOCATION, v);
            }
            if let Ok(v) = HeaderValue::from_str(&c.guard.set_cookie()) {
                h.insert(header::SET_COOKIE, v);
            }
            r
        }
        Ok(None) => next.run(request).await,
    };
    secure(response.headers_mut());
    response
}

/// No script, no frame, no referrer beyond the console (an Origin of `null` would be refused), no cache, only the inline style sheet.
fn secure(h: &mut axum::http::HeaderMap) {
    let csp = format!(
        "default-src 'none'; style-src {}; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        layout::css_hash()
    );
    if let Ok(v) = HeaderValue::from_str(&csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

async fn overview(State(c): State<Arc<Console>>) -> Markup {
    let cloudwatch = aws_sdk_cloudwatch::Client::new(&c.sdk);
    let now_s = c.now_ms().div_euclid(1000);
    let alarms = async {
        let names =
            crate::stack::physical_ids(&c.sdk, &c.stack.name, "AWS::CloudWatch::Alarm").await?;
        figures::alarms_firing(&cloudwatch, &names).await
    };
    let destinations = async {
        let table = c
            .stack
            .need(&c.stack.table, crate::stack::TABLE_OUTPUT)
            .map_err(|e| format!("{e:#}"))?;
        let board = crate::breakers::read(&c.sdk, table).await?;
        let names = crate::breakers::names_of(c.stack.destinations_json.as_deref());
        Ok::<_, String>(crate::breakers::rows(&board, &names))
    };
    let rates = async {
        let routes = c.stack.routes()?;
        if routes.is_empty() {
            return Ok(Vec::new());
        }
        let table = c.stack.need(&c.stack.table, crate::stack::TABLE_OUTPUT)?;
        let rate = inbox::destination::DynamoRate::new(crate::aws::dynamo(&c.sdk), table);
        anyhow::Ok(crate::rate_status::rows_at(&routes, &rate, c.now_ms()).await)
    };
    let (status, figures, alarms, destinations, rates) = tokio::join!(
        c.status(),
        figures::last_day(&cloudwatch, &c.stack.sources, now_s),
        alarms,
        destinations,
        rates
    );
    let o = Overview {
        status: status.map_err(|e| e.to_string()),
        figures: figures.map_err(|e| format!("{e:#}")),
        alarms: alarms.map_err(|e| format!("{e:#}")),
        destinations,
        rates: rates.map_err(|e| format!("{e:#}")),
    };
    pages::overview(&c.stack.name, &o)
}

fn parse_filter(q: &ListQuery, sources: &[String]) -> Result<ListFilter, ConsoleError> {
    let given = |v: &Option<String>| v.clone().filter(|v| !v.is_empty());
    let time = |v: &Option<String>| {
        given(v)
            .map(|t| crate::replay::parse_time(&t).map_err(ConsoleError::BadInput))
            .transpose()
    };
    let filter = ListFilter {
        source: given(&q.source),
        status: given(&q.status),
        event_type: given(&q.event_type),
        from_ms: time(&q.from)?,
        to_ms: time(&q.to)?,
    };
    if let Some(s) = &filter.source {
        if !sources.contains(s) {
            return Err(ConsoleError::BadInput(format!(
                "the stack has no source `{s}`"
            )));
        }
    }
    if let Some(s) = &filter.status {
        if !pages::STATUSES.contains(&s.as_str()) {
            return Err(ConsoleError::BadInput(format!("no ledger status `{s}`")));
        }
    }
    Ok(filter)
}

async fn events(
    State(c): State<Arc<Console>>,
    Query(q): Query<ListQuery>,
) -> Result<Markup, ConsoleError> {
    let filter = parse_filter(&q, &c.stack.sources)?;
    let cursor = match q.cursor.as_deref().filter(|t| !t.is_empty()) {
        Some(text) => Cursor::decode(text).map_err(ConsoleError::BadInput)?,
        None => Cursor::default(),
    };
    let dynamo = crate::aws::dynamo(&c.sdk);
    let lister = Lister {
        dynamo: &dynamo,
        table: c.need(&c.stack.table, crate::stack::TABLE_OUTPUT)?,
        sources: &c.stack.sources,
        now_s: c.now_ms().div_euclid(1000),
    };
    let listed = lister
        .page(&filter, &cursor, q.limit.unwrap_or(DEFAULT_PAGE))
        .await
        .map_err(ConsoleError::Aws)?;
    Ok(pages::events(
        &c.stack.name,
        &c.stack.sources,
        &filter,
        &q,
        &listed,
    ))
}

#[derive(Deserialize)]
struct KeyQuery {
    key: Option<String>,
}

async fn event(
    State(c): State<Arc<Console>>,
    Query(q): Query<KeyQuery>,
) -> Result<Markup, ConsoleError> {
    let key = q
        .key
        .filter(|k| !k.is_empty())
        .ok_or_else(|| ConsoleError::BadInput("which event: /event?key=<source>:<value>".into()))?;
    let table = c.need(&c.stack.table, crate::stack::TABLE_OUTPUT)?;
    let item = crate::lookup::lookup(&crate::aws::dynamo(&c.sdk), table, &key)
        .await
        .map_err(ConsoleError::Aws)?
        .ok_or_else(|| {
            ConsoleError::NotFound(format!(
                "no ledger item for `{key}`: never claimed, or deleted by TTL after expires_at"
            ))
        })?;
    let (store, ledger) = c.archive()?;
    let (headers, body, archive_object) =
        match crate::replay::archived_envelope(&store, &ledger, &key).await {
            Ok(found) => {
                let fields = c
                    .stack
                    .attempt_fields(&found.envelope.source)
                    .unwrap_or_default();
                let body = crate::lookup::envelope_body(&store, &found.envelope, &fields)
                    .await
                    .map(|b| show::body(&b))
                    .map_err(|e| format!("{e:#}"));
                (
                    Ok(show::headers(&found.envelope.headers)),
                    body,
                    Some(found.object),
                )
            }
            Err(e) => (Err(format!("{e:#}")), Err(format!("{e:#}")), None),
        };
    let destinations = match c.stack.routes() {
        Ok(routes) => crate::destination_state::states(
            &ledger,
            &routes,
            &key,
            item["source"].as_str().unwrap_or_default(),
            item["event_type"].as_str(),
            c.now_ms(),
        )
        .await
        .map_err(|e| format!("the destinations' items could not be read: {e:#}")),
        Err(e) => Err(format!("the stack's destinations could not be read: {e:#}")),
    };
    Ok(pages::event(
        &c.stack.name,
        &EventView {
            key,
            item,
            headers,
            body,
            archive_object,
            destinations,
        },
    ))
}
