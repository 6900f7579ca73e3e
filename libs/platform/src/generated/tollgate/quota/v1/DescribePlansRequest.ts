// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto


export interface DescribePlansRequest {
}

export interface DescribePlansRequest__Output {
}
