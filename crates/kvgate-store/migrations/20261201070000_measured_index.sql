-- The analysis reads twelve narrow columns of every measured request. Request rows are wide
-- (output text, chunk times, the verdict), so reading them from the table means reading most of
-- the file; this covering index holds exactly the columns the analysis reads, in run and plan
-- order, so the analysis reads the index alone.
CREATE INDEX run_requests_measured ON run_requests (
    run_id, warmup, idx, repeat, item_id, status, planned_arrival_ms, dispatch_ms,
    first_token_ms, finish_ms, prompt_tokens, completion_tokens, verdict_accepted
);
