export * from "./account-api.ts";
export * from "./endpoints.ts";
export * from "./errors.ts";
export * from "./formats.ts";
export * from "./http-headers.ts";
export * from "./networks.ts";
export * from "./plans.ts";
export * from "./validate.ts";
