/**
 * The README stays true: every configuration variable the server reads is documented in README.md
 * and listed in .env.example, and every API route of the OpenAPI document has a curl example.
 */
import { readFileSync } from "node:fs";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { CONFIG_FILE_VARIABLE, ENV_BINDINGS } from "../../src/config/env.js";
import { parseConfig } from "../../src/config/load.js";
import { createMemoryHistoryStore } from "../../src/history/sqlite-store.js";
import { createRuntime } from "../../src/runtime.js";

const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const variables = [...ENV_BINDINGS.map((binding) => binding.variable), CONFIG_FILE_VARIABLE];

describe("README", () => {
  it.each(variables)("documents %s", (variable) => {
    expect(readme).toContain(`\`${variable}\``);
  });

  it("has a curl example for every API route", async () => {
    const runtime = createRuntime(parseConfig({}).config, {
      store: createMemoryHistoryStore(),
      logger: pino({ level: "silent" }),
    });
    try {
      const response = await buildApp(runtime).request("/openapi.json");
      const document = (await response.json()) as { paths: Record<string, Record<string, unknown>> };
      const routes = Object.entries(document.paths).flatMap(([path, methods]) =>
        Object.keys(methods).map((method) => ({ method: method.toUpperCase(), path })),
      );
      expect(routes.length).toBeGreaterThanOrEqual(10);
      const curlLines = readme.split("\n").filter((line) => line.trimStart().startsWith("curl"));
      for (const route of routes) {
        // /api/turns/{id}/abort → /api/turns/[^/ ]+/abort
        const pattern = new RegExp(
          route.path.replace(/\{[^}]+\}/g, "[^/ ?']+").replace(/\//g, "\\/") + "(?![\\w/])",
        );
        const examples = curlLines.filter((line) => pattern.test(line));
        expect(examples.length, `${route.method} ${route.path}`).toBeGreaterThan(0);
        if (route.method === "POST")
          expect(
            examples.some((line) => line.includes("-X POST")),
            route.path,
          ).toBe(true);
      }
    } finally {
      runtime.store.close();
    }
  });
});
