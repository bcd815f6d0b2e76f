import type { ConnectorSpec } from '../core/spec-model.ts';
import { endpoints, type Endpoint } from '../core/api/endpoints.ts';
import { SCOPE_DESCRIPTIONS, SCOPES } from '../core/api/scopes.ts';
import { components, type JsonSchema } from '../core/api/schemas.ts';
import { withRefs } from './emit-api.ts';
import { pascal, toolInputSchema } from './schema.ts';

const PREFIX = '#/components/schemas/';
const ref = (name: string) => ({ $ref: `${PREFIX}${name}` });
const doc = (schema: JsonSchema) => withRefs(schema, PREFIX);

/** The methods an `ANY` endpoint (the proxy) is listed under. */
const ANY_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head'];

function parameters(e: Endpoint): unknown[] {
  const out: unknown[] = [];
  const add = (where: 'path' | 'query', schema: JsonSchema | undefined) => {
    const props = (schema?.properties ?? {}) as Record<string, JsonSchema>;
    const required = new Set((schema?.required ?? []) as string[]);
    for (const [name, s] of Object.entries(props)) {
      const { description, ...rest } = s;
      out.push({
        name,
        in: where,
        required: where === 'path' || required.has(name),
        ...(description ? { description } : {}),
        schema: doc(rest),
      });
    }
  };
  add('path', e.params);
  add('query', e.query);
  for (const h of e.headers ?? []) {
    out.push({
      name: h.name,
      in: 'header',
      required: h.required,
      description: h.description,
      schema: { type: 'string' },
    });
  }
  return out;
}

function operation(id: string, e: Endpoint, executeBody: unknown): Record<string, unknown> {
  const body = e.body
    ? {
        requestBody: {
          required: e.body.required,
          content: {
            'application/json': { schema: id === 'executeTool' ? executeBody : doc(e.body.schema) },
            ...(e.body.form ? { 'application/x-www-form-urlencoded': { schema: doc(e.body.schema) } } : {}),
          },
        },
      }
    : {};
  const params = parameters(e);
  return {
    operationId: id,
    summary: e.summary,
    ...(e.description ? { description: e.description } : {}),
    // OpenAPI 3.1 lets a non-OAuth scheme list the roles it needs: the one scope of the route, also as an extension.
    ...(e.auth === 'bearer' ? { security: [{ bearerAuth: [e.scope] }], 'x-required-scope': e.scope } : {}),
    ...(e.auth === 'client' ? { security: [{ clientBasic: [] }, {}] } : {}),
    ...(params.length ? { parameters: params } : {}),
    ...body,
    responses: Object.fromEntries(
      Object.entries(e.responses).map(([status, r]) => [
        status,
        {
          description: r.description,
          ...(r.headers
            ? {
                headers: Object.fromEntries(
                  Object.entries(r.headers).map(([h, v]) => [h, { description: v.description, schema: v.schema }]),
                ),
              }
            : {}),
          ...(r.content
            ? {
                content: Object.fromEntries(
                  Object.entries(r.content).map(([type, schema]) => [type, { schema: doc(schema) }]),
                ),
              }
            : {}),
        },
      ]),
    ),
  };
}

/**
 * The OpenAPI 3.1 document of the service's own HTTP API: every endpoint of core/api/endpoints.ts, with every
 * tool's input schema for `POST /v1/tools/execute`.
 */
export function emitOpenApi(connectors: ConnectorSpec[]): Record<string, unknown> {
  const schemas: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(components)) schemas[name] = withRefs(schema, PREFIX, name);
  // The specs know which connectors there are; the endpoint schema (core/) does not.
  const create = schemas.ConnectionCreate as { properties: Record<string, Record<string, unknown>> };
  create.properties.connector = { ...create.properties.connector, enum: connectors.map((c) => c.name) };

  const execute = endpoints.executeTool.body.schema as { properties: Record<string, unknown>; required: string[] };
  const executeVariants: unknown[] = [];
  const mapping: Record<string, string> = {};
  for (const c of connectors) {
    for (const t of c.tools) {
      const { schema } = toolInputSchema(c, t);
      const { $id: _id, ...rest } = schema;
      const inputName = `${pascal(t.name)}Input`;
      schemas[inputName] = rest;
      const variant = `Execute${pascal(t.name)}`;
      schemas[variant] = {
        ...execute,
        required: [...execute.required, 'tool_input'],
        properties: { ...execute.properties, tool_name: { const: t.name }, tool_input: ref(inputName) },
      };
      executeVariants.push(ref(variant));
      mapping[t.name] = `${PREFIX}${variant}`;
    }
  }
  schemas.ExecuteToolRequest = { oneOf: executeVariants, discriminator: { propertyName: 'tool_name', mapping } };

  const paths: Record<string, Record<string, unknown>> = {};
  for (const [id, e] of Object.entries(endpoints) as Array<[string, Endpoint]>) {
    const item = (paths[e.path] ??= {});
    if (e.method === 'ANY') {
      for (const m of ANY_METHODS) item[m] = operation(`${id}${pascal(m)}`, e, undefined);
    } else item[e.method.toLowerCase()] = operation(id, e, ref('ExecuteToolRequest'));
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Agent connector service',
      version: '1',
      description:
        'Runs OAuth flows, stores and refreshes provider credentials, and lets a client proxy raw requests or execute named tools. ' +
        'Generated from core/api/ and specs/*.yaml. Paths match without regard to case and with or without one trailing slash.',
    },
    servers: [{ url: 'http://localhost:8080' }],
    components: {
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'A service token from POST /oauth/token. It carries the scopes of its API credential; each operation names ' +
            'the one it needs (`x-required-scope`), and a token without it is answered 403 `insufficient_scope`. Scopes: ' +
            SCOPES.map((sc) => `\`${sc}\` (${SCOPE_DESCRIPTIONS[sc]})`).join('; ') +
            '.',
        },
        clientBasic: { type: 'http', scheme: 'basic' },
      },
      schemas,
    },
    paths,
  };
}
