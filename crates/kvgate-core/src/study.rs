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
