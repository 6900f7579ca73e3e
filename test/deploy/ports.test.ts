// The mesh's ports. freePort (deploy/local/src/ports.ts): test workers start meshes at the same time,
// and a port one process picked but had not bound yet was picked again by another (EADDRINUSE at a
// service's start, once in a full run); a port is now claimed on the machine for a minute. The
// default ports (libs/platform/src/ports.ts): `pnpm start` again after a stop failed on
// 127.0.0.1:50054, inside Linux's ephemeral range, where a retrying client had connected to itself.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { EMBEDDED_POSTGRES_PORT, freePort } from "@tollgate/local";
import { DEFAULT_PORTS } from "@tollgate/platform";
import { describe, expect, it } from "vitest";

describe("freePort", () => {
  it("never hands out a port twice within a minute, in one process or across processes", async () => {
    const here = await Promise.all(Array.from({ length: 100 }, () => freePort()));
    expect(new Set(here).size).toBe(100);
    // Another process, at the same time as this one takes 100 more.
    const ports = new URL("../../deploy/local/src/ports.ts", import.meta.url).href;
    const script = `import(${JSON.stringify(ports)}).then(async ({ freePort }) => { const ps = []; for (let i = 0; i < 100; i++) ps.push(await freePort()); console.log(JSON.stringify(ps)); });`;
    const [there, more] = await Promise.all([
      promisify(execFile)(process.execPath, ["--input-type=module", "-e", script]).then(
        ({ stdout }) => JSON.parse(stdout) as number[],
      ),
      Promise.all(Array.from({ length: 100 }, () => freePort())),
    ]);
    expect(new Set([...here, ...there, ...more]).size).toBe(300);
  });
});

describe("the default ports", () => {
  const all = [
    ...Object.values(DEFAULT_PORTS).flatMap((p) => Object.values(p) as number[]),
    EMBEDDED_POSTGRES_PORT,
  ];

  it("lie below every common OS's ephemeral range, so no outgoing connection can hold one", () => {
    // Linux's (this machine's, and its default), macOS's and Windows' (49152-65535) all start at or
    // above 32768.
    const [linuxFrom] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/);
    for (const port of all) {
      expect(port).toBeLessThan(Math.min(32_768, Number(linuxFrom)));
    }
    expect(new Set(all).size).toBe(all.length);
  });

  it("are the ones the README lists for `pnpm start`", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8").replace(/\s+/g, " ");
    const start = readme.slice(readme.indexOf("**`pnpm start`**"), readme.indexOf("**`pnpm test`**"));
    expect(start).toContain(`PGlite on \`127.0.0.1:${EMBEDDED_POSTGRES_PORT}\``);
    expect(start).toContain(`gateway \`:${DEFAULT_PORTS.gateway.http}\``);
    for (const name of ["quota-meter", "payment-verifier", "rpc-proxy", "settlement-worker"] as const) {
      expect(start).toContain(`${name} \`:${DEFAULT_PORTS[name].grpc}\``);
    }
    expect(start).toContain(`[dashboard](#dashboard) \`:${DEFAULT_PORTS.dashboard.http}\``);
    const metrics = Object.values(DEFAULT_PORTS).map((p) => p.metrics);
    expect(start).toContain(`\`/metrics\` on \`:${Math.min(...metrics)}\`–\`:${Math.max(...metrics)}\``);
    expect(Math.max(...metrics) - Math.min(...metrics)).toBe(metrics.length - 1);
  });
});
