// The `secp256k1` package's native build alone (its index.js would fall back to `elliptic`, pure
// JS: secp256k1.ts falls back to WebAssembly instead). Only what secp256k1.ts calls.
declare module "secp256k1/bindings.js" {
  const binding: {
    ecdsaRecover(signature: Uint8Array, recid: number, msg32: Uint8Array, compressed: boolean): Uint8Array;
    ecdsaSign(msg32: Uint8Array, privateKey: Uint8Array): { signature: Uint8Array; recid: number };
  };
  export default binding;
}
