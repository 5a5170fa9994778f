/** The tool registry: name → definition, and the JSON Schema of each tool for model requests. */
import { z } from "zod";
import type { ToolDefinition } from "./types.js";

export type ToolSpec = { name: string; description: string; inputSchema: Record<string, unknown> };

export class ToolRegistry {
  private readonly tools = new Map<string, ToolDefinition>();
  /** JSON Schemas are derived once, not on every inference. */
  private specCache: ToolSpec[] | undefined;

  constructor(tools: Iterable<ToolDefinition> = []) {
    for (const tool of tools) this.register(tool);
  }

  /** Adds a tool; a second tool of the same name is a programming error. */
  register<Input>(tool: ToolDefinition<Input>): this {
    if (this.tools.has(tool.name)) throw new Error(`Tool "${tool.name}" is already registered`);
    this.tools.set(tool.name, tool as ToolDefinition);
    this.specCache = undefined;
    return this;
  }

  get(name: string): ToolDefinition | undefined {
    return this.tools.get(name);
  }

  names(): string[] {
    return [...this.tools.keys()];
  }

  /** Tool descriptions for a model request, input schemas as JSON Schema. */
  specs(): ToolSpec[] {
    this.specCache ??= [...this.tools.values()].map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: z.toJSONSchema(tool.inputSchema, { unrepresentable: "any" }) as Record<string, unknown>,
    }));
    return this.specCache;
  }
}
