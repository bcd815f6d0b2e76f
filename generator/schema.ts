import type { ConnectorSpec, ParamSpec, ToolSpec } from '../core/spec-model.ts';
import { answerParams } from './output.ts';

/** Patterns behind the `format` shorthand, with the message a client sees when a value does not match. */
export const FORMATS: Record<NonNullable<ParamSpec['format']>, { pattern: string; message: string }> = {
  date: { pattern: '^\\d{4}-\\d{2}-\\d{2}$', message: 'must be a date in the form YYYY-MM-DD' },
  'date-time': {
    pattern: '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)?)?(Z|[+-]\\d{2}:?\\d{2})?)?$',
    message: 'must be an ISO 8601 date-time such as 2026-01-31T09:30:00Z',
  },
  email: { pattern: '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$', message: 'must be an email address' },
  uuid: {
    pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
    message: 'must be a UUID',
  },
  url: { pattern: '^https?://[^\\s]+$', message: 'must be an http(s) URL' },
};

export interface ToolSchema {
  schema: Record<string, unknown>;
  /** Messages keyed by ajv schemaPath, for keywords whose default message would be unhelpful. */
  messages: Record<string, string>;
}

export function paramSchema(p: ParamSpec, path: string, messages: Record<string, string>): Record<string, unknown> {
  const s: Record<string, unknown> = { type: p.type };
  if (p.description) s.description = p.description;
  if (p.enum) s.enum = p.enum;
  if (p.default !== undefined) s.default = p.default;
  if (p.minimum !== undefined) s.minimum = p.minimum;
  if (p.maximum !== undefined) s.maximum = p.maximum;
  if (p.whole) {
    s.multipleOf = 1;
    messages[`${path}/multipleOf`] = 'must be a whole number';
  }
  if (p.minLength !== undefined) s.minLength = p.minLength;
  if (p.maxLength !== undefined) s.maxLength = p.maxLength;
  if (p.format) {
    s.pattern = FORMATS[p.format].pattern;
    messages[`${path}/pattern`] = FORMATS[p.format].message;
  } else if (p.pattern) {
    s.pattern = p.pattern;
  }
  if (p.type === 'array') {
    s.items = p.items ? paramSchema(p.items, `${path}/items`, messages) : {};
    if (p.minItems !== undefined) s.minItems = p.minItems;
    if (p.maxItems !== undefined) s.maxItems = p.maxItems;
  }
  if (p.type === 'object') {
    if (p.properties) {
      s.properties = Object.fromEntries(
        Object.entries(p.properties).map(([k, v]) => [k, paramSchema(v, `${path}/properties/${k}`, messages)]),
      );
      const required = Object.entries(p.properties)
        .filter(([, v]) => v.required)
        .map(([k]) => k);
      if (required.length) s.required = required;
    }
    if (p.additionalProperties === false) s.additionalProperties = false;
    if (p.minProperties !== undefined) {
      s.minProperties = p.minProperties;
      messages[`${path}/minProperties`] =
        p.minProperties === 1 ? 'must not be empty' : `must have at least ${p.minProperties} properties`;
    }
  }
  if (p.secret) s.writeOnly = true;
  if (p.examples) s.examples = p.examples;
  return s;
}

/** The version selectors the spec's Versioning section adds to drive, docs and notes tools. */
export function versionParams(connector: ConnectorSpec): Record<string, ParamSpec> {
  const v = connector.versions!;
  return {
    schema_version: {
      type: 'string',
      enum: v.schema.available,
      description: `Version of the tool's input schema (default ${v.schema.default}). Never sent upstream.`,
    },
    tool_version: {
      type: 'string',
      enum: v.tool.available,
      description: `Version of the tool to execute (default ${v.tool.default}). Never sent upstream.`,
    },
  };
}

/** All input parameters of a tool, including the injected version selectors and the answer's parameters. */
export function toolParams(connector: ConnectorSpec, tool: ToolSpec): Record<string, ParamSpec> {
  return { ...tool.input, ...(tool.versioned ? versionParams(connector) : {}), ...answerParams(tool) };
}

export function toolInputSchema(connector: ConnectorSpec, tool: ToolSpec): ToolSchema {
  const messages: Record<string, string> = {};
  const params = toolParams(connector, tool);
  const properties: Record<string, unknown> = {};
  for (const [name, p] of Object.entries(params)) {
    properties[name] = paramSchema(p, `#/properties/${name}`, messages);
  }
  const required = Object.entries(params)
    .filter(([, p]) => p.required)
    .map(([n]) => n);
  const schema: Record<string, unknown> = {
    $id: tool.name,
    title: tool.name,
    description: tool.description,
    type: 'object',
    properties,
    additionalProperties: false,
  };
  if (required.length) schema.required = required;
  return { schema, messages };
}

/** A TypeScript type expression for a parameter. */
export function paramTsType(p: ParamSpec): string {
  if (p.enum && p.type !== 'array' && p.type !== 'object') return p.enum.map((v) => JSON.stringify(v)).join(' | ');
  switch (p.type) {
    case 'string':
      return 'string';
    case 'number':
    case 'integer':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'array': {
      const inner = p.items ? paramTsType(p.items) : 'unknown';
      return inner.includes('|') ? `Array<${inner}>` : `${inner}[]`;
    }
    case 'object': {
      if (!p.properties) return 'Record<string, unknown>';
      const fields = Object.entries(p.properties).map(
        ([k, v]) => `${JSON.stringify(k)}${v.required ? '' : '?'}: ${paramTsType(v)};`,
      );
      if (p.additionalProperties !== false) fields.push('[key: string]: unknown;');
      return `{ ${fields.join(' ')} }`;
    }
  }
}

export function pascal(name: string): string {
  return name
    .split(/[_-]/)
    .filter(Boolean)
    .map((s) => s[0]!.toUpperCase() + s.slice(1))
    .join('');
}
