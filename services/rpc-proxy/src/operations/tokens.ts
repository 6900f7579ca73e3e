import { grpc, ServiceError } from "@tollgate/platform";
import { type Address, encodeFunctionData, type Hex, pad, parseAbi, toFunctionSelector } from "viem";
import { decodeRevertReason } from "../errors.ts";
import { jsonFromDataUri } from "./data-uri.ts";
import {
  aggregate3,
  answered,
  decimalsOf,
  type Operation,
  rpc,
  type SubCall,
  subCallFailure,
  textOf,
  toQuantity,
  word,
} from "./shared.ts";

const abi = parseAbi([
  "function name() view returns (string)",
  "function symbol() view returns (string)",
  "function decimals() view returns (uint8)",
  "function totalSupply() view returns (uint256)",
  "function balanceOf(address owner) view returns (uint256)",
  "function balanceOf(address account, uint256 id) view returns (uint256)",
  "function allowance(address owner, address spender) view returns (uint256)",
  "function supportsInterface(bytes4 interfaceId) view returns (bool)",
  "function tokenURI(uint256 tokenId) view returns (string)",
  "function uri(uint256 id) view returns (string)",
  "function ownerOf(uint256 tokenId) view returns (address)",
]);

const INTERFACE_ERC165 = "0x01ffc9a7";
const INTERFACE_ERC721 = "0x80ac58cd";
const INTERFACE_ERC1155 = "0xd9b67a26";

// Argument-free calls are the same bytes every time.
const NAME = encodeFunctionData({ abi, functionName: "name" });
const SYMBOL = encodeFunctionData({ abi, functionName: "symbol" });
const DECIMALS = encodeFunctionData({ abi, functionName: "decimals" });
const TOTAL_SUPPLY = encodeFunctionData({ abi, functionName: "totalSupply" });
const supports = (id: Hex) => encodeFunctionData({ abi, functionName: "supportsInterface", args: [id] });

const TOKEN_OF_OWNER_BY_INDEX = toFunctionSelector("tokenOfOwnerByIndex(address,uint256)");
const balanceOf = (owner: Address) => encodeFunctionData({ abi, functionName: "balanceOf", args: [owner] });

export const allowance: Operation = async (params, ctx) => {
  const { contract, owner, spender } = params as { contract: Address; owner: Address; spender: Address };
  const [value, decimals] = await aggregate3(ctx, [
    {
      target: contract,
      callData: encodeFunctionData({ abi, functionName: "allowance", args: [owner, spender] }),
    },
    { target: contract, callData: DECIMALS },
  ]);
  if (!answered(value)) throw subCallFailure(value, contract, "allowance(address,address)");
  return { allowance: toQuantity(word(value!)), contract, decimals: decimalsOf(decimals), owner, spender };
};

export const erc20Balance: Operation = async (params, ctx) => {
  const { address, contract } = params as { address: Address; contract: Address };
  const [balance, decimals, symbol] = await aggregate3(ctx, [
    { target: contract, callData: balanceOf(address) },
    { target: contract, callData: DECIMALS },
    { target: contract, callData: SYMBOL },
  ]);
  if (!answered(balance)) throw subCallFailure(balance, contract, "balanceOf(address)");
  return {
    account: address,
    balance: word(balance!).toString(),
    decimals: decimalsOf(decimals),
    symbol: textOf(symbol),
    token: contract,
  };
};

export const erc1155Balance: Operation = async (params, ctx) => {
  const { address, contract, token_id } = params as { address: Address; contract: Address; token_id: string };
  const data = encodeFunctionData({ abi, functionName: "balanceOf", args: [address, BigInt(token_id)] });
  const result = await rpc<Hex>(ctx, "eth_call", [{ to: contract, data }, "latest"]);
  if (typeof result !== "string" || result.length < 66) {
    throw subCallFailure({ success: true, returnData: "0x" }, contract, "balanceOf(address,uint256)");
  }
  return { account: address, balance: BigInt(result.slice(0, 66)).toString(), contract, token_id };
};

/**
 * balanceOf plus tokenOfOwnerByIndex(owner, i) for every i < max in ONE aggregate3: the
 * balance is not known before the call, so indexes past it simply fail (allowFailure).
 */
export const erc721Tokens: Operation = async (params, ctx) => {
  const { contract, address, max } = params as { contract: Address; address: Address; max: number };
  const calls: SubCall[] = [{ target: contract, callData: balanceOf(address) }];
  // Up to 1000 static (address, uint256) calls: concatenating the two ABI words is the same
  // bytes as encodeFunctionData at a fraction of the cost (it dominated this operation).
  const prefix = `${TOKEN_OF_OWNER_BY_INDEX}${pad(address).slice(2)}`;
  for (let i = 0; i < max; i++) {
    calls.push({ target: contract, callData: `${prefix}${i.toString(16).padStart(64, "0")}` as Hex });
  }
  const [balanceResult, ...byIndex] = await aggregate3(ctx, calls);
  if (!answered(balanceResult)) throw subCallFailure(balanceResult, contract, "balanceOf(address)");
  const balance = word(balanceResult!);
  const tokens: string[] = [];
  const wanted = balance < BigInt(max) ? Number(balance) : max;
  for (let i = 0; i < wanted; i++) {
    const r = byIndex[i];
    if (answered(r)) {
      tokens.push(word(r!).toString());
      continue;
    }
    if (i === 0) {
      // Holds tokens but cannot list them: not ERC721Enumerable.
      const revertData = r?.returnData ?? "0x";
      const reason = decodeRevertReason(revertData);
      throw new ServiceError(
        grpc.status.FAILED_PRECONDITION,
        "execution_reverted",
        `execution reverted: ${contract} does not implement ERC721Enumerable (tokenOfOwnerByIndex failed)`,
        { revert_data: revertData, reason: reason ?? "tokenOfOwnerByIndex(address,uint256) failed" },
      );
    }
    break;
  }
  return { contract, owner: address, count: tokens.length, balance: balance.toString(), tokens };
};

/** Introspection in ONE aggregate3; whatever the contract does not implement comes back null. */
export const contract: Operation = async (params, ctx) => {
  const { address } = params as { address: Address };
  const results = await aggregate3(
    ctx,
    [
      NAME,
      SYMBOL,
      DECIMALS,
      TOTAL_SUPPLY,
      supports(INTERFACE_ERC721),
      supports(INTERFACE_ERC1155),
      supports(INTERFACE_ERC165),
    ].map((callData) => ({ target: address, callData })),
  );
  const [name, symbol, decimals, totalSupply, is721, is1155, is165] = results;
  const claims = (r: typeof is721) => answered(r) && word(r!) === 1n;
  const erc165 = claims(is165);
  const interfaces: ("ERC20" | "ERC721" | "ERC1155")[] = [];
  const erc721 = erc165 && claims(is721);
  const erc1155 = erc165 && claims(is1155);
  if (answered(decimals) && answered(totalSupply) && !erc721 && !erc1155) interfaces.push("ERC20");
  if (erc721) interfaces.push("ERC721");
  if (erc1155) interfaces.push("ERC1155");
  return { address, name: textOf(name), symbol: textOf(symbol), decimals: decimalsOf(decimals), interfaces };
};

/**
 * An NFT's metadata pointer in ONE aggregate3: tokenURI (ERC-721) and uri (ERC-1155) are both
 * asked, with ownerOf and the two ERC-165 claims; the standard the contract declares picks which
 * URI counts. ERC-1155's `{id}` is filled in as the standard says (64 lower-case hex digits).
 * On-chain JSON (a data: URI) is decoded; off-chain URIs are returned, never fetched.
 */
export const nftMetadata: Operation = async (params, ctx) => {
  const { contract, token_id } = params as { contract: Address; token_id: string };
  const id = BigInt(token_id);
  const [is721, is1155, tokenUri, uri, owner] = await aggregate3(
    ctx,
    [
      supports(INTERFACE_ERC721),
      supports(INTERFACE_ERC1155),
      encodeFunctionData({ abi, functionName: "tokenURI", args: [id] }),
      encodeFunctionData({ abi, functionName: "uri", args: [id] }),
      encodeFunctionData({ abi, functionName: "ownerOf", args: [id] }),
    ].map((callData) => ({ target: contract, callData })),
  );
  const claims = (r: typeof is721) => answered(r) && word(r!) === 1n;
  const standard = claims(is721) ? "ERC721" : claims(is1155) ? "ERC1155" : null;
  const text721 = textOf(tokenUri);
  const text1155 = textOf(uri);
  const fromUri = text1155 !== null && (standard === "ERC1155" || text721 === null);
  const picked = fromUri ? text1155 : text721;
  if (picked === null) throw subCallFailure(tokenUri, contract, "tokenURI(uint256)");
  const tokenUriText = fromUri ? picked.replaceAll("{id}", id.toString(16).padStart(64, "0")) : picked;
  return {
    contract,
    token_id,
    standard,
    token_uri: tokenUriText,
    owner:
      standard !== "ERC1155" && answered(owner) ? `0x${owner!.returnData.slice(26, 66).toLowerCase()}` : null,
    metadata: jsonFromDataUri(tokenUriText),
  };
};
