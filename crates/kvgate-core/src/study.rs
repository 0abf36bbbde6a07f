//! A study: one review of one KV-precision change. It owns manifests, policy, runs and decisions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Longest study name accepted, in characters.
pub const MAX_NAME_CHARS: usize = 120;
/// Longest study description accepted, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 4000;

/// Where a study's data came from. Synthetic data is labelled wherever it is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Provenance {
    /// Generated demo data, not a recorded run.
    SyntheticDemo,
    /// The demo seeded from real recorded runs: llama.cpp on CPU, q8_0 KV as an 8-bit
    /// stand-in for FP8 (prompts from the synthetic fixture corpus).
    RecordedDemo,
    /// Created by a user; its evidence comes from real runs and imports.
    User,
}

impl Provenance {
    pub fn as_str(self) -> &'static str {
        match self {
            Provenance::SyntheticDemo => "synthetic_demo",
            Provenance::RecordedDemo => "recorded_demo",
            Provenance::User => "user",
        }
    }

    /// The label shown to people.
    pub fn label(self) -> &'static str {
        match self {
            Provenance::SyntheticDemo => "synthetic demo",
            Provenance::RecordedDemo => {
                "recorded demo: llama.cpp on CPU, q8_0 KV as an 8-bit stand-in"
            }
            Provenance::User => "user",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "synthetic_demo" => Some(Provenance::SyntheticDemo),
            "recorded_demo" => Some(Provenance::RecordedDemo),
            "user" => Some(Provenance::User),
            _ => None,
        }
    }
}

/// A stored study.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct Study {
    pub id: i64,
    pub name: String,
    pub description: String,
    pub provenance: Provenance,
    /// RFC 3339 UTC time of creation.
    pub created_at: String,
}

/// What a user submits to create a study.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct NewStudy {
    pub name: String,
    #[serde(default)]
    pub description: String,
}

/// Why a study cannot be created as submitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StudyError {
    #[error("field `name`: expected a non-empty name, found an empty one")]
    EmptyName,
    #[error("field `name`: expected at most {max} characters, found {found}")]
    NameTooLong { max: usize, found: usize },
    #[error("field `name`: expected no control characters, found one at character {position}")]
    NameControlChar { position: usize },
    #[error("field `description`: expected at most {max} characters, found {found}")]
    DescriptionTooLong { max: usize, found: usize },
}

impl NewStudy {
    /// Trims the name and description and checks them; returns the normalised input.
    pub fn validate(&self) -> Result<NewStudy, StudyError> {
        let name = self.name.trim();
        if name.is_empty() {
            return Err(StudyError::EmptyName);
        }
        let name_chars = name.chars().count();
        if name_chars > MAX_NAME_CHARS {
            return Err(StudyError::NameTooLong {
                max: MAX_NAME_CHARS,
                found: name_chars,
            });
        }
        if let Some(position) = name.chars().position(char::is_control) {
            return Err(StudyError::NameControlChar {
                position: position + 1,
            });
        }
        let description = self.description.trim();
        let description_chars = description.chars().count();
        if description_chars > MAX_DESCRIPTION_CHARS {
            return Err(StudyError::DescriptionTooLong {
                max: MAX_DESCRIPTION_CHARS,
                found: description_chars,
            });
        }
        Ok(NewStudy {
            name: name.to_owned(),
            description: description.to_owned(),
        })
    }
}

/// One step of the way from a new study to an architecture-review packet, in the order the
/// workbench guides a user through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StudyStep {
    /// Author and freeze the baseline B0 and at least one candidate (Manifests).
    Manifests,
    /// Lock the acceptance policy before any result is seen (Policy).
    LockPolicy,
    /// Run the paired quality fixtures against B0 and a candidate, or import results (Runs).
    RunOrImport,
    /// Label every paired disagreement, blind (Review).
    Review,
    /// Sign the four checks and record a decision per candidate (Sign-off).
    SignOff,
    /// Export the architecture-review packet (Packet).
    Export,
}

/// Where a study stands: counts the service layer reads from the store, and the next step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct StudyProgress {
    pub study_id: i64,
    /// Whether the baseline B0 is frozen.
    pub baseline_frozen: bool,
    /// Frozen cells other than B0.
    pub candidates_frozen: u32,
    /// Manifests still drafts.
    pub drafts: u32,
    /// The policy version in force; absent until one is locked.
    pub policy_version: Option<u32>,
    /// Frozen cells with at least one run that holds measured requests (B0 counted).
    pub cells_with_runs: u32,
    /// Whether B0 has such a run.
    pub baseline_has_runs: bool,
    /// Paired disagreements of every candidate; absent (not 0) until a policy is locked, since
    /// a disagreement is a result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub disagreements: Option<u32>,
    /// Disagreements that carry a reviewer's label; absent until a policy is locked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub disagreements_labelled: Option<u32>,
    /// Checks whose signature covers the current evidence (of four); void ones do not count.
    pub checks_signed: u32,
    /// Candidates with a recorded decision.
    pub candidates_decided: u32,
    /// The first step not done yet; `export` once everything before it is.
    pub next: StudyStep,
}

/// The counts [`StudyProgress`] is made of, before the next step is chosen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProgressCounts {
    pub baseline_frozen: bool,
    pub candidates_frozen: u32,
    pub drafts: u32,
    pub policy_version: Option<u32>,
    pub cells_with_runs: u32,
    pub baseline_has_runs: bool,
    pub disagreements: Option<u32>,
    pub disagreements_labelled: Option<u32>,
    pub checks_signed: u32,
    pub candidates_decided: u32,
}

/// The four checks of the guide's acceptance checklist.
pub const CHECKS: u32 = 4;

impl ProgressCounts {
    /// The first step not done: a frozen B0 and a frozen candidate, a locked policy, runs of B0
    /// and a candidate, every disagreement labelled, four valid signatures and a decision per
    /// candidate. An earlier gap wins over later work (runs without a locked policy still ask
    /// for the lock first: results stay hidden until then).
    pub fn next_step(&self) -> StudyStep {
        if !self.baseline_frozen || self.candidates_frozen == 0 {
            StudyStep::Manifests
        } else if self.policy_version.is_none() {
            StudyStep::LockPolicy
        } else if !self.baseline_has_runs || self.cells_with_runs < 2 {
            StudyStep::RunOrImport
        } else if self.disagreements_labelled.unwrap_or(0) < self.disagreements.unwrap_or(0) {
            StudyStep::Review
        } else if self.checks_signed < CHECKS || self.candidates_decided < self.candidates_frozen {
            StudyStep::SignOff
        } else {
            StudyStep::Export
        }
    }

    pub fn into_progress(self, study_id: i64) -> StudyProgress {
        StudyProgress {
            study_id,
            next: self.next_step(),
            baseline_frozen: self.baseline_frozen,
            candidates_frozen: self.candidates_frozen,
            drafts: self.drafts,
            policy_version: self.policy_version,
            cells_with_runs: self.cells_with_runs,
            baseline_has_runs: self.baseline_has_runs,
            disagreements: self.disagreements,
            disagreements_labelled: self.disagreements_labelled,
            checks_signed: self.checks_signed,
            candidates_decided: self.candidates_decided,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new(name: &str) -> NewStudy {
        NewStudy {
            name: name.into(),
            description: String::new(),
        }
    }

    #[test]
    fn trims_name_and_description() {
        let ok = NewStudy {
            name: "  FP8 KV for chat  ".into(),
            description: " why ".into(),
        }
        .validate()
        .unwrap();
        assert_eq!(ok.name, "FP8 KV for chat");
        assert_eq!(ok.description, "why");
    }

    #[test]
    fn rejects_blank_name() {
        assert_eq!(new("   ").validate(), Err(StudyError::EmptyName));
    }

    #[test]
    fn rejects_long_name_with_counts() {
        let long = "x".repeat(MAX_NAME_CHARS + 1);
        let err = new(&long).validate().unwrap_err();
        assert_eq!(
            err,
            StudyError::NameTooLong {
                max: MAX_NAME_CHARS,
                found: MAX_NAME_CHARS + 1
            }
        );
        assert!(err.to_string().contains("field `name`"));
    }

    #[test]
    fn counts_characters_not_bytes() {
        let umlauts = "ä".repeat(MAX_NAME_CHARS);
        assert!(new(&umlauts).validate().is_ok());
    }

    #[test]
    fn rejects_control_characters() {
        assert_eq!(
            new("a\tb").validate(),
            Err(StudyError::NameControlChar { position: 2 })
        );
    }

    fn done() -> ProgressCounts {
        ProgressCounts {
            baseline_frozen: true,
            candidates_frozen: 1,
            drafts: 0,
            policy_version: Some(1),
            cells_with_runs: 2,
            baseline_has_runs: true,
            disagreements: Some(3),
            disagreements_labelled: Some(3),
            checks_signed: CHECKS,
            candidates_decided: 1,
        }
    }

    #[test]
    fn a_new_study_starts_with_its_manifests() {
        assert_eq!(ProgressCounts::default().next_step(), StudyStep::Manifests);
        assert_eq!(done().next_step(), StudyStep::Export);
    }

    #[test]
    fn each_gap_names_its_step_and_an_earlier_gap_wins() {
        type Change = fn(&mut ProgressCounts);
        let cases: [(Change, StudyStep); 9] = [
            (|c| c.baseline_frozen = false, StudyStep::Manifests),
            (|c| c.candidates_frozen = 0, StudyStep::Manifests),
            (|c| c.policy_version = None, StudyStep::LockPolicy),
            (|c| c.baseline_has_runs = false, StudyStep::RunOrImport),
            (|c| c.cells_with_runs = 1, StudyStep::RunOrImport),
            (|c| c.disagreements_labelled = Some(2), StudyStep::Review),
            (|c| c.checks_signed = CHECKS - 1, StudyStep::SignOff),
            (|c| c.candidates_decided = 0, StudyStep::SignOff),
            (
                // Everything later done does not hide a missing lock: results stay hidden.
                |c| {
                    c.policy_version = None;
                    c.cells_with_runs = 5;
                },
                StudyStep::LockPolicy,
            ),
        ];
        for (i, (change, step)) in cases.into_iter().enumerate() {
            let mut c = done();
            change(&mut c);
            assert_eq!(c.next_step(), step, "case {i}: {c:?}");
        }
    }

    #[test]
    fn before_the_lock_disagreements_are_absent_not_zero() {
        // Runs exist but no policy is locked: the counts are withheld, and the step is the lock.
        let mut c = done();
        c.policy_version = None;
        c.disagreements = None;
        c.disagreements_labelled = None;
        assert_eq!(c.next_step(), StudyStep::LockPolicy);
        let v = serde_json::to_value(c.into_progress(3)).unwrap();
        assert!(v.get("disagreements").is_none(), "{v}");
        assert!(v.get("disagreements_labelled").is_none(), "{v}");
        let mut c = done();
        c.disagreements = Some(0);
        c.disagreements_labelled = Some(0);
        let v = serde_json::to_value(c.into_progress(3)).unwrap();
        assert_eq!(v["disagreements"], 0, "after the lock a count of none is 0");
    }

    #[test]
    fn two_cells_with_runs_do_not_count_without_the_baseline() {
        // Two candidates ran, B0 did not: nothing is paired yet.
        let mut c = done();
        c.candidates_frozen = 2;
        c.candidates_decided = 2;
        c.baseline_has_runs = false;
        assert_eq!(c.next_step(), StudyStep::RunOrImport);
    }

    #[test]
    fn a_second_candidate_without_a_decision_keeps_the_sign_off_open() {
        let mut c = done();
        c.candidates_frozen = 2;
        assert_eq!(c.next_step(), StudyStep::SignOff);
        c.candidates_decided = 2;
        assert_eq!(c.next_step(), StudyStep::Export);
    }

    #[test]
    fn no_disagreement_goes_straight_to_sign_off() {
        let mut c = done();
        c.disagreements = Some(0);
        c.disagreements_labelled = Some(0);
        c.checks_signed = 0;
        assert_eq!(c.next_step(), StudyStep::SignOff);
        let p = c.clone().into_progress(7);
        assert_eq!((p.study_id, p.next), (7, StudyStep::SignOff));
    }

    #[test]
    fn provenance_round_trips_and_labels_synthetic() {
        for p in [
            Provenance::SyntheticDemo,
            Provenance::RecordedDemo,
            Provenance::User,
        ] {
            assert_eq!(Provenance::parse(p.as_str()), Some(p));
        }
        assert_eq!(Provenance::SyntheticDemo.label(), "synthetic demo");
        assert_eq!(Provenance::parse("demo"), None);
    }
}
