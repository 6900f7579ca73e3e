// Integrity checks that cost no extra node call (README, Integrity checks): every read a single node
// answers is checked against what it asked (a block by number is that number, a receipt is that
// transaction's), against the method's shape, and against the chain rpc-proxy has seen (a small ring
// of block number → hash learned from served blocks, receipts, logs and transactions). A node caught
// lying is cordoned by the pool and the read sent to another node.
import { type Hex, keccak256, serializeTransaction } from "viem";
import type { RpcCall, RpcOutcome } from "./jsonrpc.ts";

/** What an answer failed; the `check` label of rpc_proxy_upstream_integrity_failures_total. */
export const INTEGRITY_CHECKS = [
  "shape",
  "answer_mismatch",
  "block_hash",
  "parent_hash",
  "receipt_block_hash",
  "log_block_hash",
  "tx_hash",
] as const;
export type IntegrityCheck = (typeof INTEGRITY_CHECKS)[number];

/**
 * A hash conflict this close to the consistent head (or above it) is a reorg, not a lie: the ring's
 * entry is replaced by the new answer. 64 blocks is two epochs, past which Ethereum's PoS chain is
 * final.
 */
const REORG_DEPTH = 64;
/** Blocks remembered (a power of two: the slot is the number's low bits). */
const RING = 1024;
const MASK = RING - 1;
/** Upstreams other than the answering one that must have given a hash before it convicts. */
const MIN_VOUCHERS = 2;

const QUANTITY = /^0x[0-9a-fA-F]{1,64}$/;

const isQuantity = (v: unknown): v is string => typeof v === "string" && QUANTITY.test(v);
/** 32 bytes of hex: its length and prefix (the characters are not read: it runs once per log). */
const isHash = (v: unknown): v is string => typeof v === "string" && v.length === 66 && v.startsWith("0x");
/** Hex data: "0x" and whole bytes (the characters are not read: O(1) whatever the size). */
const isData = (v: unknown): boolean => typeof v === "string" && v.startsWith("0x") && v.length % 2 === 0;
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
/** Two hex strings alike, whatever their case (nodes answer lower case; clients may not ask so). */
const sameHex = (a: string, b: string): boolean => a === b || a.toLowerCase() === b.toLowerCase();

function popcount(x: number): number {
  let n = 0;
  for (let v = x >>> 0; v !== 0; v &= v - 1) n++;
  return n;
}

/**
 * What a lie looked like, for the pool's log line: hashes and numbers only, never the answer.
 * Filled only when a check fails (no allocation while answers pass).
 */
export interface IntegrityFailure {
  check: IntegrityCheck;
  method: string;
  block: number | undefined;
  expected: string | undefined;
  got: string | undefined;
}

/**
 * One network's checker and its ring of recent blocks. Each slot holds a block number, the hash
 * seen for it and which upstreams gave that hash (a bit per upstream index, the first 32). A hash
 * that differs from the slot's is a lie only when the block is deeper than REORG_DEPTH below the
 * consistent head and at least MIN_VOUCHERS other upstreams gave the slot's hash; otherwise the
 * slot takes the new hash (a reorg, or one node's word against another's: no verdict).
 */
export class Integrity {
  readonly #chainId: number;
  readonly #numbers = new Float64Array(RING).fill(-1);
  readonly #hashes: string[] = new Array<string>(RING).fill("");
  readonly #vouchers = new Uint32Array(RING);
  /** The last failure (valid right after check() returned false). */
  readonly failure: IntegrityFailure = {
    check: "shape",
    method: "",
    block: undefined,
    expected: undefined,
    got: undefined,
  };
  // Per check() call: the answering upstream's bit and the consistent head.
  #bit = 0;
  #head = Number.POSITIVE_INFINITY;

  constructor(chainId: number) {
    this.#chainId = chainId;
  }

  /** The hash known at `n`, or undefined. */
  hashAt(n: number): string | undefined {
    const slot = n & MASK;
    return this.#numbers[slot] === n ? this.#hashes[slot] : undefined;
  }

  /**
   * Whether the answers of upstream `index` to `calls` pass every check, `head` the consistent head
   * (undefined: none yet, every conflict is then a reorg). Passing answers' block hashes are recorded
   * in the ring, vouched by `index`; a failing answer records nothing (this.failure says why).
   */
  check(
    calls: readonly RpcCall[],
    outcomes: readonly RpcOutcome[],
    index: number,
    head: bigint | undefined,
  ): boolean {
    this.#bit = index < 32 ? 1 << index : 0;
    this.#head = head === undefined ? Number.POSITIVE_INFINITY : Number(head);
    for (let i = 0; i < calls.length; i++) {
      const outcome = outcomes[i]!;
      // A JSON-RPC error is an answer of its own (a revert, a refusal): nothing to check.
      if (!outcome.ok) continue;
      const call = calls[i]!;
      const failed = this.#checkOne(call, outcome.result);
      if (failed !== undefined) {
        this.failure.check = failed;
        this.failure.method = call.method;
        return false;
      }
    }
    for (let i = 0; i < calls.length; i++) {
      const outcome = outcomes[i]!;
      if (outcome.ok) this.#record(calls[i]!.method, outcome.result);
    }
    return true;
  }

  #fail(check: IntegrityCheck, block: number | undefined, expected: unknown, got: unknown): IntegrityCheck {
    this.failure.block = block;
    this.failure.expected = typeof expected === "string" ? expected : undefined;
    this.failure.got = typeof got === "string" ? got : undefined;
    return check;
  }

  #checkOne(call: RpcCall, result: unknown): IntegrityCheck | undefined {
    this.failure.block = undefined;
    this.failure.expected = undefined;
    this.failure.got = undefined;
    switch (call.method) {
      case "eth_chainId":
        if (!isQuantity(result)) return "shape";
        return Number(result) === this.#chainId
          ? undefined
          : this.#fail("answer_mismatch", undefined, `0x${this.#chainId.toString(16)}`, result);
      case "eth_blockNumber":
      case "eth_gasPrice":
      case "eth_maxPriorityFeePerGas":
      case "eth_getBalance":
      case "eth_getTransactionCount":
      case "eth_estimateGas":
        return isQuantity(result) ? undefined : "shape";
      case "eth_call":
      case "eth_getCode":
        return isData(result) ? undefined : "shape";
      // A slot as 32 bytes, or trimmed to a quantity by some clients.
      case "eth_getStorageAt":
        return isData(result) || isQuantity(result) ? undefined : "shape";
      // Decimal (geth's and most), hex by a few.
      case "net_version":
        return typeof result === "string" && /^(\d+|0x[0-9a-fA-F]+)$/.test(result) ? undefined : "shape";
      case "web3_clientVersion":
        return typeof result === "string" ? undefined : "shape";
      case "eth_feeHistory":
        return isObject(result) && isQuantity(result.oldestBlock) && Array.isArray(result.baseFeePerGas)
          ? undefined
          : "shape";
      case "eth_getBlockByNumber":
      case "eth_getBlockByHash":
        return this.#checkBlock(call, result);
      case "eth_getTransactionByHash":
        return this.#checkTransaction(call.params[0], result);
      case "eth_getTransactionReceipt":
        return this.#checkReceipt(call.params[0], result);
      case "eth_getLogs":
        return this.#checkLogs(call.params[0], result);
      default:
        return undefined;
    }
  }

  /**
   * `hash` at block `n` against the ring: undefined when it agrees, is unknown, or differs within
   * REORG_DEPTH of the head or with too few other upstreams behind the ring's hash (the record pass
   * then replaces it); `check` when it is a lie.
   */
  #against(n: number, hash: string, check: IntegrityCheck): IntegrityCheck | undefined {
    const slot = n & MASK;
    if (this.#numbers[slot] !== n) return undefined;
    const known = this.#hashes[slot]!;
    if (sameHex(known, hash)) return undefined;
    if (n + REORG_DEPTH >= this.#head) return undefined;
    if (popcount(this.#vouchers[slot]! & ~this.#bit) < MIN_VOUCHERS) return undefined;
    return this.#fail(check, n, known, hash);
  }

  #checkBlock(call: RpcCall, result: unknown): IntegrityCheck | undefined {
    // A node without the block answers null (a lagging node, a hash it never saw): no verdict.
    if (result === null) return undefined;
    if (!isObject(result) || !Array.isArray(result.transactions) || !isHash(result.parentHash))
      return "shape";
    const { hash, number } = result;
    // A pending block has neither.
    if ((hash !== null && !isHash(hash)) || (number !== null && !isQuantity(number))) return "shape";
    const asked = call.params[0];
    if (call.method === "eth_getBlockByNumber") {
      if (isQuantity(asked) && number !== null && Number(number) !== Number(asked))
        return this.#fail("answer_mismatch", Number(asked), asked, number);
    } else if (typeof asked === "string" && hash !== null && !sameHex(hash, asked)) {
      return this.#fail("answer_mismatch", undefined, asked, hash);
    }
    if (hash === null || number === null) return undefined;
    const n = Number(number);
    const failed =
      this.#against(n, hash, "block_hash") ??
      (n > 0 ? this.#against(n - 1, result.parentHash, "parent_hash") : undefined);
    if (failed !== undefined) return failed;
    // Full transactions: each one's block must be this one (its hash is not recomputed: one
    // keccak per transaction of the block).
    for (const tx of result.transactions) {
      if (isObject(tx) && typeof tx.blockHash === "string" && !sameHex(tx.blockHash, hash))
        return this.#fail("block_hash", n, hash, tx.blockHash);
    }
    return undefined;
  }

  #checkTransaction(asked: unknown, result: unknown): IntegrityCheck | undefined {
    if (result === null) return undefined;
    if (!isObject(result) || !isHash(result.hash)) return "shape";
    if (typeof asked === "string" && !sameHex(result.hash, asked))
      return this.#fail("answer_mismatch", undefined, asked, result.hash);
    const { blockHash, blockNumber } = result;
    if (isHash(blockHash) && isQuantity(blockNumber)) {
      const failed = this.#against(Number(blockNumber), blockHash, "block_hash");
      if (failed !== undefined) return failed;
    }
    const computed = typedTransactionHash(result);
    if (computed !== undefined && !sameHex(computed, result.hash))
      return this.#fail("tx_hash", undefined, result.hash, computed);
    return undefined;
  }

  #checkReceipt(asked: unknown, result: unknown): IntegrityCheck | undefined {
    if (result === null) return undefined;
    if (
      !isObject(result) ||
      !isHash(result.transactionHash) ||
      !isHash(result.blockHash) ||
      !isQuantity(result.blockNumber) ||
      !Array.isArray(result.logs)
    )
      return "shape";
    if (typeof asked === "string" && !sameHex(result.transactionHash, asked))
      return this.#fail("answer_mismatch", undefined, asked, result.transactionHash);
    const n = Number(result.blockNumber);
    for (const log of result.logs) {
      if (!isObject(log)) return "shape";
      if (typeof log.blockHash === "string" && !sameHex(log.blockHash, result.blockHash))
        return this.#fail("receipt_block_hash", n, result.blockHash, log.blockHash);
    }
    return this.#against(n, result.blockHash, "receipt_block_hash");
  }

  #checkLogs(filter: unknown, result: unknown): IntegrityCheck | undefined {
    if (!Array.isArray(result)) return "shape";
    if (result.length === 0) return undefined;
    const f = isObject(filter) ? filter : {};
    const from = isQuantity(f.fromBlock) ? Number(f.fromBlock) : 0;
    const to = isQuantity(f.toBlock) ? Number(f.toBlock) : Number.POSITIVE_INFINITY;
    const blockHash = typeof f.blockHash === "string" ? f.blockHash : undefined;
    const addresses = lowerAll(f.address);
    for (const log of result) {
      if (!isObject(log)) return "shape";
      const { blockHash: hash, blockNumber } = log;
      // A pending log has neither.
      if (hash === null && blockNumber === null) continue;
      if (!isHash(hash) || !isQuantity(blockNumber) || typeof log.address !== "string") return "shape";
      const n = Number(blockNumber);
      if (n < from || n > to) return this.#fail("answer_mismatch", n, undefined, blockNumber);
      if (blockHash !== undefined && !sameHex(hash, blockHash))
        return this.#fail("answer_mismatch", n, blockHash, hash);
      // Nodes answer addresses in lower case: no new string per log but for one that does not.
      if (
        addresses !== undefined &&
        !addresses.includes(log.address) &&
        !addresses.includes(log.address.toLowerCase())
      )
        return this.#fail("answer_mismatch", n, undefined, undefined);
      if (!topicsMatch(f.topics, log.topics)) return this.#fail("answer_mismatch", n, undefined, undefined);
      const failed = this.#against(n, hash, "log_block_hash");
      if (failed !== undefined) return failed;
    }
    return undefined;
  }

  /** Records the block hashes a passing answer carries, vouched by the answering upstream. */
  #record(method: string, result: unknown): void {
    switch (method) {
      case "eth_getBlockByNumber":
      case "eth_getBlockByHash":
        if (isObject(result) && typeof result.hash === "string" && typeof result.number === "string") {
          const n = Number(result.number);
          this.#vouch(n, result.hash);
          if (n > 0 && typeof result.parentHash === "string") this.#vouch(n - 1, result.parentHash);
        }
        return;
      case "eth_getTransactionByHash":
      case "eth_getTransactionReceipt":
        if (
          isObject(result) &&
          typeof result.blockHash === "string" &&
          typeof result.blockNumber === "string"
        )
          this.#vouch(Number(result.blockNumber), result.blockHash);
        return;
      case "eth_getLogs":
        if (Array.isArray(result)) {
          // Logs come in block order: one vouch per block, not per log.
          let last = -1;
          for (const log of result as { blockHash?: unknown; blockNumber?: unknown }[]) {
            if (typeof log.blockHash !== "string" || typeof log.blockNumber !== "string") continue;
            const n = Number(log.blockNumber);
            if (n !== last) this.#vouch(n, log.blockHash);
            last = n;
          }
        }
        return;
    }
  }

  #vouch(n: number, hash: string): void {
    const slot = n & MASK;
    if (this.#numbers[slot] === n && sameHex(this.#hashes[slot]!, hash)) {
      this.#vouchers[slot]! |= this.#bit;
      return;
    }
    this.#numbers[slot] = n;
    this.#hashes[slot] = hash;
    this.#vouchers[slot] = this.#bit;
  }
}

/** A filter's address (one or several) lower-cased; undefined: any address. */
function lowerAll(address: unknown): string[] | undefined {
  if (typeof address === "string") return [address.toLowerCase()];
  if (Array.isArray(address) && address.length > 0)
    return address.filter((a): a is string => typeof a === "string").map((a) => a.toLowerCase());
  return undefined;
}

/** A log's topics against a filter's (null: any; a string: that one; an array: one of them). */
function topicsMatch(filter: unknown, topics: unknown): boolean {
  if (!Array.isArray(filter) || filter.length === 0) return true;
  if (!Array.isArray(topics)) return false;
  for (let i = 0; i < filter.length; i++) {
    const want = filter[i];
    if (want === null || want === undefined || (Array.isArray(want) && want.length === 0)) continue;
    const got = topics[i];
    if (typeof got !== "string") return false;
    if (typeof want === "string") {
      if (!sameHex(want, got)) return false;
    } else if (Array.isArray(want) && !want.some((w) => typeof w === "string" && sameHex(w, got))) {
      return false;
    }
  }
  return true;
}

/**
 * The hash of an EIP-2930 (0x1) or EIP-1559 (0x2) transaction recomputed from its fields (viem's
 * serializer and keccak, about 25 µs for a small one: README, Integrity checks); undefined for the
 * other types (legacy, blob, set-code, a chain's own) or a field missing: not checked.
 */
function typedTransactionHash(tx: Record<string, unknown>): string | undefined {
  const { type } = tx;
  if (type !== "0x1" && type !== "0x2") return undefined;
  const { chainId, nonce, gas, value, input, r, s } = tx;
  const parity = tx.yParity ?? tx.v;
  if (
    !isQuantity(chainId) ||
    !isQuantity(nonce) ||
    !isQuantity(gas) ||
    !isQuantity(value) ||
    !isData(input) ||
    !isQuantity(r) ||
    !isQuantity(s) ||
    !isQuantity(parity)
  )
    return undefined;
  const base = {
    chainId: Number(chainId),
    nonce: Number(nonce),
    gas: BigInt(gas),
    to: typeof tx.to === "string" ? (tx.to as Hex) : null,
    value: BigInt(value),
    data: input as Hex,
    accessList: (Array.isArray(tx.accessList) ? tx.accessList : []) as never,
  };
  const signature = { r: r as Hex, s: s as Hex, yParity: Number(parity) };
  try {
    if (type === "0x2") {
      if (!isQuantity(tx.maxFeePerGas) || !isQuantity(tx.maxPriorityFeePerGas)) return undefined;
      return keccak256(
        serializeTransaction(
          {
            ...base,
            type: "eip1559",
            maxFeePerGas: BigInt(tx.maxFeePerGas),
            maxPriorityFeePerGas: BigInt(tx.maxPriorityFeePerGas),
          },
          signature,
        ),
      );
    }
    if (!isQuantity(tx.gasPrice)) return undefined;
    return keccak256(
      serializeTransaction({ ...base, type: "eip2930", gasPrice: BigInt(tx.gasPrice) }, signature),
    );
  } catch {
    // Fields viem refuses (a fee over its bounds…): not checked rather than a verdict.
    return undefined;
  }
}
