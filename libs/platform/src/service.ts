// The one front door of every service process: configuration, start, readiness, signals, drain.
import { format } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { ConfigError } from "./env.ts";
import { envTable, SHUTDOWN_ENV } from "./env-table.ts";
import { createLogger, type Logger, scrubConsole } from "./logger.ts";
import { addressInUse, portTakenMessage } from "./port-holder.ts";

/** What a started service hands to runService. */
export interface RunningHandle {
  /**
   * Stop being ready (gRPC health and /health go NOT_SERVING) while still serving: load balancers
   * and callers move away before the listeners close.
   */
  drain?(): void;
  /** Stop accepting, finish in-flight calls, flush buffers and outboxes, close connections. */
  stop(): Promise<void>;
}

export interface ServiceDefinition<C, H extends RunningHandle> {
  name: string;
  /** Reads the configuration once; a ConfigError is one line naming the variable, exit 1. */
  loadConfig: () => C;
  start: (config: C, logger: Logger) => Promise<H>;
  /** Fields of the one "ready" line launchers wait for (ports, modes; never secrets). */
  ready: (handle: H, config: C) => Record<string, unknown>;
}

/** Shutdown timings, from the environment every service shares. */
function shutdownTimings(): { delayMs: number; timeoutMs: number } {
  const env = envTable(SHUTDOWN_ENV);
  return {
    // Kubernetes removes a terminating pod from its Services while the signal is delivered: keep
    // serving, unready, this long so no caller is still routed here when the listeners close.
    delayMs: env.int("SHUTDOWN_DELAY_MS"),
    // Under the pod's terminationGracePeriodSeconds (30 s by default), so we exit before SIGKILL.
    timeoutMs: env.int("SHUTDOWN_TIMEOUT_MS"),
  };
}

/**
 * Runs a service process: reads its configuration once, starts it, logs one "ready" line, and on
 * SIGTERM or SIGINT drains it within SHUTDOWN_TIMEOUT_MS (exit 0; 1 when the deadline passed or a
 * step failed). A second signal ends the process at once. Unhandled rejections are logged and the
 * process keeps serving; an uncaught exception is logged and the process drains and exits 1.
 */
export async function runService<C, H extends RunningHandle>(def: ServiceDefinition<C, H>): Promise<void> {
  const logger = createLogger(def.name);
  scrubConsole();
  // grpc-js's own lines as this service's JSON lines. Its "No address added" is dropped: the bind's
  // error says the same with the cause, so a taken port is one line.
  const grpcLine =
    (level: "error" | "info" | "debug") =>
    (message?: unknown, ...rest: unknown[]) => {
      const text = format(message, ...rest);
      if (!text.startsWith("No address added")) logger[level]({ source: "grpc-js" }, text);
    };
  grpc.setLogger({ error: grpcLine("error"), info: grpcLine("info"), debug: grpcLine("debug") });
  // A library promise nobody awaited must not take every in-flight call down with the process.
  process.on("unhandledRejection", (err) => logger.error({ err }, "unhandled promise rejection"));

  let timings: ReturnType<typeof shutdownTimings>;
  let config: C;
  let handle: H | undefined;
  let shutdown: ((reason: string, code: number) => void) | undefined;
  const early = (signal: string) => {
    // Still starting: nothing to drain yet.
    logger.info({ signal }, "stopped before it was ready");
    process.exit(0);
  };
  process.on("uncaughtException", (err) => {
    logger.fatal({ err }, "uncaught exception");
    if (shutdown) shutdown("uncaught exception", 1);
    else process.exit(1);
  });
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.on(signal, () => (shutdown ? shutdown(signal, 0) : early(signal)));
  }

  try {
    timings = shutdownTimings();
    config = def.loadConfig();
    handle = await def.start(config, logger);
  } catch (err) {
    const taken = addressInUse(err);
    if (err instanceof ConfigError) logger.fatal(`configuration error: ${err.message}`);
    // Not a bug to debug but a port to free: who holds it, in one line, no stack.
    else if (taken) logger.fatal({ port: taken.port }, portTakenMessage(taken.host, taken.port));
    else logger.fatal({ err }, "could not start");
    process.exit(1);
  }
  const started = handle;
  // Launchers wait for this line, so it is written whatever LOG_LEVEL says.
  logger.child({}, { level: "info" }).info(def.ready(started, config), "ready");

  let stopping = false;
  shutdown = (reason, code) => {
    if (stopping) {
      logger.warn({ reason }, "second stop request: exiting now");
      process.exit(code || 1);
    }
    stopping = true;
    logger.info({ reason, ...timings }, "draining");
    const deadline = setTimeout(() => {
      logger.error({ timeoutMs: timings.timeoutMs }, "drain did not finish in SHUTDOWN_TIMEOUT_MS; exiting");
      process.exit(1);
    }, timings.timeoutMs);
    deadline.unref();
    started.drain?.();
    void new Promise((r) => setTimeout(r, timings.delayMs))
      .then(() => started.stop())
      .then(
        () => {
          logger.info("stopped");
          process.exit(code);
        },
        (err: unknown) => {
          logger.error({ err }, "shutdown failed");
          process.exit(1);
        },
      );
  };
}
