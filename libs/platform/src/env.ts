// The configuration error every service exits on, and the TRUST_PROXY parser the HTTP services share;
// the variables themselves and their readers are declared in env-table.ts.

/** A configuration the service must not start with; the message names the variable. */
export class ConfigError extends Error {}

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
