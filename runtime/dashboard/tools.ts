/**
 * The tool explorer: every connector's tools with their documentation (from the generated registry), and
 * for a chosen connected account a form built from the tool's JSON Schema that runs the real executor —
 * a dry run shows the upstream request(s) with credentials redacted, an execution shows the response.
 */
import { setOwn } from '../../core/own.ts';
import type { Request, Response, Router } from 'express';
import type { ToolDefinition, FieldError } from '../../core/tool-types.ts';
import { connectors, getConnector, getTool, tools } from '../connectors/catalog.ts';
import { iconPath } from '../connectors/icons.ts';
import { ProviderError, ServiceError } from '../../core/errors.ts';
import { unknownToolError, validateToolInput } from '../tools/validation.ts';
import { BASE, formString, queryValue, render, type DashboardContext } from './context.ts';
import { findTools, MAX_QUERY_LENGTH } from './tool-filter.ts';
import { firstSentence } from './views.ts';
import {
  attachErrors,
  fieldId,
  toolErrorField,
  toolFields,
  toolInputFromForm,
  toolParams,
  type Field,
} from './fields.ts';

const SHOWN_BYTES = 256 * 1024;

function pretty(value: unknown): { text: string; truncated: boolean } {
  const text = JSON.stringify(value ?? null, null, 2) ?? 'null';
  return text.length > SHOWN_BYTES ? { text: text.slice(0, SHOWN_BYTES), truncated: true } : { text, truncated: false };
}

type Result =
  | {
      dryRun: true;
      requests: Array<{ method: string; url: string; headers: Array<{ k: string; v: string }>; body?: string }>;
    }
  | { data: string; truncated: boolean; executionId: string }
  | { providerError: true; status: number; body: string; executionId?: string }
  | { serviceError: true; status: number; code: string; message: string };

export function toolRoutes(r: Router, ctx: DashboardContext): void {
  const { s } = ctx;

  r.get('/tools', (req, res) => {
    const q = queryValue(req, 'q').trim().slice(0, MAX_QUERY_LENGTH);
    const only = queryValue(req, 'connector');
    if (only && !getConnector(only)) throw new ServiceError(404, 'connector_not_found', `No connector named "${only}"`);
    const carry = new URLSearchParams();
    for (const k of ['connection', 'identifier']) if (queryValue(req, k)) carry.set(k, queryValue(req, k));
    const found = findTools(q).filter((t) => !only || t.connector === only);
    // Grouped by connector, the groups in the order of their first match.
    const groups = new Map<string, ToolDefinition[]>();
    for (const t of found) {
      const group = groups.get(t.connector);
      if (group) group.push(t);
      else groups.set(t.connector, [t]);
    }
    const filtered = !!(q || only);
    render(ctx, req, res, 'tools', {
      title: 'Tool explorer',
      nav: 'tools',
      q,
      maxQueryLength: MAX_QUERY_LENGTH,
      connectorOptions: [...connectors.values()]
        .sort((a, b) => a.title.localeCompare(b.title))
        .map((c) => ({ value: c.name, label: c.title, selected: c.name === only })),
      carry: [...carry].map(([name, value]) => ({ name, value })),
      clearHref: `${BASE}/tools${carry.size ? `?${carry}` : ''}`,
      filtered,
      matchCount: found.length,
      toolCount: tools.size,
      groups: [...groups].map(([name, list]) => {
        const c = getConnector(name)!;
        return {
          name: c.name,
          title: c.title,
          icon: iconPath(c),
          summary: firstSentence(c.description),
          provider: c.provider,
          docsUrl: c.docsUrl,
          count: list.length,
          total: c.toolNames.length,
          // Unfiltered, the groups start closed: a line per connector to choose from, not a page of every tool.
          open: filtered,
          tools: list.map((t) => ({
            name: t.name,
            summary: firstSentence(t.description),
            readOnly: t.readOnly,
            href: `${BASE}/tools/${encodeURIComponent(t.name)}${carry.size ? `?${carry}` : ''}`,
          })),
        };
      }),
    });
  });

  const toolOrThrow = (name: string): ToolDefinition => {
    const t = getTool(name);
    if (!t) throw unknownToolError(name, [...tools.keys()]);
    return t;
  };

  const toolPage = async (
    req: Request,
    res: Response,
    tool: ToolDefinition,
    values: Record<string, string>,
    outcome: { errors?: FieldError[]; result?: Result } = {},
    status = 200,
  ) => {
    const connector = getConnector(tool.connector)!;
    const connections = (await s.store.listConnectionsWithCounts()).filter((c) => c.connector === tool.connector);
    const chosen = connections.find((c) => c.name === values.connection) ?? connections[0];
    const identifiers = chosen
      ? (await s.store.listAccounts({ connectionId: chosen.id, status: 'ACTIVE', limit: 50 })).map((a) => a.identifier)
      : [];
    const accountFields: Field[] = [
      {
        id: fieldId('connection'),
        name: 'connection',
        label: 'Connection',
        kind: 'select',
        required: true,
        options: connections.map((c) => ({
          value: c.name,
          label: `${c.name} (${c.accountCount} account${c.accountCount === 1 ? '' : 's'})`,
          selected: c === chosen,
        })),
      },
      {
        id: fieldId('identifier'),
        name: 'identifier',
        label: 'Connected account (identifier)',
        kind: 'input',
        type: 'text',
        required: true,
        value: values.identifier ?? '',
        list: 'identifiers',
        autocomplete: 'off',
        hint: 'The identifier your application uses for the end user.',
      },
    ];
    const inputFields = toolFields(tool, values);
    const general = attachErrors([...accountFields, ...inputFields], outcome.errors ?? [], (e) =>
      e.field === 'connection' || e.field === 'identifier' ? e.field : toolErrorField(e),
    );
    render(
      ctx,
      req,
      res,
      'tool',
      {
        title: tool.name,
        nav: 'tools',
        tool: {
          name: tool.name,
          title: tool.title,
          description: tool.description,
          notes: tool.notes,
          readOnly: tool.readOnly,
          versionFields: tool.versionFields,
          examples: tool.examples.map((e) => ({
            title: e.title,
            input: JSON.stringify(e.input, null, 2),
            requests: e.requests.map((q) => ({
              method: q.method,
              url: q.url,
              body: q.body === undefined ? undefined : JSON.stringify(q.body, null, 2),
            })),
          })),
        },
        connector: {
          name: connector.name,
          title: connector.title,
          href: `${BASE}/tools?connector=${encodeURIComponent(connector.name)}`,
        },
        params: toolParams(tool).map((p) => ({
          name: p.name,
          type: p.type,
          required: p.required,
          secret: p.secret,
          constraints: p.constraints,
          default: p.schema.default === undefined ? '' : JSON.stringify(p.schema.default),
          description: p.schema.description ?? '',
        })),
        noConnection: connections.length === 0,
        newConnectionHref: `${BASE}/connections/new/${encodeURIComponent(connector.name)}`,
        accountFields,
        identifiers,
        inputFields,
        errors: general,
        result: outcome.result,
        action: `${BASE}/tools/${encodeURIComponent(tool.name)}`,
      },
      status,
    );
  };

  r.get('/tools/:tool', async (req, res) => {
    const tool = toolOrThrow(req.params.tool);
    await toolPage(req, res, tool, {
      connection: queryValue(req, 'connection'),
      identifier: queryValue(req, 'identifier'),
    });
  });

  r.post('/tools/:tool', async (req, res) => {
    const tool = toolOrThrow(req.params.tool);
    const values: Record<string, string> = {};
    for (const [k, v] of Object.entries((req.body ?? {}) as Record<string, unknown>))
      if (typeof v === 'string' && k !== '_csrf') setOwn(values, k, v);
    const dryRun = formString(req.body, 'action') === 'dry_run';
    const { input, errors: parseErrors } = toolInputFromForm(tool, req.body as Record<string, unknown>);
    // Without an account the executor cannot start; the input is still checked so every problem shows at once.
    const accountErrors: FieldError[] = ['connection', 'identifier']
      .filter((f) => !values[f])
      .map((field) => ({ field, message: 'is required' }));
    if (parseErrors.length || accountErrors.length) {
      const errors = [...parseErrors, ...accountErrors];
      if (!parseErrors.length) errors.push(...validateToolInput(tool, structuredClone(input)));
      await toolPage(req, res, tool, values, { errors }, 400);
      return;
    }
    try {
      const out = await s.executor.execute({
        toolName: tool.name,
        input,
        dryRun,
        account: { connectionName: values.connection ?? '', identifier: values.identifier ?? '' },
      });
      const result: Result = dryRun
        ? {
            dryRun: true,
            requests: (
              out.data as {
                requests: Array<{ method: string; url: string; headers: Record<string, string>; body?: unknown }>;
              }
            ).requests.map((q) => ({
              method: q.method,
              url: q.url,
              headers: Object.entries(q.headers).map(([k, v]) => ({ k, v })),
              body: q.body === undefined ? undefined : JSON.stringify(q.body, null, 2),
            })),
          }
        : (({ text, truncated }) => ({ data: text, truncated, executionId: out.executionId }))(pretty(out.data));
      await toolPage(req, res, tool, values, { result });
    } catch (e) {
      const executionId = (e as { executionId?: string }).executionId;
      if (e instanceof ProviderError) {
        await toolPage(
          req,
          res,
          tool,
          values,
          { result: { providerError: true, status: e.status, body: pretty(e.body).text, executionId } },
          502,
        );
        return;
      }
      if (!(e instanceof ServiceError)) throw e;
      if (e.code === 'invalid_input' && Array.isArray(e.details)) {
        await toolPage(req, res, tool, values, { errors: e.details }, 400);
        return;
      }
      const where =
        e.code === 'account_not_found' ? 'identifier' : e.code === 'connection_not_found' ? 'connection' : undefined;
      await toolPage(
        req,
        res,
        tool,
        values,
        where
          ? { errors: [{ field: where, message: e.message }] }
          : { result: { serviceError: true, status: e.status, code: e.code, message: e.message } },
        e.status,
      );
    }
  });
}
