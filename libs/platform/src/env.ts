/** Small typed readers for service configuration from the environment. */
import { BIND_HOST_ENV } from "./env-table.ts";
/** A configuration the service must not start with; the message names the variable. */
export class ConfigError extends Error {}

export function envString(name: string, fallback: string): string {
  const value = process.env[name];
  return value === undefined || value === "" ? fallback : value;
}

export function envInt(name: string, fallback: number): number {
  const value = process.env[name];
  if (value === undefined || value === "") return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0) {
    throw new ConfigError(`${name} must be a non-negative integer, got "${value}"`);
  }
  return parsed;
}

export function envBool(name: string, fallback: boolean): boolean {
  const value = process.env[name];
  if (value === undefined || value === "") return fallback;
  return ["1", "true", "yes", "on"].includes(value.toLowerCase());
}

/** Host every server binds to: loopback unless the operator says otherwise. */
export function bindHost(): string {
  return envString(BIND_HOST_ENV.name, BIND_HOST_ENV.default);
}

/**
 * TRUST_PROXY's value as Express's `trust proxy` setting: a hop count (e.g. `1` behind one load
 * balancer) or a comma-separated list of proxy addresses/CIDRs. One parser for every HTTP service,
 * so the client address means the same thing at the gateway and the dashboard.
 */
export function parseTrustProxy(raw: string, name = "TRUST_PROXY"): number | string[] {
  const value = raw.trim();
  if (/^[0-9]+$/.test(value)) return Number(value);
  const list = value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const entry of list) {
    if (!/^[0-9a-fA-F.:]+(\/[0-9]{1,3})?$/.test(entry)) {
      throw new ConfigError(`${name} must be a hop count or a list of addresses/CIDRs, got "${entry}"`);
    }
  }
  return list;
}
