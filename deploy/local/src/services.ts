import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const SERVICE_NAMES = [
  "rpc-proxy",
  "quota-meter",
  "payment-verifier",
  "settlement-worker",
  "gateway",
  "dashboard",
] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];
/**
 * What the launcher runs: the services, and the embedded PostgreSQL when no DATABASE_URL is given
 * (and private Redis and NATS servers, for runs that measure or stop them: servers.ts).
 */
export type ProcessName = ServiceName | "postgres" | "redis-server" | "nats-server";

export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));

export interface RunningService {
  name: ProcessName;
  child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts one service the way production runs it: its own process, its own ports,
 * configured only by environment. Resolves once `isReady` says so (the same health
 * checks Kubernetes probes make), whatever the log level hides.
 */
export function spawnService<N extends ProcessName>(
  name: N,
  env: Record<string, string>,
  onLine: (service: N, line: string) => void,
  isReady: () => Promise<boolean>,
  // Generous: a service loads thousands of modules from sources, and on a loaded two-core machine
  // (the test suite starts several meshes side by side) that alone has taken over 30 s.
  readyTimeoutMs = 90_000,
  args: string[] = [`services/${name}/src/main.ts`],
  command = process.execPath,
): Promise<RunningService> {
  const child = spawn(command, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  // A launcher that dies unexpectedly must not leave services running on its ports.
  const reap = () => child.kill("SIGKILL");
  process.once("exit", reap);
  child.once("exit", () => process.off("exit", reap));
  const tail: string[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${name} did not become ready in ${readyTimeoutMs} ms:\n${tail.join("\n")}`));
    }, readyTimeoutMs);
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with code ${code} before it was ready:\n${tail.join("\n")}`));
    };
    child.once("exit", onExit);
    for (const stream of [child.stdout, child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream }).on("line", (line) => {
        tail.push(line);
        if (tail.length > 40) tail.shift();
        onLine(name, line);
      });
    }
    const poll = async () => {
      while (child.exitCode === null && child.signalCode === null) {
        if (await isReady()) {
          clearTimeout(timer);
          child.off("exit", onExit);
          resolve({ name, child, stop: () => stopChild(child) });
          return;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    void poll();
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), 8_000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}
