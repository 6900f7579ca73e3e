-- Operators' credit adjustments (issue 40): a grant gives credits, a deduct takes them back (never
-- below zero: quota-meter checks). Each is an audited ledger row: who (`operator`), why (`reason`),
-- when (`created_at`); `cause` is the adjustment's id, made by the operator's client, applied once.
ALTER TABLE credit_ledger DROP CONSTRAINT credit_ledger_kind_check;
ALTER TABLE credit_ledger
  ADD CONSTRAINT credit_ledger_kind_check CHECK (kind IN ('top_up', 'draw', 'refund', 'grant', 'deduct'));
ALTER TABLE credit_ledger ADD COLUMN operator text, ADD COLUMN reason text;
-- An adjustment id is one adjustment, whatever account or sign a retry names.
CREATE UNIQUE INDEX credit_ledger_one_adjustment ON credit_ledger (cause) WHERE kind IN ('grant', 'deduct');

-- An account a credits top-up made for a wallet without one: credits only, and no plan volume until
-- the wallet signs up on the dashboard (the sign-up policy applied), which moves it to the free plan.
ALTER TABLE accounts ADD COLUMN sign_up_pending boolean NOT NULL DEFAULT false;
