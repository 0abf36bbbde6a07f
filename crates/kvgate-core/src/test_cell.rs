//! Test cells: B0 (rollback target), C1/C2/C3 (the guide's FP8 candidates), other named
//! interventions, and invalid cells (unsupported backend or scale recipe), each with its row of
//! the guide's baseline–candidate decision table.
//!
//! An invalid cell never carries a quality score: anything that holds a score is keyed by a
//! [`ScoreableCell`], which cannot be built from (or deserialized as) an invalid cell.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Longest cell name accepted, in characters.
pub const MAX_CELL_NAME_CHARS: usize = 32;

/// Shown beside a named intervention, which has no row in the guide's decision table.
pub const NAMED_INTERVENTION_NOTE: &str = "A named intervention is not a row of the decision \
     table: name the complete intervention and compare the deployment bundles rather than \
     claiming a causal cache-only effect.";

/// One row of the guide's baseline–candidate decision table, verbatim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS, JsonSchema)]
pub struct DecisionTableRow {
    pub test_cell: &'static str,
    pub held_constant: &'static str,
    pub evidence_required: &'static str,
    pub decision: &'static str,
}

/// The guide's decision table, in its order: B0, C1, C2, C3, unsupported.
pub const DECISION_TABLE: [DecisionTableRow; 5] = [
    DecisionTableRow {
        test_cell: "B0 approved precision",
        held_constant: "Full production manifest",
        evidence_required: "Per-class quality and SLO baseline",
        decision: "Retain as rollback target",
    },
    DecisionTableRow {
        test_cell: "C1 supported FP8 default scales",
        held_constant: "Weights, requests and scheduler",
        evidence_required: "Effective scales; long-context and numeric failures",
        decision: "Reject on any protected-segment gate breach",
    },
    DecisionTableRow {
        test_cell: "C2 supported calibrated FP8",
        held_constant: "Same held-out evaluation and workload",
        evidence_required: "Calibration provenance; actual loaded scales",
        decision: "Promote only if quality and goodput both qualify",
    },
    DecisionTableRow {
        test_cell: "C3 supported selective layer exclusion",
        held_constant: "Same model and test trace",
        evidence_required: "Changed-layer inventory; memory and latency",
        decision: "Treat as a distinct intervention",
    },
    DecisionTableRow {
        test_cell: "Unsupported backend or scale recipe",
        held_constant: "No substitute runtime",
        evidence_required: "Compatibility evidence missing",
        decision: "Mark invalid; do not manufacture a result",
    },
];

/// What a cell is in the experiment matrix.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, TS, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TestCell {
    /// Approved precision: the rollback target.
    B0,
    /// Supported FP8 KV with default scales.
    C1,
    /// Supported FP8 KV with calibrated scales.
    C2,
    /// Supported selective layer exclusion.
    C3,
    /// Another named intervention.
    Custom { name: String },
    /// Unsupported backend or scale recipe: never scored.
    Invalid { name: String, reason: String },
}

/// Why a cell name or a cell operation is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CellError {
    #[error("cell name: expected 1 to {max} characters, found {found}", max = MAX_CELL_NAME_CHARS)]
    NameLength { found: usize },
    #[error(
        "cell name: expected letters, digits, `.`, `_` or `-` starting with a letter or digit, found `{name}`"
    )]
    NameCharacters { name: String },
    #[error("cell name: expected `{reserved}` (reserved names are upper case), found `{name}`")]
    ReservedCase {
        name: String,
        reserved: &'static str,
    },
    #[error("cell `{name}`: expected a reason naming the missing compatibility evidence, found an empty one")]
    EmptyReason { name: String },
    #[error("cell `{name}` is invalid ({reason}): expected a supported cell, an invalid cell never carries a quality score")]
    InvalidCellHasNoScore { name: String, reason: String },
}

impl CellError {
    /// The error split into what was expected and what was found, for a problem list.
    pub fn expected_found(&self) -> (String, String) {
        match self {
            CellError::NameLength { found } => (
                format!("a cell name of 1 to {MAX_CELL_NAME_CHARS} characters"),
                format!("{found} characters"),
            ),
            CellError::NameCharacters { name } => (
                "letters, digits, `.`, `_` or `-`, starting with a letter or digit".into(),
                format!("`{}`", name.escape_debug()),
            ),
            CellError::ReservedCase { name, reserved } => (
                format!("`{reserved}` (reserved names are upper case)"),
                format!("`{name}`"),
            ),
            CellError::EmptyReason { name } => (
                format!("a reason why cell `{name}` is invalid"),
                "an empty one".into(),
            ),
            CellError::InvalidCellHasNoScore { name, reason } => (
                "a supported cell".into(),
                format!("cell `{name}` marked invalid ({reason})"),
            ),
        }
    }
}

const RESERVED: [&str; 4] = ["B0", "C1", "C2", "C3"];

impl TestCell {
    /// The cell a manifest's `cell` name denotes: B0, C1, C2, C3 or a named intervention.
    pub fn from_name(name: &str) -> Result<TestCell, CellError> {
        let chars = name.chars().count();
        if chars == 0 || chars > MAX_CELL_NAME_CHARS {
            return Err(CellError::NameLength { found: chars });
        }
        let first_ok = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric());
        let rest_ok = name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !first_ok || !rest_ok {
            return Err(CellError::NameCharacters { name: name.into() });
        }
        match name {
            "B0" => return Ok(TestCell::B0),
            "C1" => return Ok(TestCell::C1),
            "C2" => return Ok(TestCell::C2),
            "C3" => return Ok(TestCell::C3),
            _ => {}
        }
        // "c1" next to "C1" would be two cells a reader takes for one.
        if let Some(reserved) = RESERVED.iter().find(|r| r.eq_ignore_ascii_case(name)) {
            return Err(CellError::ReservedCase {
                name: name.into(),
                reserved,
            });
        }
        Ok(TestCell::Custom { name: name.into() })
    }

    /// The cell's name as written in manifests and given to `--cell`.
    pub fn name(&self) -> &str {
        match self {
            TestCell::B0 => "B0",
            TestCell::C1 => "C1",
            TestCell::C2 => "C2",
            TestCell::C3 => "C3",
            TestCell::Custom { name } | TestCell::Invalid { name, .. } => name,
        }
    }

    /// The cell's row of the guide's decision table; a named intervention has none.
    pub fn decision_row(&self) -> Option<&'static DecisionTableRow> {
        match self {
            TestCell::B0 => Some(&DECISION_TABLE[0]),
            TestCell::C1 => Some(&DECISION_TABLE[1]),
            TestCell::C2 => Some(&DECISION_TABLE[2]),
            TestCell::C3 => Some(&DECISION_TABLE[3]),
            TestCell::Custom { .. } => None,
            TestCell::Invalid { .. } => Some(&DECISION_TABLE[4]),
        }
    }

    /// True for every cell but B0.
    pub fn is_candidate(&self) -> bool {
        !matches!(self, TestCell::B0)
    }

    pub fn is_invalid(&self) -> bool {
        matches!(self, TestCell::Invalid { .. })
    }

    /// Marks the cell invalid because compatibility evidence is missing or shows no support.
    pub fn mark_invalid(self, reason: &str) -> Result<TestCell, CellError> {
        let reason = reason.trim();
        let name = self.name().to_owned();
        if reason.is_empty() {
            return Err(CellError::EmptyReason { name });
        }
        Ok(TestCell::Invalid {
            name,
            reason: reason.to_owned(),
        })
    }

    /// The key a quality score may be attached to; refused for an invalid cell.
    pub fn scoreable(&self) -> Result<ScoreableCell, CellError> {
        ScoreableCell::try_from(self.clone())
    }
}

/// A cell that may carry a quality score. It cannot hold [`TestCell::Invalid`]: construction and
/// deserialization both refuse it, so a score for an invalid cell cannot be represented.
#[derive(Debug, Clone, PartialEq, Eq, Hash, TS, JsonSchema)]
#[ts(as = "TestCell")]
pub struct ScoreableCell(TestCell);

impl Serialize for ScoreableCell {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

// Hand-written so that deserializing goes through the same refusal as `TryFrom`.
impl<'de> Deserialize<'de> for ScoreableCell {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let cell = TestCell::deserialize(deserializer)?;
        ScoreableCell::try_from(cell).map_err(serde::de::Error::custom)
    }
}

impl ScoreableCell {
    pub fn cell(&self) -> &TestCell {
        &self.0
    }
}

impl TryFrom<TestCell> for ScoreableCell {
    type Error = CellError;

    fn try_from(cell: TestCell) -> Result<Self, Self::Error> {
        match cell {
            TestCell::Invalid { name, reason } => {
                Err(CellError::InvalidCellHasNoScore { name, reason })
            }
            other => Ok(ScoreableCell(other)),
        }
    }
}

impl From<ScoreableCell> for TestCell {
    fn from(cell: ScoreableCell) -> Self {
        cell.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_names_parse_to_the_seed_cells() {
        assert_eq!(TestCell::from_name("B0"), Ok(TestCell::B0));
        assert_eq!(TestCell::from_name("C1"), Ok(TestCell::C1));
        assert_eq!(TestCell::from_name("C2"), Ok(TestCell::C2));
        assert_eq!(TestCell::from_name("C3"), Ok(TestCell::C3));
        assert_eq!(
            TestCell::from_name("Q8"),
            Ok(TestCell::Custom { name: "Q8".into() })
        );
        for cell in ["B0", "C1", "C2", "C3", "fp8-fa2"] {
            assert_eq!(TestCell::from_name(cell).unwrap().name(), cell);
        }
    }

    #[test]
    fn rejects_bad_names() {
        assert_eq!(
            TestCell::from_name("c1"),
            Err(CellError::ReservedCase {
                name: "c1".into(),
                reserved: "C1"
            })
        );
        assert_eq!(
            TestCell::from_name(""),
            Err(CellError::NameLength { found: 0 })
        );
        assert!(matches!(
            TestCell::from_name(&"x".repeat(MAX_CELL_NAME_CHARS + 1)),
            Err(CellError::NameLength { found: 33 })
        ));
        for bad in ["-x", "a b", "é", "C1\n"] {
            assert!(
                matches!(
                    TestCell::from_name(bad),
                    Err(CellError::NameCharacters { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn each_cell_shows_its_seed_row() {
        // The guide's table, as printed there; the constants must match it word for word.
        let seed = "\
| B0 approved precision | Full production manifest | Per-class quality and SLO baseline | Retain as rollback target |
| C1 supported FP8 default scales | Weights, requests and scheduler | Effective scales; long-context and numeric failures | Reject on any protected-segment gate breach |
| C2 supported calibrated FP8 | Same held-out evaluation and workload | Calibration provenance; actual loaded scales | Promote only if quality and goodput both qualify |
| C3 supported selective layer exclusion | Same model and test trace | Changed-layer inventory; memory and latency | Treat as a distinct intervention |
| Unsupported backend or scale recipe | No substitute runtime | Compatibility evidence missing | Mark invalid; do not manufacture a result |";
        let cells = [
            TestCell::B0,
            TestCell::C1,
            TestCell::C2,
            TestCell::C3,
            TestCell::C1
                .mark_invalid("no FP8 kernel for head dim 80")
                .unwrap(),
        ];
        for (cell, line) in cells.iter().zip(seed.lines()) {
            let row = cell.decision_row().unwrap();
            let rendered = format!(
                "| {} | {} | {} | {} |",
                row.test_cell, row.held_constant, row.evidence_required, row.decision
            );
            assert_eq!(rendered, line);
        }
        assert_eq!(TestCell::Custom { name: "Q8".into() }.decision_row(), None);
    }

    #[test]
    fn invalid_cell_keeps_its_name_and_needs_a_reason() {
        let invalid = TestCell::C2
            .mark_invalid("  scales did not load  ")
            .unwrap();
        assert_eq!(
            invalid,
            TestCell::Invalid {
                name: "C2".into(),
                reason: "scales did not load".into()
            }
        );
        assert!(invalid.is_invalid() && invalid.is_candidate());
        assert_eq!(
            TestCell::C1.mark_invalid(" "),
            Err(CellError::EmptyReason { name: "C1".into() })
        );
    }

    #[test]
    fn an_invalid_cell_can_never_be_scored() {
        assert!(TestCell::C3.scoreable().is_ok());
        let invalid = TestCell::C3
            .mark_invalid("layer exclusion unsupported")
            .unwrap();
        let err = invalid.scoreable().unwrap_err();
        assert!(
            err.to_string().contains("never carries a quality score"),
            "{err}"
        );
        // Nor can one be smuggled in through JSON.
        let json = serde_json::to_string(&invalid).unwrap();
        assert!(serde_json::from_str::<ScoreableCell>(&json).is_err());
        let ok: ScoreableCell = serde_json::from_str(r#"{"kind":"c1"}"#).unwrap();
        assert_eq!(ok.cell(), &TestCell::C1);
    }

    #[test]
    fn serializes_with_a_kind_tag() {
        let custom = TestCell::Custom { name: "Q8".into() };
        assert_eq!(
            serde_json::to_string(&custom).unwrap(),
            r#"{"kind":"custom","name":"Q8"}"#
        );
        assert_eq!(
            serde_json::to_string(&TestCell::B0).unwrap(),
            r#"{"kind":"b0"}"#
        );
    }
}
