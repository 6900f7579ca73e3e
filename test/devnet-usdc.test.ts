// The devnet's settlement USDC, as x402 payments use it: EIP-3009 transferWithAuthorization (both
// signature forms), receiveWithAuthorization, cancelAuthorization and permit. Fixture in
// devnet.support.ts.
import { byRole } from "@tollgate/devnet";
import { type Address, type Hex, parseAbi, parseSignature, toHex } from "viem";
import { describe, expect, it } from "vitest";
import { client, devnet, signer, useDevnet, wallet } from "./devnet.support.ts";

const usdcAbi = parseAbi([
  "function balanceOf(address) view returns (uint256)",
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
  "function DOMAIN_SEPARATOR() view returns (bytes32)",
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)",
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
  "function receiveWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
  "function cancelAuthorization(address authorizer, bytes32 nonce, bytes signature)",
  "function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)",
  "function nonces(address owner) view returns (uint256)",
  "function allowance(address owner, address spender) view returns (uint256)",
]);
const transferWithAuthorizationTypes = {
  TransferWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;

describe("devnet", () => {
  useDevnet();

  it("settlement USDC moves funds with EIP-3009 transferWithAuthorization (both signature forms)", async () => {
    const { usdc, payTo, facilitator } = devnet.demo.settlement;
    const c = client("settlement");
    const payer = signer("payer1");
    const submitter = wallet("settlement", "facilitator");
    expect(usdc.decimals).toBe(6);
    expect(usdc.domain).toMatchObject({ name: "USD Coin", version: "2", chainId: 84532 });
    expect(usdc.balances[payer.address]).toBe("1000000000");
    expect(
      await c.readContract({
        address: usdc.address,
        abi: usdcAbi,
        functionName: "balanceOf",
        args: [facilitator],
      }),
    ).toBe(0n);

    const balanceOf = (who: Address) =>
      c.readContract({ address: usdc.address, abi: usdcAbi, functionName: "balanceOf", args: [who] });
    const payeeBefore = await balanceOf(payTo);
    const now = Math.floor(Date.now() / 1000);

    for (const form of ["vrs", "bytes"] as const) {
      const message = {
        from: payer.address,
        to: payTo,
        value: 1_500n, // 0.0015 USDC
        validAfter: BigInt(now - 600),
        validBefore: BigInt(now + 300),
        nonce: toHex(crypto.getRandomValues(new Uint8Array(32))),
      };
      const signature = await payer.signTypedData({
        domain: usdc.domain,
        types: transferWithAuthorizationTypes,
        primaryType: "TransferWithAuthorization",
        message,
      });
      const base = [
        message.from,
        message.to,
        message.value,
        message.validAfter,
        message.validBefore,
        message.nonce,
      ] as const;
      const { v, r, s } = parseSignature(signature);
      const hash =
        form === "vrs"
          ? await submitter.writeContract({
              address: usdc.address,
              abi: usdcAbi,
              functionName: "transferWithAuthorization",
              args: [...base, Number(v), r, s],
            })
          : await submitter.writeContract({
              address: usdc.address,
              abi: usdcAbi,
              functionName: "transferWithAuthorization",
              args: [...base, signature],
            });
      const receipt = await c.waitForTransactionReceipt({ hash, pollingInterval: 50 });
      expect(receipt.status).toBe("success");
      expect(
        await c.readContract({
          address: usdc.address,
          abi: usdcAbi,
          functionName: "authorizationState",
          args: [payer.address, message.nonce],
        }),
      ).toBe(true);
      // Replaying the same authorization must fail.
      await expect(
        c.simulateContract({
          account: submitter.account,
          address: usdc.address,
          abi: usdcAbi,
          functionName: "transferWithAuthorization",
          args: [...base, signature],
        }),
      ).rejects.toThrow("authorization is used or canceled");
    }
    expect(await balanceOf(payTo)).toBe(payeeBefore + 3_000n);
    expect(await balanceOf(payer.address)).toBe(1_000_000_000n - 3_000n);
  });

  it("settlement USDC supports receiveWithAuthorization, cancelAuthorization and permit", async () => {
    const { usdc, payTo } = devnet.demo.settlement;
    const c = client("settlement");
    const payer = signer("payer2");
    const payee = wallet("settlement", "payTo");
    const mined = async (hash: Hex) =>
      expect((await c.waitForTransactionReceipt({ hash, pollingInterval: 50 })).status).toBe("success");
    const now = BigInt(Math.floor(Date.now() / 1000));
    const authorization = (nonce: Hex) => ({
      from: payer.address,
      to: payTo,
      value: 2_000n,
      validAfter: 0n,
      validBefore: now + 300n,
      nonce,
    });

    // receiveWithAuthorization: only the payee may submit it.
    const received = authorization(toHex(1, { size: 32 }));
    const receiveSig = await payer.signTypedData({
      domain: usdc.domain,
      types: { ReceiveWithAuthorization: transferWithAuthorizationTypes.TransferWithAuthorization },
      primaryType: "ReceiveWithAuthorization",
      message: received,
    });
    const receiveArgs = [
      received.from,
      received.to,
      received.value,
      received.validAfter,
      received.validBefore,
      received.nonce,
      receiveSig,
    ] as const;
    await expect(
      c.simulateContract({
        account: signer("facilitator"),
        address: usdc.address,
        abi: usdcAbi,
        functionName: "receiveWithAuthorization",
        args: receiveArgs,
      }),
    ).rejects.toThrow("caller must be the payee");
    await mined(
      await payee.writeContract({
        address: usdc.address,
        abi: usdcAbi,
        functionName: "receiveWithAuthorization",
        args: receiveArgs,
      }),
    );

    // cancelAuthorization: a canceled nonce can no longer be used for a transfer.
    const canceled = authorization(toHex(2, { size: 32 }));
    const cancelSig = await payer.signTypedData({
      domain: usdc.domain,
      types: {
        CancelAuthorization: [
          { name: "authorizer", type: "address" },
          { name: "nonce", type: "bytes32" },
        ],
      },
      primaryType: "CancelAuthorization",
      message: { authorizer: payer.address, nonce: canceled.nonce },
    });
    await mined(
      await payee.writeContract({
        address: usdc.address,
        abi: usdcAbi,
        functionName: "cancelAuthorization",
        args: [payer.address, canceled.nonce, cancelSig],
      }),
    );
    expect(
      await c.readContract({
        address: usdc.address,
        abi: usdcAbi,
        functionName: "authorizationState",
        args: [payer.address, canceled.nonce],
      }),
    ).toBe(true);

    // EIP-2612 permit with the same domain.
    const spender = byRole(devnet.accounts, "facilitator");
    const nonce = await c.readContract({
      address: usdc.address,
      abi: usdcAbi,
      functionName: "nonces",
      args: [payer.address],
    });
    const permit = { owner: payer.address, spender, value: 777n, nonce, deadline: now + 300n };
    const { v, r, s } = parseSignature(
      await payer.signTypedData({
        domain: usdc.domain,
        types: {
          Permit: [
            { name: "owner", type: "address" },
            { name: "spender", type: "address" },
            { name: "value", type: "uint256" },
            { name: "nonce", type: "uint256" },
            { name: "deadline", type: "uint256" },
          ],
        },
        primaryType: "Permit",
        message: permit,
      }),
    );
    await mined(
      await payee.writeContract({
        address: usdc.address,
        abi: usdcAbi,
        functionName: "permit",
        args: [payer.address, spender, 777n, permit.deadline, Number(v), r, s],
      }),
    );
    expect(
      await c.readContract({
        address: usdc.address,
        abi: usdcAbi,
        functionName: "allowance",
        args: [payer.address, spender],
      }),
    ).toBe(777n);
    expect(
      await c.readContract({
        address: usdc.address,
        abi: usdcAbi,
        functionName: "balanceOf",
        args: [payer.address],
      }),
    ).toBe(1_000_000_000n - 2_000n);
  });
});
