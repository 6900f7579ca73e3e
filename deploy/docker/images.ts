// `pnpm images`: the six service images from deploy/docker/Dockerfile, tagged
// <prefix>/<service>:<package version> (what k8s/base names) and <prefix>/<service>:<commit>.
// Starts Docker and makes the base image first where needed (deploy/docker/machine.sh). The build
// and pnpm stages carry no SERVICE, so BuildKit builds them once and reuses them for all six.
// Environment: NODE_IMAGE (a registry base instead of the local one), IMAGE_PREFIX
// (ghcr.io/tollgate), NODE_EXTRA_CA_CERTS (a TLS-intercepting proxy's CA: the build's secret "ca").
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const DOCKER = process.env.DOCKER ?? "/usr/bin/docker";
export const MACHINE = `${ROOT}deploy/docker/machine.sh`;
export const SERVICES = [
  "gateway",
  "quota-meter",
  "payment-verifier",
  "rpc-proxy",
  "settlement-worker",
  "dashboard",
] as const;
export type Service = (typeof SERVICES)[number];

const VERSION: string = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")).version;
const PREFIX = process.env.IMAGE_PREFIX ?? "ghcr.io/tollgate";

/** The tag `pnpm images` gives a service's image for this checkout's commit. */
export function imageTag(service: Service): string {
  return `${PREFIX}/${service}:${commit()}`;
}

/** Every tag `pnpm images` gives a service's image. */
export function imageTags(service: Service): string[] {
  return [`${PREFIX}/${service}:${VERSION}`, imageTag(service)];
}

/** The checkout's commit, read once: a commit made while a run is under way does not rename its images. */
let head: string | undefined;
function commit(): string {
  head ??= execFileSync("git", ["rev-parse", "--short=12", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim();
  return head;
}

/** Docker's daemon answering and the base image present (each made only when missing). */
export function prepareDocker(): string {
  execFileSync("bash", [MACHINE, "start"], { stdio: "inherit" });
  execFileSync("bash", [MACHINE, "base"], { stdio: "inherit" });
  return execFileSync("bash", [MACHINE, "image-name"], { encoding: "utf8" }).trim();
}

export function docker(args: string[], options: { quiet?: boolean } = {}): string {
  return execFileSync(DOCKER, args, {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, DOCKER_BUILDKIT: "1" },
    stdio: options.quiet ? ["ignore", "pipe", "pipe"] : ["ignore", "pipe", "inherit"],
    maxBuffer: 64 * 1024 * 1024,
  });
}

export function buildImages(services: readonly Service[] = SERVICES): void {
  const base = prepareDocker();
  const ca = process.env.NODE_EXTRA_CA_CERTS;
  const secret = ca && existsSync(ca) ? ["--secret", `id=ca,src=${ca}`] : [];
  for (const service of services) {
    const started = Date.now();
    const tags = imageTags(service).flatMap((tag) => ["-t", tag]);
    // BuildKit's progress goes to stderr: shown on failure (or with IMAGES_VERBOSE=1).
    const built = spawnSync(
      DOCKER,
      [
        "build",
        "-f",
        "deploy/docker/Dockerfile",
        // Steps that download reach the registry through the host's network (no bridge here).
        "--network",
        "host",
        ...secret,
        "--build-arg",
        `NODE_IMAGE=${base}`,
        "--build-arg",
        `SERVICE=${service}`,
        ...tags,
        ".",
      ],
      {
        cwd: ROOT,
        env: { ...process.env, DOCKER_BUILDKIT: "1", BUILDKIT_PROGRESS: "plain" },
        encoding: "utf8",
        stdio: ["ignore", "inherit", process.env.IMAGES_VERBOSE ? "inherit" : "pipe"],
        maxBuffer: 256 * 1024 * 1024,
      },
    );
    if (built.status !== 0) {
      process.stderr.write(built.stderr?.split("\n").slice(-60).join("\n") ?? "");
      throw new Error(`images: FAILED to build ${service} (docker build exit ${built.status})`);
    }
    const size = Number(docker(["image", "inspect", "-f", "{{.Size}}", imageTag(service)], { quiet: true }));
    console.log(
      `images: ${imageTags(service).join(", ")}  ${(size / 1e6).toFixed(0)} MB  (${((Date.now() - started) / 1000).toFixed(0)} s)`,
    );
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const asked = process.argv.slice(2) as Service[];
  for (const service of asked) {
    if (!SERVICES.includes(service)) throw new Error(`no service ${service} (one of ${SERVICES.join(", ")})`);
  }
  buildImages(asked.length ? asked : SERVICES);
}
