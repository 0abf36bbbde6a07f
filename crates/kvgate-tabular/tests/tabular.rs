//! CSV and Parquet imports through polars, with a column mapping.

use std::fs::File;
use std::path::{Path, PathBuf};

use kvgate_core::run::RequestStatus;
use kvgate_formats::import::mapping::{ColumnMapping, TimeUnit};
use kvgate_formats::import::{
    Granularity, ImportError, ImportFormat, InvalidInput, ParsedImport, ReadProgress,
};
use kvgate_tabular::read_tabular;
use polars::prelude::{DataFrame, NamedFrom, ParquetWriter, Series};

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn read(
    format: ImportFormat,
    path: &Path,
    mapping: &ColumnMapping,
) -> Result<ParsedImport, ImportError> {
    let name = path.file_name().unwrap().to_str().unwrap();
    read_tabular(format, path, name, mapping, &ReadProgress::new())
}

fn invalid(err: ImportError) -> InvalidInput {
    match err {
        ImportError::Invalid(invalid) => *invalid,
        other => panic!("expected an invalid-input error, got {other:?}"),
    }
}

fn spec(s: &str) -> ColumnMapping {
    ColumnMapping::parse_spec(s).unwrap()
}

const DURATIONS_CSV: &str = "\
start_s,ttft_s,latency_s,ok,prompt,completion,text,extra
1700000000.5,0.25,1.5,true,12,3,\"hello, world\",x
1700000000.0,0.125,0.75,False,12,,,y
1700000001.0,,,false,,,\"line one
line two\",z
";

#[test]
fn csv_with_unix_seconds_and_durations() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "bench.csv", DURATIONS_CSV.as_bytes());
    let mapping = spec(
        "dispatch=start_s,ttft=ttft_s,e2e=latency_s,status=ok,prompt_tokens=prompt,\
         completion_tokens=completion,output_text=text,unit=s",
    );
    let progress = ReadProgress::new();
    let import = read_tabular(ImportFormat::Csv, &path, "bench.csv", &mapping, &progress).unwrap();
    assert_eq!(progress.bytes_read(), DURATIONS_CSV.len() as u64);
    assert_eq!(import.format, ImportFormat::Csv);
    assert_eq!(import.runs.len(), 1);
    let run = &import.runs[0];
    assert_eq!(run.label, "csv · bench.csv · 3 rows");
    assert_eq!(run.granularity, Granularity::PerRequest);
    assert_eq!(run.wall_anchor_unix_ms, Some(1_700_000_000_000));
    assert_eq!(run.config["mapping"]["dispatch"], "start_s");
    assert_eq!(run.config["columns"][7], "extra");

    let r = &run.requests;
    assert_eq!(r.len(), 3);
    // File order, index = data row; zero = the earliest dispatch (row 1).
    assert_eq!(r[0].index, 0);
    assert_eq!(r[0].dispatch_ms, Some(500.0));
    assert_eq!(r[0].planned_arrival_ms, 500.0);
    assert_eq!(r[0].client_delay_ms, None);
    assert_eq!(r[0].first_token_ms, Some(750.0));
    assert_eq!(r[0].finish_ms, Some(2000.0));
    assert_eq!(r[0].ttft_ms(), Some(250.0));
    assert_eq!(r[0].status, RequestStatus::Ok);
    assert_eq!(r[0].prompt_tokens, Some(12));
    assert_eq!(r[0].completion_tokens, Some(3));
    assert_eq!(r[0].output_text, "hello, world");
    assert!(r[0].chunk_times_ms.is_empty());

    assert_eq!(r[1].dispatch_ms, Some(0.0));
    assert_eq!(r[1].e2e_ms(), Some(750.0));
    assert_eq!(r[1].status, RequestStatus::Error);
    assert_eq!(r[1].completion_tokens, None, "an empty cell is not 0");
    assert_eq!(r[1].output_text, "");

    assert_eq!(r[2].index, 2);
    assert_eq!(r[2].dispatch_ms, Some(1000.0));
    assert_eq!(r[2].first_token_ms, None);
    assert_eq!(r[2].finish_ms, None);
    assert_eq!(r[2].prompt_tokens, None);
    assert_eq!(r[2].output_text, "line one\nline two");

    let ignored = import
        .warnings
        .iter()
        .find(|w| w.at == "columns")
        .expect("a warning about ignored columns");
    assert!(ignored.message.ends_with(": extra"), "{ignored:?}");
    assert!(import.warnings.iter().any(|w| w.at == "planned_arrival"));
}

#[test]
fn csv_with_relative_milliseconds_and_status_names() {
    let dir = tempfile::tempdir().unwrap();
    let csv = "\
id,planned,sent,first,end,state,err,code
a,0,2,10,30,ok,,200
b,100,98,,,timeout,,
c,5,6,,9,rejected,too many,429
d,7,8,,,,,
";
    let path = write(dir.path(), "abs.csv", csv.as_bytes());
    let mut mapping = ColumnMapping::new("sent");
    mapping.planned_arrival = Some("planned".into());
    mapping.first_token = Some("first".into());
    mapping.finish = Some("end".into());
    mapping.error = Some("err".into());
    mapping.http_status = Some("code".into());
    mapping.item_id = Some("id".into());
    mapping.time_unit = TimeUnit::Ms;

    // Without a status column, a row is ok unless its error cell says otherwise.
    let import = read(ImportFormat::Csv, &path, &mapping).unwrap();
    let run = &import.runs[0];
    assert_eq!(run.wall_anchor_unix_ms, None);
    let r = &run.requests;
    assert_eq!(r[0].item_id.as_deref(), Some("a"));
    assert_eq!(r[0].planned_arrival_ms, 0.0);
    assert_eq!(r[0].dispatch_ms, Some(2.0));
    assert_eq!(r[0].client_delay_ms, Some(2.0));
    assert_eq!(r[0].http_status, Some(200));
    assert_eq!(r[1].client_delay_ms, Some(-2.0));
    assert_eq!(r[1].status, RequestStatus::Ok);
    assert_eq!(r[2].status, RequestStatus::Error);
    assert_eq!(r[2].error.as_deref(), Some("too many"));
    assert_eq!(r[2].http_status, Some(429));
    assert_eq!(r[3].status, RequestStatus::Ok);
    assert_eq!(r[3].http_status, None);

    // With it, the status names are taken as they are; a timeout never ended.
    mapping.status = Some("state".into());
    let err = invalid(read(ImportFormat::Csv, &path, &mapping).unwrap_err());
    assert_eq!(err.line, Some(5), "{err}");
    assert_eq!(err.found, "an empty cell");
    std::fs::write(&path, csv.replace("8,,,,,", "8,,,unfinished,,")).unwrap();
    let import = read(ImportFormat::Csv, &path, &mapping).unwrap();
    let r = &import.runs[0].requests;
    assert_eq!(r[1].status, RequestStatus::Timeout);
    assert_eq!(r[2].status, RequestStatus::Rejected);
    assert_eq!(r[3].status, RequestStatus::Unfinished);
    assert!(import.warnings.iter().all(|w| w.at != "columns"));
}

#[test]
fn timeout_rows_lose_their_finish_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "t.csv", b"t,e2e,s\n0,5,timeout\n1,2,ok\n");
    let import = read(
        ImportFormat::Csv,
        &path,
        &spec("dispatch=t,e2e=e2e,status=s,unit=ms"),
    )
    .unwrap();
    let r = &import.runs[0].requests;
    assert_eq!(r[0].finish_ms, None);
    assert_eq!(r[1].finish_ms, Some(3.0));
    let warning = import.warnings.iter().find(|w| w.at == "status").unwrap();
    assert_eq!(warning.rows, 1);
}

fn write_parquet(path: &Path, mut df: DataFrame) {
    let file = File::create(path).unwrap();
    ParquetWriter::new(file).finish(&mut df).unwrap();
}

fn parquet_frame() -> DataFrame {
    DataFrame::new_infer_height(vec![
        Series::new(
            "request_start_ns".into(),
            &[3_000_000_i64, 1_000_000, 2_000_000],
        )
        .into(),
        Series::new("ttft_ns".into(), &[Some(500_000_i64), None, Some(250_000)]).into(),
        Series::new(
            "latency_ns".into(),
            &[Some(2_000_000_i64), Some(1_000_000), None],
        )
        .into(),
        Series::new("ok".into(), &[true, false, true]).into(),
        Series::new("tokens".into(), &[Some(7_u32), None, Some(9)]).into(),
        Series::new("item".into(), &[Some(1_i32), Some(2), None]).into(),
        Series::new("code".into(), &[200_i32, 500, 200]).into(),
        Series::new("text".into(), &[Some("a"), None, Some("c")]).into(),
        Series::new("unused".into(), &[1.0_f64, 2.0, 3.0]).into(),
    ])
    .unwrap()
}

#[test]
fn parquet_written_by_polars_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("profile.parquet");
    write_parquet(&path, parquet_frame());
    let mapping = spec(
        "dispatch=request_start_ns,ttft=ttft_ns,e2e=latency_ns,status=ok,completion_tokens=tokens,\
         item_id=item,http_status=code,output_text=text,unit=ns",
    );
    let progress = ReadProgress::new();
    let import = read_tabular(
        ImportFormat::Parquet,
        &path,
        "profile.parquet",
        &mapping,
        &progress,
    )
    .unwrap();
    assert_eq!(
        progress.bytes_read(),
        std::fs::metadata(&path).unwrap().len()
    );
    let run = &import.runs[0];
    assert_eq!(run.label, "parquet · profile.parquet · 3 rows");
    assert_eq!(run.wall_anchor_unix_ms, None);
    let r = &run.requests;
    assert_eq!(r[0].dispatch_ms, Some(2.0));
    assert_eq!(r[0].first_token_ms, Some(2.5));
    assert_eq!(r[0].finish_ms, Some(4.0));
    assert_eq!(r[0].status, RequestStatus::Ok);
    assert_eq!(r[0].completion_tokens, Some(7));
    assert_eq!(r[0].item_id.as_deref(), Some("1"));
    assert_eq!(r[0].http_status, Some(200));
    assert_eq!(r[0].output_text, "a");
    assert_eq!(r[1].dispatch_ms, Some(0.0));
    assert_eq!(r[1].first_token_ms, None);
    assert_eq!(r[1].status, RequestStatus::Error);
    assert_eq!(r[1].completion_tokens, None);
    assert_eq!(r[1].http_status, Some(500));
    assert_eq!(r[2].finish_ms, None);
    assert_eq!(r[2].item_id, None);
    let ignored = import.warnings.iter().find(|w| w.at == "columns").unwrap();
    assert!(ignored.message.ends_with(": unused"), "{ignored:?}");
}

#[test]
fn parquet_errors_name_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("neg.parquet");
    let df = DataFrame::new_infer_height(vec![
        Series::new("t".into(), &[0.0_f64, 1.0]).into(),
        Series::new("e2e".into(), &[1.0_f64, -0.5]).into(),
    ])
    .unwrap();
    write_parquet(&path, df);
    let err = invalid(read(ImportFormat::Parquet, &path, &spec("dispatch=t,e2e=e2e")).unwrap_err());
    assert_eq!(err.line, None);
    assert_eq!(err.path.as_deref(), Some("row 2, column `e2e`"));
    assert_eq!(err.field.as_deref(), Some("e2e"));
    assert_eq!(err.found, "-0.5");
}

#[test]
fn truncated_parquet_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("whole.parquet");
    write_parquet(&path, parquet_frame());
    let bytes = std::fs::read(&path).unwrap();
    for cut in [bytes.len() / 2, bytes.len() - 4, 4] {
        let truncated = write(dir.path(), "cut.parquet", &bytes[..cut]);
        let err = invalid(
            read(
                ImportFormat::Parquet,
                &truncated,
                &spec("dispatch=request_start_ns"),
            )
            .unwrap_err(),
        );
        assert_eq!(err.file, "cut.parquet");
        assert!(err.expected.contains("Parquet"), "{err}");
    }
}

#[test]
fn missing_column_lists_the_columns_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "m.csv", DURATIONS_CSV.as_bytes());
    let err = invalid(
        read(
            ImportFormat::Csv,
            &path,
            &spec("dispatch=start_s,e2e=e2e_s"),
        )
        .unwrap_err(),
    );
    assert_eq!(err.field.as_deref(), Some("e2e"));
    assert_eq!(err.expected, "a column named `e2e_s`");
    assert!(
        err.found.contains("`start_s`") && err.found.contains("`extra`"),
        "{err}"
    );
}

#[test]
fn bad_status_names_row_and_value() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "s.csv", b"t,s\n0,ok\n1,failed\n");
    let err = invalid(read(ImportFormat::Csv, &path, &spec("dispatch=t,status=s")).unwrap_err());
    assert_eq!(err.line, Some(3));
    assert_eq!(err.path.as_deref(), Some("row 2, column `s`"));
    assert_eq!(err.found, "`failed`");
    assert!(err.to_string().starts_with("s.csv, line 3, row 2"), "{err}");
}

#[test]
fn negative_or_nan_durations_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "n.csv", b"t,e2e\n0,1\n1,-2\n");
    let err = invalid(read(ImportFormat::Csv, &path, &spec("dispatch=t,e2e=e2e")).unwrap_err());
    assert_eq!(err.line, Some(3));
    assert_eq!(err.expected, "a non-negative duration");
    assert_eq!(err.found, "-2");

    let path = write(dir.path(), "nan.csv", b"t,ttft\n0,NaN\n");
    let err = invalid(read(ImportFormat::Csv, &path, &spec("dispatch=t,ttft=ttft")).unwrap_err());
    assert_eq!(err.line, Some(2));
    assert_eq!(err.found, "NaN");

    let path = write(dir.path(), "abs.csv", b"t,ft\n5,4\n");
    let err =
        invalid(read(ImportFormat::Csv, &path, &spec("dispatch=t,first_token=ft")).unwrap_err());
    assert_eq!(err.field.as_deref(), Some("first_token"));
}

#[test]
fn null_dispatch_names_line_column_and_what_was_expected() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "d.csv", b"t,x\n0,a\n\"\",\"b\nc\"\n,d\n");
    let err = invalid(read(ImportFormat::Csv, &path, &spec("dispatch=t")).unwrap_err());
    // Row 2 has a quoted empty dispatch and a two-line field; row 3 starts on line 5.
    assert_eq!(err.line, Some(3), "{err}");
    assert_eq!(err.field.as_deref(), Some("dispatch"));
    assert_eq!(err.expected, "a send time");
    assert_eq!(err.found, "an empty cell");

    let path = write(dir.path(), "d2.csv", b"t,x\n0,a\n1,\"b\nc\"\n,d\n");
    let err = invalid(read(ImportFormat::Csv, &path, &spec("dispatch=t")).unwrap_err());
    assert_eq!(err.line, Some(5), "{err}");
    assert_eq!(err.path.as_deref(), Some("row 3, column `t`"));
}

#[test]
fn text_in_a_number_column_is_reported_with_its_value() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "x.csv", b"t,p\n0,1\n1,many\n");
    let err = invalid(
        read(
            ImportFormat::Csv,
            &path,
            &spec("dispatch=t,prompt_tokens=p"),
        )
        .unwrap_err(),
    );
    assert_eq!(err.line, Some(3));
    assert_eq!(err.expected, "a number");
    assert_eq!(err.found, "`many`");

    let path = write(dir.path(), "f.csv", b"t,p\n0,1.5\n");
    let err = invalid(
        read(
            ImportFormat::Csv,
            &path,
            &spec("dispatch=t,prompt_tokens=p"),
        )
        .unwrap_err(),
    );
    assert!(err.expected.starts_with("a whole number"), "{err}");
}

#[test]
fn unknown_mapping_key_is_a_clear_error() {
    let err = ColumnMapping::parse_spec("dispatch=t,latency=l").unwrap_err();
    assert!(err.to_string().contains("unknown key `latency`"), "{err}");
}

#[test]
fn header_only_file_has_no_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "h.csv", b"t,e2e\n");
    let err = invalid(read(ImportFormat::Csv, &path, &spec("dispatch=t")).unwrap_err());
    assert_eq!(err.expected, "at least one data row");
}

#[test]
fn cancelled_import_stops() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "c.csv", DURATIONS_CSV.as_bytes());
    let progress = ReadProgress::new();
    progress.cancel();
    let err = read_tabular(
        ImportFormat::Csv,
        &path,
        "c.csv",
        &spec("dispatch=start_s"),
        &progress,
    )
    .unwrap_err();
    assert_eq!(err, ImportError::Cancelled);
}

#[test]
fn other_formats_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "j.jsonl", b"{}\n");
    let err = invalid(read(ImportFormat::Jsonl, &path, &spec("dispatch=t")).unwrap_err());
    assert_eq!(err.found, "jsonl");
}

#[test]
fn blank_lines_are_skipped_and_do_not_shift_line_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "b.csv", b"t,e2e\n0,1\n\n1,-2\n");
    let err = invalid(read(ImportFormat::Csv, &path, &spec("dispatch=t,e2e=e2e")).unwrap_err());
    assert_eq!(err.path.as_deref(), Some("row 2, column `e2e`"), "{err}");
    assert_eq!(err.line, Some(4), "{err}");

    let path = write(dir.path(), "ok.csv", b"t,e2e\r\n0,1\r\n\r\n1,2\r\n\r\n");
    let import = read(ImportFormat::Csv, &path, &spec("dispatch=t,e2e=e2e")).unwrap();
    assert_eq!(import.runs[0].requests.len(), 2);
    assert_eq!(import.runs[0].requests[1].finish_ms, Some(3000.0));
    let warning = import.warnings.iter().find(|w| w.at == "lines").unwrap();
    assert_eq!(warning.rows, 2);
}
