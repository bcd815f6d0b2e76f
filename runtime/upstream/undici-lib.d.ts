/**
 * Types for the parts of undici the proxy imports one by one (undici's own types describe only its main module,
 * which loads all of undici: fetch, WebSocket, the cache and mock layers, which the service does not use).
 * The imports are in undici-parts.ts, and only there.
 */
declare module 'undici/lib/dispatcher/agent.js' {
  import { Agent } from 'undici';
  export = Agent;
}
declare module 'undici/lib/core/errors.js' {
  import { errors } from 'undici';
  export = errors;
}
