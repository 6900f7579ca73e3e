// ENS on a devnet: registry, public resolver and reverse registrar from the @ensdomains npm
// artifacts, our DevUniversalResolver at the address viem calls, and forward + reverse records.
import { keccak256, namehash, stringToBytes } from "viem";
import type { ChainRpc } from "./chain.ts";
import type { Artifacts } from "./compile.ts";
import { copyCode } from "./predeploys.ts";
import type { Address, EnsDemo } from "./types.ts";

const ROOT_NODE = `0x${"00".repeat(32)}` as const;

const labelhash = (label: string) => keccak256(stringToBytes(label));

export interface EnsName {
  /** A second-level .eth name such as "demo.eth". */
  name: string;
  owner: Address;
}

export async function setupEns(
  rpc: ChainRpc,
  artifacts: Artifacts,
  deployer: Address,
  names: EnsName[],
  universalResolverAddress: Address,
): Promise<EnsDemo> {
  const { ENSRegistry, PublicResolver, ReverseRegistrar, DevUniversalResolver } = artifacts;
  const registry = await rpc.deploy(deployer, ENSRegistry); // root node owned by the deployer
  const publicResolver = await rpc.deploy(deployer, PublicResolver, [registry]);
  const reverseRegistrar = await rpc.deploy(deployer, ReverseRegistrar, [registry, publicResolver]);
  // Deployed normally so the registry address lands in its immutable, then copied to the
  // canonical universal-resolver address where viem's chain definitions point.
  const universalTemplate = await rpc.deploy(deployer, DevUniversalResolver, [registry]);
  await copyCode(rpc, universalTemplate, universalResolverAddress);

  const setOwner = (parent: `0x${string}`, label: string, owner: Address) =>
    rpc.write(deployer, registry, ENSRegistry.abi, "setSubnodeOwner", [parent, labelhash(label), owner]);
  await setOwner(ROOT_NODE, "eth", deployer);
  await setOwner(ROOT_NODE, "reverse", deployer);
  await setOwner(namehash("reverse"), "addr", reverseRegistrar);

  const records: EnsDemo["names"] = [];
  for (const { name, owner } of names) {
    const [label, tld] = name.split(".");
    if (!label || tld !== "eth") throw new Error(`only <label>.eth names are supported, got ${name}`);
    const node = namehash(name);
    // The deployer sets the records while it owns the name, then hands the name to its owner.
    await rpc.write(deployer, registry, ENSRegistry.abi, "setSubnodeRecord", [
      namehash("eth"),
      labelhash(label),
      deployer,
      publicResolver,
      0n,
    ]);
    await rpc.write(deployer, publicResolver, PublicResolver.abi, "setAddr", [node, owner]);
    const texts = { url: `https://${name}.tollgate.invalid` };
    for (const [key, value] of Object.entries(texts)) {
      await rpc.write(deployer, publicResolver, PublicResolver.abi, "setText", [node, key, value]);
    }
    await rpc.write(deployer, registry, ENSRegistry.abi, "setOwner", [node, owner]);
    // Reverse record: claims <addr>.addr.reverse for the owner and stores the name in the resolver.
    await rpc.write(owner, reverseRegistrar, ReverseRegistrar.abi, "setName", [name]);
    records.push({ name, node, address: owner, texts });
  }

  return {
    registry,
    publicResolver,
    reverseRegistrar,
    universalResolver: universalResolverAddress,
    names: records,
    unknownName: "nobody.eth",
  };
}
