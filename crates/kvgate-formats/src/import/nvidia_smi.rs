//! `nvidia-smi --query-gpu=index,memory.used,… --format=csv[,nounits]` as allocated device
//! memory: one evidence-only run whose aggregates are, per GPU, the highest `memory.used`, the
//! `memory.total` and how many readings there were. The CSV is kept verbatim in the run's
//! configuration (hashed with it).
//!
//! The header is required (`noheader` is refused): it names the columns and their units. A
//! reading of `[N/A]` or `[Not Supported]` is absent, never 0.

use std::collections::BTreeMap;
use std::io::Read;

use serde_json::json;

use super::{
    Aggregate, Granularity, ImportError, ImportFormat, ImportWarning, ParsedImport, ParsedRun,
    Source,
};

/// A sampling file of a long run is megabytes; a larger file is something else.
pub const MAX_CSV_BYTES: u64 = 64 << 20;

/// The aggregate name of one GPU's figure: `gpu.0.memory.used`.
pub fn aggregate_name(gpu: &str, field: &str) -> String {
    format!("gpu.{gpu}.{field}")
}

/// Columns that tell GPUs apart, in order of preference.
const GPU_KEYS: [&str; 3] = ["index", "uuid", "pci.bus_id"];

/// What nvidia-smi writes for a reading it does not have.
const ABSENT: [&str; 4] = ["[N/A]", "[Not Supported]", "N/A", "[Unknown Error]"];

struct Column {
    name: String,
    /// The unit in brackets after the name, when the header gives one.
    unit: Option<String>,
}

fn column(raw: &str) -> Column {
    let raw = raw.trim();
    match raw.rfind(" [") {
        Some(at) if raw.ends_with(']') => Column {
            name: raw[..at].trim().to_owned(),
            unit: Some(raw[at + 2..raw.len() - 1].to_owned()),
        },
        _ => Column {
            name: raw.to_owned(),
            unit: None,
        },
    }
}

/// Fields of one CSV line with the 1-based character column each starts at (nvidia-smi does not
/// quote: no field it writes holds a comma).
fn fields(line: &str) -> Vec<(u64, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    for part in line.split(',') {
        let lead = part.len() - part.trim_start().len();
        out.push((line[..start + lead].chars().count() as u64 + 1, part.trim()));
        start += part.len() + 1;
    }
    out
}

fn is_value_like(text: &str) -> bool {
    let t = text.trim();
    ABSENT.contains(&t)
        || t.parse::<f64>().is_ok()
        || t.ends_with(" MiB")
        || t.ends_with(" %")
        || t.starts_with("GPU-")
        || t.contains('/') && t.contains(':')
}

fn invalid_at(
    source: &Source,
    line: u64,
    column: u64,
    header: Option<&str>,
    expected: impl Into<String>,
    found: impl Into<String>,
) -> ImportError {
    ImportError::Invalid(Box::new(super::InvalidInput {
        file: source.file.clone(),
        line: Some(line),
        column: Some(column),
        path: None,
        field: header.map(str::to_owned),
        expected: expected.into(),
        found: found.into(),
    }))
}

/// A memory reading in MiB: `1234 MiB`, `1.5 GiB`, or a bare number under a `[MiB]`/`[GiB]`
/// header (`nounits`). `None` when nvidia-smi wrote `[N/A]` or `[Not Supported]`.
fn memory(
    source: &Source,
    line: u64,
    (col, text): (u64, &str),
    column: &Column,
    header: &str,
) -> Result<Option<f64>, ImportError> {
    if ABSENT.contains(&text) {
        return Ok(None);
    }
    let (number, unit) = match text.split_once(' ') {
        Some((n, u)) => (n, Some(u.trim())),
        None => (text, column.unit.as_deref()),
    };
    let scale = match unit {
        Some("MiB") => 1.0,
        Some("GiB") => 1024.0,
        _ => {
            return Err(invalid_at(
                source,
                line,
                col,
                Some(header),
                "a number of MiB or GiB (`1234 MiB`, or a bare number under a `[MiB]` header)",
                format!("`{text}`"),
            ))
        }
    };
    match number.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(Some(v * scale)),
        _ => Err(invalid_at(
            source,
            line,
            col,
            Some(header),
            "a non-negative number of MiB or GiB",
            format!("`{text}`"),
        )),
    }
}

#[derive(Default)]
struct Gpu {
    name: Option<String>,
    used_max: Option<f64>,
    readings: u64,
    rows: u64,
    total: Option<f64>,
    totals_differ: bool,
}

pub fn parse(source: &Source, reader: impl Read) -> Result<ParsedImport, ImportError> {
    let text = super::logs::read_bounded_text(
        source,
        reader,
        MAX_CSV_BYTES,
        format!("an nvidia-smi CSV of at most {} MiB", MAX_CSV_BYTES >> 20),
        "a larger file",
    )?;
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i as u64 + 1, l.trim_start_matches('\u{feff}')))
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((header_line, header)) = lines.next() else {
        return Err(source.at(
            "$",
            None,
            "an nvidia-smi CSV: a header line, then one line per GPU and sample",
            "an empty file",
        ));
    };
    let raw_headers: Vec<&str> = header.split(',').map(str::trim).collect();
    let columns: Vec<Column> = raw_headers.iter().map(|h| column(h)).collect();
    let find = |name: &str| columns.iter().position(|c| c.name == name);
    let Some(used_at) = find("memory.used") else {
        if raw_headers.iter().any(|h| is_value_like(h)) {
            return Err(source.line(
                header_line,
                None,
                None,
                "a header line naming the columns (`index, memory.used [MiB], …`): run \
                 nvidia-smi with `--format=csv` or `csv,nounits`, not `noheader`",
                format!("a line of readings: `{}`", header.trim()),
            ));
        }
        return Err(source.line(
            header_line,
            None,
            Some("memory.used"),
            "a `memory.used` column (query it with `--query-gpu=index,memory.used,…`)",
            format!("the columns {}", raw_headers.join(", ")),
        ));
    };
    let key_at = GPU_KEYS.iter().find_map(|k| find(k));
    let total_at = find("memory.total");
    let name_at = find("name");
    let time_at = find("timestamp");

    let mut gpus: BTreeMap<String, Gpu> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut first_time: Option<String> = None;
    let mut last_time: Option<String> = None;
    let mut rows = 0_u64;
    for (line, row) in lines {
        let cells = fields(row);
        if cells.len() != columns.len() {
            let col = cells
                .get(columns.len())
                .map_or(row.chars().count() as u64 + 1, |c| c.0);
            return Err(invalid_at(
                source,
                line,
                col,
                None,
                format!("{} comma-separated fields, as in the header", columns.len()),
                format!("{} field(s)", cells.len()),
            ));
        }
        rows += 1;
        let key = match key_at {
            Some(k) => {
                let (col, v) = cells[k];
                if columns[k].name == "index" && v.parse::<u32>().is_err() {
                    return Err(invalid_at(
                        source,
                        line,
                        col,
                        Some(raw_headers[k]),
                        "a GPU index (a whole number)",
                        format!("`{v}`"),
                    ));
                }
                v.to_owned()
            }
            None => "0".to_owned(),
        };
        if !gpus.contains_key(&key) {
            order.push(key.clone());
        }
        let gpu = gpus.entry(key).or_default();
        gpu.rows += 1;
        if let Some(used) = memory(
            source,
            line,
            cells[used_at],
            &columns[used_at],
            raw_headers[used_at],
        )? {
            gpu.readings += 1;
            gpu.used_max = Some(gpu.used_max.map_or(used, |m: f64| m.max(used)));
        }
        if let Some(t) = total_at {
            if let Some(total) = memory(source, line, cells[t], &columns[t], raw_headers[t])? {
                match gpu.total {
                    Some(seen) if (seen - total).abs() > 0.005 => {
                        gpu.totals_differ = true;
                        gpu.total = Some(seen.max(total));
                    }
                    _ => gpu.total = Some(total),
                }
            }
        }
        if let Some(n) = name_at {
            if !ABSENT.contains(&cells[n].1) {
                gpu.name = Some(cells[n].1.to_owned());
            }
        }
        if let Some(t) = time_at {
            let stamp = cells[t].1.to_owned();
            first_time.get_or_insert_with(|| stamp.clone());
            last_time = Some(stamp);
        }
    }
    if rows == 0 {
        return Err(source.line(
            header_line + 1,
            None,
            None,
            "at least one line of readings after the header",
            "the header alone",
        ));
    }

    let mut import = ParsedImport::new(ImportFormat::NvidiaSmi);
    import.tool = Some("nvidia-smi".to_owned());
    if key_at.is_none() {
        import.warnings.push(ImportWarning::new(
            "header",
            "no `index`, `uuid` or `pci.bus_id` column: every line is read as the same GPU \
             (query `index` to tell GPUs apart)",
            rows,
        ));
    }
    let mut run = ParsedRun::new(
        format!("nvidia-smi · {} GPU(s) · {rows} line(s)", gpus.len()),
        Granularity::Evidence,
    );
    let mut described = Vec::new();
    for key in &order {
        let gpu = &gpus[key];
        if let Some(used) = gpu.used_max {
            run.aggregates.push(Aggregate {
                name: aggregate_name(key, "memory.used"),
                stat: "max".into(),
                value: used,
                unit: "MiB".into(),
            });
        } else {
            import.warnings.push(ImportWarning::new(
                format!("GPU {key}"),
                "no `memory.used` reading (every one is [N/A] or [Not Supported]): its allocated \
                 memory is absent",
                gpu.rows,
            ));
        }
        run.aggregates.push(Aggregate {
            name: aggregate_name(key, "memory.used"),
            stat: "count".into(),
            value: gpu.readings as f64,
            unit: "samples".into(),
        });
        if let Some(total) = gpu.total {
            run.aggregates.push(Aggregate {
                name: aggregate_name(key, "memory.total"),
                stat: "value".into(),
                value: total,
                unit: "MiB".into(),
            });
        }
        if gpu.totals_differ {
            import.warnings.push(ImportWarning::new(
                format!("GPU {key}"),
                "`memory.total` changes between lines: the highest is kept",
                gpu.rows,
            ));
        }
        described.push(json!({ "gpu": key, "name": gpu.name, "lines": gpu.rows }));
    }
    run.config = json!({
        "columns": raw_headers,
        "gpus": described,
        "first_timestamp": first_time,
        "last_timestamp": last_time,
        "csv": text,
    });
    import.runs.push(run);
    Ok(import)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<ParsedImport, ImportError> {
        parse(&Source::new("smi.csv"), text.as_bytes())
    }

    fn figure(import: &ParsedImport, name: &str, stat: &str) -> Option<f64> {
        import.runs[0]
            .aggregates
            .iter()
            .find(|a| a.name == name && a.stat == stat)
            .map(|a| a.value)
    }

    const FIXTURE: &str =
        include_str!("../../../../fixtures/imports/nvidia-smi/synthetic-two-gpus.csv");

    #[test]
    fn two_gpus_with_units_give_each_its_highest_reading() {
        let import = read(FIXTURE).unwrap();
        assert_eq!(import.format, ImportFormat::NvidiaSmi);
        let run = &import.runs[0];
        assert_eq!(run.granularity, Granularity::Evidence);
        assert!(run.requests.is_empty());
        // GPU 0 reads 512, 62668, 62670 MiB: the highest is 62670; GPU 1 reads 498, 62001, 61990.
        assert_eq!(figure(&import, "gpu.0.memory.used", "max"), Some(62670.0));
        assert_eq!(figure(&import, "gpu.1.memory.used", "max"), Some(62001.0));
        assert_eq!(figure(&import, "gpu.0.memory.used", "count"), Some(3.0));
        assert_eq!(
            figure(&import, "gpu.1.memory.total", "value"),
            Some(81559.0)
        );
        assert!(import.warnings.is_empty(), "{:?}", import.warnings);
        // The file itself is kept verbatim in the run's configuration.
        assert_eq!(run.config["csv"].as_str(), Some(FIXTURE));
        assert_eq!(run.config["gpus"][0]["name"], "NVIDIA H100 80GB HBM3");
    }

    #[test]
    fn nounits_values_read_by_the_header_unit_and_gib_is_scaled() {
        let text =
            "index, memory.used [MiB], memory.total [MiB]\n0, 40960, 81559\n0, 41000.5, 81559\n";
        let import = read(text).unwrap();
        assert_eq!(figure(&import, "gpu.0.memory.used", "max"), Some(41000.5));
        // A `GiB` value is 1024 MiB each: 2 GiB is 2048 MiB, above the 1000 MiB line.
        let text = "index, memory.used [MiB]\n0, 1000 MiB\n0, 2 GiB\n";
        assert_eq!(
            figure(&read(text).unwrap(), "gpu.0.memory.used", "max"),
            Some(2048.0)
        );
    }

    #[test]
    fn not_available_readings_are_absent_not_zero() {
        // GPU 1's only reading is [N/A]: no max for it (a 0 would pass for an idle GPU).
        let text = "index, memory.used [MiB], memory.total [MiB]\n\
                    0, [N/A], [Not Supported]\n0, 900 MiB, [N/A]\n1, [N/A], 81559 MiB\n";
        let import = read(text).unwrap();
        assert_eq!(figure(&import, "gpu.0.memory.used", "max"), Some(900.0));
        assert_eq!(figure(&import, "gpu.0.memory.used", "count"), Some(1.0));
        assert_eq!(figure(&import, "gpu.0.memory.total", "value"), None);
        assert_eq!(figure(&import, "gpu.1.memory.used", "max"), None);
        assert_eq!(figure(&import, "gpu.1.memory.used", "count"), Some(0.0));
        assert_eq!(import.warnings.len(), 1);
        assert_eq!(import.warnings[0].at, "GPU 1");
    }

    #[test]
    fn a_file_without_memory_used_names_the_columns_it_has() {
        let err = read("index, memory.total [MiB]\n0, 81559 MiB\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "smi.csv, line 1, field `memory.used`: expected a `memory.used` column (query it \
             with `--query-gpu=index,memory.used,…`), found the columns index, memory.total [MiB]"
        );
    }

    #[test]
    fn a_noheader_file_is_refused_for_its_missing_header() {
        let err = read("0, 62668 MiB, 81559 MiB\n1, 62001 MiB, 81559 MiB\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("smi.csv, line 1: expected a header line"),
            "{err}"
        );
        assert!(err.contains("not `noheader`"), "{err}");
        // nounits as well: bare numbers are readings, not column names.
        let err = read("0, 62668\n").unwrap_err().to_string();
        assert!(err.contains("not `noheader`"), "{err}");
    }

    #[test]
    fn a_bad_value_is_named_by_line_and_column() {
        // Line 3, the third field starts at character 4: `0, 12 GB`.
        let text = "index, memory.used [MiB]\n0, 100 MiB\n0, 12 GB\n";
        let err = read(text).unwrap_err().to_string();
        assert_eq!(
            err,
            "smi.csv, line 3, column 4, field `memory.used [MiB]`: expected a number of MiB or \
             GiB (`1234 MiB`, or a bare number under a `[MiB]` header), found `12 GB`"
        );
        let err = read("index, memory.used [MiB]\n0, -5\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 2, column 4") && err.contains("non-negative"),
            "{err}"
        );
        let err = read("index, memory.used [MiB]\nx, 5\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 2, column 1") && err.contains("GPU index"),
            "{err}"
        );
    }

    #[test]
    fn a_ragged_row_and_an_empty_file_are_refused() {
        let err = read("index, memory.used [MiB]\n0, 5 MiB, 7\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "smi.csv, line 2, column 11: expected 2 comma-separated fields, as in the header, \
             found 3 field(s)"
        );
        assert!(read("").is_err());
        assert!(read("index, memory.used [MiB]\n")
            .unwrap_err()
            .to_string()
            .contains("header alone"));
    }

    #[test]
    fn without_an_index_every_line_is_one_gpu_and_a_warning_says_so() {
        let import = read("memory.used [MiB]\n10 MiB\n30 MiB\n").unwrap();
        assert_eq!(figure(&import, "gpu.0.memory.used", "max"), Some(30.0));
        assert_eq!(import.warnings[0].at, "header");
    }
}
