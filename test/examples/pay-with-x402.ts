/**
 * A paid call with the official x402 client, against `pnpm start`'s local mesh:
 *   pnpm example:x402 [path]
 * It pays from the devnet's payer1 (1,000 test USDC on the local settlement chain).
 */
import { readFileSync } from "node:fs";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { type Network, wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { privateKeyToAccount } from "viem/accounts";

const devnet = JSON.parse(
  readFileSync(process.env.DEVNET_FILE ?? new URL("../../.tollgate/devnet.json", import.meta.url), "utf8"),
);
const payer = devnet.accounts.find((a: { role: string }) => a.role === "payer1");
const network = devnet.demo.settlement.network as Network; // "eip155:84532"

const client = new x402Client()
  // The devnet USDC is not a default asset of the library: opt in to it.
  .setSpendControls({ allowedAssets: [{ network, asset: devnet.demo.settlement.usdc.address }] })
  .register(network, new ExactEvmScheme(privateKeyToAccount(payer.privateKey)));
const payingFetch = wrapFetchWithPayment(fetch, client);

const path = process.argv[2] ?? "/api/chain/block-number";
const res = await payingFetch(`http://127.0.0.1:${process.env.PORT ?? 8080}${path}`);
console.log(res.status, JSON.stringify(await res.json(), null, 2));
console.log("PAYMENT-RESPONSE:", res.headers.get("payment-response")?.slice(0, 60), "…");
