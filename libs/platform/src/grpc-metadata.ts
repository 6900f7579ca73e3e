/** Trailing-metadata keys that carry a catalog error across a gRPC hop (a unary call's or an Exchange message's). */
export const ERROR_CODE_KEY = "tollgate-error-code";
export const ERROR_DETAIL_KEY = "tollgate-error-detail";
