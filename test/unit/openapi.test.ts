/**
 * The OpenAPI document as a client generator reads it (`GET /openapi.json`): every operation has a
 * unique operationId, every JSON response a schema with a known shape (no empty or `any` body), and the
 * turn event streams reference the `TurnEvent` component, which holds every event type of
 * src/events.ts.
 */
import pino from "pino";
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import type { AgentSummary } from "../../src/agents/agent-registry.js";
import { buildApp } from "../../src/app.js";
import { parseConfig } from "../../src/config/load.js";
import { eventBodySchema, type TurnEvent } from "../../src/events.js";
import type { HistoryBlock, TurnRecord } from "../../src/history/model.js";
import { createMemoryHistoryStore } from "../../src/history/sqlite-store.js";
import * as routes from "../../src/http/route-definitions.js";
import type {
  activeTurnSchema,
  agentSchema,
  historyBlockSchema,
  mcpServerSchema,
  traceEntrySchema,
  turnEventSchema,
  turnRecordSchema,
} from "../../src/http/schemas.js";
import type { McpServerInfo } from "../../src/mcp/manager.js";
import type { TraceEntry } from "../../src/observability/decision.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";
import type { ActiveTurnDetails } from "../../src/turns/active-details.js";

type Schema = {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  allOf?: Schema[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  const?: unknown;
  enum?: unknown[];
  additionalProperties?: boolean | Schema;
};
type Content = Record<string, { schema?: Schema }>;
type Operation = {
  operationId?: string;
  responses: Record<string, { content?: Content }>;
};
type Document = {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};

const HTTP_METHODS = new Set(["get", "post", "put", "patch", "delete"]);

let runtime: Runtime;
let app: ReturnType<typeof buildApp>;
let document: Document;

beforeAll(async () => {
  const { config } = parseConfig({ logLevel: "silent" });
  runtime = createRuntime(config, { store: createMemoryHistoryStore(), logger: pino({ level: "silent" }) });
  app = buildApp(runtime);
  const response = await app.request("/openapi.json");
  expect(response.status).toBe(200);
  document = (await response.json()) as Document;
});
afterAll(async () => {
  await runtime.manager.abortAll("shutdown", 1_000);
  runtime.store.close();
});

function operations(): { name: string; operation: Operation }[] {
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods)
      .filter(([method]) => HTTP_METHODS.has(method))
      .map(([method, operation]) => ({ name: `${method.toUpperCase()} ${path}`, operation })),
  );
}

/** The schema behind a `$ref`, followed through the components. */
function resolve(schema: Schema): Schema {
  if (!schema.$ref) return schema;
  const name = schema.$ref.replace("#/components/schemas/", "");
  const target = document.components.schemas[name];
  if (!target) throw new Error(`dangling reference ${schema.$ref}`);
  return resolve(target);
}

/** A shape is known when it names a type, properties, a constant or alternatives with known shapes. */
function hasKnownShape(schema: Schema): boolean {
  const resolved = resolve(schema);
  const alternatives = resolved.allOf ?? resolved.anyOf ?? resolved.oneOf;
  if (alternatives) return alternatives.length > 0 && alternatives.every(hasKnownShape);
  if (resolved.type === "object") return Object.keys(resolved.properties ?? {}).length > 0;
  if (resolved.type === "array") return resolved.items !== undefined && hasKnownShape(resolved.items);
  return resolved.type !== undefined || resolved.const !== undefined || resolved.enum !== undefined;
}

/**
 * Where a JSON body says nothing of a value (a schema with no type, reference, alternatives, constant
 * or enum: `z.unknown()`), through properties, items and alternatives; `additionalProperties` (an
 * object's open rest) is not walked.
 */
function vaguePlaces(schema: Schema, place: string, seen = new Set<string>()): string[] {
  if (schema.$ref) {
    if (seen.has(schema.$ref)) return [];
    seen.add(schema.$ref);
    return vaguePlaces(resolve(schema), schema.$ref.replace("#/components/schemas/", ""), seen);
  }
  const alternatives = [...(schema.allOf ?? []), ...(schema.anyOf ?? []), ...(schema.oneOf ?? [])];
  if (alternatives.length > 0) return alternatives.flatMap((part) => vaguePlaces(part, place, seen));
  if (schema.type === undefined && schema.const === undefined && schema.enum === undefined) return [place];
  const properties = Object.entries(schema.properties ?? {}).flatMap(([name, property]) =>
    vaguePlaces(property, `${place}.${name}`, seen),
  );
  const items = schema.items ? vaguePlaces(schema.items, `${place}[]`, seen) : [];
  return [...properties, ...items];
}

/** Values whose shape is the provider's or the tool's own, not the API's: left open on purpose. */
const OPEN_BY_DESIGN = new Set(["Transcript.system", "Transcript.messages[]"]);

/** Every `type` constant a schema's alternatives (through references) can carry. */
function eventTypesOf(schema: Schema): string[] {
  const resolved = resolve(schema);
  const alternatives = [...(resolved.allOf ?? []), ...(resolved.anyOf ?? []), ...(resolved.oneOf ?? [])];
  const own = resolved.properties?.type;
  const constants = own ? [resolve(own).const, ...(resolve(own).enum ?? [])] : [];
  return [
    ...constants.filter((value): value is string => typeof value === "string"),
    ...alternatives.flatMap(eventTypesOf),
  ];
}

describe("GET /openapi.json", () => {
  it("gives every operation an operationId, each one unique", () => {
    const all = operations();
    expect(all.length).toBeGreaterThanOrEqual(22);
    const missing = all.filter(({ operation }) => !operation.operationId).map(({ name }) => name);
    expect(missing).toEqual([]);
    const ids = all.map(({ operation }) => operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(
      expect.arrayContaining([
        "startTurn",
        "followTurnEvents",
        "abortTurn",
        "cancelTool",
        "decideApproval",
        "continueTurn",
        "listActiveTurns",
        "getTurnTrace",
        "getSessionHistory",
        "getTranscript",
        "listSessions",
        "createSession",
        "getSession",
        "renameSession",
        "deleteSession",
        "listAgents",
        "listMcpServers",
        "createStreamToken",
        "postChat",
        "resumeChat",
        "stopChat",
      ]),
    );
  });

  it("describes every JSON response body, and every value inside it, with a known shape (never empty or any)", () => {
    const vague: string[] = [];
    for (const { name, operation } of operations()) {
      for (const [status, response] of Object.entries(operation.responses)) {
        const schema = response.content?.["application/json"]?.schema;
        if (!response.content?.["application/json"]) continue;
        if (!schema || !hasKnownShape(schema)) vague.push(`${name} ${status}`);
        else {
          const places = vaguePlaces(schema, `${name} ${status}`).filter(
            (place) => !OPEN_BY_DESIGN.has(place),
          );
          vague.push(...places);
        }
      }
    }
    expect(vague).toEqual([]);
  });

  it("types the success bodies the client reads, field by field", () => {
    const success = (path: string, method: string, status = "200") =>
      resolve(document.paths[path]?.[method]?.responses[status]?.content?.["application/json"]?.schema ?? {});
    const history = success("/api/sessions/{id}/history", "get");
    expect(resolve(history.properties?.turns?.items ?? {}).properties).toHaveProperty("status");
    expect(resolve(history.properties?.blocks?.items ?? {}).oneOf).toHaveLength(4);
    expect(
      resolve(success("/api/turns/active", "get").properties?.turns?.items ?? {}).properties,
    ).toHaveProperty("pendingApprovals");
    expect(success("/api/turns/{id}/abort", "post").properties).toHaveProperty("turnId");
    expect(success("/api/sessions", "post", "201").properties).toHaveProperty("sessionId");
  });

  it("gives each turn event stream the TurnEvent schema, which holds every event type of src/events.ts", () => {
    for (const [path, method] of [
      ["/api/sessions/stream", "post"],
      ["/api/turns/{id}/events", "get"],
    ] as const) {
      const schema = document.paths[path]?.[method]?.responses["200"]?.content?.["text/event-stream"]?.schema;
      expect(schema, `${method} ${path}`).toEqual({ $ref: "#/components/schemas/TurnEvent" });
    }
    const turnEvent = document.components.schemas.TurnEvent;
    expect(turnEvent).toBeDefined();
    const declared = eventBodySchema.options.map((option) => option.shape.type.value);
    expect(declared.length).toBeGreaterThan(10);
    expect(new Set(eventTypesOf(turnEvent!))).toEqual(new Set(declared));
    // the envelope every event carries
    const envelope = turnEvent!.allOf?.map(resolve).find((part) => part.properties?.seq);
    expect(Object.keys(envelope?.properties ?? {}).sort()).toEqual(["at", "seq", "turnId"]);
  });

  it("gives the chat streams the UI message chunk schema", () => {
    for (const [path, method] of [
      ["/api/chat", "post"],
      ["/api/chat/{id}/stream", "get"],
    ] as const) {
      const schema = document.paths[path]?.[method]?.responses["200"]?.content?.["text/event-stream"]?.schema;
      expect(schema, `${method} ${path}`).toEqual({ $ref: "#/components/schemas/UiMessageChunk" });
    }
  });
});

/** The schema a route declares for its 200 body of `mediaType`. */
function declaredSchema(route: { responses: object }, mediaType = "application/json"): z.ZodType {
  const responses = route.responses as Record<number, { content?: Record<string, { schema: z.ZodType }> }>;
  const schema = responses[200]?.content?.[mediaType]?.schema;
  if (!schema) throw new Error(`no 200 ${mediaType} schema`);
  return schema;
}

/** Reads an SSE body until `stop` matches an event; returns the events read. */
async function readEvents(response: Response, stop: (event: TurnEvent) => boolean): Promise<TurnEvent[]> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const events: TurnEvent[] = [];
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return events;
    text += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = text.indexOf("\n\n")) >= 0) {
      const data = text
        .slice(0, end)
        .split("\n")
        .find((line) => line.startsWith("data: "));
      text = text.slice(end + 2);
      if (!data) continue;
      const event = JSON.parse(data.slice("data: ".length)) as TurnEvent;
      if (!("seq" in event)) continue;
      events.push(event);
      if (stop(event)) {
        reader.releaseLock();
        return events;
      }
    }
  }
}

describe("the response schemas", () => {
  it("infer exactly the types the handlers return (checked by tsc, both ways assignable)", () => {
    expectTypeOf<z.infer<typeof turnEventSchema>>().toExtend<TurnEvent>();
    expectTypeOf<TurnEvent>().toExtend<z.infer<typeof turnEventSchema>>();
    expectTypeOf<z.infer<typeof turnRecordSchema>>().toExtend<TurnRecord>();
    expectTypeOf<TurnRecord>().toExtend<z.infer<typeof turnRecordSchema>>();
    expectTypeOf<z.infer<typeof historyBlockSchema>>().toExtend<HistoryBlock>();
    expectTypeOf<HistoryBlock>().toExtend<z.infer<typeof historyBlockSchema>>();
    expectTypeOf<z.infer<typeof activeTurnSchema>>().toExtend<ActiveTurnDetails>();
    expectTypeOf<ActiveTurnDetails>().toExtend<z.infer<typeof activeTurnSchema>>();
    expectTypeOf<z.infer<typeof traceEntrySchema>>().toExtend<TraceEntry>();
    expectTypeOf<TraceEntry>().toExtend<z.infer<typeof traceEntrySchema>>();
    expectTypeOf<z.infer<typeof agentSchema>>().toExtend<AgentSummary>();
    expectTypeOf<AgentSummary>().toExtend<z.infer<typeof agentSchema>>();
    expectTypeOf<z.infer<typeof mcpServerSchema>>().toExtend<McpServerInfo>();
    expectTypeOf<McpServerInfo>().toExtend<z.infer<typeof mcpServerSchema>>();
  });

  it("accept, field for field, what the real handlers answer", async () => {
    const json = { "Content-Type": "application/json" };
    const get = async (path: string) => (await app.request(path)).json() as Promise<unknown>;
    const post = async (path: string, body?: unknown) =>
      (await app.request(path, { method: "POST", headers: json, body: JSON.stringify(body ?? {}) })).json();
    const matches = (route: { responses: object }, body: unknown, mediaType?: string) =>
      // parsing drops fields the schema does not know and throws on a missing or mistyped one
      expect(declaredSchema(route, mediaType).parse(body)).toEqual(body);

    const running = await app.request("/api/sessions/stream", {
      method: "POST",
      headers: json,
      body: JSON.stringify({ message: '/tool echo {"text":"x"}\n/tool hang {}' }),
    });
    const started = await readEvents(
      running,
      (event) => event.type === "tool_start" && event.toolName === "hang",
    );
    for (const event of started) matches(routes.startTurnRoute, event, "text/event-stream");
    const { turnId, sessionId } = started[0] as Extract<TurnEvent, { type: "turn_start" }>;

    matches(routes.activeTurnsRoute, await get("/api/turns/active"));
    expect(((await get("/api/turns/active")) as { turns: unknown[] }).turns).toHaveLength(1);
    matches(routes.abortTurnRoute, await post(`/api/turns/${turnId}/abort`));
    await runtime.manager.abortAll("shutdown", 1_000);
    matches(routes.traceRoute, await get(`/api/turns/${turnId}/trace`));
    expect(((await get(`/api/turns/${turnId}/trace`)) as { entries: unknown[] }).entries).not.toEqual([]);

    matches(routes.historyRoute, await get(`/api/sessions/${sessionId}/history`));
    matches(routes.historyRoute, await get(`/api/sessions/${sessionId}/history?limit=1`));
    matches(routes.transcriptRoute, await get(`/api/sessions/${sessionId}/transcript?provider=anthropic`));
    matches(routes.listSessionsRoute, await get("/api/sessions"));
    matches(routes.getSessionRoute, await get(`/api/sessions/${sessionId}`));
    matches(routes.agentsRoute, await get("/api/agents"));
    matches(routes.mcpServersRoute, await get("/api/mcp/servers"));
    matches(routes.streamTokenRoute, await post(`/api/turns/${turnId}/stream-token`));
    matches(
      routes.deleteSessionRoute,
      await (await app.request(`/api/sessions/${sessionId}`, { method: "DELETE" })).json(),
    );
  });
});
