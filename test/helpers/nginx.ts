/**
 * A real nginx in front of real reins servers, for tests. The site configuration is the shipped
 * config/nginx.conf itself: its `upstream` and `server` blocks are copied once per test site with
 * only the upstream address, the listen address and `proxy_read_timeout` substituted (plus whatever
 * a site's `edit` changes), so the tests prove the file operators deploy. nginx runs in the
 * foreground (`daemon off`) as a child process in its own process group, with its pid file, logs
 * and temp directories in a fresh prefix directory that `stop()` deletes.
 *
 * nginx is required, not optional: if the binary is missing, `startNginx` throws (the tests fail)
 * with the command that installs it.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { liveMembersOfGroup } from "./processes.js";
import { PROJECT_ROOT } from "./server.js";

export const NGINX_BIN = process.env.NGINX_BIN ?? "/usr/sbin/nginx";
export const SHIPPED_NGINX_CONF = join(PROJECT_ROOT, "config/nginx.conf");

export type NginxSite = {
  /** Key of the site's base URL in `NginxHandle.urls`. */
  name: string;
  /** `host:port` of the reins server this site proxies to. */
  upstream: string;
  /** Further changes to this site's copy of the shipped `server` block. */
  edit?: (serverBlock: string) => string;
};

export type NginxOptions = {
  sites: NginxSite[];
  /** Replaces the shipped `proxy_read_timeout` in every site (nginx time syntax, e.g. "1s"). */
  readTimeout?: string;
  timeoutMs?: number;
};

export type NginxHandle = {
  /** Base URL (`http://127.0.0.1:<port>`) of each site, by name. */
  urls: Record<string, string>;
  prefix: string;
  child: ChildProcess;
  /** The generated nginx.conf. */
  config: string;
  errorLog(): string;
  accessLog(): string;
  /** SIGQUIT (graceful), then SIGTERM, then SIGKILL to the group; deletes the prefix. */
  stop(): Promise<number | string | null>;
};

/** The shipped configuration with comments removed (so braces and semicolons in them cannot count). */
export function shippedSiteConfig(path = SHIPPED_NGINX_CONF): string {
  return readFileSync(path, "utf8")
    .split("\n")
    .map((line) => line.replace(/(^|\s)#.*$/, ""))
    .filter((line) => line.trim() !== "")
    .join("\n");
}

/** The first top-level block whose header matches `header` (e.g. /^upstream\s+reins\s*$/), braces included. */
export function extractBlock(config: string, header: RegExp): string {
  let depth = 0;
  let blockStart = 0;
  for (let index = 0; index < config.length; index++) {
    const char = config[index];
    if (char === "{") {
      if (depth === 0) {
        const headerStart = Math.max(config.lastIndexOf("}", index), config.lastIndexOf(";", index)) + 1;
        blockStart = headerStart;
      }
      depth++;
    } else if (char === "}") {
      depth--;
      if (depth === 0) {
        const block = config.slice(blockStart, index + 1).trim();
        const head = block.slice(0, block.indexOf("{")).trim();
        if (header.test(head)) return block;
      }
    }
  }
  throw new Error(`no block matching ${header} in the nginx configuration`);
}

/**
 * Replaces the value of every `name ...;` directive in `block`; throws if there is none, so a test
 * notices when the shipped file no longer has a directive it relies on.
 */
export function setDirective(block: string, name: string, value: string): string {
  const pattern = new RegExp(`^(\\s*)${name}\\s+[^;]*;`, "gm");
  if (!pattern.test(block)) throw new Error(`directive "${name}" not found in:\n${block}`);
  return block.replace(pattern, `$1${name} ${value};`);
}

/** Adds a directive at the top of a block. */
export function addDirective(block: string, directive: string): string {
  const open = block.indexOf("{");
  return `${block.slice(0, open + 1)}\n    ${directive};${block.slice(open + 1)}`;
}

/** Finds a free loopback port (released just before nginx binds it). */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/** Builds the complete nginx.conf for `sites` (listening on `ports`), everything inside `prefix`. */
export function buildNginxConfig(prefix: string, sites: NginxSite[], ports: number[], readTimeout?: string) {
  const shipped = shippedSiteConfig();
  const upstreamBlock = extractBlock(shipped, /^upstream\s+reins$/);
  const serverBlock = extractBlock(shipped, /^server$/);
  if (!/^\s*proxy_pass\s+http:\/\/reins;/m.test(serverBlock))
    throw new Error("the shipped server block does not proxy_pass to http://reins");

  const parts = sites.map((site, index) => {
    const upstreamName = `reins_${index}`;
    const upstream = setDirective(upstreamBlock, "server", site.upstream).replace(
      /^upstream\s+reins\b/,
      `upstream ${upstreamName}`,
    );
    let server = setDirective(serverBlock, "listen", `127.0.0.1:${ports[index]}`);
    server = setDirective(server, "proxy_pass", `http://${upstreamName}`);
    if (readTimeout !== undefined) server = setDirective(server, "proxy_read_timeout", readTimeout);
    if (site.edit) server = site.edit(server);
    return `# site ${site.name}\n${upstream}\n${server}`;
  });

  const temp = (name: string) => join(prefix, "temp", name);
  return [
    "worker_processes 1;",
    `pid ${join(prefix, "nginx.pid")};`,
    `error_log ${join(prefix, "error.log")} info;`,
    "events { worker_connections 256; }",
    "http {",
    `    access_log ${join(prefix, "access.log")};`,
    `    client_body_temp_path ${temp("client_body")};`,
    `    proxy_temp_path ${temp("proxy")};`,
    `    fastcgi_temp_path ${temp("fastcgi")};`,
    `    uwsgi_temp_path ${temp("uwsgi")};`,
    `    scgi_temp_path ${temp("scgi")};`,
    "    default_type application/octet-stream;",
    ...parts,
    "}",
    "",
  ].join("\n");
}

function supportsErrorLogFlag(): boolean {
  const result = spawnSync(NGINX_BIN, ["-v"], { encoding: "utf8" });
  const match = /nginx\/(\d+)\.(\d+)\.(\d+)/.exec(`${result.stderr}${result.stdout}`);
  if (!match) return false;
  const [major, minor, patch] = match.slice(1).map(Number) as [number, number, number];
  return major > 1 || (major === 1 && (minor > 19 || (minor === 19 && patch >= 5)));
}

export async function startNginx(options: NginxOptions): Promise<NginxHandle> {
  if (!existsSync(NGINX_BIN)) {
    throw new Error(
      `nginx is required for these tests but ${NGINX_BIN} does not exist. ` +
        "Install it with `apt-get update && apt-get install -y nginx` (or set NGINX_BIN).",
    );
  }
  const prefix = mkdtempSync(join(tmpdir(), "reins-nginx-"));
  // When the tests run as root, nginx's workers run as `nobody` and must reach their temp paths.
  chmodSync(prefix, 0o755);
  mkdirSync(join(prefix, "temp"), { mode: 0o755 });
  const ports: number[] = [];
  for (const _ of options.sites) ports.push(await freePort());
  const config = buildNginxConfig(prefix, options.sites, ports, options.readTimeout);
  const configPath = join(prefix, "nginx.conf");
  writeFileSync(configPath, config);

  const args = ["-p", prefix, "-c", configPath, "-g", "daemon off;"];
  // `-e` (the error log before the configuration is read) exists from nginx 1.19.5 on
  if (supportsErrorLogFlag()) args.push("-e", join(prefix, "error.log"));
  const output: string[] = [];
  const child = spawn(NGINX_BIN, args, { detached: true, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout?.on("data", (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => output.push(chunk.toString()));
  const exited = new Promise<number | string | null>((resolveExit) => {
    child.on("exit", (code, signal) => resolveExit(code ?? signal));
    child.on("error", (error) => {
      output.push(String(error));
      resolveExit("spawn error");
    });
  });
  const pgid = child.pid;
  const readLog = (name: string) => {
    try {
      return readFileSync(join(prefix, name), "utf8");
    } catch {
      return "";
    }
  };

  let stopped: Promise<number | string | null> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      const waitExit = (ms: number) =>
        Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);
      const signalGroup = (signal: NodeJS.Signals) => {
        try {
          if (pgid !== undefined) process.kill(-pgid, signal);
        } catch {
          // already gone
        }
      };
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGQUIT");
        if (!(await waitExit(3_000))) {
          child.kill("SIGTERM");
          if (!(await waitExit(2_000))) signalGroup("SIGKILL");
        }
      }
      const code = await exited;
      // Workers end with their master; make sure none is left behind.
      for (let attempt = 0; pgid !== undefined && attempt < 20; attempt++) {
        if (liveMembersOfGroup(pgid).length === 0) break;
        if (attempt === 10) signalGroup("SIGKILL");
        await new Promise((r) => setTimeout(r, 50));
      }
      rmSync(prefix, { recursive: true, force: true });
      return code;
    })();
    return stopped;
  };

  const urls = Object.fromEntries(
    options.sites.map((site, index) => [site.name, `http://127.0.0.1:${ports[index]}`]),
  );
  const failure = (why: string) =>
    new Error(`nginx ${why}:\n${output.join("")}\n${readLog("error.log")}\n--- nginx.conf ---\n${config}`);

  // Ready when every site answers /healthz through to its reins.
  const deadline = Date.now() + (options.timeoutMs ?? 15_000);
  try {
    for (const url of Object.values(urls)) {
      for (;;) {
        if (child.exitCode !== null || child.signalCode !== null) throw failure("exited during start-up");
        const ok = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1_000) }).then(
          (response) => response.ok,
          () => false,
        );
        if (ok) break;
        if (Date.now() > deadline) throw failure(`did not serve ${url}/healthz in time`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    urls,
    prefix,
    child,
    config,
    errorLog: () => readLog("error.log"),
    accessLog: () => readLog("access.log"),
    stop,
  };
}
