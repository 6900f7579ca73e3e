// Anvil process management: spawn one node per chain on a kernel-assigned port, and make sure
// none outlives the process that started it (stop(), process exit, signals, or even SIGKILL).
import { type ChildProcess, spawn } from "node:child_process";
import { createRequire } from "node:module";
import { connect, createServer } from "node:net";

export interface AnvilOptions {
  chainId: number;
  host: string;
  /** Number of funded dev accounts (derived from anvil's default test mnemonic). */
  accounts: number;
  log?: (line: string) => void;
  /**
   * How long to wait for "Listening on" (60 s by default). anvil normally needs well under a
   * second, but a 2-core machine running a test suite's three lanes has starved it past 15 s.
   */
  startTimeoutMs?: number;
  /** More flags, e.g. `--network tempo --hardfork t4` for the Tempo chain. */
  extraArgs?: string[];
  /**
   * No log line per RPC (`--quiet`), as a benchmark's node must be: whoever drains the pipe spends
   * CPU on every line. anvil then prints no banner either, so it gets a free port and is probed.
   */
  quiet?: boolean;
}

export interface AnvilNode {
  chainId: number;
  host: string;
  port: number;
  rpcUrl: string;
  pid: number;
  stop(): Promise<void>;
}

const require = createRequire(import.meta.url);

/** Path of the anvil binary shipped by @foundry-rs/anvil's platform package (override: ANVIL_BIN). */
export function anvilBinary(): string {
  if (process.env.ANVIL_BIN) return process.env.ANVIL_BIN;
  // The platform package is a dependency of the wrapper, so resolve it from the wrapper's location.
  const wrapper = createRequire(require.resolve("@foundry-rs/anvil/package.json"));
  const arch = process.arch === "x64" ? "amd64" : process.arch;
  const exe = process.platform === "win32" ? "anvil.exe" : "anvil";
  return wrapper.resolve(`@foundry-rs/anvil-${process.platform}-${arch}/bin/${exe}`);
}

// Every anvil started by this process, so exit/signal handlers can kill the stragglers.
const running = new Set<ChildProcess>();
let handlersInstalled = false;

function killAllSync(): void {
  for (const child of running) child.kill("SIGKILL");
  running.clear();
}

function installExitHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on("exit", killAllSync);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    const onSignal = (): void => {
      killAllSync();
      // If nobody else handles the signal, restore the default behaviour (terminate).
      if (process.listenerCount(signal) === 1) {
        process.removeListener(signal, onSignal);
        process.kill(process.pid, signal);
      }
    };
    process.on(signal, onSignal);
  }
}

/**
 * A watchdog shell that kills `pid` once our end of its stdin pipe closes. The pipe closes
 * whenever this process dies, including SIGKILL or a crashed test worker, which no exit handler
 * can cover. It is killed first on a normal stop so it never signals a recycled pid.
 */
function spawnWatchdog(pid: number): ChildProcess {
  const dog = spawn("sh", ["-c", `cat >/dev/null; kill -9 ${pid} 2>/dev/null`], {
    stdio: ["pipe", "ignore", "ignore"],
  });
  dog.on("error", () => {}); // no sh (e.g. Windows): the exit handlers still apply
  dog.unref();
  (dog.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  return dog;
}

export async function startAnvil(opts: AnvilOptions): Promise<AnvilNode> {
  if (!opts.quiet) return spawnAnvil(opts, 0);
  // A quiet anvil names no port: a free one is taken, and taken again if another process won it.
  for (let attempt = 1; ; attempt++) {
    try {
      return await spawnAnvil(opts, await freePort(opts.host));
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
}

function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, host, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

async function spawnAnvil(opts: AnvilOptions, fixedPort: number): Promise<AnvilNode> {
  installExitHandlers();
  const args = [
    "--host",
    opts.host,
    // Port 0 (unless quiet): the kernel picks a free port atomically, so concurrent devnets never
    // race for one.
    "--port",
    String(fixedPort),
    ...(opts.quiet ? ["--quiet"] : []),
    "--chain-id",
    String(opts.chainId),
    "--accounts",
    String(opts.accounts),
    // Automine with wall-clock timestamps (anvil lets blocks share a second instead of running
    // ahead), so x402 validAfter/validBefore windows behave as on a real chain. No --timestamp:
    // a past genesis time would become a permanent clock offset.
    "--color",
    "never",
    ...(opts.extraArgs ?? []),
  ];
  const child = spawn(anvilBinary(), args, { stdio: ["ignore", "pipe", "pipe"] });
  running.add(child);
  const dog = child.pid === undefined ? undefined : spawnWatchdog(child.pid);

  // Without --quiet anvil prints its banner (where the bound port appears) and a few lines per
  // mined transaction; keep only a short tail for error reports. The pipes must keep being
  // drained or anvil would block on a full pipe.
  const tail: string[] = [];
  const onOutput = (chunk: Buffer): void => {
    for (const line of chunk.toString("utf8").split("\n")) {
      if (!line.trim()) continue;
      tail.push(line);
      if (tail.length > 40) tail.shift();
    }
  };

  child.stdout?.on("data", onOutput);
  child.stderr?.on("data", onOutput);

  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.once("exit", () => {
    running.delete(child);
    dog?.kill("SIGKILL");
  });

  const port = await new Promise<number>((resolve, reject) => {
    let banner = "";
    const onError = (err: Error): void => fail(err);
    const onEarlyExit = (code: number | null, signal: string | null): void =>
      fail(new Error(`anvil exited early (code ${code}, signal ${signal})`));
    const settle = (): void => {
      clearTimeout(timer);
      child.stdout?.off("data", onBanner);
      child.off("error", onError);
      child.off("exit", onEarlyExit);
    };
    const fail = (err: Error): void => {
      settle();
      child.kill("SIGKILL");
      running.delete(child);
      dog?.kill("SIGKILL");
      reject(new Error(`${err.message}\n${tail.join("\n")}`));
    };
    const onBanner = (chunk: Buffer): void => {
      banner += chunk.toString("utf8");
      const match = /Listening on \S+:(\d+)/.exec(banner);
      if (!match) return;
      settle();
      resolve(Number(match[1]));
    };
    const timer = setTimeout(
      () => fail(new Error(`anvil (chain ${opts.chainId}) did not report a port in time`)),
      opts.startTimeoutMs ?? 60_000,
    );
    if (fixedPort) {
      const probe = (): void => {
        void accepts(opts.host, fixedPort).then((up) => {
          if (child.exitCode !== null || child.signalCode !== null || !running.has(child)) return;
          if (!up) return void setTimeout(probe, 20);
          settle();
          resolve(fixedPort);
        });
      };
      probe();
    } else child.stdout?.on("data", onBanner);
    child.once("error", onError);
    child.once("exit", onEarlyExit);
  });
  // Do not keep the event loop alive for anvil: a forgotten stop() must not hang a test run;
  // the exit handler and the watchdog then clean up.
  child.unref();
  (child.stdout as unknown as { unref?: () => void } | null)?.unref?.();
  (child.stderr as unknown as { unref?: () => void } | null)?.unref?.();

  const rpcUrl = `http://${opts.host.includes(":") ? `[${opts.host}]` : opts.host}:${port}`;
  opts.log?.(`anvil chain ${opts.chainId} pid ${child.pid} at ${rpcUrl}`);

  return {
    chainId: opts.chainId,
    host: opts.host,
    port,
    rpcUrl,
    pid: child.pid ?? -1,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      dog?.kill("SIGKILL");
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 2_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
