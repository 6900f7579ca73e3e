export { SerialSubmitter } from "./serial-submitter.ts";
export { localSignerLock, redisSignerLock, type ScriptRunner, type SignerLock } from "./signer-lock.ts";
