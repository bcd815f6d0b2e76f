/**
 * Middleware whose module is loaded on its first request (then kept): what only some requests need stays out of
 * the start, and out of memory until used. A failed load is passed to `next`. Used for the dashboard and for
 * Express's body parsers.
 */
export function loadOnFirstUse<Req, Res, Next extends (err?: unknown) => void>(
  load: () => Promise<(req: Req, res: Res, next: Next) => void>,
): (req: Req, res: Res, next: Next) => void {
  let handler: Promise<(req: Req, res: Res, next: Next) => void> | undefined;
  return (req, res, next) => {
    (handler ??= load()).then((h) => h(req, res, next), next);
  };
}
