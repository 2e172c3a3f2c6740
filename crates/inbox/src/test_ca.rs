//! The test-only CA: one more certificate the functions' HTTPS clients trust beside the public
//! roots, so that a local TLS server with a certificate of its own can stand in for a system of
//! record (docs/testing.md, "HTTPS destinations").
//!
//! [`TEST_CA_ENV`] names a PEM file holding exactly one certificate. It is read once at
//! start-up by both functions ([`TestCa::from_setting`]): a missing or unreadable file, or one
//! that is not a single PEM certificate, stops start-up naming the variable; a good one is
//! logged at WARN, loudly, since it must never be set in a deployed stack (the template never
//! sets it, and a test checks). The clients it is added to: the forward and every `https://`
//! destination ([`crate::forward::HttpForwarder::trusting`]) and the receiver's key fetches
//! ([`crate::key_fetch::KeyFetcher::trusting`]). The AWS SDK's clients never take it.
//!
//! A leaf: it imports nothing of the crate, so that the configuration can hold it.

/// The environment variable naming the test-only CA's PEM file: tests only.
pub const TEST_CA_ENV: &str = "HTTPS_TEST_CA_FILE";
/// The largest file read: a CA certificate is a few KiB.
pub const MAX_CA_FILE_BYTES: u64 = 64 * 1024;

/// One CA certificate, read from [`TEST_CA_ENV`]'s file, for a `reqwest` client to trust.
#[derive(Clone)]
pub struct TestCa {
    path: String,
    certificate: reqwest::Certificate,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl TestCa {
    /// The certificate in the PEM file at `path`: exactly one `CERTIFICATE` block that parses
    /// as an X.509 certificate. The error says what is wrong with the file (never its bytes).
    pub fn load(path: &str) -> Result<TestCa, String> {
        let file = std::fs::File::open(path).map_err(|e| format!("cannot read `{path}`: {e}"))?;
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(file, MAX_CA_FILE_BYTES + 1),
            &mut bytes,
        )
        .map_err(|e| format!("cannot read `{path}`: {e}"))?;
        if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > MAX_CA_FILE_BYTES {
            return Err(format!(
                "`{path}` is over {MAX_CA_FILE_BYTES} bytes; one PEM certificate is expected"
            ));
        }
        if !bytes
            .windows(b"-----BEGIN CERTIFICATE-----".len())
            .any(|w| w == b"-----BEGIN CERTIFICATE-----")
        {
            return Err(format!(
                "`{path}` holds no PEM certificate (`-----BEGIN CERTIFICATE-----`)"
            ));
        }
        let chain = x509_cert::Certificate::load_pem_chain(&bytes)
            .map_err(|e| format!("`{path}` is not a PEM certificate: {e}"))?;
        if chain.len() != 1 {
            return Err(format!(
                "`{path}` holds {} certificates; exactly one CA certificate is expected",
                chain.len()
            ));
        }
        let certificate = reqwest::Certificate::from_pem(&bytes)
            .map_err(|e| format!("`{path}` is not a PEM certificate: {e}"))?;
        Ok(TestCa {
            path: path.to_owned(),
            certificate,
        })
    }

    /// The CA the setting asks for (`None` or blank: none), with the start-up warning when it
    /// is set. The error is the message start-up stops with, after the variable's name.
    pub fn from_setting(path: Option<String>) -> Result<Option<TestCa>, String> {
        let Some(path) = path.filter(|p| !p.trim().is_empty()) else {
            return Ok(None);
        };
        let ca = TestCa::load(path.trim())?;
        tracing::warn!(
            setting = TEST_CA_ENV,
            path = %ca.path,
            "TEST-ONLY SETTING: the HTTPS clients (forward, https destinations, key fetches) trust this CA beside the public roots; never set it in a deployed stack"
        );
        Ok(Some(ca))
    }

    /// The file it was read from.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// `builder` trusting this CA too (the public roots stay).
    pub fn add_to(&self, builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
        builder.add_root_certificate(self.certificate.clone())
    }
}

/// `builder` trusting `ca` too, where there is one.
pub fn trusting(builder: reqwest::ClientBuilder, ca: Option<&TestCa>) -> reqwest::ClientBuilder {
    match ca {
        Some(ca) => ca.add_to(builder),
        None => builder,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &str) -> String {
        let path =
            std::env::temp_dir().join(format!("inbox-test-ca-{}-{name}", std::process::id()));
        std::fs::write(&path, text).expect("a temporary file");
        path.to_string_lossy().into_owned()
    }

    #[test]
    fn a_missing_file_or_one_that_is_not_one_pem_certificate_is_refused_naming_it() {
        let missing = "/nonexistent/inbox-test-ca.pem";
        assert_eq!(
            TestCa::load(missing).unwrap_err(),
            format!("cannot read `{missing}`: No such file or directory (os error 2)")
        );
        let text = file("text.pem", "not a certificate\n");
        assert_eq!(
            TestCa::load(&text).unwrap_err(),
            format!("`{text}` holds no PEM certificate (`-----BEGIN CERTIFICATE-----`)")
        );
        let broken = file(
            "broken.pem",
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        );
        let e = TestCa::load(&broken).unwrap_err();
        assert!(
            e.starts_with(&format!("`{broken}` is not a PEM certificate: ")),
            "{e}"
        );
    }

    /// A self-signed CA certificate made once with openssl for these tests (no key kept).
    const CA_PEM: &str = include_str!("../testdata/test-ca.pem");

    #[test]
    fn one_ca_certificate_loads_and_names_its_file() {
        let good = file("good.pem", CA_PEM);
        let ca = TestCa::from_setting(Some(format!(" {good} ")))
            .expect("one certificate")
            .expect("set");
        assert_eq!(ca.path(), good);
        assert_eq!(
            format!("{ca:?}"),
            format!("TestCa {{ path: {good:?}, .. }}")
        );
        // Exactly the largest file read, the certificate and blank lines after it.
        let padding =
            "\n".repeat(usize::try_from(MAX_CA_FILE_BYTES).expect("small") - CA_PEM.len());
        let largest = file("largest.pem", &format!("{CA_PEM}{padding}"));
        assert_eq!(
            TestCa::load(&largest).expect("at the limit").path(),
            largest
        );
    }

    #[test]
    fn two_certificates_a_file_over_the_limit_or_text_without_a_marker_are_refused() {
        let two = file("two.pem", &format!("{CA_PEM}{CA_PEM}"));
        assert_eq!(
            TestCa::load(&two).unwrap_err(),
            format!("`{two}` holds 2 certificates; exactly one CA certificate is expected")
        );
        let padding =
            "\n".repeat(usize::try_from(MAX_CA_FILE_BYTES).expect("small") + 1 - CA_PEM.len());
        let over = file("over.pem", &format!("{CA_PEM}{padding}"));
        assert_eq!(
            TestCa::load(&over).unwrap_err(),
            format!("`{over}` is over 65536 bytes; one PEM certificate is expected")
        );
        let long_text = file("long.pem", &"not a certificate, only text\n".repeat(4));
        assert_eq!(
            TestCa::load(&long_text).unwrap_err(),
            format!("`{long_text}` holds no PEM certificate (`-----BEGIN CERTIFICATE-----`)")
        );
    }

    #[test]
    fn unset_or_blank_is_no_ca() {
        assert!(TestCa::from_setting(None).unwrap().is_none());
        assert!(TestCa::from_setting(Some("  ".into())).unwrap().is_none());
    }
}
