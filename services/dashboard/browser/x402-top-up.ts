// The credits page's top-up, paid from the signed-in wallet in the browser with the official x402
// client (@x402/fetch + the @x402/evm `exact` client scheme). Bundled for the browser by
// `pnpm gen:dashboard` into public/assets/generated/x402-top-up.js (no CDN: the page loads it
// from the dashboard). The wallet is the page's EIP-1193 provider (window.ethereum); it signs the
// EIP-3009 authorization (eth_signTypedData_v4) and never leaves the browser.
import { ExactEvmScheme } from "@x402/evm/exact/client";
import {
  decodePaymentResponseHeader,
  type Network,
  type PaymentRequirements,
  wrapFetchWithPayment,
  x402Client,
  x402HTTPClient,
} from "@x402/fetch";
import { createWalletClient, custom, type EIP1193Provider, getAddress } from "viem";

/** @public What the credits page shows of a top-up. */
export interface TopUpResult {
  status: number;
  /** The gateway's `data` on 200: {account_id, credited_usdc, balance_usdc, account_created}. */
  data: Record<string, unknown> | undefined;
  error: { code?: string; message?: string } | undefined;
  /** The settlement's transaction, from PAYMENT-RESPONSE. */
  transaction: string | undefined;
}

const atomicOf = (usdc: string) => {
  const [whole = "0", frac = ""] = usdc.split(".");
  return (BigInt(whole) * 1_000_000n + BigInt(frac.padEnd(6, "0").slice(0, 6))).toString();
};

/**
 * @public The bundle's one export, called by public/assets/credits.js.
 *
 * Buys `amountUsdc` of credits at `gatewayUrl` for `address` (the signed-in wallet): asks for the
 * offer (402), takes only an `exact` offer of exactly that amount, and pays it with the official
 * client. The client is allowed the offer's asset and network only.
 */
export async function topUp(
  ethereum: EIP1193Provider,
  address: string,
  gatewayUrl: string,
  path: string,
  amountUsdc: string,
): Promise<TopUpResult> {
  const url = `${gatewayUrl}${path}?amount=${encodeURIComponent(amountUsdc)}`;
  const offered = await fetch(url, { method: "POST" });
  await offered.arrayBuffer();
  if (offered.status !== 402) throw new Error(`the gateway answered ${offered.status}, not an offer (402)`);
  const required = new x402HTTPClient(new x402Client()).getPaymentRequiredResponse((name) =>
    offered.headers.get(name),
  );
  const want = atomicOf(amountUsdc);
  const offer = required.accepts.find(
    (a: PaymentRequirements) => a.scheme === "exact" && a.network.startsWith("eip155:") && a.amount === want,
  );
  if (!offer) throw new Error(`the gateway offers no x402 exact payment of ${amountUsdc} USDC`);
  const chainId = Number(offer.network.slice("eip155:".length));
  // Wallets sign typed data only for their active chain: ask for the offer's.
  await ethereum.request({
    method: "wallet_switchEthereumChain",
    params: [{ chainId: `0x${chainId.toString(16)}` }],
  });
  const wallet = createWalletClient({ account: getAddress(address), transport: custom(ethereum) });
  const signer = {
    address: wallet.account.address,
    signTypedData: (m: Parameters<typeof wallet.signTypedData>[0]) => wallet.signTypedData(m),
  };
  const client = new x402Client()
    .setSpendControls({ allowedAssets: [{ network: offer.network as Network, asset: offer.asset }] })
    .register(offer.network as Network, new ExactEvmScheme(signer as never));
  const res = await wrapFetchWithPayment(fetch, client)(url, { method: "POST" });
  const body = (await res.json().catch(() => undefined)) as
    | { data?: Record<string, unknown>; error?: { code?: string; message?: string } }
    | undefined;
  const receipt = res.headers.get("payment-response");
  return {
    status: res.status,
    data: body?.data,
    error: body?.error,
    transaction: receipt ? decodePaymentResponseHeader(receipt).transaction : undefined,
  };
}
