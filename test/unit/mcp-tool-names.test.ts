/** Names of MCP tools in the registry: `<server>__<tool>`, sanitised to [A-Za-z0-9_-]{1,64}. */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { mcpToolName } from "../../src/mcp/index.js";
import { ToolRegistry } from "../../src/tools/registry.js";
import type { ToolDefinition } from "../../src/tools/types.js";

describe("mcpToolName", () => {
  it.each([
    ["docs", "search", "docs__search"],
    ["docs", "search.pages", "docs__search_pages"],
    ["docs", "read page/v2", "docs__read_page_v2"],
    ["docs", "été", "docs___t_"],
    ["docs", "x".repeat(100), `docs__${"x".repeat(58)}`],
  ])("%s + %s → %s", (server, tool, expected) => {
    const name = mcpToolName(server, tool);
    expect(name).toBe(expected);
    expect(name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  });
});

describe("ToolRegistry, dynamic", () => {
  const tool = (name: string, jsonSchema?: Record<string, unknown>): ToolDefinition => ({
    name,
    description: name,
    inputSchema: z.record(z.string(), z.unknown()),
    jsonSchema,
    concurrency: "parallel",
    execute: () => Promise.resolve(name),
  });

  it("offers the model well-formed descriptions and schemas (an MCP server's may hold a lone surrogate)", () => {
    const half = "half \ud83d";
    const registry = new ToolRegistry([
      {
        ...tool("s__c", { type: "object", properties: { q: { type: "string", description: half } } }),
        description: half,
      },
    ]);
    const [spec] = registry.specs();
    expect(spec?.description).toBe("half \uFFFD");
    expect(JSON.stringify(spec?.inputSchema)).toBe(
      '{"type":"object","properties":{"q":{"type":"string","description":"half \uFFFD"}}}',
    );
  });

  it("adds and removes tools, refreshing the specs offered to the model", () => {
    const registry = new ToolRegistry([tool("a")]);
    expect(registry.specs().map((spec) => spec.name)).toEqual(["a"]);
    registry.register(tool("s__b", { type: "object", properties: { q: { type: "string" } } }));
    expect(registry.specs().map((spec) => spec.name)).toEqual(["a", "s__b"]);
    expect(registry.specs()[1]!.inputSchema).toEqual({
      type: "object",
      properties: { q: { type: "string" } },
    });
    expect(registry.unregister("s__b")).toBe(true);
    expect(registry.specs().map((spec) => spec.name)).toEqual(["a"]);
    expect(registry.get("s__b")).toBeUndefined();
  });

  it("asks resolvers for unregistered names, without offering their tools to the model", () => {
    const registry = new ToolRegistry([tool("a")]);
    const dispose = registry.addResolver((name) => (name.startsWith("down__") ? tool(name) : undefined));
    expect(registry.get("down__x")?.name).toBe("down__x");
    expect(registry.get("other")).toBeUndefined();
    expect(registry.specs().map((spec) => spec.name)).toEqual(["a"]);
    dispose();
    expect(registry.get("down__x")).toBeUndefined();
  });
});
