import type { Compilable, CompiledQuery } from 'kysely';

/** Stands for a named argument while a query is built; replaced by the value given on each call. */
class Slot {
  constructor(readonly name: string) {}
}

/**
 * A query built and compiled once, run many times with new arguments: the hot reads pay neither the query
 * builder nor the compiler per call, and (on SQLite) reuse one prepared statement. Values written into the
 * build function itself (a null, a 1) stay the same on every call.
 *
 *   const byId = prepare((a: { id: string }) => db.selectFrom('connected_accounts').selectAll().where('id', '=', a.id));
 *   await db.executeQuery(byId.bind({ id }));
 */
export class Prepared<A, R> {
  /** Per parameter position: the argument that fills it, or the constant the query was built with. */
  private readonly fill: Array<(args: A) => unknown>;

  constructor(private readonly query: CompiledQuery<R>) {
    this.fill = query.parameters.map((p) => {
      if (p instanceof Slot) return (args: A) => args[p.name as keyof A];
      return () => p;
    });
  }

  /** The compiled query with these arguments, to run with `Backend.run` (or any Kysely `executeQuery`). */
  bind(args: A): CompiledQuery<R> {
    return { ...this.query, parameters: this.fill.map((f) => f(args)) };
  }
}

export function prepare<A, R>(build: (args: A) => Compilable<R>): Prepared<A, R> {
  const args = new Proxy(
    {},
    {
      get: (_, name) => new Slot(String(name)),
    },
  ) as unknown as A;
  return new Prepared(build(args).compile());
}
