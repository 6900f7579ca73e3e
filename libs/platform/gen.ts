// `pnpm gen`: the TypeScript types of the gRPC contracts in proto/, written to src/generated.
// `pnpm gen --check` (part of `pnpm check`): generates into a temporary folder instead and fails,
// naming the files, when src/generated differs, i.e. a proto changed without regenerating.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const ROOT = join(HERE, "../..");
const PROTO = join(ROOT, "proto");
const GENERATED = join(HERE, "src/generated");
// Must agree with LOADER_OPTIONS in src/grpc-contracts.ts, which loads the protos at run time.
const FLAGS = [
  "--longs=Number",
  "--enums=String",
  "--defaults",
  "--oneofs",
  "--includeComments",
  "--importFileExtension=.ts",
  "--grpcLib=@grpc/grpc-js",
];

function files(dir: string, ext: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(ext))
    .sort();
}

function generate(outDir: string): void {
  rmSync(outDir, { recursive: true, force: true });
  execFileSync(
    join(HERE, "node_modules/.bin/proto-loader-gen-types"),
    // A relative include dir: it is written into each file's "Original file" header.
    [...files(PROTO, ".proto"), ...FLAGS, `--outDir=${outDir}`, `--includeDirs=${relative(HERE, PROTO)}`],
    { cwd: HERE, stdio: ["ignore", "ignore", "inherit"] },
  );
}

if (process.argv.includes("--check")) {
  const fresh = mkdtempSync(join(tmpdir(), "tollgate-gen-"));
  try {
    generate(fresh);
    const want = files(fresh, ".ts");
    const have = files(GENERATED, ".ts");
    const stale = [...new Set([...want, ...have])].filter(
      (f) =>
        !want.includes(f) ||
        !have.includes(f) ||
        readFileSync(join(fresh, f), "utf8") !== readFileSync(join(GENERATED, f), "utf8"),
    );
    if (stale.length > 0) {
      console.error(
        `The generated gRPC types are stale (run \`pnpm gen\` and commit): ${stale
          .map((f) => relative(ROOT, join(GENERATED, f)))
          .join(", ")}`,
      );
      process.exit(1);
    }
    console.log(`gRPC types in ${relative(ROOT, GENERATED)} match proto/`);
  } finally {
    rmSync(fresh, { recursive: true, force: true });
  }
} else {
  generate(GENERATED);
}
