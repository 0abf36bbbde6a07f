//! Public files real users published, kept beside the repository in `../shared/realdata/field/`
//! (never copied into it), for the unit tests that read them.

/// The text of a file under `../shared/realdata/field/`, or `None` after the visible skip line
/// where a user's clone has no such folder.
pub(crate) fn field(test: &str, relative: &str) -> Option<String> {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/realdata/field")
        .join(relative);
    if !path.exists() {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "{test}: skipped: shared field data not present ({})",
            path.display()
        );
        return None;
    }
    Some(std::fs::read_to_string(&path).unwrap())
}
