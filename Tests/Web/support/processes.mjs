// Real processes for tether.js tests: a tetherd on 127.0.0.1 (binary from $TETHERD, default
// .build/debug/tetherd) and the Swift command-line client (from $TETHER, default
// .build/debug/tether). Every process started here is stopped by the test that started it.

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
export const tetherdPath = process.env.TETHERD ?? path.join(repoRoot, ".build/debug/tetherd");
export const tetherPath = process.env.TETHER ?? path.join(repoRoot, ".build/debug/tether");

for (const binary of [tetherdPath, tetherPath]) {
  if (!existsSync(binary)) throw new Error(`${binary} is missing: run \`swift build\` first (or set TETHERD / TETHER)`);
}

/** A fresh temporary directory, removed when the test ends. */
export function temporaryDirectory(t) {
  const directory = mkdtempSync(path.join(tmpdir(), "tether-web-"));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

/**
 * Starts `tetherd --port PORT ARGS` and waits for its "listening on" line. Stopped when the test
 * ends (if the test did not stop it first).
 */
export async function startDaemon(t, { port = 0, args = ["--memory-only"] } = {}) {
  const child = spawn(tetherdPath, ["--port", String(port), "--log-level", "warning", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (chunk) => { stderr += chunk; });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve(code ?? signal)));
  const daemon = {
    process: child,
    exited,
    get stderr() { return stderr; },
    /** SIGTERM, then SIGKILL after 10 s; resolves with the exit code. */
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
  t.after(() => daemon.stop());
  daemon.port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`tetherd did not start in 20 s: ${stderr}`)), 20_000);
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      const match = /listening on ws:\/\/127\.0\.0\.1:(\d+)/.exec(stdout);
      if (match) { clearTimeout(timer); resolve(Number(match[1])); }
    });
    exited.then((code) => { clearTimeout(timer); reject(new Error(`tetherd exited (${code}) before listening: ${stderr}`)); });
  });
  daemon.url = `ws://127.0.0.1:${daemon.port}`;
  return daemon;
}

/** Runs the Swift `tether` client to its end: {code, stdout, stderr}; killed after `timeout` ms. */
export function runTether(args, timeout = 20_000) {
  return new Promise((resolve, reject) => {
    const child = spawn(tetherPath, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => { stdout += chunk; });
    child.stderr.on("data", (chunk) => { stderr += chunk; });
    const timer = setTimeout(() => { child.kill("SIGKILL"); reject(new Error(`tether ${args.join(" ")} timed out: ${stderr}`)); }, timeout);
    child.on("exit", (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}

/**
 * `tether watch --url URL ARGS ROOM` in the background: `frames` fills with each JSON line it
 * prints. Stopped (SIGTERM) by `stop()` or when the test ends.
 */
export function watchWithTether(t, url, room, args = []) {
  const child = spawn(tetherPath, ["watch", "--url", url, ...args, room], { stdio: ["ignore", "pipe", "pipe"] });
  const watch = { frames: [], stderr: "" };
  let pending = "";
  child.stdout.on("data", (chunk) => {
    pending += chunk;
    const lines = pending.split("\n");
    pending = lines.pop();
    for (const line of lines) if (line.trim()) watch.frames.push(JSON.parse(line));
  });
  child.stderr.on("data", (chunk) => { watch.stderr += chunk; });
  const exited = new Promise((resolve) => child.on("exit", resolve));
  watch.stop = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    return exited;
  };
  t.after(() => watch.stop());
  return watch;
}
