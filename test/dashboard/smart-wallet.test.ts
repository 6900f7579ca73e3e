import { DEFAULT_STATE_DIR } from "@tollgate/devnet";
import { devAccounts } from "@tollgate/devnet/accounts";
import { type AnvilNode, startAnvil } from "@tollgate/devnet/anvil";
import { loadArtifacts } from "@tollgate/devnet/compile";
import { type Address, createPublicClient, createWalletClient, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDashboard, type TestDashboard, Wallet } from "./support.ts";

// Sign-in by a contract wallet (EIP-1271): the dashboard asks the chain (a real anvil with a
// solc-compiled wallet contract) through viem's verifySiweMessage whether the wallet signed.

let anvil: AnvilNode;
let dash: TestDashboard;
let walletAddress: Address;
const owner = privateKeyToAccount(generatePrivateKey());

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 1, host: "127.0.0.1", accounts: 1 });
  const { artifacts } = await loadArtifacts(DEFAULT_STATE_DIR);
  const deployer = privateKeyToAccount(devAccounts()[0]!.privateKey);
  const chain = {
    id: 1,
    name: "anvil",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [anvil.rpcUrl] } },
  } as const;
  const walletClient = createWalletClient({ account: deployer, chain, transport: http(anvil.rpcUrl) });
  const publicClient = createPublicClient({ chain, transport: http(anvil.rpcUrl) });
  const hash = await walletClient.deployContract({
    abi: artifacts.DemoSmartWallet.abi,
    bytecode: artifacts.DemoSmartWallet.bytecode,
    args: [owner.address],
  });
  const receipt = await publicClient.waitForTransactionReceipt({ hash });
  if (!receipt.contractAddress) throw new Error("the wallet was not deployed");
  walletAddress = receipt.contractAddress;
  dash = await startTestDashboard({ chainId: 1, chainRpcUrl: anvil.rpcUrl });
});

afterAll(async () => {
  await dash?.stop();
  await anvil?.stop();
});

/** Signs in as the contract wallet: the message names the wallet, the owner key signs it. */
async function signInAsWallet(signer = owner) {
  const client = new Wallet(dash.url);
  const nonce = await client.call("POST", "/nonce", { address: walletAddress });
  const message = nonce.body.data.message as string;
  const signature = await signer.signMessage({ message });
  return client.call("POST", "/sign-in", { message, signature });
}

describe("sign-in with a contract wallet (EIP-1271)", () => {
  it("accepts the owner's signature for the wallet, and binds the account to the wallet's address", async () => {
    const res = await signInAsWallet();
    expect(res.status).toBe(200);
    expect(res.body.data.account.address).toBe(walletAddress.toLowerCase());
    expect(res.body.data.created).toBe(true);
  });

  it("refuses a signature by a key that does not own the wallet", async () => {
    const res = await signInAsWallet(privateKeyToAccount(generatePrivateKey()));
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe("siwe_refused");
  });
});
