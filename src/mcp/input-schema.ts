/**
 * An MCP tool's input schema (JSON Schema; 2020-12, MCP's default dialect) as the zod schema reins checks
 * a call's input with, as it does a built-in tool's: a model's bad input is answered before the server is
 * asked, and an input edited at approval is refused (400) naming the field. The schema is compiled with
 * Ajv on the first check, not when the server lists its tools (about 2 ms each, with an Ajv of its own:
 * a shared one would keep every nested `$id` a server ever listed, and refuse a later schema that reuses
 * one); one that Ajv cannot compile accepts any object (the server still validates its own) and says
 * why, once.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import { z } from "zod";

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
