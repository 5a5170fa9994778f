/**
 * Tool-call id projection (docs/semantics.md#transcript-integrity point 4): each provider's
 * id format, native ids kept, generated ids that never collide with them, the empty id, Kimi's
 * whole-transcript index, determinism, and the reverse map.
 */
import { describe, expect, it } from "vitest";
import {
  ID_PATTERNS,
  getProfile,
  isWellFormedId,
  projectCallIds,
  renderProviderRequest,
  type IdFormat,
  type ProfileName,
  type ProjectableCall,
} from "../../src/history/render/index.js";
import { call, history, result, user } from "../support/history-arbitraries.js";

const FORMATS: IdFormat[] = ["call", "toolu", "mistral-9", "kimi-functions"];
const AWKWARD_CANONICAL_IDS = [
  "",
  " ",
  "call_x",
  "ünïcødé/id",
  "a".repeat(300),
  "functions.echo:0",
  "toolu_ok",
];

const calls = (ids: readonly string[], name = "echo"): ProjectableCall[] =>
  ids.map((callId) => ({ callId, name }));

describe("projectCallIds", () => {
  it.each(FORMATS)(
    "%s: every canonical id, the empty one included, gets a distinct well-formed id",
    (format) => {
      const projection = projectCallIds(calls(AWKWARD_CANONICAL_IDS), format);
      const projected = AWKWARD_CANONICAL_IDS.map((id) => projection.toProjected.get(id)!);
      for (const id of projected) expect(isWellFormedId(id, format)).toBe(true);
      expect(new Set(projected).size).toBe(AWKWARD_CANONICAL_IDS.length);
      for (const [index, id] of projected.entries())
        expect(projection.toCanonical.get(id)).toBe(AWKWARD_CANONICAL_IDS[index]);
    },
  );

  // Changed on purpose: an id is kept whenever the provider accepts it (Anthropic: [a-zA-Z0-9_-]+;
  // OpenAI: at most 40 printable characters), not only when it carries the provider's own prefix.
  it.each([
    ["call", { callId: "call_Ab12Cd34Ef56Gh78", name: "echo" }, "call_Ab12Cd34Ef56Gh78"],
    ["call", { callId: "c1", providerCallId: "toolu_01abc", name: "echo" }, "toolu_01abc"],
    [
      "call",
      { callId: "c1", providerCallId: "functions.read_file:0", name: "echo" },
      "functions.read_file:0",
    ],
    ["toolu", { callId: "c1", providerCallId: "call_abc", name: "echo" }, "call_abc"],
    ["toolu", { callId: "call_Ab12Cd34Ef56Gh78", name: "echo" }, "call_Ab12Cd34Ef56Gh78"],
    ["call", { callId: "c1", providerCallId: "call_fromOpenAI", name: "echo" }, "call_fromOpenAI"],
    [
      "toolu",
      { callId: "c1", providerCallId: "toolu_01A09q90qw90lq917835lq9", name: "echo" },
      "toolu_01A09q90qw90lq917835lq9",
    ],
    ["toolu", { callId: "toolu_canonical", name: "echo" }, "toolu_canonical"],
    ["mistral-9", { callId: "c1", providerCallId: "D681PevKs", name: "echo" }, "D681PevKs"],
    ["mistral-9", { callId: "abcDEF123", name: "echo" }, "abcDEF123"],
  ] as const)("%s: keeps a native id %o", (format, call, expected) => {
    const projection = projectCallIds([call], format);
    expect(projection.toProjected.get(call.callId)).toBe(expected);
    expect(projection.kept).toBe(1);
  });

  it.each([
    ["call", "call_" + "x".repeat(36)],
    ["call", "with space"],
    ["call", ""],
    ["toolu", "toolu_with.dot"],
    ["toolu", "functions.read_file:0"],
    ["mistral-9", "abcDEF12"],
    ["mistral-9", "abcDEF12_"],
  ] as const)("%s: does not keep the id %s, which the provider would reject", (format, providerCallId) => {
    const projection = projectCallIds([{ callId: "c 1", providerCallId, name: "echo" }], format);
    const id = projection.toProjected.get("c 1")!;
    expect(id).not.toBe(providerCallId);
    expect(isWellFormedId(id, format)).toBe(true);
  });

  it.each(["call", "toolu", "mistral-9"] as const)(
    "%s: a reused provider id is kept once; the second call gets its own id",
    (format) => {
      const native = { call: "call_reused", toolu: "toolu_reused", "mistral-9": "Reused123" }[format];
      const projection = projectCallIds(
        [
          { callId: "c1", providerCallId: native, name: "echo" },
          { callId: "c2", providerCallId: native, name: "echo" },
        ],
        format,
      );
      expect(projection.toProjected.get("c1")).toBe(native);
      expect(projection.toProjected.get("c2")).not.toBe(native);
      expect(isWellFormedId(projection.toProjected.get("c2")!, format)).toBe(true);
    },
  );

  it.each(["call", "toolu", "mistral-9"] as const)(
    "%s: a generated id steps aside for a native id a later call already holds",
    (format) => {
      // Canonical ids with a space: no provider accepts them, so "c 1" needs a generated id.
      const alone = projectCallIds(calls(["c 1"]), format).toProjected.get("c 1")!;
      const projection = projectCallIds(
        [
          { callId: "c 1", name: "echo" },
          { callId: "c 2", providerCallId: alone, name: "echo" },
        ],
        format,
      );
      expect(projection.toProjected.get("c 2")).toBe(alone);
      expect(projection.toProjected.get("c 1")).not.toBe(alone);
      expect(isWellFormedId(projection.toProjected.get("c 1")!, format)).toBe(true);
    },
  );

  it("a native id equal to another call's canonical id never merges the two calls", () => {
    const projection = projectCallIds(
      [
        { callId: "call_1", name: "echo" },
        { callId: "call_2", providerCallId: "call_1", name: "echo" },
      ],
      "call",
    );
    expect(projection.toProjected.get("call_1")).toBe("call_1");
    expect(projection.toProjected.get("call_2")).toBe("call_2");
  });

  it("Kimi: functions.<name>:<index>, the index counted over the whole transcript, the name sanitized", () => {
    const projection = projectCallIds(
      [
        { callId: "a", providerCallId: "functions.read_file:0", name: "read_file" },
        { callId: "b", providerCallId: "functions.read_file:0", name: "read_file" },
        { callId: "c", name: "web.fetch" },
      ],
      "kimi-functions",
    );
    expect([...projection.toProjected.values()]).toEqual([
      "functions.read_file:0",
      "functions.read_file:1",
      "functions.web_fetch:2",
    ]);
  });

  it.each(FORMATS)("%s: deterministic, and appending calls leaves earlier ids unchanged", (format) => {
    const ids = ["call_1", "", "c3", "c4"];
    const first = projectCallIds(calls(ids), format);
    const again = projectCallIds(calls(ids), format);
    const longer = projectCallIds(calls([...ids, "c5", "c6"]), format);
    expect([...again.toProjected]).toEqual([...first.toProjected]);
    for (const id of ids) expect(longer.toProjected.get(id)).toBe(first.toProjected.get(id));
  });

  it("ignores a repeated canonical id instead of projecting it twice", () => {
    const projection = projectCallIds(calls(["c1", "c1", "c2"]), "mistral-9");
    expect(projection.toProjected.size).toBe(2);
    expect(projection.toCanonical.size).toBe(2);
    expect(projection.generated).toBe(2);
  });

  it("stays injective over many calls in the 9-character Mistral space", () => {
    const ids = Array.from({ length: 20_000 }, (_, index) => `call_${index}`);
    const projection = projectCallIds(calls(ids), "mistral-9");
    expect(projection.toCanonical.size).toBe(ids.length);
    for (const id of projection.toCanonical.keys()) expect(ID_PATTERNS["mistral-9"].test(id)).toBe(true);
  });
});

describe("ids of the same call blocks rendered again", () => {
  // each format judges these ids differently: kept by one, generated by another
  const blocks = history(
    user("go"),
    call("toolu_abc", "echo", { providerCallId: "call_abc" }),
    call("abc123XYZ"),
    call("ünï/x", "echo", { providerCallId: "Ab3De5Gh7" }),
    call("c 1"),
    result("toolu_abc", "one"),
    result("abc123XYZ", "two"),
    result("ünï/x", "three"),
    result("c 1", "four"),
  );
  const order: ProfileName[] = ["anthropic", "mistral", "openai", "kimi", "mistral", "anthropic", "openai"];

  it("get, for each provider in turn, the ids a first render of fresh copies gets", () => {
    for (const profile of order) {
      const again = renderProviderRequest(blocks, profile);
      const fresh = renderProviderRequest(structuredClone(blocks), profile);
      expect(again.messages).toEqual(fresh.messages);
      expect([...again.ids.toProjected]).toEqual([...fresh.ids.toProjected]);
      for (const id of again.ids.toProjected.values()) {
        expect(isWellFormedId(id, getProfile(profile).idFormat), `${profile}: ${id}`).toBe(true);
      }
    }
  });
});

describe("a call block whose ids changed after a render", () => {
  it("is judged by its new ids: a native id it gained is kept, a generated id follows its new canonical id", () => {
    const blocks = history(
      user("go"),
      call("c 1", "echo", { providerCallId: "not ok" }),
      result("c 1", "one"),
    );
    const callBlock = blocks[1] as (typeof blocks)[number] & { callId: string; providerCallId?: string };
    const resultBlock = blocks[2] as (typeof blocks)[number] & { callId: string };
    const projected = (profile: ProfileName) => [...renderProviderRequest(blocks, profile).ids.toProjected];
    const fresh = (profile: ProfileName) => [
      ...renderProviderRequest(structuredClone(blocks), profile).ids.toProjected,
    ];

    const generatedBefore = projected("anthropic")[0]![1];
    const mistralBefore = projected("mistral")[0]![1];
    // OpenAI's facts about the old ids are kept too: refused "not ok", generated an id
    expect(projected("openai")[0]![1]).toMatch(/^call_/);
    expect(generatedBefore).toMatch(/^toolu_/);

    callBlock.providerCallId = "toolu_native";
    expect(projected("anthropic")).toEqual([["c 1", "toolu_native"]]);
    // the facts were about the old ids, for every format: OpenAI accepts the new one
    expect(projected("openai")).toEqual(fresh("openai"));
    expect(projected("openai")).toEqual([["c 1", "toolu_native"]]);

    callBlock.callId = "c 2";
    resultBlock.callId = "c 2";
    for (const profile of ["mistral", "openai", "anthropic"] as const) {
      expect(projected(profile)).toEqual(fresh(profile));
    }
    expect(projected("mistral")[0]![1]).not.toBe(mistralBefore);
  });
});
