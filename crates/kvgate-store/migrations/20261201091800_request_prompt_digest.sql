-- The sha256 of what each request sent (messages, decoding parameters, output cap, stops; see
-- kvgate_core::pairing::prompt_sha256): a pair is formed only when both sides sent the same
-- prompt. NULL for rows stored before it was recorded and for other tools' rows; the analysis
-- recomputes it from the run's corpus and its manifest where it can, and says so where not.
ALTER TABLE run_requests ADD COLUMN prompt_sha256 TEXT
    CHECK (prompt_sha256 IS NULL OR (length(prompt_sha256) = 64 AND prompt_sha256 NOT GLOB '*[^0-9a-f]*'));

-- The analysis reads the digest with the other narrow columns: the covering index holds it too.
DROP INDEX run_requests_measured;
CREATE INDEX run_requests_measured ON run_requests (
    run_id, warmup, idx, repeat, item_id, status, planned_arrival_ms, dispatch_ms,
    first_token_ms, finish_ms, prompt_tokens, completion_tokens, verdict_accepted, prompt_sha256
);
