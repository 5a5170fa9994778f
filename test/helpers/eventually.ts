/** Polls until `check` passes, for effects that have no response to wait on (a disconnect, a kill). */
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 8_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
