// payment-verifier's Redis, reached in the background: the channel loops start once it answers and
// it is retried until then (channels wait in it, nothing is lost meanwhile). Said once when it is
// unreachable, once when it answers again.
import { connectRedis, type Logger, type Redis } from "@tollgate/platform";

export interface BackgroundRedis {
  /** Runs `start` with the connection once Redis answered (at once when it already has). */
  onReady(start: (redis: Redis) => void): void;
  close(): void;
}

export function backgroundRedis(
  url: string,
  logger: Logger,
  clusterNodes: readonly string[] = [],
  retryMs = 5_000,
): BackgroundRedis {
  const waiting: ((redis: Redis) => void)[] = [];
  let redis: Redis | undefined;
  let stopped = false;
  let warned = false;
  let retry: NodeJS.Timeout | undefined;
  const connect = async () => {
    const client = await connectRedis({ url, clusterNodes, logger, unreachable: "give-up" });
    if (stopped) return client?.destroy();
    if (!client) {
      if (!warned)
        logger.warn("Redis is unreachable: MPP session channels and x402-batch claims wait until it answers");
      warned = true;
      retry = setTimeout(() => void connect(), retryMs);
      return;
    }
    if (warned)
      logger.info("Redis reachable: settling MPP session channels and claiming x402-batch channels");
    redis = client;
    for (const start of waiting.splice(0)) start(client);
  };
  void connect();
  return {
    onReady(start) {
      if (redis) start(redis);
      else waiting.push(start);
    },
    close() {
      stopped = true;
      clearTimeout(retry);
      redis?.destroy();
    },
  };
}
