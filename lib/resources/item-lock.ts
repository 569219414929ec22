// a conditional write is "check, then change": two clients that read the same ETag and write
// at once must not both pass the check. Writes to one item run one after the other (within this
// process), so the If-Match of the second is evaluated against what the first stored.

/** Runs `task` once every earlier task for `key` has settled. No state outlives the tasks. */
export interface KeyedLock {
  run<T>(key: string, task: () => Promise<T>): Promise<T>;
}

export function createKeyedLock(): KeyedLock {
  const tails = new Map<string, Promise<unknown>>();
  return {
    run(key, task) {
      const before = tails.get(key);
      const mine = before === undefined ? task() : before.then(task, task);
      // The tail stands for "mine has settled", never rejects, and is dropped when nothing follows.
      const tail = mine.then(
        () => undefined,
        () => undefined,
      );
      tails.set(key, tail);
      void tail.then(() => {
        if (tails.get(key) === tail) tails.delete(key);
      });
      return mine;
    },
  };
}
