/**
 * One inference's assistant message as canonical blocks, gathered from the model's events in stream
 * order: runs of text and of thinking, redacted thinking, and the tool calls after them all.
 *
 * Thinking is kept as the provider made it, block by block: a signature ends the block it signs, so
 * two signed blocks of one response stay two blocks (Anthropic checks each signature against its
 * block's exact text and wants every block back in order), and a redacted block keeps its place among
 * them. Unsigned thinking (Kimi's reasoning) runs on until text, a call or a redacted block ends it.
 */
import type { BlockContent, ThinkingBlock, ToolCallBlock } from "../history/model.js";

/** The provider and model that made the message: every thinking block records them. */
export type MessageOrigin = { provider: string; model: string };

export class AssistantMessage {
  private readonly content: BlockContent[] = [];
  private readonly calls: ToolCallBlock[] = [];
  private text = "";
  private thinking: { text: string; signature?: string } | undefined;

  constructor(private readonly origin: MessageOrigin) {}

  addText(text: string): void {
    this.endThinking();
    this.text += text;
  }

  addThinking(text: string): void {
    this.endText();
    this.thinking = { text: (this.thinking?.text ?? "") + text };
  }

  /** Signs the thinking in progress (none: an empty block) and ends it. */
  sign(signature: string): void {
    this.endText();
    this.thinking = { text: this.thinking?.text ?? "", signature };
    this.endThinking();
  }

  addRedacted(data: string): void {
    this.endText();
    this.endThinking();
    this.pushThinking({ text: "", redacted: data });
  }

  addCall(call: ToolCallBlock): void {
    this.endThinking();
    this.endText();
    this.calls.push(call);
  }

  /**
   * Ends what is in progress. `blocks`: the message, its text and thinking in stream order, then its
   * calls; `calls`: the calls alone.
   */
  finish(): { blocks: BlockContent[]; calls: ToolCallBlock[] } {
    this.endThinking();
    this.endText();
    return { blocks: [...this.content, ...this.calls], calls: this.calls };
  }

  private endText(): void {
    if (this.text.trim() !== "") this.content.push({ kind: "text", role: "assistant", text: this.text });
    this.text = "";
  }

  private endThinking(): void {
    if (this.thinking) this.pushThinking(this.thinking);
    this.thinking = undefined;
  }

  private pushThinking(thinking: { text: string; signature?: string; redacted?: string }): void {
    // one property order for every thinking block (kind, role, text, signature or redacted, origin),
    // as a stored one is read back, so they share a hidden class
    const block: ThinkingBlock = Object.assign(
      { kind: "thinking" as const, role: "assistant" as const },
      thinking,
      this.origin,
    );
    this.content.push(block);
  }
}
