/** `task`, or a rejection ("no answer within ms") when it has not settled after `ms`; the timer never holds the process. */
export function withTimeout<T>(task: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([task, late]).finally(() => clearTimeout(timer));
}
