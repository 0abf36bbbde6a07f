-- The analysis reads every measured request through the covering index `run_requests_measured`.
-- The two queueing figures it came to read later (the client delay, and the engine's own
-- per-token time out of `engine_timings_json`) were not in it, so every read fell back to the
-- table's rows, whole outputs and chunk times included: at a million requests the load took
-- twice as long. The engine's per-token time gets its own column, written with the row from the
-- same JSON (a number at `$.predicted_per_token_ms`, else NULL), and both join the index.
ALTER TABLE run_requests ADD COLUMN engine_itl_ms REAL;

-- Rows stored before: the same value, derived from the row's own stored timings. The trigger that
-- keeps a finished run's requests unchanged is lifted for this one derived column and restored.
DROP TRIGGER run_requests_finished_no_update;
UPDATE run_requests
SET engine_itl_ms =
    CASE WHEN json_valid(engine_timings_json) THEN
        CASE WHEN json_type(engine_timings_json, '$.predicted_per_token_ms') IN ('integer', 'real')
        THEN json_extract(engine_timings_json, '$.predicted_per_token_ms') END
    END
WHERE engine_timings_json IS NOT NULL;
CREATE TRIGGER run_requests_finished_no_update
BEFORE UPDATE ON run_requests
WHEN (SELECT state FROM runs WHERE id = OLD.run_id) <> 'running'
  OR (SELECT state FROM runs WHERE id = NEW.run_id) <> 'running'
BEGIN
    SELECT RAISE(ABORT, 'run is finished: its requests cannot change');
END;

DROP INDEX run_requests_measured;
CREATE INDEX run_requests_measured ON run_requests (
    run_id, warmup, idx, repeat, item_id, status, planned_arrival_ms, dispatch_ms,
    first_token_ms, finish_ms, prompt_tokens, completion_tokens, verdict_accepted, prompt_sha256,
    client_delay_ms, engine_itl_ms
);
