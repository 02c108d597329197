// One render per animation frame, however many patches arrive: mirrors are updated on every
// message, and the screen catches up at most once a frame. It also keeps the figures the browser
// tests read (window.tetherDashboardStats): patch-to-screen latency, render time, frame rate.

const SAMPLES = 4096;

/** A fixed-size ring of numbers with percentiles. */
class Samples {
  #values = new Float64Array(SAMPLES);
  #count = 0;

  add(value) {
    this.#values[this.#count % SAMPLES] = value;
    this.#count++;
  }

  clear() { this.#count = 0; }

  get count() { return this.#count; }

  summary() {
    const n = Math.min(this.#count, SAMPLES);
    if (n === 0) return { count: 0, p50: null, p95: null, p99: null, max: null };
    const sorted = Array.from(this.#values.subarray(0, n)).sort((a, b) => a - b);
    const at = (q) => round(sorted[Math.min(n - 1, Math.floor(q * n))]);
    return { count: this.#count, p50: at(0.5), p95: at(0.95), p99: at(0.99), max: round(sorted[n - 1]) };
  }
}

const round = (value) => Math.round(value * 100) / 100;

export class FrameScheduler {
  #tasks = new Map();
  #frameRequested = false;
  /** When the oldest change not yet on screen arrived (performance.now()), or null. */
  #oldestPending = null;
  #latency = new Samples();
  #renderTime = new Samples();
  #patches = 0;
  #frames = 0;

  /**
   * Marks `key`'s render function as due at the next frame. `arrivedAt` (performance.now() of the
   * message behind it) feeds the patch-to-screen latency.
   */
  schedule(key, render, arrivedAt = null) {
    this.#tasks.set(key, render);
    if (arrivedAt !== null) {
      this.#patches++;
      if (this.#oldestPending === null) this.#oldestPending = arrivedAt;
    }
    if (!this.#frameRequested) {
      this.#frameRequested = true;
      requestAnimationFrame(() => this.#frame());
    }
  }

  #frame() {
    this.#frameRequested = false;
    const started = performance.now();
    const tasks = [...this.#tasks.values()];
    this.#tasks.clear();
    for (const render of tasks) {
      try {
        render();
      } catch (error) {
        console.error("dashboard: a render failed", error);
      }
    }
    const ended = performance.now();
    this.#frames++;
    this.#renderTime.add(ended - started);
    if (this.#oldestPending !== null) {
      // The DOM holds the change now; the browser paints it right after this callback.
      this.#latency.add(ended - this.#oldestPending);
      this.#oldestPending = null;
    }
  }

  /** The figures window.tetherDashboardStats exposes. */
  stats() {
    return {
      patches: this.#patches,
      renders: this.#frames,
      patchToScreenMs: this.#latency.summary(),
      renderMs: this.#renderTime.summary(),
    };
  }

  resetStats() {
    this.#patches = 0;
    this.#frames = 0;
    this.#latency.clear();
    this.#renderTime.clear();
  }
}

/**
 * Counts animation frames for `ms` milliseconds: the frame rate the page actually reaches while
 * whatever else is going on (patches, renders) keeps the main thread busy.
 */
export function measureFrameRate(ms) {
  return new Promise((resolve) => {
    const intervals = new Samples();
    let first = null;
    let last = null;
    let frames = 0;
    const tick = (now) => {
      if (first === null) first = now;
      else intervals.add(now - last);
      last = now;
      frames++;
      if (now - first < ms) requestAnimationFrame(tick);
      else resolve({ frames, seconds: round((last - first) / 1000), fps: round((frames - 1) / ((last - first) / 1000)), frameMs: intervals.summary() });
    };
    requestAnimationFrame(tick);
  });
}
