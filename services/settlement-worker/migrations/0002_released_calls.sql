-- Released calls (a verified payment whose call got no answer: nothing owed, nothing moved) leave
-- the permanent ledger: a payer reusing one authorization on a request refused after Verify made one
-- permanent row per attempt, for free. They are kept as samples, at most a bound per payer per UTC
-- hour (LEDGER_RELEASED_PER_HOUR), and pruned after LEDGER_RELEASED_RETENTION_DAYS.
CREATE TABLE released_calls (
  id              text          PRIMARY KEY,
  outcome         text          NOT NULL DEFAULT 'released' CHECK (outcome = 'released'),
  request_id      text,
  endpoint        text,
  network         text,
  scheme          text          NOT NULL,
  payer           text          NOT NULL,
  amount          numeric(78, 0) NOT NULL CHECK (amount >= 0),
  asset           text          NOT NULL,
  payment_network text          NOT NULL,
  "transaction"   text,
  channel         text,
  cumulative      numeric(78, 0),
  reason          text,
  occurred_at     timestamptz   NOT NULL,
  recorded_at     timestamptz   NOT NULL DEFAULT now(),
  stream_seq      bigint        NOT NULL
);
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
INSERT INTO released_calls (id, request_id, endpoint, network, scheme, payer, amount, asset,
  payment_network, "transaction", channel, cumulative, reason, occurred_at, recorded_at, stream_seq)
SELECT id, request_id, endpoint, network, scheme, payer, amount, asset, payment_network,
  "transaction", channel, cumulative, reason, occurred_at, recorded_at, stream_seq
FROM settlements WHERE outcome = 'released';
INSERT INTO released_windows (payer, window_start, kept)
SELECT lower(payer), date_trunc('hour', occurred_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', count(*)
FROM released_calls GROUP BY 1, 2;
DELETE FROM settlements WHERE outcome = 'released';
