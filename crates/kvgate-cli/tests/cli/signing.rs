//! A signed packet: `kvgate packet export --sign` with the key in a real Secret Service (the
//! private session bus and gnome-keyring-daemon of the key tests, never the user's keyring),
//! `kvgate packet verify [--pubkey]`, `kvgate packet key show`, and the standard `minisign -V`
//! on the same packet. Without any keyring, `--sign` refuses and writes nothing.

use std::path::Path;
use std::process::{Command, Output};

use crate::keys::{env_for, SecretService};
use crate::{cpu_study, import_demo_runs, lock_demo_policy, repo, stderr, stdout};

/// `kvgate` with exactly the given environment (plus PATH), from the repository root (where the
/// recorded runs' corpus path points).
fn kvgate_env(env: &[(String, String)], db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kvgate"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(repo(""))
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap()
}

/// `kvgate packet verify TARGET --pubkey KEY` (a key or the path of a .pub file).
fn verify_with(env: &[(String, String)], db: &Path, target: &str, pubkey: &str) -> Output {
    kvgate_env(env, db, &["packet", "verify", target, "--pubkey", pubkey])
}

fn demo(db: &Path) {
    cpu_study(db);
    lock_demo_policy(db);
    import_demo_runs(db);
}

#[test]
fn a_signed_packet_verifies_under_its_key_only_and_with_minisign() {
    let keyring = SecretService::start();
    let env = keyring.env();
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("ws.sqlite");
    demo(&db);

    // The public key, created in the keyring on first use, in minisign's format. The daemon
    // creates its login collection (where a new secret goes) a moment after it answers
    // searches: until then a write fails with "no result found", and nothing is kept.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let shown = loop {
        let out = kvgate_env(&env, &db, &["packet", "key", "show"]);
        if out.status.success() || std::time::Instant::now() > deadline {
            break out;
        }
        assert!(stderr(&out).contains("no result found"), "{}", stderr(&out));
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert!(shown.status.success(), "{}", stderr(&shown));
    let pub_file = stdout(&shown);
    let mut lines = pub_file.lines();
    let comment = lines.next().unwrap();
    assert!(
        comment.starts_with("untrusted comment: minisign public key: "),
        "{pub_file}"
    );
    let key_id = comment.rsplit(' ').next().unwrap().to_owned();
    assert_eq!(key_id.len(), 16, "{comment}");
    let pubkey = lines.next().unwrap().to_owned();
    assert!(stderr(&shown).contains("created the packet signing key"));
    // The same key the next time.
    let again = kvgate_env(&env, &db, &["packet", "key", "show"]);
    assert_eq!(stdout(&again), pub_file);
    assert!(stderr(&again).is_empty(), "{}", stderr(&again));

    let packet = work.path().join("packet");
    let out = kvgate_env(
        &env,
        &db,
        &[
            "packet",
            "export",
            "--study",
            "cpu",
            "--out",
            packet.to_str().unwrap(),
            "--sign",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("signed index.json with key id {key_id}")),
        "{}",
        stdout(&out)
    );
    let sig = packet.join("index.json.minisig");
    assert!(sig.is_file());
    // The index does not list its own signature.
    let index = std::fs::read_to_string(packet.join("index.json")).unwrap();
    assert!(!index.contains("minisig"));
    // The secret key is nowhere in the packet or the database folder.
    let secret = keyring_secret(&keyring);
    assert_eq!(secret.len(), 2 * 158, "hex of minisign's secret key bytes");
    for f in walk(work.path()) {
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(&secret),
            "{}",
            f.display()
        );
    }

    // Without a key: intact, and the signer's key id named as untrusted.
    let v = kvgate_env(&env, &db, &["packet", "verify", packet.to_str().unwrap()]);
    assert!(v.status.success(), "{}", stdout(&v));
    assert!(
        stdout(&v).contains(&format!("signed by untrusted key id {key_id}")),
        "{}",
        stdout(&v)
    );
    // With the key: verified.
    let v = verify_with(&env, &db, packet.to_str().unwrap(), &pubkey);
    assert!(v.status.success(), "{}", stdout(&v));
    assert!(
        stdout(&v).contains(&format!(
            "signature verified: index.json is signed by key id {key_id}"
        )),
        "{}",
        stdout(&v)
    );
    // The key as a .pub file works too.
    let pub_path = work.path().join("kvgate.pub");
    std::fs::write(&pub_path, &pub_file).unwrap();
    let v = verify_with(
        &env,
        &db,
        packet.to_str().unwrap(),
        pub_path.to_str().unwrap(),
    );
    assert!(v.status.success(), "{}", stdout(&v));

    // Another key: exit 1, naming both key ids.
    let other = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
    let v = verify_with(&env, &db, packet.to_str().unwrap(), &other.pk.to_base64());
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    assert!(
        stdout(&v).contains(&format!("is signed by key {key_id}, not by the given key")),
        "{}",
        stdout(&v)
    );

    // The standard minisign verifies the very same packet.
    minisign_verifies(&packet, &pubkey, true);

    // A tampered index (and the files it lists re-hashed to match, as a forger would do): the
    // file check passes, the signature does not; exit 1, and minisign agrees.
    let forged = index.replacen("\"study\": \"cpu\"", "\"study\": \"cpv\"", 1);
    assert_ne!(forged, index, "the index names its study");
    std::fs::write(packet.join("index.json"), forged).unwrap();
    let v = verify_with(&env, &db, packet.to_str().unwrap(), &pubkey);
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    assert!(
        stdout(&v)
            .contains("signature not verified: index.json.minisig does not hold over index.json"),
        "{}",
        stdout(&v)
    );
    minisign_verifies(&packet, &pubkey, false);
    // A garbled signature fails even without a key.
    std::fs::write(packet.join("index.json"), &index).unwrap();
    std::fs::write(&sig, "untrusted comment: x\nnot a signature\n").unwrap();
    let v = kvgate_env(&env, &db, &["packet", "verify", packet.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    assert!(
        stdout(&v).contains("not a minisign signature"),
        "{}",
        stdout(&v)
    );

    // A zip is signed the same way.
    let zip = work.path().join("packet.zip");
    let out = kvgate_env(
        &env,
        &db,
        &[
            "packet",
            "export",
            "--study",
            "cpu",
            "--out",
            zip.to_str().unwrap(),
            "--zip",
            "--sign",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v = verify_with(&env, &db, zip.to_str().unwrap(), &pubkey);
    assert!(v.status.success(), "{}", stdout(&v));
    assert!(stdout(&v).contains("signature verified"), "{}", stdout(&v));
}

#[test]
fn without_a_keyring_a_signed_export_is_refused_and_an_unsigned_packet_says_so() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join("run")).unwrap();
    let env = env_for(home.path(), None);
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("ws.sqlite");
    demo(&db);
    let packet = work.path().join("packet");
    let out = kvgate_env(
        &env,
        &db,
        &[
            "packet",
            "export",
            "--study",
            "cpu",
            "--out",
            packet.to_str().unwrap(),
            "--sign",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("error: no OS keyring answered ("),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("nothing was signed"),
        "{}",
        stderr(&out)
    );
    assert!(!packet.exists(), "nothing written");
    let shown = kvgate_env(&env, &db, &["packet", "key", "show"]);
    assert_eq!(shown.status.code(), Some(1));

    let out = kvgate_env(
        &env,
        &db,
        &[
            "packet",
            "export",
            "--study",
            "cpu",
            "--out",
            packet.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v = kvgate_env(&env, &db, &["packet", "verify", packet.to_str().unwrap()]);
    assert!(v.status.success(), "{}", stdout(&v));
    assert!(
        stdout(&v).contains("unsigned: the packet carries no index.json.minisig"),
        "{}",
        stdout(&v)
    );
    // Asked for a key, an unsigned packet fails.
    let key = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
    let v = verify_with(&env, &db, packet.to_str().unwrap(), &key.pk.to_base64());
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    assert!(
        stdout(&v).contains("carries no index.json.minisig"),
        "{}",
        stdout(&v)
    );
}

/// The signing key as the Secret Service itself holds it, independent of KV Gate.
fn keyring_secret(keyring: &SecretService) -> String {
    let out = Command::new("secret-tool")
        .args([
            "lookup",
            "service",
            kvgate_app::signing::SIGNING_SERVICE,
            "username",
            kvgate_app::signing::SIGNING_ACCOUNT,
        ])
        .envs(keyring.env())
        .output()
        .expect("secret-tool is installed by scripts/setup.sh");
    stdout(&out).trim().to_owned()
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// `minisign -V -P KEY -m index.json` (the signature beside it as `index.json.minisig`, its
/// default name); skipped, visibly, where the minisign binary is absent.
fn minisign_verifies(packet: &Path, pubkey: &str, expected: bool) {
    let Ok(out) = Command::new("minisign")
        .args(["-V", "-P", pubkey, "-m"])
        .arg(packet.join("index.json"))
        .output()
    else {
        eprintln!("skipped: minisign not installed (scripts/setup.sh installs it)");
        return;
    };
    assert_eq!(
        out.status.success(),
        expected,
        "minisign -V: {}{}",
        stdout(&out),
        stderr(&out)
    );
}
