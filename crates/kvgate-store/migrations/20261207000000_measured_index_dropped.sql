-- The analysis reads a finished run's measured requests from the run's columns (`run_columns`),
-- written in the transaction that finishes it. Only runs finished before the columns existed are
-- read from their rows. The covering index `run_requests_measured` kept those reads off the
-- rows' outputs and chunk times, at the price of a second copy of sixteen columns of every row
-- written: 75 MB at a million requests, written to the log and again to the file, and about a
-- twentieth of the import's inserting time. Those older runs are read through the primary key
-- and their rows, in the same order.
DROP INDEX run_requests_measured;
