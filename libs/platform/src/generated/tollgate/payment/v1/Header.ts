// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto


export interface Header {
  'name'?: (string);
  'value'?: (string);
}

export interface Header__Output {
  'name': (string);
  'value': (string);
}
