-- The payment ledger: every settlement outcome of tollgate.settlement.v2 (and v1), once, keyed by
-- the event id the mesh generated (payment-verifier's reservation token plus the outcome; the
-- settlement worker's own ids for channel operations). Rows are never updated or deleted.
CREATE TABLE settlements (
  id              text          PRIMARY KEY,
  outcome         text          NOT NULL CHECK (outcome IN ('settled', 'accrued', 'failed', 'released', 'claimed', 'channel_settled', 'refunded')),
  request_id      text,
  endpoint        text,
  network         text,
  scheme          text          NOT NULL,
  -- As the event gave it; listed and reconciled by lower(payer).
  payer           text          NOT NULL,
  -- Atomic units of `asset` (USDC has 6 decimals; 78 digits hold any uint256).
  amount          numeric(78, 0) NOT NULL CHECK (amount >= 0),
  asset           text          NOT NULL,
  -- The settlement chain, CAIP-2 (eip155:8453).
  payment_network text          NOT NULL,
  "transaction"   text,
  channel         text,
  cumulative      numeric(78, 0),
  reason          text,
  occurred_at     timestamptz   NOT NULL,
  recorded_at     timestamptz   NOT NULL DEFAULT now(),
  -- The JetStream sequence it arrived with (audit: where in the stream it came from).
  stream_seq      bigint        NOT NULL
);
CREATE INDEX settlements_by_payer ON settlements (lower(payer), occurred_at DESC, id DESC);
CREATE INDEX settlements_by_time ON settlements (occurred_at DESC, id DESC);
CREATE INDEX settlements_by_channel ON settlements (channel, occurred_at DESC, id DESC) WHERE channel IS NOT NULL;
CREATE INDEX settlements_by_transaction ON settlements (lower("transaction")) WHERE "transaction" IS NOT NULL;
