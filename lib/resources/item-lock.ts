// a conditional write is "check, then change": two clients that read the same ETag and write
// at once must not both pass the check. Writes to one item run one after the other (within this
// process), so the If-Match of the second is evaluated against what the first stored.

/** Runs `task` once every earlier task for `key` has settled. No state outlives the tasks. */
export interface KeyedLock {
  run<T>(key: string, task: () => Promise<T>): Promise<T>;
}

export function createKeyedLock(): KeyedLock {
  const tails = new Map<string, Promise<void>>();
  return {
    run(key, task) {
      const before = tails.get(key);
      const mine = before === undefined ? task() : before.then(task, task);
      // The tail stands for "mine has settled" and never rejects; once it has, it is dropped
      // unless a later task has already queued behind it (then that task's tail is the key's).
      const settled = (): void => {
        if (tails.get(key) === tail) tails.delete(key);
      };
      const tail = mine.then(settled, settled);
      tails.set(key, tail);
      return mine;
    },
  };
}
