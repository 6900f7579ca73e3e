// Paying Tollgate for real with the official x402 client libraries (@x402/fetch + the @x402/evm
// `exact` client scheme), as a devnet payer or a wallet of its own funded by one. Shared by the e2e
// suite and the benchmark, so it must not depend on vitest.
import type { DevnetAccount, DevnetChain, DevnetFile } from "@tollgate/devnet";
import { type FacilitatorEvmSigner, toFacilitatorEvmSigner } from "@x402/evm";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { appendPaymentIdentifierToExtensions } from "@x402/extensions/payment-identifier";
import { type Network, wrapFetchWithPayment, x402Client, x402HTTPClient } from "@x402/fetch";
import {
  createPublicClient,
  createWalletClient,
  erc20Abi,
  type Hex,
  http,
  type PublicClient,
  publicActions,
} from "viem";
import { type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";

export type Address = `0x${string}`;

/** What a payer needs from a devnet: a live `Devnet` or its devnet.json both fit. */
export type DevnetInfo = Pick<DevnetFile, "accounts" | "demo"> & { chains: Record<string, DevnetChain> };

/** One request that carried a payment, as the client library sent it. */
interface PaidRequest {
  url: string;
  /** The PAYMENT-SIGNATURE header the client sent. */
  signature: string;
  status: number;
  /** Request sent → response headers received. */
  ms: number;
}

export interface X402Payer {
  role: string;
  address: Address;
  account: PrivateKeyAccount;
  /** fetch that answers 402s by paying (official @x402/fetch wrapper). */
  fetch: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
  /** The same client, for signing payments by hand (e.g. against a tampered offer). */
  http: x402HTTPClient;
  /** Every request `fetch` sent with a payment, in order. */
  paid: PaidRequest[];
}

export interface PayerOptions {
  /**
   * Networks (besides the settlement chain) the client may sign for, with the devnet token
   * opted in there too. Only for tests that make the client pay on the wrong network.
   */
  extraNetworks?: Network[];
  /**
   * The x402 payment-identifier each payment carries (the official extension's client helper, as
   * its docs hook it in), asked anew for each payment; unset: none.
   */
  paymentId?: () => string;
}

function account(devnet: DevnetInfo, role: string): DevnetAccount {
  const found = devnet.accounts.find((a) => a.role === role);
  if (!found) throw new Error(`the devnet has no account "${role}"`);
  return found;
}

export function settlementNetwork(devnet: DevnetInfo): Network {
  return devnet.demo.settlement.network as Network;
}

/** A devnet payer (payer1..payer8) paying with the official client libraries. */
export function x402Payer(devnet: DevnetInfo, role: string, opts: PayerOptions = {}): X402Payer {
  return x402PayerOfKey(devnet, account(devnet, role).privateKey, opts, role);
}

/**
 * A wallet of its own (not one of the devnet's accounts) paying with the official client libraries;
 * it pays from what was sent to it (`sendUsdc`).
 */
export function x402PayerOfKey(
  devnet: DevnetInfo,
  privateKey: Hex,
  opts: PayerOptions = {},
  role = "own wallet",
): X402Payer {
  const signer = privateKeyToAccount(privateKey);
  const network = settlementNetwork(devnet);
  const asset = devnet.demo.settlement.usdc.address;
  const networks = [network, ...(opts.extraNetworks ?? [])];
  const client = new x402Client()
    // The devnet token is not one of the library's default assets: a client opts in to it.
    .setSpendControls({ allowedAssets: networks.map((n) => ({ network: n, asset })) });
  for (const n of networks) client.register(n, new ExactEvmScheme(signer));
  const paymentId = opts.paymentId;
  if (paymentId) {
    client.onBeforePaymentCreation(async ({ paymentRequired }) => {
      paymentRequired.extensions ??= {};
      appendPaymentIdentifierToExtensions(paymentRequired.extensions, paymentId());
    });
  }

  const paid: PaidRequest[] = [];
  // Sits under the wrapper: sees exactly what the library puts on the wire.
  const recording = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    const signature = request.headers.get("payment-signature");
    const started = performance.now();
    const response = await fetch(request);
    if (signature) {
      paid.push({ url: request.url, signature, status: response.status, ms: performance.now() - started });
    }
    return response;
  };
  return {
    role,
    address: signer.address,
    account: signer,
    fetch: wrapFetchWithPayment(recording, client),
    http: new x402HTTPClient(client),
    paid,
  };
}

/**
 * A PAYMENT-SIGNATURE for the call `url` and `init` describe, signed by the official client from the
 * gateway's own 402 for that call (not sent).
 */
export async function signPayment(payer: X402Payer, url: string, init?: RequestInit): Promise<string> {
  const challenge = await fetch(url, init);
  if (challenge.status !== 402) throw new Error(`expected a 402 offer from ${url}, got ${challenge.status}`);
  const offer = payer.http.getPaymentRequiredResponse((name) => challenge.headers.get(name) ?? undefined);
  const payload = await payer.http.createPaymentPayload(offer);
  return payer.http.encodePaymentSignatureHeader(payload)["PAYMENT-SIGNATURE"] ?? "";
}

export function settlementClient(devnet: DevnetInfo): PublicClient {
  const rpcUrl = devnet.chains.settlement?.rpcUrl;
  if (!rpcUrl) throw new Error("the devnet has no settlement chain");
  return createPublicClient({ transport: http(rpcUrl, { retryCount: 0 }) });
}

/** Sends `usdcAtomic` of the settlement token from the devnet account `from` to `to`, once mined. */
export async function sendUsdc(
  devnet: DevnetInfo,
  from: string,
  to: Address,
  usdcAtomic: bigint,
): Promise<void> {
  const wallet = createWalletClient({
    account: privateKeyToAccount(account(devnet, from).privateKey),
    transport: http(devnet.chains.settlement?.rpcUrl, { retryCount: 0 }),
  }).extend(publicActions);
  const hash = await wallet.writeContract({
    address: devnet.demo.settlement.usdc.address,
    abi: erc20Abi,
    functionName: "transfer",
    args: [to, usdcAtomic],
    chain: null,
  });
  const receipt = await wallet.waitForTransactionReceipt({ hash });
  if (receipt.status !== "success") throw new Error(`sending ${usdcAtomic} USDC from ${from} reverted`);
}

/** The devnet USDC balance of `owner`, in atomic units. */
export function usdcBalance(client: PublicClient, devnet: DevnetInfo, owner: Address): Promise<bigint> {
  return client.readContract({
    address: devnet.demo.settlement.usdc.address,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [owner],
  });
}

/** An official-facilitator signer submitting on the settlement chain from the devnet account `role`. */
export function facilitatorSigner(devnet: DevnetInfo, role: string): FacilitatorEvmSigner {
  const wallet = createWalletClient({
    account: privateKeyToAccount(account(devnet, role).privateKey),
    transport: http(devnet.chains.settlement?.rpcUrl, { retryCount: 0 }),
  }).extend(publicActions);
  return toFacilitatorEvmSigner({
    address: wallet.account.address,
    readContract: (a) => wallet.readContract(a as never),
    verifyTypedData: (a) => wallet.verifyTypedData(a as never),
    writeContract: (a) => wallet.writeContract({ ...a, chain: null } as never),
    sendTransaction: (a) => wallet.sendTransaction({ ...a, chain: null }),
    waitForTransactionReceipt: (a) => wallet.waitForTransactionReceipt(a),
    getCode: (a) => wallet.getCode(a),
  });
}
