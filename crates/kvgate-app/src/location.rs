use std::path::PathBuf;

use crate::AppError;

/// Environment variable naming the database file the app opens (overrides the default).
pub const DB_ENV: &str = "KVGATE_DB";
/// Environment variable naming the folder of the default database (overrides the OS data dir).
pub const DATA_DIR_ENV: &str = "KVGATE_DATA_DIR";

/// Which database to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbLocation {
    /// `kvgate.sqlite` in the OS data directory (or `$KVGATE_DATA_DIR`); seeded with the demo.
    Default,
    /// An explicit file (`--db PATH` or `$KVGATE_DB`); never seeded.
    Path(PathBuf),
}

impl DbLocation {
    /// An explicit path if one is given, else the default.
    pub fn from_option(path: Option<PathBuf>) -> Self {
        match path {
            Some(p) if !p.as_os_str().is_empty() => DbLocation::Path(p),
            _ => DbLocation::Default,
        }
    }
}

/// The default database file: `$KVGATE_DATA_DIR/kvgate.sqlite`, else `<OS data dir>/kvgate/kvgate.sqlite`.
pub fn default_db_path() -> Result<PathBuf, AppError> {
    if let Some(dir) = std::env::var_os(DATA_DIR_ENV).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join("kvgate.sqlite"));
    }
    let data = dirs::data_dir().ok_or_else(|| {
        AppError::storage(format!(
            "no OS data directory is known for this user; set {DATA_DIR_ENV} or {DB_ENV}"
        ))
    })?;
    Ok(data.join("kvgate").join("kvgate.sqlite"))
}
