import { describe, expect, it } from "vitest";
import { matchesToolPattern, mostSpecificMatch } from "../../src/agents/tool-patterns.js";

describe("tool patterns", () => {
  it.each([
    ["web_fetch", "web_fetch", true],
    ["web_fetch", "web_fetch2", false],
    ["*", "anything", true],
    ["docs__*", "docs__search", true],
    ["docs__*", "docs__", true],
    ["docs__*", "doc__search", false],
    ["*__delete_*", "docs__delete_page", true],
    ["*__delete_*", "docs__list_pages", false],
    ["a*a", "a", false],
    ["a*a", "aa", true],
    ["*_page", "docs__delete_page", true],
  ])("%s matches %s: %s", (pattern, name, expected) => {
    expect(matchesToolPattern(pattern, name)).toBe(expected);
  });

  it("picks the exact entry, then the longest pattern", () => {
    const approval = { "*": "never", "docs__*": "always", docs__read: "never" } as const;
    expect(mostSpecificMatch(approval, "docs__read")).toBe("never");
    expect(mostSpecificMatch(approval, "docs__delete_page")).toBe("always");
    expect(mostSpecificMatch(approval, "web_fetch")).toBe("never");
    expect(mostSpecificMatch({ "docs__*": "always" }, "web_fetch")).toBeUndefined();
  });
});
