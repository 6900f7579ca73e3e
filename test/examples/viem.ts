/**
 * viem on Tollgate's JSON-RPC endpoint, against `pnpm start`'s local mesh:
 *   pnpm example:viem
 * 1. The operator makes an account and an API key (the CLI's admin client, with the token
 *    `pnpm start` wrote to .tollgate/operator-token).
 * 2. A viem public client on /rpc/ethereum with the key: getBlockNumber, getBalance, readContract,
 *    a multicall (Multicall3 at its usual address) and getLogs, each call one plan unit.
 * 3. The same client paying per call: the official x402 fetch wrapper as the transport's fetchFn,
 *    paying from the devnet's payer1; each body costs the sum of its calls' prices.
 */
import { readFileSync } from "node:fs";
import { createAdminClient } from "@tollgate/cli/clients/quota-admin";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { decodePaymentResponseHeader, type Network, wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { type Address, createPublicClient, erc20Abi, http, parseAbiItem } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { mainnet } from "viem/chains";

// `pnpm start`'s mesh; the variables point it at another (the suite runs it on its own mesh).
const root = new URL("../../.tollgate/", import.meta.url);
const gateway = process.env.GATEWAY_URL ?? `http://127.0.0.1:${process.env.PORT ?? 8080}`;
const devnet = JSON.parse(readFileSync(process.env.DEVNET_FILE ?? new URL("devnet.json", root), "utf8"));
const token = devnet.demo.ethereum.erc20.address as Address;
const holder = devnet.accounts.find((a: { role: string }) => a.role === "A").address as Address;

// 1. An account and its key (a plan of 1,000 calls a day).
const admin = createAdminClient(
  process.env.QUOTA_METER_ADDR ?? "127.0.0.1:9451",
  process.env.OPERATOR_TOKEN ?? readFileSync(new URL("operator-token", root), "utf8").trim(),
);
const { secret } = await admin.quickstart(`viem example ${new Date().toISOString()}`, {
  daily: 1000,
  monthly: 0,
});
admin.close();

// 2. viem with the key: every read a JSON-RPC call relayed to the node as sent.
const client = createPublicClient({
  chain: mainnet, // the devnet's "ethereum" is chain 1, Multicall3 where viem looks for it
  transport: http(`${gateway}/rpc/ethereum`, {
    fetchOptions: { headers: { Authorization: `Bearer ${secret}` } },
  }),
});
console.log("getBlockNumber", await client.getBlockNumber());
console.log("getBalance", await client.getBalance({ address: holder }));
const [symbol, balance] = await Promise.all([
  client.readContract({ address: token, abi: erc20Abi, functionName: "symbol" }),
  client.readContract({ address: token, abi: erc20Abi, functionName: "balanceOf", args: [holder] }),
]);
console.log("readContract", symbol, balance);
const many = await client.multicall({
  contracts: [
    { address: token, abi: erc20Abi, functionName: "name" },
    { address: token, abi: erc20Abi, functionName: "decimals" },
    { address: token, abi: erc20Abi, functionName: "totalSupply" },
  ],
});
console.log(
  "multicall",
  many.map((r) => r.result),
);
const logs = await client.getLogs({
  address: token,
  event: parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)"),
  fromBlock: 0n,
});
console.log("getLogs", logs.length, "Transfer events");
const usage = await fetch(`${gateway}/api/account/usage`, { headers: { Authorization: `Bearer ${secret}` } });
console.log("usage", JSON.stringify(((await usage.json()) as { data: unknown }).data));

// 3. The same client paying per call with x402 (no key): the 402 names the body's price, the
//    official client pays it and viem gets the node's answer.
const payer = devnet.accounts.find((a: { role: string }) => a.role === "payer1");
const network = devnet.demo.settlement.network as Network;
const x402 = new x402Client()
  // The devnet USDC is not a default asset of the library: opt in to it.
  .setSpendControls({ allowedAssets: [{ network, asset: devnet.demo.settlement.usdc.address }] })
  .register(network, new ExactEvmScheme(privateKeyToAccount(payer.privateKey)));
const paying = createPublicClient({
  chain: mainnet,
  transport: http(`${gateway}/rpc/ethereum`, {
    fetchFn: wrapFetchWithPayment(fetch, x402),
    onFetchResponse: (res) => {
      const receipt = res.headers.get("payment-response");
      if (receipt) console.log("  paid, transaction", decodePaymentResponseHeader(receipt).transaction);
    },
  }),
});
console.log("paid getBlockNumber", await paying.getBlockNumber());
console.log(
  "paid readContract",
  await paying.readContract({ address: token, abi: erc20Abi, functionName: "balanceOf", args: [holder] }),
);
