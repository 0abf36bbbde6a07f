//! Which column of a CSV or Parquet file holds which [`RequestRecord`] field.
//!
//! Tabular files have no fixed shape, so the user names the columns: `dispatch` (the send time) is
//! required; first token and finish are given either as absolute times on the same clock as
//! `dispatch` (`first_token`, `finish`) or as durations measured from dispatch (`ttft`, `e2e`).
//! Every time column is in one [`TimeUnit`]. The files themselves are read in `kvgate-tabular`
//! (polars); this crate only holds the mapping, so the CLI, the app and the UI share it.
//!
//! [`RequestRecord`]: kvgate_core::run::RequestRecord

use std::fmt;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// The unit of every time column of a mapped file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, TS)]
pub enum TimeUnit {
    /// Seconds.
    #[default]
    #[serde(rename = "s")]
    S,
    /// Milliseconds.
    #[serde(rename = "ms")]
    Ms,
    /// Microseconds.
    #[serde(rename = "us")]
    Us,
    /// Nanoseconds.
    #[serde(rename = "ns")]
    Ns,
}

impl TimeUnit {
    pub const ALL: [TimeUnit; 4] = [TimeUnit::S, TimeUnit::Ms, TimeUnit::Us, TimeUnit::Ns];

    pub fn as_str(self) -> &'static str {
        match self {
            TimeUnit::S => "s",
            TimeUnit::Ms => "ms",
            TimeUnit::Us => "us",
            TimeUnit::Ns => "ns",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|unit| unit.as_str() == s)
    }

    /// Milliseconds in one of this unit.
    pub fn to_ms(self) -> f64 {
        match self {
            TimeUnit::S => 1e3,
            TimeUnit::Ms => 1.0,
            TimeUnit::Us => 1e-3,
            TimeUnit::Ns => 1e-6,
        }
    }
}

impl fmt::Display for TimeUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Column names of a CSV or Parquet file, one per [`RequestRecord`] field it holds. A field whose
/// column is `None` was not measured by the tool and stays `None` in the records (never 0).
///
/// [`RequestRecord`]: kvgate_core::run::RequestRecord
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct ColumnMapping {
    /// When the request was sent (absolute, in `time_unit`). Required: the run clock's zero is
    /// the earliest dispatch (or the earliest planned arrival when that is earlier).
    pub dispatch: String,
    /// When the schedule wanted the request sent (absolute, in `time_unit`). Without it the
    /// planned arrival is the dispatch time and the client delay is unknown.
    #[serde(default)]
    pub planned_arrival: Option<String>,
    /// Arrival of the first output token, absolute (in `time_unit`). Excludes `ttft`.
    #[serde(default)]
    pub first_token: Option<String>,
    /// End of the response, absolute (in `time_unit`). Excludes `e2e`.
    #[serde(default)]
    pub finish: Option<String>,
    /// Time to first token as a duration from dispatch (in `time_unit`). Excludes `first_token`.
    #[serde(default)]
    pub ttft: Option<String>,
    /// End-to-end latency as a duration from dispatch (in `time_unit`). Excludes `finish`.
    #[serde(default)]
    pub e2e: Option<String>,
    /// How the request ended: `ok`, `success`, `true` and `200` mean `ok`, `false` means
    /// `error`, and otherwise one of `ok`, `error`, `timeout`, `rejected`, `unfinished` (case
    /// ignored). Without it a row is `ok` when its `error` cell is empty, else `error`.
    #[serde(default)]
    pub status: Option<String>,
    /// The error message of a failed request; an empty cell is no error.
    #[serde(default)]
    pub error: Option<String>,
    /// The generated text; an empty cell is an empty output.
    #[serde(default)]
    pub output_text: Option<String>,
    /// Prompt tokens, as the server reported them.
    #[serde(default)]
    pub prompt_tokens: Option<String>,
    /// Generated tokens, as the server reported them.
    #[serde(default)]
    pub completion_tokens: Option<String>,
    /// The fixture item the request came from.
    #[serde(default)]
    pub item_id: Option<String>,
    /// The HTTP status code of the response.
    #[serde(default)]
    pub http_status: Option<String>,
    /// The unit of every time column (`dispatch`, `planned_arrival`, `first_token`, `finish`,
    /// `ttft`, `e2e`).
    #[serde(default)]
    pub time_unit: TimeUnit,
}

/// A mapping that cannot be used: an unknown key, a missing `dispatch`, conflicting fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappingError {
    pub message: String,
}

impl MappingError {
    fn new(message: impl Into<String>) -> MappingError {
        MappingError {
            message: message.into(),
        }
    }
}

impl fmt::Display for MappingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column mapping: {}", self.message)
    }
}

impl std::error::Error for MappingError {}

impl ColumnMapping {
    /// The keys [`ColumnMapping::parse_spec`] accepts (`time_unit` is also spelled `unit`).
    pub const KEYS: [&'static str; 14] = [
        "dispatch",
        "planned_arrival",
        "first_token",
        "finish",
        "ttft",
        "e2e",
        "status",
        "error",
        "output_text",
        "prompt_tokens",
        "completion_tokens",
        "item_id",
        "http_status",
        "unit",
    ];

    /// A mapping with only the dispatch column, times in seconds.
    pub fn new(dispatch: impl Into<String>) -> ColumnMapping {
        ColumnMapping {
            dispatch: dispatch.into(),
            planned_arrival: None,
            first_token: None,
            finish: None,
            ttft: None,
            e2e: None,
            status: None,
            error: None,
            output_text: None,
            prompt_tokens: None,
            completion_tokens: None,
            item_id: None,
            http_status: None,
            time_unit: TimeUnit::S,
        }
    }

    /// Parses the CLI's `--columns` spec: comma-separated `key=column` pairs, e.g.
    /// `dispatch=start_s,ttft=ttft_s,e2e=latency_s,status=ok,unit=s`.
    pub fn parse_spec(spec: &str) -> Result<ColumnMapping, MappingError> {
        let mut mapping = ColumnMapping::new(String::new());
        let mut dispatch = None;
        let mut seen: Vec<&str> = Vec::new();
        for part in spec.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let Some((key, value)) = part.split_once('=') else {
                return Err(MappingError::new(format!(
                    "expected `key=column`, found `{part}`"
                )));
            };
            let (key, value) = (key.trim(), value.trim());
            if value.is_empty() {
                return Err(MappingError::new(format!("`{key}` names no column")));
            }
            let key = if key == "time_unit" { "unit" } else { key };
            if seen.contains(&key) {
                return Err(MappingError::new(format!("`{key}` is given twice")));
            }
            let value = value.to_owned();
            match key {
                "dispatch" => dispatch = Some(value),
                "planned_arrival" => mapping.planned_arrival = Some(value),
                "first_token" => mapping.first_token = Some(value),
                "finish" => mapping.finish = Some(value),
                "ttft" => mapping.ttft = Some(value),
                "e2e" => mapping.e2e = Some(value),
                "status" => mapping.status = Some(value),
                "error" => mapping.error = Some(value),
                "output_text" => mapping.output_text = Some(value),
                "prompt_tokens" => mapping.prompt_tokens = Some(value),
                "completion_tokens" => mapping.completion_tokens = Some(value),
                "item_id" => mapping.item_id = Some(value),
                "http_status" => mapping.http_status = Some(value),
                "unit" => {
                    mapping.time_unit = TimeUnit::parse(&value).ok_or_else(|| {
                        MappingError::new(format!(
                            "unknown time unit `{value}`; expected one of s, ms, us, ns"
                        ))
                    })?
                }
                _ => {
                    return Err(MappingError::new(format!(
                        "unknown key `{key}`; expected one of {}",
                        Self::KEYS.join(", ")
                    )))
                }
            }
            seen.push(key);
        }
        mapping.dispatch =
            dispatch.ok_or_else(|| MappingError::new("`dispatch=<column>` is required"))?;
        mapping.validate()?;
        Ok(mapping)
    }

    /// Checks what the type cannot: a dispatch column is named, and no field is given both as an
    /// absolute time and as a duration.
    pub fn validate(&self) -> Result<(), MappingError> {
        if self.dispatch.trim().is_empty() {
            return Err(MappingError::new("`dispatch` names no column"));
        }
        if self.first_token.is_some() && self.ttft.is_some() {
            return Err(MappingError::new(
                "give the first token either as `first_token` (absolute) or as `ttft` (duration), not both",
            ));
        }
        if self.finish.is_some() && self.e2e.is_some() {
            return Err(MappingError::new(
                "give the end either as `finish` (absolute) or as `e2e` (duration), not both",
            ));
        }
        Ok(())
    }

    /// Every `(field, column)` pair the mapping names, `dispatch` first.
    pub fn columns(&self) -> Vec<(&'static str, &str)> {
        let optional = [
            ("planned_arrival", &self.planned_arrival),
            ("first_token", &self.first_token),
            ("finish", &self.finish),
            ("ttft", &self.ttft),
            ("e2e", &self.e2e),
            ("status", &self.status),
            ("error", &self.error),
            ("output_text", &self.output_text),
            ("prompt_tokens", &self.prompt_tokens),
            ("completion_tokens", &self.completion_tokens),
            ("item_id", &self.item_id),
            ("http_status", &self.http_status),
        ];
        let mut out = vec![("dispatch", self.dispatch.as_str())];
        out.extend(
            optional
                .into_iter()
                .filter_map(|(field, column)| Some((field, column.as_deref()?))),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_parses_durations_and_unit() {
        let mapping = ColumnMapping::parse_spec(
            "dispatch=start_s,ttft=ttft_s,e2e=latency_s,status=ok,unit=s",
        )
        .unwrap();
        assert_eq!(
            mapping,
            ColumnMapping {
                ttft: Some("ttft_s".into()),
                e2e: Some("latency_s".into()),
                status: Some("ok".into()),
                ..ColumnMapping::new("start_s")
            }
        );
        let ms = ColumnMapping::parse_spec(" dispatch = t0 , finish=t1, time_unit=ms").unwrap();
        assert_eq!(ms.time_unit, TimeUnit::Ms);
        assert_eq!(ms.finish.as_deref(), Some("t1"));
        assert_eq!(ms.columns(), vec![("dispatch", "t0"), ("finish", "t1")]);
    }

    #[test]
    fn spec_errors_are_clear() {
        let err = ColumnMapping::parse_spec("dispatch=a,latency=b").unwrap_err();
        assert!(err.to_string().contains("unknown key `latency`"), "{err}");
        assert!(err.to_string().contains("e2e"), "{err}");
        let err = ColumnMapping::parse_spec("ttft=a").unwrap_err();
        assert!(err.to_string().contains("dispatch"), "{err}");
        let err = ColumnMapping::parse_spec("dispatch=a,unit=min").unwrap_err();
        assert!(err.to_string().contains("`min`"), "{err}");
        let err = ColumnMapping::parse_spec("dispatch=a,ttft=b,first_token=c").unwrap_err();
        assert!(err.to_string().contains("not both"), "{err}");
        let err = ColumnMapping::parse_spec("dispatch=a,dispatch=b").unwrap_err();
        assert!(err.to_string().contains("twice"), "{err}");
        let err = ColumnMapping::parse_spec("dispatch").unwrap_err();
        assert!(err.to_string().contains("key=column"), "{err}");
    }

    #[test]
    fn mapping_round_trips_through_json() {
        let mapping = ColumnMapping::parse_spec("dispatch=a,e2e=b,unit=ns").unwrap();
        let json = serde_json::to_value(&mapping).unwrap();
        assert_eq!(json["time_unit"], "ns");
        assert_eq!(
            serde_json::from_value::<ColumnMapping>(json).unwrap(),
            mapping
        );
        let minimal: ColumnMapping =
            serde_json::from_value(serde_json::json!({"dispatch": "t"})).unwrap();
        assert_eq!(minimal, ColumnMapping::new("t"));
    }
}
