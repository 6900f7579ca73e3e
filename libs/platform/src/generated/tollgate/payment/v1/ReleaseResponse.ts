// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto


export interface ReleaseResponse {
}

export interface ReleaseResponse__Output {
}
