//! The pinned tokenizer: a Hugging Face `tokenizer.json` loaded with the `tokenizers` crate,
//! counting tokens exactly as the model's server does, with the file's sha256 for provenance.

use kvgate_core::fixtures::TokenCounter;

/// A tokenizer loaded from the bytes of a `tokenizer.json`.
pub struct PinnedTokenizer {
    tokenizer: tokenizers::Tokenizer,
    sha256: String,
}

/// Why a tokenizer file could not be used.
#[derive(Debug, thiserror::Error)]
#[error("{source_name}: expected a Hugging Face tokenizer.json, found: {message}")]
pub struct TokenizerError {
    pub source_name: String,
    pub message: String,
}

impl PinnedTokenizer {
    /// Loads `bytes` (the content of `source_name`, named in errors).
    pub fn from_bytes(source_name: &str, bytes: &[u8]) -> Result<Self, TokenizerError> {
        let tokenizer = tokenizers::Tokenizer::from_bytes(bytes).map_err(|e| TokenizerError {
            source_name: source_name.to_owned(),
            message: e.to_string(),
        })?;
        Ok(PinnedTokenizer {
            tokenizer,
            sha256: kvgate_core::canonical::sha256_hex(bytes),
        })
    }

    /// Token ids of `text`; special tokens written in the text (e.g. `<|im_start|>`) count as
    /// one token each, and none is added.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        self.tokenizer
            .encode(text, false)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| e.to_string())
    }
}

impl PinnedTokenizer {
    /// The token counts of many texts, in order, encoded in parallel on up to `threads` threads
    /// (the machine's cores when `None`): each thread encodes one contiguous share of the texts.
    /// The counts are those of [`TokenCounter::count`] on each text; the first error stops it.
    pub fn count_batch(
        &self,
        texts: &[&str],
        threads: Option<usize>,
    ) -> Result<Vec<usize>, String> {
        let threads = threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .clamp(1, texts.len().max(1));
        if threads == 1 {
            return texts.iter().map(|t| self.count(t)).collect();
        }
        let share = texts.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let handles: Vec<_> = texts
                .chunks(share)
                .map(|chunk| {
                    scope.spawn(move || {
                        chunk
                            .iter()
                            .map(|t| self.count(t))
                            .collect::<Result<Vec<usize>, String>>()
                    })
                })
                .collect();
            let mut out = Vec::with_capacity(texts.len());
            for h in handles {
                out.extend(
                    h.join()
                        .map_err(|_| "a tokenizer thread panicked".to_owned())??,
                );
            }
            Ok(out)
        })
    }
}

impl TokenCounter for PinnedTokenizer {
    fn count(&self, text: &str) -> Result<usize, String> {
        self.tokenizer
            .encode(text, false)
            .map(|e| e.len())
            .map_err(|e| e.to_string())
    }

    fn tokenizer_sha256(&self) -> String {
        self.sha256.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PINNED: &[u8] =
        include_bytes!("../../../fixtures/tokenizers/smollm2-135m-instruct/tokenizer.json");

    fn pinned() -> PinnedTokenizer {
        PinnedTokenizer::from_bytes("tokenizer.json", PINNED).unwrap()
    }

    #[test]
    fn batch_counts_are_the_single_counts_in_order_on_any_number_of_threads() {
        let t = pinned();
        let texts: Vec<String> = (0..37)
            .map(|i| {
                format!(
                    "<|im_start|>user\nAsset AX-{i}; torque {}.5 N.m<|im_end|>",
                    i * 7
                )
            })
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let single: Vec<usize> = refs.iter().map(|s| t.count(s).unwrap()).collect();
        for threads in [Some(1), Some(2), Some(3), Some(64), None] {
            assert_eq!(
                t.count_batch(&refs, threads).unwrap(),
                single,
                "{threads:?}"
            );
        }
        assert!(t.count_batch(&[], Some(2)).unwrap().is_empty());
    }

    #[test]
    fn records_the_file_digest() {
        assert_eq!(
            pinned().tokenizer_sha256(),
            "32082c3cd8e6c6069cbd90b292f26f723aa7361e490f51c58bb33fa916635262"
        );
    }

    #[test]
    fn chat_markers_are_single_tokens_and_digits_split() {
        let t = pinned();
        let marker = t.encode("<|im_start|>").unwrap();
        assert_eq!(marker.len(), 1);
        // The pre-tokenizer splits digits individually: "12345" is five tokens.
        assert_eq!(t.count("12345").unwrap(), 5);
        let chat = "<|im_start|>user\nAsset AX-104<|im_end|>\n";
        let ids = t.encode(chat).unwrap();
        assert_eq!(ids[0], marker[0]);
        assert_eq!(ids.len(), t.count(chat).unwrap());
    }

    #[test]
    fn repeated_characters_are_not_a_length_measure() {
        let t = pinned();
        let a = t.count(&"a".repeat(400)).unwrap();
        let words = t.count(&"word ".repeat(80)).unwrap();
        // 400 characters either way, very different token counts.
        assert_ne!(a, words);
    }

    #[test]
    fn a_broken_file_names_itself() {
        let err = PinnedTokenizer::from_bytes("bad.json", b"{\"not\": 1}")
            .err()
            .unwrap();
        assert!(err.to_string().starts_with("bad.json: expected"), "{err}");
    }
}
