//! Open-loop arrival plans: when each request should leave, in milliseconds after run start.
//! Every plan is reproducible from what is recorded with the run (its seed or its trace digest).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use kvgate_core::prng::SplitMix64;

/// Most arrivals one plan may hold (a request index is a `u32`; memory stays bounded).
pub const MAX_ARRIVALS: usize = 5_000_000;

/// How requests arrive in an open-loop run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Arrivals {
    /// Exponential gaps with mean `1/rate` (requests per second).
    Poisson { rate: f64, seed: u64 },
    /// Gamma gaps with mean `1/rate`; `shape` < 1 is burstier than Poisson, > 1 smoother
    /// (coefficient of variation `1/√shape`), as in vLLM's benchmark `burstiness`.
    Gamma { rate: f64, shape: f64, seed: u64 },
    /// One request every `1/rate` seconds, the first at 0.
    Constant { rate: f64 },
    /// Replay of recorded offsets (ms after start, non-decreasing); `sha256` is the trace file's
    /// digest, computed by the caller, and enters the run record.
    Trace {
        offsets_ms: Vec<f64>,
        sha256: String,
    },
}

/// Parses an arrival spec as the shells take it: `poisson:RPS`, `gamma:RPS:SHAPE`,
/// `constant:RPS` or `trace:FILE` (the file is read here; its sha256 enters the plan). The
/// error names the spec, what was expected and what was found.
pub fn parse_arrivals(spec: &str, seed: u64) -> Result<Arrivals, String> {
    let bad = |why: String| format!("arrivals {spec:?}: {why}");
    let (kind, rest) = spec.split_once(':').ok_or_else(|| {
        bad("expected poisson:RPS, gamma:RPS:SHAPE, constant:RPS or trace:FILE".into())
    })?;
    let number = |text: &str, what: &str| -> Result<f64, String> {
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v > 0.0)
            .ok_or_else(|| {
                bad(format!(
                    "{what}: expected a positive number, found {text:?}"
                ))
            })
    };
    match kind {
        "poisson" => Ok(Arrivals::Poisson {
            rate: number(rest, "rate")?,
            seed,
        }),
        "constant" => Ok(Arrivals::Constant {
            rate: number(rest, "rate")?,
        }),
        "gamma" => {
            let (rate, shape) = rest
                .split_once(':')
                .ok_or_else(|| bad("expected gamma:RPS:SHAPE".into()))?;
            Ok(Arrivals::Gamma {
                rate: number(rate, "rate")?,
                shape: number(shape, "shape")?,
                seed,
            })
        }
        "trace" => {
            let bytes = std::fs::read(rest).map_err(|e| bad(format!("cannot read {rest}: {e}")))?;
            let text = String::from_utf8(bytes.clone())
                .map_err(|_| bad(format!("{rest}: expected UTF-8 text")))?;
            let offsets_ms = parse_trace(&text).map_err(|e| bad(format!("{rest}: {e}")))?;
            Ok(Arrivals::Trace {
                offsets_ms,
                sha256: kvgate_core::canonical::sha256_hex(&bytes),
            })
        }
        other => Err(bad(format!(
            "expected poisson, gamma, constant or trace before ':', found {other:?}"
        ))),
    }
}

/// Why an arrival plan cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    #[error("arrival `rate`: expected a positive finite number of requests per second, found {0}")]
    Rate(f64),
    #[error("arrival `shape`: expected a positive finite gamma shape, found {0}")]
    Shape(f64),
    #[error("arrival plan: expected at most {max} arrivals, found about {found}")]
    TooManyArrivals { max: usize, found: f64 },
    #[error("trace offset {index}: expected a finite, non-negative, non-decreasing millisecond offset, found {found}")]
    TraceOffset { index: usize, found: f64 },
    #[error("run: expected at least one planned request body, found none")]
    NoRequests,
    #[error("closed loop `concurrency`: expected at least 1, found 0")]
    ZeroConcurrency,
    #[error("open loop: the dispatcher thread could not start: {0}")]
    Dispatcher(String),
}

impl Arrivals {
    /// Planned offsets in `[0, duration)`, non-decreasing, in milliseconds.
    pub fn offsets_ms(&self, duration: Duration) -> Result<Vec<f64>, ScheduleError> {
        let horizon_ms = duration.as_secs_f64() * 1e3;
        let check_rate = |rate: f64| {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(ScheduleError::Rate(rate));
            }
            let expected = rate * duration.as_secs_f64();
            if expected > MAX_ARRIVALS as f64 {
                return Err(ScheduleError::TooManyArrivals {
                    max: MAX_ARRIVALS,
                    found: expected,
                });
            }
            Ok(())
        };
        match self {
            Arrivals::Constant { rate } => {
                check_rate(*rate)?;
                let gap_ms = 1e3 / rate;
                Ok((0..)
                    .map(|i| i as f64 * gap_ms)
                    .take_while(|t| *t < horizon_ms)
                    .collect())
            }
            Arrivals::Poisson { rate, seed } => {
                check_rate(*rate)?;
                let mut g = SplitMix64::new(*seed);
                let mean_gap_ms = 1e3 / rate;
                Ok(accumulate(horizon_ms, || g.exponential() * mean_gap_ms))
            }
            Arrivals::Gamma { rate, shape, seed } => {
                check_rate(*rate)?;
                if !(shape.is_finite() && *shape > 0.0) {
                    return Err(ScheduleError::Shape(*shape));
                }
                let mut g = SplitMix64::new(*seed);
                let scale_ms = 1e3 / (rate * shape);
                Ok(accumulate(horizon_ms, || g.gamma(*shape) * scale_ms))
            }
            Arrivals::Trace { offsets_ms, .. } => {
                check_offsets(offsets_ms)
                    .map_err(|(index, found)| ScheduleError::TraceOffset { index, found })?;
                if offsets_ms.len() > MAX_ARRIVALS {
                    return Err(ScheduleError::TooManyArrivals {
                        max: MAX_ARRIVALS,
                        found: offsets_ms.len() as f64,
                    });
                }
                Ok(offsets_ms
                    .iter()
                    .copied()
                    .take_while(|t| *t < horizon_ms)
                    .collect())
            }
        }
    }
}

fn accumulate(horizon_ms: f64, mut gap_ms: impl FnMut() -> f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut t = gap_ms();
    while t < horizon_ms && out.len() < MAX_ARRIVALS {
        out.push(t);
        t += gap_ms();
    }
    out
}

/// The first offset that is not finite, negative, or smaller than the one before it.
fn check_offsets(offsets: &[f64]) -> Result<(), (usize, f64)> {
    let mut previous = 0.0;
    for (i, &t) in offsets.iter().enumerate() {
        if !t.is_finite() || t < previous {
            return Err((i, t));
        }
        previous = t;
    }
    Ok(())
}

/// Why a trace file cannot be replayed. Lines and elements count from 1.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TraceError {
    #[error("trace: expected at least one arrival offset, found none")]
    Empty,
    #[error("trace line {line}: expected a millisecond offset, found `{found}`")]
    NotANumber { line: usize, found: String },
    #[error("trace line {line}: expected a finite offset ≥ 0, found {found}")]
    Negative { line: usize, found: f64 },
    #[error("trace line {line}: expected offsets in non-decreasing order, found {found} after {previous}")]
    Decreasing {
        line: usize,
        previous: f64,
        found: f64,
    },
    #[error("trace line {line}, column {column}: expected a JSON array of millisecond offsets: {message}")]
    Json {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("trace element {element}: expected a finite number ≥ 0, found {found}")]
    Element { element: usize, found: String },
    #[error("trace element {element}: expected offsets in non-decreasing order, found {found} after {previous}")]
    ElementDecreasing {
        element: usize,
        previous: f64,
        found: f64,
    },
}

/// Parses a recorded arrival trace: either a JSON array of millisecond offsets, or one offset
/// per line (blank lines and `#` comments skipped). Offsets must be finite, ≥ 0 and
/// non-decreasing; an unsorted trace is an error rather than silently reordered.
pub fn parse_trace(text: &str) -> Result<Vec<f64>, TraceError> {
    let offsets = if text.trim_start().starts_with('[') {
        parse_json_trace(text)?
    } else {
        parse_line_trace(text)?
    };
    if offsets.is_empty() {
        return Err(TraceError::Empty);
    }
    Ok(offsets)
}

fn parse_line_trace(text: &str) -> Result<Vec<f64>, TraceError> {
    let mut out: Vec<f64> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let value = raw.trim();
        if value.is_empty() || value.starts_with('#') {
            continue;
        }
        let t: f64 = value.parse().map_err(|_| TraceError::NotANumber {
            line,
            found: value.chars().take(80).collect(),
        })?;
        if !t.is_finite() || t < 0.0 {
            return Err(TraceError::Negative { line, found: t });
        }
        if let Some(&previous) = out.last() {
            if t < previous {
                return Err(TraceError::Decreasing {
                    line,
                    previous,
                    found: t,
                });
            }
        }
        out.push(t);
    }
    Ok(out)
}

fn parse_json_trace(text: &str) -> Result<Vec<f64>, TraceError> {
    let values: Vec<serde_json::Value> =
        serde_json::from_str(text).map_err(|e| TraceError::Json {
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
    let mut out: Vec<f64> = Vec::with_capacity(values.len());
    for (i, value) in values.iter().enumerate() {
        let element = i + 1;
        let t = match value.as_f64() {
            Some(t) if t >= 0.0 => t,
            _ => {
                return Err(TraceError::Element {
                    element,
                    found: value.to_string().chars().take(80).collect(),
                })
            }
        };
        if let Some(&previous) = out.last() {
            if t < previous {
                return Err(TraceError::ElementDecreasing {
                    element,
                    previous,
                    found: t,
                });
            }
        }
        out.push(t);
    }
    Ok(out)
}
