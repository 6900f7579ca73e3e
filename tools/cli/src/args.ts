// Argument parsing and validation, all before any connection: a usage error never depends on
// whether a service is up.
import { parseArgs } from "node:util";
import { UsageError } from "./errors.ts";

type Flags = {
  name?: string;
  daily?: string;
  monthly?: string;
  burst?: string;
  plan?: string;
  "credits-only"?: string;
  status?: string;
  payer?: string;
  day?: string;
  channel?: string;
  outcome?: string;
  limit?: string;
  cursor?: string;
  "from-block"?: string;
  "to-block"?: string;
  account?: string;
  days?: string;
  reason?: string;
  operator?: string;
  id?: string;
};
type FlagName = keyof Flags;

/** A negative amount (`credits adjust ID -0.5`) is an argument, not a short option. */
const NEGATIVE = /^-[0-9]/;
const HIDDEN = "\u0000";

export function parse(argv: string[]) {
  const parsed = parseOptions(argv.map((a) => (NEGATIVE.test(a) ? `${HIDDEN}${a}` : a)));
  const positionals = parsed.positionals.map((a) => (a.startsWith(HIDDEN) ? a.slice(1) : a));
  return { ...parsed, positionals };
}

function parseOptions(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        name: { type: "string" },
        daily: { type: "string" },
        monthly: { type: "string" },
        burst: { type: "string" },
        plan: { type: "string" },
        "credits-only": { type: "string" },
        status: { type: "string" },
        payer: { type: "string" },
        day: { type: "string" },
        channel: { type: "string" },
        outcome: { type: "string" },
        limit: { type: "string" },
        cursor: { type: "string" },
        "from-block": { type: "string" },
        "to-block": { type: "string" },
        account: { type: "string" },
        days: { type: "string" },
        reason: { type: "string" },
        operator: { type: "string" },
        id: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

export function count(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[0-9]{1,13}$/.test(value)) throw new UsageError(`--${flag} must be a non-negative integer`);
  return Number(value);
}

/** A yes/no flag (`--credits-only yes`). */
export function yesNo(value: string | undefined, flag: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (value !== "yes" && value !== "no") throw new UsageError(`--${flag} must be yes or no`);
  return value === "yes";
}

/** Refuses any flag the command does not take. */
export function only(flags: Flags, allowed: FlagName[], command: string): void {
  for (const [flag, value] of Object.entries(flags)) {
    if (value !== undefined && !allowed.includes(flag as FlagName)) {
      throw new UsageError(`${command} does not take --${flag}`);
    }
  }
}

/** Exactly the positional arguments `names`, in order. */
export function positionals(args: string[], names: string[], command: string): string[] {
  if (args.length !== names.length) {
    throw new UsageError(`${command} takes ${names.length ? names.join(" ") : "no arguments"}`);
  }
  return args;
}

/** Drops the keys left undefined, so a request names only what the operator gave. */
export const defined = <T extends object>(o: T) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

/** Limits named on the command line (`--daily`, `--monthly`, `--burst`); absent when not given. */
interface Limits {
  dailyLimit: number | undefined;
  monthlyLimit: number | undefined;
  burstPerSecond: number | undefined;
}

/** One command line, parsed: the command's name, its flags, its positional arguments. */
interface Invocation {
  command: string;
  flags: Flags;
  args: string[];
  limits: Limits;
}

/** Validates an invocation (throwing UsageError) and returns the call to make; nothing connects before. */
export type Command = (invocation: Invocation) => () => Promise<unknown>;
