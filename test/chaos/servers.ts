// The real servers a chaos run stops and starts as processes of its own: a private redis-server and
// nats-server (JetStream, own store dir) on free loopback ports, never the machine's shared ones;
// and the run's upstream front doors (one per "node"), which it can kill or replace by a hung one.
import { type ChildProcess, spawn } from "node:child_process";
import { createServer as createHttpServer, type Server } from "node:http";
import { connect, createServer as createTcpServer, type Socket, type Server as TcpServer } from "node:net";
import { freePort } from "@tollgate/local";
import { eventually } from "../support/eventually.ts";

/** A server binary run by the chaos run: started, stopped (SIGTERM or SIGKILL) and started again on one port. */
export class OwnServer {
  readonly port: number;
  #child: ChildProcess | undefined;
  readonly #cmd: string;
  readonly #args: string[];
  readonly #ready: () => Promise<boolean>;

  constructor(port: number, cmd: string, args: string[], ready: () => Promise<boolean>) {
    this.port = port;
    this.#cmd = cmd;
    this.#args = args;
    this.#ready = ready;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  async start(): Promise<void> {
    const child = spawn(this.#cmd, this.#args, { stdio: ["ignore", "ignore", "pipe"] });
    const stderr: string[] = [];
    child.stderr?.on("data", (d) => stderr.push(String(d)));
    // One exit hook for every server of the run (a cluster run has nine): killed with the run.
    running.add(child);
    if (running.size === 1) process.once("exit", reapAll);
    child.once("exit", () => {
      running.delete(child);
      if (running.size === 0) process.off("exit", reapAll);
    });
    this.#child = child;
    const up = await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`${this.#cmd} exited: ${stderr.join("")}`);
        return this.#ready();
      },
      true,
      20_000,
      50,
    );
    if (!up) throw new Error(`${this.#cmd} did not start on ${this.port}: ${stderr.join("")}`);
  }

  async stop(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    const child = this.#child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      // time-based: the deadline after which a process that ignores SIGTERM is killed.
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      child.once("exit", () => {
        clearTimeout(timer);
        resolve();
      });
      child.kill(signal);
    });
  }
}

const running = new Set<ChildProcess>();
function reapAll(): void {
  for (const child of running) child.kill("SIGKILL");
}

function tcpOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** redis-server on a free port, with an append-only file in `dir` so a stop loses no window. */
export async function ownRedis(dir: string): Promise<OwnServer> {
  const port = await freePort();
  const args = [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--dir",
    dir,
    "--appendonly",
    "yes",
    "--save",
    "",
  ];
  const server = new OwnServer(port, "redis-server", args, () => tcpOpen(port));
  await server.start();
  return server;
}

/** nats-server with JetStream on a free port, its store in `dir`. */
export async function ownNats(dir: string): Promise<OwnServer> {
  const port = await freePort();
  const monitor = await freePort();
  const args = ["-js", "-a", "127.0.0.1", "-p", String(port), "-m", String(monitor), "-sd", dir];
  const ready = () =>
    fetch(`http://127.0.0.1:${monitor}/healthz?js-enabled-only=true`).then(
      (r) => r.ok,
      () => false,
    );
  const server = new OwnServer(port, "nats-server", args, ready);
  await server.start();
  return server;
}

/**
 * One upstream "node" as rpc-proxy sees it: an HTTP front door on a port of its own forwarding to a
 * real anvil. `kill()` makes the port refuse connections; `hang()` puts a stand-in TCP server on it
 * that accepts and never answers (a hung node); `restore()` forwards again on the same port.
 */
export class Upstream {
  port = 0;
  /** The node it forwards to (set once the devnet is up). */
  target = "";
  #http: Server | undefined;
  #hung: TcpServer | undefined;
  readonly #sockets = new Set<Socket>();

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    const server = createHttpServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      try {
        const upstream = await fetch(this.target, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: Buffer.concat(chunks),
        });
        res.writeHead(upstream.status, { "content-type": "application/json" });
        res.end(Buffer.from(await upstream.arrayBuffer()));
      } catch {
        res.destroy();
      }
    });
    server.keepAliveTimeout = 60_000;
    await listen(server, this.port);
    this.port = (server.address() as { port: number }).port;
    this.#http = server;
    return this;
  }

  async kill(): Promise<void> {
    await this.#closeHttp();
  }

  /** Stand-in for a hung node: accepts every connection, reads, never writes. */
  async hang(): Promise<void> {
    await this.#closeHttp();
    const server = createTcpServer((socket) => {
      this.#sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => this.#sockets.delete(socket));
      socket.resume();
    });
    await listen(server, this.port);
    this.#hung = server;
  }

  async restore(): Promise<void> {
    await this.#closeHttp();
    if (this.#hung) {
      for (const s of this.#sockets) s.destroy();
      await new Promise<void>((resolve) => this.#hung?.close(() => resolve()));
      this.#hung = undefined;
    }
    await this.start();
  }

  async stop(): Promise<void> {
    await this.restore().catch(() => {});
    await this.#closeHttp();
  }

  async #closeHttp(): Promise<void> {
    const server = this.#http;
    if (!server) return;
    this.#http = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

function listen(server: Server | TcpServer, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
}
