import { ServiceError } from './errors.js';

/**
 * a service listens at most once at a time and never after it is closed. `listen()` while
 * starting or listening, or once `close()` was called, rejects with `ERR_SERVICE_STATE` before
 * anything is opened; a start that fails leaves the service as it was (it may listen again).
 * `close()` runs its work once: a second call, concurrent or later, gets the same promise; a
 * close during a start waits for the start to settle, then undoes it.
 */
export class Lifecycle {
  #state: 'idle' | 'starting' | 'listening' | 'closed' = 'idle';
  #starting: Promise<unknown> | undefined;
  #closing: Promise<void> | undefined;
  #finished = false;

  /** True once `close()` has been called: nothing may be opened any more (what is open serves on until it is closed). */
  get closed(): boolean {
    return this.#state === 'closed';
  }

  /** True once the work of `close()` is done: nothing is open any more. */
  get finished(): boolean {
    return this.#finished;
  }

  get listening(): boolean {
    return this.#state === 'listening';
  }

  async listen<T>(start: () => Promise<T>): Promise<T> {
    if (this.#state !== 'idle') {
      const why = this.#state === 'closed' ? 'the service is closed: create another one' : 'the service is already listening (or starting)';
      throw new ServiceError('ERR_SERVICE_STATE', why);
    }
    this.#state = 'starting';
    const started = start();
    this.#starting = started;
    try {
      const result = await started;
      if (this.#state === 'starting') this.#state = 'listening';
      return result;
    } catch (error) {
      if (this.#state === 'starting') this.#state = 'idle';
      throw error;
    } finally {
      this.#starting = undefined;
    }
  }

  close(stop: () => Promise<void>): Promise<void> {
    if (this.#closing !== undefined) return this.#closing;
    const starting = this.#starting;
    this.#state = 'closed';
    this.#closing = (async () => {
      await starting?.catch(() => {});
      try {
        await stop();
      } finally {
        this.#finished = true;
      }
    })();
    return this.#closing;
  }
}

/**
 * C-5 for requests without a socket: the promises of in-process requests not yet settled,
 * so close() can wait for them as it waits for a socket's requests.
 */
export class InFlight {
  readonly #pending = new Set<Promise<unknown>>();

  /** Counts `request` until it settles; returns it. */
  add<R>(request: Promise<R>): Promise<R> {
    this.#pending.add(request);
    const done = (): void => void this.#pending.delete(request);
    request.then(done, done);
    return request;
  }

  /**
   * Resolves once the requests pending now have settled (later ones are not waited for: a mount
   * that keeps sending would otherwise hold close() for its whole grace), or after `ms` whatever
   * is left. Never rejects. The timer is not unref'd: a request waiting on nothing that keeps the
   * process alive must not let it exit with close() unresolved.
   */
  settled(ms: number): Promise<void> {
    if (this.#pending.size === 0) return Promise.resolve();
    const now = Promise.allSettled([...this.#pending]);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    });
    return Promise.race([now.then(() => undefined), late]).finally(() => clearTimeout(timer));
  }
}
