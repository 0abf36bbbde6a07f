//! The check of an item KV Gate exported to a harness, when its results come back: the
//! approved answer and the chat the harness file carries must be those of the corpus the item
//! came from, where that corpus is found. A verdict is never judged against an answer only the
//! file vouches for without saying so.

use std::collections::HashMap;

use crate::validator::ExpectedAnswer;

/// An item's approved answer and chat, as its corpus holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovedItem {
    pub expected: ExpectedAnswer,
    /// Its chat messages written as the harness reference writes the chat a harness sent
    /// (`role:` and the text of each, blank-line separated), so the two compare as text.
    pub prompt: String,
}

/// The corpora found that exported items may have come from, by items sha256.
#[derive(Debug, Clone, Default)]
pub struct ApprovedCorpora {
    corpora: Vec<(String, HashMap<String, ApprovedItem>)>,
}

/// What the check of one exported item found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExportCheck {
    /// The file carries its corpus's answer and chat.
    Matches,
    /// No corpus found to check against: the file's answer is used, and said to be unchecked.
    Unchecked,
    /// Refused: what differs, said as field, expected and found (without the file and line,
    /// which the caller names).
    Differs(String),
}

impl ApprovedCorpora {
    /// Adds a corpus found, by its items sha256.
    pub fn add(
        &mut self,
        items_sha256: String,
        items: impl IntoIterator<Item = (String, ApprovedItem)>,
    ) {
        self.corpora
            .push((items_sha256, items.into_iter().collect()));
    }

    /// The item's approved answer and chat and its corpus's digest: in the corpus the file
    /// names, else (an export that named none) in the one corpus found holding it, if only one
    /// does. `Err(Some(sha))` when the corpus named is found and does not hold the item.
    fn find(
        &self,
        digest: Option<&str>,
        item: &str,
    ) -> Result<(&ApprovedItem, &str), Option<&str>> {
        match digest {
            Some(d) => {
                let Some((sha, items)) = self.corpora.iter().find(|(sha, _)| sha == d) else {
                    return Err(None);
                };
                items.get(item).map(|a| (a, sha.as_str())).ok_or(Some(sha))
            }
            None => {
                let mut holding = self
                    .corpora
                    .iter()
                    .filter_map(|(sha, items)| items.get(item).map(|a| (a, sha.as_str())));
                match (holding.next(), holding.next()) {
                    (Some(found), None) => Ok(found),
                    _ => Err(None),
                }
            }
        }
    }

    /// Checks an exported item's answer and chat, as the harness file carries them.
    pub fn check(
        &self,
        digest: Option<&str>,
        item: &str,
        expected: &ExpectedAnswer,
        prompt: &str,
    ) -> ExportCheck {
        let (approved, sha) = match self.find(digest, item) {
            Ok(found) => found,
            Err(None) => return ExportCheck::Unchecked,
            Err(Some(sha)) => {
                return ExportCheck::Differs(format!(
                    "field `kvgate_item`: expected an item of corpus {sha}, found {item}, which it does not hold"
                ))
            }
        };
        let json = |e: &ExpectedAnswer| serde_json::to_string(e).unwrap_or_default();
        if &approved.expected != expected {
            return ExportCheck::Differs(format!(
                "field `expected_answer`: expected the approved answer of item {item} in corpus {sha}, {}, found {}: the file does not carry the corpus's answer",
                json(&approved.expected),
                json(expected)
            ));
        }
        if approved.prompt != prompt {
            let (at, want, found) = first_difference(&approved.prompt, prompt);
            return ExportCheck::Differs(format!(
                "prompt: expected the chat messages of item {item} as corpus {sha} holds them, found others (from character {at}: expected {want:?}, found {found:?}): not the approved prompt"
            ));
        }
        ExportCheck::Matches
    }
}

/// Where two texts first differ (in characters), and up to 40 characters of each from there.
fn first_difference(a: &str, b: &str) -> (usize, String, String) {
    let at = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let from = |s: &str| s.chars().skip(at).take(40).collect::<String>();
    (at, from(a), from(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(asset: &str) -> ExpectedAnswer {
        serde_json::from_value(serde_json::json!({
            "asset": asset, "revision": "B", "nominal_torque": 12.5, "unit": "N.m"
        }))
        .unwrap()
    }

    fn corpora() -> ApprovedCorpora {
        let item = |asset: &str| ApprovedItem {
            expected: answer(asset),
            prompt: "system:\nS\n\nuser:\nQuestion: AX-104?".into(),
        };
        let mut c = ApprovedCorpora::default();
        c.add("a".repeat(64), [("i1".to_owned(), item("AX-104"))]);
        c.add(
            "b".repeat(64),
            [
                ("i2".to_owned(), item("KL-233")),
                ("shared".to_owned(), item("KL-233")),
            ],
        );
        c.add("c".repeat(64), [("shared".to_owned(), item("KL-233"))]);
        c
    }

    const PROMPT: &str = "system:\nS\n\nuser:\nQuestion: AX-104?";

    #[test]
    fn an_exported_item_must_carry_its_corpuss_answer_and_chat() {
        let c = corpora();
        let a = "a".repeat(64);
        assert_eq!(
            c.check(Some(&a), "i1", &answer("AX-104"), PROMPT),
            ExportCheck::Matches
        );
        // Found without a digest: the one corpus holding the item.
        assert_eq!(
            c.check(None, "i1", &answer("AX-104"), PROMPT),
            ExportCheck::Matches
        );
        let ExportCheck::Differs(said) = c.check(Some(&a), "i1", &answer("AX-140"), PROMPT) else {
            panic!("a forged answer passed");
        };
        assert!(said.starts_with("field `expected_answer`"), "{said}");
        assert!(said.contains(r#""asset":"AX-104""#) && said.contains(r#""asset":"AX-140""#));
        let edited = PROMPT.replace("Question:", "Question (edited):");
        let ExportCheck::Differs(said) = c.check(Some(&a), "i1", &answer("AX-104"), &edited) else {
            panic!("an edited chat passed");
        };
        assert!(
            said.contains(
                "from character 25: expected \": AX-104?\", found \" (edited): AX-104?\""
            ),
            "{said}"
        );
        // A trailing change is a change.
        let longer = format!("{PROMPT} ");
        assert_ne!(
            c.check(Some(&a), "i1", &answer("AX-104"), &longer),
            ExportCheck::Matches
        );
        let ExportCheck::Differs(said) = c.check(Some(&a), "i9", &answer("AX-104"), PROMPT) else {
            panic!("an item the corpus does not hold passed");
        };
        assert!(said.starts_with("field `kvgate_item`"), "{said}");
    }

    #[test]
    fn without_the_corpus_the_check_says_it_did_not_check() {
        let c = corpora();
        // A digest of no corpus found.
        assert_eq!(
            c.check(Some(&"0".repeat(64)), "i1", &answer("AX-140"), "x"),
            ExportCheck::Unchecked
        );
        // No digest, and two corpora hold the item: which one is not known.
        assert_eq!(
            c.check(None, "shared", &answer("AX-140"), "x"),
            ExportCheck::Unchecked
        );
        // No digest, and no corpus holds it.
        assert_eq!(
            c.check(None, "i9", &answer("AX-140"), "x"),
            ExportCheck::Unchecked
        );
    }
}
