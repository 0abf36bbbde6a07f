//! `kvgate packet export` and `kvgate packet verify`: the contract's exit codes and messages.

use crate::{cpu_study, import_demo_runs, kvgate, lock_demo_policy, repo, stderr, stdout};

/// How many files are under `dir`, at any depth.
fn walk(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| if p.is_dir() { walk(&p) } else { 1 })
        .sum()
}

#[test]
fn export_then_verify_and_a_changed_byte_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.sqlite");
    cpu_study(&db);
    lock_demo_policy(&db);
    import_demo_runs(&db);
    let packet = dir.path().join("packet");
    // Run from the repository root, where the recorded runs' corpus path points.
    let export = |target: &std::path::Path, zip: bool| {
        let mut args = vec![
            "packet".to_owned(),
            "export".into(),
            "--study".into(),
            "cpu".into(),
            "--out".into(),
            target.display().to_string(),
        ];
        if zip {
            args.push("--zip".into());
        }
        std::process::Command::new(env!("CARGO_BIN_EXE_kvgate"))
            .current_dir(repo(""))
            .arg("--db")
            .arg(&db)
            .args(&args)
            .env_remove("KVGATE_DB")
            .output()
            .unwrap()
    };
    let out = export(&packet, false);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).is_empty(), "no warning: {}", stderr(&out));
    // Export and verify count the same files in the same words: the files index.json lists,
    // every file on disk but index.json itself.
    let on_disk = walk(&packet);
    let listed = format!("{} files listed in index.json", on_disk - 1);
    assert!(
        stdout(&out).starts_with(&format!("exported {listed} (")),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains(" and index.json itself to "),
        "{}",
        stdout(&out)
    );
    let out = kvgate(&db, &["packet", "verify", packet.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(
        stdout(&out).trim_end(),
        format!(
            "verified: {listed} match their sha256 and size\n\
             unsigned: the packet carries no index.json.minisig"
        )
    );

    // Verifying needs no database: none is opened, created or migrated (an older kvgate can
    // verify on a machine whose default database a newer one migrated).
    let elsewhere = dir.path().join("never-created.sqlite");
    let out = kvgate(&elsewhere, &["packet", "verify", packet.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(!elsewhere.exists(), "verify created a database");
    let corrupt = dir.path().join("not-a-database.sqlite");
    std::fs::write(&corrupt, b"not sqlite").unwrap();
    let out = kvgate(&corrupt, &["packet", "verify", packet.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );

    let zip = dir.path().join("packet.zip");
    assert!(export(&zip, true).status.success());
    let out = kvgate(&db, &["packet", "verify", zip.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));

    let limits = packet.join("policy/limits.json");
    let mut bytes = std::fs::read(&limits).unwrap();
    bytes[3] = b'X';
    std::fs::write(&limits, bytes).unwrap();
    let out = kvgate(&db, &["packet", "verify", packet.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("modified: policy/limits.json: expected sha256 "),
        "{}",
        stdout(&out)
    );
    // Exporting over it is refused and changes nothing.
    let out = export(&packet, false);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("not empty"), "{}", stderr(&out));
}
