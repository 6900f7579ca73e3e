// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

export const Decision = {
  DECISION_UNSPECIFIED: 'DECISION_UNSPECIFIED',
  DECISION_ALLOW: 'DECISION_ALLOW',
  DECISION_INVALID_KEY: 'DECISION_INVALID_KEY',
  DECISION_SUBSCRIPTION_INACTIVE: 'DECISION_SUBSCRIPTION_INACTIVE',
  DECISION_DAILY_LIMIT_EXCEEDED: 'DECISION_DAILY_LIMIT_EXCEEDED',
  DECISION_MONTHLY_LIMIT_EXCEEDED: 'DECISION_MONTHLY_LIMIT_EXCEEDED',
  DECISION_RATE_LIMITED: 'DECISION_RATE_LIMITED',
  /**
   * Sign-in-with-x: the wallet is bound to no account (a top-up or a dashboard sign-in makes one).
   */
  DECISION_NO_ACCOUNT: 'DECISION_NO_ACCOUNT',
  /**
   * A credits-only plan whose balance does not cover the call's price.
   */
  DECISION_NO_CREDITS: 'DECISION_NO_CREDITS',
} as const;

export type Decision =
  | 'DECISION_UNSPECIFIED'
  | 0
  | 'DECISION_ALLOW'
  | 1
  | 'DECISION_INVALID_KEY'
  | 2
  | 'DECISION_SUBSCRIPTION_INACTIVE'
  | 3
  | 'DECISION_DAILY_LIMIT_EXCEEDED'
  | 4
  | 'DECISION_MONTHLY_LIMIT_EXCEEDED'
  | 5
  | 'DECISION_RATE_LIMITED'
  | 6
  /**
   * Sign-in-with-x: the wallet is bound to no account (a top-up or a dashboard sign-in makes one).
   */
  | 'DECISION_NO_ACCOUNT'
  | 7
  /**
   * A credits-only plan whose balance does not cover the call's price.
   */
  | 'DECISION_NO_CREDITS'
  | 8

export type Decision__Output = typeof Decision[keyof typeof Decision]
