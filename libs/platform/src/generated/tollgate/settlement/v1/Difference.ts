// Original file: ../../proto/tollgate/settlement/v1/settlement_worker.proto

import type { Long } from '@grpc/proto-loader';

export interface Difference {
  /**
   * "missing_in_ledger": a transfer to the receiver no settled entry records.
   * "not_on_chain": a settled entry whose transaction moved nothing to the receiver in the range.
   * "amount_mismatch": the transfer and the ledger disagree on the amount.
   * "duplicate_in_ledger": several settled entries name one transaction.
   */
  'kind'?: (string);
  'transaction'?: (string);
  /**
   * 0 when the transaction was not found on chain.
   */
  'block'?: (number | string | Long);
  'chainAmount'?: (string);
  'ledgerAmount'?: (string);
  'ledgerIds'?: (string)[];
  'payer'?: (string);
}

export interface Difference__Output {
  /**
   * "missing_in_ledger": a transfer to the receiver no settled entry records.
   * "not_on_chain": a settled entry whose transaction moved nothing to the receiver in the range.
   * "amount_mismatch": the transfer and the ledger disagree on the amount.
   * "duplicate_in_ledger": several settled entries name one transaction.
   */
  'kind': (string);
  'transaction': (string);
  /**
   * 0 when the transaction was not found on chain.
   */
  'block': (number);
  'chainAmount': (string);
  'ledgerAmount': (string);
  'ledgerIds': (string)[];
  'payer': (string);
}
