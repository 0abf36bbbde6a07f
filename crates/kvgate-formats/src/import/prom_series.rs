//! Prometheus text exposition as an import: one scrape, or a series of scrapes. A series is
//! either samples carrying timestamps (one scrape per distinct timestamp) or scrapes written one
//! after another (a repeated `# TYPE`/`# HELP` line starts the next), each with timestamps.
//! Without timestamps only a single scrape can be placed in time (at 0).

use std::collections::{BTreeMap, HashSet};
use std::io::BufRead;

use kvgate_core::metrics::EngineProfile;

use super::{
    read_line, Granularity, ImportError, ImportFormat, ImportWarning, InvalidInput, ParsedImport,
    ParsedRun, ParsedScrape, Source,
};
use crate::prometheus::{parse_line, ExpositionLine};

/// One block of lines: its comment lines and its sample lines by timestamp.
#[derive(Default)]
struct Block {
    comments: Vec<String>,
    seen: HashSet<(String, String)>,
    samples: BTreeMap<Option<i64>, Vec<String>>,
    count: u64,
    /// The first sample line with a timestamp, and the first without.
    first_timed: Option<u64>,
    first_untimed: Option<u64>,
}

pub fn parse(source: &Source, mut reader: impl BufRead) -> Result<ParsedImport, ImportError> {
    let mut blocks: Vec<Block> = vec![Block::default()];
    // Engine metric names KV Gate does not know, in the order first seen.
    let mut unknown: Vec<String> = Vec::new();
    let mut note = |name: &str| {
        if let Some(engine) = EngineProfile::of_name(name) {
            if !engine.knows_family(name) && !unknown.iter().any(|u| u == name) {
                unknown.push(name.to_owned());
            }
        }
    };
    let mut buf = Vec::new();
    let mut number = 0u64;
    loop {
        if read_line(source, &mut reader, number + 1, &mut buf)? == 0 {
            break;
        }
        number += 1;
        let bytes = buf.strip_suffix(b"\n").unwrap_or(&buf).to_vec();
        let text = String::from_utf8(bytes).map_err(|_| {
            source.line(number, None, None, "UTF-8 text", "bytes that are not UTF-8")
        })?;
        let parsed = parse_line(&text, number as usize).map_err(|e| {
            ImportError::Invalid(Box::new(InvalidInput {
                file: source.file.clone(),
                line: Some(number),
                column: e.column.map(|c| c as u64),
                path: None,
                field: None,
                expected: e.expected,
                found: e.found,
            }))
        })?;
        match parsed {
            ExpositionLine::Blank | ExpositionLine::Comment => {}
            ExpositionLine::Help { name, .. } | ExpositionLine::Type { name, .. } => {
                note(&name);
                let what = if text.starts_with("# HELP") {
                    "HELP"
                } else {
                    "TYPE"
                };
                let key = (what.to_owned(), name);
                let block = blocks.last_mut().expect("one block");
                if block.seen.contains(&key) {
                    blocks.push(Block::default());
                }
                let block = blocks.last_mut().expect("one block");
                block.seen.insert(key);
                block.comments.push(text);
            }
            ExpositionLine::Sample(sample) => {
                note(&sample.name);
                let block = blocks.last_mut().expect("one block");
                block.count += 1;
                let first = match sample.timestamp_ms {
                    Some(_) => &mut block.first_timed,
                    None => &mut block.first_untimed,
                };
                first.get_or_insert(number);
                block
                    .samples
                    .entry(sample.timestamp_ms)
                    .or_default()
                    .push(text);
            }
        }
    }
    let blocks: Vec<Block> = blocks.into_iter().filter(|b| b.count > 0).collect();
    if blocks.is_empty() {
        return Err(source.at("$", None, "at least one sample line", "no samples"));
    }
    let mut scrapes: Vec<(Option<i64>, String)> = Vec::new();
    for block in &blocks {
        if let (Some(timed), Some(untimed)) = (block.first_timed, block.first_untimed) {
            // Name the first sample that breaks with the one before it.
            let (line, expected, found) = if untimed > timed {
                (
                    untimed,
                    format!("a timestamp, like the sample on line {timed}"),
                    "a sample without one",
                )
            } else {
                (
                    timed,
                    format!("no timestamp, like the sample on line {untimed}"),
                    "a sample with one",
                )
            };
            return Err(source.line(
                line,
                None,
                None,
                format!("{expected} (every sample of a scrape has a timestamp, or none has)"),
                found,
            ));
        }
        for (timestamp, lines) in &block.samples {
            let mut text = block.comments.join("\n");
            for line in lines {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(line);
            }
            text.push('\n');
            scrapes.push((*timestamp, text));
        }
    }
    if scrapes.len() > 1 && scrapes.iter().any(|(t, _)| t.is_none()) {
        return Err(source.at(
            "$",
            None,
            "sample timestamps to place each scrape of a series in time",
            format!("{} scrapes, some without timestamps", scrapes.len()),
        ));
    }
    scrapes.sort_by_key(|(t, _)| *t);
    let zero = scrapes.first().and_then(|(t, _)| *t);
    let mut run = ParsedRun::new(
        format!(
            "prometheus · {} scrape{}",
            scrapes.len(),
            if scrapes.len() == 1 { "" } else { "s" }
        ),
        Granularity::Evidence,
    );
    run.wall_anchor_unix_ms = zero;
    run.config = serde_json::json!({ "source": "prometheus", "scrapes": scrapes.len() });
    if let (Some(first), Some(last)) = (zero, scrapes.last().and_then(|(t, _)| *t)) {
        run.elapsed_ms = Some((last - first) as f64);
    }
    run.scrapes = scrapes
        .into_iter()
        .map(|(t, text)| ParsedScrape {
            at_ms: match (t, zero) {
                (Some(t), Some(z)) => (t - z) as f64,
                _ => 0.0,
            },
            unix_ms: t,
            text,
        })
        .collect();
    let mut import = ParsedImport::new(ImportFormat::Prometheus);
    import.runs.push(run);
    // Base names only: a histogram's `_bucket`, `_sum` and `_count` are one family.
    let mut families: Vec<String> = Vec::new();
    for name in unknown {
        let base = ["_bucket", "_sum", "_count", "_created"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(&name)
            .to_owned();
        if !families.contains(&base) {
            families.push(base);
        }
    }
    if !families.is_empty() {
        import.warnings.push(ImportWarning::new(
            "$",
            format!(
                "{} engine metric name(s) KV Gate does not know, kept in the scrape but not \
                 read: {}",
                families.len(),
                families.join(", ")
            ),
            0,
        ));
    }
    Ok(import)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<ParsedImport, ImportError> {
        parse(&Source::new("m.prom"), text.as_bytes())
    }

    #[test]
    fn one_scrape_without_timestamps() {
        let import = read("# TYPE a counter\na_total 3\nb 1\n").unwrap();
        let run = &import.runs[0];
        assert_eq!(run.scrapes.len(), 1);
        assert_eq!(run.scrapes[0].at_ms, 0.0);
        assert_eq!(run.scrapes[0].text, "# TYPE a counter\na_total 3\nb 1\n");
    }

    #[test]
    fn timestamps_split_a_series() {
        let import = read("# TYPE a counter\na_total 3 1000\na_total 5 3500\n").unwrap();
        let run = &import.runs[0];
        let at: Vec<f64> = run.scrapes.iter().map(|s| s.at_ms).collect();
        assert_eq!(at, vec![0.0, 2500.0]);
        assert_eq!(run.wall_anchor_unix_ms, Some(1000));
        assert_eq!(run.scrapes[1].text, "# TYPE a counter\na_total 5 3500\n");
    }

    #[test]
    fn concatenated_scrapes_need_timestamps() {
        let err = read("# TYPE a counter\na_total 3\n# TYPE a counter\na_total 4\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "m.prom, $: expected sample timestamps to place each scrape of a series in time, found 2 scrapes, some without timestamps"
        );
        let ok = read("# TYPE a counter\na_total 3 10\n# TYPE a counter\na_total 4 20\n").unwrap();
        assert_eq!(ok.runs[0].scrapes.len(), 2);
    }

    #[test]
    fn mixed_timestamps_name_the_sample() {
        let err = read("# TYPE a gauge\na 1 1000\nb 2\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "m.prom, line 3: expected a timestamp, like the sample on line 2 (every sample of a \
             scrape has a timestamp, or none has), found a sample without one"
        );
    }

    #[test]
    fn engine_names_kv_gate_does_not_know_are_reported() {
        let text = "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc 0.5\n\
                    # TYPE vllm:time_to_first_token_seconds histogram\n\
                    vllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} 1\n\
                    # TYPE vllm:brand_new_gauge gauge\nvllm:brand_new_gauge 1\n\
                    # TYPE vllm:brand_new_hist histogram\nvllm:brand_new_hist_sum 1\nvllm:brand_new_hist_count 1\n\
                    # TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 3\n";
        let import = read(text).unwrap();
        assert_eq!(import.warnings.len(), 1);
        assert_eq!(
            import.warnings[0].message,
            "2 engine metric name(s) KV Gate does not know, kept in the scrape but not read: \
             vllm:brand_new_gauge, vllm:brand_new_hist"
        );
    }

    #[test]
    fn a_bad_line_is_named() {
        let err = read("a 1\nb{x=\"1\" 2\n").unwrap_err();
        assert!(err.to_string().starts_with("m.prom, line 2"), "{err}");
    }
}
