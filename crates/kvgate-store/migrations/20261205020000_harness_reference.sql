-- An evaluation harness's item, as the reviewer sees it: the prompt the harness sent and the
-- target it scored against, kept with each imported harness row (NULL for every other row). The
-- reviewer of a harness pair reads them beside both answers; KV Gate's own runs have their
-- fixture item instead.
ALTER TABLE run_requests ADD COLUMN harness_prompt TEXT;
ALTER TABLE run_requests ADD COLUMN harness_target TEXT
    CHECK ((harness_target IS NULL) = (harness_prompt IS NULL));
