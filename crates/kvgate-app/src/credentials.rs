//! Endpoint API keys. A key is kept in the OS keyring (the Secret Service over D-Bus on Linux,
//! the Keychain on macOS, the Credential Manager on Windows) under the endpoint's origin, so it
//! never reaches the database, a log, a run's recorded config or a packet.
//!
//! When no OS keyring answers, a key is refused unless the caller asks for the fallback: then it
//! is held in this process's memory only, until the process ends, and every status says so.
//! The key itself is never returned to a shell: only where it is kept.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use kvgate_runner::endpoint_origin;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::{App, AppError, ErrorCode};

/// The keyring service name the keys are filed under; the account is the endpoint's origin.
pub const KEYRING_SERVICE: &str = "dev.kvgate.workbench endpoint API key";
/// Longest key accepted (bytes): a header value, not a document.
const MAX_KEY_BYTES: usize = 4096;

/// Where an endpoint's key is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeyStore {
    /// The OS keyring: it outlives the process and is protected by the user's login.
    OsKeyring,
    /// This process's memory only (the warned fallback): gone when the process ends.
    Session,
}

/// A key to keep for the endpoint at `url`.
#[derive(Clone, Serialize, Deserialize, TS, JsonSchema)]
pub struct EndpointKeyInput {
    /// The server root or its `/v1` prefix; the key is kept under its origin.
    pub url: String,
    pub key: String,
    /// When no OS keyring answers: hold the key in this process's memory until it ends instead
    /// of refusing it. It is never written anywhere.
    #[serde(default)]
    pub session_fallback: bool,
}

impl fmt::Debug for EndpointKeyInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EndpointKeyInput")
            .field("url", &self.url)
            .field("key", &"<redacted>")
            .field("session_fallback", &self.session_fallback)
            .finish()
    }
}

/// Whether the OS keyring answered, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct KeyringState {
    pub available: bool,
    /// The keyring's own error when it did not answer.
    pub detail: Option<String>,
}

/// Where the key of one endpoint is kept; never the key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct EndpointKeyStatus {
    /// `scheme://host[:port]`: what the key is kept under.
    pub origin: String,
    /// Where the key is, or `null` when none is kept (requests then carry no key).
    pub stored_in: Option<KeyStore>,
    pub keyring: KeyringState,
    /// Set when the key is only in memory: what is lost, and when.
    pub warning: Option<String>,
}

/// Keys held in memory by the fallback, by origin. Its `Debug` shows only how many.
#[derive(Clone, Default)]
pub(crate) struct SessionKeys(Arc<Mutex<HashMap<String, String>>>);

impl fmt::Debug for SessionKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.lock().map(|m| m.len()).unwrap_or(0);
        write!(f, "SessionKeys({n} kept)")
    }
}

impl SessionKeys {
    fn get(&self, origin: &str) -> Option<String> {
        self.0.lock().ok()?.get(origin).cloned()
    }
    fn insert(&self, origin: String, key: String) {
        if let Ok(mut m) = self.0.lock() {
            m.insert(origin, key);
        }
    }
    fn remove(&self, origin: &str) -> bool {
        self.0
            .lock()
            .map(|mut m| m.remove(origin).is_some())
            .unwrap_or(false)
    }
}

fn session_warning(origin: &str) -> String {
    format!(
        "The key for {origin} is held in this process's memory only (no OS keyring answered): \
         it is lost when the process ends, and it was not written anywhere"
    )
}

/// The OS keyring's answer for one origin.
enum Lookup {
    Found(String),
    Absent,
    /// The keyring's own message: the platform's error, which never holds the key.
    Unavailable(String),
}

fn entry(origin: &str) -> Result<keyring::Entry, keyring::Error> {
    keyring::Entry::new(KEYRING_SERVICE, origin)
}

/// Keyring calls block (D-Bus round trips, maybe an unlock prompt): off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, AppError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| AppError::new(ErrorCode::Internal, format!("keyring task: {e}")))
}

async fn os_lookup(origin: &str) -> Result<Lookup, AppError> {
    let origin = origin.to_owned();
    blocking(
        move || match entry(&origin).and_then(|e| e.get_password()) {
            Ok(key) => Lookup::Found(key),
            Err(keyring::Error::NoEntry) => Lookup::Absent,
            Err(e) => Lookup::Unavailable(e.to_string()),
        },
    )
    .await
}

fn origin_of(url: &str) -> Result<String, AppError> {
    endpoint_origin(url.trim()).map_err(|e| AppError::new(ErrorCode::InvalidInput, e.to_string()))
}

/// The origin a key for `url` is kept under, and the key as it will be sent; or what is wrong.
fn checked_key(url: &str, key: &str) -> Result<(String, String), AppError> {
    let origin = origin_of(url)?;
    let key = key.trim();
    if key.is_empty() {
        return Err(AppError::new(
            ErrorCode::InvalidInput,
            "key: expected the endpoint's API key, found nothing",
        ));
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(AppError::new(
            ErrorCode::InvalidInput,
            format!(
                "key: expected at most {MAX_KEY_BYTES} bytes, found {}",
                key.len()
            ),
        ));
    }
    if key.bytes().any(|b| b.is_ascii_control() || !b.is_ascii()) {
        return Err(AppError::new(
            ErrorCode::InvalidInput,
            "key: expected printable ASCII (it is sent as an HTTP header), found a control or \
             non-ASCII character",
        ));
    }
    Ok((origin, key.to_owned()))
}

impl KeyringState {
    fn answered() -> KeyringState {
        KeyringState {
            available: true,
            detail: None,
        }
    }

    fn silent(detail: String) -> KeyringState {
        KeyringState {
            available: false,
            detail: Some(detail),
        }
    }
}

impl EndpointKeyStatus {
    /// The status of `origin`; a key held in memory always carries its warning.
    fn new(origin: String, stored_in: Option<KeyStore>, keyring: KeyringState) -> Self {
        EndpointKeyStatus {
            warning: (stored_in == Some(KeyStore::Session)).then(|| session_warning(&origin)),
            origin,
            stored_in,
            keyring,
        }
    }
}

fn not_kept(origin: &str, detail: &str) -> AppError {
    AppError::new(
        ErrorCode::Storage,
        format!("no OS keyring answered ({detail}): the key for {origin} was not kept"),
    )
}

/// The OS keyring's `set`: `Err(detail)` inside when the keyring did not answer.
async fn os_set(origin: &str, key: &str) -> Result<Result<(), String>, AppError> {
    let (origin, key) = (origin.to_owned(), key.to_owned());
    blocking(move || {
        entry(&origin)
            .and_then(|e| e.set_password(&key))
            .map_err(|e| e.to_string())
    })
    .await
}

/// Keeps `key` for the endpoint at `url` in the OS keyring, replacing an earlier one; refused,
/// with the keyring's reason, when none answers. (The shells without a session to hold a key
/// in, such as the CLI, use this; the app adds the session fallback.)
pub async fn keyring_set(url: &str, key: &str) -> Result<EndpointKeyStatus, AppError> {
    let (origin, key) = checked_key(url, key)?;
    match os_set(&origin, &key).await? {
        Ok(()) => Ok(EndpointKeyStatus::new(
            origin,
            Some(KeyStore::OsKeyring),
            KeyringState::answered(),
        )),
        Err(detail) => Err(not_kept(&origin, &detail)),
    }
}

/// Whether the OS keyring holds a key for the endpoint at `url`; never the key.
pub async fn keyring_status(url: &str) -> Result<EndpointKeyStatus, AppError> {
    let origin = origin_of(url)?;
    let (stored_in, keyring) = match os_lookup(&origin).await? {
        Lookup::Found(_) => (Some(KeyStore::OsKeyring), KeyringState::answered()),
        Lookup::Absent => (None, KeyringState::answered()),
        Lookup::Unavailable(detail) => (None, KeyringState::silent(detail)),
    };
    Ok(EndpointKeyStatus::new(origin, stored_in, keyring))
}

/// Removes the key for the endpoint at `url` from the OS keyring. Not finding one is not an
/// error; a keyring that does not answer is (a key may still be there).
pub async fn keyring_forget(url: &str) -> Result<EndpointKeyStatus, AppError> {
    let origin = origin_of(url)?;
    let removed = {
        let origin = origin.clone();
        blocking(move || entry(&origin).and_then(|e| e.delete_credential())).await?
    };
    match removed {
        Ok(()) | Err(keyring::Error::NoEntry) => Ok(EndpointKeyStatus::new(
            origin,
            None,
            KeyringState::answered(),
        )),
        Err(e) => Err(AppError::new(
            ErrorCode::Storage,
            format!(
                "no OS keyring answered ({e}): a key for {origin} kept there could not be removed"
            ),
        )),
    }
}

impl App {
    /// Keeps `input.key` for the endpoint's origin in the OS keyring; when none answers and
    /// `session_fallback` is set, in memory until the process ends (the status warns). Replaces
    /// an earlier key.
    pub async fn set_endpoint_key(
        &self,
        input: EndpointKeyInput,
    ) -> Result<EndpointKeyStatus, AppError> {
        let (origin, key) = checked_key(&input.url, &input.key)?;
        match os_set(&origin, &key).await? {
            Ok(()) => {
                // The keyring holds it now; an older in-memory key must not shadow it.
                self.session_keys.remove(&origin);
                Ok(EndpointKeyStatus::new(
                    origin,
                    Some(KeyStore::OsKeyring),
                    KeyringState::answered(),
                ))
            }
            Err(detail) if input.session_fallback => {
                self.session_keys.insert(origin.clone(), key);
                Ok(EndpointKeyStatus::new(
                    origin,
                    Some(KeyStore::Session),
                    KeyringState::silent(detail),
                ))
            }
            Err(detail) => Err(not_kept(&origin, &detail)),
        }
    }

    /// Where the key of the endpoint at `url` is kept, if anywhere; never the key. A key held in
    /// memory comes first: it is the one requests carry.
    pub async fn endpoint_key_status(&self, url: &str) -> Result<EndpointKeyStatus, AppError> {
        let status = keyring_status(url).await?;
        Ok(if self.session_keys.get(&status.origin).is_some() {
            EndpointKeyStatus::new(status.origin, Some(KeyStore::Session), status.keyring)
        } else {
            status
        })
    }

    /// Removes the endpoint's key from memory and from the OS keyring.
    pub async fn forget_endpoint_key(&self, url: &str) -> Result<EndpointKeyStatus, AppError> {
        let origin = origin_of(url)?;
        let in_memory = self.session_keys.remove(&origin);
        match keyring_forget(url).await {
            // The key requests carried is gone; the keyring's silence is reported, not raised.
            Err(e) if in_memory => Ok(EndpointKeyStatus::new(
                origin,
                None,
                KeyringState::silent(e.message),
            )),
            other => other,
        }
    }

    /// Holds `key` for the endpoint at `url` in memory for this process only: a shell's explicit
    /// fallback, such as the CLI's `KVGATE_API_KEY`. Returns the origin it is held under.
    pub fn keep_session_key(&self, url: &str, key: &str) -> Result<String, AppError> {
        let (origin, key) = checked_key(url, key)?;
        self.session_keys.insert(origin.clone(), key);
        Ok(origin)
    }

    /// The key requests to `url` carry: the in-memory one first (it was given explicitly for
    /// this process), then the OS keyring's. A keyring that does not answer means no key: a
    /// local server needs none, and a server that does answers 401, which the run records.
    pub(crate) async fn endpoint_key(&self, url: &str) -> Result<Option<String>, AppError> {
        let origin = origin_of(url)?;
        if let Some(key) = self.session_keys.get(&origin) {
            return Ok(Some(key));
        }
        Ok(match os_lookup(&origin).await? {
            Lookup::Found(key) => Some(key),
            Lookup::Absent | Lookup::Unavailable(_) => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_holds_a_key() {
        let input = EndpointKeyInput {
            url: "https://llm.example".into(),
            key: "sk-very-secret".into(),
            session_fallback: true,
        };
        assert!(!format!("{input:?}").contains("sk-very-secret"));
        let keys = SessionKeys::default();
        keys.insert("https://llm.example".into(), "sk-very-secret".into());
        assert_eq!(format!("{keys:?}"), "SessionKeys(1 kept)");
    }

    #[test]
    fn keys_are_checked_before_any_keyring_is_asked() {
        let ok = checked_key("http://127.0.0.1:1/v1", "  sk-abc  ").unwrap();
        assert_eq!(ok, ("http://127.0.0.1:1".into(), "sk-abc".into()));
        for (key, says) in [
            ("   ", "found nothing"),
            ("sk\nabc", "control"),
            ("sk-é", "non-ASCII"),
        ] {
            let err = checked_key("http://127.0.0.1:1", key).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidInput);
            assert!(err.message.contains(says), "{key:?}: {}", err.message);
        }
        let long = "k".repeat(MAX_KEY_BYTES + 1);
        let err = checked_key("http://127.0.0.1:1", &long).unwrap_err();
        assert!(
            err.message.contains("at most 4096 bytes, found 4097"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_key_is_filed_under_its_origin() {
        assert_eq!(
            origin_of(" http://127.0.0.1:8080/v1 ").unwrap(),
            "http://127.0.0.1:8080"
        );
        let err = origin_of("ftp://x").unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput);
        assert!(err.message.contains("base_url"), "{}", err.message);
    }
}
