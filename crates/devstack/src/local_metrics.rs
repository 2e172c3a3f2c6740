//! The functions' metrics on the local stack: in AWS, Lambda ships each EMF line
//! ([`inbox::metrics`]) to CloudWatch Logs and CloudWatch makes the metrics of it; locally
//! nothing does, so this reads the same lines (the functions' output under `cargo lambda watch`,
//! or a test's [`inbox::metrics::Metrics::memory`]) and puts each count on moto's CloudWatch
//! with `PutMetricData`: its namespace, dimensions, unit, value and timestamp as the line says.
//! The console's figures and `inbox-ops status` then read the run's own counts.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use aws_sdk_cloudwatch::primitives::DateTime;
use aws_sdk_cloudwatch::types::{Dimension, MetricDatum, StandardUnit};
use serde_json::Value;
use tokio::sync::mpsc;

/// `PutMetricData` takes at most 1,000 data a call.
const PER_CALL: usize = 1000;

/// Why a line is not an EMF document.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum EmfError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("no `_aws` object with a `Timestamp` and `CloudWatchMetrics`")]
    NoMetadata,
    #[error("metric `{0}` has no numeric value at the top level")]
    NoValue(String),
    #[error("dimension `{0}` has no string value at the top level")]
    NoDimension(String),
}

/// The data of one EMF line, each with its namespace: one per metric and dimension set (and
/// per value, where a metric's value is an array).
pub fn data(line: &str) -> Result<Vec<(String, MetricDatum)>, EmfError> {
    let doc: Value = serde_json::from_str(line).map_err(|e| EmfError::NotJson(e.to_string()))?;
    let aws = doc.get("_aws").ok_or(EmfError::NoMetadata)?;
    let at = aws
        .get("Timestamp")
        .and_then(Value::as_i64)
        .ok_or(EmfError::NoMetadata)?;
    let directives = aws
        .get("CloudWatchMetrics")
        .and_then(Value::as_array)
        .ok_or(EmfError::NoMetadata)?;
    let mut out = Vec::new();
    for directive in directives {
        let namespace = directive
            .get("Namespace")
            .and_then(Value::as_str)
            .ok_or(EmfError::NoMetadata)?;
        let sets: Vec<Vec<&str>> = directive
            .get("Dimensions")
            .and_then(Value::as_array)
            .map(|sets| {
                sets.iter()
                    .map(|set| {
                        set.as_array()
                            .map(|names| names.iter().filter_map(Value::as_str).collect())
                            .unwrap_or_default()
                    })
                    .collect()
            })
            .unwrap_or_else(|| vec![Vec::new()]);
        let metrics = directive
            .get("Metrics")
            .and_then(Value::as_array)
            .ok_or(EmfError::NoMetadata)?;
        for metric in metrics {
            let name = metric
                .get("Name")
                .and_then(Value::as_str)
                .ok_or(EmfError::NoMetadata)?;
            let values: Vec<f64> = match doc.get(name) {
                Some(Value::Array(items)) => items.iter().filter_map(Value::as_f64).collect(),
                Some(v) => v.as_f64().into_iter().collect(),
                None => Vec::new(),
            };
            if values.is_empty() {
                return Err(EmfError::NoValue(name.to_owned()));
            }
            let unit = metric.get("Unit").and_then(Value::as_str);
            for set in &sets {
                let mut dimensions = Vec::new();
                for d in set {
                    let value = doc
                        .get(*d)
                        .and_then(Value::as_str)
                        .ok_or_else(|| EmfError::NoDimension((*d).to_owned()))?;
                    dimensions.push(Dimension::builder().name(*d).value(value).build());
                }
                for value in &values {
                    let datum = MetricDatum::builder()
                        .metric_name(name)
                        .set_dimensions(Some(dimensions.clone()))
                        .timestamp(DateTime::from_millis(at))
                        .value(*value)
                        .set_unit(unit.map(StandardUnit::from))
                        .build();
                    out.push((namespace.to_owned(), datum));
                }
            }
        }
    }
    Ok(out)
}

/// Whether a line of output is an EMF document (what [`data`] reads; the rest is logs).
pub fn is_emf(line: &str) -> bool {
    line.starts_with('{') && line.contains("\"_aws\"")
}

/// Puts the counts of `lines` on CloudWatch, by namespace, 1,000 a call. Lines that are not
/// EMF are left out. Returns the data put.
pub async fn put(
    cloudwatch: &aws_sdk_cloudwatch::Client,
    lines: &[String],
) -> anyhow::Result<usize> {
    let mut by_namespace: BTreeMap<String, Vec<MetricDatum>> = BTreeMap::new();
    for line in lines.iter().filter(|l| is_emf(l)) {
        match data(line) {
            Ok(found) => {
                for (namespace, datum) in found {
                    by_namespace.entry(namespace).or_default().push(datum);
                }
            }
            Err(e) => tracing::warn!(error = %e, "an EMF line left out of the local metrics"),
        }
    }
    let mut put = 0;
    for (namespace, all) in by_namespace {
        for chunk in all.chunks(PER_CALL) {
            cloudwatch
                .put_metric_data()
                .namespace(&namespace)
                .set_metric_data(Some(chunk.to_vec()))
                .send()
                .await
                .with_context(|| format!("PutMetricData {namespace} ({} data)", chunk.len()))?;
            put += chunk.len();
        }
    }
    Ok(put)
}

/// A task that puts the lines sent to it on CloudWatch as they come (gathered for up to
/// `every`), until it is dropped.
pub struct Feed {
    lines: mpsc::UnboundedSender<String>,
    /// Lines sent, and lines handled (put, left out, or their call failed and was logged).
    sent: Arc<AtomicU64>,
    handled: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

/// Where a [`Feed`]'s lines are sent from (any output line: what is not EMF is left out).
#[derive(Clone, Debug)]
pub struct FeedSender {
    lines: mpsc::UnboundedSender<String>,
    sent: Arc<AtomicU64>,
}

impl FeedSender {
    pub fn send(&self, line: String) {
        if is_emf(&line) && self.lines.send(line).is_ok() {
            self.sent.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Feed {
    pub fn start(cloudwatch: aws_sdk_cloudwatch::Client, every: Duration) -> Feed {
        let (lines, mut rx) = mpsc::unbounded_channel::<String>();
        let handled = Arc::new(AtomicU64::new(0));
        let done = handled.clone();
        let task = tokio::spawn(async move {
            while let Some(first) = rx.recv().await {
                let mut batch = vec![first];
                let until = tokio::time::Instant::now() + every;
                while batch.len() < PER_CALL {
                    match tokio::time::timeout_at(until, rx.recv()).await {
                        Ok(Some(line)) => batch.push(line),
                        Ok(None) | Err(_) => break,
                    }
                }
                if let Err(e) = put(&cloudwatch, &batch).await {
                    tracing::warn!(error = %format!("{e:#}"), "local metrics not put");
                }
                done.fetch_add(batch.len() as u64, Ordering::SeqCst);
            }
        });
        Feed {
            lines,
            sent: Arc::new(AtomicU64::new(0)),
            handled,
            task,
        }
    }

    pub fn sender(&self) -> FeedSender {
        FeedSender {
            lines: self.lines.clone(),
            sent: self.sent.clone(),
        }
    }

    /// Waits until every line sent so far is handled (for up to `limit`); whether it was.
    pub async fn settle(&self, limit: Duration) -> bool {
        let until = tokio::time::Instant::now() + limit;
        loop {
            if self.handled.load(Ordering::SeqCst) >= self.sent.load(Ordering::SeqCst) {
                return true;
            }
            if tokio::time::Instant::now() >= until {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inbox::metrics::{Metric, Metrics};

    #[test]
    fn a_count_of_the_functions_is_one_datum_with_its_dimensions() {
        let (m, _) = Metrics::memory("receiver");
        let line = m.line("stripe", Metric::Accepted, 1_796_304_000_123);
        assert!(is_emf(&line));
        let found = data(&line).expect("EMF");
        assert_eq!(found.len(), 1);
        let (namespace, datum) = &found[0];
        assert_eq!(namespace, inbox::metrics::NAMESPACE);
        assert_eq!(datum.metric_name(), Some("Accepted"));
        assert_eq!(datum.value(), Some(1.0));
        assert_eq!(datum.unit(), Some(&StandardUnit::Count));
        assert_eq!(
            datum.timestamp(),
            Some(&DateTime::from_millis(1_796_304_000_123))
        );
        let dims: Vec<_> = datum
            .dimensions()
            .iter()
            .map(|d| (d.name().unwrap_or_default(), d.value().unwrap_or_default()))
            .collect();
        assert_eq!(dims, [("source", "stripe"), ("function", "receiver")]);
    }

    #[test]
    fn a_destination_count_keeps_its_third_dimension() {
        let (m, _) = Metrics::memory("consumer");
        let line = m.destination_line("stripe", "bus", Metric::Completed, 1);
        let (_, datum) = &data(&line).expect("EMF")[0];
        let names: Vec<_> = datum.dimensions().iter().filter_map(|d| d.name()).collect();
        assert_eq!(names, ["source", "function", "destination"]);
    }

    #[test]
    fn arrays_dimension_sets_and_broken_lines() {
        let line = r#"{"_aws":{"Timestamp":5,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["a"],[]],"Metrics":[{"Name":"M"}]}]},"a":"x","M":[1,2]}"#;
        let found = data(line).expect("EMF");
        // Two values in each of two dimension sets.
        let got: Vec<(usize, Option<f64>)> = found
            .iter()
            .map(|(_, d)| (d.dimensions().len(), d.value()))
            .collect();
        assert_eq!(
            got,
            [
                (1, Some(1.0)),
                (1, Some(2.0)),
                (0, Some(1.0)),
                (0, Some(2.0))
            ]
        );
        assert_eq!(
            data(
                r#"{"_aws":{"Timestamp":5,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["a"]],"Metrics":[{"Name":"M"}]}]},"a":"x"}"#
            ),
            Err(EmfError::NoValue("M".into()))
        );
        assert_eq!(
            data(
                r#"{"_aws":{"Timestamp":5,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["a"]],"Metrics":[{"Name":"M"}]}]},"M":1}"#
            ),
            Err(EmfError::NoDimension("a".into()))
        );
        assert_eq!(data(r#"{"level":"INFO"}"#), Err(EmfError::NoMetadata));
        assert!(matches!(data("{"), Err(EmfError::NotJson(_))));
        assert!(!is_emf(r#"{"level":"INFO","message":"x"}"#));
    }
}
