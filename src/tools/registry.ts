/**
 * The tool registry: name → definition, and the JSON Schema of each tool for model requests. Tools
 * may come and go while the server runs (an MCP server's `tools/list_changed`); a resolver answers
 * for names no registered tool has (an MCP server that is down before it ever listed its tools).
 */
import { wellFormed, wellFormedValue } from "../well-formed.js";
import { z } from "zod";
import type { ToolDefinition } from "./types.js";

export type ToolSpec = { name: string; description: string; inputSchema: Record<string, unknown> };

/** Answers for a name no registered tool has; not offered to the model. */
export type ToolResolver = (name: string) => ToolDefinition | undefined;

export class ToolRegistry {
  private readonly tools = new Map<string, ToolDefinition>();
  private readonly resolvers = new Set<ToolResolver>();
  /** JSON Schemas are derived once per change of the set of tools, not on every inference. */
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

  /** Removes a tool; calls already running keep the definition they started with. */
  unregister(name: string): boolean {
    const removed = this.tools.delete(name);
    if (removed) this.specCache = undefined;
    return removed;
  }

  /** Adds a resolver for unregistered names; returns its disposer. */
  addResolver(resolver: ToolResolver): () => void {
    this.resolvers.add(resolver);
    return () => this.resolvers.delete(resolver);
  }

  get(name: string): ToolDefinition | undefined {
    const tool = this.tools.get(name);
    if (tool) return tool;
    for (const resolver of this.resolvers) {
      const resolved = resolver(name);
      if (resolved) return resolved;
    }
    return undefined;
  }

  has(name: string): boolean {
    return this.tools.has(name);
  }

  names(): string[] {
    return [...this.tools.keys()];
  }

  /**
   * Tool descriptions for a model request, input schemas as JSON Schema; every string in them
   * well-formed (an MCP server's JSON can hold a lone surrogate, which Anthropic refuses in any request).
   */
  specs(): ToolSpec[] {
    this.specCache ??= [...this.tools.values()].map((tool) => ({
      name: tool.name,
      description: wellFormed(tool.description),
      inputSchema: wellFormedValue(
        tool.jsonSchema ??
          (z.toJSONSchema(tool.inputSchema, { unrepresentable: "any" }) as Record<string, unknown>),
      ) as Record<string, unknown>,
    }));
    return this.specCache;
  }
}
