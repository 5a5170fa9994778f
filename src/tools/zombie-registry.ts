/**
 * Zombies (docs/semantics.md#cancellation): tools still running after their call was closed. Tracked until
 * they settle, visible in `/api/turns/active` and metrics. A tool that never settles (like `hang`) would stay
 * forever, so the registry is bounded: beyond `capacity` the oldest entry is dropped.
 */
export type Zombie = { turnId: string; toolId: string; toolName: string; since: number };

export const DEFAULT_ZOMBIE_CAPACITY = 1_000;

export class ZombieRegistry {
  private readonly zombies = new Map<string, Zombie>();

  constructor(private readonly capacity = DEFAULT_ZOMBIE_CAPACITY) {}

  /** Adds a zombie; returns the one dropped to make room, if any. */
  add(zombie: Zombie): Zombie | undefined {
    this.zombies.set(zombie.toolId, zombie);
    if (this.zombies.size <= this.capacity) return undefined;
    const oldest = this.zombies.values().next().value as Zombie;
    this.zombies.delete(oldest.toolId);
    return oldest;
  }

  /** Removes a zombie that has settled; false when it was not tracked (or already dropped). */
  remove(toolId: string): boolean {
    return this.zombies.delete(toolId);
  }

  list(): Zombie[] {
    return [...this.zombies.values()];
  }

  get size(): number {
    return this.zombies.size;
  }
}
