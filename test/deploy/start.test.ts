// `pnpm start` stopped and started again at once, several times in a row (issue 41: the second start
// failed twice in a row with EADDRINUSE on 127.0.0.1:50054, a port inside Linux's ephemeral range
// that a client retrying it while the worker was down had connected to itself). The launcher runs as
// `pnpm start` runs it, on the default ports, with the machine's Redis and NATS and the embedded
// PostgreSQL; only its state folder is a temporary one. Fails if anything else on this machine holds
// a default port (a developer's own `pnpm start`): the launcher's output then names the holder.
// Each round prints how long the start took (docs/benchmarks.md quotes it); nothing asserts it.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { createAdminClient } from "@tollgate/cli/clients/quota-admin";
import { REPO_ROOT } from "@tollgate/local";
import { DEFAULT_PORTS } from "@tollgate/platform";
import { afterAll, describe, expect, it } from "vitest";

const ROUNDS = 5;
const stateDir = mkdtempSync(join(tmpdir(), "tollgate-start-"));
let launcher: ChildProcess | undefined;

afterAll(async () => {
  if (launcher && launcher.exitCode === null && launcher.signalCode === null) {
    launcher.kill("SIGINT");
    await once(launcher, "exit");
  }
  rmSync(stateDir, { recursive: true, force: true });
});

/** Starts `pnpm start`'s launcher; resolves once it says the gateway listens, with its output so far. */
function startLauncher(): Promise<{ child: ChildProcess; output: string[]; readyMs: number }> {
  const spawnedAt = performance.now();
  const env: NodeJS.ProcessEnv = { ...process.env, TOLLGATE_STATE_DIR: stateDir };
  delete env.DATABASE_URL; // the embedded PostgreSQL, on its default port
  const child = spawn(process.execPath, ["deploy/local/src/start.ts"], {
    cwd: REPO_ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  launcher = child;
  const output: string[] = [];
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) =>
      reject(new Error(`pnpm start exited (${code}) before it was ready:\n${output.slice(-30).join("\n")}`));
    child.once("exit", onExit);
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream! }).on("line", (line) => {
        output.push(line);
        if (line.includes("gateway listening on")) {
          child.off("exit", onExit);
          resolve({ child, output, readyMs: performance.now() - spawnedAt });
        }
      });
    }
  });
}

/**
 * What the dashboard, the gateway or `pnpm tollgate` do while a back end is down: dial its port again
 * and again. Inside the ephemeral range, one such dial could take the port as its own source port.
 */
function keepDialing(): () => void {
  let on = true;
  const ports = Object.values(DEFAULT_PORTS).flatMap((p) => ("grpc" in p ? [p.grpc] : []));
  const dial = (port: number) => {
    if (!on) return;
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => socket.destroy());
    socket.once("error", () => undefined);
    // time-based: paces the client: it dials again 20 ms after each connection closes.
    socket.once("close", () => setTimeout(() => dial(port), 20));
  };
  for (const port of ports) dial(port);
  return () => {
    on = false;
  };
}

/** A priced call on an API key: served, and metered on the key's account. */
async function apiKeyCall(base: string, secret: string): Promise<{ status: number; blockNumber: unknown }> {
  const res = await fetch(`${base}/api/chain/block-number`, {
    headers: { Authorization: `Bearer ${secret}` },
  });
  const body = (await res.json()) as { data: { block_number?: unknown } | null };
  return { status: res.status, blockNumber: body.data?.block_number };
}

/** The payment methods an unpaid call is offered: x402's schemes and MPP's intents. */
async function offeredMethods(base: string): Promise<{ status: number; x402: string[]; mpp: string[] }> {
  const res = await fetch(`${base}/api/chain/block-number`);
  const offer = JSON.parse(
    Buffer.from(res.headers.get("payment-required") ?? "", "base64").toString("utf8"),
  ) as {
    accepts: { scheme: string }[];
  };
  const mpp = [...(res.headers.get("www-authenticate") ?? "").matchAll(/method="(\w+)", intent="(\w+)"/g)];
  await res.arrayBuffer();
  return {
    status: res.status,
    x402: offer.accepts.map((a) => a.scheme),
    mpp: [...new Set(mpp.map((m) => `${m[1]} ${m[2]}`))],
  };
}

describe("pnpm start", () => {
  it(
    `is ready again right after a stop, ${ROUNDS} times in a row, while clients keep dialing`,
    async () => {
      const stopDialing = keepDialing();
      const base = `http://127.0.0.1:${DEFAULT_PORTS.gateway.http}`;
      let secret = "";
      try {
        for (let round = 1; round <= ROUNDS; round++) {
          const { child, output, readyMs } = await startLauncher();
          const said = output
            .map((line) => /"msg":"(ready [^"]+after launch[^"]*)"/.exec(line)?.[1])
            .find(Boolean);
          console.log(`round ${round}: ready ${(readyMs / 1000).toFixed(1)} s after spawn; ${said}`);
          expect((await fetch(`${base}/health`)).status, output.join("\n")).toBe(200);
          expect((await fetch(`http://127.0.0.1:${DEFAULT_PORTS.dashboard.http}/health`)).status).toBe(200);
          if (round === 1) {
            // A key made once, on the first start: it must keep working across every restart.
            const token = readFileSync(join(stateDir, "operator-token"), "utf8").trim();
            const admin = createAdminClient(`127.0.0.1:${DEFAULT_PORTS["quota-meter"].grpc}`, token);
            secret = (await admin.quickstart(`restarts-${Date.now()}`, { daily: 100 })).secret;
            admin.close();
          }
          const paid = await apiKeyCall(base, secret);
          expect(paid, `round ${round}`).toEqual({ status: 200, blockNumber: expect.stringMatching(/^0x/) });
          // Every payment method is offered again (its chains, keys and contracts are back).
          expect(await offeredMethods(base), `round ${round}`).toEqual({
            status: 402,
            x402: ["exact", "batch-settlement", "x402-batch"],
            mpp: ["tempo charge", "tempo session"],
          });
          // Stopped as Ctrl-C stops it, and started again at once.
          child.kill("SIGINT");
          const [code] = await once(child, "exit");
          expect(code, `round ${round}:\n${output.slice(-20).join("\n")}`).toBe(0);
        }
      } finally {
        stopDialing();
      }
    },
    // Each start brings up five chains, PostgreSQL and six services: on a loaded two-core machine
    // that alone has taken a minute or more.
    ROUNDS * 180_000,
  );
});
