// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto


export interface DescribeMethodsRequest {
}

export interface DescribeMethodsRequest__Output {
}
