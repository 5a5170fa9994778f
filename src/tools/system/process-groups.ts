/**
 * The process groups `exec` has started and not yet seen gone. Shutdown waits for them (each call's
 * own SIGTERM → SIGKILL sequence runs in this process) and kills whatever is left, so no process of a
 * call outlives the server.
 */
export class ProcessGroups {
  private readonly live = new Set<number>();
  private readonly waiters = new Set<() => void>();

  add(groupId: number): void {
    this.live.add(groupId);
  }

  delete(groupId: number): void {
    this.live.delete(groupId);
    if (this.live.size === 0) for (const wake of [...this.waiters]) wake();
  }

  get size(): number {
    return this.live.size;
  }

  /** Resolves true once every group is gone, false if `withinMs` passes first. */
  drain(withinMs: number): Promise<boolean> {
    if (this.live.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const finish = (drained: boolean) => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve(drained);
      };
      const wake = () => finish(true);
      const timer = setTimeout(() => finish(false), withinMs);
      this.waiters.add(wake);
    });
  }

  /** SIGKILLs every group still tracked; returns how many were signalled. */
  killAll(): number {
    let signalled = 0;
    for (const groupId of this.live) {
      try {
        process.kill(-groupId, "SIGKILL");
        signalled++;
      } catch {
        // already gone
      }
    }
    return signalled;
  }
}
