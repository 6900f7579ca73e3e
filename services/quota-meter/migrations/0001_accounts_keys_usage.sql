-- quota-meter's system of record. Redis holds a hot copy of accounts and live keys (what the Lua
-- scripts read) and the quota windows; everything here survives a Redis loss and re-seeds it.

-- An account and its plan. The API-key plan of spec 8 is one plan whose figures are raised per
-- account, so the plan is these columns (0 = uncapped; burst 0 = the service default).
CREATE TABLE accounts (
  id               text        PRIMARY KEY,
  name             text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  status           text        NOT NULL CHECK (status IN ('active', 'past_due', 'canceled', 'suspended')),
  daily_limit      bigint      NOT NULL CHECK (daily_limit >= 0),
  monthly_limit    bigint      NOT NULL CHECK (monthly_limit >= 0),
  burst_per_second integer     NOT NULL CHECK (burst_per_second >= 0),
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
);

-- API keys, stored only as HMAC-SHA256(pepper, key); the key itself is shown once and never kept.
-- last_used_at is folded from the usage stream (never written on the per-call path).
CREATE TABLE api_keys (
  id           text        PRIMARY KEY,
  account_id   text        NOT NULL REFERENCES accounts (id),
  hash         bytea       NOT NULL UNIQUE CHECK (length(hash) = 32),
  prefix       text        NOT NULL,
  created_at   timestamptz NOT NULL,
  last_used_at timestamptz,
  revoked_at   timestamptz
);
CREATE INDEX api_keys_by_account ON api_keys (account_id, created_at);
CREATE INDEX api_keys_revoked ON api_keys (revoked_at) WHERE revoked_at IS NOT NULL;

-- Usage per account and UTC day, folded from tollgate.usage.v2. No foreign key: usage is a fact
-- the gateway reported, recorded whatever happens to the account. `counted` = calls counted in
-- the quota windows (metered and not refunded): what the windows are rebuilt from.
CREATE TABLE usage_daily (
  account_id text   NOT NULL,
  day        date   NOT NULL,
  requests   bigint NOT NULL CHECK (requests >= 0),
  errors     bigint NOT NULL CHECK (errors >= 0),
  counted    bigint NOT NULL CHECK (counted >= 0),
  PRIMARY KEY (account_id, day)
);
CREATE INDEX usage_daily_by_day ON usage_daily (day);

-- Every usage batch folded, by the gateway's batch id (the event id): a redelivered or replayed
-- batch finds its id here and changes nothing. Kept longer than the stream keeps messages.
CREATE TABLE usage_batches (
  id        text        PRIMARY KEY,
  calls     integer     NOT NULL,
  folded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX usage_batches_by_time ON usage_batches (folded_at);
