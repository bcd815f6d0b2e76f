import { readFileSync } from 'node:fs';
import Handlebars from 'handlebars';
import type { AuthSpec, ConnectorSpec, ParamSpec, RequestSpec, RuleSpec, ToolSpec } from '../core/spec-model.ts';
import { toolParams } from './schema.ts';

const template = (name: string) =>
  Handlebars.compile(readFileSync(new URL(`./templates/${name}`, import.meta.url), 'utf8'), { noEscape: false });

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n+/g, ' ');

function typeLabel(p: ParamSpec): string {
  if (p.type === 'array') return `array<${p.items ? typeLabel(p.items) : 'any'}>`;
  return p.type;
}

function constraints(p: ParamSpec): string {
  const c: string[] = [];
  if (p.enum) c.push(`one of ${p.enum.map((v) => `\`${v}\``).join(', ')}`);
  if (p.minimum !== undefined && p.maximum !== undefined) c.push(`${p.minimum}–${p.maximum}`);
  else if (p.minimum !== undefined) c.push(`≥ ${p.minimum}`);
  else if (p.maximum !== undefined) c.push(`≤ ${p.maximum}`);
  if (p.whole) c.push('whole number');
  if (p.minLength !== undefined) c.push(`length ≥ ${p.minLength}`);
  if (p.maxLength !== undefined) c.push(`length ≤ ${p.maxLength}`);
  if (p.format) c.push(p.format);
  if (p.pattern) c.push(`pattern \`${p.pattern}\``);
  if (p.minItems !== undefined) c.push(`≥ ${p.minItems} items`);
  if (p.maxItems !== undefined) c.push(`≤ ${p.maxItems} items`);
  if (p.minProperties !== undefined) c.push(`≥ ${p.minProperties} properties`);
  if (p.csv) c.push(`comma-separated${p.csv.max_items ? `, ≤ ${p.csv.max_items} values` : ''}`);
  if (p.json) c.push(`JSON ${p.json.types.join(' or ')} in a string`);
  if (p.items?.enum) c.push(`items one of ${p.items.enum.map((v) => `\`${v}\``).join(', ')}`);
  return cell(c.join('; ')) || '';
}

function ruleText(rule: RuleSpec): string {
  if ('requires' in rule) {
    const when = Object.entries(rule.when)
      .map(([k, v]) => `\`${k}\` ${typeof v === 'object' ? JSON.stringify(v) : `= \`${v}\``}`)
      .join(' and ');
    return `${rule.requires.map((r) => `\`${r}\``).join(', ')} required when ${when}`;
  }
  if ('unsupported' in rule) {
    return `${rule.unsupported.map((r) => `\`${r}\``).join(', ')} refused (400): ${rule.message ?? "the provider's API has no field for it"}`;
  }
  if ('at_least_one_of' in rule) return `at least one of ${rule.at_least_one_of.map((r) => `\`${r}\``).join(', ')}`;
  const m = rule.max_page;
  return `\`${m.page}\` ≤ floor(${m.total} / \`${m.per_page}\`) (\`${m.per_page}\` defaults to ${m.per_page_default})`;
}

function upstreamLine(connector: ConnectorSpec, r: RequestSpec): string {
  if (r.mcp_tool) return `MCP tools/call ${r.mcp_tool}`;
  const host = r.host ? connector.api.hosts![r.host] : connector.api.base_url;
  const extra = [r.for_each ? `once per ${r.for_each}` : '', r.when ? `when ${JSON.stringify(r.when)}` : '']
    .filter(Boolean)
    .join(', ');
  return `${r.method} ${host}${r.path}${extra ? ` (${extra})` : ''}`;
}

function authLines(a: AuthSpec): { title: string; lines: string[] } {
  switch (a.kind) {
    case 'oauth2':
      return {
        title: a.title ?? 'OAuth 2.0',
        lines: [
          `Authorize: \`${a.authorize_url}\``,
          `Token: \`${a.token_url}\` (${a.token_auth ?? 'client_secret_post'})`,
          `PKCE: ${a.pkce === false ? 'off' : 'S256'}`,
          `Default scopes: ${a.scopes.default.map((s) => `\`${s}\``).join(', ') || '(none)'}`,
          ...(a.scopes.available?.length
            ? [`Known scopes: ${a.scopes.available.map((s) => `\`${s.name}\``).join(', ')}`]
            : []),
          ...(a.authorize_params
            ? [
                `Extra authorize parameters: ${Object.entries(a.authorize_params)
                  .map(([k, v]) => `\`${k}=${v}\``)
                  .join(', ')}`,
              ]
            : []),
          ...(a.token_response_fields
            ? [
                `Kept from the token response: ${Object.entries(a.token_response_fields)
                  .map(([k, v]) => `\`${v}\` as \`${k}\``)
                  .join(', ')}`,
              ]
            : []),
          'Redirect URI to register at the provider: `https://<ENV_URL>/sso/v1/oauth/<CONNECTION_ID>/callback` (shown on the connection)',
        ],
      };
    case 'oauth2_mcp':
      return {
        title: a.title ?? 'OAuth 2.1 (MCP)',
        lines: [
          `Protected resource: \`${a.resource}\`; authorization server found by discovery (RFC 9728, RFC 8414)`,
          'Client registered dynamically (RFC 7591) once per connection; PKCE S256 and resource indicator (RFC 8707) on every request',
        ],
      };
    default:
      return {
        title: a.title ?? (a.kind === 'api_key' ? 'API key' : a.kind === 'bearer' ? 'Bearer token' : 'Basic'),
        lines: [
          'Connected-account credentials (set with upsert or in the dashboard):',
          ...a.fields.map(
            (f) =>
              `\`${f.name}\` — ${f.title}${f.secret ? ' (secret, sealed at rest, never shown again)' : ''}${f.description ? `: ${f.description}` : ''}${
                f.host_allowlist ? ` (allowed hosts: ${f.host_allowlist.map((h) => `\`${h}\``).join(', ')})` : ''
              }`,
          ),
          ...(a.verify ? [`Checked on save with \`${a.verify.method} ${a.verify.path}\``] : []),
        ],
      };
  }
}

function exampleRequest(tool: ToolSpec): string {
  return tool.examples[0]!.requests.map((r) => {
    const lines = [`${r.method} ${r.url}`];
    for (const [k, v] of Object.entries(r.headers ?? {})) lines.push(`${k}: ${v}`);
    if (r.body !== undefined) lines.push('', JSON.stringify(r.body, null, 2));
    return lines.join('\n');
  }).join('\n\n');
}

export function emitConnectorDoc(connector: ConnectorSpec): string {
  const proxyExample = (() => {
    // A path on the proxy root: requests sent to another host (`host:`) are not reachable through the proxy.
    const onRoot = (t: ConnectorSpec['tools'][number]) =>
      [t.request, ...(t.requests ?? [])].find((r) => r?.path && !r.host);
    const first = connector.tools.find(onRoot);
    const p = (first ? onRoot(first) : undefined)?.path ?? '/';
    return p.replace(/\{[^}]+\}/g, '123');
  })();
  return template('connector.md.hbs')({
    name: connector.name,
    title: connector.title,
    description: connector.description.trim(),
    provider: connector.provider,
    docsUrl: connector.docs_url,
    baseUrl: connector.api.base_url,
    proxyExample,
    hosts: Object.entries(connector.api.hosts ?? {}).map(([name, url]) => ({ name, url })),
    transport: connector.api.transport ?? 'rest',
    auth: connector.auth.map(authLines),
    tools: connector.tools.map((tool) => {
      const params = toolParams(connector, tool);
      return {
        name: tool.name,
        anchor: tool.name,
        summary: cell(tool.description.split('\n')[0]!),
        description: tool.description.trim(),
        params: Object.entries(params).map(([name, p]) => ({
          name,
          type: typeLabel(p),
          required: !!p.required,
          default: p.default === undefined ? '' : `\`${JSON.stringify(p.default)}\``,
          constraints: constraints(p),
          description: cell(p.description ?? ''),
        })),
        rules: (tool.rules ?? []).map(ruleText),
        upstream: (tool.request ? [tool.request] : (tool.requests ?? [])).map((r) => upstreamLine(connector, r)),
        hook: tool.hook,
        notes: tool.notes?.trim(),
        exampleInput: JSON.stringify(tool.examples[0]!.input, null, 2),
        exampleRequest: exampleRequest(tool),
        exampleMany: tool.examples[0]!.requests.length > 1,
      };
    }),
  });
}

export function emitIndexDoc(connectors: ConnectorSpec[]): string {
  return template('index.md.hbs')({
    toolCount: connectors.reduce((n, c) => n + c.tools.length, 0),
    connectors: connectors.map((c) => ({
      name: c.name,
      title: c.title,
      provider: c.provider,
      toolCount: c.tools.length,
      auth: c.auth.map((a) => a.kind).join(' or '),
    })),
  });
}
