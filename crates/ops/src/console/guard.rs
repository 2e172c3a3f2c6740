//! What keeps the console to the operator who started it, on their own machine:
//!
//! - **Host.** It answers only a request whose `Host` is the address it serves
//!   (`127.0.0.1:<port>` or `localhost:<port>`): a page on another site that rebinds its own
//!   name to 127.0.0.1 (DNS rebinding) sends its own name and gets 421.
//! - **Session.** The printed URL carries a per-run random token (`/?token=…`); the first visit
//!   with it sets a cookie (`HttpOnly`, `SameSite=Strict`) and is redirected to the same page
//!   without it; every other request needs that cookie, else 403.
//! - **Actions** are POSTs whose form carries the run's CSRF token (a second random value, in
//!   every form the console renders); an `Origin`, where the browser sends one, must be the
//!   console's own. A forged POST from another site has neither the token nor, under
//!   `SameSite=Strict`, the cookie.
//!
//! Tokens are compared in constant time (`subtle`).

use subtle::ConstantTimeEq as _;

/// Why a request is refused (each mapped to its HTTP status in [`super::error`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Denial {
    #[error("this console answers only at {0}; the Host header named another address")]
    ForeignHost(String),
    #[error("no console session: open the URL `inbox-ops console` printed (it carries the token)")]
    NoSession,
    #[error("the token in the URL is not this run's: open the URL `inbox-ops console` printed")]
    WrongToken,
    #[error("an action needs the form's token: reload the page and confirm again")]
    Csrf,
    #[error("an action from another origin ({0}) is refused")]
    ForeignOrigin(String),
}

/// The run's tokens and the addresses it answers at.
#[derive(Clone)]
pub struct Guard {
    port: u16,
    token: String,
    csrf: String,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

/// 32 random bytes, hex.
fn random_token() -> String {
    let bytes: [u8; 32] = rand::random();
    hex::encode(bytes)
}

fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

impl Guard {
    /// New random tokens for a console on `port`.
    pub fn new(port: u16) -> Guard {
        Guard::with_tokens(port, random_token(), random_token())
    }

    /// Given tokens (the unit tests').
    pub fn with_tokens(port: u16, token: String, csrf: String) -> Guard {
        Guard { port, token, csrf }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The address printed and served.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The URL to open: the session token in the query.
    pub fn login_url(&self) -> String {
        format!("{}/?token={}", self.base_url(), self.token)
    }

    /// The CSRF token every form carries.
    pub fn csrf(&self) -> &str {
        &self.csrf
    }

    /// The session cookie's name (the port in it: two consoles on one machine keep theirs).
    pub fn cookie_name(&self) -> String {
        format!("inbox_console_{}", self.port)
    }

    /// The `Set-Cookie` value the first visit gets.
    pub fn set_cookie(&self) -> String {
        format!(
            "{}={}; HttpOnly; SameSite=Strict; Path=/",
            self.cookie_name(),
            self.token
        )
    }

    /// `Host` must be this console's address, by IP or as `localhost`.
    pub fn check_host(&self, host: Option<&str>) -> Result<(), Denial> {
        let ours = [
            format!("127.0.0.1:{}", self.port),
            format!("localhost:{}", self.port),
        ];
        match host {
            Some(h) if ours.iter().any(|o| o.eq_ignore_ascii_case(h)) => Ok(()),
            _ => Err(Denial::ForeignHost(ours[0].clone())),
        }
    }

    /// The `token` query parameter of a first visit: `Ok(true)` when it is the run's,
    /// `Ok(false)` when there is none, refused when it is another.
    pub fn check_login(&self, query: Option<&str>) -> Result<bool, Denial> {
        let given = query
            .into_iter()
            .flat_map(|q| q.split('&'))
            .find_map(|pair| pair.strip_prefix("token="));
        match given {
            None => Ok(false),
            Some(t) if same(t, &self.token) => Ok(true),
            Some(_) => Err(Denial::WrongToken),
        }
    }

    /// The session cookie among a request's `Cookie` headers.
    pub fn check_session<'a>(
        &self,
        cookie_headers: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), Denial> {
        let name = self.cookie_name();
        let found = cookie_headers
            .into_iter()
            .flat_map(|h| h.split(';'))
            .filter_map(|c| c.trim().split_once('='))
            .any(|(n, v)| n == name && same(v, &self.token));
        if found {
            Ok(())
        } else {
            Err(Denial::NoSession)
        }
    }

    /// A POST's `Origin`, where the browser sent one, must be the console's own.
    pub fn check_origin(&self, origin: Option<&str>) -> Result<(), Denial> {
        match origin {
            None => Ok(()),
            Some(o)
                if o.eq_ignore_ascii_case(&self.base_url())
                    || o.eq_ignore_ascii_case(&format!("http://localhost:{}", self.port)) =>
            {
                Ok(())
            }
            Some(o) => Err(Denial::ForeignOrigin(o.to_owned())),
        }
    }

    /// An action's form token.
    pub fn check_csrf(&self, form_token: Option<&str>) -> Result<(), Denial> {
        match form_token {
            Some(t) if same(t, &self.csrf) => Ok(()),
            _ => Err(Denial::Csrf),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> Guard {
        Guard::with_tokens(8123, "t0ken".into(), "csrf1".into())
    }

    #[test]
    fn only_the_served_address_is_answered() {
        let g = guard();
        assert!(g.check_host(Some("127.0.0.1:8123")).is_ok());
        assert!(g.check_host(Some("LOCALHOST:8123")).is_ok());
        for foreign in [
            Some("evil.example:8123"),
            Some("127.0.0.1:8124"),
            Some("127.0.0.1"),
            Some("127.0.0.1:8123.evil.example"),
            None,
        ] {
            assert_eq!(
                g.check_host(foreign),
                Err(Denial::ForeignHost("127.0.0.1:8123".into())),
                "{foreign:?}"
            );
        }
    }

    #[test]
    fn the_session_is_the_run_token_in_its_cookie() {
        let g = guard();
        assert_eq!(g.check_login(Some("token=t0ken")), Ok(true));
        assert_eq!(g.check_login(Some("a=1&token=t0ken")), Ok(true));
        assert_eq!(g.check_login(Some("a=1")), Ok(false));
        assert_eq!(g.check_login(None), Ok(false));
        assert_eq!(g.check_login(Some("token=guess")), Err(Denial::WrongToken));
        assert!(g.check_session(["x=1; inbox_console_8123=t0ken"]).is_ok());
        assert!(g.check_session(["a=b", "inbox_console_8123=t0ken"]).is_ok());
        for bad in [
            &[][..],
            &["inbox_console_8123=t0ke"],
            &["inbox_console_9999=t0ken"],
            &["inbox_console_8123=t0kenx"],
        ] {
            assert_eq!(g.check_session(bad.iter().copied()), Err(Denial::NoSession));
        }
        let cookie = g.set_cookie();
        assert!(
            cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
            "{cookie}"
        );
        assert_eq!(g.login_url(), "http://127.0.0.1:8123/?token=t0ken");
    }

    #[test]
    fn an_action_needs_the_form_token_and_no_foreign_origin() {
        let g = guard();
        assert!(g.check_csrf(Some("csrf1")).is_ok());
        assert_eq!(g.check_csrf(None), Err(Denial::Csrf));
        assert_eq!(g.check_csrf(Some("")), Err(Denial::Csrf));
        assert_eq!(
            g.check_csrf(Some("t0ken")),
            Err(Denial::Csrf),
            "not the session token"
        );
        assert!(g.check_origin(None).is_ok());
        assert!(g.check_origin(Some("http://127.0.0.1:8123")).is_ok());
        assert!(g.check_origin(Some("http://localhost:8123")).is_ok());
        assert!(matches!(
            g.check_origin(Some("http://evil.example")),
            Err(Denial::ForeignOrigin(_))
        ));
        assert_eq!(
            g.check_origin(Some("null")),
            Err(Denial::ForeignOrigin("null".into()))
        );
    }

    #[test]
    fn random_tokens_differ_and_are_long() {
        let (a, b) = (Guard::new(1), Guard::new(1));
        assert_ne!(a.login_url(), b.login_url());
        assert_ne!(a.csrf(), b.csrf());
        assert_eq!(a.csrf().len(), 64);
        assert!(!format!("{a:?}").contains(a.csrf()), "no token in Debug");
    }
}
