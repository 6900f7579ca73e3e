import { readFileSync } from "node:fs";

/**
 * Reads a secret from the environment variable `name`, or from the file named by
 * `${name}_FILE` (how Kubernetes mounts secrets). Secrets never come from config
 * files in the repo and are never logged.
 */
export function readSecret(name: string): string | undefined {
  const direct = process.env[name];
  if (direct) return direct;
  const file = process.env[`${name}_FILE`];
  if (file) return readFileSync(file, "utf8").trim();
  return undefined;
}
