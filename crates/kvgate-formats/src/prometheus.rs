//! Prometheus text exposition format 0.0.4 (what vLLM's and llama.cpp's `/metrics` serve), and
//! the compatibility evidence vLLM publishes there (`vllm:cache_config_info`).
//!
//! Parsing works one line at a time ([`ExpositionParser::push_line`]), so a caller reading a
//! stream never holds more than one line; [`parse_exposition`] does it for a whole text. Every
//! error names the 1-based line and column, what was expected and what was found.
//!
//! Accepted: `# HELP` and `# TYPE` lines (other `#` lines are comments), blank lines, CRLF line
//! ends, leading blanks, label values with the escapes `\\`, `\"` and `\n`, a trailing comma in
//! a label set, values `NaN`, `+Inf`, `-Inf`, and an optional integer timestamp in milliseconds.

use std::collections::BTreeMap;

use kvgate_core::compat::ObservedEngine;

/// The type a `# TYPE` line declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    Counter,
    Gauge,
    Histogram,
    Summary,
    Untyped,
}

impl MetricType {
    pub fn parse(s: &str) -> Option<MetricType> {
        match s {
            "counter" => Some(MetricType::Counter),
            "gauge" => Some(MetricType::Gauge),
            "histogram" => Some(MetricType::Histogram),
            "summary" => Some(MetricType::Summary),
            "untyped" => Some(MetricType::Untyped),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            MetricType::Counter => "counter",
            MetricType::Gauge => "gauge",
            MetricType::Histogram => "histogram",
            MetricType::Summary => "summary",
            MetricType::Untyped => "untyped",
        }
    }
}

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
    pub timestamp_ms: Option<i64>,
    /// 1-based line number in the exposition.
    pub line: usize,
}

/// A whole exposition: its samples in order, and the declared types and help texts by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exposition {
    pub samples: Vec<Sample>,
    pub types: BTreeMap<String, MetricType>,
    pub help: BTreeMap<String, String>,
}

impl Exposition {
    /// The declared type of a sample name: its own `# TYPE`, else its family's (the name without
    /// `_total`, `_created`, `_bucket`, `_sum` or `_count`).
    pub fn type_of(&self, sample_name: &str) -> Option<MetricType> {
        if let Some(t) = self.types.get(sample_name) {
            return Some(*t);
        }
        ["_total", "_created", "_bucket", "_sum", "_count"]
            .iter()
            .filter_map(|suffix| sample_name.strip_suffix(suffix))
            .find_map(|family| self.types.get(family).copied())
    }

    /// The samples with exactly this name, in order.
    pub fn samples_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |s| s.name == name)
    }
}

/// Why an exposition cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}{}: expected {expected}, found {found}", column.map(|c| format!(", column {c}")).unwrap_or_default())]
pub struct PromError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters), when the problem sits at one place in the line.
    pub column: Option<usize>,
    pub expected: String,
    pub found: String,
}

/// What one line of an exposition holds.
#[derive(Debug, Clone, PartialEq)]
pub enum ExpositionLine {
    Blank,
    /// A `#` line that is neither HELP nor TYPE.
    Comment,
    Help {
        name: String,
        text: String,
    },
    Type {
        name: String,
        metric_type: MetricType,
    },
    Sample(Sample),
}

/// Reads an exposition one line at a time.
#[derive(Debug, Default)]
pub struct ExpositionParser {
    line: usize,
    exposition: Exposition,
}

impl ExpositionParser {
    pub fn new() -> ExpositionParser {
        ExpositionParser::default()
    }

    /// Reads the next line (without its `\n`; a trailing `\r` is dropped). A second `# TYPE` or
    /// `# HELP` for one name is an error, as in Prometheus itself.
    pub fn push_line(&mut self, text: &str) -> Result<(), PromError> {
        self.line += 1;
        match parse_line(text, self.line)? {
            ExpositionLine::Blank | ExpositionLine::Comment => {}
            ExpositionLine::Help { name, text } => {
                if self.exposition.help.contains_key(&name) {
                    return Err(self.duplicate("HELP", &name));
                }
                self.exposition.help.insert(name, text);
            }
            ExpositionLine::Type { name, metric_type } => {
                if self.exposition.types.contains_key(&name) {
                    return Err(self.duplicate("TYPE", &name));
                }
                self.exposition.types.insert(name, metric_type);
            }
            ExpositionLine::Sample(s) => self.exposition.samples.push(s),
        }
        Ok(())
    }

    fn duplicate(&self, what: &str, name: &str) -> PromError {
        PromError {
            line: self.line,
            column: None,
            expected: format!("one # {what} line per metric name"),
            found: format!("a second # {what} line for `{name}`"),
        }
    }

    pub fn finish(self) -> Exposition {
        self.exposition
    }
}

/// Parses a whole exposition text.
pub fn parse_exposition(text: &str) -> Result<Exposition, PromError> {
    let mut parser = ExpositionParser::new();
    if !text.is_empty() {
        // A final `\n` ends the last line; it does not open another.
        for line in text.strip_suffix('\n').unwrap_or(text).split('\n') {
            parser.push_line(line)?;
        }
    }
    Ok(parser.finish())
}

/// Parses one line; `line` is its 1-based number, used in errors and in the sample.
pub fn parse_line(text: &str, line: usize) -> Result<ExpositionLine, PromError> {
    let text = text.strip_suffix('\r').unwrap_or(text);
    let mut c = Cursor {
        s: text,
        pos: 0,
        line,
    };
    c.skip_blanks();
    if c.at_end() {
        return Ok(ExpositionLine::Blank);
    }
    if c.peek() == Some('#') {
        return parse_comment(&mut c);
    }
    parse_sample(&mut c).map(ExpositionLine::Sample)
}

fn parse_comment(c: &mut Cursor) -> Result<ExpositionLine, PromError> {
    c.bump();
    c.skip_blanks();
    let keyword = c.token();
    if keyword != "HELP" && keyword != "TYPE" {
        return Ok(ExpositionLine::Comment);
    }
    if !c.skip_blanks() {
        return Ok(ExpositionLine::Comment);
    }
    let name = c
        .metric_name()
        .ok_or_else(|| c.error(format!("a metric name after `# {keyword}`")))?;
    if keyword == "HELP" {
        if !c.at_end() && !c.skip_blanks() {
            return Err(c.error("a space after the metric name"));
        }
        return Ok(ExpositionLine::Help {
            name,
            text: unescape_help(c.rest()),
        });
    }
    if !c.skip_blanks() {
        return Err(c.error("a space and a metric type after the metric name"));
    }
    let at = c.pos;
    let word = c.token();
    let Some(metric_type) = MetricType::parse(word) else {
        c.pos = at;
        return Err(c.error_found(
            "counter, gauge, histogram, summary or untyped",
            describe_token(word),
        ));
    };
    c.skip_blanks();
    if !c.at_end() {
        return Err(c.error("end of line after the metric type"));
    }
    Ok(ExpositionLine::Type { name, metric_type })
}

fn unescape_help(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(ch) = chars.next() {
        if ch != '\\' {
            out.push(ch);
            continue;
        }
        match chars.next() {
            Some('\\') => out.push('\\'),
            Some('n') => out.push('\n'),
            // Help text is for people: an unknown escape is kept as written.
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

fn parse_sample(c: &mut Cursor) -> Result<Sample, PromError> {
    let name = c
        .metric_name()
        .ok_or_else(|| c.error("a metric name, a comment (`#`) or a blank line"))?;
    let mut labels = BTreeMap::new();
    let blank_after_name = c.skip_blanks();
    if c.peek() == Some('{') {
        c.bump();
        parse_labels(c, &mut labels)?;
        c.skip_blanks();
    } else if !blank_after_name && !c.at_end() {
        return Err(c.error("`{`, a space or a tab after the metric name"));
    }
    if c.at_end() {
        return Err(c.error("a sample value"));
    }
    let at = c.pos;
    let token = c.token();
    let value = parse_value(token).ok_or_else(|| {
        c.pos = at;
        c.error_found(
            "a sample value (a number, NaN, +Inf or -Inf)",
            describe_token(token),
        )
    })?;
    let mut timestamp_ms = None;
    if c.skip_blanks() && !c.at_end() {
        let at = c.pos;
        let token = c.token();
        timestamp_ms = Some(token.parse::<i64>().map_err(|_| {
            c.pos = at;
            c.error_found(
                "a timestamp in integer milliseconds, or end of line",
                describe_token(token),
            )
        })?);
        c.skip_blanks();
    }
    if !c.at_end() {
        return Err(c.error("end of line after the sample value and timestamp"));
    }
    Ok(Sample {
        name,
        labels,
        value,
        timestamp_ms,
        line: c.line,
    })
}

fn parse_labels(c: &mut Cursor, labels: &mut BTreeMap<String, String>) -> Result<(), PromError> {
    loop {
        c.skip_blanks();
        if c.peek() == Some('}') {
            c.bump();
            return Ok(());
        }
        let at = c.pos;
        let name = c
            .label_name()
            .ok_or_else(|| c.error("a label name or `}`"))?;
        c.skip_blanks();
        if c.peek() != Some('=') {
            return Err(c.error(format!("`=` after label name `{name}`")));
        }
        c.bump();
        c.skip_blanks();
        if c.peek() != Some('"') {
            return Err(c.error(format!("`\"` opening the value of label `{name}`")));
        }
        c.bump();
        let value = parse_label_value(c, &name)?;
        if labels.contains_key(&name) {
            c.pos = at;
            return Err(c.error_found(
                "each label name once per sample",
                format!("a second `{name}`"),
            ));
        }
        labels.insert(name, value);
        c.skip_blanks();
        match c.peek() {
            Some(',') => c.bump(),
            Some('}') => {}
            _ => return Err(c.error("`,` or `}` after a label value")),
        }
    }
}

fn parse_label_value(c: &mut Cursor, name: &str) -> Result<String, PromError> {
    let mut value = String::new();
    loop {
        match c.peek() {
            None => {
                return Err(c.error(format!("`\"` closing the value of label `{name}`")));
            }
            Some('"') => {
                c.bump();
                return Ok(value);
            }
            Some('\\') => {
                let at = c.pos;
                c.bump();
                match c.peek() {
                    Some('\\') => value.push('\\'),
                    Some('"') => value.push('"'),
                    Some('n') => value.push('\n'),
                    other => {
                        c.pos = at;
                        return Err(c.error_found(
                            "`\\\\`, `\\\"` or `\\n` (the escapes of a label value)",
                            match other {
                                Some(ch) => format!("`\\{ch}`"),
                                None => "a backslash at end of line".to_owned(),
                            },
                        ));
                    }
                }
                c.bump();
            }
            Some(ch) => {
                value.push(ch);
                c.bump();
            }
        }
    }
}

/// Go's `ParseFloat` spellings that Prometheus writes (`NaN`, `+Inf`, `-Inf`) and plain numbers.
fn parse_value(token: &str) -> Option<f64> {
    match token {
        "NaN" | "nan" => return Some(f64::NAN),
        "+Inf" | "Inf" | "+inf" | "inf" => return Some(f64::INFINITY),
        "-Inf" | "-inf" => return Some(f64::NEG_INFINITY),
        _ => {}
    }
    let numeric = token
        .chars()
        .all(|ch| ch.is_ascii_digit() || matches!(ch, '.' | 'e' | 'E' | '+' | '-'));
    if !numeric || !token.chars().any(|ch| ch.is_ascii_digit()) {
        return None;
    }
    token.parse().ok()
}

fn describe_token(token: &str) -> String {
    if token.is_empty() {
        "nothing".to_owned()
    } else {
        format!("`{token}`")
    }
}

struct Cursor<'a> {
    s: &'a str,
    pos: usize,
    line: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<char> {
        self.s[self.pos..].chars().next()
    }

    fn bump(&mut self) {
        if let Some(ch) = self.peek() {
            self.pos += ch.len_utf8();
        }
    }

    fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }

    fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }

    /// Skips spaces and tabs; whether any were skipped.
    fn skip_blanks(&mut self) -> bool {
        let start = self.pos;
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.pos += 1;
        }
        self.pos > start
    }

    /// The run of characters up to the next blank.
    fn token(&mut self) -> &'a str {
        let start = self.pos;
        while self.peek().is_some_and(|ch| ch != ' ' && ch != '\t') {
            self.bump();
        }
        &self.s[start..self.pos]
    }

    fn identifier(&mut self, colon: bool) -> Option<String> {
        let start = self.pos;
        let first = self.peek()?;
        if !(first.is_ascii_alphabetic() || first == '_' || (colon && first == ':')) {
            return None;
        }
        while self
            .peek()
            .is_some_and(|ch| ch.is_ascii_alphanumeric() || ch == '_' || (colon && ch == ':'))
        {
            self.pos += 1;
        }
        Some(self.s[start..self.pos].to_owned())
    }

    /// `[a-zA-Z_:][a-zA-Z0-9_:]*`
    fn metric_name(&mut self) -> Option<String> {
        self.identifier(true)
    }

    /// `[a-zA-Z_][a-zA-Z0-9_]*`
    fn label_name(&mut self) -> Option<String> {
        self.identifier(false)
    }

    fn column(&self) -> usize {
        self.s[..self.pos].chars().count() + 1
    }

    /// What sits at the cursor, for an error message.
    fn found_here(&self) -> String {
        if self.at_end() {
            return "end of line".to_owned();
        }
        let excerpt: String = self.rest().chars().take(16).collect();
        if excerpt.len() < self.rest().len() {
            format!("`{excerpt}…`")
        } else {
            format!("`{excerpt}`")
        }
    }

    fn error(&self, expected: impl Into<String>) -> PromError {
        self.error_found(expected, self.found_here())
    }

    fn error_found(&self, expected: impl Into<String>, found: impl Into<String>) -> PromError {
        PromError {
            line: self.line,
            column: Some(self.column()),
            expected: expected.into(),
            found: found.into(),
        }
    }
}

/// The metric vLLM publishes its cache configuration in, one label per `CacheConfig` field.
pub const CACHE_CONFIG_INFO: &str = "vllm:cache_config_info";

/// The compatibility evidence in `vllm:cache_config_info`: `cache_dtype` → `kv_cache_dtype`,
/// `kv_cache_dtype_skip_layers` → `skipped_layers` (`None` or `[]` = no layer skipped), and
/// `kv_cache_size_tokens` → `kv_cache_tokens` (when absent: `num_gpu_blocks × block_size`,
/// named so in the source). Several series (one per engine of a data-parallel server) must agree
/// on dtype and layers, else the disagreement is recorded as a conflict; the capacity is the
/// smallest engine's. `None` when the exposition has no such series, or when its labels carry
/// none of these facts.
pub fn observed_from_cache_config_info(exp: &Exposition) -> Option<ObservedEngine> {
    let mut combined: Option<ObservedEngine> = None;
    for sample in exp.samples_named(CACHE_CONFIG_INFO) {
        let one = observed_from_series(sample);
        combined = Some(match combined {
            None => one,
            Some(mut first) => {
                let tokens = match (first.kv_cache_tokens, one.kv_cache_tokens) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                first.kv_cache_tokens = None;
                let mut merged = first.merge(ObservedEngine {
                    kv_cache_tokens: None,
                    ..one
                });
                merged.kv_cache_tokens = tokens;
                merged
            }
        });
    }
    combined.filter(|o| !o.is_empty())
}

fn observed_from_series(s: &Sample) -> ObservedEngine {
    let label = |key: &str| {
        s.labels
            .get(key)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty() && *v != "None")
    };
    let engine = s
        .labels
        .get("engine")
        .map(|e| format!(", engine {e}"))
        .unwrap_or_default();
    let source = |field: &str, from: String| {
        format!(
            "{field}: /metrics {CACHE_CONFIG_INFO} line {}{engine} ({from})",
            s.line
        )
    };
    let mut o = ObservedEngine::default();
    if let Some(dtype) = label("cache_dtype") {
        o.kv_cache_dtype = Some(dtype.to_owned());
        o.sources
            .push(source("kv_cache_dtype", format!("cache_dtype=\"{dtype}\"")));
    }
    if let Some(raw) = s.labels.get("kv_cache_dtype_skip_layers") {
        o.skipped_layers = Some(layer_list(raw));
        o.sources.push(source(
            "skipped_layers",
            format!("kv_cache_dtype_skip_layers=\"{raw}\""),
        ));
    }
    let number = |key: &str| label(key).and_then(|v| v.parse::<u64>().ok());
    if let Some(tokens) = number("kv_cache_size_tokens") {
        o.kv_cache_tokens = Some(tokens);
        o.sources.push(source(
            "kv_cache_tokens",
            format!("kv_cache_size_tokens=\"{tokens}\""),
        ));
    } else if let (Some(blocks), Some(size)) = (number("num_gpu_blocks"), number("block_size")) {
        if let Some(tokens) = blocks.checked_mul(size) {
            o.kv_cache_tokens = Some(tokens);
            o.sources.push(source(
                "kv_cache_tokens",
                format!("num_gpu_blocks {blocks} × block_size {size}"),
            ));
        }
    }
    o
}

/// A layer list as Python prints it (`[0, 31]`, `['0', '31']`, `('sliding_window',)`) or as a
/// flag value (`0,31`); `None` and empty mean no layer.
fn layer_list(raw: &str) -> Vec<String> {
    let inner = raw.trim();
    if inner == "None" {
        return Vec::new();
    }
    inner
        .trim_matches(['[', ']', '(', ')'])
        .split(',')
        .map(|item| item.trim().trim_matches(['\'', '"']).trim().to_owned())
        .filter(|item| !item.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field_data::field;

    use kvgate_core::compat::check_compatibility;
    use kvgate_core::manifest::Manifest;
    use kvgate_core::metrics::{normalize, summarize, CanonicalMetric, EngineProfile, MetricPoint};

    const F16_1: &str = include_str!("../../../fixtures/metrics/llamacpp-f16-scrape-1.prom");
    const F16_2: &str = include_str!("../../../fixtures/metrics/llamacpp-f16-scrape-2.prom");
    const Q8_0: &str = include_str!("../../../fixtures/metrics/llamacpp-q8_0-scrape-0.prom");
    const Q8_1: &str = include_str!("../../../fixtures/metrics/llamacpp-q8_0-scrape-1.prom");
    const Q8_RESTARTED: &str =
        include_str!("../../../fixtures/metrics/llamacpp-q8_0-restarted-scrape-2.prom");

    /// A vLLM V1 exposition in the shape prometheus_client writes: counters typed under their
    /// `_total` name, `_created` series typed as gauges, `engine` and `model_name` everywhere.
    const VLLM: &str = r#"# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 3.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.4215
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 123456.0
# HELP vllm:prompt_tokens_created Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_created gauge
vllm:prompt_tokens_created{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.7549612345e+09
# HELP vllm:request_success_total Count of successfully processed requests.
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="meta-llama/Llama-3.1-8B-Instruct"} 90.0
vllm:request_success_total{engine="0",finished_reason="length",model_name="meta-llama/Llama-3.1-8B-Instruct"} 10.0
vllm:request_success_total{engine="0",finished_reason="abort",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 80.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"} 100.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 100.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 7.25
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="fp8_e4m3",calculate_kv_scales="False",enable_prefix_caching="False",engine="0",gpu_memory_utilization="0.9",kv_cache_dtype_skip_layers="['0', '31']",num_gpu_blocks="53687",num_gpu_blocks_override="None",sliding_window="None"} 1.0
"#;

    #[test]
    fn real_llama_cpp_scrape_parses_whole() {
        let exp = parse_exposition(F16_2).unwrap();
        assert_eq!(exp.samples.len(), 15);
        assert_eq!(exp.types.len(), 15);
        assert_eq!(
            exp.type_of("llamacpp:prompt_tokens_total"),
            Some(MetricType::Counter)
        );
        assert_eq!(
            exp.type_of("llamacpp:requests_processing"),
            Some(MetricType::Gauge)
        );
        assert_eq!(
            exp.help["llamacpp:prompt_tokens_cached_total"],
            "Number of prompt tokens reused from the cache"
        );
        let first = &exp.samples[0];
        assert_eq!(
            (
                first.name.as_str(),
                first.value,
                first.line,
                first.timestamp_ms
            ),
            ("llamacpp:prompt_tokens_total", 33.0, 3, None)
        );
        assert!(first.labels.is_empty());
        let values = normalize(
            EngineProfile::LlamaCpp,
            exp.samples
                .iter()
                .map(|s| (s.name.as_str(), &s.labels, s.value)),
        );
        assert_eq!(values[&CanonicalMetric::PromptTokensTotal], 33.0);
        assert_eq!(values[&CanonicalMetric::PromptTokensCachedTotal], 31.0);
        assert_eq!(values[&CanonicalMetric::GenerationTokensTotal], 20.0);
        assert_eq!(values[&CanonicalMetric::RequestsRunning], 0.0);
        assert_eq!(values[&CanonicalMetric::RequestsWaiting], 0.0);
        assert_eq!(values[&CanonicalMetric::DecodeCallsTotal], 20.0);
        // llama.cpp has no KV usage gauge: absent, not 0.
        assert!(!values.contains_key(&CanonicalMetric::KvCacheUsage));
        // The same server's earlier scrape, and CRLF line ends, read the same way.
        let crlf = F16_1.replace('\n', "\r\n");
        assert_eq!(
            parse_exposition(&crlf).unwrap(),
            parse_exposition(F16_1).unwrap()
        );
    }

    #[test]
    fn real_restart_shows_as_a_restart_boundary() {
        let points: Vec<MetricPoint> = [(0.0, Q8_0), (2_000.0, Q8_1), (10_000.0, Q8_RESTARTED)]
            .into_iter()
            .map(|(at_ms, text)| {
                let exp = parse_exposition(text).unwrap();
                MetricPoint {
                    at_ms,
                    values: normalize(
                        EngineProfile::LlamaCpp,
                        exp.samples
                            .iter()
                            .map(|s| (s.name.as_str(), &s.labels, s.value)),
                    ),
                }
            })
            .collect();
        let s = summarize(&points);
        assert_eq!(s.scrapes, 3);
        assert_eq!(
            s.counters[&CanonicalMetric::PromptTokensTotal].increase,
            Some(33.0 + 32.0)
        );
        assert_eq!(
            s.counters[&CanonicalMetric::GenerationTokensTotal].increase,
            Some(16.0 + 4.0)
        );
        assert_eq!(s.restart_scrapes_ms(), [10_000.0]);
        assert!(s
            .restarts
            .iter()
            .any(|r| r.metric == CanonicalMetric::PromptTokensTotal
                && (r.before, r.after) == (33.0, 32.0)));
    }

    fn points_of(profile: EngineProfile, scrapes: &[(f64, &str)]) -> Vec<MetricPoint> {
        scrapes
            .iter()
            .map(|(at_ms, text)| {
                let exp = parse_exposition(text).unwrap();
                MetricPoint {
                    at_ms: *at_ms,
                    values: normalize(
                        profile,
                        exp.samples
                            .iter()
                            .map(|s| (s.name.as_str(), &s.labels, s.value)),
                    ),
                }
            })
            .collect()
    }

    #[test]
    fn a_llama_cpp_series_has_no_kv_usage_and_marks_its_restart() {
        // The recorded q8_0 scrapes, the third after a restart (counters fell 33 → 32).
        let points = points_of(
            EngineProfile::LlamaCpp,
            &[(0.0, Q8_0), (2_000.0, Q8_1), (10_000.0, Q8_RESTARTED)],
        );
        let series = kvgate_core::metrics::run_series(4, &points);
        assert_eq!(series.run_id, 4);
        assert_eq!(series.restarts_at_ms, [10_000.0]);
        let at: Vec<f64> = series.points.iter().map(|p| p.at_ms).collect();
        assert_eq!(at, [0.0, 2_000.0, 10_000.0]);
        for p in &series.points {
            // llama.cpp publishes no KV usage gauge and no preemption counter: absent, not 0.
            assert_eq!(p.kv_usage, None, "{p:?}");
            assert_eq!(p.preemptions_delta, None, "{p:?}");
            // `requests_processing` and `requests_deferred`, idle at each scrape.
            assert_eq!((p.running, p.waiting), (Some(0.0), Some(0.0)), "{p:?}");
        }
    }

    #[test]
    fn a_real_vllm_idle_then_loaded_series() {
        let test = "a_real_vllm_idle_then_loaded_series";
        let (Some(idle), Some(loaded)) = (
            field(test, "prometheus/er0080-vllm-0.25.1-opt125m-idle.prom"),
            field(test, "prometheus/er0080-vllm-0.25.1-opt125m-loaded.prom"),
        ) else {
            return;
        };
        // The two scrapes placed 5 s apart on a run clock (the files carry no timestamps).
        let points = points_of(EngineProfile::Vllm, &[(0.0, &idle), (5_000.0, &loaded)]);
        let series = kvgate_core::metrics::run_series(1, &points);
        assert!(series.restarts_at_ms.is_empty());
        let [first, second] = &series.points[..] else {
            panic!("{series:?}");
        };
        assert_eq!(
            (first.kv_usage, first.running, first.waiting),
            (Some(0.0), Some(0.0), Some(0.0))
        );
        // Nothing before the first scrape to count from.
        assert_eq!(first.preemptions_delta, None);
        assert_eq!(
            (second.kv_usage, second.running, second.waiting),
            (Some(0.11223878211531546), Some(64.0), Some(64.0))
        );
        // 0 preemptions at both scrapes: a stated 0 delta.
        assert_eq!(second.preemptions_delta, Some(0.0));
    }

    #[test]
    fn vllm_exposition_normalizes_and_yields_cache_config_evidence() {
        let exp = parse_exposition(VLLM).unwrap();
        assert_eq!(
            exp.type_of("vllm:time_to_first_token_seconds_bucket"),
            Some(MetricType::Histogram)
        );
        assert_eq!(
            exp.type_of("vllm:prompt_tokens_created"),
            Some(MetricType::Gauge)
        );
        let inf = exp
            .samples
            .iter()
            .find(|s| s.labels.get("le").map(String::as_str) == Some("+Inf"))
            .unwrap();
        assert_eq!(inf.value, 100.0);
        let values = normalize(
            EngineProfile::Vllm,
            exp.samples
                .iter()
                .map(|s| (s.name.as_str(), &s.labels, s.value)),
        );
        assert_eq!(values[&CanonicalMetric::RequestSuccessTotal], 100.0);
        assert_eq!(values[&CanonicalMetric::PromptTokensTotal], 123_456.0);
        assert_eq!(values[&CanonicalMetric::KvCacheUsage], 0.4215);
        assert_eq!(values.len(), 4, "{values:?}");

        let o = observed_from_cache_config_info(&exp).unwrap();
        assert_eq!(o.kv_cache_dtype.as_deref(), Some("fp8_e4m3"));
        assert_eq!(
            o.skipped_layers,
            Some(vec!["0".to_owned(), "31".to_owned()])
        );
        assert_eq!(o.kv_cache_tokens, Some(53_687 * 16));
        assert_eq!(o.sources.len(), 3);
        assert!(
            o.sources[2].contains("num_gpu_blocks 53687 × block_size 16"),
            "{:?}",
            o.sources
        );
        assert!(
            o.sources[0].contains("line 26, engine 0"),
            "{:?}",
            o.sources
        );

        // With the startup log's backend line, the C3 manifest is confirmed; C1 is not (it skips
        // no layer), nor is B0 (its KV cache is not FP8).
        let with_backend = o.clone().merge(ObservedEngine {
            attention_backend: Some("FLASH_ATTN".into()),
            ..ObservedEngine::default()
        });
        let manifest = |json: &str| Manifest::from_json(json).unwrap();
        let c3 = manifest(include_str!(
            "../../../fixtures/manifests/llama31-8b-h100-c3.json"
        ));
        let c1 = manifest(include_str!(
            "../../../fixtures/manifests/llama31-8b-h100-c1.json"
        ));
        let b0 = manifest(include_str!(
            "../../../fixtures/manifests/llama31-8b-h100-b0.json"
        ));
        assert!(check_compatibility(&c3, Some(&with_backend)).valid);
        let v = check_compatibility(&c1, Some(&with_backend));
        assert_eq!(v.problems.len(), 1);
        assert_eq!(v.problems[0].field, "skipped_layers");
        let v = check_compatibility(&b0, Some(&with_backend));
        assert!(v.problems.iter().any(|p| p.field == "kv_dtype"));
    }

    #[test]
    fn cache_config_info_variants() {
        let parse = |line: &str| observed_from_cache_config_info(&parse_exposition(line).unwrap());
        // Current vLLM: explicit capacity, no skipped layers.
        let o = parse(
            r#"vllm:cache_config_info{block_size="16",cache_dtype="auto",kv_cache_dtype_skip_layers="[]",kv_cache_size_tokens="858992",num_gpu_blocks="53687"} 1"#,
        )
        .unwrap();
        assert_eq!(o.kv_cache_dtype.as_deref(), Some("auto"));
        assert_eq!(o.skipped_layers, Some(vec![]));
        assert_eq!(o.kv_cache_tokens, Some(858_992));
        // Older vLLM: no skip-layers label at all, so skipped layers are unknown.
        let o = parse(r#"vllm:cache_config_info{block_size="16",cache_dtype="fp8",num_gpu_blocks="None"} 1.0"#)
            .unwrap();
        assert_eq!(o.skipped_layers, None);
        assert_eq!(o.kv_cache_tokens, None);
        let o = parse(
            r#"vllm:cache_config_info{cache_dtype="fp8",kv_cache_dtype_skip_layers="None"} 1"#,
        )
        .unwrap();
        assert_eq!(o.skipped_layers, Some(vec![]));
        let o = parse(r#"vllm:cache_config_info{cache_dtype="fp8",kv_cache_dtype_skip_layers="['sliding_window']"} 1"#)
            .unwrap();
        assert_eq!(o.skipped_layers, Some(vec!["sliding_window".to_owned()]));
        // No series, or a series without any of the facts: no evidence.
        assert_eq!(parse("vllm:num_requests_running 0"), None);
        assert_eq!(
            parse(r#"vllm:cache_config_info{block_size="16",gpu_memory_utilization="0.9"} 1"#),
            None
        );
        assert_eq!(
            observed_from_cache_config_info(&parse_exposition(F16_1).unwrap()),
            None
        );
        // Two engines: the smaller capacity counts; a dtype disagreement is a conflict.
        let two = "vllm:cache_config_info{cache_dtype=\"fp8\",engine=\"0\",kv_cache_size_tokens=\"1000\"} 1\n\
                   vllm:cache_config_info{cache_dtype=\"fp8\",engine=\"1\",kv_cache_size_tokens=\"900\"} 1\n";
        let o = parse(two).unwrap();
        assert_eq!(o.kv_cache_tokens, Some(900));
        assert!(o.conflicts.is_empty());
        let o = parse(&two.replace("\"fp8\",engine=\"1\"", "\"auto\",engine=\"1\"")).unwrap();
        assert_eq!(o.conflicts.len(), 1);
        assert_eq!(o.conflicts[0].field, "evidence.kv_cache_dtype");
    }

    #[test]
    fn escapes_special_values_timestamps_and_spacing() {
        let text = "# a plain comment\n\
                    \n\
                    \t  weird_metric{path=\"C:\\\\dir\",quote=\"say \\\"hi\\\"\",multi=\"a\\nb\",empty=\"\",} NaN 1700000000000\n\
                    m2 +Inf\n\
                    m3{a = \"1\" , b=\"2\"}\t-Inf -5\n\
                    m4{} 1e-3\n\
                    m5 -0.5\r\n\
                    # TYPE m6 untyped\n\
                    m6{label=\"ünïcödé ✓\"} 42\n";
        let exp = parse_exposition(text).unwrap();
        let s = &exp.samples;
        assert_eq!(s.len(), 6);
        assert_eq!(s[0].labels["path"], "C:\\dir");
        assert_eq!(s[0].labels["quote"], "say \"hi\"");
        assert_eq!(s[0].labels["multi"], "a\nb");
        assert_eq!(s[0].labels["empty"], "");
        assert!(s[0].value.is_nan());
        assert_eq!(s[0].timestamp_ms, Some(1_700_000_000_000));
        assert_eq!(s[0].line, 3);
        assert_eq!(s[1].value, f64::INFINITY);
        assert_eq!(s[2].value, f64::NEG_INFINITY);
        assert_eq!(s[2].timestamp_ms, Some(-5));
        assert_eq!(s[2].labels.len(), 2);
        assert_eq!((s[3].value, s[3].labels.len()), (0.001, 0));
        assert_eq!(s[4].value, -0.5);
        assert_eq!(s[5].labels["label"], "ünïcödé ✓");
        assert_eq!(exp.types["m6"], MetricType::Untyped);
        assert_eq!(parse_exposition("").unwrap(), Exposition::default());
        assert_eq!(parse_exposition("\n\n").unwrap(), Exposition::default());
        let help = parse_exposition("# HELP m Line one\\nback\\\\slash \\q\n").unwrap();
        assert_eq!(help.help["m"], "Line one\nback\\slash \\q");
    }

    fn err(text: &str) -> PromError {
        parse_exposition(text).unwrap_err()
    }

    #[test]
    fn errors_name_line_column_expected_and_found() {
        let e = err("ok 1\nbad{a=\"1\" 2\n");
        assert_eq!((e.line, e.column), (2, Some(11)));
        assert_eq!(e.expected, "`,` or `}` after a label value");
        assert_eq!(e.found, "`2`");
        assert_eq!(
            e.to_string(),
            "line 2, column 11: expected `,` or `}` after a label value, found `2`"
        );

        let e = err("m{a=\"x} 1\n");
        assert_eq!(e.expected, "`\"` closing the value of label `a`");
        assert_eq!(e.found, "end of line");

        let e = err("m{a=\"\\t\"} 1\n");
        assert_eq!((e.column, e.found.as_str()), (Some(6), "`\\t`"));

        let e = err("m{a=\"1\",a=\"2\"} 1\n");
        assert_eq!((e.column, e.found.as_str()), (Some(9), "a second `a`"));

        let e = err("m{1a=\"1\"} 1\n");
        assert_eq!(e.expected, "a label name or `}`");
        let e = err("m{a:b=\"1\"} 1\n");
        assert_eq!(e.expected, "`=` after label name `a`");
        let e = err("m{a=1} 1\n");
        assert_eq!(e.expected, "`\"` opening the value of label `a`");

        let e = err("m\n");
        assert_eq!(
            (e.expected.as_str(), e.found.as_str()),
            ("a sample value", "end of line")
        );
        let e = err("m one\n");
        assert_eq!(e.found, "`one`");
        assert_eq!(e.column, Some(3));
        let e = err("m 1 12.5\n");
        assert!(e.expected.starts_with("a timestamp"), "{e}");
        let e = err("m 1 2 3\n");
        assert_eq!(e.found, "`3`");
        let e = err("m-x 1\n");
        assert_eq!(e.expected, "`{`, a space or a tab after the metric name");
        let e = err("9m 1\n");
        assert_eq!(e.expected, "a metric name, a comment (`#`) or a blank line");
        assert_eq!(e.column, Some(1));
        let e = err("m 0x10\n");
        assert_eq!(e.found, "`0x10`");
    }

    #[test]
    fn type_and_help_lines_are_checked() {
        let e = err("# TYPE m counter\nm 1\n# TYPE m gauge\n");
        assert_eq!(e.line, 3);
        assert_eq!(e.found, "a second # TYPE line for `m`");
        let e = err("# TYPE m info\n");
        assert_eq!(e.expected, "counter, gauge, histogram, summary or untyped");
        assert_eq!((e.found.as_str(), e.column), ("`info`", Some(10)));
        let e = err("# TYPE m\n");
        assert!(e.expected.contains("metric type"), "{e}");
        let e = err("# TYPE m counter extra\n");
        assert_eq!(e.found, "`extra`");
        let e = err("# HELP 1bad text\n");
        assert_eq!(e.expected, "a metric name after `# HELP`");
        let e = err("# HELP m a\n# HELP m b\n");
        assert_eq!(e.line, 2);
        // Other comments, `# EOF` and a bare `# TYPE` keyword without a name are comments.
        let exp = parse_exposition("#TYPEWRITER\n# EOF\n# HELP\n# TYPE\n").unwrap();
        assert_eq!(exp, Exposition::default());
    }

    #[test]
    fn lines_can_be_pushed_one_at_a_time() {
        let mut parser = ExpositionParser::new();
        for line in Q8_1.lines() {
            parser.push_line(line).unwrap();
        }
        assert_eq!(parser.finish(), parse_exposition(Q8_1).unwrap());
        assert_eq!(parse_line("  ", 7).unwrap(), ExpositionLine::Blank);
        match parse_line("x{a=\"b\"} 2 3", 7).unwrap() {
            ExpositionLine::Sample(s) => assert_eq!((s.line, s.timestamp_ms), (7, Some(3))),
            other => panic!("{other:?}"),
        }
        assert_eq!(parse_line("m 1 2 x", 7).unwrap_err().line, 7);
    }
}
