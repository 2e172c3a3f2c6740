//! The overview's figures: per source, the last 24 hours of the functions' own counts (the EMF
//! metrics of `inbox::metrics`, namespace `WebhookInbox`, dimensions `source` and `function`),
//! one `GetMetricData` call for every source and series, hourly sums; and the stack's alarms
//! in ALARM (`DescribeAlarms` of the stack's alarm names).

use std::collections::BTreeMap;

use anyhow::anyhow;
use aws_sdk_cloudwatch::primitives::DateTime;
use aws_sdk_cloudwatch::types::{Dimension, Metric, MetricDataQuery, MetricStat, StateValue};
use inbox::metrics::{Metric as Count, NAMESPACE};

/// Hours drawn.
pub const HOURS: usize = 24;
const HOUR_S: i64 = 3600;

/// One drawn series: its label and the counts that make it, each `(function, metric)`.
pub struct Series {
    pub label: &'static str,
    pub counts: &'static [(&'static str, Count)],
}

/// What the overview draws per source.
pub const SERIES: &[Series] = &[
    Series {
        label: "accepted",
        counts: &[("receiver", Count::Accepted)],
    },
    Series {
        label: "replayed",
        counts: &[("receiver", Count::Replayed)],
    },
    Series {
        label: "rejected",
        counts: &[
            ("receiver", Count::Rejected),
            ("receiver", Count::SignatureRejected),
        ],
    },
    Series {
        label: "failed",
        counts: &[("consumer", Count::Failed)],
    },
    Series {
        label: "dead-lettered",
        counts: &[("consumer", Count::DeadLettered)],
    },
];

/// One source's series: hourly sums, oldest first, [`HOURS`] of them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceFigures {
    pub source: String,
    pub series: Vec<(&'static str, Vec<f64>)>,
}

/// The hour the window starts (epoch seconds): `HOURS` whole hours ending with the current one.
pub fn window_start(now_s: i64) -> i64 {
    now_s - now_s.rem_euclid(HOUR_S) - (HOURS as i64 - 1) * HOUR_S
}

/// The last 24 hours of each source's series.
pub async fn last_day(
    cloudwatch: &aws_sdk_cloudwatch::Client,
    sources: &[String],
    now_s: i64,
) -> anyhow::Result<Vec<SourceFigures>> {
    let start = window_start(now_s);
    let mut queries = Vec::new();
    // id -> (source index, series index)
    let mut ids = BTreeMap::new();
    for (si, source) in sources.iter().enumerate() {
        for (ri, series) in SERIES.iter().enumerate() {
            for (ci, (function, count)) in series.counts.iter().enumerate() {
                let id = format!("m{si}_{ri}_{ci}");
                let metric = Metric::builder()
                    .namespace(NAMESPACE)
                    .metric_name(count.name())
                    .dimensions(Dimension::builder().name("source").value(source).build())
                    .dimensions(
                        Dimension::builder()
                            .name("function")
                            .value(*function)
                            .build(),
                    )
                    .build();
                let stat = MetricStat::builder()
                    .metric(metric)
                    .period(3600)
                    .stat("Sum")
                    .build();
                queries.push(
                    MetricDataQuery::builder()
                        .id(&id)
                        .metric_stat(stat)
                        .return_data(true)
                        .build(),
                );
                ids.insert(id, (si, ri));
            }
        }
    }
    let mut figures: Vec<SourceFigures> = sources
        .iter()
        .map(|s| SourceFigures {
            source: s.clone(),
            series: SERIES.iter().map(|r| (r.label, vec![0.0; HOURS])).collect(),
        })
        .collect();
    // At most 500 queries a call.
    for chunk in queries.chunks(500) {
        let mut next: Option<String> = None;
        loop {
            let out = cloudwatch
                .get_metric_data()
                .set_metric_data_queries(Some(chunk.to_vec()))
                .start_time(DateTime::from_secs(start))
                .end_time(DateTime::from_secs(start + HOURS as i64 * HOUR_S))
                .set_next_token(next.take())
                .send()
                .await
                .map_err(|e| anyhow!("GetMetricData: {}", short(&e)))?;
            for result in out.metric_data_results() {
                let Some(&(si, ri)) = result.id().and_then(|id| ids.get(id)) else {
                    continue;
                };
                for (at, value) in result.timestamps().iter().zip(result.values()) {
                    let hour = (at.secs() - start).div_euclid(HOUR_S);
                    if let Ok(h) = usize::try_from(hour) {
                        if h < HOURS {
                            figures[si].series[ri].1[h] += value;
                        }
                    }
                }
            }
            next = out.next_token().map(str::to_owned);
            if next.is_none() {
                break;
            }
        }
    }
    Ok(figures)
}

/// The names among `alarm_names` in ALARM, each with its reason.
pub async fn alarms_firing(
    cloudwatch: &aws_sdk_cloudwatch::Client,
    alarm_names: &[String],
) -> anyhow::Result<Vec<(String, String)>> {
    let mut firing = Vec::new();
    for chunk in alarm_names.chunks(100) {
        let out = cloudwatch
            .describe_alarms()
            .set_alarm_names(Some(chunk.to_vec()))
            .state_value(StateValue::Alarm)
            .send()
            .await
            .map_err(|e| anyhow!("DescribeAlarms: {}", short(&e)))?;
        // The state is checked here too: a server that reads `AlarmNames` and not
        // `StateValue` (moto 5.2.5) answers every alarm named.
        for alarm in out
            .metric_alarms()
            .iter()
            .filter(|a| a.state_value() == Some(&StateValue::Alarm))
        {
            firing.push((
                alarm.alarm_name().unwrap_or_default().to_owned(),
                alarm.state_reason().unwrap_or_default().to_owned(),
            ));
        }
    }
    Ok(firing)
}

/// A failed CloudWatch call in a line: its error code and message, else the HTTP status (a
/// server that does not speak the protocol), else what the SDK says.
fn short<E: aws_sdk_cloudwatch::error::ProvideErrorMetadata + std::error::Error + 'static>(
    e: &aws_sdk_cloudwatch::error::SdkError<E, aws_sdk_cloudwatch::config::http::HttpResponse>,
) -> String {
    use aws_sdk_cloudwatch::error::ProvideErrorMetadata as _;
    match (e.code(), e.message(), e.raw_response()) {
        (Some(code), message, _) => format!("{code}: {}", message.unwrap_or_default()),
        (None, _, Some(raw)) => format!(
            "answered HTTP {} without an AWS error",
            raw.status().as_u16()
        ),
        _ => aws_sdk_cloudwatch::error::DisplayErrorContext(e).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_is_24_whole_hours_ending_with_this_one() {
        // 2026-12-03T13:20:00Z
        let now = 1_796_304_000;
        let start = window_start(now);
        assert_eq!(start % 3600, 0);
        assert_eq!(start, 1_796_302_800 - 23 * 3600);
        assert!(now < start + 24 * 3600);
    }

    #[test]
    fn every_series_names_counts_the_functions_emit() {
        let labels: Vec<_> = SERIES.iter().map(|s| s.label).collect();
        assert_eq!(
            labels,
            [
                "accepted",
                "replayed",
                "rejected",
                "failed",
                "dead-lettered"
            ]
        );
        for s in SERIES {
            for (function, _) in s.counts {
                assert!(["receiver", "consumer"].contains(function));
            }
        }
    }
}
