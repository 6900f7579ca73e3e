// runService, the front door of every service process (libs/platform/src/service.ts), on a small
// service of its own: configuration errors, unhandled rejections, uncaught exceptions, the drain and
// its deadline.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { type AddressInfo, createServer } from "node:net";
import { createInterface } from "node:readline";
import { freePort } from "@tollgate/local";
import { describe, expect, it } from "vitest";
import { eventually } from "../support/eventually.ts";

interface Line {
  level: number;
  msg: string;
  [key: string]: unknown;
}

function start(env: Record<string, string>) {
  const child = spawn(process.execPath, [new URL("./fixtures/service.ts", import.meta.url).pathname], {
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: Line[] = [];
  const raw: string[] = [];
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on("line", (text) => {
      raw.push(text);
      try {
        lines.push(JSON.parse(text) as Line);
      } catch {
        lines.push({ level: 0, msg: text });
      }
    });
  }
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const line = async (msg: string, timeoutMs = 10_000) => {
    const found = await eventually(
      () => lines.find((l) => l.msg === msg),
      (l) => !!l,
      timeoutMs,
      20,
    );
    if (!found) throw new Error(`no "${msg}" line in:\n${raw.join("\n")}`);
    return found;
  };
  return { child: child as ChildProcess, lines, raw, exit, line };
}

describe("runService", () => {
  it("a configuration error is one fatal line naming the variable, no stack, exit 1", async () => {
    const service = start({ FIXTURE_BAD_CONFIG: "1" });
    expect(await service.exit).toBe(1);
    expect(service.raw, service.raw.join("\n")).toHaveLength(1);
    expect(service.lines[0]).toMatchObject({
      level: 60,
      msg: "configuration error: FIXTURE_BAD_CONFIG must not be set",
    });
    expect(service.raw[0]).not.toMatch(/\\n\s+at /);
  });

  it("logs an unhandled rejection and keeps serving; SIGTERM makes it unready, then stops, exit 0", async () => {
    const service = start({ FIXTURE_REJECT: "1", SHUTDOWN_DELAY_MS: "200" });
    expect(await service.line("ready")).toMatchObject({ level: 30, port: 1234 });
    const rejection = await service.line("unhandled promise rejection");
    expect(rejection.level).toBe(50);
    expect(JSON.stringify(rejection.err)).toContain("nobody awaited this");
    expect(service.child.exitCode).toBeNull();

    service.child.kill("SIGTERM");
    expect(await service.exit).toBe(0);
    const steps = ["draining", "unready", "stopped"];
    expect(service.lines.map((l) => l.msg).filter((m) => steps.includes(m))).toEqual(steps);
  });

  it("exits 1 when the drain outlasts SHUTDOWN_TIMEOUT_MS", async () => {
    const service = start({ FIXTURE_STOP_MS: "120000", SHUTDOWN_TIMEOUT_MS: "300" });
    await service.line("ready");
    const signalled = Date.now();
    service.child.kill("SIGTERM");
    expect(await service.exit).toBe(1);
    // Ended by the deadline, not by the stop (two minutes): a bound far from any machine's speed.
    expect(Date.now() - signalled).toBeLessThan(60_000);
    expect((await service.line("drain did not finish in SHUTDOWN_TIMEOUT_MS; exiting")).level).toBe(50);
  });

  it("logs an uncaught exception, drains and exits 1", async () => {
    const service = start({ FIXTURE_THROW: "1" });
    const fatal = await service.line("uncaught exception");
    expect(fatal.level).toBe(60);
    expect(JSON.stringify(fatal.err)).toContain("thrown from a timer");
    expect(await service.exit).toBe(1);
    expect(service.lines.map((l) => l.msg)).toContain("unready");
  });
});

// A port already taken at start (issue 41: `pnpm start` again right after a stop failed with a
// stack trace, EADDRINUSE on a port nothing listened on: a client had connected to itself there).
describe("runService, when its port is taken", () => {
  it("names the process that listens on it, in one fatal line without a stack", async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const port = (holder.address() as AddressInfo).port;
    try {
      const service = start({ FIXTURE_GRPC_PORT: String(port) });
      expect(await service.exit).toBe(1);
      expect(service.raw, service.raw.join("\n")).toHaveLength(1);
      expect(service.lines[0]?.level).toBe(60);
      expect(service.lines[0]?.msg).toContain(`port 127.0.0.1:${port} is taken`);
      expect(service.lines[0]?.msg).toContain(`pid ${process.pid} (`);
      expect(service.lines[0]?.msg).toContain("set FIXTURE_GRPC_PORT to another port");
      expect(service.raw[0]).not.toMatch(/\\n\s+at /);
    } finally {
      holder.close();
    }
  });

  it("says a client connected to itself there, the failure of a port inside the ephemeral range", async () => {
    // What the retrying client did by chance: its source port was the port it dialed, so the kernel
    // connected the socket to itself. Made here by perl (Debian's perl-base), whose socket, like the
    // client's, has no SO_REUSEADDR (Node sets it on every socket it binds: no conflict then).
    const port = await freePort();
    const script = `use Socket; socket(S, PF_INET, SOCK_STREAM, 0) or die; my $a = pack_sockaddr_in(${port}, inet_aton("127.0.0.1")); bind(S, $a) or die "bind: $!"; connect(S, $a) or die "connect: $!"; $| = 1; print "connected\\n"; sleep 600`;
    const self = spawn("perl", ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    try {
      const [first] = (await once(createInterface({ input: self.stdout }), "line")) as [string];
      expect(first).toBe("connected");
      const service = start({ FIXTURE_GRPC_PORT: String(port) });
      expect(await service.exit).toBe(1);
      expect(service.raw, service.raw.join("\n")).toHaveLength(1);
      expect(service.lines[0]?.msg).toContain(
        `port 127.0.0.1:${port} is taken: a client connected to itself`,
      );
      expect(service.lines[0]?.msg).toContain(`held by pid ${self.pid} (perl`);
    } finally {
      self.kill("SIGKILL");
    }
  });
});
