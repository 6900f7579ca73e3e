// JSON-RPC shim in front of the Tempo anvil. Servers (the mppx server broadcasts client-signed
// opens and simulates credentials) must use its URL. Everything passes through unchanged except:
//  1. A raw Tempo transaction that opens a payment channel first gets its `expiringNonceHash`
//     written into the channel-reserve stand-in's storage. The real TIP-1034 precompile takes it
//     from the transaction context, which no contract can read (contracts/ChannelReserveStandIn.sol).
//  2. `eth_call` with a Tempo `calls` batch: anvil 1.7.1 answers "0x" without executing the calls,
//     so a pre-broadcast simulation could never fail. The shim runs the calls with eth_simulateV1
//     (in order, state carried over) and answers like a node: the last call's return data, or an
//     "execution reverted" error with the revert data. A simulated open gets a placeholder hash.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Hash, Hex } from "ox";
import { TxEnvelopeTempo } from "ox/tempo";
import {
  decodeFunctionData,
  encodeAbiParameters,
  keccak256,
  parseAbi,
  toFunctionSelector,
  toHex,
} from "viem";
import { Transaction } from "viem/tempo";
import type { Address } from "./types.ts";

const openAbi = parseAbi([
  "function open(address payee, address operator, address token, uint96 deposit, bytes32 salt, address authorizedSigner)",
]);
const OPEN_SELECTOR = toFunctionSelector(openAbi[0]);
/** Storage slot of the stand-in's `_pendingNonceHash` mapping. */
const PENDING_NONCE_HASH_SLOT = 1n;
/** What a simulated open sees instead of the hash of a transaction that was never signed. */
const SIMULATION_NONCE_HASH = keccak256(toHex("tempo shim: simulated open"));
/** Requests are JSON-RPC bodies; a signed transaction is a few KB. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;
const SEND_METHODS = new Set(["eth_sendRawTransaction", "eth_sendRawTransactionSync"]);

export interface TempoShim {
  url: string;
  port: number;
  /** Channel opens whose nonce hash was seeded so far. */
  readonly seeded: number;
  stop(): Promise<void>;
}

interface RpcRequest {
  jsonrpc?: string;
  id?: unknown;
  method?: string;
  params?: unknown[];
}
interface RpcResponse {
  jsonrpc: "2.0";
  id: unknown;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}
interface TempoCall {
  to?: Address;
  data?: Hex.Hex;
  input?: Hex.Hex;
  value?: Hex.Hex;
}
type StateOverrides = Record<string, { stateDiff?: Record<string, Hex.Hex> } & Record<string, unknown>>;

/** Slot of `_pendingNonceHash[keccak256(abi.encode(payer, salt))]` in the stand-in. */
function pendingNonceHashSlot(payer: Address, salt: Hex.Hex): Hex.Hex {
  const key = keccak256(encodeAbiParameters([{ type: "address" }, { type: "bytes32" }], [payer, salt]));
  return keccak256(
    encodeAbiParameters([{ type: "bytes32" }, { type: "uint256" }], [key, PENDING_NONCE_HASH_SLOT]),
  );
}

function openSalt(call: TempoCall, reserve: Address): Hex.Hex | undefined {
  const data = call.data ?? call.input;
  if (call.to?.toLowerCase() !== reserve.toLowerCase() || !data?.startsWith(OPEN_SELECTOR)) return undefined;
  return decodeFunctionData({ abi: openAbi, data }).args[4];
}

/**
 * The channel opens in a raw transaction, each with the hash the precompile derives:
 * keccak256(encodeForSigning(tx) ‖ sender), as mppx computes it for the channel descriptor.
 */
function channelOpens(
  raw: Hex.Hex,
  reserve: Address,
): { payer: Address; salt: Hex.Hex; expiringNonceHash: Hex.Hex }[] {
  if (!raw.startsWith("0x76")) return [];
  // viem recovers the sender; ox encodes the signing payload (the same pair mppx uses).
  const tx = Transaction.deserialize(raw as `0x76${string}`) as {
    from?: Address;
    calls?: readonly TempoCall[];
  };
  const payer = tx.from;
  if (!payer) return [];
  const salts = (tx.calls ?? []).flatMap((call) => openSalt(call, reserve) ?? []);
  if (salts.length === 0) return [];
  const signing = TxEnvelopeTempo.encodeForSigning(tx as unknown as TxEnvelopeTempo.TxEnvelopeTempo);
  const expiringNonceHash = Hash.keccak256(Hex.concat(signing, payer));
  return salts.map((salt) => ({ payer, salt, expiringNonceHash }));
}

export async function startTempoShim(opts: {
  anvilUrl: string;
  reserve: Address;
  host: string;
  log?: (line: string) => void;
}): Promise<TempoShim> {
  let seeded = 0;
  let nextId = 1;
  const forward = async (request: RpcRequest): Promise<RpcResponse> => {
    const res = await fetch(opts.anvilUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(request),
    });
    return (await res.json()) as RpcResponse;
  };
  const call = async <T>(method: string, params: unknown[]): Promise<T> => {
    const reply = await forward({ jsonrpc: "2.0", id: `tempo-shim-${nextId++}`, method, params });
    if (reply.error) throw new Error(`${method}: ${reply.error.message}`);
    return reply.result as T;
  };

  /** Seed the stand-in for every channel open in a raw transaction, then send it. */
  const send = async (request: RpcRequest): Promise<RpcResponse> => {
    const raw = request.params?.[0];
    let opens: ReturnType<typeof channelOpens> = [];
    try {
      if (typeof raw === "string") opens = channelOpens(raw as Hex.Hex, opts.reserve);
    } catch {
      // not decodable: anvil answers with its own error
    }
    for (const open of opens) {
      const slot = pendingNonceHashSlot(open.payer, open.salt);
      await call("anvil_setStorageAt", [opts.reserve, slot, open.expiringNonceHash]);
      seeded++;
    }
    return forward(request);
  };

  /** Run a Tempo `calls` batch for real (see the header) and answer as eth_call would. */
  const simulate = async (
    request: RpcRequest,
    tx: { from?: Address; calls: TempoCall[] },
  ): Promise<RpcResponse> => {
    const [, block = "latest", overrides = {}] = request.params ?? [];
    const stateOverrides = structuredClone(overrides) as StateOverrides;
    const from = tx.from ?? "0x0000000000000000000000000000000000000000";
    for (const salt of tx.calls.flatMap((c) => openSalt(c, opts.reserve) ?? [])) {
      const reserve = stateOverrides[opts.reserve] ?? {};
      stateOverrides[opts.reserve] = reserve;
      reserve.stateDiff = { ...reserve.stateDiff, [pendingNonceHashSlot(from, salt)]: SIMULATION_NONCE_HASH };
    }
    const calls = tx.calls.map((c) => ({
      from,
      to: c.to,
      data: c.data ?? c.input,
      ...(c.value && c.value !== "0x" ? { value: c.value } : {}),
    }));
    const reply = await forward({
      jsonrpc: "2.0",
      id: request.id,
      method: "eth_simulateV1",
      params: [{ blockStateCalls: [{ stateOverrides, calls }], validation: false }, block],
    });
    if (reply.error) return reply;
    const results = (reply.result as { calls: { status: Hex.Hex; returnData: Hex.Hex }[] }[])[0]?.calls ?? [];
    const failed = results.find((r) => r.status !== "0x1");
    if (failed)
      return {
        jsonrpc: "2.0",
        id: request.id,
        error: { code: 3, message: "execution reverted", data: failed.returnData },
      };
    return { jsonrpc: "2.0", id: request.id, result: results.at(-1)?.returnData ?? "0x" };
  };

  const answer = (request: RpcRequest): Promise<RpcResponse> => {
    if (request.method && SEND_METHODS.has(request.method)) return send(request);
    const tx =
      request.method === "eth_call" ? (request.params?.[0] as { calls?: unknown } | undefined) : undefined;
    if (Array.isArray(tx?.calls) && tx.calls.length > 0)
      return simulate(request, tx as { from?: Address; calls: TempoCall[] });
    return forward(request);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        res.writeHead(413).end();
        return;
      }
      chunks.push(chunk);
    }
    let parsed: RpcRequest | RpcRequest[];
    try {
      parsed = JSON.parse(Buffer.concat(chunks).toString("utf8")) as RpcRequest | RpcRequest[];
    } catch {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } }));
      return;
    }
    // A batch runs in order: its transactions may depend on each other.
    let reply: RpcResponse | RpcResponse[];
    if (Array.isArray(parsed)) {
      reply = [];
      for (const request of parsed) reply.push(await answer(request));
    } else {
      reply = await answer(parsed);
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(reply));
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: Error) => {
      opts.log?.(`tempo shim: ${err.message}`);
      if (!res.headersSent) res.writeHead(502, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32603, message: err.message } }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, opts.host, () => resolve());
  });
  // Like the anvils, the shim must not keep a test process alive on its own.
  server.unref();
  const { port } = server.address() as AddressInfo;
  const url = `http://${opts.host.includes(":") ? `[${opts.host}]` : opts.host}:${port}`;
  opts.log?.(`tempo shim at ${url} in front of ${opts.anvilUrl}`);
  return {
    url,
    port,
    get seeded() {
      return seeded;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
