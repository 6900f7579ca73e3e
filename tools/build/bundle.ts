// `pnpm build [service…]`: one ES module bundle per service, services/<service>/dist/main.mjs, what
// the images run. A bundle is one module instead of the 1,000-2,000 a service loads from sources and
// node_modules (each ES module keeps its own records, source text and compiled code: `mppx/server`
// alone pulls in viem's 728 chain-definition modules through one `import { tempo } from
// "viem/chains"`, which the bundler drops), and no TypeScript is stripped at start-up. Packages that
// declare `"sideEffects": false` lose the modules a service uses nothing of: libs/platform does (none
// of its modules acts when loaded), so the gateway and rpc-proxy, which use no Redis, leave its Redis
// connector and @redis/client out (-0.7 MB of bundle, -5 to -10 MB resident).
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SERVICES = [
  "gateway",
  "quota-meter",
  "rpc-proxy",
  "payment-verifier",
  "settlement-worker",
  "dashboard",
];

/**
 * Packages left to node_modules, found by trying: each reads files of its own when loaded, or is a
 * native addon or WebAssembly loaded by path.
 */
const EXTERNAL = [
  // libsecp256k1: a native addon found through node-gyp-build, and its WebAssembly build.
  "secp256k1",
  "tiny-secp256k1",
];
/** Optional peers mppx imports only for features no service uses (MCP); not installed. */
const ABSENT = ["@modelcontextprotocol/sdk"];

const packageOf = (spec: string) => spec.split("/", spec.startsWith("@") ? 2 : 1).join("/");

/**
 * An external package is imported from the bundle by a relative path through the node_modules of
 * the workspace package that depends on it (pnpm links a package only where it is a dependency, so
 * the bare name would not resolve from services/<service>/dist). The file inside it is the one
 * esbuild's own resolution picks (the `import` condition), and the image keeps the same layout.
 */
function externals(outDir: string): Plugin {
  const names = new Set([...EXTERNAL, ...ABSENT]);
  return {
    name: "externals",
    setup(b) {
      b.onResolve({ filter: /^[@a-z]/ }, async (args) => {
        const name = packageOf(args.path);
        if (!names.has(name) || args.pluginData === "inner") return undefined;
        if (ABSENT.includes(name)) return { path: args.path, external: true };
        const found = await b.resolve(args.path, {
          kind: args.kind,
          resolveDir: args.resolveDir,
          importer: args.importer,
          pluginData: "inner",
        });
        if (found.errors.length) return { errors: found.errors };
        const marker = `/node_modules/${name}/`;
        const inside = found.path.slice(found.path.lastIndexOf(marker) + marker.length);
        let dir = args.resolveDir;
        while (!existsSync(join(dir, "node_modules", name)) && dirname(dir) !== dir) dir = dirname(dir);
        const target = relative(outDir, join(dir, "node_modules", name, inside))
          .split("\\")
          .join("/");
        return { path: target.startsWith(".") ? target : `./${target}`, external: true };
      });
    },
  };
}

/**
 * A CommonJS package that finds its own files through `__dirname` or `__filename` (grpc-health-check's
 * health.proto, grpc-js's channelz.proto, pino's transport workers) keeps finding them in its folder
 * in node_modules, which the image keeps.
 */
function packageDirs(outDir: string): Plugin {
  return {
    name: "package-dirname",
    setup(b) {
      b.onLoad({ filter: /\/node_modules\/.*\.c?js$/ }, async (args) => {
        const contents = await readFile(args.path, "utf8");
        if (!/\b__(dirname|filename)\b/.test(contents)) return undefined;
        const file = JSON.stringify(relative(outDir, args.path).split("\\").join("/"));
        return {
          contents: `var __filename = __bundledAt(${file}), __dirname = __bundledDir(__filename);\n${contents}`,
          loader: "js",
        };
      });
    },
  };
}

/**
 * A workspace source that finds files beside it (`new URL("../migrations", import.meta.url)`:
 * proto/, migrations, Lua scripts, the dashboard's pages) keeps finding them from the bundle: its
 * `import.meta.url` becomes its own source path, resolved against the bundle's.
 */
function sourceUrls(outDir: string): Plugin {
  return {
    name: "source-import-meta-url",
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, async (args) => {
        if (args.path.includes("/node_modules/")) return undefined;
        let contents = await readFile(args.path, "utf8");
        if (contents.includes("import.meta.url")) {
          const rel = relative(outDir, args.path).split("\\").join("/");
          contents = contents.replaceAll(
            "import.meta.url",
            `new URL(${JSON.stringify(rel)}, import.meta.url).href`,
          );
        }
        return { contents, loader: "ts" };
      });
    },
  };
}

const asked = process.argv.slice(2);
for (const service of asked.length ? asked : SERVICES) {
  if (!SERVICES.includes(service)) throw new Error(`no service ${service} (one of ${SERVICES.join(", ")})`);
  const outDir = resolve(ROOT, "services", service, "dist");
  const { outputFiles } = await build({
    entryPoints: [resolve(ROOT, "services", service, "src/main.ts")],
    outfile: resolve(outDir, "main.mjs"),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node24",
    // TypeScript read as Node's type stripping runs the sources (every import kept as written), the
    // same here and in the image's build stage, whose context has no tsconfig.json.
    tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
    // CommonJS packages inside an ES module bundle call require() for Node's built-ins; packageDirs
    // resolves a package's own paths against the bundle's URL.
    banner: {
      js: [
        'import { createRequire as __createRequire } from "node:module";',
        'import { dirname as __bundledDir } from "node:path";',
        'import { fileURLToPath as __fileURLToPath } from "node:url";',
        "const require = __createRequire(import.meta.url);",
        "const __bundledAt = (path) => __fileURLToPath(new URL(path, import.meta.url));",
      ].join(""),
    },
    plugins: [externals(outDir), packageDirs(outDir), sourceUrls(outDir)],
    // No comments nor layout: V8 keeps every loaded script's source in memory for as long as the
    // process runs, and one non-ASCII character in a comment makes it a two-byte string, twice the
    // size (the gateway's bundle: 14 MB of source held, 3 MB minified). Names are kept as written,
    // so stack traces still name the functions.
    minifyWhitespace: true,
    minifySyntax: true,
    charset: "ascii",
    legalComments: "none",
    logLevel: "warning",
    write: false,
  });
  for (const out of outputFiles) {
    await mkdir(dirname(out.path), { recursive: true });
    // esbuild leaves a regular expression's characters as written (nats's /µs/): escaped here, as
    // `\u00b5` means the same character in a pattern, a string or a template.
    const ascii = out.text.replace(
      /[^\t\n\r -~]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
    );
    await writeFile(out.path, ascii);
  }
}
