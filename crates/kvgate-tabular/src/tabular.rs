//! CSV and Parquet importers: per-request rows of any tool, read through polars with a
//! [`ColumnMapping`] saying which column holds which [`RequestRecord`] field.
//!
//! The file is read once through the caller's [`ReadProgress`] (so the import screen sees bytes
//! and can cancel), then parsed by polars from memory: CSV with every column as text (this module
//! parses the numbers, so a bad cell is reported with its line, column and value), Parquet with
//! only the mapped columns (an unmapped column of a type this build does not read cannot fail
//! the import).
//!
//! Times become milliseconds on the run clock: zero is the earliest dispatch (or the earliest
//! planned arrival when that is earlier). When that zero looks like Unix time (after 2001-09-09
//! in seconds), it anchors the run to the wall clock. Rows keep file order; a row's index is its
//! 0-based data row number.

use std::borrow::Cow;
use std::fs::File;
use std::io::{Cursor, Read};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use kvgate_core::run::{RequestRecord, RequestStatus};
use kvgate_formats::import::mapping::ColumnMapping;
use kvgate_formats::import::{
    Granularity, ImportError, ImportFormat, ImportWarning, ParsedImport, ParsedRun, ReadProgress,
    Source,
};
use polars::prelude::{
    CsvReadOptions, DataFrame, DataType, ParquetReader, PlSmallStr, PolarsError, SerReader, Series,
};
use serde_json::json;

/// Unix seconds above this mean the times are wall-clock times (2001-09-09), not a run clock.
const UNIX_SECONDS_THRESHOLD: f64 = 1e9;

/// How often (in rows) the row loop looks at the cancel flag.
const CANCEL_CHECK_ROWS: usize = 4096;

/// Reads a CSV or Parquet file of per-request rows into one run.
pub fn read_tabular(
    format: ImportFormat,
    path: &Path,
    file_name: &str,
    mapping: &ColumnMapping,
    progress: &ReadProgress,
) -> Result<ParsedImport, ImportError> {
    let source = Source::new(file_name);
    if !matches!(format, ImportFormat::Csv | ImportFormat::Parquet) {
        return Err(source.at(
            "$",
            None,
            "csv or parquet (the formats read with a column mapping)",
            format.as_str(),
        ));
    }
    mapping
        .validate()
        .map_err(|e| source.at("column mapping", None, "a usable column mapping", e.message))?;

    let bytes = read_file(path, &source, progress)?;
    let table = match format {
        ImportFormat::Csv => read_csv(&source, &bytes, mapping)?,
        _ => read_parquet(&source, &bytes, mapping)?,
    };
    if progress.is_cancelled() {
        return Err(ImportError::Cancelled);
    }
    let rows = Rows {
        source: &source,
        csv: (format == ImportFormat::Csv).then_some(&bytes[..]),
    };
    build(format, file_name, mapping, &table, &rows, progress)
}

/// The whole file, read through the progress counter (polars would read it whole anyway: its
/// readers need `Seek` and memory-map or buffer the file).
fn read_file(
    path: &Path,
    source: &Source,
    progress: &ReadProgress,
) -> Result<Vec<u8>, ImportError> {
    let file = File::open(path).map_err(|e| source.io(e))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    let mut reader = progress.reader(file);
    // A plain loop, not `read_to_end`: every error, the cancelled reader's included, ends the
    // read at once (`read_to_end` retries `ErrorKind::Interrupted`).
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        match reader.read(&mut chunk) {
            Ok(0) => return Ok(bytes),
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(source.io(e)),
        }
    }
}

/// The mapped columns as polars read them, with every column name the file has.
struct Table {
    df: DataFrame,
    columns: Vec<String>,
    /// Blank lines left out of a CSV file (polars would read each as a row of empty cells).
    blank_lines: u64,
}

fn read_csv(source: &Source, bytes: &[u8], mapping: &ColumnMapping) -> Result<Table, ImportError> {
    // polars refuses bytes that are not UTF-8 without saying where: say it here, by line.
    if let Err(e) = std::str::from_utf8(bytes) {
        let valid = e.valid_up_to();
        let line = bytes[..valid].iter().filter(|b| **b == b'\n').count() as u64 + 1;
        return Err(source.line(
            line,
            None,
            None,
            "UTF-8 text",
            format!("a byte that is not UTF-8 at offset {valid}"),
        ));
    }
    // Every column as text: the numbers are parsed below, cell by cell, with row and value in
    // the error; polars' type inference would guess from the first rows and fail later rows.
    let options = || {
        CsvReadOptions::default()
            .with_has_header(true)
            .with_infer_schema_length(Some(0))
    };
    let header = polars_read(source, "a CSV file with a header line", || {
        options()
            .with_n_rows(Some(0))
            .into_reader_with_file_handle(Cursor::new(bytes))
            .finish()
    })?;
    let columns = column_names(&header);
    let wanted = check_columns(source, mapping, &columns)?;
    let (bytes, blank_lines) = without_blank_lines(bytes);
    let df = polars_read(source, "a well-formed CSV file", || {
        options()
            .with_columns(Some(
                wanted
                    .iter()
                    .map(|c| PlSmallStr::from(c.as_str()))
                    .collect(),
            ))
            .into_reader_with_file_handle(Cursor::new(&bytes[..]))
            .finish()
    })?;
    Ok(Table {
        df,
        columns,
        blank_lines,
    })
}

/// The CSV bytes without their blank lines (nothing but an optional `\r` before the line break,
/// outside quoted fields), and how many there were. Borrowed when there are none.
fn without_blank_lines(bytes: &[u8]) -> (Cow<'_, [u8]>, u64) {
    let mut kept: Option<Vec<u8>> = None;
    let mut kept_from = 0;
    let mut blank = 0u64;
    let mut in_quotes = false;
    let mut line_start = true;
    let mut i = 0;
    while i < bytes.len() {
        if line_start && !in_quotes {
            let end = i + bytes[i..].iter().take_while(|b| **b == b'\r').count();
            if bytes.get(end) == Some(&b'\n') {
                kept.get_or_insert_with(|| Vec::with_capacity(bytes.len()))
                    .extend_from_slice(&bytes[kept_from..i]);
                kept_from = end + 1;
                blank += 1;
                i = end + 1;
                continue;
            }
        }
        line_start = false;
        match bytes[i] {
            b'"' => in_quotes = !in_quotes,
            b'\n' => line_start = true,
            _ => {}
        }
        i += 1;
    }
    match kept {
        Some(mut kept) => {
            kept.extend_from_slice(&bytes[kept_from..]);
            (Cow::Owned(kept), blank)
        }
        None => (Cow::Borrowed(bytes), 0),
    }
}

fn read_parquet(
    source: &Source,
    bytes: &[u8],
    mapping: &ColumnMapping,
) -> Result<Table, ImportError> {
    let mut reader = ParquetReader::new(Cursor::new(bytes));
    let schema = polars_read(source, "a Parquet file", || reader.schema())?;
    let columns: Vec<String> = schema.iter_names().map(|name| name.to_string()).collect();
    let wanted = check_columns(source, mapping, &columns)?;
    let df = polars_read(source, "a readable Parquet file", || {
        reader.with_columns(Some(wanted)).finish()
    })?;
    Ok(Table {
        df,
        columns,
        blank_lines: 0,
    })
}

/// Runs a polars read, turning its errors (and panics on malformed input) into an
/// [`ImportError::Invalid`] about the file.
fn polars_read<T>(
    source: &Source,
    expected: &str,
    read: impl FnOnce() -> Result<T, PolarsError>,
) -> Result<T, ImportError> {
    match catch_unwind(AssertUnwindSafe(read)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => Err(source.at("$", None, expected, err.to_string())),
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("the reader failed");
            Err(source.at("$", None, expected, format!("unreadable data ({message})")))
        }
    }
}

fn column_names(df: &DataFrame) -> Vec<String> {
    df.get_column_names()
        .into_iter()
        .map(|name| name.to_string())
        .collect()
}

/// Every mapped column must exist; returns them, each once, in mapping order.
fn check_columns(
    source: &Source,
    mapping: &ColumnMapping,
    found: &[String],
) -> Result<Vec<String>, ImportError> {
    let mut wanted: Vec<String> = Vec::new();
    for (field, column) in mapping.columns() {
        if !found.iter().any(|name| name == column) {
            let listed = found
                .iter()
                .map(|name| format!("`{name}`"))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(source.at(
                format!("column `{column}`"),
                Some(field),
                format!("a column named `{column}`"),
                format!("only the columns {listed}"),
            ));
        }
        if !wanted.iter().any(|name| name == column) {
            wanted.push(column.to_owned());
        }
    }
    Ok(wanted)
}

/// Locates a data row for error messages: CSV rows by line number, Parquet rows by row number.
struct Rows<'a> {
    source: &'a Source,
    /// The CSV bytes, to find a row's line (quoted fields may span lines).
    csv: Option<&'a [u8]>,
}

impl Rows<'_> {
    /// An error about one cell; `row` is the 0-based data row.
    fn cell(
        &self,
        row: usize,
        column: &str,
        field: &str,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> ImportError {
        let path = format!("row {}, column `{column}`", row + 1);
        match self.csv {
            Some(bytes) => self.source.line(
                csv_line_of_row(bytes, row),
                Some(path),
                Some(field),
                expected,
                found,
            ),
            None => self.source.at(path, Some(field), expected, found),
        }
    }

    /// An error about a whole column.
    fn column(
        &self,
        column: &str,
        field: &str,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> ImportError {
        self.source
            .at(format!("column `{column}`"), Some(field), expected, found)
    }
}

/// The 1-based line on which 0-based data row `row` starts: the header is line 1, a quoted field
/// may hold line breaks, and blank lines do not count (see [`without_blank_lines`]).
fn csv_line_of_row(bytes: &[u8], row: usize) -> u64 {
    let target = row + 1; // record 0 is the header
    let mut line = 1u64;
    let mut record = 0usize;
    let mut in_quotes = false;
    let mut at_start = true;
    for &b in bytes {
        if at_start {
            if b == b'\n' {
                line += 1;
                continue;
            }
            if b == b'\r' {
                continue;
            }
            if record == target {
                return line;
            }
            at_start = false;
        }
        match b {
            b'"' => in_quotes = !in_quotes,
            b'\n' => {
                line += 1;
                if !in_quotes {
                    record += 1;
                    at_start = true;
                }
            }
            _ => {}
        }
    }
    line
}

/// A column's cells as numbers: numeric columns as they are, text columns parsed (an empty cell
/// is missing).
fn numbers(
    df: &DataFrame,
    rows: &Rows,
    column: &str,
    field: &str,
) -> Result<Vec<Option<f64>>, ImportError> {
    let series = series(df, rows, column, field)?;
    let dtype = series.dtype().clone();
    let failed = |e: PolarsError| rows.column(column, field, "a numeric column", e.to_string());
    match dtype {
        DataType::Null => Ok(vec![None; series.len()]),
        DataType::String => {
            let text = series.str().map_err(failed)?;
            text.iter()
                .enumerate()
                .map(|(row, cell)| match cell.map(str::trim) {
                    None | Some("") => Ok(None),
                    Some(cell) => cell.parse::<f64>().map(Some).map_err(|_| {
                        rows.cell(row, column, field, "a number", format!("`{cell}`"))
                    }),
                })
                .collect()
        }
        dtype if dtype.is_primitive_numeric() => {
            let cast = series.cast(&DataType::Float64).map_err(failed)?;
            Ok(cast.f64().map_err(failed)?.iter().collect())
        }
        other => Err(rows.column(
            column,
            field,
            "a numeric column",
            format!("a column of type {other}"),
        )),
    }
}

/// A column's cells as text (numbers and booleans as polars prints them).
fn texts(
    df: &DataFrame,
    rows: &Rows,
    column: &str,
    field: &str,
) -> Result<Vec<Option<String>>, ImportError> {
    let series = series(df, rows, column, field)?;
    let dtype = series.dtype().clone();
    let failed = |e: PolarsError| rows.column(column, field, "a text column", e.to_string());
    let text = match dtype {
        DataType::Null => return Ok(vec![None; series.len()]),
        DataType::String => series,
        dtype if dtype.is_primitive_numeric() || dtype == DataType::Boolean => {
            series.cast(&DataType::String).map_err(failed)?
        }
        other => {
            return Err(rows.column(
                column,
                field,
                "a text, number or boolean column",
                format!("a column of type {other}"),
            ))
        }
    };
    Ok(text
        .str()
        .map_err(failed)?
        .iter()
        .map(|cell| cell.map(str::to_owned))
        .collect())
}

fn series(df: &DataFrame, rows: &Rows, column: &str, field: &str) -> Result<Series, ImportError> {
    df.column(column)
        .map(|c| c.as_materialized_series().clone())
        .map_err(|e| {
            rows.column(
                column,
                field,
                format!("a column named `{column}`"),
                e.to_string(),
            )
        })
}

/// A mapped column read as numbers, with its name and field, or nothing when unmapped.
struct NumberColumn<'a> {
    column: &'a str,
    field: &'static str,
    cells: Vec<Option<f64>>,
}

impl NumberColumn<'_> {
    /// A finite time or duration (NaN and infinities are refused); `None` for an empty cell.
    fn finite(&self, rows: &Rows, row: usize) -> Result<Option<f64>, ImportError> {
        match self.cells[row] {
            Some(v) if !v.is_finite() => Err(rows.cell(
                row,
                self.column,
                self.field,
                "a finite number",
                format!("{v}"),
            )),
            other => Ok(other),
        }
    }

    /// A duration: finite and not negative.
    fn duration(&self, rows: &Rows, row: usize) -> Result<Option<f64>, ImportError> {
        match self.finite(rows, row)? {
            Some(v) if v < 0.0 => Err(rows.cell(
                row,
                self.column,
                self.field,
                "a non-negative duration",
                format!("{v}"),
            )),
            other => Ok(other),
        }
    }

    /// A whole non-negative count no larger than `max`.
    fn integer(&self, rows: &Rows, row: usize, max: u64) -> Result<Option<u64>, ImportError> {
        match self.finite(rows, row)? {
            None => Ok(None),
            Some(v) if v >= 0.0 && v.fract() == 0.0 && v <= max as f64 => Ok(Some(v as u64)),
            Some(v) => Err(rows.cell(
                row,
                self.column,
                self.field,
                format!("a whole number from 0 to {max}"),
                format!("{v}"),
            )),
        }
    }
}

fn number_column<'a>(
    df: &DataFrame,
    rows: &Rows,
    field: &'static str,
    column: Option<&'a str>,
) -> Result<Option<NumberColumn<'a>>, ImportError> {
    let Some(column) = column else {
        return Ok(None);
    };
    Ok(Some(NumberColumn {
        column,
        field,
        cells: numbers(df, rows, column, field)?,
    }))
}

fn text_column(
    df: &DataFrame,
    rows: &Rows,
    field: &'static str,
    column: Option<&str>,
) -> Result<Option<Vec<Option<String>>>, ImportError> {
    column.map(|c| texts(df, rows, c, field)).transpose()
}

/// `ok`, `success`, `true`, `200` → ok; `false` → error; else a status name (case ignored).
fn parse_status(cell: &str) -> Option<RequestStatus> {
    let lower = cell.trim().to_ascii_lowercase();
    match lower.as_str() {
        "ok" | "success" | "true" | "200" | "200.0" => Some(RequestStatus::Ok),
        "false" => Some(RequestStatus::Error),
        other => RequestStatus::parse(other),
    }
}

/// Moves a cell out of an optional text column.
fn take(column: &mut Option<Vec<Option<String>>>, row: usize) -> Option<String> {
    column.as_mut().and_then(|cells| cells[row].take())
}

fn non_empty(text: Option<String>) -> Option<String> {
    text.filter(|t| !t.trim().is_empty())
}

fn build(
    format: ImportFormat,
    file_name: &str,
    mapping: &ColumnMapping,
    table: &Table,
    rows: &Rows,
    progress: &ReadProgress,
) -> Result<ParsedImport, ImportError> {
    let df = &table.df;
    let n = df.height();
    if n == 0 {
        return Err(rows
            .source
            .at("$", None, "at least one data row", "no rows"));
    }
    if u32::try_from(n).is_err() {
        return Err(rows.source.at(
            "$",
            None,
            format!("at most {} rows", u32::MAX),
            format!("{n} rows"),
        ));
    }

    fn col(c: &Option<String>) -> Option<&str> {
        c.as_deref()
    }
    let dispatch = number_column(df, rows, "dispatch", Some(&mapping.dispatch))?
        .expect("dispatch is always mapped");
    let planned = number_column(df, rows, "planned_arrival", col(&mapping.planned_arrival))?;
    let first_token = number_column(df, rows, "first_token", col(&mapping.first_token))?;
    let finish = number_column(df, rows, "finish", col(&mapping.finish))?;
    let ttft = number_column(df, rows, "ttft", col(&mapping.ttft))?;
    let e2e = number_column(df, rows, "e2e", col(&mapping.e2e))?;
    let prompt_tokens = number_column(df, rows, "prompt_tokens", col(&mapping.prompt_tokens))?;
    let completion_tokens = number_column(
        df,
        rows,
        "completion_tokens",
        col(&mapping.completion_tokens),
    )?;
    let http_status = number_column(df, rows, "http_status", col(&mapping.http_status))?;
    let mut status = text_column(df, rows, "status", col(&mapping.status))?;
    let mut error = text_column(df, rows, "error", col(&mapping.error))?;
    let mut output_text = text_column(df, rows, "output_text", col(&mapping.output_text))?;
    let mut item_id = text_column(df, rows, "item_id", col(&mapping.item_id))?;

    // The run clock's zero, in the file's unit: the earliest dispatch or planned arrival.
    let mut zero = f64::INFINITY;
    for row in 0..n {
        let Some(sent) = dispatch.finite(rows, row)? else {
            return Err(rows.cell(
                row,
                &mapping.dispatch,
                "dispatch",
                "a send time",
                "an empty cell",
            ));
        };
        zero = zero.min(sent);
        if let Some(planned) = &planned {
            if let Some(at) = planned.finite(rows, row)? {
                zero = zero.min(at);
            }
        }
    }
    let unit = mapping.time_unit.to_ms();
    let ms = |raw: f64| (raw - zero) * unit;
    let zero_ms = zero * unit;
    let wall_anchor_unix_ms =
        (zero_ms / 1e3 > UNIX_SECONDS_THRESHOLD).then(|| zero_ms.round() as i64);

    let mut requests = Vec::with_capacity(n);
    let mut planned_missing = 0u64;
    let mut finish_dropped = 0u64;
    for row in 0..n {
        if row.is_multiple_of(CANCEL_CHECK_ROWS) && progress.is_cancelled() {
            return Err(ImportError::Cancelled);
        }
        let sent = dispatch.finite(rows, row)?.expect("checked above");
        let dispatch_ms = ms(sent);
        let planned_at = match &planned {
            Some(planned) => planned.finite(rows, row)?,
            None => None,
        };
        if planned.is_some() && planned_at.is_none() {
            planned_missing += 1;
        }
        let planned_arrival_ms = planned_at.map(ms);

        // First token and finish, on the run clock; durations are checked before conversion.
        let first_token_ms = match (&first_token, &ttft) {
            (Some(abs), _) => abs.finite(rows, row)?.map(ms),
            (None, Some(dur)) => dur.duration(rows, row)?.map(|d| dispatch_ms + d * unit),
            (None, None) => None,
        };
        let mut finish_ms = match (&finish, &e2e) {
            (Some(abs), _) => abs.finite(rows, row)?.map(ms),
            (None, Some(dur)) => dur.duration(rows, row)?.map(|d| dispatch_ms + d * unit),
            (None, None) => None,
        };
        if let (Some(at), Some(abs)) = (first_token_ms, &first_token) {
            if at < dispatch_ms {
                return Err(rows.cell(
                    row,
                    abs.column,
                    abs.field,
                    "a first-token time not before dispatch",
                    format!("{} ms before dispatch", dispatch_ms - at),
                ));
            }
        }
        if let (Some(end), Some(abs)) = (finish_ms, &finish) {
            if end < dispatch_ms {
                return Err(rows.cell(
                    row,
                    abs.column,
                    abs.field,
                    "a finish time not before dispatch",
                    format!("{} ms before dispatch", dispatch_ms - end),
                ));
            }
        }
        if let (Some(at), Some(end)) = (first_token_ms, finish_ms) {
            if at > end {
                let (column, field) = match (&finish, &e2e) {
                    (Some(c), _) | (None, Some(c)) => (c.column, c.field),
                    (None, None) => unreachable!("finish_ms comes from a column"),
                };
                return Err(rows.cell(
                    row,
                    column,
                    field,
                    "an end not before the first token",
                    format!("the end {} ms before the first token", at - end),
                ));
            }
        }

        let error_text = non_empty(take(&mut error, row));
        let status = match &mut status {
            Some(cells) => {
                let column = mapping.status.as_deref().unwrap_or_default();
                let Some(cell) = cells[row].take() else {
                    return Err(rows.cell(row, column, "status", "a status", "an empty cell"));
                };
                parse_status(&cell).ok_or_else(|| {
                    rows.cell(
                        row,
                        column,
                        "status",
                        "ok, success, true, 200, false, error, timeout, rejected or unfinished",
                        format!("`{cell}`"),
                    )
                })?
            }
            None if error_text.is_some() => RequestStatus::Error,
            None => RequestStatus::Ok,
        };
        // A timeout or an abandoned request never ended (see `RequestRecord::finish_ms`).
        if matches!(status, RequestStatus::Timeout | RequestStatus::Unfinished)
            && finish_ms.is_some()
        {
            finish_ms = None;
            finish_dropped += 1;
        }

        let count = |c: &Option<NumberColumn>, max: u64| match c {
            Some(c) => c.integer(rows, row, max),
            None => Ok(None),
        };
        requests.push(RequestRecord {
            index: row as u32,
            item_id: non_empty(take(&mut item_id, row)),
            prompt_sha256: None,
            planned_arrival_ms: planned_arrival_ms.unwrap_or(dispatch_ms),
            dispatch_ms: Some(dispatch_ms),
            client_delay_ms: planned_arrival_ms.map(|p| dispatch_ms - p),
            first_token_ms,
            chunk_times_ms: Vec::new(),
            finish_ms,
            status,
            http_status: count(&http_status, u64::from(u16::MAX))?.map(|c| c as u16),
            error: error_text,
            output_text: take(&mut output_text, row).unwrap_or_default(),
            prompt_tokens: count(&prompt_tokens, 1 << 53)?,
            completion_tokens: count(&completion_tokens, 1 << 53)?,
            cached_prompt_tokens: None,
            finish_reason: None,
            engine_timings: None,
        });
    }

    let mut warnings = Vec::new();
    let mapped: Vec<&str> = mapping.columns().into_iter().map(|(_, c)| c).collect();
    let ignored: Vec<&str> = table
        .columns
        .iter()
        .map(String::as_str)
        .filter(|c| !mapped.contains(c))
        .collect();
    if !ignored.is_empty() {
        warnings.push(ImportWarning::new(
            "columns",
            format!(
                "{} column(s) not in the mapping were ignored: {}",
                ignored.len(),
                ignored.join(", ")
            ),
            0,
        ));
    }
    if mapping.planned_arrival.is_none() {
        warnings.push(ImportWarning::new(
            "planned_arrival",
            "no planned-arrival column: each request's planned arrival is its dispatch time \
             and the client delay is unknown",
            n as u64,
        ));
    } else if planned_missing > 0 {
        warnings.push(ImportWarning::new(
            format!(
                "column `{}`",
                mapping.planned_arrival.as_deref().unwrap_or_default()
            ),
            "empty planned arrival: the dispatch time is used and the client delay is unknown",
            planned_missing,
        ));
    }
    if table.blank_lines > 0 {
        warnings.push(ImportWarning::new(
            "lines",
            "blank lines were skipped",
            table.blank_lines,
        ));
    }
    if finish_dropped > 0 {
        warnings.push(ImportWarning::new(
            "status",
            "timeout or unfinished requests never ended: their finish time was dropped",
            finish_dropped,
        ));
    }
    if wall_anchor_unix_ms.is_none() {
        warnings.push(ImportWarning::new(
            format!("column `{}`", mapping.dispatch),
            "the times are not Unix times: the run has no wall-clock anchor",
            0,
        ));
    }

    let label = format!(
        "{} · {file_name} · {n} {}",
        format.as_str(),
        if n == 1 { "row" } else { "rows" }
    );
    let mut run = ParsedRun::new(label, Granularity::PerRequest);
    run.config = json!({
        "mapping": mapping,
        "columns": table.columns,
    });
    run.wall_anchor_unix_ms = wall_anchor_unix_ms;
    run.requests = requests;

    let mut import = ParsedImport::new(format);
    import.runs.push(run);
    import.warnings = warnings;
    Ok(import)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_lines_follow_quoted_line_breaks_and_blank_lines() {
        let csv = b"a,b\n1,\"x\ny\"\n\n2,z\r\n3,w\n";
        assert_eq!(csv_line_of_row(csv, 0), 2);
        assert_eq!(csv_line_of_row(csv, 1), 5);
        assert_eq!(csv_line_of_row(csv, 2), 6);
    }

    #[test]
    fn blank_lines_are_left_out_outside_quotes() {
        let (kept, blank) = without_blank_lines(b"a,b\n\n1,\"x\n\ny\"\r\n\r\n2,z\n\n");
        assert_eq!(&kept[..], b"a,b\n1,\"x\n\ny\"\r\n2,z\n");
        assert_eq!(blank, 3);
        let (kept, blank) = without_blank_lines(b"a\n1\n");
        assert!(matches!(kept, Cow::Borrowed(_)));
        assert_eq!(blank, 0);
    }

    #[test]
    fn status_words_map_to_statuses() {
        assert_eq!(parse_status(" OK "), Some(RequestStatus::Ok));
        assert_eq!(parse_status("True"), Some(RequestStatus::Ok));
        assert_eq!(parse_status("200"), Some(RequestStatus::Ok));
        assert_eq!(parse_status("success"), Some(RequestStatus::Ok));
        assert_eq!(parse_status("false"), Some(RequestStatus::Error));
        assert_eq!(parse_status("timeout"), Some(RequestStatus::Timeout));
        assert_eq!(parse_status("500"), None);
        assert_eq!(parse_status("failed"), None);
    }
}
