/**
 * The OpenAPI document as a client generator reads it (`GET /openapi.json`): every operation has a
 * unique operationId, every JSON response a schema with a known shape (no empty or `any` body), and the
 * turn event streams reference the `TurnEvent` component, which holds every event type of
 * src/events.ts.
 */
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { parseConfig } from "../../src/config/load.js";
import { eventBodySchema } from "../../src/events.js";
import { createMemoryHistoryStore } from "../../src/history/sqlite-store.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";

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
let document: Document;

beforeAll(async () => {
  const { config } = parseConfig({ logLevel: "silent" });
  runtime = createRuntime(config, { store: createMemoryHistoryStore(), logger: pino({ level: "silent" }) });
  const response = await buildApp(runtime).request("/openapi.json");
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
