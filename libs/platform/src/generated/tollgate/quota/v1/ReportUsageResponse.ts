// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto


export interface ReportUsageResponse {
  'accepted'?: (number);
}

export interface ReportUsageResponse__Output {
  'accepted': (number);
}
