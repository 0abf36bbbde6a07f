-- The review finds one pair's judged requests by item without walking a run: judged rows only
-- (a load run's rows carry no verdict and are not indexed).
CREATE INDEX run_requests_judged_by_item ON run_requests (run_id, item_id, repeat)
WHERE item_id IS NOT NULL AND verdict_accepted IS NOT NULL AND warmup = 0;
