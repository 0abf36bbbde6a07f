//! The packet's signature: `index.json` (which lists every other file with its sha256) is signed
//! with an Ed25519 key in the minisign format, so `kvgate packet verify` and the standard
//! `minisign -V` both check it. The secret key is kept in the OS keyring, as endpoint keys are,
//! created there on first use; it never reaches the database, a log or a packet. Without a
//! keyring nothing is signed, and the reason is named.

use std::io::Cursor;

use minisign::{PublicKey, PublicKeyBox, SecretKey, SignatureBox};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::{AppError, ErrorCode};

/// The keyring service the signing key is filed under.
pub const SIGNING_SERVICE: &str = "dev.kvgate.workbench packet signing key";
/// The account under that service.
pub const SIGNING_ACCOUNT: &str = "packet-signing-key";
/// The signature of `index.json`, beside it: the one file of a packet its index does not list.
pub const SIGNATURE_FILE: &str = "index.json.minisig";

/// The public half of the packet signing key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct PacketKey {
    /// minisign's key id: 16 hexadecimal digits.
    pub key_id: String,
    /// The public key as minisign's `-P` takes it (base64).
    pub public_key: String,
    /// The public key file as `minisign -G` writes it (comment line and key), for `-p FILE`.
    pub public_key_file: String,
    /// True when the key was created by this call (none was kept before).
    pub created: bool,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// minisign's key id of a key number (little-endian u64, upper-case hex).
pub fn key_id(keynum: &[u8]) -> String {
    let mut le = [0u8; 8];
    le.copy_from_slice(&keynum[..8]);
    format!("{:016X}", u64::from_le_bytes(le))
}

fn no_keyring(detail: &str) -> AppError {
    AppError::new(
        ErrorCode::Storage,
        format!(
            "no OS keyring answered ({detail}): the packet signing key is kept only there, so \
             nothing was signed; export without --sign, or run where a keyring (Secret Service, \
             Keychain, Credential Manager) answers"
        ),
    )
}

fn crypto(what: &str, e: minisign::PError) -> AppError {
    AppError::new(ErrorCode::Internal, format!("{what}: {e}"))
}

/// The signing key from the OS keyring; created and kept there when `create` and none is kept.
/// `Ok(None)` when none is kept and `create` is false.
fn keyring_key(create: bool) -> Result<Option<(SecretKey, bool)>, AppError> {
    let entry = keyring::Entry::new(SIGNING_SERVICE, SIGNING_ACCOUNT)
        .map_err(|e| no_keyring(&e.to_string()))?;
    match entry.get_password() {
        Ok(stored) => {
            let bytes = unhex(&stored).ok_or_else(|| {
                AppError::storage(
                    "the packet signing key kept in the OS keyring is not one KV Gate wrote \
                     (expected hexadecimal)",
                )
            })?;
            let sk = SecretKey::from_bytes(&bytes)
                .map_err(|e| crypto("the packet signing key in the OS keyring", e))?;
            Ok(Some((sk, false)))
        }
        Err(keyring::Error::NoEntry) if create => {
            let pair = minisign::KeyPair::generate_unencrypted_keypair()
                .map_err(|e| crypto("creating the packet signing key", e))?;
            entry
                .set_password(&hex(&pair.sk.to_bytes()))
                .map_err(|e| no_keyring(&e.to_string()))?;
            Ok(Some((pair.sk, true)))
        }
        Err(keyring::Error::NoEntry) => Ok(None),
        Err(e) => Err(no_keyring(&e.to_string())),
    }
}

fn public_of(sk: &SecretKey, created: bool) -> Result<PacketKey, AppError> {
    let pk = PublicKey::from_secret_key(sk).map_err(|e| crypto("the public key", e))?;
    let file = pk
        .to_box()
        .map_err(|e| crypto("the public key", e))?
        .into_string();
    Ok(PacketKey {
        key_id: key_id(pk.keynum()),
        public_key: pk.to_base64(),
        public_key_file: file,
        created,
    })
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, AppError> + Send + 'static,
) -> Result<T, AppError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| AppError::new(ErrorCode::Internal, format!("keyring task: {e}")))?
}

/// The public key of the packet signing key, created in the OS keyring if none is kept yet.
pub async fn packet_key() -> Result<PacketKey, AppError> {
    blocking(|| {
        let (sk, created) = keyring_key(true)?.expect("created when absent");
        public_of(&sk, created)
    })
    .await
}

/// Signs `index` (the bytes of `index.json`) with the key kept in the OS keyring (created there
/// on first use): the text of `index.json.minisig`, and the key.
pub async fn sign_index(index: Vec<u8>, study: String) -> Result<(String, PacketKey), AppError> {
    blocking(move || {
        let (sk, created) = keyring_key(true)?.expect("created when absent");
        let key = public_of(&sk, created)?;
        let pk = PublicKey::from_secret_key(&sk).map_err(|e| crypto("the public key", e))?;
        // The trusted comment is signed with the index: one line, no time (an export is
        // reproducible but for the signature's own randomness).
        let study: String = study
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let trusted = format!("kvgate-packet index.json of study {study}");
        let untrusted = format!("signature from KV Gate packet key {}", key.key_id);
        let sig = minisign::sign(
            Some(&pk),
            &sk,
            Cursor::new(index),
            Some(&trusted),
            Some(&untrusted),
        )
        .map_err(|e| crypto("signing index.json", e))?;
        Ok((sig.into_string(), key))
    })
    .await
}

/// What the signature of a packet says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PacketSignatureState {
    /// No `index.json.minisig`.
    Unsigned,
    /// Signed; no public key was given, so the signature names a key nobody vouched for: its
    /// key id is reported, the signature is not checked.
    UntrustedKey,
    /// Signed by the given key, and the signature holds over `index.json`.
    Verified,
    /// Signed by another key than the given one.
    WrongKey,
    /// The signature file is unreadable, or does not hold over `index.json`.
    Bad,
    /// A public key was given, but the packet carries no signature.
    MissingSignature,
}

/// The signature check of a packet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct PacketSignature {
    pub state: PacketSignatureState,
    /// The key id the signature names, when it names one.
    pub key_id: Option<String>,
    /// The signed trusted comment, once verified.
    pub trusted_comment: Option<String>,
    /// What is wrong, for `wrong_key`, `bad` and `missing_signature`.
    pub problem: Option<String>,
}

impl PacketSignature {
    /// Whether the packet passes: unsigned without a key asked for, an untrusted key id
    /// reported, or verified.
    pub fn passes(&self) -> bool {
        matches!(
            self.state,
            PacketSignatureState::Unsigned
                | PacketSignatureState::UntrustedKey
                | PacketSignatureState::Verified
        )
    }
}

/// A public key as a user gives it: minisign's base64 line, or the text of a `.pub` file.
pub fn parse_public_key(given: &str) -> Result<PublicKey, String> {
    let given = given.trim();
    let parsed = if given.lines().count() > 1 {
        PublicKeyBox::from_string(given).and_then(PublicKey::from_box)
    } else {
        PublicKey::from_base64(given)
    };
    parsed.map_err(|e| format!("--pubkey: expected a minisign public key (base64, or a .pub file), found {given:?}: {e}"))
}

/// Checks `signature` (the text of `index.json.minisig`, if present) over `index`, against
/// `pubkey` when one is given.
pub fn check_signature(
    index: &[u8],
    signature: Option<&[u8]>,
    pubkey: Option<&PublicKey>,
) -> PacketSignature {
    let mut check = PacketSignature {
        state: PacketSignatureState::Unsigned,
        key_id: None,
        trusted_comment: None,
        problem: None,
    };
    let Some(signature) = signature else {
        if let Some(pk) = pubkey {
            check.state = PacketSignatureState::MissingSignature;
            check.problem = Some(format!(
                "the packet carries no {SIGNATURE_FILE}, but a signature by key {} was asked for",
                key_id(pk.keynum())
            ));
        }
        return check;
    };
    let sig = match std::str::from_utf8(signature)
        .map_err(|e| e.to_string())
        .and_then(|s| SignatureBox::from_string(s).map_err(|e| e.to_string()))
    {
        Ok(s) => s,
        Err(e) => {
            check.state = PacketSignatureState::Bad;
            check.problem = Some(format!("{SIGNATURE_FILE}: not a minisign signature: {e}"));
            return check;
        }
    };
    let signer = key_id(sig.keynum());
    check.key_id = Some(signer.clone());
    let Some(pk) = pubkey else {
        check.state = PacketSignatureState::UntrustedKey;
        return check;
    };
    let expected = key_id(pk.keynum());
    if expected != signer {
        check.state = PacketSignatureState::WrongKey;
        check.problem = Some(format!(
            "{SIGNATURE_FILE} is signed by key {signer}, not by the given key {expected}"
        ));
        return check;
    }
    match minisign::verify(pk, &sig, Cursor::new(index), true, false, false) {
        Ok(()) => {
            check.state = PacketSignatureState::Verified;
            check.trusted_comment = sig.trusted_comment().ok();
        }
        Err(e) => {
            check.state = PacketSignatureState::Bad;
            check.problem = Some(format!(
                "{SIGNATURE_FILE} does not hold over index.json with key {signer}: {e}"
            ));
        }
    }
    check
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signed(index: &[u8]) -> (String, PublicKey) {
        let pair = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        let sig = minisign::sign(
            Some(&pair.pk),
            &pair.sk,
            Cursor::new(index.to_vec()),
            Some("t"),
            None,
        )
        .unwrap();
        (sig.into_string(), pair.pk)
    }

    #[test]
    fn a_signature_holds_only_over_its_index_and_under_its_key() {
        let index = br#"{"files":[]}"#;
        let (sig, pk) = signed(index);
        let ok = check_signature(index, Some(sig.as_bytes()), Some(&pk));
        assert_eq!(ok.state, PacketSignatureState::Verified, "{ok:?}");
        assert_eq!(ok.key_id.as_deref(), Some(key_id(pk.keynum()).as_str()));

        // One byte of the index changed: bad.
        let bad = check_signature(br#"{"files":[1]}"#, Some(sig.as_bytes()), Some(&pk));
        assert_eq!(bad.state, PacketSignatureState::Bad);
        assert!(!bad.passes());

        // Another key: named, refused.
        let (_, other) = signed(index);
        let wrong = check_signature(index, Some(sig.as_bytes()), Some(&other));
        assert_eq!(wrong.state, PacketSignatureState::WrongKey);
        assert!(wrong.problem.unwrap().contains("not by the given key"));

        // No key given: the key id is reported as untrusted, nothing is claimed verified.
        let untrusted = check_signature(index, Some(sig.as_bytes()), None);
        assert_eq!(untrusted.state, PacketSignatureState::UntrustedKey);
        assert!(untrusted.passes());

        // A garbled file is bad even without a key; no signature with a key asked for fails.
        let garbled = check_signature(index, Some(b"untrusted comment: x\nAAAA\n"), None);
        assert_eq!(garbled.state, PacketSignatureState::Bad);
        assert_eq!(
            check_signature(index, None, None).state,
            PacketSignatureState::Unsigned
        );
        assert_eq!(
            check_signature(index, None, Some(&pk)).state,
            PacketSignatureState::MissingSignature
        );
    }

    #[test]
    fn public_keys_parse_from_the_line_or_the_file_and_keys_round_trip_through_hex() {
        let pair = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        let line = pair.pk.to_base64();
        let file = pair.pk.to_box().unwrap().into_string();
        assert_eq!(parse_public_key(&line).unwrap().keynum(), pair.pk.keynum());
        assert_eq!(parse_public_key(&file).unwrap().keynum(), pair.pk.keynum());
        assert!(parse_public_key("not a key").is_err());
        let back = SecretKey::from_bytes(&unhex(&hex(&pair.sk.to_bytes())).unwrap()).unwrap();
        let key = public_of(&back, false).unwrap();
        assert_eq!(key.public_key, line);
        assert!(key.public_key_file.contains(&key.key_id));
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("zz"), None);
    }
}
