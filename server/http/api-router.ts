import Router from '@koa/router';

type MatchResult = ReturnType<Router['match']>;

/** Paths longer than this are matched afresh each time (a long address is no route of ours anyway). */
const LONGEST_REMEMBERED = 200;

/**
 * @koa/router with its answers remembered. On every request the router tests the path against each route's regular
 * expression in turn (about 80 of them under /api/v1); what matches depends only on the path, the method and the
 * routes, so the answer for the paths asked lately is kept. Routes are registered and dispatched as with any
 * @koa/router; one registered later empties the memory.
 */
export class ApiRouter extends Router {
  readonly #matches = new Map<string, MatchResult>();
  #routes = 0;
  readonly #size: number;

  constructor(options: ConstructorParameters<typeof Router>[0] & { remember?: number } = {}) {
    const { remember = 1000, ...rest } = options;
    super(rest);
    this.#size = remember;
  }

  override match(path: string, method: string): MatchResult {
    if (path.length > LONGEST_REMEMBERED) return super.match(path, method);
    if (this.stack.length !== this.#routes) {
      this.#matches.clear();
      this.#routes = this.stack.length;
    }
    const key = `${method} ${path}`;
    let found = this.#matches.get(key);
    if (found === undefined) {
      found = super.match(path, method);
      // A flood of distinct paths only empties the memory; it never grows past `remember` answers.
      if (this.#matches.size >= this.#size) this.#matches.clear();
      this.#matches.set(key, found);
    }
    // The router keeps `path` as ctx.matched, which a later router appends to: each request gets its own array.
    return { path: [...found.path], pathAndMethod: found.pathAndMethod, route: found.route };
  }
}
