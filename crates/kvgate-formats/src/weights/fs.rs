//! The one `std::fs` adapter of this module, for the shells: a [`TensorSource`] over the files of
//! one directory, opened on first use and kept open for positional reads from several threads.
//! Everything else in `weights` works on any [`TensorSource`].

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{CheckpointLayout, TensorSource, WeightsError};

/// Files of one directory, named by plain file name.
#[derive(Debug)]
pub struct DirSource {
    dir: PathBuf,
    open: Mutex<HashMap<String, Arc<File>>>,
}

impl DirSource {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        DirSource {
            dir: dir.into(),
            open: Mutex::new(HashMap::new()),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Names of the regular files directly in the directory (no recursion), sorted.
    pub fn file_names(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file() || entry.path().is_file() {
                if let Some(name) = entry.file_name().to_str() {
                    names.push(name.to_owned());
                }
            }
        }
        names.sort();
        Ok(names)
    }

    fn file(&self, name: &str) -> io::Result<Arc<File>> {
        let plain = !name.is_empty()
            && name != "."
            && name != ".."
            && !name.contains(['/', '\\'])
            && Path::new(name).file_name().is_some_and(|n| n == name);
        if !plain {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{name}` is not a plain file name"),
            ));
        }
        let mut open = self.open.lock().expect("open files");
        if let Some(f) = open.get(name) {
            return Ok(Arc::clone(f));
        }
        let f = Arc::new(File::open(self.dir.join(name))?);
        open.insert(name.to_owned(), Arc::clone(&f));
        Ok(f)
    }
}

impl TensorSource for DirSource {
    fn file_len(&self, file: &str) -> io::Result<u64> {
        Ok(self.file(file)?.metadata()?.len())
    }

    fn read_at(&self, file: &str, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let f = self.file(file)?;
        read_exact_at(&f, offset, buf)
    }
}

#[cfg(unix)]
fn read_exact_at(f: &File, offset: u64, buf: &mut [u8]) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, offset)
}

#[cfg(windows)]
fn read_exact_at(f: &File, mut offset: u64, mut buf: &mut [u8]) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match f.seek_read(buf, offset) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A source and layout for what a user named: a directory (its checkpoint files are detected)
/// or one file (`.safetensors`, `.safetensors.index.json`, `.gguf`).
pub fn open_checkpoint(path: &Path) -> Result<(DirSource, CheckpointLayout), WeightsError> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| WeightsError::io(&shown, 0, 0, e))?;
    if meta.is_dir() {
        let source = DirSource::new(path);
        let names = source
            .file_names()
            .map_err(|e| WeightsError::io(&shown, 0, 0, e))?;
        let layout = CheckpointLayout::detect(&names)?;
        return Ok((source, layout));
    }
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| WeightsError::Layout {
            expected: "a file name in UTF-8".into(),
            found: format!("`{shown}`"),
        })?;
    let layout = CheckpointLayout::for_file(name)?;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Ok((DirSource::new(dir), layout))
}
