/**
 * Types for the parts of undici the proxy imports one by one (undici's own types describe only its main module,
 * which loads all of undici: fetch, WebSocket, the cache and mock layers, about 730 KB the service does not use).
 * `api-request.js` is imported by bench/experiments/tool-call-on-undici.patch only.
 */
declare module 'undici/lib/dispatcher/agent.js' {
  import { Agent } from 'undici';
  export = Agent;
}
declare module 'undici/lib/api/api-request.js' {
  import type { Dispatcher } from 'undici';
  function request(this: Dispatcher, options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData>;
  export = request;
}
declare module 'undici/lib/core/errors.js' {
  import { errors } from 'undici';
  export = errors;
}
