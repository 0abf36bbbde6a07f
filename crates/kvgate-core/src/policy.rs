//! The acceptance policy: what the service owner pre-registers before any result is visible.
//!
//! Request classes with their SLOs, protected segments with absolute quality floors and
//! non-inferiority margins, the significance level and the goodput observation window. A policy
//! is locked as canonical JSON with its sha256; results of a study stay hidden until it is.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use crate::canonical::{canonical_json, sha256_hex};
use crate::fixtures::{AnswerKind, Language, LengthClass, Position, TaskType};

/// Longest class or segment name accepted, in characters.
pub const MAX_POLICY_NAME_CHARS: usize = 64;

/// The acceptance policy of one study, as authored (file or Policy screen).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Request classes. A request belongs to the first class, in this order, whose
    /// `max_input_tokens` is at least its input tokens (and whose `route`, if set, matches).
    pub classes: Vec<RequestClass>,
    pub goodput: GoodputWindow,
    /// Significance level α. Paired intervals are computed at level 1 − 2α; the
    /// non-inferiority gate uses α divided by the number of protected segments (Bonferroni).
    pub alpha: f64,
    /// Quality segments; the protected ones gate a candidate.
    pub segments: Vec<Segment>,
    /// The offered load (requests per second) at which operations are judged, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_offered_load_rps: Option<f64>,
    /// The operating envelope's bar; left out of the canonical JSON when absent, so policies
    /// locked before it keep their sha256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub envelope: Option<EnvelopeRule>,
    /// What an instance costs, for the cost per accepted, SLO-compliant response; left out when
    /// absent, likewise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub cost: Option<CostRate>,
    /// For imported harness results: the metric that decides each task's verdict, by task name
    /// (`{"gsm8k": "exact_match", "niah_single_1": "4096"}`); a task not named is decided by its
    /// first metric. Left out when absent, so policies locked before it keep their sha256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub metrics: Option<BTreeMap<String, String>>,
}

/// The operating envelope's bar: a point is inside it when every class's good share (good ÷
/// cohort, the mean over the runs at the point) is at least `min_good_share`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvelopeRule {
    pub min_good_share: f64,
}

/// The declared cost of one serving instance per hour, in the study's currency. Instances per
/// cell are the GPU count of its manifest's `gpu_inventory` (1 when it has none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CostRate {
    pub per_instance_hour: f64,
}

/// One request class and its service-level objectives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestClass {
    pub name: String,
    /// Largest input (prompt) token count of the class, inclusive.
    pub max_input_tokens: u64,
    /// Only requests of this route belong to the class, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    pub slo: Slo,
    /// The error contract: the largest share of the class's cohort that may end in an error or
    /// a server refusal at the judged operating point. Left out of the canonical JSON when
    /// absent, so policies locked before it keep their sha256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub max_error_rate: Option<f64>,
    /// The completion contract: the least share of the class's cohort that must complete `ok`
    /// by the drain deadline (errors, refusals, timeouts, unfinished and late requests do not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub min_completion_rate: Option<f64>,
}

/// A class's SLOs in milliseconds; a key left out is not checked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Slo {
    /// Time to first token, from dispatch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    /// Mean inter-token latency of one request: (e2e − TTFT) / (output tokens − 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl_ms: Option<f64>,
    /// End-to-end latency, from dispatch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_ms: Option<f64>,
}

/// The goodput observation window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoodputWindow {
    /// Length of the observation interval, seconds: the cohort is the requests planned to
    /// arrive in [t0, t0 + interval).
    pub interval_s: f64,
    /// How long after the interval a cohort request may still finish and count, seconds.
    pub drain_s: f64,
}

/// A quality segment: the fixture items matching every set field of its filter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Segment {
    pub name: String,
    pub filter: SegmentFilter,
    /// Absolute quality floor: the least acceptable share of accepted answers in the segment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<f64>,
    /// Allowable paired regression: the candidate fails when Δ may be below −margin.
    pub margin: f64,
    /// A protected segment gates every candidate.
    pub protected: bool,
}

/// Which fixture items a segment covers; an unset field matches every item.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SegmentFilter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<Language>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length_class: Option<LengthClass>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<Position>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_type: Option<TaskType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_kind: Option<AnswerKind>,
    /// A harness task (imported lm-eval or Inspect results), e.g. `niah_single_1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub task: Option<String>,
    /// A harness task group, e.g. `ruler`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub task_group: Option<String>,
    /// A harness item's context length as its id writes it: `4096`, or `≤2048` when counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub context_length: Option<String>,
    /// Labels of a team's own prompts ([`crate::fixtures::team`]), each of which the item must
    /// carry with this value, e.g. `{"language": "de", "task": "contract"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub labels: Option<BTreeMap<String, String>>,
}

/// The strata of one fixture item, as read back from its id.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, TS, JsonSchema,
)]
pub struct ItemStrata {
    pub language: Language,
    pub length_class: LengthClass,
    pub position: Position,
    pub task_type: TaskType,
    pub answer_kind: AnswerKind,
}

impl ItemStrata {
    /// Reads the strata from a fixture item id,
    /// `{split}-{seed}-{language}-{length_class}-{position}-{task_type}-{answer_kind}-{index}`.
    pub fn from_item_id(id: &str) -> Option<ItemStrata> {
        // Exactly eight parts, read without collecting them (a study reads 100,000s of ids).
        let mut split = id.split('-');
        let mut parts = [""; 8];
        for part in &mut parts {
            *part = split.next()?;
        }
        if split.next().is_some() {
            return None;
        }
        Some(ItemStrata {
            language: Language::parse(parts[2])?,
            length_class: LengthClass::parse(parts[3])?,
            position: Position::parse(parts[4])?,
            task_type: TaskType::parse(parts[5])?,
            answer_kind: AnswerKind::parse(parts[6])?,
        })
    }

    /// The marginal strata the item belongs to, e.g. `language=de`, `length_class=long`.
    pub fn marginals(&self) -> [String; 5] {
        let values = [
            self.language.as_str(),
            self.length_class.as_str(),
            self.position.as_str(),
            self.task_type.as_str(),
            self.answer_kind.as_str(),
        ];
        std::array::from_fn(|d| format!("{}={}", STRATUM_KEYS[d], values[d]))
    }
}

/// The dimensions of [`ItemStrata`] in reading order, by the key a segment filter and a marginal
/// stratum (`key=value`) use.
pub const STRATUM_KEYS: [&str; 5] = [
    "language",
    "length_class",
    "position",
    "task_type",
    "answer_kind",
];

/// One dimension of the fixture strata: its key, its name on screen, and its values in reading
/// order (as the enum declares them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StratumDimension {
    pub key: &'static str,
    pub label: &'static str,
    pub values: Vec<&'static str>,
}

/// The fixture strata in reading order: the one list every screen, filter and marginal row
/// follows (the UI's copy is generated from it).
pub fn strata() -> [StratumDimension; 5] {
    fn dim<T: Copy + 'static>(
        d: usize,
        label: &'static str,
        all: &'static [T],
        name: fn(T) -> &'static str,
    ) -> StratumDimension {
        StratumDimension {
            key: STRATUM_KEYS[d],
            label,
            values: all.iter().map(|v| name(*v)).collect(),
        }
    }
    [
        dim(0, "Language", Language::ALL, Language::as_str),
        dim(1, "Length class", LengthClass::ALL, LengthClass::as_str),
        dim(2, "Evidence position", Position::ALL, Position::as_str),
        dim(3, "Task type", TaskType::ALL, TaskType::as_str),
        dim(4, "Answer kind", AnswerKind::ALL, AnswerKind::as_str),
    ]
}

impl SegmentFilter {
    /// True when the filter names a harness stratum (task, group or context length).
    pub fn names_harness_strata(&self) -> bool {
        self.task.is_some() || self.task_group.is_some() || self.context_length.is_some()
    }

    /// True when the filter names a fixture stratum.
    pub fn names_fixture_strata(&self) -> bool {
        self.language.is_some()
            || self.length_class.is_some()
            || self.position.is_some()
            || self.task_type.is_some()
            || self.answer_kind.is_some()
    }

    /// True when the filter names a team label.
    pub fn names_labels(&self) -> bool {
        self.labels.is_some()
    }

    /// Whether an item, by its id and its fixture strata (when it is a fixture item), is in the
    /// segment. Each kind of item matches only a filter naming no other kind's strata: a fixture
    /// item no harness stratum or label, a harness item no fixture stratum or label, a team item
    /// no fixture or harness stratum. An item of no kind is in no segment.
    pub fn matches_item(&self, id: &str, fixture: Option<&ItemStrata>) -> bool {
        if let Some(s) = fixture {
            return !self.names_labels() && self.matches(s);
        }
        if let Some(labels) = crate::fixtures::team::team_labels_of(id) {
            return !self.names_fixture_strata()
                && !self.names_harness_strata()
                && self.matches_labels(&labels);
        }
        match crate::harness::HarnessStrata::from_item_id(id) {
            Some(h) => {
                !self.names_fixture_strata() && !self.names_labels() && self.matches_harness(&h)
            }
            None => false,
        }
    }

    /// Whether a team item carrying `labels` has every label the filter names.
    pub fn matches_labels(&self, labels: &BTreeMap<String, String>) -> bool {
        self.labels
            .iter()
            .flatten()
            .all(|(k, v)| labels.get(k) == Some(v))
    }

    /// Whether a harness item is in the segment, by its harness strata alone.
    pub fn matches_harness(&self, h: &crate::harness::HarnessStrata) -> bool {
        self.task.as_ref().is_none_or(|t| *t == h.task)
            && self
                .task_group
                .as_ref()
                .is_none_or(|g| h.group.as_ref() == Some(g))
            && self
                .context_length
                .as_ref()
                .is_none_or(|c| h.context_length.as_ref() == Some(c))
    }

    pub fn matches(&self, s: &ItemStrata) -> bool {
        !self.names_harness_strata()
            && !self.names_labels()
            && self.language.is_none_or(|v| v == s.language)
            && self.length_class.is_none_or(|v| v == s.length_class)
            && self.position.is_none_or(|v| v == s.position)
            && self.task_type.is_none_or(|v| v == s.task_type)
            && self.answer_kind.is_none_or(|v| v == s.answer_kind)
    }
}

/// One problem of a policy as submitted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct PolicyProblem {
    /// JSON path, e.g. `classes[1].slo.ttft_ms`.
    pub path: String,
    pub expected: String,
    pub found: String,
}

impl std::fmt::Display for PolicyProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: expected {}, found {}",
            self.path, self.expected, self.found
        )
    }
}

pub(crate) fn problem(
    path: impl Into<String>,
    expected: impl Into<String>,
    found: impl Into<String>,
) -> PolicyProblem {
    PolicyProblem {
        path: path.into(),
        expected: expected.into(),
        found: found.into(),
    }
}

fn check_name(path: String, name: &str, seen: &mut Vec<String>, out: &mut Vec<PolicyProblem>) {
    let chars = name.chars().count();
    if name.trim().is_empty() || chars > MAX_POLICY_NAME_CHARS || name.trim() != name {
        out.push(problem(
            path,
            format!("a name of 1 to {MAX_POLICY_NAME_CHARS} characters without surrounding spaces"),
            format!("{name:?}"),
        ));
    } else if seen.iter().any(|s| s == name) {
        out.push(problem(
            path,
            "a name used once",
            format!("{name:?} used again"),
        ));
    } else {
        seen.push(name.to_owned());
    }
}

fn check_positive(path: String, v: f64, out: &mut Vec<PolicyProblem>) {
    if !(v.is_finite() && v > 0.0) {
        out.push(problem(
            path,
            "a finite number greater than 0",
            format!("{v}"),
        ));
    }
}

fn check_share(path: String, v: f64, upper_open: bool, out: &mut Vec<PolicyProblem>) {
    let ok = v.is_finite() && v >= 0.0 && if upper_open { v < 1.0 } else { v <= 1.0 };
    if !ok {
        let range = if upper_open { "[0, 1)" } else { "[0, 1]" };
        out.push(problem(path, format!("a share in {range}"), format!("{v}")));
    }
}

impl Policy {
    /// Parses a policy from JSON text; unknown fields, wrong types and bad values are refused
    /// with the JSON path of each problem.
    pub fn from_json_text(text: &str) -> Result<Policy, Vec<PolicyProblem>> {
        let value: Value = crate::canonical::parse_strict(text).map_err(|e| {
            vec![problem(
                "$",
                "a JSON object (duplicate keys refused)",
                e.to_string(),
            )]
        })?;
        Policy::from_value(value)
    }

    /// Parses and validates a policy from a JSON value.
    pub fn from_value(value: Value) -> Result<Policy, Vec<PolicyProblem>> {
        let policy: Policy = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            let path = if path == "." { "$".to_owned() } else { path };
            vec![problem(
                path,
                "a policy as in schemas/policy.schema.json",
                e.into_inner().to_string(),
            )]
        })?;
        let problems = policy.problems();
        if problems.is_empty() {
            Ok(policy)
        } else {
            Err(problems)
        }
    }

    /// The metric that decides a harness task's verdicts: the one the policy names for the task,
    /// else the first the harness lists for it (`listed`, in the harness's order).
    pub fn decisive_metric(&self, task: &str, listed: &[String]) -> Option<String> {
        self.metrics
            .as_ref()
            .and_then(|m| m.get(task).cloned())
            .or_else(|| listed.first().cloned())
    }

    /// Every problem of the policy's values; empty when it may be locked.
    pub fn problems(&self) -> Vec<PolicyProblem> {
        let mut out = Vec::new();
        for (task, metric) in self.metrics.iter().flatten() {
            if task.trim().is_empty() || metric.trim().is_empty() {
                out.push(problem(
                    format!("metrics.{task}"),
                    "a task name and the metric that decides it",
                    format!("{task:?}: {metric:?}"),
                ));
            }
        }
        if self.classes.is_empty() {
            out.push(problem("classes", "at least one request class", "none"));
        }
        let mut names = Vec::new();
        for (i, class) in self.classes.iter().enumerate() {
            check_name(
                format!("classes[{i}].name"),
                &class.name,
                &mut names,
                &mut out,
            );
            if let Some(route) = &class.route {
                if route.trim().is_empty() {
                    out.push(problem(
                        format!("classes[{i}].route"),
                        "a route name or no key",
                        "an empty one",
                    ));
                }
            }
            for (key, v) in [
                ("ttft_ms", class.slo.ttft_ms),
                ("itl_ms", class.slo.itl_ms),
                ("e2e_ms", class.slo.e2e_ms),
            ] {
                if let Some(v) = v {
                    check_positive(format!("classes[{i}].slo.{key}"), v, &mut out);
                }
            }
            for (key, v) in [
                ("max_error_rate", class.max_error_rate),
                ("min_completion_rate", class.min_completion_rate),
            ] {
                if let Some(v) = v {
                    check_share(format!("classes[{i}].{key}"), v, false, &mut out);
                }
            }
        }
        check_positive(
            "goodput.interval_s".into(),
            self.goodput.interval_s,
            &mut out,
        );
        if !(self.goodput.drain_s.is_finite() && self.goodput.drain_s >= 0.0) {
            out.push(problem(
                "goodput.drain_s",
                "a finite number ≥ 0",
                format!("{}", self.goodput.drain_s),
            ));
        }
        if !(self.alpha.is_finite() && self.alpha > 0.0 && self.alpha < 0.5) {
            out.push(problem(
                "alpha",
                "a significance level in (0, 0.5)",
                format!("{}", self.alpha),
            ));
        }
        if let Some(load) = self.target_offered_load_rps {
            check_positive("target_offered_load_rps".into(), load, &mut out);
        }
        if let Some(e) = &self.envelope {
            if !(e.min_good_share.is_finite() && e.min_good_share > 0.0 && e.min_good_share <= 1.0)
            {
                out.push(problem(
                    "envelope.min_good_share",
                    "a share in (0, 1]",
                    format!("{}", e.min_good_share),
                ));
            }
        }
        if let Some(c) = &self.cost {
            check_positive(
                "cost.per_instance_hour".into(),
                c.per_instance_hour,
                &mut out,
            );
        }
        if !self.segments.iter().any(|s| s.protected) {
            out.push(problem(
                "segments",
                "at least one protected segment (every protected segment gates a candidate)",
                "none",
            ));
        }
        let mut names = Vec::new();
        for (i, s) in self.segments.iter().enumerate() {
            check_name(format!("segments[{i}].name"), &s.name, &mut names, &mut out);
            if let Some(floor) = s.floor {
                check_share(format!("segments[{i}].floor"), floor, false, &mut out);
            }
            check_share(format!("segments[{i}].margin"), s.margin, true, &mut out);
            if let Some(labels) = &s.filter.labels {
                let path = format!("segments[{i}].filter.labels");
                if labels.is_empty() {
                    out.push(problem(&path, "at least one label", "{}"));
                }
                if s.filter.names_fixture_strata() || s.filter.names_harness_strata() {
                    out.push(problem(
                        &path,
                        "labels alone (only a team's prompts carry labels, so a filter that also \
                         names a fixture or harness stratum matches no item)",
                        "labels beside other strata",
                    ));
                }
                for (k, v) in labels {
                    use crate::fixtures::team::{valid_label_key, valid_label_value};
                    if !valid_label_key(k) || !valid_label_value(v) {
                        out.push(problem(
                            format!("{path}.{k}"),
                            "a label key of a–z, 0–9 and _ and a value of 1–48 of A–Z a–z 0–9 _ . + - ≤",
                            format!("{k}={v}"),
                        ));
                    }
                }
            }
        }
        out
    }

    /// The canonical JSON the lock hashes.
    pub fn canonical_json(&self) -> String {
        canonical_json(&serde_json::to_value(self).expect("a policy serializes"))
    }

    /// sha256 of [`Policy::canonical_json`].
    pub fn sha256(&self) -> String {
        sha256_hex(self.canonical_json().as_bytes())
    }

    /// The class of a request: the first whose `max_input_tokens` ≥ its input tokens and whose
    /// route, if set, matches. `None` when the input tokens are unknown or above every class.
    pub fn class_of(&self, input_tokens: Option<u64>, route: Option<&str>) -> Option<usize> {
        let tokens = input_tokens?;
        self.classes.iter().position(|c| {
            tokens <= c.max_input_tokens && c.route.as_deref().is_none_or(|r| Some(r) == route)
        })
    }

    /// The protected segments, in file order.
    pub fn protected_segments(&self) -> impl Iterator<Item = &Segment> {
        self.segments.iter().filter(|s| s.protected)
    }

    /// The α each protected segment's non-inferiority gate uses: α / (number of protected
    /// segments), α when there are none.
    pub fn gate_alpha(&self) -> f64 {
        let m = self.protected_segments().count();
        if m == 0 {
            self.alpha
        } else {
            self.alpha / m as f64
        }
    }
}

/// A locked policy version of a study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct LockedPolicy {
    pub study_id: i64,
    /// 1 for the first lock; each change makes the next version.
    pub version: i64,
    pub policy: Policy,
    /// sha256 of the policy's canonical JSON.
    pub sha256: String,
    /// RFC 3339 UTC time of the lock.
    pub locked_at: String,
    pub locked_by: String,
    /// Runs of the study that held measured requests when this version was locked.
    pub runs_at_lock: i64,
    /// True when this version replaced an earlier one after results existed: shown permanently.
    pub changed_after_results: bool,
    /// True when this is the first version and results existed when it was locked: its floors
    /// may have been set after results could be read. Shown permanently, as a change is.
    pub first_lock_after_results: bool,
}

/// What a lock is marked with, permanently, from when it was made ([`lock_marks`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LockMarks {
    pub changed_after_results: bool,
    pub first_lock_after_results: bool,
}

/// Marks a lock by its version and the runs that held results when it was locked: a later
/// version after results is a change after results; a first version after results is a first
/// lock after results. Either way the floors were not set before results existed.
pub fn lock_marks(version: i64, runs_with_results_at_lock: i64) -> LockMarks {
    let after_results = runs_with_results_at_lock > 0;
    LockMarks {
        changed_after_results: after_results && version > 1,
        first_lock_after_results: after_results && version == 1,
    }
}

/// Why a study's results are withheld.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Withheld {
    /// No acceptance policy is locked yet: floors come before results.
    PolicyNotLocked,
}

impl Withheld {
    pub fn as_str(self) -> &'static str {
        match self {
            Withheld::PolicyNotLocked => "policy_not_locked",
        }
    }
}

/// Floors before results: until a policy version of the study is locked, none of its results
/// (a verdict, an accepted or rejected count, a pair, a disagreement, an analysis) is shown or
/// exported anywhere. Returns why they are withheld, or `None` once a version is locked.
pub fn results_withheld(locked_versions: usize) -> Option<Withheld> {
    (locked_versions == 0).then_some(Withheld::PolicyNotLocked)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> &'static str {
        r#"{"classes": [{"name": "short", "max_input_tokens": 1023,
                          "slo": {"ttft_ms": 500, "itl_ms": 50, "e2e_ms": 5000}},
                         {"name": "long", "max_input_tokens": 8191, "slo": {"e2e_ms": 20000}}],
            "goodput": {"interval_s": 60, "drain_s": 30},
            "alpha": 0.05,
            "segments": [{"name": "de-long", "filter": {"language": "de", "length_class": "long"},
                          "floor": 0.90, "margin": 0.02, "protected": true},
                         {"name": "numeric", "filter": {"task_type": "numeric"},
                          "margin": 0.05, "protected": false}]}"#
    }

    #[test]
    fn results_are_withheld_until_a_version_is_locked() {
        assert_eq!(results_withheld(0), Some(Withheld::PolicyNotLocked));
        assert_eq!(Withheld::PolicyNotLocked.as_str(), "policy_not_locked");
        assert_eq!(
            serde_json::to_value(Withheld::PolicyNotLocked).unwrap(),
            "policy_not_locked"
        );
        assert_eq!(results_withheld(1), None);
        assert_eq!(results_withheld(3), None);
    }

    #[test]
    fn a_first_lock_after_results_is_marked_as_a_change_after_results_is() {
        let none = LockMarks::default();
        // Before any result: neither mark, whatever the version.
        assert_eq!(lock_marks(1, 0), none);
        assert_eq!(lock_marks(2, 0), none);
        // The first lock made once a run held results: marked, though nothing was changed.
        let first = lock_marks(1, 1);
        assert!(first.first_lock_after_results && !first.changed_after_results);
        assert!(lock_marks(1, 40).first_lock_after_results);
        // A later version after results is a change, not a first lock.
        let changed = lock_marks(2, 1);
        assert!(changed.changed_after_results && !changed.first_lock_after_results);
    }

    #[test]
    fn the_issue_example_parses_and_classifies_by_first_fitting_class() {
        let p = Policy::from_json_text(example()).unwrap();
        assert_eq!(p.class_of(Some(0), None), Some(0));
        assert_eq!(p.class_of(Some(1023), None), Some(0));
        assert_eq!(p.class_of(Some(1024), None), Some(1));
        assert_eq!(p.class_of(Some(8192), None), None);
        assert_eq!(p.class_of(None, None), None);
        assert_eq!(p.gate_alpha(), 0.05);
        assert_eq!(p.sha256().len(), 64);
    }

    #[test]
    fn the_hash_ignores_key_order_and_spacing() {
        let a = Policy::from_json_text(example()).unwrap();
        let mut v: Value = serde_json::from_str(example()).unwrap();
        v["alpha"] = serde_json::json!(0.05);
        let b = Policy::from_value(v).unwrap();
        assert_eq!(a.sha256(), b.sha256());
        let mut v: Value = serde_json::from_str(example()).unwrap();
        v["alpha"] = serde_json::json!(0.025);
        assert_ne!(Policy::from_value(v).unwrap().sha256(), a.sha256());
    }

    /// The envelope bar and the cost rate are optional: a policy without them hashes as it did
    /// before they existed, so its lock holds; with them, the sha256 differs and bad values are
    /// named by path.
    #[test]
    fn the_envelope_bar_and_cost_rate_leave_older_policies_hash_unchanged() {
        let before = Policy::from_json_text(example()).unwrap();
        assert!(!before.canonical_json().contains("envelope"));
        assert!(!before.canonical_json().contains("cost"));
        // The sha256 of this text, as locked before the keys existed.
        assert_eq!(
            before.sha256(),
            crate::canonical::canonical_sha256(&serde_json::from_str::<Value>(example()).unwrap())
        );
        let mut v: Value = serde_json::from_str(example()).unwrap();
        v["envelope"] = serde_json::json!({"min_good_share": 0.95});
        v["cost"] = serde_json::json!({"per_instance_hour": 4.0});
        let with = Policy::from_value(v.clone()).unwrap();
        assert_eq!(with.envelope.as_ref().unwrap().min_good_share, 0.95);
        assert_ne!(with.sha256(), before.sha256());
        v["envelope"]["min_good_share"] = serde_json::json!(0);
        v["cost"]["per_instance_hour"] = serde_json::json!(-1);
        let problems = Policy::from_value(v.clone()).unwrap_err();
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["envelope.min_good_share", "cost.per_instance_hour"]);
        v["envelope"]["min_good_share"] = serde_json::json!(1.5);
        v["cost"]["per_instance_hour"] = serde_json::json!(4.0);
        assert_eq!(
            Policy::from_value(v).unwrap_err()[0].expected,
            "a share in (0, 1]"
        );
    }

    /// The class contracts are optional likewise: absent, the sha256 is the older one; present,
    /// they are shares in [0, 1], named by path when they are not.
    #[test]
    fn class_contracts_leave_older_policies_hash_unchanged_and_must_be_shares() {
        let before = Policy::from_json_text(example()).unwrap();
        assert!(!before.canonical_json().contains("_rate"));
        let mut v: Value = serde_json::from_str(example()).unwrap();
        v["classes"][0]["max_error_rate"] = serde_json::json!(0.01);
        v["classes"][1]["min_completion_rate"] = serde_json::json!(0.99);
        let with = Policy::from_value(v.clone()).unwrap();
        assert_eq!(with.classes[0].max_error_rate, Some(0.01));
        assert_eq!(with.classes[1].min_completion_rate, Some(0.99));
        assert_ne!(with.sha256(), before.sha256());
        v["classes"][0]["max_error_rate"] = serde_json::json!(1.5);
        v["classes"][1]["min_completion_rate"] = serde_json::json!(-0.1);
        let problems = Policy::from_value(v).unwrap_err();
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "classes[0].max_error_rate",
                "classes[1].min_completion_rate"
            ]
        );
        assert_eq!(problems[0].expected, "a share in [0, 1]");
    }

    #[test]
    fn bad_values_are_named_by_path() {
        let mut v: Value = serde_json::from_str(example()).unwrap();
        v["classes"][1]["name"] = "short".into();
        v["classes"][0]["slo"]["ttft_ms"] = serde_json::json!(-1);
        v["alpha"] = serde_json::json!(0.5);
        v["segments"][0]["margin"] = serde_json::json!(1.0);
        v["goodput"]["interval_s"] = serde_json::json!(0);
        let problems = Policy::from_value(v).unwrap_err();
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "classes[0].slo.ttft_ms",
                "classes[1].name",
                "goodput.interval_s",
                "alpha",
                "segments[0].margin"
            ]
        );
        assert!(problems[1].found.contains("used again"), "{problems:?}");
    }

    #[test]
    fn unknown_fields_and_unknown_strata_are_refused() {
        let mut v: Value = serde_json::from_str(example()).unwrap();
        v["segments"][0]["filter"]["language"] = "fr".into();
        let e = Policy::from_value(v).unwrap_err();
        assert!(e[0].found.contains("fr"), "{e:?}");
        let mut v: Value = serde_json::from_str(example()).unwrap();
        v["classes"][0]["slo"]["tpot_ms"] = serde_json::json!(5);
        let e = Policy::from_value(v).unwrap_err();
        assert!(e[0].found.contains("tpot_ms"), "{e:?}");
        let e = Policy::from_json_text(r#"{"alpha": 0.05, "alpha": 0.1}"#).unwrap_err();
        assert!(e[0].found.to_lowercase().contains("duplicate"), "{e:?}");
    }

    #[test]
    fn strata_come_back_from_fixture_ids_and_filters_match_them() {
        let s =
            ItemStrata::from_item_id("evaluation-7-de-long-end-multi_document-absent-003").unwrap();
        assert_eq!(s.language, Language::De);
        assert_eq!(s.task_type, TaskType::MultiDocument);
        assert_eq!(s.answer_kind, AnswerKind::Absent);
        let f = SegmentFilter {
            language: Some(Language::De),
            length_class: Some(LengthClass::Long),
            ..Default::default()
        };
        assert!(f.matches(&s));
        let f = SegmentFilter {
            position: Some(Position::Begin),
            ..Default::default()
        };
        assert!(!f.matches(&s));
        assert!(ItemStrata::from_item_id("item-1").is_none());
        // Eight parts exactly: one fewer or one more is not a fixture item's id.
        assert!(
            ItemStrata::from_item_id("evaluation-7-de-long-end-multi_document-absent").is_none()
        );
        assert!(
            ItemStrata::from_item_id("evaluation-7-de-long-end-multi_document-absent-003-x")
                .is_none()
        );
        assert!(ItemStrata::from_item_id("").is_none());
        assert!(ItemStrata::from_item_id("evaluation-7-fr-long-end-literal-present-000").is_none());
    }

    #[test]
    fn the_strata_keys_are_the_fields_of_a_filter_and_of_an_item() {
        let s =
            ItemStrata::from_item_id("evaluation-7-de-long-end-multi_document-absent-003").unwrap();
        let item = serde_json::to_value(s).unwrap();
        let keys: Vec<&str> = item
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut want = STRATUM_KEYS.to_vec();
        want.sort_unstable();
        assert_eq!(keys, want);
        for d in strata() {
            let filter = serde_json::json!({ d.key: d.values[0] });
            assert!(
                serde_json::from_value::<SegmentFilter>(filter).is_ok(),
                "{}",
                d.key
            );
            assert_eq!(
                item[d.key].as_str().map(|v| d.values.contains(&v)),
                Some(true)
            );
        }
        assert_eq!(strata()[1].values, ["short", "medium", "long"]);
        assert_eq!(
            strata()[3].values,
            [
                "literal",
                "numeric",
                "multi_document",
                "business_rule",
                "variable_tracking",
                "multi_key",
                "multi_value",
                "aggregation"
            ]
        );
        let tracked =
            ItemStrata::from_item_id("evaluation-7-en-long-middle-variable_tracking-present-000")
                .unwrap();
        assert_eq!(tracked.task_type, TaskType::VariableTracking);
    }

    #[test]
    fn marginal_strata_name_their_dimension() {
        let s =
            ItemStrata::from_item_id("evaluation-7-de-long-end-multi_document-absent-003").unwrap();
        assert_eq!(
            s.marginals(),
            [
                "language=de",
                "length_class=long",
                "position=end",
                "task_type=multi_document",
                "answer_kind=absent",
            ]
        );
    }
}
