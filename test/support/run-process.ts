// A command run to its end the way an operator runs it, what it printed collected: for the suites
// that drive the operator CLI and the migrate scripts as processes.
import { spawn } from "node:child_process";

export interface ProcessResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command args` in `cwd` with exactly `env`; resolves when it exits. */
export function runProcess(
  command: string,
  args: readonly string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<ProcessResult> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: opts.cwd, env: opts.env });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}
