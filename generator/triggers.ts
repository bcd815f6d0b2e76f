/**
 * Triggers (docs/triggers.md): the checks the meta-schema cannot make, and the code each trigger becomes. A polling
 * trigger's list request is a tool request in the same template language, compiled by compile.ts with the
 * trigger's config and the engine's own `since` and `cursor` as its input; push triggers declare a generic
 * verification scheme and, where the provider needs a registration or a handshake, a hook in the connector's own
 * `specs/hooks/<connector>.ts`.
 */
import type { ConnectorSpec, ParamSpec, RequestSpec, ToolSpec, TriggerSpec } from '../core/spec-model.ts';
import { compileRequests, type Fail } from './compile.ts';
import type { LoadedSpec } from './load.ts';
import { SpecError } from './load.ts';
import { paramSchema } from './schema.ts';

/** The input a polling trigger's requests see besides its config. */
export const ENGINE_PARAMS: Record<string, ParamSpec> = {
  since: { type: 'string', description: 'ISO 8601: the instance creation, then the newest item time seen.' },
  cursor: { type: 'string', description: 'The stored cursor, then the next page token within one poll.' },
};

export interface CheckedTrigger {
  trigger: TriggerSpec;
  /** Statements pushing the poll request(s) onto `out`. */
  buildCode?: string;
  startCode?: string;
  configSchema: Record<string, unknown>;
  messages: Record<string, string>;
}

const dotted = (p: string | undefined) => (p === undefined ? undefined : p.split('.'));

export function triggerConfigSchema(trigger: TriggerSpec): {
  schema: Record<string, unknown>;
  messages: Record<string, string>;
} {
  const messages: Record<string, string> = {};
  const properties: Record<string, unknown> = {};
  for (const [name, p] of Object.entries(trigger.config)) {
    properties[name] = paramSchema(p, `#/properties/${name}`, messages);
  }
  const required = Object.entries(trigger.config)
    .filter(([, p]) => p.required)
    .map(([n]) => n);
  const schema: Record<string, unknown> = {
    $id: `${trigger.name}__config`,
    title: `${trigger.name} config`,
    type: 'object',
    properties,
    additionalProperties: false,
    ...(required.length ? { required } : {}),
  };
  return { schema, messages };
}

export function triggerEventSchema(trigger: TriggerSpec): Record<string, unknown> {
  return { ...trigger.event, $id: `${trigger.name}__event` };
}

function compileOne(
  request: RequestSpec,
  params: Record<string, ParamSpec>,
  fail: Fail,
  spec: ConnectorSpec,
  path: Array<string | number>,
): { code: string; used: Set<string> } {
  const pseudo = { request } as unknown as ToolSpec;
  const prefixed: Fail = (p, problem) => fail([...path, ...p.slice(1)], problem);
  return compileRequests(pseudo, params, prefixed, {
    transport: spec.api.transport ?? 'rest',
    hosts: Object.keys(spec.api.hosts ?? {}),
  });
}

export function checkTriggers(loaded: LoadedSpec, hookNames: Set<string>): CheckedTrigger[] {
  const { spec } = loaded;
  const errors: SpecError[] = [];
  const out: CheckedTrigger[] = [];
  const seen = new Set<string>(spec.tools.map((t) => t.name));
  (spec.triggers ?? []).forEach((trigger, index) => {
    const base: Array<string | number> = ['triggers', index];
    const fail: Fail = (path, problem) => {
      throw loaded.error([...base, ...path], problem);
    };
    try {
      if (!trigger.name.startsWith(`${spec.name}_`)) fail(['name'], `must start with "${spec.name}_"`);
      if (seen.has(trigger.name)) fail(['name'], 'is already the name of a tool or trigger of this connector');
      seen.add(trigger.name);
      if (trigger.event.type !== 'object') fail(['event', 'type'], 'must be object: an event item is a JSON object');
      for (const name of Object.keys(trigger.config)) {
        if (name in ENGINE_PARAMS) fail(['config', name], `is set by the trigger engine; choose another name`);
        if (name === 'interval_seconds')
          fail(['config', name], 'is a setting of every polling instance; do not declare it');
      }
      let buildCode: string | undefined;
      let startCode: string | undefined;
      if (trigger.kind === 'polling') {
        if (!trigger.poll) fail(['poll'], 'is required for a polling trigger');
        if (trigger.push) fail(['push'], 'goes with kind: push only');
        const poll = trigger.poll;
        const params = { ...trigger.config, ...ENGINE_PARAMS };
        const built = compileOne(poll.request, params, fail, spec, ['poll', 'request']);
        for (const name of Object.keys(trigger.config)) {
          if (!built.used.has(name)) fail(['config', name], 'is never used by the poll request');
        }
        buildCode = built.code;
        if (poll.start) {
          startCode = compileOne(poll.start.request, trigger.config, fail, spec, ['poll', 'start', 'request']).code;
          if (!built.used.has('cursor')) fail(['poll', 'request'], 'a cursor feed (start) must send {cursor}');
        }
        if (poll.items && poll.items_hook) fail(['poll', 'items_hook'], 'give items or items_hook, not both');
        if (poll.items_hook && !hookNames.has(poll.items_hook)) {
          fail(['poll', 'items_hook'], `specs/hooks/${spec.name}.ts exports no "${poll.items_hook}"`);
        }
      } else {
        if (!trigger.push) fail(['push'], 'is required for a push trigger');
        if (trigger.poll) fail(['poll'], 'goes with kind: polling only');
        const v = trigger.push.verify;
        if (v.scheme !== 'client_state' && !v.header) fail(['push', 'verify', 'header'], `is required by ${v.scheme}`);
        if (v.scheme === 'client_state' && !v.client_state_path) {
          fail(['push', 'verify', 'client_state_path'], 'is required by client_state');
        }
        if ((v.signed === 'timestamp_body' || v.signed === 'method_url_body_timestamp') && !v.timestamp_header) {
          fail(['push', 'verify', 'timestamp_header'], 'is required when the timestamp is signed');
        }
        if (trigger.push.hook && !hookNames.has(trigger.push.hook)) {
          fail(['push', 'hook'], `specs/hooks/${spec.name}.ts exports no "${trigger.push.hook}"`);
        }
        if (!trigger.push.route && !trigger.push.instance_path && !trigger.push.hook) {
          fail(['push'], 'give route (app webhooks), instance_path or a hook: a notification must find its instance');
        }
      }
      const { schema, messages } = triggerConfigSchema(trigger);
      out.push({ trigger, buildCode, startCode, configSchema: schema, messages });
    } catch (e) {
      if (e instanceof SpecError) errors.push(e);
      else throw e;
    }
  });
  if (errors.length) {
    const err = new Error(errors.map((e) => e.message).join('\n')) as Error & { specErrors: SpecError[] };
    err.specErrors = errors;
    throw err;
  }
  return out;
}

const pairs = (m: Record<string, unknown> | undefined) =>
  m ? Object.entries(m).map(([k, v]) => ({ path: k.split('.'), value: v })) : undefined;

/** The `TriggerDefinition` literal of a checked trigger (build functions named `trigger_build_<name>`). */
export function triggerEntry(connector: string, c: CheckedTrigger): string {
  const t = c.trigger;
  const fields: string[] = [
    `name: ${JSON.stringify(t.name)}`,
    `connector: ${JSON.stringify(connector)}`,
    `title: ${JSON.stringify(t.title)}`,
    `description: ${JSON.stringify(t.description.trim())}`,
    `kind: ${JSON.stringify(t.kind)}`,
    `configSchema: ${JSON.stringify(c.configSchema)}`,
    `eventSchema: ${JSON.stringify(t.event)}`,
    `validateConfig: V.${validatorExport(t.name, 'config')}`,
    `validateEvent: V.${validatorExport(t.name, 'event')}`,
  ];
  if (t.poll) {
    const p = t.poll;
    const poll: string[] = [`build: trigger_build_${t.name}`];
    if (p.start)
      poll.push(`start: { build: trigger_start_${t.name}, cursor: ${JSON.stringify(dotted(p.start.cursor))} }`);
    if (p.items) poll.push(`items: ${JSON.stringify(dotted(p.items))}`);
    if (p.items_hook) poll.push(`itemsHook: ${p.items_hook}`);
    poll.push(`id: ${JSON.stringify(p.id.map((x) => x.split('.')))}`);
    if (p.time) poll.push(`time: ${JSON.stringify(dotted(p.time))}`, `lookbackSeconds: ${p.lookback_seconds ?? 0}`);
    if (p.next_page) poll.push(`nextPage: ${JSON.stringify(dotted(p.next_page))}`);
    if (p.next_cursor) poll.push(`nextCursor: ${JSON.stringify(dotted(p.next_cursor))}`);
    if (p.skip_when) poll.push(`skipWhen: ${JSON.stringify(pairs(p.skip_when))}`);
    poll.push(`intervalSeconds: ${p.interval_seconds ?? 60}`, `maxPages: ${p.max_pages ?? 10}`);
    fields.push(`poll: { ${poll.join(', ')} }`);
  }
  if (t.push) {
    const p = t.push;
    const v = p.verify;
    const verify = {
      scheme: v.scheme,
      ...(v.header ? { header: v.header.toLowerCase() } : {}),
      ...(v.timestamp_header ? { timestampHeader: v.timestamp_header.toLowerCase() } : {}),
      ...(v.signed ? { signed: v.signed } : {}),
      encoding: v.encoding ?? 'base64',
      ...(v.prefix ? { prefix: v.prefix } : {}),
      maxAgeSeconds: v.max_age_seconds ?? 300,
      ...(v.client_state_path ? { clientStatePath: dotted(v.client_state_path) } : {}),
      secret: v.secret ?? 'instance',
    };
    const push: string[] = [`verify: ${JSON.stringify(verify)}`];
    if (p.events) push.push(`events: ${JSON.stringify(dotted(p.events))}`);
    if (p.match) push.push(`match: ${JSON.stringify(pairs(p.match))}`);
    if (p.route)
      push.push(`route: ${JSON.stringify({ path: dotted(p.route.path), accountField: p.route.account_field })}`);
    if (p.instance_path) push.push(`instancePath: ${JSON.stringify(dotted(p.instance_path))}`);
    if (p.id) push.push(`id: ${JSON.stringify(p.id.map((x) => x.split('.')))}`);
    if (p.item) push.push(`item: ${JSON.stringify(dotted(p.item))}`);
    if (p.hook) push.push(`hook: ${p.hook}`);
    fields.push(`push: { ${push.join(', ')} }`);
  }
  return `{ ${fields.join(',\n')} } satisfies TriggerDefinition`;
}

export const validatorExport = (trigger: string, part: 'config' | 'event') => `trigger_${trigger}__${part}`;
