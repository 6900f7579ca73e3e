-- Prepaid credits (issue 31), in USDC atomic units. The ledger is append-only: a top-up (a settled
-- payment, `cause` = the mesh's settlement id), a draw (the credit-drawing calls of one usage batch
-- for one account, `cause` = 'usage:' || batch id) or a refund (an operator's). The balance is the
-- sum; Redis holds its hot copy (seeder.ts rebuilds it from here).
-- `generation` is the hot copy's seed generation current when the row was written (credit_seeds),
-- and `unapplied` the part of the row the hot copy of that generation does not hold yet (draws made
-- in an older copy, lost with it): applied once when Redis holds that generation (store.applyCredits).
CREATE TABLE credit_ledger (
  id          bigserial   PRIMARY KEY,
  account_id  text        NOT NULL REFERENCES accounts (id),
  kind        text        NOT NULL CHECK (kind IN ('top_up', 'draw', 'refund')),
  amount      bigint      NOT NULL CHECK (amount > 0),
  cause       text        NOT NULL,
  -- What paid (top-ups): scheme, settlement network (CAIP-2), transaction.
  scheme          text,
  payment_network text,
  "transaction"   text,
  generation  text        NOT NULL DEFAULT '',
  unapplied   bigint      NOT NULL DEFAULT 0,
  created_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (cause, account_id, kind)
);
CREATE INDEX credit_ledger_by_account ON credit_ledger (account_id, created_at);

-- Each seed of the hot copy: its mark (the same string Redis holds as `seeded`), written in the
-- transaction that read the balances it seeded (under a SHARE lock on credit_ledger, so no ledger
-- row commits between the read and this row).
CREATE TABLE credit_seeds (
  id         bigserial   PRIMARY KEY,
  generation text        NOT NULL UNIQUE,
  seeded_at  timestamptz NOT NULL DEFAULT now()
);

-- Calls are paid from credits only (no plan windows): set by the operator.
ALTER TABLE accounts ADD COLUMN credits_only boolean NOT NULL DEFAULT false;

-- A settlement tops up one account, once.
CREATE UNIQUE INDEX credit_ledger_one_top_up ON credit_ledger (cause) WHERE kind = 'top_up';
