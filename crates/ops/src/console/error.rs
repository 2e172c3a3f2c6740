//! Every way a console request fails, and its HTTP status: [`ConsoleError::status`] is the one
//! place the codes are decided. The page says why in plain words; it never carries a token.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::html;

use super::guard::Denial;

#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    #[error(transparent)]
    Denied(#[from] Denial),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    BadInput(String),
    /// The stack lacks what the page needs (an output).
    #[error("{0:#}")]
    Stack(anyhow::Error),
    /// An AWS call failed (with the operator's credentials).
    #[error("{0:#}")]
    Aws(anyhow::Error),
}

impl ConsoleError {
    /// The HTTP status of each failure.
    pub fn status(&self) -> StatusCode {
        match self {
            ConsoleError::Denied(Denial::ForeignHost(_)) => StatusCode::MISDIRECTED_REQUEST,
            ConsoleError::Denied(_) => StatusCode::FORBIDDEN,
            ConsoleError::NotFound(_) => StatusCode::NOT_FOUND,
            ConsoleError::BadInput(_) => StatusCode::BAD_REQUEST,
            ConsoleError::Stack(_) | ConsoleError::Aws(_) => StatusCode::BAD_GATEWAY,
        }
    }
}

impl IntoResponse for ConsoleError {
    fn into_response(self) -> Response {
        let status = self.status();
        let page = html! {
            (maud::DOCTYPE)
            html lang="en" {
                head { meta charset="utf-8"; title { "inbox console: " (status.as_u16()) } }
                body {
                    h1 { (status.as_u16()) " " (status.canonical_reason().unwrap_or_default()) }
                    p #reason { (crate::text::shown(&self.to_string())) }
                    p { a href="/" { "Overview" } }
                }
            }
        };
        (status, page).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_has_its_status() {
        let cases = [
            (ConsoleError::Denied(Denial::ForeignHost("h".into())), 421),
            (ConsoleError::Denied(Denial::NoSession), 403),
            (ConsoleError::Denied(Denial::WrongToken), 403),
            (ConsoleError::Denied(Denial::Csrf), 403),
            (ConsoleError::Denied(Denial::ForeignOrigin("o".into())), 403),
            (ConsoleError::NotFound("k".into()), 404),
            (ConsoleError::BadInput("b".into()), 400),
            (ConsoleError::Aws(anyhow::anyhow!("GetItem")), 502),
            (ConsoleError::Stack(anyhow::anyhow!("no output")), 502),
        ];
        for (e, code) in cases {
            assert_eq!(e.status().as_u16(), code, "{e}");
        }
    }
}
