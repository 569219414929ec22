// Type test (CONTRACT ): never run, only compiled by `npm run typecheck` (tsconfig.json
// includes test/). A definition typed with its body's type gives that type to post and item.put,
// takes it from parse, and is still a definition createService accepts.
import { createService, type ResourceDefinition } from '../../lib/index.js';

interface Book {
  readonly title: string;
  readonly year: number;
}

const shelf = new Map<string, Book>();

const bySchema: ResourceDefinition<Book> = {
  schema: { type: 'object', required: ['title', 'year'], properties: { title: { type: 'string' }, year: { type: 'integer' } } },
  post: (book) => {
    const title: string = book.title;
    shelf.set(title, book);
    return { id: title, value: book };
  },
  item: {
    get: (id) => shelf.get(id),
    put: (id, book) => {
      // @ts-expect-error: a Book has no `author`
      void book.author;
      shelf.set(id, book);
      return book;
    },
  },
};

// parse's return type is the body's type; an async validator (zod's parseAsync) too.
const byParse: ResourceDefinition<Book> = {
  parse: async (body) => body as Book,
  post: (book) => ({ id: book.year, value: book }),
};

// @ts-expect-error: parse must return the body's type
const wrongParse: ResourceDefinition<Book> = { parse: () => 42 };

// Untyped, as before: the body is unknown.
const untyped: ResourceDefinition = {
  post: (body) => {
    // @ts-expect-error: unknown has no members
    void body.title;
    return { id: 1, value: body };
  },
};

export const service = createService({ store: ':memory:', resources: { books: bySchema, parsed: byParse, untyped, wrong: wrongParse } });
