/**
 * A list whose first `committed` entries are final while the entries after them are redone by every
 * render: an incremental render rewinds to the committed entries and appends from there. Committed
 * entries are never rewritten, so a snapshot only has to copy the uncommitted tail.
 */
export class CommittedList<T> {
  readonly items: T[] = [];
  committed = 0;

  get length(): number {
    return this.items.length;
  }

  push(item: T): void {
    this.items.push(item);
  }

  /** Makes every entry so far final. */
  commit(): void {
    this.committed = this.items.length;
  }

  /** Drops the entries after the committed ones. */
  rewind(): void {
    this.items.length = this.committed;
  }

  /** The entries as they are now, readable later even after more renders (the tail is copied). */
  snapshot(): () => T[] {
    const { items, committed } = this;
    const tail = items.slice(committed);
    return () => items.slice(0, committed).concat(tail);
  }
}
