-- Wallet sign-in (the dashboard, EIP-4361): the address an account was created for. One account per
-- address; an account created by the operator has none. Additive: the previous release ignores it.
CREATE TABLE account_wallets (
  address    text        PRIMARY KEY CHECK (address ~ '^0x[0-9a-f]{40}$'),
  account_id text        NOT NULL UNIQUE REFERENCES accounts (id),
  created_at timestamptz NOT NULL
);
