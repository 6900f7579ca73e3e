// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto

import type { PaymentMethod as _tollgate_payment_v1_PaymentMethod, PaymentMethod__Output as _tollgate_payment_v1_PaymentMethod__Output } from '../../../tollgate/payment/v1/PaymentMethod.ts';

export interface DescribeMethodsResponse {
  'methods'?: (_tollgate_payment_v1_PaymentMethod)[];
}

export interface DescribeMethodsResponse__Output {
  'methods': (_tollgate_payment_v1_PaymentMethod__Output)[];
}
