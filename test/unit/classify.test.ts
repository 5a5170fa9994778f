/**
 * Error classification (docs/semantics.md#resilience): which failures are worth retrying.
 * Each row names the error a tool might throw and the classification the runner acts on.
 */
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { ToolTimeoutError } from "../../src/errors.js";
import { classifyError, type Classifier } from "../../src/tools/resilience/classify.js";
import {
  PermanentToolError,
  ToolError,
  TransientToolError,
  type Classification,
} from "../../src/tools/resilience/tool-error.js";

/** An error as Node's system calls raise it: `code` on a plain Error. */
function systemError(code: string): Error {
  return Object.assign(new Error(`${code}: something went wrong`), { code });
}

/** An error as HTTP clients raise it: `status` (or `statusCode`) on a plain Error. */
function httpError(status: number, key: "status" | "statusCode" = "status"): Error {
  return Object.assign(new Error(`request failed with ${status}`), { [key]: status });
}

function zodError(): unknown {
  const parsed = z.object({ url: z.string() }).safeParse({ url: 42 });
  if (parsed.success) throw new Error("expected the parse to fail");
  return parsed.error;
}

type Row = { label: string; error: unknown; classification: Classification; basis: string };

const rows: Row[] = [
  {
    label: "ToolTimeoutError (total)",
    error: new ToolTimeoutError("web_fetch", 60_000, "total"),
    classification: "transient",
    basis: "timeout (total)",
  },
  {
    label: "ToolTimeoutError (idle)",
    error: new ToolTimeoutError("web_fetch", 5_000, "idle"),
    classification: "transient",
    basis: "timeout (idle)",
  },
  ...["ECONNRESET", "ETIMEDOUT", "ECONNREFUSED", "EAI_AGAIN", "EPIPE"].map((code): Row => ({
    label: `system code ${code}`,
    error: systemError(code),
    classification: "transient",
    basis: `code ${code}`,
  })),
  ...["ENOENT", "EACCES"].map((code): Row => ({
    label: `system code ${code}`,
    error: systemError(code),
    classification: "permanent",
    basis: `code ${code}`,
  })),
  ...[429, 503, 502, 504, 500].map((status): Row => ({
    label: `HTTP ${status}`,
    error: httpError(status),
    classification: "transient",
    basis: `HTTP ${status}`,
  })),
  ...[400, 401, 403, 404, 422].map((status): Row => ({
    label: `HTTP ${status}`,
    error: httpError(status),
    classification: "permanent",
    basis: `HTTP ${status}`,
  })),
  {
    label: "HTTP 503 as statusCode",
    error: httpError(503, "statusCode"),
    classification: "transient",
    basis: "HTTP 503",
  },
  {
    label: "HTTP 404 as statusCode",
    error: httpError(404, "statusCode"),
    classification: "permanent",
    basis: "HTTP 404",
  },
  {
    label: "ToolError with status 429",
    error: new ToolError("rate limited", { status: 429 }),
    classification: "transient",
    basis: "HTTP 429",
  },
  {
    label: "ToolError with status 403",
    error: new ToolError("forbidden", { status: 403 }),
    classification: "permanent",
    basis: "HTTP 403",
  },
  {
    label: "ToolError with errorCode ECONNRESET",
    error: new ToolError("socket closed", { errorCode: "ECONNRESET" }),
    classification: "transient",
    basis: "code ECONNRESET",
  },
  {
    label: "ToolError with errorCode ENOENT",
    error: new ToolError("no such file", { errorCode: "ENOENT" }),
    classification: "permanent",
    basis: "code ENOENT",
  },
  { label: "ZodError", error: zodError(), classification: "permanent", basis: "schema validation failed" },
  {
    label: "fetch failed with cause code ECONNRESET (Node's fetch)",
    error: new TypeError("fetch failed", { cause: { code: "ECONNRESET" } }),
    classification: "transient",
    basis: "code ECONNRESET",
  },
  {
    label: "fetch failed with cause code ENOTFOUND",
    error: new TypeError("fetch failed", { cause: { code: "ENOTFOUND" } }),
    classification: "permanent",
    basis: "code ENOTFOUND",
  },
  {
    label: "fetch failed without a cause",
    error: new TypeError("fetch failed"),
    classification: "transient",
    basis: "network error",
  },
  {
    label: "unknown Error",
    error: new Error("something odd"),
    classification: "transient",
    basis: "unknown error (transient by default)",
  },
  {
    label: "unknown code on an Error",
    error: systemError("E_SOMETHING_NEW"),
    classification: "transient",
    basis: "unknown error (transient by default)",
  },
  {
    label: "a thrown string",
    error: "disk full",
    classification: "transient",
    basis: "unknown error (transient by default)",
  },
  {
    label: "undefined",
    error: undefined,
    classification: "transient",
    basis: "unknown error (transient by default)",
  },
  {
    label: "TransientToolError",
    error: new TransientToolError("try later"),
    classification: "transient",
    basis: "declared by the tool",
  },
  {
    label: "PermanentToolError",
    error: new PermanentToolError("bad request"),
    classification: "permanent",
    basis: "declared by the tool",
  },
  {
    label: "ToolError declared permanent despite a transient status (503)",
    error: new ToolError("the service says it never will", { classification: "permanent", status: 503 }),
    classification: "permanent",
    basis: "declared by the tool",
  },
  {
    label: "ToolError declared transient despite a permanent status (404)",
    error: new ToolError("not there yet", { classification: "transient", status: 404 }),
    classification: "transient",
    basis: "declared by the tool",
  },
  {
    label: "PermanentToolError despite a transient code",
    error: new PermanentToolError("gave up", { errorCode: "ECONNRESET" }),
    classification: "permanent",
    basis: "declared by the tool",
  },
];

describe("classifyError", () => {
  it.each(rows)("$label → $classification", ({ error, classification, basis }) => {
    expect(classifyError(error)).toEqual({ classification, basis });
  });

  it("an HTTP status wins over a system code on the same error", () => {
    const error = Object.assign(new Error("proxy said 404"), { status: 404, code: "ECONNRESET" });
    expect(classifyError(error)).toEqual({ classification: "permanent", basis: "HTTP 404" });
  });
});

describe("a tool's own classifier", () => {
  it.each<{ label: string; error: unknown; override: Classification }>([
    { label: "a declared ToolError", error: new TransientToolError("declared"), override: "permanent" },
    { label: "a declared ToolError", error: new PermanentToolError("declared"), override: "transient" },
    {
      label: "a timeout",
      error: new ToolTimeoutError("web_fetch", 1000, "total"),
      override: "permanent",
    },
    { label: "an HTTP 503", error: httpError(503), override: "permanent" },
    { label: "an HTTP 404", error: httpError(404), override: "transient" },
    { label: "a ZodError", error: zodError(), override: "transient" },
    { label: "an unknown error", error: new Error("quota exceeded"), override: "permanent" },
  ])("wins over everything: $label → $override", ({ error, override }) => {
    const classifier = vi.fn<Classifier>(() => override);
    expect(classifyError(error, classifier)).toEqual({
      classification: override,
      basis: "tool classifier",
    });
    expect(classifier).toHaveBeenCalledWith(error);
  });

  it.each<Row>([
    {
      label: "a declared ToolError",
      error: new PermanentToolError("declared"),
      classification: "permanent",
      basis: "declared by the tool",
    },
    { label: "an HTTP 404", error: httpError(404), classification: "permanent", basis: "HTTP 404" },
    {
      label: "an unknown error",
      error: new Error("odd"),
      classification: "transient",
      basis: "unknown error (transient by default)",
    },
  ])("returning undefined defers to the built-in rules: $label", ({ error, classification, basis }) => {
    const classifier = vi.fn<Classifier>(() => undefined);
    expect(classifyError(error, classifier)).toEqual({ classification, basis });
    expect(classifier).toHaveBeenCalledTimes(1);
  });

  it("may decide some errors and defer others", () => {
    const classifier: Classifier = (error) =>
      error instanceof Error && error.message.includes("quota") ? "permanent" : undefined;
    expect(classifyError(new Error("quota exceeded"), classifier).classification).toBe("permanent");
    expect(classifyError(new Error("flaky"), classifier).classification).toBe("transient");
    expect(classifyError(httpError(401), classifier)).toEqual({
      classification: "permanent",
      basis: "HTTP 401",
    });
  });
});
