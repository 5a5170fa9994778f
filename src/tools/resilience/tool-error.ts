/**
 * Errors tools throw to say what went wrong in a way the framework can classify: an HTTP status, a
 * system error code, or an explicit classification. Plain errors are fine too; they classify by their
 * `code`/`status` properties if present, else as transient (docs/semantics.md#resilience).
 */
import { ReinsError } from "../../errors.js";

export type Classification = "transient" | "permanent";

export type ToolErrorOptions = {
  classification?: Classification;
  /** HTTP status of a failed request the tool made. */
  status?: number;
  /** A system or library error code (`ECONNRESET`, `ENOENT`, …). */
  errorCode?: string;
  cause?: unknown;
};

export class ToolError extends ReinsError {
  readonly classification: Classification | undefined;
  readonly status: number | undefined;
  readonly errorCode: string | undefined;

  constructor(message: string, options: ToolErrorOptions = {}) {
    super("tool_error", message, {
      cause: options.cause,
      data: { classification: options.classification, status: options.status, errorCode: options.errorCode },
    });
    this.classification = options.classification;
    this.status = options.status;
    this.errorCode = options.errorCode;
  }
}

/** A failure that retrying cannot fix: bad input, refused access, not found. */
export class PermanentToolError extends ToolError {
  constructor(message: string, options: Omit<ToolErrorOptions, "classification"> = {}) {
    super(message, { ...options, classification: "permanent" });
  }
}

/** A failure that may pass on retry: a dropped connection, an overloaded service. */
export class TransientToolError extends ToolError {
  constructor(message: string, options: Omit<ToolErrorOptions, "classification"> = {}) {
    super(message, { ...options, classification: "transient" });
  }
}
