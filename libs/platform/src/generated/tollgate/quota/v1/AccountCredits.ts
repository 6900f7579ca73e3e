// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { OpenCreditLease as _tollgate_quota_v1_OpenCreditLease, OpenCreditLease__Output as _tollgate_quota_v1_OpenCreditLease__Output } from '../../../tollgate/quota/v1/OpenCreditLease.ts';
import type { Long } from '@grpc/proto-loader';

export interface AccountCredits {
  /**
   * The balance as the account is shown it (the hot copy's with what open leases still hold; the
   * ledger's when the copy is away), atomic units.
   */
  'balance'?: (number | string | Long);
  /**
   * The balance the ledger in PostgreSQL holds (draws reach it from the usage stream, later).
   */
  'ledgerBalance'?: (number | string | Long);
  /**
   * Credit leases gateways hold for the account's next calls (empty when the copy is away).
   */
  'openLeases'?: (_tollgate_quota_v1_OpenCreditLease)[];
}

export interface AccountCredits__Output {
  /**
   * The balance as the account is shown it (the hot copy's with what open leases still hold; the
   * ledger's when the copy is away), atomic units.
   */
  'balance': (number);
  /**
   * The balance the ledger in PostgreSQL holds (draws reach it from the usage stream, later).
   */
  'ledgerBalance': (number);
  /**
   * Credit leases gateways hold for the account's next calls (empty when the copy is away).
   */
  'openLeases': (_tollgate_quota_v1_OpenCreditLease__Output)[];
}
