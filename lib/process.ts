/**
 * Node's process object, as lib/'s modules read it. Not `import process from 'node:process'`: Node
 * builds that module's ESM facade by reading every property of `process`, and reading `stdin` and
 * `stdout` makes their streams: for a pipe or a terminal, a handle that shows among the
 * application's open ones and a descriptor made non-blocking, in every application that imports
 * the library. Nor the global at each use: it is a getter on globalThis (about 150 instructions a
 * read, counted with callgrind on the request path). It is read once, here.
 */
export const process: NodeJS.Process = globalThis.process;
