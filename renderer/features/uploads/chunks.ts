/** How a file is cut into parts for `uploadPart` (chunk numbers are 0-based, every part but the last is full). */
export interface ChunkPlan {
  size: number;
  chunkSize: number;
  amount: number;
}

export function planChunks(size: number, chunkSize: number): ChunkPlan {
  const safeChunk = Math.max(1, Math.floor(chunkSize));
  return { size, chunkSize: safeChunk, amount: Math.max(1, Math.ceil(size / safeChunk)) };
}

/** Byte range [start, end) of part `n`. */
export function chunkRange(plan: ChunkPlan, n: number): { start: number; end: number } {
  const start = Math.min(plan.size, n * plan.chunkSize);
  return { start, end: Math.min(plan.size, start + plan.chunkSize) };
}

export function chunkBytes(plan: ChunkPlan, n: number): number {
  const { start, end } = chunkRange(plan, n);
  return end - start;
}

/** Parts the host does not hold yet, in order. Numbers outside the plan are ignored. */
export function missingChunks(plan: ChunkPlan, received: Iterable<number>): number[] {
  const held = new Set(received);
  const out: number[] = [];
  for (let n = 0; n < plan.amount; n++) if (!held.has(n)) out.push(n);
  return out;
}

/** Bytes in the given parts (each counted once). */
export function bytesIn(plan: ChunkPlan, chunks: Iterable<number>): number {
  let total = 0;
  for (const n of new Set(chunks)) if (n >= 0 && n < plan.amount) total += chunkBytes(plan, n);
  return total;
}
