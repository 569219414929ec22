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
 * C-5 for requests without a socket: counts the calls of an async function that have not
 * settled, so close() can wait for them as it waits for a socket's requests.
 */
export class InFlight {
  #count = 0;
  #drained: (() => void) | undefined;

  /** `call`, counted while each of its promises is pending. */
  track<I, O, R>(call: (input: I, init?: O) => Promise<R>): (input: I, init?: O) => Promise<R> {
    const done = (): void => {
      if (--this.#count === 0) this.#drained?.();
    };
    return (input, init) => {
      const pending = call(input, init);
      this.#count++;
      pending.then(done, done);
      return pending;
    };
  }

  /** Resolves once none is pending, or after `ms` whatever is left (never rejects). */
  settled(ms: number): Promise<void> {
    if (this.#count === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(finish, ms);
      timer.unref();
      function finish(): void {
        clearTimeout(timer);
        resolve();
      }
      const previous = this.#drained;
      this.#drained = () => {
        previous?.();
        finish();
      };
    });
  }
}
