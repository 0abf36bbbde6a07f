//! Files a person saves from the window, and the paths it asks them for. A chart is saved as the
//! SVG document [`crate::charts`] drew for the Results screen, or that document rendered to PNG;
//! a run as its `kvgate-run` file. Each comes with the name a save dialog suggests and is written
//! whole or not at all. [`PathKind`] says what each path field of the window holds, so its
//! Browse button opens the dialog that fits.
//!
//! The dialogs themselves belong to the desktop shell: nothing here shows one.

use std::path::Path;

use kvgate_core::canonical::sha256_hex;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::charts::{self, ChartSpec};
use crate::{App, AppError, ErrorCode};

/// How a chart is saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ChartFormat {
    /// The SVG document shown on the Results screen, byte for byte.
    Svg,
    /// That document drawn at twice its size, with its title and description as text chunks.
    Png,
}

/// A choice a file dialog offers: its name and the file extensions it shows (no dot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileFilter {
    pub name: &'static str,
    pub extensions: &'static [&'static str],
}

/// A file ready to be saved, with what a save dialog offers for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileToSave {
    /// The name the dialog suggests: lower-case letters, digits and `-_.` only.
    pub file_name: String,
    pub filter: FileFilter,
    pub bytes: Vec<u8>,
}

/// A file written: where, how large, and its digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct SavedFile {
    pub path: String,
    pub size: u64,
    pub sha256: String,
}

/// A name part safe on every file system: runs of anything but `a-z0-9` become one `-`.
fn safe(s: &str) -> String {
    let mut out = String::new();
    for c in s.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_owned()
}

/// `study-name_chart-id.svg`: the name a saved chart is offered under.
pub fn chart_file_name(study: &str, chart_id: &str, format: ChartFormat) -> String {
    let study = Some(safe(study))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "study".into());
    let ext = match format {
        ChartFormat::Svg => "svg",
        ChartFormat::Png => "png",
    };
    format!("{study}_{}.{ext}", safe(chart_id))
}

/// `study-name-packet` or `study-name-packet.zip`: the name a packet is offered under.
pub fn packet_file_name(study: &str, zip: bool) -> String {
    let study = Some(safe(study))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "study".into());
    format!("{study}-packet{}", if zip { ".zip" } else { "" })
}

/// Writes `bytes` to `path` whole or not at all: staged beside it, then moved into place,
/// replacing a file already there (the save dialog asked). A folder is never replaced.
pub fn save_file(path: &Path, bytes: &[u8]) -> Result<SavedFile, AppError> {
    let invalid = |what: String| AppError::new(ErrorCode::InvalidInput, what);
    if path.is_dir() {
        return Err(invalid(format!(
            "{}: is a folder; choose a file name to save to",
            path.display()
        )));
    }
    let name = path
        .file_name()
        .ok_or_else(|| invalid(format!("{}: expected a file name", path.display())))?
        .to_string_lossy()
        .into_owned();
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(invalid(format!(
            "{}: expected an existing folder to save into, found none",
            parent.display()
        )));
    }
    let io = |what: &str, e: std::io::Error| {
        AppError::new(
            ErrorCode::InvalidInput,
            format!("{}: {what}: {e}", path.display()),
        )
    };
    let mut staged = tempfile::Builder::new()
        .prefix(&format!(".{name}.partial-"))
        .tempfile_in(parent)
        .map_err(|e| io("cannot create the file beside it", e))?;
    std::io::Write::write_all(&mut staged, bytes).map_err(|e| io("cannot write", e))?;
    staged
        .as_file()
        .sync_all()
        .map_err(|e| io("cannot write", e))?;
    // tempfile creates the file 0600; a saved chart or run file is for sharing, like a packet.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(staged.path(), std::fs::Permissions::from_mode(0o644))
            .map_err(|e| io("cannot set permissions", e))?;
    }
    staged
        .persist(path)
        .map_err(|e| io("cannot move the file into place", e.error))?;
    Ok(SavedFile {
        path: path.display().to_string(),
        size: bytes.len() as u64,
        sha256: sha256_hex(bytes),
    })
}

const SVG: FileFilter = FileFilter {
    name: "SVG image",
    extensions: &["svg"],
};
const PNG: FileFilter = FileFilter {
    name: "PNG image",
    extensions: &["png"],
};
const RUN_FILE: FileFilter = FileFilter {
    name: "KV Gate run file",
    extensions: &["jsonl"],
};

impl App {
    /// One chart of the study, as the Results screen draws it, ready to save. Refused as the
    /// results are: until the study's policy is locked.
    pub async fn chart_file(
        &self,
        study_id: i64,
        spec: &ChartSpec,
        format: ChartFormat,
    ) -> Result<FileToSave, AppError> {
        let analysis = self.analyze(study_id).await?;
        let chart = charts::render(&analysis, spec);
        let file_name = chart_file_name(&analysis.study_name, &chart.id, format);
        let (bytes, filter) = match format {
            ChartFormat::Svg => (chart.svg.into_bytes(), SVG),
            ChartFormat::Png => {
                let svg = chart.svg;
                let png = tokio::task::spawn_blocking(move || charts::raster::png(&svg))
                    .await
                    .map_err(|e| AppError::new(ErrorCode::Internal, e.to_string()))?
                    .map_err(|e| AppError::new(ErrorCode::Internal, e.to_string()))?;
                (png, PNG)
            }
        };
        Ok(FileToSave {
            file_name,
            filter,
            bytes,
        })
    }

    /// The name a packet of the study is offered under in a save dialog. Refused while the study
    /// has no locked policy, as the export would be, so the refusal comes before the dialog.
    pub async fn packet_save_name(&self, study_id: i64, zip: bool) -> Result<String, AppError> {
        let study = self
            .store
            .study(study_id)
            .await?
            .ok_or_else(|| AppError::not_found(format!("no study with id {study_id}")))?;
        self.require_locked_policy(
            study_id,
            "no packet is written (it records the results against the policy)",
        )
        .await?;
        Ok(packet_file_name(&study.name, zip))
    }

    /// A finished run as its `kvgate-run` file (what `kvgate run export` writes), ready to save.
    pub async fn run_file(&self, run_id: i64) -> Result<FileToSave, AppError> {
        let text = self.export_run(run_id).await?;
        let run = self.store.get_run(run_id).await?;
        Ok(FileToSave {
            file_name: format!("run-{run_id}-{}.kvgate-run.jsonl", safe(&run.cell)),
            filter: RUN_FILE,
            bytes: text.into_bytes(),
        })
    }
}

/// What a path field of the window holds, so its Browse button opens the dialog that fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum PathKind {
    /// A corpus folder to read (corpus.json and items.jsonl).
    CorpusFolder,
    /// A new or empty folder to generate a corpus into.
    NewCorpusFolder,
    /// A `tokenizer.json`.
    Tokenizer,
    /// A team's own approved prompts, one JSON item per line.
    TeamFile,
    /// A file to import: benchmark output, a run file, a scrape or a startup log.
    ImportFile,
    /// A server's startup log.
    StartupLog,
    /// A checkpoint file: a `.safetensors`, its index, or a `.gguf`.
    CheckpointFile,
    /// A checkpoint folder of safetensors shards.
    CheckpointFolder,
    /// A packet exported as a folder.
    PacketFolder,
    /// A packet exported as one zip file.
    PacketZip,
}

/// The dialog a [`PathKind`] opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathDialog {
    pub title: &'static str,
    /// A folder chooser rather than a file chooser.
    pub folder: bool,
    /// The choices of file kinds, the first shown first; empty: every file.
    pub filters: Vec<FileFilter>,
}

impl PathKind {
    pub fn dialog(self) -> PathDialog {
        let (title, folder, filters): (_, _, &[FileFilter]) = match self {
            PathKind::CorpusFolder => ("Choose a corpus folder", true, &[]),
            PathKind::NewCorpusFolder => ("Choose a new or empty folder for the corpus", true, &[]),
            PathKind::Tokenizer => (
                "Choose a tokenizer.json",
                false,
                &[FileFilter {
                    name: "Tokenizer (tokenizer.json)",
                    extensions: &["json"],
                }],
            ),
            PathKind::TeamFile => (
                "Choose the team's prompts (JSONL)",
                false,
                &[FileFilter {
                    name: "Team prompts (.jsonl)",
                    extensions: &["jsonl", "json"],
                }],
            ),
            // Benchmark tools and logs name their files freely: every file is offered.
            PathKind::ImportFile => ("Choose a file to import", false, &[]),
            PathKind::StartupLog => ("Choose the server's startup log", false, &[]),
            PathKind::CheckpointFile => (
                "Choose a checkpoint file",
                false,
                &[FileFilter {
                    name: "Checkpoint (.safetensors, its index .json, .gguf)",
                    extensions: &["safetensors", "json", "gguf"],
                }],
            ),
            PathKind::CheckpointFolder => ("Choose a checkpoint folder", true, &[]),
            PathKind::PacketFolder => ("Choose a packet folder", true, &[]),
            PathKind::PacketZip => (
                "Choose a packet .zip file",
                false,
                &[FileFilter {
                    name: "Packet (.zip)",
                    extensions: &["zip"],
                }],
            ),
        };
        PathDialog {
            title,
            folder,
            filters: filters.to_vec(),
        }
    }
}

/// The save dialog's filter for a packet: a zip file, or a folder (any name).
pub fn packet_filter(zip: bool) -> Option<FileFilter> {
    zip.then_some(FileFilter {
        name: "Packet (.zip)",
        extensions: &["zip"],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_files_are_named_after_the_study_and_the_chart() {
        assert_eq!(
            chart_file_name("FP8 KV, Llama 8B", "forest-C1", ChartFormat::Svg),
            "fp8-kv-llama-8b_forest-c1.svg"
        );
        assert_eq!(
            chart_file_name("", "goodput", ChartFormat::Png),
            "study_goodput.png"
        );
        assert_eq!(
            chart_file_name("demo", "latency-cdf-(unclassified)-ttft", ChartFormat::Svg),
            "demo_latency-cdf-unclassified-ttft.svg"
        );
        assert_eq!(
            chart_file_name("../../etc/passwd", "a/b\\c", ChartFormat::Svg),
            "etc-passwd_a-b-c.svg"
        );
        assert_eq!(
            packet_file_name("Recorded q8_0", true),
            "recorded-q8-0-packet.zip"
        );
        assert_eq!(packet_file_name("Prüfung", false), "pr-fung-packet");
    }

    #[test]
    fn a_saved_file_replaces_a_file_whole_and_never_a_folder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chart.svg");
        std::fs::write(&path, "old").unwrap();
        let saved = save_file(&path, b"<svg/>").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"<svg/>");
        assert_eq!(saved.size, 6);
        assert_eq!(saved.sha256, sha256_hex(b"<svg/>"));
        // Only the file: no staging file is left beside it.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

        let err = save_file(dir.path(), b"x").unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput);
        assert!(err.message.contains("is a folder"), "{}", err.message);
        let err = save_file(&dir.path().join("missing/chart.svg"), b"x").unwrap_err();
        assert!(
            err.message.contains("expected an existing folder"),
            "{}",
            err.message
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"<svg/>");
    }

    #[cfg(unix)]
    #[test]
    fn a_saved_file_is_readable_by_others_like_a_packet() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.kvgate-run.jsonl");
        save_file(&path, b"{}\n").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
    }
}
