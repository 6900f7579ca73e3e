-- Released calls (a verified payment whose call got no answer: nothing owed, nothing moved) leave
-- the permanent ledger: a payer reusing one authorization on a request refused after Verify made one
-- permanent row per attempt, for free. They are kept as samples, at most a bound per payer per UTC
-- hour (LEDGER_RELEASED_PER_HOUR), and pruned after LEDGER_RELEASED_RETENTION_DAYS.
-- The ledger's columns (NOT NULL and defaults included), outcome always 'released'.
CREATE TABLE released_calls (LIKE settlements INCLUDING DEFAULTS);
ALTER TABLE released_calls ADD PRIMARY KEY (id);
ALTER TABLE released_calls ADD CHECK (outcome = 'released');
ALTER TABLE released_calls ADD CHECK (amount >= 0);
CREATE INDEX released_calls_by_payer ON released_calls (lower(payer), occurred_at DESC, id DESC);
CREATE INDEX released_calls_by_time ON released_calls (occurred_at DESC, id DESC);

-- One row per payer (lower case) and UTC hour: how many samples that hour keeps. Its row lock
-- serialises the replicas writing one payer's hour, so the bound is exact.
CREATE TABLE released_windows (
  payer        text        NOT NULL,
  window_start timestamptz NOT NULL,
  kept         integer     NOT NULL DEFAULT 0,
  PRIMARY KEY (payer, window_start)
);
CREATE INDEX released_windows_by_time ON released_windows (window_start);

-- The released rows written before: moved, counted in their hours, then pruned like the rest.
INSERT INTO released_calls SELECT * FROM settlements WHERE outcome = 'released';
INSERT INTO released_windows (payer, window_start, kept)
SELECT lower(payer), date_trunc('hour', occurred_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', count(*)
FROM released_calls GROUP BY 1, 2;
DELETE FROM settlements WHERE outcome = 'released';
