/**
 * An MCP tool's input schema (JSON Schema; 2020-12, MCP's default dialect) as the zod schema reins checks
 * a call's input with, as it does a built-in tool's: a model's bad input is answered before the server is
 * asked, and an input edited at approval is refused (400) naming the field. The schema is compiled with
 * Ajv on the first check, not when the server lists its tools (about 2 ms each, with an Ajv of its own:
 * a shared one would keep every nested `$id` a server ever listed, and refuse a later schema that reuses
 * one); one that Ajv cannot compile accepts any object (the server still validates its own) and says
 * why, once.
 */
import { setFlagsFromString } from "node:v8";
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import type { RegExpEngine } from "ajv/dist/types/index.js";
import { z } from "zod";

/**
 * A schema's regular expressions (`pattern`, `patternProperties`) come from an MCP server and run, on
 * the event loop, over input a model wrote: `^(a+)+$` backtracks exponentially, and 28 characters held
 * every turn of the server for 12 s, before any deadline of the call was armed. V8 runs a pattern that
 * backtracks too much again in its linear-time engine once this flag is on (for the whole process; no
 * pattern anywhere needs catastrophic backtracking). That engine takes no `u` flag, so a pattern is
 * compiled without it unless it means something else so: a property or code point escape (`\p{…}`,
 * `\u{…}`) or a character beyond U+FFFF keeps the flag, and backtracks as before. (Without it `.` and
 * negated classes match one UTF-16 unit: an emoji counts as two characters.)
 */
setFlagsFromString("--enable-experimental-regexp-engine-on-excessive-backtracks");

const NEEDS_UNICODE_FLAG = /\\[pPu]\{|[\ud800-\udfff]/;

const patternRegExp: RegExpEngine = Object.assign(
  (pattern: string, unicode: string): RegExp => {
    if (NEEDS_UNICODE_FLAG.test(pattern)) return new RegExp(pattern, unicode);
    try {
      return new RegExp(pattern);
    } catch {
      return new RegExp(pattern, unicode);
    }
  },
  { code: "patternRegExp" },
);

export const anyObject = z.record(z.string(), z.unknown());

/**
 * The input schema of a tool whose JSON Schema is `jsonSchema`; `onUncompilable` hears why it could
 * not be compiled, if so.
 */
export function mcpInputSchema(
  jsonSchema: Record<string, unknown>,
  onUncompilable: (reason: string) => void,
): z.ZodType<Record<string, unknown>> {
  let validate: ValidateFunction | null | undefined;
  return anyObject.superRefine((input, context) => {
    validate ??= compile(jsonSchema, onUncompilable);
    if (validate === null || validate(input)) return;
    for (const error of validate.errors ?? []) {
      context.addIssue({ code: "custom", path: pathOf(error), message: error.message ?? "is invalid" });
    }
  });
}

/**
 * The compiled check, or null. Format checks are the server's (they need a formats plugin); unknown
 * keywords are ignored.
 */
function compile(jsonSchema: Record<string, unknown>, onUncompilable: (reason: string) => void) {
  const ajv = new Ajv2020({
    strict: false,
    allErrors: true,
    validateSchema: false,
    validateFormats: false,
    logger: false,
    code: { regExp: patternRegExp },
  });
  try {
    return ajv.compile(jsonSchema);
  } catch (error) {
    onUncompilable(error instanceof Error ? error.message : String(error));
    return null;
  }
}

/** The field an error is about: its JSON Pointer as a path, plus the property a keyword names. */
function pathOf(error: ErrorObject): (string | number)[] {
  const path: (string | number)[] = error.instancePath
    .split("/")
    .slice(1)
    .map((token) => token.replaceAll("~1", "/").replaceAll("~0", "~"));
  const { missingProperty, additionalProperty } = error.params as Record<string, unknown>;
  const property = missingProperty ?? additionalProperty;
  if (typeof property === "string") path.push(property);
  return path;
}
