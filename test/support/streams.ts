// What a durable consumer of the mesh's event streams has done: a condition to wait for where a test
// would otherwise sleep through a consumer's redeliveries.
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { streamSpecFor } from "@tollgate/events";

/**
 * The durable `durable` (of `subject`'s stream in the mesh's `namespace`) has been delivered and has
 * acked everything its stream holds: nothing of it is pending or waiting for a redelivery.
 */
export async function consumerCaughtUp(
  subject: Parameters<typeof streamSpecFor>[0],
  durable: string,
  namespace: string,
): Promise<boolean> {
  const nc = await connect({ servers: "nats://127.0.0.1:4222" });
  try {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.consumers
      .info(streamSpecFor(subject, namespace).name, durable)
      .catch(() => undefined);
    return !!info && info.num_pending === 0 && info.num_ack_pending === 0;
  } finally {
    await nc.close();
  }
}
