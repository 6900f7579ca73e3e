// Original file: ../../proto/tollgate/settlement/v1/settlement_worker.proto

import type { Difference as _tollgate_settlement_v1_Difference, Difference__Output as _tollgate_settlement_v1_Difference__Output } from '../../../tollgate/settlement/v1/Difference.ts';
import type { Long } from '@grpc/proto-loader';

export interface ReconcileResponse {
  'paymentNetwork'?: (string);
  'asset'?: (string);
  'payTo'?: (string);
  'fromBlock'?: (number | string | Long);
  'toBlock'?: (number | string | Long);
  'transfers'?: (number);
  'transferTotal'?: (string);
  'ledgerEntries'?: (number);
  'ledgerTotal'?: (string);
  'differences'?: (_tollgate_settlement_v1_Difference)[];
}

export interface ReconcileResponse__Output {
  'paymentNetwork': (string);
  'asset': (string);
  'payTo': (string);
  'fromBlock': (number);
  'toBlock': (number);
  'transfers': (number);
  'transferTotal': (string);
  'ledgerEntries': (number);
  'ledgerTotal': (string);
  'differences': (_tollgate_settlement_v1_Difference__Output)[];
}
