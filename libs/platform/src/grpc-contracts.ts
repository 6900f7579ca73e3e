// The internal contracts as grpc-js loads them at run time: from proto/, the only place they are
// written, with the loader options the generated types (`pnpm gen`) were made with.
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import type { ProtoGrpcType as PaymentProto } from "./generated/payment_verifier.ts";
import type { ProtoGrpcType as QuotaProto } from "./generated/quota_meter.ts";
import type { ProtoGrpcType as RpcProxyProto } from "./generated/rpc_proxy.ts";
import type { ProtoGrpcType as SettlementProto } from "./generated/settlement_worker.ts";

const PROTO_ROOT = fileURLToPath(new URL("../../../proto", import.meta.url));

// Must agree with the flags in gen.ts (`pnpm gen`), which generated the types.
const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_ROOT],
};

function load<T>(file: string): T {
  return grpc.loadPackageDefinition(protoLoader.loadSync(file, LOADER_OPTIONS)) as unknown as T;
}

/** The internal contracts, loaded from proto/ (the only place they are written). */
export const contracts = {
  rpcProxy: () => load<RpcProxyProto>("tollgate/rpc/v1/rpc_proxy.proto").tollgate.rpc.v1,
  quotaMeter: () => load<QuotaProto>("tollgate/quota/v1/quota_meter.proto").tollgate.quota.v1,
  paymentVerifier: () => load<PaymentProto>("tollgate/payment/v1/payment_verifier.proto").tollgate.payment.v1,
  settlementWorker: () =>
    load<SettlementProto>("tollgate/settlement/v1/settlement_worker.proto").tollgate.settlement.v1,
};
