/**
 * An MCP tool's JSON Schema as reins checks a call's input with it (src/mcp/input-schema.ts): patterns
 * check as JSON Schema says, and one that backtracks exponentially cannot hold the event loop.
 */
import { describe, expect, it } from "vitest";
import { mcpInputSchema } from "../../src/mcp/input-schema.js";

const schemaWithPattern = (pattern: string) =>
  mcpInputSchema(
    { type: "object", properties: { s: { type: "string", pattern } }, required: ["s"] },
    (reason) => {
      throw new Error(`not compiled: ${reason}`);
    },
  );

describe("an MCP tool's input schema", () => {
  it("checks a pattern that backtracks exponentially in linear time: the event loop is not held", () => {
    // 31 characters: about 90 s of backtracking on this machine without the linear-time engine
    const check = schemaWithPattern("^(a+)+$");
    const startedAt = Date.now();
    const result = check.safeParse({ s: `${"a".repeat(31)}!` });
    const elapsedMs = Date.now() - startedAt;
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]).toMatchObject({ path: ["s"], message: 'must match pattern "^(a+)+$"' });
    expect(elapsedMs).toBeLessThan(10_000);
    expect(check.safeParse({ s: "aaaa" }).success).toBe(true);
  });

  it("keeps patterns' meaning: anchors, classes, patternProperties, and \\p{…} which needs the u flag", () => {
    expect(schemaWithPattern("^[0-9]{3}$").safeParse({ s: "123" }).success).toBe(true);
    expect(schemaWithPattern("^[0-9]{3}$").safeParse({ s: "1234" }).success).toBe(false);
    expect(schemaWithPattern("^\\p{Lu}+$").safeParse({ s: "ÉCOLE" }).success).toBe(true);
    expect(schemaWithPattern("^\\p{Lu}+$").safeParse({ s: "école" }).success).toBe(false);
    const byName = mcpInputSchema(
      { type: "object", patternProperties: { "^x_": { type: "number" } }, additionalProperties: false },
      () => {},
    );
    expect(byName.safeParse({ x_a: 1 }).success).toBe(true);
    expect(byName.safeParse({ x_a: "one" }).success).toBe(false);
    expect(byName.safeParse({ y: 1 }).success).toBe(false);
  });
});
