//! A model's chat template (Jinja, as `tokenizer_config.json` or a GGUF's
//! `tokenizer.chat_template` carries it), rendered with minijinja the way the model's server
//! renders it, and a token counter that counts the rendered text: fixture prompts measured as the
//! model reads them, not always as ChatML. The template's sha256 is the manifest's
//! `chat_template_sha256`.

use kvgate_core::canonical::sha256_hex;
use kvgate_core::fixtures::{ChatMessage, TokenCounter};
use minijinja::{context, Environment, Error, ErrorKind};

use crate::tokenizer::PinnedTokenizer;

/// A chat template, checked to compile.
pub struct ChatTemplate {
    env: Environment<'static>,
    sha256: String,
}

impl ChatTemplate {
    /// Compiles `text` (the content of `source_name`, named in errors).
    pub fn new(source_name: &str, text: &str) -> Result<ChatTemplate, String> {
        let mut env = Environment::new();
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        // Templates raise their own errors (e.g. roles out of order).
        env.add_function(
            "raise_exception",
            |message: String| -> Result<String, Error> {
                Err(Error::new(ErrorKind::InvalidOperation, message))
            },
        );
        env.add_template_owned("chat", text.to_owned())
            .map_err(|e| format!("{source_name}: expected a Jinja chat template, found: {e}"))?;
        Ok(ChatTemplate {
            env,
            sha256: sha256_hex(text.as_bytes()),
        })
    }

    /// sha256 of the template text, as a manifest's `chat_template_sha256` names it.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The text of `messages` with the generation prompt, as the server sends it to the model.
    pub fn render(&self, messages: &[ChatMessage]) -> Result<String, String> {
        let messages: Vec<_> = messages
            .iter()
            .map(|m| context! { role => m.role.as_str(), content => m.content.as_str() })
            .collect();
        self.env
            .get_template("chat")
            .and_then(|t| {
                t.render(context! {
                    messages => messages,
                    add_generation_prompt => true,
                    bos_token => "",
                    eos_token => "",
                })
            })
            .map_err(|e| format!("chat template sha256 {}: {e}", self.sha256))
    }
}

/// Counts tokens of prompts rendered with a model's own chat template.
pub struct TemplatedTokenizer {
    pub tokenizer: PinnedTokenizer,
    pub template: ChatTemplate,
}

impl TokenCounter for TemplatedTokenizer {
    fn count(&self, text: &str) -> Result<usize, String> {
        self.tokenizer.count(text)
    }

    fn tokenizer_sha256(&self) -> String {
        self.tokenizer.tokenizer_sha256()
    }

    fn render(&self, messages: &[ChatMessage]) -> Result<String, String> {
        self.template.render(messages)
    }

    fn chat_template(&self) -> String {
        kvgate_core::pairing::jinja_chat_template_label(self.template.sha256())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvgate_core::fixtures::{FixtureItem, Role};

    const QWEN: &str = include_str!(
        "../../../fixtures/tokenizers/qwen2.5-coder-0.5b-instruct/chat_template.jinja"
    );

    fn items(corpus: &str) -> Vec<FixtureItem> {
        corpus
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn qwens_own_template_renders_the_long_sets_prompts_byte_for_byte() {
        let t = ChatTemplate::new("chat_template.jinja", QWEN).unwrap();
        assert_eq!(
            t.sha256(),
            "cd8e9439f0570856fd70470bf8889ebd8b5d1107207f67a5efb46e342330527f"
        );
        let all = items(include_str!("../../../fixtures/long/corpus/items.jsonl"));
        for item in &all {
            assert_eq!(
                t.render(&item.messages).unwrap(),
                item.prompt_text,
                "{}",
                item.id
            );
        }
        // Without a system message Qwen's template adds its own: not ChatML of the messages.
        let user = [ChatMessage {
            role: Role::User,
            content: "hi".into(),
        }];
        let text = t.render(&user).unwrap();
        assert!(
            text.starts_with("<|im_start|>system\nYou are Qwen"),
            "{text}"
        );
        assert!(text.ends_with("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"));
    }

    #[test]
    fn a_template_that_does_not_compile_or_raises_is_an_error() {
        let err = ChatTemplate::new("t.jinja", "{% for m in messages %}")
            .err()
            .unwrap();
        assert!(
            err.starts_with("t.jinja: expected a Jinja chat template"),
            "{err}"
        );
        let raising = ChatTemplate::new(
            "t.jinja",
            "{% if messages[0]['role'] != 'user' %}{{ raise_exception('roles must start with user') }}{% endif %}",
        )
        .unwrap();
        let sys = [ChatMessage {
            role: Role::System,
            content: "s".into(),
        }];
        let err = raising.render(&sys).unwrap_err();
        assert!(err.contains("roles must start with user"), "{err}");
    }
}
