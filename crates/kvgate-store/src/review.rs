//! The review queue's seed, the audit chain and the adjudications it records.

use kvgate_core::review::{event_hash, AuditEvent, AuditKind, GENESIS};
use serde_json::Value;
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, Sqlite, Transaction};

use crate::{now_rfc3339, Store, StoreError};

/// The current label of one pair, as the adjudications table holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdjudicationRow {
    pub pair_id: String,
    pub label: String,
    pub note: String,
    pub labelled_by: String,
    pub labelled_at: String,
    pub event_seq: i64,
    /// Given after the pair was revealed (a relabel): counted apart from the blind labels.
    pub unblinded: bool,
}

fn event_from_row(row: &SqliteRow) -> Result<AuditEvent, StoreError> {
    let seq: i64 = row.try_get("seq")?;
    let kind: String = row.try_get("kind")?;
    let corrupt =
        |column: &'static str, expected: &'static str, found: String| StoreError::Corrupt {
            table: "audit_events",
            row: seq,
            column,
            expected,
            found,
        };
    let kind = AuditKind::parse(&kind).ok_or_else(|| {
        corrupt(
            "kind",
            "label, signoff, decision or intervention",
            kind.clone(),
        )
    })?;
    let payload: String = row.try_get("payload_json")?;
    let previous: Option<String> = row.try_get("previous_json")?;
    Ok(AuditEvent {
        seq,
        at: row.try_get("at")?,
        actor: row.try_get("actor")?,
        kind,
        subject: row.try_get("subject")?,
        payload: serde_json::from_str(&payload)
            .map_err(|e| corrupt("payload_json", "JSON", e.to_string()))?,
        previous: previous
            .map(|p| serde_json::from_str(&p))
            .transpose()
            .map_err(|e| corrupt("previous_json", "JSON", e.to_string()))?,
        prev_hash: row.try_get("prev_hash")?,
        hash: row.try_get("hash")?,
    })
}

/// Appends one event after the study's last one, inside `tx`.
#[allow(clippy::too_many_arguments)]
async fn append_event(
    tx: &mut Transaction<'_, Sqlite>,
    study_id: i64,
    actor: &str,
    kind: AuditKind,
    subject: &str,
    payload: &Value,
    previous: Option<&Value>,
) -> Result<AuditEvent, StoreError> {
    let last: Option<(i64, String)> = sqlx::query_as(
        "SELECT seq, hash FROM audit_events WHERE study_id = ? ORDER BY seq DESC LIMIT 1",
    )
    .bind(study_id)
    .fetch_optional(&mut **tx)
    .await?;
    let (seq, prev_hash) = match last {
        Some((seq, hash)) => (seq + 1, hash),
        None => (1, GENESIS.to_owned()),
    };
    let at = now_rfc3339();
    let hash = event_hash(
        study_id, seq, &at, actor, kind, subject, payload, previous, &prev_hash,
    );
    sqlx::query(
        "INSERT INTO audit_events (study_id, seq, at, actor, kind, subject, payload_json, \
         previous_json, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(study_id)
    .bind(seq)
    .bind(&at)
    .bind(actor)
    .bind(kind.as_str())
    .bind(subject)
    .bind(payload.to_string())
    .bind(previous.map(Value::to_string))
    .bind(&prev_hash)
    .bind(&hash)
    .execute(&mut **tx)
    .await?;
    Ok(AuditEvent {
        seq,
        at,
        actor: actor.to_owned(),
        kind,
        subject: subject.to_owned(),
        payload: payload.clone(),
        previous: previous.cloned(),
        prev_hash,
        hash,
    })
}

impl Store {
    /// The study's review seed, when one is recorded; reads only.
    pub async fn recorded_review_seed(&self, study_id: i64) -> Result<Option<String>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT seed FROM review_queues WHERE study_id = ?")
                .bind(study_id)
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    /// The seed of the study's blind order, recorded with `fresh` the first time it is asked.
    pub async fn review_seed(&self, study_id: i64, fresh: &str) -> Result<String, StoreError> {
        // Recorded once: a read after that (no write transaction per pair shown).
        if let Some(seed) = self.recorded_review_seed(study_id).await? {
            return Ok(seed);
        }
        sqlx::query(
            "INSERT OR IGNORE INTO review_queues (study_id, seed, created_at) VALUES (?, ?, ?)",
        )
        .bind(study_id)
        .bind(fresh)
        .bind(now_rfc3339())
        .execute(&self.pool)
        .await?;
        Ok(
            sqlx::query_scalar("SELECT seed FROM review_queues WHERE study_id = ?")
                .bind(study_id)
                .fetch_one(&self.pool)
                .await?,
        )
    }

    /// Whether the pair has a label (then its sides have been revealed to the reviewer).
    pub async fn pair_labelled(&self, study_id: i64, pair_id: &str) -> Result<bool, StoreError> {
        let found: i64 = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM adjudications WHERE study_id = ? AND pair_id = ?)",
        )
        .bind(study_id)
        .bind(pair_id)
        .fetch_one(&self.pool)
        .await?;
        Ok(found != 0)
    }

    /// Records a label on a pair: one audit event (with the label it replaces) and the pair's
    /// current row, in one transaction. `unblinded` (recorded in the event's payload and the
    /// row) must say whether the pair was already labelled: a first label is blind, a relabel is
    /// made after the reveal. When another label landed since the caller looked, the label is
    /// refused and nothing is written.
    #[allow(clippy::too_many_arguments)]
    pub async fn record_label(
        &self,
        study_id: i64,
        pair_id: &str,
        label: &str,
        note: &str,
        actor: &str,
        unblinded: bool,
        extra: Value,
    ) -> Result<AuditEvent, StoreError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let current: Option<(String, String)> = sqlx::query_as(
            "SELECT label, note FROM adjudications WHERE study_id = ? AND pair_id = ?",
        )
        .bind(study_id)
        .bind(pair_id)
        .fetch_optional(&mut *tx)
        .await?;
        if current.is_some() != unblinded {
            return Err(StoreError::Invalid {
                entity: "pair",
                key: pair_id.to_owned(),
                reason: if unblinded {
                    "has no label yet: its first label is given blind".to_owned()
                } else {
                    "was labelled meanwhile, and revealed: label it again".to_owned()
                },
            });
        }
        let previous =
            current.map(|(label, note)| serde_json::json!({"label": label, "note": note}));
        let mut payload = serde_json::json!({"label": label, "note": note, "unblinded": unblinded});
        if let (Some(p), Value::Object(extra)) = (payload.as_object_mut(), extra) {
            p.extend(extra);
        }
        let event = append_event(
            &mut tx,
            study_id,
            actor,
            AuditKind::Label,
            pair_id,
            &payload,
            previous.as_ref(),
        )
        .await?;
        sqlx::query(
            "INSERT INTO adjudications (study_id, pair_id, label, note, labelled_by, labelled_at, event_seq, unblinded) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (study_id, pair_id) DO UPDATE SET \
             label = excluded.label, note = excluded.note, labelled_by = excluded.labelled_by, \
             labelled_at = excluded.labelled_at, event_seq = excluded.event_seq, \
             unblinded = excluded.unblinded",
        )
        .bind(study_id)
        .bind(pair_id)
        .bind(label)
        .bind(note)
        .bind(actor)
        .bind(&event.at)
        .bind(event.seq)
        .bind(unblinded)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(event)
    }

    /// Appends an event that changes no table but the chain (sign-offs and decisions keep
    /// their state in the chain itself).
    pub async fn append_audit_event(
        &self,
        study_id: i64,
        actor: &str,
        kind: AuditKind,
        subject: &str,
        payload: &Value,
    ) -> Result<AuditEvent, StoreError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let previous: Option<String> = sqlx::query_scalar(
            "SELECT payload_json FROM audit_events WHERE study_id = ? AND kind = ? AND subject = ? \
             ORDER BY seq DESC LIMIT 1",
        )
        .bind(study_id)
        .bind(kind.as_str())
        .bind(subject)
        .fetch_optional(&mut *tx)
        .await?;
        let previous: Option<Value> = previous.and_then(|p| serde_json::from_str(&p).ok());
        let event = append_event(
            &mut tx,
            study_id,
            actor,
            kind,
            subject,
            payload,
            previous.as_ref(),
        )
        .await?;
        tx.commit().await?;
        Ok(event)
    }

    /// Whether a finished quality run of the study's cell judged the item (a measured request
    /// with a verdict).
    pub async fn item_judged(
        &self,
        study_id: i64,
        cell: &str,
        item_id: &str,
    ) -> Result<bool, StoreError> {
        let found: i64 = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM runs r JOIN manifests m ON m.id = r.manifest_id \
             JOIN run_requests q ON q.run_id = r.id AND q.warmup = 0 \
             WHERE r.study_id = ? AND m.cell = ? AND r.kind = 'quality' AND r.state != 'running' \
             AND q.item_id = ? AND q.verdict_accepted IS NOT NULL)",
        )
        .bind(study_id)
        .bind(cell)
        .bind(item_id)
        .fetch_one(&self.pool)
        .await?;
        Ok(found != 0)
    }

    /// The study's audit chain, in order.
    pub async fn audit_events(&self, study_id: i64) -> Result<Vec<AuditEvent>, StoreError> {
        let rows = sqlx::query(
            "SELECT seq, at, actor, kind, subject, payload_json, previous_json, prev_hash, hash \
             FROM audit_events WHERE study_id = ? ORDER BY seq",
        )
        .bind(study_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(event_from_row).collect()
    }

    /// The current label of every labelled pair of the study.
    pub async fn adjudications(&self, study_id: i64) -> Result<Vec<AdjudicationRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT pair_id, label, note, labelled_by, labelled_at, event_seq, unblinded FROM adjudications \
             WHERE study_id = ? ORDER BY pair_id",
        )
        .bind(study_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(adjudication_from_row).collect()
    }

    /// The current label of one pair, when it has one.
    pub async fn adjudication(
        &self,
        study_id: i64,
        pair_id: &str,
    ) -> Result<Option<AdjudicationRow>, StoreError> {
        let row = sqlx::query(
            "SELECT pair_id, label, note, labelled_by, labelled_at, event_seq, unblinded FROM adjudications \
             WHERE study_id = ? AND pair_id = ?",
        )
        .bind(study_id)
        .bind(pair_id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(adjudication_from_row).transpose()
    }
}

fn adjudication_from_row(r: &SqliteRow) -> Result<AdjudicationRow, StoreError> {
    Ok(AdjudicationRow {
        pair_id: r.try_get("pair_id")?,
        label: r.try_get("label")?,
        note: r.try_get("note")?,
        labelled_by: r.try_get("labelled_by")?,
        labelled_at: r.try_get("labelled_at")?,
        event_seq: r.try_get("event_seq")?,
        unblinded: r.try_get("unblinded")?,
    })
}
