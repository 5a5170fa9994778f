/**
 * A JSON object with one long array, written a slice at a time: the text is exactly
 * `JSON.stringify(object)`, but the array's items are serialized about `SLICE_CHARACTERS` at a time
 * with a turn of the event loop between slices, so that a session of hundreds of megabytes of history
 * does not hold every other stream and request still for the second or more one `JSON.stringify` of
 * it takes. Slices are made as the client reads (a slow reader holds none in memory beyond the
 * socket's buffer); a client that goes away stops the writing.
 */
import { setImmediate as nextTurn } from "node:timers/promises";

/**
 * About how many characters of JSON one slice holds before the event loop gets a turn (a slice ends
 * after the block that passes it).
 */
export const SLICE_CHARACTERS = 256 * 1024;

/**
 * `JSON.stringify({ ...head, [key]: items, ...tail })` as a stream. `head` and `tail` are small
 * (serialized at once) and name their fields (an object would list integer-like keys first);
 * `items` is read as it is now, so pass a copy if it may change meanwhile.
 */
export function jsonWithLongArray(
  head: Record<string, unknown>,
  key: string,
  items: readonly unknown[],
  tail: Record<string, unknown> = {},
): ReadableStream<Uint8Array> {
  const opening = JSON.stringify(head);
  const closing = JSON.stringify(tail);
  const encoder = new TextEncoder();
  let next = 0;
  let opened = false;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let text = "";
        if (opened) {
          await nextTurn();
        } else {
          opened = true;
          text = `${opening.slice(0, -1)}${opening.length > 2 ? "," : ""}${JSON.stringify(key)}:[`;
        }
        while (next < items.length && text.length < SLICE_CHARACTERS) {
          // as in an array, an item JSON has no text for is null
          text += (next > 0 ? "," : "") + (JSON.stringify(items[next]) ?? "null");
          next++;
        }
        if (next < items.length) {
          controller.enqueue(encoder.encode(text));
          return;
        }
        text += `]${closing.length > 2 ? `,${closing.slice(1)}` : "}"}`;
        controller.enqueue(encoder.encode(text));
        controller.close();
      },
    },
    // one slice at a time: the next is made when the client has taken the last
    { highWaterMark: 0 },
  );
}
