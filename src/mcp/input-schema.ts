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
import type { RegExpEngine, RegExpLike } from "ajv/dist/types/index.js";
import { z } from "zod";

/**
 * A schema's regular expressions (`pattern`, `patternProperties`) come from an MCP server and run, on
 * the event loop, over input a model wrote: `^(a+)+$` backtracks exponentially, and 28 characters held
 * every turn of the server for 12 s, before any deadline of the call was armed. So each pattern is
 * compiled for V8's linear-time engine (the `l` flag, which this V8 flag allows; process-wide, and it
 * changes nothing for a regular expression without the `l` flag). A pattern that engine cannot run — a
 * lookaround, a backreference, or one that needs the `u` flag (`\p{…}`, `\u{…}`, a character beyond
 * U+FFFF), which it lacks — is not checked here but left to the server, and said so once. Without `u`,
 * `.` and negated classes match one UTF-16 unit: an emoji counts as two characters.
 */
setFlagsFromString("--enable-experimental-regexp-engine");

/** V8's flag for its linear-time engine (not a standard flag). */
const LINEAR = "l";
const NEEDS_UNICODE_FLAG = /\\[pPu]\{|[\ud800-\udfff]/;
const LEFT_TO_THE_SERVER = { test: () => true };

/** Ajv's regular expressions for one schema: linear-time ones, or none for a pattern that cannot be. */
function linearPatterns(onUnchecked: (pattern: string) => void): RegExpEngine {
  return Object.assign(
    (pattern: string): RegExpLike => {
      if (!NEEDS_UNICODE_FLAG.test(pattern)) {
        try {
          return new RegExp(pattern, LINEAR);
        } catch {
          // not linear (or not valid without `u`): below
        }
      }
      onUnchecked(pattern);
      return LEFT_TO_THE_SERVER;
    },
    { code: "linearPatterns" },
  );
}

export const anyObject = z.record(z.string(), z.unknown());

/**
 * The input schema of a tool whose JSON Schema is `jsonSchema`; `warn` hears, once, what of it is not
 * checked here: the whole schema when it cannot be compiled, a pattern that cannot run in linear time.
 */
export function mcpInputSchema(
  jsonSchema: Record<string, unknown>,
  warn: (problem: string) => void,
): z.ZodType<Record<string, unknown>> {
  let validate: ValidateFunction | null | undefined;
  return anyObject.superRefine((input, context) => {
    validate ??= compile(jsonSchema, warn);
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
function compile(jsonSchema: Record<string, unknown>, warn: (problem: string) => void) {
  const ajv = new Ajv2020({
    strict: false,
    allErrors: true,
    validateSchema: false,
    validateFormats: false,
    logger: false,
    code: {
      regExp: linearPatterns((pattern) =>
        warn(`has a pattern that cannot be checked in linear time (${pattern}): the server checks it`),
      ),
    },
  });
  try {
    return ajv.compile(jsonSchema);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    warn(`cannot be compiled (${reason}): any object is accepted`);
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
