export { type NonceSource, SerialSubmitter } from "./serial-submitter.ts";
export {
  localSignerLock,
  type RedisSignerLockOptions,
  redisSignerLock,
  type ScriptRunner,
  SignerBusyError,
  type SignerLock,
} from "./signer-lock.ts";
