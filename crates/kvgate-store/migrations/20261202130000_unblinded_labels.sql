-- Blind review: a pair's first label is given on sides A and B before the reveal; a relabel is
-- made after the reveal, knowing which side is the candidate, and is counted apart. Labels
-- recorded before this column existed: a relabel (an event that replaced a label) was made
-- after the reveal, a first label before it.
ALTER TABLE adjudications ADD COLUMN unblinded INTEGER NOT NULL DEFAULT 0 CHECK (unblinded IN (0, 1));

UPDATE adjudications SET unblinded = 1 WHERE EXISTS (
    SELECT 1 FROM audit_events e
    WHERE e.study_id = adjudications.study_id AND e.seq = adjudications.event_seq
      AND e.previous_json IS NOT NULL
);
