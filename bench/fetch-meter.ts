/**
 * How long this process waits on one HTTP server: `globalThis.fetch` is wrapped so that calls to
 * URLs under a base URL add their duration (call → the `fetch` promise resolving, i.e. response
 * headers received; reading the body afterwards is not counted) to a running total. Octokit looks
 * up `globalThis.fetch` on every request, so its calls are counted.
 *
 * Bench-only instrumentation: with calls in parallel, their durations add up (wall time is less).
 */

/** A running total of fetch time to one base URL. */
export interface FetchMeter {
  /** Time (ms) and number of calls since the previous `take` (or the start), then reset both. */
  take(): { ms: number; calls: number };
  /** Put the original `globalThis.fetch` back. Idempotent. */
  restore(): void;
}

/** Start counting fetch calls whose URL starts with `baseUrl`. */
export function meterFetch(baseUrl: string): FetchMeter {
  const original = globalThis.fetch;
  let ms = 0;
  let calls = 0;
  const metered: typeof fetch = async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (!url.startsWith(baseUrl)) return original(input, init);
    const t0 = performance.now();
    try {
      return await original(input, init);
    } finally {
      ms += performance.now() - t0;
      calls++;
    }
  };
  globalThis.fetch = metered;
  return {
    take() {
      const out = { ms, calls };
      ms = 0;
      calls = 0;
      return out;
    },
    restore() {
      if (globalThis.fetch === metered) globalThis.fetch = original;
    },
  };
}
