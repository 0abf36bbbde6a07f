//! Review of paired disagreements: adjudication labels, the blind A/B order of each pair, and
//! the audit chain every label, sign-off and decision is appended to.
//!
//! The chain: event `seq` (from 1) carries the hash of the event before it (64 zeros for the
//! first) and its own hash, sha256 over the canonical JSON of every other field. Verifying
//! recomputes each hash in order; the first event whose link or content does not match names
//! where the history was edited.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use ts_rs::TS;

use crate::canonical::{canonical_json, sha256_hex};

/// A reviewer's label on a disagreement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AdjudicationLabel {
    /// The candidate's answer is wrong where B0's is right.
    CandidateRegression,
    /// B0's answer is wrong where the candidate's is right.
    BaselineError,
    /// Both answers are acceptable: the validator was too strict.
    BothAcceptable,
    BothWrong,
    /// The item itself is ambiguous.
    AmbiguousItem,
}

impl AdjudicationLabel {
    pub const ALL: [AdjudicationLabel; 5] = [
        AdjudicationLabel::CandidateRegression,
        AdjudicationLabel::BaselineError,
        AdjudicationLabel::BothAcceptable,
        AdjudicationLabel::BothWrong,
        AdjudicationLabel::AmbiguousItem,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AdjudicationLabel::CandidateRegression => "candidate_regression",
            AdjudicationLabel::BaselineError => "baseline_error",
            AdjudicationLabel::BothAcceptable => "both_acceptable",
            AdjudicationLabel::BothWrong => "both_wrong",
            AdjudicationLabel::AmbiguousItem => "ambiguous_item",
        }
    }

    pub fn parse(s: &str) -> Option<AdjudicationLabel> {
        Self::ALL.into_iter().find(|l| l.as_str() == s)
    }

    /// Whether, after adjudication, each side counts as accepted: (B0, candidate). `None` for
    /// an ambiguous item, which leaves the pair out of the adjudicated statistics.
    pub fn adjudicated_acceptance(self) -> Option<(bool, bool)> {
        match self {
            AdjudicationLabel::CandidateRegression => Some((true, false)),
            AdjudicationLabel::BaselineError => Some((false, true)),
            AdjudicationLabel::BothAcceptable => Some((true, true)),
            AdjudicationLabel::BothWrong => Some((false, false)),
            AdjudicationLabel::AmbiguousItem => None,
        }
    }
}

/// What a reviewer chooses on a pair. Before the reveal only the side labels (`a_…`, `b_…`,
/// `both_…`, `ambiguous_item`) are accepted: they need no knowledge of which side is the
/// candidate. `candidate_regression` and `baseline_error` name the sides by role, so they are
/// accepted only once the pair has been revealed, and recorded as unblinded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReviewLabel {
    /// Side A's answer is right, side B's is wrong.
    ACorrectBWrong,
    /// Side B's answer is right, side A's is wrong.
    BCorrectAWrong,
    BothAcceptable,
    BothWrong,
    AmbiguousItem,
    /// After the reveal only.
    CandidateRegression,
    /// After the reveal only.
    BaselineError,
}

impl ReviewLabel {
    pub const ALL: [ReviewLabel; 7] = [
        ReviewLabel::ACorrectBWrong,
        ReviewLabel::BCorrectAWrong,
        ReviewLabel::BothAcceptable,
        ReviewLabel::BothWrong,
        ReviewLabel::AmbiguousItem,
        ReviewLabel::CandidateRegression,
        ReviewLabel::BaselineError,
    ];

    /// The labels a reviewer can give without knowing which side is the candidate.
    pub const BLIND: [ReviewLabel; 5] = [
        ReviewLabel::ACorrectBWrong,
        ReviewLabel::BCorrectAWrong,
        ReviewLabel::BothAcceptable,
        ReviewLabel::BothWrong,
        ReviewLabel::AmbiguousItem,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReviewLabel::ACorrectBWrong => "a_correct_b_wrong",
            ReviewLabel::BCorrectAWrong => "b_correct_a_wrong",
            ReviewLabel::BothAcceptable => "both_acceptable",
            ReviewLabel::BothWrong => "both_wrong",
            ReviewLabel::AmbiguousItem => "ambiguous_item",
            ReviewLabel::CandidateRegression => "candidate_regression",
            ReviewLabel::BaselineError => "baseline_error",
        }
    }

    pub fn parse(s: &str) -> Option<ReviewLabel> {
        Self::ALL.into_iter().find(|l| l.as_str() == s)
    }

    /// Whether the label can be chosen without knowing which side is the candidate.
    pub fn is_blind(self) -> bool {
        Self::BLIND.contains(&self)
    }
}

/// A label mapped to its adjudication, with whether it was given blind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct MappedLabel {
    pub label: AdjudicationLabel,
    /// True when given after the pair was revealed (a relabel): counted apart.
    pub unblinded: bool,
}

/// Why a label is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelRefusal {
    /// `candidate_regression` or `baseline_error` on a pair not yet revealed.
    RoleLabelBeforeReveal(ReviewLabel),
}

impl std::fmt::Display for LabelRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LabelRefusal::RoleLabelBeforeReveal(l) => write!(
                f,
                "{} names the candidate, which is not revealed before the pair is labelled: \
                 label the sides (a_correct_b_wrong, b_correct_a_wrong, both_acceptable, \
                 both_wrong or ambiguous_item); KV Gate maps them after the reveal",
                l.as_str()
            ),
        }
    }
}

/// Maps a reviewer's label to its adjudication. `candidate_is_a`: the pair's blind order;
/// `revealed`: the pair was labelled before, so the reviewer has seen which side is which. A
/// first label on a side is blind; every label after the reveal is unblinded, whatever it
/// names; a role label before the reveal is refused.
pub fn map_label(
    label: ReviewLabel,
    candidate_is_a: bool,
    revealed: bool,
) -> Result<MappedLabel, LabelRefusal> {
    if !revealed && !label.is_blind() {
        return Err(LabelRefusal::RoleLabelBeforeReveal(label));
    }
    let a_is_b0 = !candidate_is_a;
    let label = match label {
        // The side that is right is B0 exactly when the wrong side is the candidate.
        ReviewLabel::ACorrectBWrong if a_is_b0 => AdjudicationLabel::CandidateRegression,
        ReviewLabel::ACorrectBWrong => AdjudicationLabel::BaselineError,
        ReviewLabel::BCorrectAWrong if a_is_b0 => AdjudicationLabel::BaselineError,
        ReviewLabel::BCorrectAWrong => AdjudicationLabel::CandidateRegression,
        ReviewLabel::BothAcceptable => AdjudicationLabel::BothAcceptable,
        ReviewLabel::BothWrong => AdjudicationLabel::BothWrong,
        ReviewLabel::AmbiguousItem => AdjudicationLabel::AmbiguousItem,
        ReviewLabel::CandidateRegression => AdjudicationLabel::CandidateRegression,
        ReviewLabel::BaselineError => AdjudicationLabel::BaselineError,
    };
    Ok(MappedLabel {
        label,
        unblinded: revealed,
    })
}

/// The id of a pair, unique across studies: `{study}:{candidate cell}/{fixture item id}`.
pub fn pair_id(study_id: i64, candidate: &str, item_id: &str) -> String {
    format!("{study_id}:{candidate}/{item_id}")
}

/// The study, candidate cell and item of a pair id.
pub fn parse_pair_id(id: &str) -> Option<(i64, &str, &str)> {
    let (study, rest) = id.split_once(':')?;
    let (cell, item) = rest.split_once('/')?;
    let study = study.parse().ok()?;
    (!cell.is_empty() && !item.is_empty()).then_some((study, cell, item))
}

/// Whether the candidate is shown as "A" for this pair: one bit of sha256(seed, pair id). The
/// seed is recorded with the study's queue, so the order is random to the reviewer and
/// reproducible afterwards.
pub fn candidate_is_a(seed: &str, pair_id: &str) -> bool {
    let h = sha256_hex(format!("{seed}\n{pair_id}").as_bytes());
    // The last hex digit's low bit.
    u8::from_str_radix(&h[63..], 16)
        .map(|v| v & 1 == 1)
        .unwrap_or(false)
}

/// The hash a chain starts from.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// What an audit event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuditKind {
    Label,
    Signoff,
    Decision,
    /// A named intervention accepting held-constant findings of a candidate.
    Intervention,
}

impl AuditKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AuditKind::Label => "label",
            AuditKind::Signoff => "signoff",
            AuditKind::Decision => "decision",
            AuditKind::Intervention => "intervention",
        }
    }

    pub fn parse(s: &str) -> Option<AuditKind> {
        match s {
            "label" => Some(AuditKind::Label),
            "signoff" => Some(AuditKind::Signoff),
            "decision" => Some(AuditKind::Decision),
            "intervention" => Some(AuditKind::Intervention),
            _ => None,
        }
    }
}

/// One event of a study's audit chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct AuditEvent {
    pub seq: i64,
    /// RFC 3339 UTC.
    pub at: String,
    pub actor: String,
    pub kind: AuditKind,
    /// What the event is about: a pair id, a check name, a candidate cell.
    pub subject: String,
    /// The new value.
    #[ts(type = "unknown")]
    pub payload: Value,
    /// The value it replaced, when there was one.
    #[ts(type = "unknown")]
    pub previous: Option<Value>,
    pub prev_hash: String,
    pub hash: String,
}

/// The hash of an event from its fields and the hash before it.
#[allow(clippy::too_many_arguments)]
pub fn event_hash(
    study_id: i64,
    seq: i64,
    at: &str,
    actor: &str,
    kind: AuditKind,
    subject: &str,
    payload: &Value,
    previous: Option<&Value>,
    prev_hash: &str,
) -> String {
    let body = json!({
        "study_id": study_id,
        "seq": seq,
        "at": at,
        "actor": actor,
        "kind": kind.as_str(),
        "subject": subject,
        "payload": payload,
        "previous": previous,
        "prev_hash": prev_hash,
    });
    sha256_hex(canonical_json(&body).as_bytes())
}

/// Where a chain is broken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ChainBreak {
    pub seq: i64,
    pub reason: String,
}

/// Checks a study's events in order; the first broken event, if any.
pub fn verify_chain(study_id: i64, events: &[AuditEvent]) -> Option<ChainBreak> {
    let mut prev = GENESIS.to_owned();
    for (i, e) in events.iter().enumerate() {
        let expected_seq = i as i64 + 1;
        if e.seq != expected_seq {
            return Some(ChainBreak {
                seq: e.seq,
                reason: format!("expected event {expected_seq} here, found event {}: an event was removed or inserted", e.seq),
            });
        }
        if e.prev_hash != prev {
            return Some(ChainBreak {
                seq: e.seq,
                reason: format!(
                    "its link to the event before is {}, the event before hashes to {prev}",
                    e.prev_hash
                ),
            });
        }
        let h = event_hash(
            study_id,
            e.seq,
            &e.at,
            &e.actor,
            e.kind,
            &e.subject,
            &e.payload,
            e.previous.as_ref(),
            &e.prev_hash,
        );
        if h != e.hash {
            return Some(ChainBreak {
                seq: e.seq,
                reason: format!(
                    "its content hashes to {h}, the chain recorded {}: the event was edited",
                    e.hash
                ),
            });
        }
        prev = e.hash.clone();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: i64) -> Vec<AuditEvent> {
        let mut out: Vec<AuditEvent> = Vec::new();
        for seq in 1..=n {
            let prev_hash = out.last().map_or(GENESIS.to_owned(), |e| e.hash.clone());
            let payload = json!({"label": "both_wrong", "note": format!("n{seq}")});
            let previous = (seq > 1).then(|| json!({"label": "candidate_regression"}));
            let at = format!("2026-12-01T00:00:0{seq}Z");
            let hash = event_hash(
                7,
                seq,
                &at,
                "rev",
                AuditKind::Label,
                "C1/x",
                &payload,
                previous.as_ref(),
                &prev_hash,
            );
            out.push(AuditEvent {
                seq,
                at,
                actor: "rev".into(),
                kind: AuditKind::Label,
                subject: "C1/x".into(),
                payload,
                previous,
                prev_hash,
                hash,
            });
        }
        out
    }

    #[test]
    fn an_intact_chain_verifies_and_each_kind_of_edit_is_named() {
        let events = chain(4);
        assert_eq!(verify_chain(7, &events), None);
        // The same events under another study do not verify: the study is in every hash.
        assert_eq!(verify_chain(8, &events).unwrap().seq, 1);

        let mut edited = events.clone();
        edited[2].payload = json!({"label": "baseline_error", "note": "n3"});
        let b = verify_chain(7, &edited).unwrap();
        assert_eq!(b.seq, 3);
        assert!(b.reason.contains("was edited"), "{}", b.reason);

        let mut removed = events.clone();
        removed.remove(1);
        let b = verify_chain(7, &removed).unwrap();
        assert_eq!(b.seq, 3);
        assert!(b.reason.contains("removed or inserted"), "{}", b.reason);

        // Rewriting an event with a fresh hash still breaks the link of the next one.
        let mut rehashed = events.clone();
        rehashed[1].actor = "mallory".into();
        rehashed[1].hash = event_hash(
            7,
            2,
            &rehashed[1].at,
            "mallory",
            AuditKind::Label,
            "C1/x",
            &rehashed[1].payload,
            rehashed[1].previous.as_ref(),
            &rehashed[1].prev_hash,
        );
        let b = verify_chain(7, &rehashed).unwrap();
        assert_eq!(b.seq, 3);
        assert!(b.reason.contains("link"), "{}", b.reason);
    }

    #[test]
    fn the_blind_order_is_reproducible_and_mixes_both_ways() {
        let ids: Vec<String> = (0..200)
            .map(|i| pair_id(3, "C1", &format!("item-{i}")))
            .collect();
        assert_eq!(parse_pair_id(&ids[5]), Some((3, "C1", "item-5")));
        assert_eq!(parse_pair_id("C1/item-5"), None);
        let a: Vec<bool> = ids.iter().map(|p| candidate_is_a("seed-1", p)).collect();
        let again: Vec<bool> = ids.iter().map(|p| candidate_is_a("seed-1", p)).collect();
        assert_eq!(a, again);
        let shown_a = a.iter().filter(|x| **x).count();
        assert!(
            (70..=130).contains(&shown_a),
            "{shown_a} of 200 candidates shown as A"
        );
        let other: Vec<bool> = ids.iter().map(|p| candidate_is_a("seed-2", p)).collect();
        assert_ne!(a, other);
    }

    #[test]
    fn labels_round_trip_and_map_to_adjudicated_acceptance() {
        for l in AdjudicationLabel::ALL {
            assert_eq!(AdjudicationLabel::parse(l.as_str()), Some(l));
            assert_eq!(serde_json::to_value(l).unwrap(), l.as_str());
        }
        assert_eq!(AdjudicationLabel::parse("equivalent"), None);
        assert_eq!(
            AdjudicationLabel::CandidateRegression.adjudicated_acceptance(),
            Some((true, false))
        );
        assert_eq!(
            AdjudicationLabel::AmbiguousItem.adjudicated_acceptance(),
            None
        );
    }

    #[test]
    fn side_labels_map_by_the_blind_order_and_role_labels_wait_for_the_reveal() {
        use ReviewLabel as R;
        // Candidate shown as A: A right and B wrong means B0 was wrong.
        let m = map_label(R::ACorrectBWrong, true, false).unwrap();
        assert_eq!(m.label, AdjudicationLabel::BaselineError);
        assert!(!m.unblinded);
        assert_eq!(
            map_label(R::BCorrectAWrong, true, false).unwrap().label,
            AdjudicationLabel::CandidateRegression
        );
        // Candidate shown as B: the same side label means the opposite role.
        assert_eq!(
            map_label(R::ACorrectBWrong, false, false).unwrap().label,
            AdjudicationLabel::CandidateRegression
        );
        assert_eq!(
            map_label(R::BCorrectAWrong, false, false).unwrap().label,
            AdjudicationLabel::BaselineError
        );
        for (side, adj) in [
            (R::BothAcceptable, AdjudicationLabel::BothAcceptable),
            (R::BothWrong, AdjudicationLabel::BothWrong),
            (R::AmbiguousItem, AdjudicationLabel::AmbiguousItem),
        ] {
            for cand_a in [true, false] {
                assert_eq!(map_label(side, cand_a, false).unwrap().label, adj);
            }
        }
        // A role label cannot be given blind: it would need the reveal.
        for role in [R::CandidateRegression, R::BaselineError] {
            let err = map_label(role, true, false).unwrap_err();
            assert_eq!(err, LabelRefusal::RoleLabelBeforeReveal(role));
            assert!(err.to_string().contains("label the sides"), "{err}");
        }
        // After the reveal every label is accepted and recorded as unblinded, side labels too.
        let m = map_label(R::CandidateRegression, false, true).unwrap();
        assert_eq!(m.label, AdjudicationLabel::CandidateRegression);
        assert!(m.unblinded);
        let m = map_label(R::ACorrectBWrong, false, true).unwrap();
        assert_eq!(m.label, AdjudicationLabel::CandidateRegression);
        assert!(m.unblinded);
        for l in ReviewLabel::ALL {
            assert_eq!(ReviewLabel::parse(l.as_str()), Some(l));
            assert_eq!(serde_json::to_value(l).unwrap(), l.as_str());
        }
        assert_eq!(ReviewLabel::BLIND.len(), 5);
        assert!(!R::CandidateRegression.is_blind() && !R::BaselineError.is_blind());
    }
}
