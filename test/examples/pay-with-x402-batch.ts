/**
 * 100 calls over one x402-batch payment channel with the official client, against `pnpm start`'s
 * local mesh (Redis must be reachable):
 *   pnpm example:x402-batch [path]
 * It pays from the devnet's payer2: the first call deposits 1 test USDC into the channel (one
 * transaction), every later call is an off-chain voucher. The settlement worker claims and settles
 * the vouchers later. Then the client scheme's `refund()` asks for the rest of the deposit back: the
 * worker claims the calls and returns the rest in one transaction on its next pass.
 */
import { readFileSync } from "node:fs";
import { toClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/client";
import { decodePaymentResponseHeader, type Network, wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";

const devnet = JSON.parse(
  readFileSync(process.env.DEVNET_FILE ?? new URL("../../.tollgate/devnet.json", import.meta.url), "utf8"),
);
const payer = devnet.accounts.find((a: { role: string }) => a.role === "payer2");
const network = devnet.demo.settlement.network as Network; // "eip155:84532"
const chain = createPublicClient({ transport: http(devnet.chains.settlement.rpcUrl) }); // reads the channel

const scheme = new BatchSettlementEvmScheme(toClientEvmSigner(privateKeyToAccount(payer.privateKey), chain));
const client = new x402Client()
  // The devnet USDC is not a default asset of the library: opt in to it.
  .setSpendControls({ allowedAssets: [{ network, asset: devnet.demo.settlement.usdc.address }] })
  .register(network, scheme);
const payingFetch = wrapFetchWithPayment(fetch, client);

const url = `http://127.0.0.1:${process.env.PORT ?? 8080}${process.argv[2] ?? "/api/chain/block-number"}`;
let charged = 0n;
for (let i = 0; i < 100; i++) {
  const res = await payingFetch(url);
  if (res.status !== 200) throw new Error(`call ${i + 1}: ${res.status} ${await res.text()}`);
  const receipt = decodePaymentResponseHeader(res.headers.get("payment-response") ?? "");
  charged += BigInt((receipt.extra as { chargedAmount: string }).chargedAmount);
  await res.arrayBuffer();
}
console.log(`100 calls paid over one channel: ${charged} atomic units of USDC accrued, one deposit on chain`);
// Money back: what the deposit did not pay for returns to the payer (one transaction, the worker's).
const refund = await scheme.refund(url);
console.log(`refund: ${refund.amount} atomic units of USDC back to the payer in ${refund.transaction}`);
