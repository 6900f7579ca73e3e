import { readFileSync } from "node:fs";
import { rememberSecret } from "./redact.ts";

function readRaw(name: string): string | undefined {
  const direct = process.env[name];
  if (direct) return direct;
  const file = process.env[`${name}_FILE`];
  if (file) return readFileSync(file, "utf8").trim() || undefined;
  return undefined;
}

/**
 * Reads a secret from the environment variable `name`, or from the file named by
 * `${name}_FILE` (how Kubernetes mounts secrets). Secrets never come from config
 * files in the repo and are never logged: every value read here is remembered by the
 * logger's redaction (redact.ts), whatever later quotes it. URLs that may carry a
 * password or a provider key (REDIS_URL, NATS_URL, node URLs) are read here too.
 */
export function readSecret(name: string): string | undefined {
  const value = readRaw(name);
  if (value) rememberSecret(value);
  return value;
}
