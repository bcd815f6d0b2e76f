import { newSortableId } from '../ids.ts';
import { invalidInput, ProviderError, ServiceError, UpstreamFailure } from '../../core/errors.ts';
import { notActiveError, type AccountService, type AccountRef, type LiveAccount } from '../accounts/service.ts';
import type { ActivityRecorder } from '../activity.ts';
import type { Metrics } from '../metrics.ts';
import { getTool, tools } from '../connectors/catalog.ts';
import type { HttpResponse } from '../upstream/http.ts';
import type { Upstream } from '../upstream/upstream.ts';
import { unknownToolError, validateToolInput } from './validation.ts';
import type {
  HookContext,
  ToolDefinition,
  ToolWarning,
  UpstreamRequest,
  UpstreamResponse,
} from '../../core/tool-types.ts';
import { baseHeaders, encodeBody, lowerKeys, mergeHeaders, planRequests } from './plan.ts';
import { TemplateValueError } from '../../core/template-runtime.ts';
import { continuedInput, shapeAnswer, splitAnswerParams, type AnswerRequest } from './answer.ts';
import { surelyWithin } from './tokens.ts';
import { reasonOf, type AuthorizationContext, type JustInTime } from '../connect/just-in-time.ts';
import { missingScopes } from '../connect/scopes.ts';
import type { ResolvedAccount } from '../accounts/service.ts';

/** A value the request template refused (a path segment such as ".."): the 400 a schema error would be. */
function templateInputError(e: unknown, tool: ToolDefinition): unknown {
  return e instanceof TemplateValueError
    ? invalidInput([{ field: e.field, message: e.message }], `input for ${tool.name}`)
    : e;
}

export interface ExecuteRequest {
  toolName: string;
  account: AccountRef;
  input: unknown;
  dryRun?: boolean;
  /** The HTTP request being served, if any: the store's change feed is polled once for it (ChangeFeed.pollOnce). */
  scope?: object;
  /**
   * Given, a call the end user must first connect for answers `authorization_required` with a link made this way
   * (runtime/connect/just-in-time.ts); absent, the account's own error (404 or 409).
   */
  authorization?: AuthorizationContext;
}

export interface ExecuteResult {
  data: unknown;
  executionId: string;
  /** What the caller should know about a call that went ahead (an input the provider could not act on). */
  warnings?: ToolWarning[];
  /** `data` as the provider's own JSON text, when it passes through unchanged (no re-serialization needed). */
  dataJson?: string;
}

export interface ExecutorOptions {
  /** The answer budget in tokens: a longer answer is cut at an item boundary (TOOL_ANSWER_BUDGET_TOKENS). */
  answerBudgetTokens: number;
}

/** Parses an upstream body: JSON when declared (or when it looks like JSON), text otherwise. */
export function parseBody(res: Pick<HttpResponse, 'headers' | 'body'>, strict: boolean): unknown {
  return readBody(res, strict).value;
}

/** The parsed body, and the JSON text it came from when the provider declared JSON. */
function readBody(res: Pick<HttpResponse, 'headers' | 'body'>, strict: boolean): { value: unknown; json?: string } {
  if (!res.body.length) return { value: undefined };
  const type = String(res.headers['content-type'] ?? '').toLowerCase();
  const text = res.body.toString('utf8');
  if (type.includes('json') || (!type && /^\s*[[{]/.test(text))) {
    try {
      const value: unknown = JSON.parse(text);
      return type.includes('json') && value !== null && typeof value === 'object' ? { value, json: text } : { value };
    } catch {
      if (strict) {
        throw new UpstreamFailure(
          'provider_malformed_response',
          `The provider sent malformed JSON (${res.body.length} bytes, content-type ${type || 'none'})`,
        );
      }
      return { value: text };
    }
  }
  if (!type || type.startsWith('text/') || type.includes('xml') || type.includes('x-www-form-urlencoded'))
    return { value: text };
  return { value: { content_type: type, size: res.body.length, content_base64: res.body.toString('base64') } };
}

/** A value counts as given unless absent, null, empty text or an empty list. */
function given(v: unknown): boolean {
  return v !== undefined && v !== null && v !== '' && !(Array.isArray(v) && v.length === 0);
}

/** The warnings a tool's YAML declares for the inputs given. */
export function inputWarnings(tool: ToolDefinition, input: Record<string, unknown>): ToolWarning[] {
  return (tool.inputWarnings ?? [])
    .filter((w) => given(input[w.when]))
    .map((w) => ({ field: w.when, message: w.message }));
}

/** The answer budget when none is configured. */
export const DEFAULT_ANSWER_BUDGET_TOKENS = 8000;

const withWarnings = <T extends object>(result: T, warnings: ToolWarning[]): T & { warnings?: ToolWarning[] } =>
  warnings.length ? { ...result, warnings } : result;

/**
 * Executes named tools: validate with the precompiled validator and rules, build the upstream request(s)
 * with the generated builder, then send them with the account's credentials (or, for a dry run, show them
 * with secrets redacted). Provider errors keep the provider's status and body.
 */
export class ToolExecutor {
  constructor(
    private accounts: AccountService,
    private upstream: Upstream,
    private activity: ActivityRecorder,
    private metrics: Metrics,
    private options: ExecutorOptions = { answerBudgetTokens: DEFAULT_ANSWER_BUDGET_TOKENS },
  ) {}

  /** Makes the links of `authorization_required` (set by createServices). */
  justInTime?: JustInTime;

  /**
   * An account error the end user fixes by connecting, as `authorization_required` with a link, when the caller
   * asked for that (`req.authorization`) and a link can be made; any other error as it is.
   */
  private async authorizationFor(
    err: unknown,
    req: ExecuteRequest,
    tool: ToolDefinition,
    resolved?: ResolvedAccount,
  ): Promise<unknown> {
    const reason = reasonOf(err);
    if (!reason || !req.authorization || !this.justInTime) return err;
    const identifier = resolved?.account.identifier ?? req.account.identifier;
    let connection = resolved?.connection;
    if (!connection && req.account.connectionName && identifier !== undefined)
      connection = await this.accounts.connectionByName(req.account.connectionName, req.scope);
    if (!connection || identifier === undefined || connection.connector !== tool.connector) return err;
    const made = await this.justInTime.required({
      connection,
      identifier,
      reason,
      account: resolved?.account,
      tool,
      context: req.authorization,
    });
    return made ?? err;
  }

  private tool(name: unknown): ToolDefinition {
    if (typeof name !== 'string' || !name) {
      throw new ServiceError(400, 'invalid_input', 'tool_name is required', [
        { field: 'tool_name', message: 'is required' },
      ]);
    }
    const tool = getTool(name);
    if (!tool) throw unknownToolError(name, [...tools.keys()]);
    return tool;
  }

  async execute(req: ExecuteRequest): Promise<ExecuteResult> {
    const started = performance.now();
    const executionId = newSortableId('exe');
    const tool = this.tool(req.toolName);
    const continued = continuedInput(tool, req.input);
    const errors = [...continued.errors, ...validateToolInput(tool, continued.input)];
    if (errors.length) throw invalidInput(errors, `input for ${tool.name}`);
    const { input, request } = splitAnswerParams(continued.input as Record<string, unknown>);
    const answer: AnswerRequest = { ...request, within: continued.within };
    let resolved: ResolvedAccount;
    try {
      resolved = await this.accounts.resolve(req.account, req.scope);
    } catch (e) {
      throw await this.authorizationFor(e, req, tool);
    }
    if (resolved.connector.name !== tool.connector) {
      throw new ServiceError(
        400,
        'tool_connector_mismatch',
        `Tool ${tool.name} belongs to the ${tool.connector} connector, but the account's connection "${resolved.connection.name}" uses ${resolved.connector.name}`,
      );
    }
    if (!req.dryRun && resolved.account.status !== 'ACTIVE')
      throw await this.authorizationFor(notActiveError(resolved.account), req, tool, resolved);
    if (!req.dryRun && req.authorization && this.justInTime) {
      // Least privilege: a tool whose scopes the account was not granted asks the user for them (incremental
      // consent) rather than sending a request the provider would refuse.
      const missing = missingScopes(resolved.account, tool, resolved.auth);
      if (missing.length) {
        const made = await this.justInTime.required({
          connection: resolved.connection,
          identifier: resolved.account.identifier,
          reason: 'missing_scopes',
          account: resolved.account,
          tool,
          missingScopes: missing,
          context: req.authorization,
        });
        if (made) throw made;
      }
    }
    const base = (host?: string) => this.accounts.baseUrlFor(resolved, host);
    if (req.dryRun) {
      const target = {
        connector: resolved.connector,
        connection: resolved.connection,
        fields: resolved.account.fields,
        auth: resolved.auth,
      };
      try {
        return withWarnings(
          { data: { requests: planRequests(tool, input, target, base) }, executionId },
          inputWarnings(tool, input),
        );
      } catch (e) {
        throw templateInputError(e, tool);
      }
    }
    let planned: UpstreamRequest[];
    try {
      planned = tool.build(input, { base });
    } catch (e) {
      throw templateInputError(e, tool);
    }

    const warnings = inputWarnings(tool, input);
    let status = 200;
    let errorCode: string | null = null;
    try {
      const live = await this.accounts.live(resolved);
      this.accounts.touch(live.account.id);
      let data: unknown;
      if (tool.hook) {
        const ctx: HookContext<never> = {
          input: input as never,
          warn: (w) => void warnings.push(w),
          planned,
          base,
          send: (r) => this.sendOne(live, r),
          call: async (r) => this.check(r, await this.sendOne(live, r)),
          listMcpTools: (url) => this.upstream.listMcpTools(live, url),
          callMcpTool: (url, tool, args) => this.upstream.callMcpTool(live, url, tool, args),
        };
        data = await tool.hook.run(ctx);
      } else if (planned.length === 1) {
        const res = await this.sendOne(live, planned[0]!);
        data = this.check(planned[0]!, res);
        // A detailed answer within the budget is the provider's JSON as it came: the route writes its text rather
        // than serializing it again.
        if (
          res.json !== undefined &&
          data === res.body &&
          answer.format === 'detailed' &&
          answer.within === 0 &&
          surelyWithin(res.json, this.options.answerBudgetTokens)
        ) {
          return withWarnings({ data, executionId, dataJson: res.json }, warnings);
        }
      } else {
        const results: unknown[] = [];
        for (const r of planned) results.push(this.check(r, await this.sendOne(live, r)));
        data = results;
      }
      const shaped = await shapeAnswer(
        {
          tool,
          input,
          request: answer,
          budget: this.options.answerBudgetTokens,
          accepts: (next) => validateToolInput(tool, structuredClone(next)).length === 0,
        },
        data ?? null,
      );
      return withWarnings({ data: shaped.data ?? null, executionId }, warnings);
    } catch (caught) {
      // An account found EXPIRED on the way (its refresh token refused, before the call or after a 401): a link.
      const e = reasonOf(caught)
        ? await this.authorizationFor(caught, req, tool, resolved)
        : templateInputError(caught, tool);
      status = e instanceof ProviderError ? e.status : e instanceof ServiceError ? e.status : 500;
      errorCode = e instanceof ProviderError ? 'provider_error' : e instanceof ServiceError ? e.code : 'internal_error';
      if (e instanceof ProviderError || e instanceof ServiceError) Object.assign(e, { executionId });
      throw e;
    } finally {
      this.metrics.toolExecution(tool.name, tool.connector, errorCode ?? 'success');
      this.activity.record({
        id: executionId,
        kind: 'tool',
        name: tool.name,
        connectionName: resolved.connection.name,
        accountId: resolved.account.id,
        identifier: resolved.account.identifier,
        status,
        errorCode,
        latencyMs: Math.round(performance.now() - started),
        createdAt: Date.now(),
      });
    }
  }

  /** A 2xx body, an "empty" status the tool declares, or a provider error. */
  private check(req: UpstreamRequest, res: UpstreamResponse): unknown {
    if (res.status >= 200 && res.status < 300) return res.body;
    const empty = req.emptyOn?.find((e) => e.status === res.status);
    if (empty) return empty.data;
    throw new ProviderError(res.status, res.body, res.headers);
  }

  /** Sends one request through the upstream layer (credentials, retries, limits, one refresh after a 401). */
  async sendOne(live: LiveAccount, r: UpstreamRequest): Promise<UpstreamResponse> {
    if (r.mcp) {
      return {
        status: 200,
        headers: {},
        body: await this.upstream.callMcpTool(live, r.url, r.mcp.tool, r.mcp.arguments),
      };
    }
    const { body, contentType } = encodeBody(r);
    const headers = mergeHeaders(baseHeaders(live.connector), lowerKeys(r.headers));
    if (contentType) headers['content-type'] = contentType;
    const res = await this.upstream.send(
      live,
      { method: r.method, url: r.url, headers, body },
      r.anonymous ? null : (r.apply ?? live.auth.apply),
    );
    const ok = res.status >= 200 && res.status < 300;
    const { value, json } = readBody(res, ok);
    return { status: res.status, headers: res.headers, body: value, ...(json !== undefined ? { json } : {}) };
  }
}
