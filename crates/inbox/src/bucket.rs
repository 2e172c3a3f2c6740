//! The payload bucket (`PAYLOAD_BUCKET`, docs/design.md §12): bodies too big for the queue
//! (the claim check), and the replay archive that Firehose writes ([`crate::archive`]).
//!
//! A small port, [`PayloadBucket`] (put and get of bytes by object key), with its S3 adapter
//! ([`S3Bucket`]) and an in-memory twin ([`MemoryBucket`]); the claim check's object keys are
//! made here, by [`payload_key`], and nowhere else.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use crate::key::sha256_hex;

/// A bucket call that did not succeed (no answer, a refusal, an unreadable object).
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("payload store unavailable: {0}")]
pub struct BucketError(pub String);

/// The payload bucket's port: bytes in and out by object key, within one bucket.
pub trait PayloadBucket: Send + Sync + 'static {
    /// Writes (or overwrites with the same bytes: every key here is content-derived) an object.
    fn put(
        &self,
        key: &str,
        bytes: Vec<u8>,
    ) -> impl Future<Output = Result<(), BucketError>> + Send;
    /// Reads an object: `Ok(None)` when there is none.
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Vec<u8>>, BucketError>> + Send;
    /// The object keys under a prefix, in key order.
    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<String>, BucketError>> + Send;
    /// `s3://<bucket>/<key>`, for messages.
    fn url(&self, key: &str) -> String;
    /// Whether there is a bucket at all ([`NoBucket`] and `None` are not).
    fn is_configured(&self) -> bool {
        true
    }
}

impl<T: PayloadBucket> PayloadBucket for Arc<T> {
    fn put(
        &self,
        key: &str,
        bytes: Vec<u8>,
    ) -> impl Future<Output = Result<(), BucketError>> + Send {
        (**self).put(key, bytes)
    }
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Vec<u8>>, BucketError>> + Send {
        (**self).get(key)
    }
    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<String>, BucketError>> + Send {
        (**self).list(prefix)
    }
    fn url(&self, key: &str) -> String {
        (**self).url(key)
    }
    fn is_configured(&self) -> bool {
        (**self).is_configured()
    }
}

/// A bucket or none (`PAYLOAD_BUCKET` unset): `None` behaves as [`NoBucket`].
impl<T: PayloadBucket> PayloadBucket for Option<T> {
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BucketError> {
        match self {
            Some(s) => s.put(key, bytes).await,
            None => NoBucket.put(key, bytes).await,
        }
    }
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, BucketError> {
        match self {
            Some(s) => s.get(key).await,
            None => NoBucket.get(key).await,
        }
    }
    async fn list(&self, prefix: &str) -> Result<Vec<String>, BucketError> {
        match self {
            Some(s) => s.list(prefix).await,
            None => NoBucket.list(prefix).await,
        }
    }
    fn url(&self, key: &str) -> String {
        match self {
            Some(s) => s.url(key),
            None => NoBucket.url(key),
        }
    }
    fn is_configured(&self) -> bool {
        self.as_ref().is_some_and(PayloadBucket::is_configured)
    }
}

/// No bucket configured: every call fails. A receiver without a bucket never calls it (it
/// answers 413 to a body whose envelope would not fit the queue); a consumer meeting a
/// pointer reports the message failed with this error.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoBucket;

impl PayloadBucket for NoBucket {
    async fn put(&self, _key: &str, _bytes: Vec<u8>) -> Result<(), BucketError> {
        Err(BucketError("no PAYLOAD_BUCKET configured".into()))
    }
    async fn get(&self, _key: &str) -> Result<Option<Vec<u8>>, BucketError> {
        Err(BucketError("no PAYLOAD_BUCKET configured".into()))
    }
    async fn list(&self, _prefix: &str) -> Result<Vec<String>, BucketError> {
        Err(BucketError("no PAYLOAD_BUCKET configured".into()))
    }
    fn url(&self, key: &str) -> String {
        format!("s3://(no bucket)/{key}")
    }
    fn is_configured(&self) -> bool {
        false
    }
}

/// The claim check's object: `payloads/<source>/<sha256 hex of key>/<payload sha256 hex>`.
/// The same event always gives the same key, so a retry writes the same object.
pub fn payload_key(source: &str, key: &str, payload_sha256: &str) -> String {
    format!(
        "payloads/{source}/{}/{payload_sha256}",
        sha256_hex(key.as_bytes())
    )
}

/// The S3 client of the functions and the tools: path-style addressing where an endpoint is
/// configured (`AWS_ENDPOINT_URL`: moto on loopback has no per-bucket host names).
pub fn s3_config(sdk: &aws_config::SdkConfig) -> aws_sdk_s3::config::Builder {
    let builder = aws_sdk_s3::config::Builder::from(sdk);
    if sdk.endpoint_url().is_some() {
        builder.force_path_style(true)
    } else {
        builder
    }
}

/// [`s3_config`]'s client.
pub fn s3_client(sdk: &aws_config::SdkConfig) -> aws_sdk_s3::Client {
    aws_sdk_s3::Client::from_conf(s3_config(sdk).build())
}

/// S3, one bucket.
#[derive(Clone, Debug)]
pub struct S3Bucket {
    client: aws_sdk_s3::Client,
    bucket: String,
}

impl S3Bucket {
    pub fn new(client: aws_sdk_s3::Client, bucket: impl Into<String>) -> Self {
        Self {
            client,
            bucket: bucket.into(),
        }
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }
}

fn sdk_error<E, R>(e: aws_sdk_s3::error::SdkError<E, R>) -> BucketError
where
    E: std::error::Error + 'static,
    R: std::fmt::Debug,
{
    BucketError(aws_sdk_s3::error::DisplayErrorContext(e).to_string())
}

impl PayloadBucket for S3Bucket {
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BucketError> {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .body(bytes.into())
            .send()
            .await
            .map(|_| ())
            .map_err(sdk_error)
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, BucketError> {
        let out = match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => return Ok(None),
            Err(e) => return Err(sdk_error(e)),
        };
        let bytes = out
            .body
            .collect()
            .await
            .map_err(|e| BucketError(format!("reading the object: {e}")))?;
        Ok(Some(bytes.into_bytes().to_vec()))
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>, BucketError> {
        let mut keys = Vec::new();
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(prefix)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(sdk_error)?;
            keys.extend(
                page.contents()
                    .iter()
                    .filter_map(|o| o.key().map(str::to_owned)),
            );
        }
        keys.sort();
        Ok(keys)
    }

    fn url(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }
}

/// The in-memory twin, for unit tests and the simulation.
#[derive(Debug, Default)]
pub struct MemoryBucket {
    objects: Mutex<BTreeMap<String, Vec<u8>>>,
}

impl MemoryBucket {
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut BTreeMap<String, Vec<u8>>) -> T) -> T {
        f(&mut self.objects.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Every object key, for assertions.
    pub fn keys(&self) -> Vec<String> {
        self.with(|o| o.keys().cloned().collect())
    }

    /// Deletes an object (a test's missing object).
    pub fn remove(&self, key: &str) -> bool {
        self.with(|o| o.remove(key).is_some())
    }
}

impl PayloadBucket for MemoryBucket {
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BucketError> {
        self.with(|o| o.insert(key.to_owned(), bytes));
        Ok(())
    }
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, BucketError> {
        Ok(self.with(|o| o.get(key).cloned()))
    }
    async fn list(&self, prefix: &str) -> Result<Vec<String>, BucketError> {
        Ok(self.with(|o| {
            o.keys()
                .filter(|k| k.starts_with(prefix))
                .cloned()
                .collect()
        }))
    }
    fn url(&self, key: &str) -> String {
        format!("s3://memory/{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_keys_are_derived_from_the_event_only() {
        let k = payload_key("github", "github:d-1", "ab");
        assert_eq!(
            k,
            format!("payloads/github/{}/ab", sha256_hex(b"github:d-1"))
        );
        assert_eq!(k, payload_key("github", "github:d-1", "ab"));
    }

    #[tokio::test]
    async fn the_memory_store_lists_by_prefix() {
        let m = MemoryBucket::new();
        m.put("a/1", b"x".to_vec()).await.unwrap();
        m.put("a/2", b"y".to_vec()).await.unwrap();
        m.put("b/1", b"z".to_vec()).await.unwrap();
        assert_eq!(m.list("a/").await.unwrap(), vec!["a/1", "a/2"]);
        assert_eq!(m.get("a/2").await.unwrap(), Some(b"y".to_vec()));
        assert_eq!(m.get("c").await.unwrap(), None);
        assert_eq!(
            NoBucket.get("a/1").await.unwrap_err().0,
            "no PAYLOAD_BUCKET configured"
        );
    }
}
