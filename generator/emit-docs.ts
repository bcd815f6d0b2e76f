import { toolGuidance } from './guidance.ts';
import { readFileSync } from 'node:fs';
import Handlebars from 'handlebars';
import type {
  AuthSpec,
  ConnectorSpec,
  ExampleSpec,
  OutputNode,
  ParamSpec,
  RequestSpec,
  RuleSpec,
  ToolSpec,
} from '../core/spec-model.ts';
import { shownHeaders } from '../core/request-headers.ts';
import { toolParams } from './schema.ts';
import { connectorIcon } from './icon.ts';

// The output is Markdown, not HTML: Handlebars' HTML escaping would print `&#x60;` for a backtick. What
// Markdown itself needs escaped is done by md() and cell().
const template = (name: string) =>
  Handlebars.compile(readFileSync(new URL(`./templates/${name}`, import.meta.url), 'utf8'), { noEscape: true });

/**
 * Text as Markdown shows it: outside code spans, `<` would open an HTML tag (`/documents/<id>` would lose
 * `<id>`) and `&name;` would be read as an entity, so both are backslash-escaped; code spans stay as written.
 */
export function md(text: string): string {
  return text
    .split(/(`+[^`]*`+)/)
    .map((part, i) => (i % 2 ? part : part.replace(/</g, '\\<').replace(/&(?=#?\w+;)/g, '\\&')))
    .join('');
}

/** Text in a table cell: Markdown-escaped, on one line, with `|` escaped (also inside code spans, as GFM requires). */
const cell = (s: string) => md(s).replace(/\|/g, '\\|').replace(/\n+/g, ' ');

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
    return `${rule.unsupported.map((r) => `\`${r}\``).join(', ')} refused (400): ${md(rule.message ?? "the provider's API has no field for it")}`;
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
              `\`${f.name}\` — ${md(f.title)}${f.secret ? ' (secret, sealed at rest, never shown again)' : ''}${f.description ? `: ${md(f.description)}` : ''}${
                f.host_allowlist ? ` (allowed hosts: ${f.host_allowlist.map((h) => `\`${h}\``).join(', ')})` : ''
              }`,
          ),
          ...(a.verify
            ? [
                `Checked with \`${a.verify.method} ${a.verify.path}\` when saved with \`"verify": true\` (\`PUT /v1/connected-accounts\`) or the dashboard's check box; refused credentials are not saved. Without it, credentials are saved unchecked and the account is ACTIVE until the provider refuses a call`,
              ]
            : []),
        ],
      };
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A URL pattern of a request template: `{x}` in the base matches any text, in the path one segment. */
function requestPattern(connector: ConnectorSpec, r: RequestSpec): RegExp {
  const base = r.host ? connector.api.hosts![r.host]! : connector.api.base_url;
  const part = (text: string, any: string) =>
    text
      .split(/\{[^{}]+\}/)
      .map(escapeRegExp)
      .join(any);
  return new RegExp(`^${part(base, '.+?')}${part(r.path ?? '', '[^/?#]+')}(\\?.*)?$`);
}

/**
 * The request template an example's request came from: the one whose URL it matches; for a hook tool with one
 * template, that one (its hook may rewrite the URL, keeping the template's headers and anonymity).
 */
function templateOf(connector: ConnectorSpec, tool: ToolSpec, sent: ExampleSpec['requests'][number]) {
  const templates = tool.request ? [tool.request] : (tool.requests ?? []);
  if (connector.api.transport === 'mcp') {
    const name = (sent.body as { params?: { name?: unknown } } | undefined)?.params?.name;
    return templates.find((r) => r.mcp_tool === name);
  }
  const matching = templates.find(
    (r) => r.method === sent.method && r.path && requestPattern(connector, r).test(sent.url),
  );
  return matching ?? (tool.hook && templates.length === 1 ? templates[0] : undefined);
}

/**
 * Every header an example's request is sent with, credentials redacted (as applied by the connector's first
 * auth kind): the connector's, the user agent, content type, credentials, and the ones the example lists.
 * The golden tests check that the dry-run planner produces exactly these.
 */
export function exampleRequestHeaders(
  connector: ConnectorSpec,
  tool: ToolSpec,
  sent: ExampleSpec['requests'][number],
): Record<string, string> {
  const from = templateOf(connector, tool, sent);
  return shownHeaders(connector, connector.auth[0]!.apply, {
    headers: sent.headers ?? {},
    body: sent.body,
    bodyEncoding: from?.body_encoding,
    anonymous: from?.anonymous,
    apply: from?.apply,
    mcp: connector.api.transport === 'mcp' ? { tool: from?.mcp_tool ?? '', arguments: {} } : undefined,
  });
}

function exampleRequests(connector: ConnectorSpec, tool: ToolSpec, example: ExampleSpec): string {
  return example.requests
    .map((r) => {
      const lines = [`${r.method} ${r.url}`];
      for (const [k, v] of Object.entries(exampleRequestHeaders(connector, tool, r))) lines.push(`${k}: ${v}`);
      if (r.body !== undefined) lines.push('', JSON.stringify(r.body, null, 2));
      return lines.join('\n');
    })
    .join('\n\n');
}

/**
 * A proxy path from a real example (the first request on the API root, not on another host), with the
 * example's values in it rather than placeholders.
 */
function proxyExample(connector: ConnectorSpec): { path: string; url: string } {
  const fields: Record<string, string> = { ...connector.example_fields };
  for (const a of connector.auth)
    if ('fields' in a) for (const f of a.fields) fields[f.name] ??= f.example ?? f.default ?? '';
  const base = connector.api.base_url.replace(/\{([^{}]+)\}/g, (m, name: string) => fields[name] || m);
  for (const tool of connector.tools) {
    for (const example of tool.examples) {
      for (const sent of example.requests) {
        const from = templateOf(connector, tool, sent);
        if (from && !from.host && !from.mcp_tool && sent.url.startsWith(base)) {
          const path = sent.url.slice(base.length);
          return { path, url: `${connector.api.base_url}${path}` };
        }
      }
    }
  }
  return { path: '/', url: `${connector.api.base_url}/` };
}

/** A shape as one line of the docs: `value[] {id, subject, from {emailAddress {name, address}}}`. */
export function shapeText(node: OutputNode): string {
  if (typeof node === 'string') return node;
  if (Array.isArray(node)) {
    const inner = shapeText(node[0] as OutputNode);
    return inner.startsWith('{') ? `[] ${inner}` : `${inner}[]`;
  }
  const n = node as Record<string, unknown>;
  if (typeof n.$type === 'string') return n.$type;
  if (n.$join !== undefined) return 'text';
  if (n.$selected !== undefined) return `${shapeText(n.$selected as OutputNode)} (when selected)`;
  const fields = Object.entries(n).filter(([k]) => !k.startsWith('$'));
  if (!fields.length) return '{}';
  return `{${fields
    .map(([k, v]) => {
      const inner = shapeText(v as OutputNode);
      return inner.startsWith('{') || inner.startsWith('[]') ? `${k} ${inner}` : k;
    })
    .join(', ')}}`;
}

function answerLine(tool: ToolSpec): string {
  return cell(`\`${shapeText(tool.output.shape)}\``);
}

function pagingLine(tool: ToolSpec): string | undefined {
  const o = tool.output;
  if (!o.items) return undefined;
  const list = `the list is \`${o.items}\``;
  const going = tool.annotations.readOnlyHint
    ? 'an answer over the budget, or a provider page with more after it, carries `next_cursor` (call again with it)'
    : 'an answer over the budget is cut at an item boundary (no `next_cursor`: calling again would run the tool again)';
  const p = o.paging;
  const provider = p
    ? `; provider paging: ${[
        p.skip && `offset \`${p.skip}\``,
        p.page && `page \`${p.page}\``,
        p.token && `token \`${p.token}\``,
        p.size && `size \`${p.size}\``,
      ]
        .filter(Boolean)
        .join(', ')}${p.next ? `, more while \`${p.next}\` is set` : ''}${p.total ? `, total at \`${p.total}\`` : ''}`
    : '';
  return `${list}; ${going}${provider}.`;
}

export function emitConnectorDoc(connector: ConnectorSpec): string {
  return (
    template('connector.md.hbs')({
      icon: connectorIcon(connector.name) !== undefined,
      name: connector.name,
      title: connector.title,
      description: md(connector.description.trim()),
      provider: connector.provider,
      docsUrl: connector.docs_url,
      baseUrl: connector.api.base_url,
      proxyExample: proxyExample(connector),
      connectorHeaders: Object.keys(connector.api.headers ?? {}).length > 0,
      authTitle: authLines(connector.auth[0]!).title,
      hosts: Object.entries(connector.api.hosts ?? {}).map(([name, url]) => ({ name, url })),
      transport: connector.api.transport ?? 'rest',
      auth: connector.auth.map(authLines),
      tools: connector.tools.map((tool) => {
        const params = toolParams(connector, tool);
        return {
          name: tool.name,
          anchor: tool.name,
          title: md(tool.title),
          titleCell: cell(tool.title),
          hints: hintLine(tool.annotations, tool.keywords),
          summary: cell(tool.description.split('\n')[0]!),
          description: md(tool.description.trim()),
          guidance: md(toolGuidance(connector, tool)),
          params: Object.entries(params).map(([name, p]) => ({
            name,
            type: `\`${typeLabel(p)}\``,
            required: !!p.required,
            default: p.default === undefined ? '' : `\`${JSON.stringify(p.default)}\``,
            constraints: constraints(p),
            description: cell(p.description ?? ''),
          })),
          rules: (tool.rules ?? []).map(ruleText),
          upstream: (tool.request ? [tool.request] : (tool.requests ?? [])).map((r) => upstreamLine(connector, r)),
          hook: tool.hook,
          answer: answerLine(tool),
          paging: pagingLine(tool),
          notes: tool.notes ? md(tool.notes.trim()) : undefined,
          examples: tool.examples.map((example, i) => ({
            heading: `Example${tool.examples.length > 1 ? ` ${i + 1}` : ''}${example.title ? `: ${md(example.title.replace(/\.$/, ''))}` : ''}`,
            input: JSON.stringify(example.input, null, 2),
            requests: exampleRequests(connector, tool, example),
            many: example.requests.length > 1,
            none: example.requests.length === 0,
          })),
        };
      }),
    }) + triggersDoc(connector)
  );
}

/** The connector's triggers (docs/triggers.md): kind, config, what is polled or verified, the event's item. */
function triggersDoc(connector: ConnectorSpec): string {
  const triggers = connector.triggers ?? [];
  if (!triggers.length) return '';
  const out = [
    '',
    '## Triggers',
    '',
    'Delivered to webhook endpoints as `trigger.<name>` events (see docs/triggers.md).',
    '',
  ];
  for (const t of triggers) {
    out.push(`### ${t.name}`, '', `**${md(t.title)}** (${t.kind}). ${md(t.description.trim())}`, '');
    const config = Object.entries(t.config);
    if (config.length) {
      out.push('| Config | Type | Required | Description |', '| --- | --- | --- | --- |');
      for (const [name, p] of config) {
        out.push(`| \`${name}\` | \`${typeLabel(p)}\` | ${p.required ? 'yes' : 'no'} | ${cell(p.description ?? '')} |`);
      }
      out.push('');
    } else out.push('No config.', '');
    if (t.poll) {
      const r = t.poll.request;
      const how = r.mcp_tool ? `the MCP tool \`${r.mcp_tool}\`` : `\`${r.method} ${r.path}\``;
      const feed = t.poll.start
        ? `a cursor feed (first cursor from \`${t.poll.start.request.method ?? 'POST'} ${t.poll.start.request.path ?? t.poll.start.request.mcp_tool}\`, at \`${t.poll.start.cursor}\`)`
        : `items newer than \`${t.poll.time}\``;
      out.push(
        `Polls ${how} every ${t.poll.interval_seconds ?? 60} s by default: ${feed}; an item is identified by ${t.poll.id.map((p) => `\`${p}\``).join(' + ')}.`,
        '',
      );
    }
    if (t.push) {
      out.push(
        `Pushed to the connection's ingress URL; verified by \`${t.push.verify.scheme}\`${t.push.verify.header ? ` (header \`${t.push.verify.header}\`)` : ''}${t.push.hook ? `; registered with the provider by the hook \`${t.push.hook}\`` : ''}.`,
        '',
      );
    }
    out.push('Event item schema:', '', '```json', JSON.stringify(t.event, null, 2), '```', '');
  }
  return out.join('\n');
}

/** The tool's MCP annotations (and search keywords) in one line of the docs. */
function hintLine(a: ToolSpec['annotations'], keywords: readonly string[] | undefined): string {
  const hints = [
    a.readOnlyHint ? 'read-only' : 'writes',
    ...(a.readOnlyHint ? [] : [a.destructiveHint ? 'destructive' : 'additive']),
    a.idempotentHint ? 'idempotent' : 'not idempotent',
    a.openWorldHint ? 'open world' : 'closed world',
  ];
  return `${hints.join(' · ')}${keywords?.length ? `. Keywords: ${keywords.map((k) => md(k)).join(', ')}` : ''}`;
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

export const NUMBER_WORDS = [
  'No',
  'One',
  'Two',
  'Three',
  'Four',
  'Five',
  'Six',
  'Seven',
  'Eight',
  'Nine',
  'Ten',
  'Eleven',
  'Twelve',
];

const AUTH_KINDS: Record<AuthSpec['kind'], string> = {
  oauth2: 'OAuth 2.0',
  oauth2_mcp: 'OAuth 2.1 with discovery and dynamic client registration',
  api_key: 'API key',
  bearer: 'Bearer token',
  basic: 'Basic',
};

export const README_START =
  '<!-- connectors: written by `npm run generate` from specs/*.yaml; edit the specs, not this part -->';
export const README_END = '<!-- /connectors -->';

/**
 * The README's connector summary (counts, table, hooks), between README_START and README_END, so a new or
 * changed connector cannot leave it wrong (`npm run generate -- --check` fails when it differs).
 */
export function emitReadmeConnectors(readme: string, connectors: ConnectorSpec[]): string {
  const start = readme.indexOf(README_START);
  const end = readme.indexOf(README_END);
  if (start < 0 || end < start) throw new Error(`README.md must contain ${README_START} ... ${README_END}`);
  const total = connectors.reduce((n, c) => n + c.tools.length, 0);
  const hooked = connectors.flatMap((c) => c.tools.filter((t) => t.hook).map(() => c.name));
  const hookFiles = [...new Set(hooked)].map((name) => `\`specs/hooks/${name}.ts\``);
  const count = connectors.length;
  const auth = (a: AuthSpec) =>
    AUTH_KINDS[a.kind] + ('fields' in a ? ` (${a.fields.map((f) => `\`${f.name}\``).join(', ')})` : '');
  const lines = [
    `${NUMBER_WORDS[count] ?? count} connector${count === 1 ? '' : 's'}, ${total} tools; each page of [\`generated/docs/\`](generated/docs/index.md) lists every tool with its parameters, rules, upstream requests and provider notes.`,
    '',
    '| Connector | Tools | Provider API | Authentication |',
    '|---|---|---|---|',
    ...connectors.map(
      (c) =>
        `| [\`${c.name}\`](generated/docs/${c.name}.md) | ${c.tools.length} | ${cell(c.provider)} | ${cell(c.auth.map(auth).join(' or '))} |`,
    ),
    '',
    `${total - hooked.length} of the ${total} tools are fully declarative; ${hooked.length} use a named hook${hookFiles.length ? ` (${hookFiles.join(', ')})` : ''}.`,
  ];
  return `${readme.slice(0, start + README_START.length)}\n\n${lines.join('\n')}\n\n${readme.slice(end)}`;
}
