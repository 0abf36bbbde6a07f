//! Pairs are the same prompts, proven. A pair is an item answered by B0 and by a candidate, and
//! it is formed only when both sides were sent the same request: the item id **and** the sha256
//! of what was sent ([`prompt_sha256`]) must agree. The runner computes the digest from the body
//! it sends; for runs stored without one, the analysis tier recomputes it from the fixture item
//! and the cell's manifest ([`item_prompt_sha256`]), the same function over the same body.
//!
//! Also here: the check of a run's corpus against its manifest's `evaluation_corpus_sha256`, the
//! words for why an item was not paired, and the output-length stratum of a pair.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use ts_rs::TS;

use crate::canonical::canonical_sha256;
use crate::fixtures::ApprovedPrompt;
use crate::manifest::Manifest;

/// Keys a client sets for its endpoint, not part of the prompt: the same prompt served under two
/// model names is the same prompt.
const ENDPOINT_KEYS: [&str; 3] = ["model", "stream", "stream_options"];

/// The chat request body for one fixture item under a cell's manifest: the item's messages and
/// the manifest's decoding parameters, output cap and stop strings. Parameters the manifest
/// leaves absent are left out, so the pinned engine's defaults apply as the manifest says.
pub fn chat_body<I: ApprovedPrompt + ?Sized>(item: &I, manifest: &Manifest) -> Value {
    let mut body = Map::new();
    let messages: Vec<Value> = item
        .messages()
        .iter()
        .map(|m| json!({"role": m.role.as_str(), "content": m.content}))
        .collect();
    body.insert("messages".into(), Value::Array(messages));
    body.insert("max_tokens".into(), json!(manifest.output_cap));
    let d = &manifest.decoding;
    body.insert("temperature".into(), json!(d.temperature));
    let optional: [(&str, Option<Value>); 7] = [
        ("top_p", d.top_p.map(|v| json!(v))),
        ("top_k", d.top_k.map(|v| json!(v))),
        ("min_p", d.min_p.map(|v| json!(v))),
        ("seed", d.seed.map(|v| json!(v))),
        ("repetition_penalty", d.repetition_penalty.map(|v| json!(v))),
        ("presence_penalty", d.presence_penalty.map(|v| json!(v))),
        ("frequency_penalty", d.frequency_penalty.map(|v| json!(v))),
    ];
    for (key, value) in optional {
        if let Some(value) = value {
            body.insert(key.into(), value);
        }
    }
    let s = &manifest.stopping;
    if !s.stop.is_empty() {
        body.insert("stop".into(), json!(s.stop));
    }
    if !s.stop_token_ids.is_empty() {
        body.insert("stop_token_ids".into(), json!(s.stop_token_ids));
    }
    if s.ignore_eos {
        body.insert("ignore_eos".into(), Value::Bool(true));
    }
    Value::Object(body)
}

/// sha256 of the canonical JSON of a request body as planned: its messages (or prompt), decoding
/// parameters, output cap and stops. The endpoint's `model`, `stream` and `stream_options` are
/// left out.
pub fn prompt_sha256(body: &Map<String, Value>) -> String {
    let mut body = body.clone();
    for key in ENDPOINT_KEYS {
        body.remove(key);
    }
    canonical_sha256(&Value::Object(body))
}

/// The prompt digest of one fixture item sent under a manifest: what the runner records when it
/// sends [`chat_body`], recomputed.
pub fn item_prompt_sha256<I: ApprovedPrompt + ?Sized>(item: &I, manifest: &Manifest) -> String {
    match chat_body(item, manifest) {
        Value::Object(body) => prompt_sha256(&body),
        _ => unreachable!("chat_body is an object"),
    }
}

/// An item too long for a cell: its prompt's tokens plus the manifest's output cap exceed the
/// manifest's context limit, so the server would cut or refuse it. Refused before sending.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ContextOverflow {
    pub item: String,
    /// The corpus tokenizer's count of the rendered prompt.
    pub prompt_tokens: usize,
    pub output_cap: u32,
    pub context_limit: u32,
}

/// The items of `items` whose prompt tokens plus the manifest's output cap exceed its context
/// limit, in the order given. The count is the corpus's own (its tokenizer and chat template).
pub fn context_overflows<'a, I: ApprovedPrompt + 'a>(
    items: impl IntoIterator<Item = &'a I>,
    manifest: &Manifest,
) -> Vec<ContextOverflow> {
    items
        .into_iter()
        .filter(|i| {
            i.prompt_tokens() as u64 + u64::from(manifest.output_cap)
                > u64::from(manifest.context_limit)
        })
        .map(|i| ContextOverflow {
            item: i.item_id().to_owned(),
            prompt_tokens: i.prompt_tokens(),
            output_cap: manifest.output_cap,
            context_limit: manifest.context_limit,
        })
        .collect()
}

/// How a corpus rendered with a Jinja chat template names it in its metadata
/// (`CorpusMeta::chat_template`): the template text's sha256, as a manifest's
/// `chat_template_sha256` names it.
pub fn jinja_chat_template_label(template_sha256: &str) -> String {
    format!("jinja chat template, sha256 {template_sha256}")
}

/// Why a corpus's token counts are not the cell's: the corpus was counted with another
/// tokenizer than the one the manifest binds, or rendered with another chat template. Its
/// length classes and the context-limit guard would then be another model's, so a run of it
/// under that manifest is refused before anything is sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct TokenCountMismatch {
    /// `tokenizer_revision` or `chat_template_sha256`.
    pub field: String,
    /// What the manifest binds.
    pub manifest: String,
    /// What the corpus was counted or rendered with.
    pub corpus: String,
}

impl std::fmt::Display for TokenCountMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field == "tokenizer_revision" {
            write!(
                f,
                "the corpus counted its tokens with tokenizer.json sha256 {}, while the manifest's \
                 tokenizer_revision binds sha256 {}",
                self.corpus, self.manifest
            )
        } else {
            write!(
                f,
                "the corpus rendered its prompts with {:?}, while the manifest's \
                 chat_template_sha256 is {}",
                self.corpus, self.manifest
            )
        }
    }
}

/// The 64-hex words of a text, lowercased: a tokenizer revision that names the tokenizer.json's
/// sha256 binds it.
fn sha256_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_hexdigit())
        .filter(|w| w.len() == 64)
        .map(str::to_ascii_lowercase)
        .collect()
}

/// Whether a corpus's token counts are the cell's. The manifest binds a tokenizer when its
/// `tokenizer_revision` names a sha256 (a hub revision such as `org/model@<40-hex commit>` binds
/// none that can be compared here), and a chat template when it sets `chat_template_sha256`.
/// Every binding the manifest makes must be met; the mismatches, tokenizer first.
pub fn token_count_mismatches(
    corpus_tokenizer_sha256: &str,
    corpus_chat_template: &str,
    manifest: &Manifest,
) -> Vec<TokenCountMismatch> {
    let mut out = Vec::new();
    let bound = sha256_words(&manifest.tokenizer_revision);
    let ours = corpus_tokenizer_sha256.to_ascii_lowercase();
    if !bound.is_empty() && !bound.contains(&ours) {
        out.push(TokenCountMismatch {
            field: "tokenizer_revision".into(),
            manifest: bound.join(" or "),
            corpus: corpus_tokenizer_sha256.to_owned(),
        });
    }
    if let Some(template) = &manifest.chat_template_sha256 {
        if corpus_chat_template != jinja_chat_template_label(&template.to_ascii_lowercase()) {
            out.push(TokenCountMismatch {
                field: "chat_template_sha256".into(),
                manifest: template.clone(),
                corpus: corpus_chat_template.to_owned(),
            });
        }
    }
    out
}

/// A run whose corpus is not its cell's evaluation corpus: its items are not the ones the
/// manifest froze, so the run is flagged wherever it is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct CorpusMismatch {
    pub run: i64,
    /// `corpus.items_sha256` of the run's configuration.
    pub run_corpus_sha256: String,
    /// The manifest's `evaluation_corpus_sha256`.
    pub manifest_corpus_sha256: String,
}

/// The mismatch of a run's corpus digest with its manifest's evaluation corpus; `None` when they
/// agree or the run records no corpus (an import of another tool's file).
pub fn corpus_mismatch(
    run: i64,
    run_corpus_sha256: Option<&str>,
    manifest_corpus_sha256: &str,
) -> Option<CorpusMismatch> {
    let run_corpus = run_corpus_sha256?;
    (run_corpus != manifest_corpus_sha256).then(|| CorpusMismatch {
        run,
        run_corpus_sha256: run_corpus.to_owned(),
        manifest_corpus_sha256: manifest_corpus_sha256.to_owned(),
    })
}

/// Why judged requests of a cell were not paired with the other side.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum UnpairedReason {
    /// The item was judged by B0 only.
    BaselineOnly,
    /// The item was judged by the candidate only.
    CandidateOnly,
    /// The same item id was sent with a different prompt (another corpus, preset, tokenizer,
    /// decoding, output cap or stops): not the same item.
    PromptDiffers,
    /// A run stored no prompt digest and none could be recomputed (its corpus was not found).
    PromptUnknown,
    /// Requests that name no fixture item never pair.
    NoItemId,
}

/// One item (or, for requests without an item id or without a prompt digest, one run) left out
/// of the pairs, with why in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct Unpaired {
    /// The item id; `run N` for the requests of a run without an item id or a prompt digest.
    pub key: String,
    pub reason: UnpairedReason,
    /// The reason in words, with the digests, runs or counts it rests on.
    pub detail: String,
}

/// The dimension name of the output-length stratum: `output_length=short` and so on.
pub const OUTPUT_LENGTH_KEY: &str = "output_length";

/// Output-length class of an answer, by the output tokens the server counted. The stratum of a
/// pair is B0's answer: B0 is the reference, and a class taken from the candidate's answer would
/// move with the treatment being judged. A shorter answer can look faster; this stratum shows
/// whether the paired differences sit in short or long answers.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OutputLength {
    /// At most [`OutputLength::SHORT_MAX`] output tokens (a JSON object, a refusal).
    Short,
    /// Up to [`OutputLength::MEDIUM_MAX`] tokens.
    Medium,
    /// More: a long explanation, or an answer running to a typical output cap.
    Long,
    /// The server reported no output token count (a failure, or no `usage`).
    Unknown,
}

impl OutputLength {
    pub const SHORT_MAX: u64 = 63;
    pub const MEDIUM_MAX: u64 = 255;
    pub const ALL: [OutputLength; 4] = [
        OutputLength::Short,
        OutputLength::Medium,
        OutputLength::Long,
        OutputLength::Unknown,
    ];

    pub fn of(tokens: Option<u64>) -> OutputLength {
        match tokens {
            None => OutputLength::Unknown,
            Some(t) if t <= Self::SHORT_MAX => OutputLength::Short,
            Some(t) if t <= Self::MEDIUM_MAX => OutputLength::Medium,
            Some(_) => OutputLength::Long,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            OutputLength::Short => "short",
            OutputLength::Medium => "medium",
            OutputLength::Long => "long",
            OutputLength::Unknown => "unknown",
        }
    }

    /// The marginal stratum's name, `output_length=short`.
    pub fn stratum(self) -> String {
        format!("{OUTPUT_LENGTH_KEY}={}", self.as_str())
    }
}

/// True for a paired row of the output-length stratum.
pub fn is_output_length_stratum(stratum: &str) -> bool {
    stratum
        .split_once('=')
        .is_some_and(|(key, _)| key == OUTPUT_LENGTH_KEY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::FixtureItem;

    fn manifest() -> Manifest {
        Manifest::from_json(include_str!(
            "../../../fixtures/manifests/smollm2-135m-cpu-b0.json"
        ))
        .unwrap()
    }

    fn item(id: &str, content: &str) -> FixtureItem {
        let mut item: FixtureItem = serde_json::from_str(
            include_str!("../../../fixtures/demo/corpus/items.jsonl")
                .lines()
                .next()
                .unwrap(),
        )
        .unwrap();
        item.id = id.into();
        item.messages.last_mut().unwrap().content = content.into();
        item
    }

    const SMOLLM2: &str = "32082c3cd8e6c6069cbd90b292f26f723aa7361e490f51c58bb33fa916635262";
    const QWEN: &str = "3bcb6141c5309ea3be60099f44d2833672f4015f9db84bff5ea0024cc385b6f5";
    const TEMPLATE: &str = "cd8e9439f057c9ca7f1e5a3ef1b4b1f2b4a1c3d5e6f708192a3b4c5d6e7f8091";

    #[test]
    fn a_corpus_counted_with_another_tokenizer_or_template_is_not_the_cells() {
        let chatml = crate::fixtures::CHAT_TEMPLATE;
        // The SmolLM2 manifest binds its tokenizer.json by sha256 in tokenizer_revision.
        let mut m = manifest();
        assert!(m.tokenizer_revision.contains(SMOLLM2));
        assert!(token_count_mismatches(SMOLLM2, chatml, &m).is_empty());
        // Upper-case hex names the same file.
        assert!(token_count_mismatches(&SMOLLM2.to_uppercase(), chatml, &m).is_empty());
        let other = token_count_mismatches(QWEN, chatml, &m);
        assert_eq!(other.len(), 1);
        assert_eq!(other[0].field, "tokenizer_revision");
        assert_eq!(other[0].manifest, SMOLLM2);
        assert!(other[0].to_string().contains(QWEN), "{}", other[0]);
        // A sha256 that only starts the corpus's digest, or holds it inside a longer hex run,
        // is not it.
        m.tokenizer_revision = format!("sha256 {}", &QWEN[..63]);
        assert!(
            token_count_mismatches(QWEN, chatml, &m).is_empty(),
            "63 hex digits bind nothing"
        );
        m.tokenizer_revision = format!("sha256 {QWEN}0");
        assert!(
            token_count_mismatches(QWEN, chatml, &m).is_empty(),
            "65 hex digits bind nothing"
        );
        m.tokenizer_revision = format!("sha256 {QWEN}; was {SMOLLM2}");
        assert!(token_count_mismatches(SMOLLM2, chatml, &m).is_empty());
        // A hub revision (a 40-hex commit) binds nothing comparable here.
        m.tokenizer_revision = "org/model@462594ab6ec1d9b18ea2f5305f2f2087961bb997".into();
        assert!(token_count_mismatches(QWEN, chatml, &m).is_empty());

        // The chat template: ChatML, or another template, is not the manifest's.
        m.chat_template_sha256 = Some(TEMPLATE.into());
        let ours = jinja_chat_template_label(TEMPLATE);
        assert!(token_count_mismatches(QWEN, &ours, &m).is_empty());
        let chatml_corpus = token_count_mismatches(QWEN, chatml, &m);
        assert_eq!(chatml_corpus.len(), 1);
        assert_eq!(chatml_corpus[0].field, "chat_template_sha256");
        let mut near = TEMPLATE.to_owned();
        near.replace_range(63.., "0");
        assert_eq!(
            token_count_mismatches(QWEN, &jinja_chat_template_label(&near), &m).len(),
            1
        );
        // Both bindings missed: both named, tokenizer first.
        m.tokenizer_revision = format!("tokenizer.json sha256 {SMOLLM2}");
        let both = token_count_mismatches(QWEN, chatml, &m);
        let fields: Vec<&str> = both.iter().map(|b| b.field.as_str()).collect();
        assert_eq!(fields, ["tokenizer_revision", "chat_template_sha256"]);
    }

    #[test]
    fn the_prompt_digest_is_the_body_sent_without_the_endpoint() {
        let m = manifest();
        let a = item("i-1", "Which torque?");
        let Value::Object(mut body) = chat_body(&a, &m) else {
            panic!()
        };
        let digest = prompt_sha256(&body);
        assert_eq!(digest, item_prompt_sha256(&a, &m));
        // What the client adds for its endpoint does not change the prompt.
        body.insert("model".into(), json!("other-name"));
        body.insert("stream".into(), json!(true));
        assert_eq!(prompt_sha256(&body), digest);
        // The id is not part of what is sent: the same prompt under another id has the same digest.
        assert_eq!(
            item_prompt_sha256(&item("i-2", "Which torque?"), &m),
            digest
        );
    }

    #[test]
    fn another_prompt_cap_decoding_or_stop_is_another_digest() {
        let m = manifest();
        let a = item("i-1", "Which torque?");
        let base = item_prompt_sha256(&a, &m);
        assert_ne!(item_prompt_sha256(&item("i-1", "Which unit?"), &m), base);
        let mut cap = m.clone();
        cap.output_cap = 128;
        assert_ne!(item_prompt_sha256(&a, &cap), base);
        let mut decoding = m.clone();
        decoding.decoding.top_k = Some(1);
        assert_ne!(item_prompt_sha256(&a, &decoding), base);
        let mut stop = m.clone();
        stop.stopping.stop = vec!["</s>".into()];
        assert_ne!(item_prompt_sha256(&a, &stop), base);
        // The KV dtype is not part of the prompt: B0 and its candidate send the same request.
        let mut kv = m;
        kv.kv_dtype = "q8_0".into();
        assert_eq!(item_prompt_sha256(&a, &kv), base);
    }

    #[test]
    fn an_item_whose_prompt_and_output_cap_exceed_the_context_is_named_and_the_limit_itself_fits() {
        let mut m = manifest();
        m.context_limit = 1000;
        m.output_cap = 200;
        let mut at_limit = item("fits", "x");
        at_limit.token_count = 800;
        let mut over = item("over", "x");
        over.token_count = 801;
        let mut far = item("far", "x");
        far.token_count = 5000;
        let found = context_overflows([&at_limit, &over, &far], &m);
        assert_eq!(
            found,
            vec![
                ContextOverflow {
                    item: "over".into(),
                    prompt_tokens: 801,
                    output_cap: 200,
                    context_limit: 1000
                },
                ContextOverflow {
                    item: "far".into(),
                    prompt_tokens: 5000,
                    output_cap: 200,
                    context_limit: 1000
                },
            ]
        );
        // The output cap counts: without it, 801 tokens fit in 1,000.
        m.output_cap = 0;
        assert!(context_overflows([&over], &m).is_empty());
    }

    #[test]
    fn a_run_over_another_corpus_is_a_mismatch_and_none_recorded_is_not_judged() {
        let m = "a".repeat(64);
        assert_eq!(corpus_mismatch(1, Some(&m), &m), None);
        let other = "b".repeat(64);
        let found = corpus_mismatch(2, Some(&other), &m).unwrap();
        assert_eq!(found.run, 2);
        assert_eq!(found.run_corpus_sha256, other);
        assert_eq!(found.manifest_corpus_sha256, m);
        assert_eq!(corpus_mismatch(3, None, &m), None);
    }

    #[test]
    fn output_length_classes_have_their_bounds_and_unknown_is_not_short() {
        assert_eq!(OutputLength::of(Some(0)), OutputLength::Short);
        assert_eq!(OutputLength::of(Some(63)), OutputLength::Short);
        assert_eq!(OutputLength::of(Some(64)), OutputLength::Medium);
        assert_eq!(OutputLength::of(Some(255)), OutputLength::Medium);
        assert_eq!(OutputLength::of(Some(256)), OutputLength::Long);
        assert_eq!(OutputLength::of(None), OutputLength::Unknown);
        assert_eq!(OutputLength::Long.stratum(), "output_length=long");
        assert!(is_output_length_stratum("output_length=short"));
        assert!(!is_output_length_stratum("language=de"));
        assert!(!is_output_length_stratum("overall"));
    }
}
