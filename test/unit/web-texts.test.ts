/**
 * What the chat page says in words (src/web/turn-view.js): every reason a turn can be aborted for
 * (ABORT_REASONS, the event schema's list) has its sentence, so no turn ends "no reason given".
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ABORT_REASONS } from "../../src/events.js";
import { PROJECT_ROOT } from "../helpers/server.js";

describe("the chat page's words", () => {
  it("says why a turn was aborted, for every abort reason", () => {
    const source = readFileSync(join(PROJECT_ROOT, "src/web/turn-view.js"), "utf8");
    const table = /const ABORT_REASON_TEXT = \{([^}]*)\};/.exec(source)?.[1] ?? "";
    const keys = [...table.matchAll(/^\s*(\w+):/gm)].map((match) => match[1]);
    expect(keys.sort()).toEqual([...ABORT_REASONS].sort());
  });
});
