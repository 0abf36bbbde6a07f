//! Engine metrics in one vocabulary: which `/metrics` series of each engine mean the same thing
//! ([`EngineProfile`], [`CanonicalMetric`]), and the arithmetic over a run's scrapes (counter
//! increase across engine restarts, gauge statistics) in [`summarize`].
//!
//! A metric an engine does not export, or a scrape that did not carry it, stays absent: never 0.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::manifest::Engine;

/// Whether a metric is a level (gauge) or a running total (counter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MetricKind {
    Gauge,
    Counter,
}

/// How the series of one metric (one per label set: engine index, finish reason, …) combine
/// into one value per scrape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregation {
    /// Totals and counts add up across series.
    Sum,
    /// Ratios average across series (two engines at 50 % usage are not at 100 %).
    Mean,
}

/// One engine-neutral metric.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, TS, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum CanonicalMetric {
    /// Requests being decoded or prefilled now.
    RequestsRunning,
    /// Requests admitted but waiting (vLLM waiting; llama.cpp deferred).
    RequestsWaiting,
    /// Fraction of the KV cache in use, 0–1.
    KvCacheUsage,
    /// Prompt tokens processed. vLLM counts every prompt token; llama.cpp only those it computed
    /// (prefix-cache hits excluded).
    PromptTokensTotal,
    /// Output tokens generated.
    GenerationTokensTotal,
    /// Prompt tokens served from the prefix cache.
    PromptTokensCachedTotal,
    /// Requests preempted for lack of KV cache.
    PreemptionsTotal,
    /// Tokens looked up in the prefix cache.
    PrefixCacheQueriesTotal,
    /// Of those, tokens found.
    PrefixCacheHitsTotal,
    /// Requests finished, any finish reason.
    RequestSuccessTotal,
    /// Requests with NaN logits (vLLM, only with `VLLM_COMPUTE_NANS_IN_LOGITS=1`).
    CorruptedRequests,
    /// Seconds spent on prompt processing (llama.cpp).
    PromptSecondsTotal,
    /// Seconds spent generating tokens (llama.cpp).
    GenerationSecondsTotal,
    /// Decode calls (llama.cpp `llama_decode`), speculative and multimodal ones excluded.
    DecodeCallsTotal,
}

impl CanonicalMetric {
    pub const ALL: [CanonicalMetric; 14] = [
        CanonicalMetric::RequestsRunning,
        CanonicalMetric::RequestsWaiting,
        CanonicalMetric::KvCacheUsage,
        CanonicalMetric::PromptTokensTotal,
        CanonicalMetric::GenerationTokensTotal,
        CanonicalMetric::PromptTokensCachedTotal,
        CanonicalMetric::PreemptionsTotal,
        CanonicalMetric::PrefixCacheQueriesTotal,
        CanonicalMetric::PrefixCacheHitsTotal,
        CanonicalMetric::RequestSuccessTotal,
        CanonicalMetric::CorruptedRequests,
        CanonicalMetric::PromptSecondsTotal,
        CanonicalMetric::GenerationSecondsTotal,
        CanonicalMetric::DecodeCallsTotal,
    ];

    pub fn kind(self) -> MetricKind {
        match self {
            CanonicalMetric::RequestsRunning
            | CanonicalMetric::RequestsWaiting
            | CanonicalMetric::KvCacheUsage => MetricKind::Gauge,
            _ => MetricKind::Counter,
        }
    }

    pub fn aggregation(self) -> Aggregation {
        match self {
            CanonicalMetric::KvCacheUsage => Aggregation::Mean,
            _ => Aggregation::Sum,
        }
    }

    /// The snake_case name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            CanonicalMetric::RequestsRunning => "requests_running",
            CanonicalMetric::RequestsWaiting => "requests_waiting",
            CanonicalMetric::KvCacheUsage => "kv_cache_usage",
            CanonicalMetric::PromptTokensTotal => "prompt_tokens_total",
            CanonicalMetric::GenerationTokensTotal => "generation_tokens_total",
            CanonicalMetric::PromptTokensCachedTotal => "prompt_tokens_cached_total",
            CanonicalMetric::PreemptionsTotal => "preemptions_total",
            CanonicalMetric::PrefixCacheQueriesTotal => "prefix_cache_queries_total",
            CanonicalMetric::PrefixCacheHitsTotal => "prefix_cache_hits_total",
            CanonicalMetric::RequestSuccessTotal => "request_success_total",
            CanonicalMetric::CorruptedRequests => "corrupted_requests",
            CanonicalMetric::PromptSecondsTotal => "prompt_seconds_total",
            CanonicalMetric::GenerationSecondsTotal => "generation_seconds_total",
            CanonicalMetric::DecodeCallsTotal => "decode_calls_total",
        }
    }
}

/// Which engine's metric names to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EngineProfile {
    Vllm,
    LlamaCpp,
}

impl EngineProfile {
    /// The profile of a manifest's engine; `None` for an engine whose names KV Gate does not know.
    pub fn for_engine(engine: &Engine) -> Option<EngineProfile> {
        match engine {
            Engine::Vllm => Some(EngineProfile::Vllm),
            Engine::LlamaCpp => Some(EngineProfile::LlamaCpp),
            Engine::Other => None,
        }
    }

    /// The sample names that carry `metric` on this engine, current name first, then deprecated
    /// ones; empty when the engine does not export it. Counter names are the sample names
    /// (`…_total`), not the family names of the `# TYPE` line.
    pub fn source_names(self, metric: CanonicalMetric) -> &'static [&'static str] {
        use CanonicalMetric as M;
        match self {
            EngineProfile::Vllm => match metric {
                M::RequestsRunning => &["vllm:num_requests_running"],
                M::RequestsWaiting => &["vllm:num_requests_waiting"],
                M::KvCacheUsage => &["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"],
                M::PromptTokensTotal => &["vllm:prompt_tokens_total"],
                M::GenerationTokensTotal => &["vllm:generation_tokens_total"],
                M::PromptTokensCachedTotal => &["vllm:prompt_tokens_cached_total"],
                M::PreemptionsTotal => &["vllm:num_preemptions_total"],
                M::PrefixCacheQueriesTotal => &[
                    "vllm:prefix_cache_queries_total",
                    "vllm:gpu_prefix_cache_queries_total",
                    "vllm:gpu_prefix_cache_queries",
                ],
                M::PrefixCacheHitsTotal => &[
                    "vllm:prefix_cache_hits_total",
                    "vllm:gpu_prefix_cache_hits_total",
                    "vllm:gpu_prefix_cache_hits",
                ],
                M::RequestSuccessTotal => &["vllm:request_success_total"],
                M::CorruptedRequests => {
                    &["vllm:corrupted_requests_total", "vllm:corrupted_requests"]
                }
                M::PromptSecondsTotal | M::GenerationSecondsTotal | M::DecodeCallsTotal => &[],
            },
            EngineProfile::LlamaCpp => match metric {
                M::RequestsRunning => &["llamacpp:requests_processing"],
                M::RequestsWaiting => &["llamacpp:requests_deferred"],
                M::PromptTokensTotal => &["llamacpp:prompt_tokens_total"],
                M::GenerationTokensTotal => &["llamacpp:tokens_predicted_total"],
                M::PromptTokensCachedTotal => &["llamacpp:prompt_tokens_cached_total"],
                M::PromptSecondsTotal => &["llamacpp:prompt_seconds_total"],
                M::GenerationSecondsTotal => &["llamacpp:tokens_predicted_seconds_total"],
                M::DecodeCallsTotal => &["llamacpp:n_decode_total"],
                M::KvCacheUsage
                | M::PreemptionsTotal
                | M::PrefixCacheQueriesTotal
                | M::PrefixCacheHitsTotal
                | M::RequestSuccessTotal
                | M::CorruptedRequests => &[],
            },
        }
    }

    /// The prefix of this engine's metric names.
    pub fn prefix(self) -> &'static str {
        match self {
            EngineProfile::Vllm => "vllm:",
            EngineProfile::LlamaCpp => "llamacpp:",
        }
    }

    /// The engine whose prefix a metric name carries.
    pub fn of_name(name: &str) -> Option<EngineProfile> {
        [EngineProfile::Vllm, EngineProfile::LlamaCpp]
            .into_iter()
            .find(|p| name.starts_with(p.prefix()))
    }

    /// Whether KV Gate knows a metric family of this engine (a `# TYPE` name or a sample
    /// name): read into the canonical vocabulary, or recognised and deliberately not read
    /// (engine-wide histograms, which are never split across request classes; configuration
    /// gauges; cost estimates). Names of every vLLM version seen in real scrapes are here, so a
    /// name outside this list is a new one, reported on import rather than dropped silently.
    pub fn knows_family(self, family: &str) -> bool {
        let mut base = family;
        for suffix in ["_created", "_bucket", "_sum", "_count"] {
            if let Some(b) = base.strip_suffix(suffix) {
                base = b;
                break;
            }
        }
        let read = CanonicalMetric::ALL.into_iter().any(|m| {
            self.source_names(m)
                .iter()
                .any(|n| *n == base || n.strip_suffix("_total") == Some(base))
        });
        let recognised = match self {
            EngineProfile::Vllm => VLLM_RECOGNISED,
            EngineProfile::LlamaCpp => LLAMACPP_RECOGNISED,
        };
        read || recognised
            .iter()
            .any(|n| *n == base || n.strip_suffix("_total") == Some(base))
    }

    /// The metric a sample name carries on this engine, with its position in
    /// [`source_names`](Self::source_names) (0 = current name).
    pub fn metric_for(self, name: &str) -> Option<(CanonicalMetric, usize)> {
        CanonicalMetric::ALL.into_iter().find_map(|m| {
            self.source_names(m)
                .iter()
                .position(|n| *n == name)
                .map(|i| (m, i))
        })
    }
}

/// vLLM families recognised and not read as canonical metrics (vLLM 0.6 … 0.29 scrapes).
const VLLM_RECOGNISED: &[&str] = &[
    "vllm:cache_config_info",
    "vllm:engine_sleep_state",
    "vllm:num_requests_waiting_by_reason",
    "vllm:num_requests_swapped",
    "vllm:cpu_cache_usage_perc",
    "vllm:cpu_prefix_cache_hit_rate",
    "vllm:gpu_prefix_cache_hit_rate",
    "vllm:estimated_flops_per_gpu_total",
    "vllm:estimated_read_bytes_per_gpu_total",
    "vllm:estimated_write_bytes_per_gpu_total",
    "vllm:external_prefix_cache_queries_total",
    "vllm:external_prefix_cache_hits_total",
    "vllm:mm_cache_queries_total",
    "vllm:mm_cache_hits_total",
    "vllm:prompt_tokens_by_source_total",
    "vllm:request_prompt_tokens",
    "vllm:request_generation_tokens",
    "vllm:iteration_tokens_total",
    "vllm:request_max_num_generation_tokens",
    "vllm:request_params_n",
    "vllm:request_params_max_tokens",
    "vllm:request_params_best_of",
    "vllm:time_to_first_token_seconds",
    "vllm:time_per_output_token_seconds",
    "vllm:inter_token_latency_seconds",
    "vllm:request_time_per_output_token_seconds",
    "vllm:e2e_request_latency_seconds",
    "vllm:request_queue_time_seconds",
    "vllm:request_inference_time_seconds",
    "vllm:request_prefill_time_seconds",
    "vllm:request_decode_time_seconds",
    "vllm:request_prefill_kv_computed_tokens",
    "vllm:avg_prompt_throughput_toks_per_s",
    "vllm:avg_generation_throughput_toks_per_s",
    "vllm:spec_decode_draft_acceptance_rate",
    "vllm:spec_decode_efficiency",
    "vllm:spec_decode_num_accepted_tokens_total",
    "vllm:spec_decode_num_draft_tokens_total",
    "vllm:spec_decode_num_drafts_total",
    "vllm:spec_decode_num_emitted_tokens_total",
    "vllm:spec_decode_num_accepted_tokens_per_pos_total",
    "vllm:lora_requests_info",
    "vllm:kv_cache_usage_perc",
];

/// llama.cpp families recognised and not read as canonical metrics.
const LLAMACPP_RECOGNISED: &[&str] = &[
    "llamacpp:n_tokens_max",
    "llamacpp:prompt_tokens_seconds",
    "llamacpp:predicted_tokens_seconds",
    "llamacpp:n_busy_slots_per_decode",
    "llamacpp:kv_cache_usage_ratio",
    "llamacpp:kv_cache_tokens",
    "llamacpp:spec_decode_num_draft_tokens_total",
    "llamacpp:spec_decode_num_accepted_tokens_total",
    "llamacpp:spec_decode_num_drafts_total",
];

/// One scrape's samples in the canonical vocabulary.
///
/// - `_created` series (creation timestamps) are skipped;
/// - the series of one name add up across label sets (engines, finish reasons), except ratios
///   ([`Aggregation::Mean`]), which average;
/// - when several names of one metric are present (an engine exporting a current and a
///   deprecated name side by side), the first listed in `source_names` wins: never both;
/// - NaN and infinite values are skipped, so a metric with no finite sample stays absent;
/// - labels do not select anything: every series of a matching name counts.
pub fn normalize<'a>(
    profile: EngineProfile,
    samples: impl IntoIterator<Item = (&'a str, &'a BTreeMap<String, String>, f64)>,
) -> BTreeMap<CanonicalMetric, f64> {
    // metric → (priority of the name, sum, series count) of the best name seen so far.
    let mut best: BTreeMap<CanonicalMetric, (usize, f64, u32)> = BTreeMap::new();
    for (name, _labels, value) in samples {
        if name.ends_with("_created") || !value.is_finite() {
            continue;
        }
        let Some((metric, priority)) = profile.metric_for(name) else {
            continue;
        };
        let slot = best.entry(metric).or_insert((priority, 0.0, 0));
        if priority < slot.0 {
            *slot = (priority, 0.0, 0);
        }
        if priority == slot.0 {
            slot.1 += value;
            slot.2 += 1;
        }
    }
    best.into_iter()
        .map(|(m, (_, sum, n))| {
            let value = match m.aggregation() {
                Aggregation::Sum => sum,
                Aggregation::Mean => sum / f64::from(n),
            };
            (m, value)
        })
        .collect()
}

/// One scrape in canonical form, at milliseconds on the run clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct MetricPoint {
    pub at_ms: f64,
    /// Metrics the scrape carried; a missing key is a metric not seen in that scrape.
    pub values: BTreeMap<CanonicalMetric, f64>,
}

/// A counter that went down between two scrapes: the engine restarted in between.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct RestartBoundary {
    /// The scrape before the restart.
    pub previous_at_ms: f64,
    /// The first scrape after it.
    pub at_ms: f64,
    pub metric: CanonicalMetric,
    pub before: f64,
    pub after: f64,
}

/// A counter over a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct CounterSummary {
    /// Scrapes that carried the counter.
    pub scrapes: u32,
    pub first: f64,
    pub last: f64,
    /// Prometheus-style increase: the sum of positive steps, a reset counting its new value as
    /// increase from 0. A lower bound when the engine restarted (what it counted after the last
    /// scrape before the restart is lost). `None` with fewer than two scrapes.
    pub increase: Option<f64>,
    /// Times the counter went down.
    pub resets: u32,
}

/// A gauge over a run; plain statistics over scrapes (not weighted by time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct GaugeSummary {
    /// Scrapes that carried the gauge.
    pub scrapes: u32,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub last: f64,
}

/// What a run's scrapes say, per metric; metrics never seen are absent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct MetricSummary {
    /// Scrapes summarized.
    pub scrapes: u32,
    pub first_at_ms: Option<f64>,
    pub last_at_ms: Option<f64>,
    pub counters: BTreeMap<CanonicalMetric, CounterSummary>,
    pub gauges: BTreeMap<CanonicalMetric, GaugeSummary>,
    /// Every counter decrease, in time order; one restart usually shows in several counters.
    pub restarts: Vec<RestartBoundary>,
}

impl MetricSummary {
    /// The distinct restarts: the first scrape after each, in time order.
    pub fn restart_scrapes_ms(&self) -> Vec<f64> {
        let mut at: Vec<f64> = self.restarts.iter().map(|r| r.at_ms).collect();
        at.sort_by(f64::total_cmp);
        at.dedup();
        at
    }
}

/// Summarizes a run's scrapes, taken in time order (`at_ms`; input order breaks ties). Values
/// that are not finite count as not scraped.
pub fn summarize(points: &[MetricPoint]) -> MetricSummary {
    let mut ordered: Vec<&MetricPoint> = points.iter().collect();
    ordered.sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));

    let mut series: BTreeMap<CanonicalMetric, Vec<(f64, f64)>> = BTreeMap::new();
    for p in &ordered {
        for (m, v) in &p.values {
            if v.is_finite() {
                series.entry(*m).or_default().push((p.at_ms, *v));
            }
        }
    }

    let mut counters = BTreeMap::new();
    let mut gauges = BTreeMap::new();
    let mut restarts = Vec::new();
    for (metric, values) in series {
        let (Some(&(_, first)), Some(&(_, last))) = (values.first(), values.last()) else {
            continue;
        };
        let scrapes = values.len() as u32;
        match metric.kind() {
            MetricKind::Counter => {
                let mut increase = 0.0;
                let mut resets = 0;
                for w in values.windows(2) {
                    let ((t0, before), (t1, after)) = (w[0], w[1]);
                    if after < before {
                        resets += 1;
                        increase += after;
                        restarts.push(RestartBoundary {
                            previous_at_ms: t0,
                            at_ms: t1,
                            metric,
                            before,
                            after,
                        });
                    } else {
                        increase += after - before;
                    }
                }
                counters.insert(
                    metric,
                    CounterSummary {
                        scrapes,
                        first,
                        last,
                        increase: (scrapes >= 2).then_some(increase),
                        resets,
                    },
                );
            }
            MetricKind::Gauge => {
                let vs = values.iter().map(|(_, v)| *v);
                gauges.insert(
                    metric,
                    GaugeSummary {
                        scrapes,
                        min: vs.clone().fold(f64::INFINITY, f64::min),
                        max: vs.clone().fold(f64::NEG_INFINITY, f64::max),
                        mean: vs.sum::<f64>() / f64::from(scrapes),
                        last,
                    },
                );
            }
        }
    }
    restarts.sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));

    MetricSummary {
        scrapes: ordered.len() as u32,
        first_at_ms: ordered.first().map(|p| p.at_ms),
        last_at_ms: ordered.last().map(|p| p.at_ms),
        counters,
        gauges,
        restarts,
    }
}

/// One scrape of a run's load series: engine-wide gauges as read, and the preemptions counted
/// since the scrape before. Absent = the scrape did not carry it (llama.cpp has no KV usage
/// gauge), never 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct SeriesPoint {
    /// Run-clock milliseconds.
    pub at_ms: f64,
    /// KV cache usage share, 0–1.
    pub kv_usage: Option<f64>,
    pub waiting: Option<f64>,
    pub running: Option<f64>,
    /// Preemptions since the previous scrape carrying the counter; after a restart, the new
    /// process's count from 0 (never negative). Absent on the first such scrape.
    pub preemptions_delta: Option<f64>,
}

/// A run's engine-wide load over its clock (never split by request class: the engine does not
/// know them), with where the engine restarted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct RunSeries {
    pub run_id: i64,
    /// In time order.
    pub points: Vec<SeriesPoint>,
    /// The first scrape after each restart (any counter went down), in time order.
    pub restarts_at_ms: Vec<f64>,
}

/// The load series of a run's scrapes (taken in time order, as [`summarize`] takes them).
pub fn run_series(run_id: i64, points: &[MetricPoint]) -> RunSeries {
    let mut ordered: Vec<&MetricPoint> = points.iter().collect();
    ordered.sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));
    let finite =
        |p: &MetricPoint, m: CanonicalMetric| p.values.get(&m).copied().filter(|v| v.is_finite());
    let mut previous_preemptions: Option<f64> = None;
    let series = ordered
        .iter()
        .map(|p| {
            let preemptions = finite(p, CanonicalMetric::PreemptionsTotal);
            let preemptions_delta = match (previous_preemptions, preemptions) {
                // A counter that went down restarted from 0: its value is what it counted since.
                (Some(before), Some(now)) if now < before => Some(now),
                (Some(before), Some(now)) => Some(now - before),
                _ => None,
            };
            if preemptions.is_some() {
                previous_preemptions = preemptions;
            }
            SeriesPoint {
                at_ms: p.at_ms,
                kv_usage: finite(p, CanonicalMetric::KvCacheUsage),
                waiting: finite(p, CanonicalMetric::RequestsWaiting),
                running: finite(p, CanonicalMetric::RequestsRunning),
                preemptions_delta,
            }
        })
        .collect();
    RunSeries {
        run_id,
        points: series,
        restarts_at_ms: summarize(points).restart_scrapes_ms(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use CanonicalMetric as M;

    fn no_labels() -> BTreeMap<String, String> {
        BTreeMap::new()
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn point(at_ms: f64, values: &[(CanonicalMetric, f64)]) -> MetricPoint {
        MetricPoint {
            at_ms,
            values: values.iter().copied().collect(),
        }
    }

    #[test]
    fn profiles_follow_the_engine() {
        assert_eq!(
            EngineProfile::for_engine(&Engine::Vllm),
            Some(EngineProfile::Vllm)
        );
        assert_eq!(
            EngineProfile::for_engine(&Engine::LlamaCpp),
            Some(EngineProfile::LlamaCpp)
        );
        assert_eq!(EngineProfile::for_engine(&Engine::Other), None);
    }

    #[test]
    fn names_are_the_engines_own() {
        let v = EngineProfile::Vllm;
        assert_eq!(
            v.source_names(M::KvCacheUsage),
            ["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"]
        );
        assert_eq!(
            v.metric_for("vllm:gpu_cache_usage_perc"),
            Some((M::KvCacheUsage, 1))
        );
        assert_eq!(
            v.metric_for("vllm:num_preemptions_total"),
            Some((M::PreemptionsTotal, 0))
        );
        let l = EngineProfile::LlamaCpp;
        assert_eq!(
            l.metric_for("llamacpp:tokens_predicted_total"),
            Some((M::GenerationTokensTotal, 0))
        );
        assert_eq!(
            l.metric_for("llamacpp:requests_deferred"),
            Some((M::RequestsWaiting, 0))
        );
        // llama.cpp exports no KV usage gauge and no preemption counter: absent, not 0.
        assert!(l.source_names(M::KvCacheUsage).is_empty());
        assert!(l.source_names(M::PreemptionsTotal).is_empty());
        assert_eq!(l.metric_for("llamacpp:n_tokens_max"), None);
        assert_eq!(l.metric_for("vllm:prompt_tokens_total"), None);
        // No name is claimed by two metrics, and every name carries its engine's prefix.
        for profile in [v, l] {
            let prefix = match profile {
                EngineProfile::Vllm => "vllm:",
                EngineProfile::LlamaCpp => "llamacpp:",
            };
            let mut seen = std::collections::BTreeSet::new();
            for m in CanonicalMetric::ALL {
                for name in profile.source_names(m) {
                    assert!(seen.insert(*name), "{name}");
                    assert!(name.starts_with(prefix), "{name}");
                    assert_eq!(profile.metric_for(name).map(|(x, _)| x), Some(m));
                }
            }
        }
    }

    #[test]
    fn kinds_and_serialized_names() {
        assert_eq!(M::KvCacheUsage.kind(), MetricKind::Gauge);
        assert_eq!(M::RequestsWaiting.kind(), MetricKind::Gauge);
        assert_eq!(M::PromptTokensTotal.kind(), MetricKind::Counter);
        assert_eq!(M::CorruptedRequests.kind(), MetricKind::Counter);
        for m in CanonicalMetric::ALL {
            assert_eq!(
                serde_json::to_value(m).unwrap(),
                serde_json::Value::String(m.as_str().into())
            );
        }
    }

    #[test]
    fn normalize_sums_series_and_skips_created() {
        let stop = labels(&[("finished_reason", "stop")]);
        let length = labels(&[("finished_reason", "length")]);
        let e0 = labels(&[("engine", "0")]);
        let e1 = labels(&[("engine", "1")]);
        let none = no_labels();
        let samples = vec![
            ("vllm:request_success_total", &stop, 7.0),
            ("vllm:request_success_total", &length, 3.0),
            ("vllm:request_success_created", &stop, 1.7e9),
            ("vllm:prompt_tokens_created", &none, 1.7e9),
            ("vllm:prompt_tokens_total", &e0, 1000.0),
            ("vllm:prompt_tokens_total", &e1, 500.0),
            ("vllm:kv_cache_usage_perc", &e0, 0.5),
            ("vllm:kv_cache_usage_perc", &e1, 0.25),
            ("vllm:num_requests_running", &e0, 2.0),
            ("vllm:num_requests_running", &e1, 1.0),
            ("vllm:time_to_first_token_seconds_sum", &none, 3.0),
            ("process_cpu_seconds_total", &none, 12.0),
        ];
        let got = normalize(EngineProfile::Vllm, samples.iter().copied());
        let want: BTreeMap<CanonicalMetric, f64> = [
            (M::RequestSuccessTotal, 10.0),
            (M::PromptTokensTotal, 1500.0),
            (M::KvCacheUsage, 0.375),
            (M::RequestsRunning, 3.0),
        ]
        .into_iter()
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn normalize_prefers_the_current_name_and_never_adds_both() {
        let none = no_labels();
        let both = [
            ("vllm:gpu_cache_usage_perc", &none, 0.9),
            ("vllm:kv_cache_usage_perc", &none, 0.4),
            ("vllm:gpu_prefix_cache_hits_total", &none, 70.0),
        ];
        let got = normalize(EngineProfile::Vllm, both);
        assert_eq!(got[&M::KvCacheUsage], 0.4);
        // Only the deprecated name present: it is read.
        assert_eq!(got[&M::PrefixCacheHitsTotal], 70.0);
        let older = normalize(
            EngineProfile::Vllm,
            [("vllm:gpu_cache_usage_perc", &none, 0.9)],
        );
        assert_eq!(older[&M::KvCacheUsage], 0.9);
    }

    #[test]
    fn normalize_keeps_missing_and_non_finite_absent() {
        let none = no_labels();
        let got = normalize(
            EngineProfile::LlamaCpp,
            [
                ("llamacpp:prompt_tokens_total", &none, 33.0),
                ("llamacpp:prompt_tokens_cached_total", &none, 31.0),
                ("llamacpp:requests_processing", &none, f64::NAN),
                ("llamacpp:n_tokens_max", &none, 43.0),
                ("vllm:kv_cache_usage_perc", &none, 0.5),
            ],
        );
        assert_eq!(
            got.into_iter().collect::<Vec<_>>(),
            [
                (M::PromptTokensTotal, 33.0),
                (M::PromptTokensCachedTotal, 31.0)
            ]
        );
        assert!(normalize(EngineProfile::Vllm, []).is_empty());
    }

    #[test]
    fn series_deltas_never_go_negative_across_a_restart() {
        // Synthetic: preemptions 2 → 5 → (restart) 1 → 4; a scrape without the counter between.
        let points = [
            point(
                3_000.0,
                &[(M::PreemptionsTotal, 1.0), (M::KvCacheUsage, 0.2)],
            ),
            point(0.0, &[(M::PreemptionsTotal, 2.0), (M::KvCacheUsage, 0.5)]),
            point(
                1_000.0,
                &[(M::PreemptionsTotal, 5.0), (M::RequestsWaiting, 3.0)],
            ),
            point(2_000.0, &[(M::RequestsRunning, 8.0)]),
            point(
                4_000.0,
                &[(M::PreemptionsTotal, 4.0), (M::KvCacheUsage, f64::NAN)],
            ),
        ];
        let s = run_series(9, &points);
        let deltas: Vec<Option<f64>> = s.points.iter().map(|p| p.preemptions_delta).collect();
        // 5 − 2; absent where not scraped; after the restart 1 counted from 0, then 4 − 1.
        assert_eq!(deltas, [None, Some(3.0), None, Some(1.0), Some(3.0)]);
        assert_eq!(s.restarts_at_ms, [3_000.0]);
        let usage: Vec<Option<f64>> = s.points.iter().map(|p| p.kv_usage).collect();
        // A NaN gauge is not a reading.
        assert_eq!(usage, [Some(0.5), None, None, Some(0.2), None]);
        assert_eq!(s.points[1].waiting, Some(3.0));
        assert_eq!(s.points[2].running, Some(8.0));
        assert_eq!(s.points[0].running, None);
    }

    #[test]
    fn counter_increase_counts_a_reset_from_zero_and_marks_a_restart() {
        // Values of the real q8_0 scrapes in fixtures/metrics/: fresh, one request, then the
        // server restarted and served one more request.
        let points = [
            point(
                0.0,
                &[
                    (M::PromptTokensTotal, 0.0),
                    (M::GenerationTokensTotal, 0.0),
                    (M::RequestsRunning, 0.0),
                ],
            ),
            point(
                1_000.0,
                &[
                    (M::PromptTokensTotal, 33.0),
                    (M::GenerationTokensTotal, 16.0),
                    (M::RequestsRunning, 1.0),
                ],
            ),
            point(
                9_000.0,
                &[
                    (M::PromptTokensTotal, 32.0),
                    (M::GenerationTokensTotal, 4.0),
                    (M::RequestsRunning, 0.0),
                ],
            ),
        ];
        let s = summarize(&points);
        assert_eq!(s.scrapes, 3);
        assert_eq!((s.first_at_ms, s.last_at_ms), (Some(0.0), Some(9_000.0)));
        let prompt = &s.counters[&M::PromptTokensTotal];
        assert_eq!(prompt.increase, Some(65.0));
        assert_eq!((prompt.first, prompt.last, prompt.resets), (0.0, 32.0, 1));
        assert_eq!(s.counters[&M::GenerationTokensTotal].increase, Some(20.0));
        assert_eq!(
            s.restarts,
            [
                RestartBoundary {
                    previous_at_ms: 1_000.0,
                    at_ms: 9_000.0,
                    metric: M::PromptTokensTotal,
                    before: 33.0,
                    after: 32.0
                },
                RestartBoundary {
                    previous_at_ms: 1_000.0,
                    at_ms: 9_000.0,
                    metric: M::GenerationTokensTotal,
                    before: 16.0,
                    after: 4.0
                },
            ]
        );
        assert_eq!(s.restart_scrapes_ms(), [9_000.0]);
        let running = &s.gauges[&M::RequestsRunning];
        assert_eq!(
            (running.min, running.max, running.last, running.scrapes),
            (0.0, 1.0, 0.0, 3)
        );
        assert!((running.mean - 1.0 / 3.0).abs() < 1e-12);
        assert!(!s.counters.contains_key(&M::RequestsRunning));
    }

    #[test]
    fn scrapes_are_taken_in_time_order() {
        let shuffled = [
            point(2.0, &[(M::PreemptionsTotal, 5.0)]),
            point(0.0, &[(M::PreemptionsTotal, 1.0)]),
            point(1.0, &[(M::PreemptionsTotal, 2.0)]),
        ];
        let s = summarize(&shuffled);
        assert_eq!(s.counters[&M::PreemptionsTotal].increase, Some(4.0));
        assert!(s.restarts.is_empty());
        assert_eq!(s.first_at_ms, Some(0.0));
    }

    #[test]
    fn missing_values_stay_absent() {
        let empty = summarize(&[]);
        assert_eq!(empty.scrapes, 0);
        assert_eq!(empty.first_at_ms, None);
        assert!(empty.counters.is_empty() && empty.gauges.is_empty());

        let points = [
            point(0.0, &[(M::PromptTokensTotal, 10.0), (M::KvCacheUsage, 0.2)]),
            point(1.0, &[(M::KvCacheUsage, f64::NAN)]),
            point(2.0, &[(M::PromptTokensTotal, 25.0)]),
            point(3.0, &[(M::CorruptedRequests, 0.0)]),
        ];
        let s = summarize(&points);
        // A gap is bridged: the step spans the scrapes that carried the counter.
        assert_eq!(s.counters[&M::PromptTokensTotal].increase, Some(15.0));
        assert_eq!(s.counters[&M::PromptTokensTotal].scrapes, 2);
        // One observation has no increase.
        assert_eq!(s.counters[&M::CorruptedRequests].increase, None);
        let usage = &s.gauges[&M::KvCacheUsage];
        assert_eq!((usage.scrapes, usage.mean), (1, 0.2));
        assert!(!s.gauges.contains_key(&M::RequestsWaiting));
        assert!(!s.counters.contains_key(&M::PreemptionsTotal));
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(
            json["counters"]["corrupted_requests"]["increase"],
            serde_json::Value::Null
        );
        assert!(json["counters"].get("preemptions_total").is_none());
    }

    #[test]
    fn repeated_resets_each_count() {
        let points = [
            point(0.0, &[(M::RequestSuccessTotal, 5.0)]),
            point(1.0, &[(M::RequestSuccessTotal, 0.0)]),
            point(2.0, &[(M::RequestSuccessTotal, 4.0)]),
            point(3.0, &[(M::RequestSuccessTotal, 1.0)]),
            point(4.0, &[(M::RequestSuccessTotal, 1.0)]),
        ];
        let s = summarize(&points);
        let c = &s.counters[&M::RequestSuccessTotal];
        assert_eq!((c.increase, c.resets), (Some(5.0), 2));
        assert_eq!(s.restart_scrapes_ms(), [1.0, 3.0]);
    }

    #[test]
    fn types_export_to_typescript_and_json_schema() {
        let cfg = crate::ts_config();
        let decl = <CanonicalMetric as TS>::decl(&cfg);
        assert!(decl.contains("\"kv_cache_usage\""), "{decl}");
        let decl = <MetricSummary as TS>::decl(&cfg);
        assert!(decl.contains("restarts: Array<RestartBoundary>"), "{decl}");
        assert!(decl.contains("first_at_ms: number | null"), "{decl}");
        let decl = <CounterSummary as TS>::decl(&cfg);
        assert!(decl.contains("increase: number | null"), "{decl}");
        let schema = serde_json::to_value(schemars::schema_for!(MetricPoint)).unwrap();
        assert!(schema["properties"]["values"].is_object(), "{schema}");
        let back: MetricPoint =
            serde_json::from_str(r#"{"at_ms": 5, "values": {"requests_running": 2}}"#).unwrap();
        assert_eq!(back, point(5.0, &[(M::RequestsRunning, 2.0)]));
    }
}
