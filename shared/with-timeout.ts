// A promise bounded in time (shared/: see atomic-file.ts): the cluster link's opening and the Host screen's checks
// of the database and Redis.

/** `promise`, or a rejection with `message` once `ms` passed (the timer cleared either way). */
export async function withTimeout<T>(
  promise: Promise<T>,
  ms: number,
  message = `no answer within ${ms} ms`,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
