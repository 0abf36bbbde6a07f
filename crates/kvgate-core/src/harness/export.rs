//! KV Gate's fixture items as tasks of the harnesses teams run: an lm-evaluation-harness task
//! (YAML + local JSONL, one task per language under one group) and an Inspect AI task file
//! (Python + local JSONL). Each item is sent as KV Gate sends it: the system instruction, the
//! worked example's two turns and the user turn, with the decoding settings given. Every record
//! names its fixture item and carries its approved answer, so on import KV Gate's validator
//! judges the answers (one validator) and the pairs are the fixture items' own.
//!
//! Pure: the caller writes the returned files.

use serde_json::{json, Value};

use crate::fixtures::{FixtureItem, Language, Role};

/// The decoding settings an exported task asks the harness to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    pub max_tokens: u32,
    pub temperature: f64,
    pub stop: Vec<String>,
}

/// One file of an export: its name within the export folder and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportFile {
    pub name: String,
    pub text: String,
}

/// The parts of a fixture item's chat: system, worked example (user, assistant), user turn.
struct Turns<'a> {
    system: &'a str,
    example_user: &'a str,
    example_answer: &'a str,
    user: &'a str,
}

fn turns(item: &FixtureItem) -> Result<Turns<'_>, String> {
    match item.messages.as_slice() {
        [s, eu, ea, u]
            if s.role == Role::System
                && eu.role == Role::User
                && ea.role == Role::Assistant
                && u.role == Role::User =>
        {
            Ok(Turns {
                system: &s.content,
                example_user: &eu.content,
                example_answer: &ea.content,
                user: &u.content,
            })
        }
        _ => Err(format!(
            "item {}: expected the messages system, user, assistant, user (instruction, worked example, question), found {} messages",
            item.id,
            item.messages.len()
        )),
    }
}

/// The JSON record of one item in an exported task's data file.
fn record(item: &FixtureItem, t: &Turns, items_sha256: &str) -> Value {
    json!({
        "kvgate_item": item.id,
        "synthetic": item.synthetic,
        "system": t.system,
        "user": t.user,
        "expected": serde_json::to_string(&item.expected).expect("answers serialise"),
        "expected_answer": item.expected,
        "language": item.language,
        "length_class": item.length_class,
        "position": item.position,
        "task_type": item.task_type,
        "answer_kind": item.answer_kind,
        "token_count": item.token_count,
        "corpus_items_sha256": items_sha256,
    })
}

/// A YAML scalar: JSON's double-quoted string is a YAML double-quoted string.
fn y(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialise")
}

/// Task names: letters, digits and `_` only.
pub fn task_name(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// The items by language, each language's worked example checked to be one.
fn by_language<'a>(
    items: &[&'a FixtureItem],
) -> Result<Vec<(Language, Vec<&'a FixtureItem>)>, String> {
    let mut out: Vec<(Language, Vec<&FixtureItem>)> = Vec::new();
    for &language in Language::ALL {
        let of: Vec<&FixtureItem> = items
            .iter()
            .copied()
            .filter(|i| i.language == language)
            .collect();
        if of.is_empty() {
            continue;
        }
        let first = turns(of[0])?;
        for i in &of {
            let t = turns(i)?;
            if (t.system, t.example_user, t.example_answer)
                != (first.system, first.example_user, first.example_answer)
            {
                return Err(format!(
                    "item {}: its instruction or worked example differs from item {}'s of the same language; a harness task holds one",
                    i.id, of[0].id
                ));
            }
        }
        out.push((language, of));
    }
    if out.is_empty() {
        return Err("no items to export".into());
    }
    Ok(out)
}

fn jsonl(items: &[&FixtureItem], items_sha256: &str) -> Result<String, String> {
    let mut text = String::new();
    for i in items {
        let t = turns(i)?;
        text.push_str(&record(i, &t, items_sha256).to_string());
        text.push('\n');
    }
    Ok(text)
}

/// An lm-evaluation-harness task per language (`{name}_{language}.yaml` with its
/// `{name}_{language}.jsonl`) and the group `{name}.yaml` over them. `data_dir` is where the
/// JSONL files will be (lm-eval reads `data_files` from the working directory, so the caller
/// passes the absolute export folder). Run with `--apply_chat_template --fewshot_as_multiturn`:
/// the instruction is the system message (`description` reads each record's `system`), the
/// worked example the one-shot turn pair, the item's question the last user turn.
pub fn lm_eval_task(
    name: &str,
    items: &[&FixtureItem],
    items_sha256: &str,
    data_dir: &str,
    generation: &Generation,
) -> Result<Vec<ExportFile>, String> {
    let name = task_name(name);
    let mut files = Vec::new();
    let mut tasks = Vec::new();
    for (language, of) in by_language(items)? {
        let task = format!("{name}_{language}");
        let first = turns(of[0])?;
        let data = format!("{task}.jsonl");
        let stop: Vec<String> = generation.stop.iter().map(|s| y(s)).collect();
        let yaml = format!(
            "# KV Gate fixture items ({count} {language} items, corpus items sha256 {items_sha256}), exported by\n\
             # `kvgate fixtures export --format lm-eval-task`. Synthetic data. Run with\n\
             # --apply_chat_template --fewshot_as_multiturn --log_samples; import the samples with\n\
             # `kvgate import --format lm-eval-samples`: KV Gate's validator judges each answer.\n\
             task: {task}\n\
             dataset_path: json\n\
             dataset_kwargs:\n  data_files:\n    test: {path}\n\
             test_split: test\n\
             output_type: generate_until\n\
             description: system\n\
             doc_to_text: user\n\
             doc_to_target: expected\n\
             target_delimiter: \"\"\n\
             fewshot_delimiter: \"\"\n\
             num_fewshot: 1\n\
             fewshot_config:\n  sampler: first_n\n  samples:\n    - system: {system}\n      user: {eu}\n      expected: {ea}\n\
             generation_kwargs:\n  until: [{stop}]\n  max_gen_toks: {max}\n  do_sample: false\n  temperature: {temp:?}\n\
             metric_list:\n  - metric: exact_match\n    aggregation: mean\n    higher_is_better: true\n\
             metadata:\n  version: 1.0\n",
            count = of.len(),
            path = y(&format!("{}/{data}", data_dir.trim_end_matches('/'))),
            system = y(first.system),
            eu = y(first.example_user),
            ea = y(first.example_answer),
            stop = stop.join(", "),
            max = generation.max_tokens,
            temp = generation.temperature,
        );
        files.push(ExportFile {
            name: format!("{task}.yaml"),
            text: yaml,
        });
        files.push(ExportFile {
            name: data,
            text: jsonl(&of, items_sha256)?,
        });
        tasks.push(task);
    }
    files.push(ExportFile {
        name: format!("{name}.yaml"),
        text: format!(
            "# The group of KV Gate's exported tasks, one per language.\ngroup: {name}\ntask:\n{}",
            tasks
                .iter()
                .map(|t| format!("  - {t}\n"))
                .collect::<String>()
        ),
    });
    Ok(files)
}

/// An Inspect AI task file `{name}.py` over `{name}.jsonl`: each record's messages as the
/// sample's input, the approved answer as its target, the item's id and approved answer in its
/// metadata (which the import reads), generation settings in the task's config.
pub fn inspect_task(
    name: &str,
    items: &[&FixtureItem],
    items_sha256: &str,
    generation: &Generation,
) -> Result<Vec<ExportFile>, String> {
    let name = task_name(name);
    let mut data = String::new();
    for (_, of) in by_language(items)? {
        for i in &of {
            let t = turns(i)?;
            let mut r = record(i, &t, items_sha256);
            r["example_user"] = json!(t.example_user);
            r["example_answer"] = json!(t.example_answer);
            data.push_str(&r.to_string());
            data.push('\n');
        }
    }
    let stop = serde_json::to_string(&generation.stop).expect("strings serialise");
    let py = format!(
        r#""""KV Gate fixture items (corpus items sha256 {items_sha256}), exported by
`kvgate fixtures export --format inspect-task`. Synthetic data. Run with
`inspect eval {name}.py --model ...`; import the log with `kvgate import --format inspect`:
KV Gate's validator judges each answer against the item's approved answer.
"""

from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import Sample, json_dataset
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
)
from inspect_ai.scorer import exact
from inspect_ai.solver import generate


def record_to_sample(record):
    return Sample(
        id=record["kvgate_item"],
        input=[
            ChatMessageSystem(content=record["system"]),
            ChatMessageUser(content=record["example_user"]),
            ChatMessageAssistant(content=record["example_answer"]),
            ChatMessageUser(content=record["user"]),
        ],
        target=record["expected"],
        metadata={{
            "kvgate_item": record["kvgate_item"],
            "expected_answer": record["expected_answer"],
            "language": record["language"],
            "length_class": record["length_class"],
            "position": record["position"],
            "task_type": record["task_type"],
            "answer_kind": record["answer_kind"],
            "token_count": record["token_count"],
            "synthetic": record["synthetic"],
            "corpus_items_sha256": record["corpus_items_sha256"],
        }},
    )


@task
def {name}():
    return Task(
        dataset=json_dataset(
            str(Path(__file__).parent / "{name}.jsonl"), sample_fields=record_to_sample
        ),
        solver=generate(),
        scorer=exact(),
        config=GenerateConfig(
            max_tokens={max}, temperature={temp:?}, stop_seqs={stop} or None
        ),
    )
"#,
        max = generation.max_tokens,
        temp = generation.temperature,
    );
    Ok(vec![
        ExportFile {
            name: format!("{name}.py"),
            text: py,
        },
        ExportFile {
            name: format!("{name}.jsonl"),
            text: data,
        },
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items() -> Vec<FixtureItem> {
        include_str!("../../../../fixtures/demo/corpus/items.jsonl")
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn generation() -> Generation {
        Generation {
            max_tokens: 256,
            temperature: 0.0,
            stop: Vec::new(),
        }
    }

    #[test]
    fn an_lm_eval_export_is_one_task_per_language_with_each_item_and_its_answer() {
        let all = items();
        let refs: Vec<&FixtureItem> = all.iter().take(10).collect();
        let files = lm_eval_task("Demo Set", &refs, "abc", "/x/out", &generation()).unwrap();
        let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        let languages: Vec<Language> = Language::ALL
            .iter()
            .copied()
            .filter(|l| refs.iter().any(|i| i.language == *l))
            .collect();
        assert_eq!(names.len(), 2 * languages.len() + 1, "{names:?}");
        assert_eq!(*names.last().unwrap(), "demo_set.yaml");
        let en = files
            .iter()
            .find(|f| f.name == "demo_set_en.jsonl")
            .unwrap();
        let records: Vec<Value> = en
            .text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let en_items: Vec<&&FixtureItem> =
            refs.iter().filter(|i| i.language == Language::En).collect();
        assert_eq!(records.len(), en_items.len());
        for (r, i) in records.iter().zip(&en_items) {
            assert_eq!(r["kvgate_item"], i.id.as_str());
            assert_eq!(r["user"], i.messages[3].content.as_str());
            assert_eq!(r["system"], i.messages[0].content.as_str());
            let answer: crate::validator::ExpectedAnswer =
                serde_json::from_value(r["expected_answer"].clone()).unwrap();
            assert_eq!(answer, i.expected);
        }
        let yaml = &files
            .iter()
            .find(|f| f.name == "demo_set_en.yaml")
            .unwrap()
            .text;
        assert!(
            yaml.contains("test: \"/x/out/demo_set_en.jsonl\""),
            "{yaml}"
        );
        assert!(yaml.contains("max_gen_toks: 256") && yaml.contains("temperature: 0.0"));
        assert!(yaml.contains("description: system") && yaml.contains("num_fewshot: 1"));
        // The worked example, verbatim as a JSON-quoted YAML scalar.
        let example = serde_json::to_string(&en_items[0].messages[2].content).unwrap();
        assert!(yaml.contains(&format!("expected: {example}")));
    }

    #[test]
    fn an_item_with_other_turns_is_refused_by_id() {
        let mut all = items();
        all[0].messages.pop();
        let refs: Vec<&FixtureItem> = all.iter().take(2).collect();
        let err = lm_eval_task("x", &refs, "abc", "/x", &generation()).unwrap_err();
        assert!(
            err.contains(&all[0].id) && err.contains("found 3 messages"),
            "{err}"
        );
        let mut other = items();
        let first_en = other
            .iter()
            .position(|i| i.language == Language::En)
            .unwrap();
        other[first_en].messages[0].content.push('!');
        let refs: Vec<&FixtureItem> = other
            .iter()
            .filter(|i| i.language == Language::En)
            .take(3)
            .collect();
        let err = inspect_task("x", &refs, "abc", &generation()).unwrap_err();
        assert!(err.contains("differs"), "{err}");
    }

    #[test]
    fn an_inspect_export_names_each_item_and_its_answer_in_the_sample_metadata() {
        let all = items();
        let refs: Vec<&FixtureItem> = all.iter().take(4).collect();
        let files = inspect_task("kvgate-demo", &refs, "abc", &generation()).unwrap();
        assert_eq!(files[0].name, "kvgate_demo.py");
        assert!(files[0].text.contains("def kvgate_demo():"));
        assert!(files[0]
            .text
            .contains("\"expected_answer\": record[\"expected_answer\"]"));
        assert_eq!(files[1].text.lines().count(), 4);
    }
}
