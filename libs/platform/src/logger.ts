import { pino } from "pino";
import { scrubSecrets } from "./redact.ts";

export type Logger = pino.Logger;

/**
 * One JSON logger per service. Credentials can reach a log line through request
 * headers or error objects, so the usual places they hide are redacted here once
 * rather than remembered at every call site; and every line written is scrubbed of
 * the secrets the process read (readSecret), wherever they appear in it.
 */
export function createLogger(service: string): Logger {
  return pino({
    name: service,
    level: process.env.LOG_LEVEL ?? "info",
    base: { service },
    hooks: { streamWrite: scrubSecrets },
    redact: {
      paths: [
        "apiKey",
        "api_key",
        "secret",
        "privateKey",
        "token",
        "authorization",
        "*.authorization",
        "*.apiKey",
        "*.secret",
        "*.privateKey",
        "headers.authorization",
        'headers["payment-signature"]',
        "credentials",
      ],
      censor: "[redacted]",
    },
  });
}
