import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * A local secret kept in the state dir (mode 0600) so it survives restarts: the
 * API-key pepper must, or keys made yesterday stop working. Services read it through
 * NAME_FILE, the same way Kubernetes mounts secrets.
 */
export function localSecret(
  stateDir: string,
  name: string,
  format: "token" | "private-key" = "token",
): string {
  mkdirSync(stateDir, { recursive: true });
  const file = join(stateDir, name);
  if (!existsSync(file)) {
    const bytes = randomBytes(32);
    writeFileSync(
      file,
      format === "private-key" ? `0x${bytes.toString("hex")}` : bytes.toString("base64url"),
      {
        mode: 0o600,
      },
    );
  }
  return file;
}
