/**
 * What the end-to-end and reliability tests do over and over: run a tool for an account through the client
 * library, expect a call to fail with the service's error, age a stored token, make up account credentials.
 */
import { expect } from 'vitest';
import type { AccountFieldSpec } from '../../core/spec-model.ts';
import { ConnectorServiceError } from '../../packages/client/src/index.ts';
import type { Store } from '../../runtime/store/types.ts';
import type { Harness } from './harness.ts';
import type { AnswerLog } from './answer-check.ts';

/** A connected account, as the client library names it. */
export interface Who {
  connectionName: string;
  identifier: string;
}

/** Awaits a call that must fail with the service's error (any other outcome fails the test), and returns the error. */
export async function failure(p: Promise<unknown>): Promise<ConnectorServiceError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ConnectorServiceError);
  return e as ConnectorServiceError;
}

export interface ToolRunnerOptions {
  /** The harness; a function, as test files start theirs in `beforeAll`. */
  harness: () => Harness;
  /** The account a call runs for unless it names another. */
  who: Who;
  /** Tool names are added here, for a test that checks every tool of a connector ran. */
  executed?: Set<string>;
  /**
   * When a tool counts as executed: once it is called ('called', which includes calls the test expects to fail), or
   * only once it answered successfully ('succeeded', the default).
   */
  countWhen?: 'called' | 'succeeded';
  /**
   * `detailed` asks every call for the provider's answer unchanged (`response_format`), for a test of the upstream
   * mapping that reads the provider's own fields; the default is the service's default, the concise answer.
   */
  responseFormat?: 'concise' | 'detailed';
  /** Checks each detailed answer against the tool's declared output, and measures it (see answer-check.ts). */
  answers?: AnswerLog;
}

/** `run(toolName, toolInput, who?)`: executes a tool through the client library and returns its `data`. */
export function toolRunner<Data = Record<string, any>>(opts: ToolRunnerOptions) {
  return async (toolName: string, toolInput: Record<string, unknown>, who: Who = opts.who): Promise<Data> => {
    if (opts.countWhen === 'called') opts.executed?.add(toolName);
    const input =
      opts.responseFormat && !('response_format' in toolInput)
        ? { ...toolInput, response_format: opts.responseFormat }
        : toolInput;
    const check = opts.answers && input.response_format === 'detailed' ? opts.answers : undefined;
    check?.begin();
    const { data } = await opts
      .harness()
      .client.executeTool({ toolName: toolName as never, toolInput: input as never, ...who });
    await check?.check(toolName, input, data);
    if (opts.countWhen !== 'called') opts.executed?.add(toolName);
    return data as Data;
  };
}

/** The requests `requests` gained while `fn` ran (a fake provider's log of what it received). */
export async function requestsDuring<R>(requests: () => R[], fn: () => Promise<unknown>): Promise<R[]> {
  const before = requests().length;
  await fn();
  return requests().slice(before);
}

/** Marks an account's stored access token expired (a second ago), so the next call refreshes it first. */
export async function expireStoredToken(store: Store, accountId: string): Promise<void> {
  const a = (await store.getAccount(accountId))!;
  await store.updateAccount(accountId, { tokenExpiresAt: Date.now() - 1000 }, Date.now(), a.version);
}

/**
 * A credential value for an account field: the connector's example account's, else the field's example or default,
 * else one made up — `<secret>-<field>` for a secret field, so a scan for `secret` finds it wherever it leaks.
 */
export function fieldValue(f: AccountFieldSpec, exampleFields: Record<string, string>, secret: string): string {
  if (exampleFields[f.name]) return exampleFields[f.name]!;
  if (f.example) return f.example;
  if (f.default) return f.default;
  if (f.format === 'email') return 'someone@example.com';
  if (f.secret) return `${secret}-${f.name}`;
  return `value-${f.name}`;
}
