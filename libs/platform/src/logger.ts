import { format } from "node:util";
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

let consoleScrubbed = false;

/**
 * Libraries print to the console on their own (the x402 client warns with a facilitator's
 * URL inside the error text): a service's entry point routes those lines through the same
 * scrub as its log lines. Once per process; in-process test services leave the console alone.
 */
export function scrubConsole(): void {
  if (consoleScrubbed) return;
  consoleScrubbed = true;
  const to =
    (stream: NodeJS.WriteStream) =>
    (...args: unknown[]): void => {
      stream.write(`${scrubSecrets(format(...args))}\n`);
    };
  console.log = to(process.stdout);
  console.info = to(process.stdout);
  console.debug = to(process.stdout);
  console.warn = to(process.stderr);
  console.error = to(process.stderr);
}

/**
 * For a line a failure can repeat on every call (an outage): the returned check says to write it at
 * most once per `everyMs`, giving the number of lines skipped since (to write into it), and
 * `undefined` otherwise; so an outage is logged, not flooded, and a skipped line costs nothing.
 */
export function logSampler(everyMs: number): () => number | undefined {
  let last = Number.NEGATIVE_INFINITY;
  let skipped = 0;
  return () => {
    const now = performance.now();
    if (now - last < everyMs) {
      skipped++;
      return undefined;
    }
    last = now;
    const since = skipped;
    skipped = 0;
    return since;
  };
}
