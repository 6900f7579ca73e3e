-- The plan an account is on (issue 34): 'standard' (spec 8's API-key plan, what the operator gives)
-- or 'free' (what a first dashboard sign-in gives). The limits stay the account's own columns, set
-- from the plan's figures when it joins one. Accounts made before this, wallet sign-ups included,
-- were given the standard figures and stay on 'standard'; the operator moves one with
-- `pnpm tollgate account update ID --plan free`. Additive: the previous release's inserts get
-- the default.
ALTER TABLE accounts
  ADD COLUMN plan text NOT NULL DEFAULT 'standard' CHECK (plan IN ('standard', 'free'));
