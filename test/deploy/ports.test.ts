// freePort (deploy/local/src/ports.ts): test workers start meshes at the same time, and a port one
// process picked but had not bound yet was picked again by another (EADDRINUSE at a service's
// start, once in a full run). A port is now claimed on the machine for a minute when handed out.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { freePort } from "@tollgate/local";
import { describe, expect, it } from "vitest";

describe("freePort", () => {
  it("never hands out a port twice within a minute, in one process or across processes", async () => {
    const here = await Promise.all(Array.from({ length: 100 }, () => freePort()));
    expect(new Set(here).size).toBe(100);
    // Another process, at the same time as this one takes 100 more.
    const ports = new URL("../../deploy/local/src/ports.ts", import.meta.url).href;
    const script = `import(${JSON.stringify(ports)}).then(async ({ freePort }) => { const ps = []; for (let i = 0; i < 100; i++) ps.push(await freePort()); console.log(JSON.stringify(ps)); });`;
    const [there, more] = await Promise.all([
      promisify(execFile)(process.execPath, ["--input-type=module", "-e", script]).then(
        ({ stdout }) => JSON.parse(stdout) as number[],
      ),
      Promise.all(Array.from({ length: 100 }, () => freePort())),
    ]);
    expect(new Set([...here, ...there, ...more]).size).toBe(300);
  });
});
