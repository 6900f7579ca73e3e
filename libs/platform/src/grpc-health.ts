// Asking a server's standard health service (grpc.health.v1) whether it serves: what readiness
// waits and Kubernetes gRPC probes ask.
import * as grpc from "@grpc/grpc-js";
import { service as healthService } from "grpc-health-check";

const healthMethod = healthService.Check as grpc.MethodDefinition<
  { service: string },
  { status: string | number }
>;
const healthRequestType = { serialize: healthMethod.requestSerialize };
const healthResponseType = { deserialize: healthMethod.responseDeserialize };

/**
 * Asks a server's standard health service whether it is SERVING (what Kubernetes
 * gRPC probes ask). Resolves false on any failure or timeout.
 */
export function checkHealth(address: string, timeoutMs = 1_000, service = ""): Promise<boolean> {
  const Client = grpc.makeGenericClientConstructor(healthService, "Health");
  const client = new Client(address, grpc.credentials.createInsecure());
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      "/grpc.health.v1.Health/Check",
      (arg: { service: string }) => healthRequestType.serialize(arg),
      (buf: Buffer) => healthResponseType.deserialize(buf) as { status: string | number },
      { service },
      new grpc.Metadata(),
      { deadline: new Date(Date.now() + timeoutMs) },
      (err: grpc.ServiceError | null, value?: { status: string | number }) => {
        client.close();
        resolve(!err && (value?.status === "SERVING" || value?.status === 1));
      },
    );
  });
}
