//! Per-item results of evaluation harnesses (lm-evaluation-harness `--log_samples`, Inspect AI
//! logs) as paired evidence: the item id a harness row stands for, the digest that decides whether
//! two rows were sent the same prompt, and the rule that turns a harness score into a verdict.
//!
//! An item of a harness task is named `{harness}:{group/}{task}{@context}:{doc}`, e.g.
//! `lm-eval:gsm8k:16`, `lm-eval:ruler/niah_single_1@4096:17`, `inspect:arc_easy:1`. Its strata are
//! read back from the id ([`HarnessStrata::from_item_id`]): the task, the task's group, and the
//! context length (the task's configured length, or the prompt's token count rounded up to a
//! power of two, written `≤N`). Items KV Gate exported keep their fixture item id instead, so they
//! pair and stratify exactly like KV Gate's own runs of the same items.
//!
//! Two rows pair when their item ids and prompt digests agree. The digest of a harness row
//! ([`harness_prompt_sha256`]) covers the harness, the task, the prompt as the harness hashed or
//! sent it, and the generation settings: a prompt or a setting that differs is not a pair.

pub mod approved;
pub mod export;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use ts_rs::TS;

use crate::canonical::canonical_sha256;
use crate::validator::{ReasonCode, ReasonDetail, Verdict};

/// The strata of one harness item, as read back from its id.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, TS, JsonSchema,
)]
pub struct HarnessStrata {
    /// `lm-eval` or `inspect`.
    pub harness: String,
    pub task: String,
    /// The group the task belongs to (lm-eval's `group_subtasks`), when the file says.
    pub group: Option<String>,
    /// The configured context length (`4096`), or the prompt's counted tokens rounded up (`≤2048`).
    pub context_length: Option<String>,
}

/// Characters a task, group or context part of a harness item id may not hold: they separate
/// the parts.
const SEPARATORS: [char; 3] = [':', '/', '@'];

impl HarnessStrata {
    /// The item id of document `doc` of this task.
    pub fn item_id(&self, doc: &str) -> String {
        let clean = |s: &str| s.replace(SEPARATORS, "_");
        let mut id = format!("{}:", clean(&self.harness));
        if let Some(group) = &self.group {
            id.push_str(&clean(group));
            id.push('/');
        }
        id.push_str(&clean(&self.task));
        if let Some(context) = &self.context_length {
            id.push('@');
            id.push_str(&clean(context));
        }
        id.push(':');
        id.push_str(doc);
        id
    }

    /// Reads the strata from a harness item id; `None` for any other id (fixture items).
    pub fn from_item_id(id: &str) -> Option<HarnessStrata> {
        let (harness, rest) = id.split_once(':')?;
        if !matches!(harness, "lm-eval" | "inspect") {
            return None;
        }
        let (middle, _doc) = rest.split_once(':')?;
        let (group, task_context) = match middle.split_once('/') {
            Some((g, t)) => (Some(g.to_owned()), t),
            None => (None, middle),
        };
        let (task, context) = match task_context.split_once('@') {
            Some((t, c)) => (t, Some(c.to_owned())),
            None => (task_context, None),
        };
        if task.is_empty() {
            return None;
        }
        Some(HarnessStrata {
            harness: harness.to_owned(),
            task: task.to_owned(),
            group,
            context_length: context,
        })
    }

    /// The marginal strata the item belongs to: `task=…`, `task_group=…`, `context_length=…`.
    pub fn marginals(&self) -> Vec<String> {
        let mut out = vec![format!("task={}", self.task)];
        if let Some(g) = &self.group {
            out.push(format!("task_group={g}"));
        }
        if let Some(c) = &self.context_length {
            out.push(format!("context_length={c}"));
        }
        out
    }
}

/// The context-length stratum of a prompt of `tokens` tokens when the task configures none: the
/// smallest power of two from 1,024 up that holds it, written `≤N`.
pub fn counted_context_length(tokens: usize) -> String {
    let mut n = 1024usize;
    while n < tokens {
        n *= 2;
    }
    format!("≤{n}")
}

/// The prompt digest of a harness row: the harness, the task, the prompt (the harness's own
/// prompt hash, or the sha256 of the input it sent) and the generation settings, canonical.
pub fn harness_prompt_sha256(
    harness: &str,
    task: &str,
    prompt: &str,
    generation: &Value,
) -> String {
    canonical_sha256(&json!({
        "harness": harness,
        "task": task,
        "prompt": prompt,
        "generation": generation,
    }))
}

/// A harness score read as a verdict: 1 is accepted, 0 rejected; lm-eval's −1 (a length that was
/// not run) and an absent score are no verdict. Any other value is not a pass/fail score and is
/// refused, so a partial credit is never rounded into a pass.
pub fn score_verdict(metric: &str, value: Option<f64>) -> Result<Option<Verdict>, String> {
    match value {
        None => Ok(None),
        Some(-1.0) => Ok(None),
        Some(1.0) => Ok(Some(Verdict {
            accepted: true,
            reasons: Vec::new(),
            fenced: false,
            extracted: None,
            detail: Vec::new(),
        })),
        Some(0.0) => Ok(Some(Verdict {
            accepted: false,
            reasons: vec![ReasonCode::HarnessScore],
            fenced: false,
            extracted: None,
            detail: vec![ReasonDetail {
                reason: ReasonCode::HarnessScore,
                field: Some(metric.to_owned()),
                expected: Some("1".into()),
                found: Some("0".into()),
                text: format!("the harness scored {metric} 0"),
            }],
        })),
        Some(v) => Err(format!(
            "expected a pass/fail score (1, 0, or -1 for a length not run), found {v}"
        )),
    }
}

/// One harness row's scores: its task, the filter its response went through (lm-eval writes
/// one row per filter; `none` where there is none) and each metric's value as the file lists them.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredRow {
    pub task: String,
    pub filter: String,
    pub scores: Vec<(String, Option<f64>)>,
}

/// The metric, and the filter, that decide one task's verdicts.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS, JsonSchema)]
pub struct DecisiveMetric {
    pub task: String,
    pub metric: String,
    pub filter: String,
    /// `policy` when the locked policy names it, `first` when it is the task's first metric that
    /// scored some row (lm-eval's −1 for a length not run scores none).
    pub chosen_by: String,
}

/// Per task, the metric that decides: the one `named` (the policy's `metrics`; `metric` or
/// `metric,filter`), else the first metric of the task's first row that scores some row of the
/// task. The filter is the named one, else the first filter of a row holding the metric.
/// A named metric no row of the task holds is an error naming it.
pub fn decisive_metrics(
    rows: &[ScoredRow],
    named: impl Fn(&str) -> Option<String>,
) -> Result<Vec<DecisiveMetric>, String> {
    let mut tasks: Vec<&str> = Vec::new();
    for r in rows {
        if !tasks.contains(&r.task.as_str()) {
            tasks.push(&r.task);
        }
    }
    let mut out = Vec::new();
    for task in tasks {
        let of_task: Vec<&ScoredRow> = rows.iter().filter(|r| r.task == task).collect();
        let holds = |r: &ScoredRow, metric: &str| r.scores.iter().any(|(m, _)| m == metric);
        let decided = match named(task) {
            Some(name) => {
                let (metric, filter) = match name.split_once(',') {
                    Some((m, f)) => (m.to_owned(), Some(f.to_owned())),
                    None => (name.clone(), None),
                };
                let row = of_task
                    .iter()
                    .find(|r| holds(r, &metric) && filter.as_ref().is_none_or(|f| *f == r.filter));
                let Some(row) = row else {
                    let listed: Vec<String> = of_task
                        .first()
                        .map(|r| {
                            r.scores
                                .iter()
                                .map(|(m, _)| format!("{m},{}", r.filter))
                                .collect()
                        })
                        .unwrap_or_default();
                    return Err(format!(
                        "metrics.{task}: expected a metric the file scores for task {task} ({}), found {name:?}",
                        listed.join(", ")
                    ));
                };
                DecisiveMetric {
                    task: task.to_owned(),
                    metric,
                    filter: row.filter.clone(),
                    chosen_by: "policy".into(),
                }
            }
            None => {
                let first = of_task[0];
                let scored = |metric: &str| {
                    of_task.iter().any(|r| {
                        r.scores
                            .iter()
                            .any(|(m, v)| m == metric && v.is_some_and(|v| v != -1.0))
                    })
                };
                let Some((metric, _)) = first.scores.iter().find(|(m, _)| scored(m)) else {
                    return Err(format!(
                        "task {task}: expected a metric that scores at least one row, found none (every value absent or -1)"
                    ));
                };
                let row = of_task.iter().find(|r| holds(r, metric)).unwrap_or(&first);
                DecisiveMetric {
                    task: task.to_owned(),
                    metric: metric.clone(),
                    filter: row.filter.clone(),
                    chosen_by: "first".into(),
                }
            }
        };
        out.push(decided);
    }
    Ok(out)
}

/// A row's verdict under the decisive metrics: `None` when the row is of another filter than the
/// one deciding its task (lm-eval's second row of the same response; not stored), else the
/// verdict of [`score_verdict`] (itself `None` for −1 or an absent score).
#[allow(clippy::type_complexity)]
pub fn row_verdict(
    row: &ScoredRow,
    decided: &[DecisiveMetric],
) -> Result<Option<Option<Verdict>>, String> {
    let Some(d) = decided.iter().find(|d| d.task == row.task) else {
        return Ok(None);
    };
    if d.filter != row.filter {
        return Ok(None);
    }
    let value = row
        .scores
        .iter()
        .find(|(m, _)| *m == d.metric)
        .and_then(|(_, v)| *v);
    score_verdict(&d.metric, value).map(Some)
}

/// The answers a harness target names, to locate in the prompt (the needle of a retrieval task):
/// the elements of a list target — JSON (`["3336625"]`) or Python's repr, as lm-eval writes RULER
/// targets (`"['3336625', 'x']"`) — else the target itself; trimmed, empty ones dropped, each once.
pub fn target_needles(target: &str) -> Vec<String> {
    let t = target.trim();
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: &str| {
        let s = s.trim();
        if !s.is_empty() && !out.iter().any(|o| o == s) {
            out.push(s.to_owned());
        }
    };
    if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(t) {
        for v in &items {
            match v {
                Value::String(s) => push(s),
                Value::Number(n) => push(&n.to_string()),
                _ => {}
            }
        }
        return out;
    }
    if let Some(inner) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        // Python's repr of a list of strings: quoted with ' (or " when the text holds a ').
        let mut rest = inner.trim();
        let mut parsed = Vec::new();
        while let Some(q) = rest.chars().next().filter(|c| *c == '\'' || *c == '"') {
            let Some(end) = rest[1..].find(q) else { break };
            parsed.push(rest[1..1 + end].to_owned());
            rest = rest[end + 2..].trim_start();
            rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
        }
        if rest.is_empty() && !parsed.is_empty() {
            for p in &parsed {
                push(p);
            }
            return out;
        }
    }
    push(t);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_targets_needles_are_its_list_elements_or_itself() {
        assert_eq!(target_needles("['3336625']"), ["3336625"]);
        assert_eq!(target_needles("['a1', \"it's\", 'a1']"), ["a1", "it's"]);
        assert_eq!(target_needles(r#"["x", 42, null]"#), ["x", "42"]);
        assert_eq!(target_needles(" Paris "), ["Paris"]);
        assert_eq!(target_needles(""), Vec::<String>::new());
        assert_eq!(target_needles("[]"), Vec::<String>::new());
        // Not a list of quoted strings: the whole target.
        assert_eq!(target_needles("[see above]"), ["[see above]"]);
        assert_eq!(target_needles("['open"), ["['open"]);
    }

    fn strata(group: Option<&str>, context: Option<&str>) -> HarnessStrata {
        HarnessStrata {
            harness: "lm-eval".into(),
            task: "niah_single_1".into(),
            group: group.map(Into::into),
            context_length: context.map(Into::into),
        }
    }

    #[test]
    fn item_ids_carry_task_group_and_context_and_read_back() {
        for s in [
            strata(None, None),
            strata(Some("ruler"), None),
            strata(None, Some("4096")),
            strata(Some("ruler"), Some("≤2048")),
        ] {
            let id = s.item_id("17");
            assert_eq!(HarnessStrata::from_item_id(&id), Some(s.clone()), "{id}");
        }
        assert_eq!(
            strata(Some("ruler"), Some("4096")).item_id("17"),
            "lm-eval:ruler/niah_single_1@4096:17"
        );
        // A doc id may hold the separators; the task may not, and is cleaned.
        let odd = HarnessStrata {
            harness: "inspect".into(),
            task: "a:b/c@d".into(),
            group: None,
            context_length: None,
        };
        let id = odd.item_id("x:y/z");
        assert_eq!(id, "inspect:a_b_c_d:x:y/z");
        assert_eq!(HarnessStrata::from_item_id(&id).unwrap().task, "a_b_c_d");
        // Fixture item ids and other text are not harness items.
        assert_eq!(
            HarnessStrata::from_item_id("evaluation-11-en-short-begin-literal-present-000"),
            None
        );
        assert_eq!(HarnessStrata::from_item_id("vllm:task:1"), None);
        assert_eq!(HarnessStrata::from_item_id("lm-eval::1"), None);
    }

    #[test]
    fn marginals_name_only_what_the_item_has() {
        assert_eq!(strata(None, None).marginals(), ["task=niah_single_1"]);
        assert_eq!(
            strata(Some("ruler"), Some("4096")).marginals(),
            [
                "task=niah_single_1",
                "task_group=ruler",
                "context_length=4096"
            ]
        );
    }

    #[test]
    fn counted_lengths_round_up_to_a_power_of_two_from_1024() {
        assert_eq!(counted_context_length(0), "≤1024");
        assert_eq!(counted_context_length(1024), "≤1024");
        assert_eq!(counted_context_length(1025), "≤2048");
        assert_eq!(counted_context_length(100_000), "≤131072");
    }

    #[test]
    fn a_different_prompt_or_generation_setting_is_a_different_digest() {
        let gen = json!({"temperature": 0.0, "max_gen_toks": 128, "until": []});
        let base = harness_prompt_sha256("lm-eval", "gsm8k", "e1bf", &gen);
        assert_eq!(
            base,
            harness_prompt_sha256("lm-eval", "gsm8k", "e1bf", &gen)
        );
        assert_ne!(
            base,
            harness_prompt_sha256("lm-eval", "gsm8k", "e1bg", &gen)
        );
        assert_ne!(
            base,
            harness_prompt_sha256("lm-eval", "gsm8k_cot", "e1bf", &gen)
        );
        assert_ne!(
            base,
            harness_prompt_sha256("inspect", "gsm8k", "e1bf", &gen)
        );
        let other = json!({"temperature": 0.7, "max_gen_toks": 128, "until": []});
        assert_ne!(
            base,
            harness_prompt_sha256("lm-eval", "gsm8k", "e1bf", &other)
        );
        // Key order is not a setting.
        let reordered = json!({"until": [], "max_gen_toks": 128, "temperature": 0.0});
        assert_eq!(
            base,
            harness_prompt_sha256("lm-eval", "gsm8k", "e1bf", &reordered)
        );
    }

    fn row(task: &str, filter: &str, scores: &[(&str, Option<f64>)]) -> ScoredRow {
        ScoredRow {
            task: task.into(),
            filter: filter.into(),
            scores: scores.iter().map(|(m, v)| (m.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn the_decisive_metric_is_the_policys_else_the_first_that_scores() {
        // RULER at 500 tokens: 4096 is listed first but was not run (-1 everywhere).
        let ruler = [
            row("niah", "none", &[("4096", Some(-1.0)), ("500", Some(1.0))]),
            row("niah", "none", &[("4096", Some(-1.0)), ("500", Some(0.0))]),
        ];
        let d = decisive_metrics(&ruler, |_| None).unwrap();
        assert_eq!(
            (d[0].metric.as_str(), d[0].chosen_by.as_str()),
            ("500", "first")
        );
        assert!(
            row_verdict(&ruler[0], &d)
                .unwrap()
                .unwrap()
                .unwrap()
                .accepted
        );
        assert!(
            !row_verdict(&ruler[1], &d)
                .unwrap()
                .unwrap()
                .unwrap()
                .accepted
        );
        // The policy naming 4096 decides: every row has no verdict, never a rejection.
        let d = decisive_metrics(&ruler, |_| Some("4096".into())).unwrap();
        assert_eq!(d[0].chosen_by, "policy");
        assert_eq!(row_verdict(&ruler[0], &d).unwrap(), Some(None));
        // A metric the file does not score is refused by name.
        let err = decisive_metrics(&ruler, |_| Some("8192".into())).unwrap_err();
        assert!(
            err.contains("metrics.niah") && err.contains("\"8192\""),
            "{err}"
        );
        // gsm8k: one row per filter for the same document; one filter decides.
        let gsm = [
            row("gsm8k", "strict-match", &[("exact_match", Some(0.0))]),
            row("gsm8k", "flexible-extract", &[("exact_match", Some(1.0))]),
        ];
        let d = decisive_metrics(&gsm, |_| None).unwrap();
        assert_eq!(d[0].filter, "strict-match");
        assert!(!row_verdict(&gsm[0], &d).unwrap().unwrap().unwrap().accepted);
        assert_eq!(
            row_verdict(&gsm[1], &d).unwrap(),
            None,
            "the other filter's row is not stored"
        );
        let d = decisive_metrics(&gsm, |_| Some("exact_match,flexible-extract".into())).unwrap();
        assert_eq!(row_verdict(&gsm[0], &d).unwrap(), None);
        assert!(row_verdict(&gsm[1], &d).unwrap().unwrap().unwrap().accepted);
        // A partial score under the decisive metric is refused, not rounded.
        let f1 = [row("squad", "none", &[("f1", Some(0.5))])];
        let d = decisive_metrics(&f1, |_| None).unwrap();
        assert!(row_verdict(&f1[0], &d).is_err());
        // No metric scores anything: refused.
        let none = [row("t", "none", &[("4096", Some(-1.0))])];
        assert!(decisive_metrics(&none, |_| None).is_err());
    }

    #[test]
    fn only_one_and_zero_are_verdicts_and_minus_one_is_absent() {
        assert!(score_verdict("m", Some(1.0)).unwrap().unwrap().accepted);
        let no = score_verdict("exact_match", Some(0.0)).unwrap().unwrap();
        assert!(!no.accepted);
        assert_eq!(no.reasons, [ReasonCode::HarnessScore]);
        assert_eq!(score_verdict("4096", Some(-1.0)).unwrap(), None);
        assert_eq!(score_verdict("m", None).unwrap(), None);
        let err = score_verdict("f1", Some(0.5)).unwrap_err();
        assert!(err.contains("found 0.5"), "{err}");
        assert!(score_verdict("m", Some(0.999_999)).is_err());
        assert!(score_verdict("m", Some(f64::NAN)).is_err());
    }
}
