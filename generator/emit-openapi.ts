import type { ConnectorSpec } from '../core/spec-model.ts';
import { pascal, toolInputSchema } from './schema.ts';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: unknown) => ({ 'application/json': { schema } });
const ok = (description: string, schema: unknown) => ({ description, content: json(schema) });
const errors = {
  '400': { description: 'Invalid input; `details` names every bad field', content: json(ref('Error')) },
  '401': { description: 'Missing, expired or invalid service token', content: json(ref('Error')) },
  '404': { description: 'Not found', content: json(ref('Error')) },
};
const auth = [{ bearerAuth: [] }];
const nameParam = { name: 'connection_name', in: 'path', required: true, schema: { type: 'string' } };
const idParam = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };

/** The OpenAPI 3.1 document of the service's own HTTP API, with every tool's input schema. */
export function emitOpenApi(connectors: ConnectorSpec[]): Record<string, unknown> {
  const toolSchemas: Record<string, unknown> = {};
  const executeVariants: unknown[] = [];
  const mapping: Record<string, string> = {};
  for (const c of connectors) {
    for (const t of c.tools) {
      const { schema } = toolInputSchema(c, t);
      const { $id: _id, ...rest } = schema;
      const inputName = `${pascal(t.name)}Input`;
      toolSchemas[inputName] = rest;
      const variant = `Execute${pascal(t.name)}`;
      toolSchemas[variant] = {
        type: 'object',
        required: ['tool_name', 'tool_input'],
        properties: {
          tool_name: { const: t.name },
          tool_input: ref(inputName),
          connected_account_id: { type: 'string' },
          connection_name: { type: 'string' },
          identifier: { type: 'string' },
          dry_run: { type: 'boolean', default: false },
        },
      };
      executeVariants.push(ref(variant));
      mapping[t.name] = `#/components/schemas/${variant}`;
    }
  }

  const account = {
    type: 'object',
    properties: {
      id: { type: 'string' },
      connection_name: { type: 'string' },
      connector: { type: 'string' },
      identifier: { type: 'string' },
      status: { enum: ['PENDING_AUTH', 'ACTIVE', 'EXPIRED', 'DISCONNECTED'] },
      fields: { type: 'object', description: 'Non-secret credential fields (for example a desk domain)' },
      token_expires_at: { type: ['string', 'null'], format: 'date-time' },
      last_used_at: { type: ['string', 'null'], format: 'date-time' },
      last_error: { type: ['string', 'null'] },
      created_at: { type: 'string', format: 'date-time' },
      updated_at: { type: 'string', format: 'date-time' },
    },
  };
  const connection = {
    type: 'object',
    properties: {
      id: { type: 'string' },
      connection_name: { type: 'string' },
      connector: { type: 'string' },
      auth_kind: { type: 'string' },
      client_id: { type: ['string', 'null'] },
      has_client_secret: { type: 'boolean' },
      scopes: { type: 'array', items: { type: 'string' } },
      redirect_uri: { type: ['string', 'null'] },
      api_base_url: { type: ['string', 'null'] },
      api_hosts: { type: 'object', additionalProperties: { type: 'string' } },
      oauth: { type: 'object', properties: { authorize_url: { type: 'string' }, token_url: { type: 'string' } } },
      account_count: { type: 'integer' },
      created_at: { type: 'string', format: 'date-time' },
      updated_at: { type: 'string', format: 'date-time' },
    },
  };
  const connectionInput = {
    type: 'object',
    properties: {
      connection_name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$' },
      connector: { enum: connectors.map((c) => c.name) },
      auth_kind: { type: 'string', description: 'For connectors with several auth kinds' },
      client_id: { type: 'string' },
      client_secret: { type: 'string', writeOnly: true },
      scopes: { type: 'array', items: { type: 'string' } },
      api_base_url: {
        type: 'string',
        description: "Overrides the connector's API base URL (self-hosted providers, tests)",
      },
      api_hosts: { type: 'object', additionalProperties: { type: 'string' } },
      oauth: {
        type: 'object',
        properties: { authorize_url: { type: 'string' }, token_url: { type: 'string' }, resource: { type: 'string' } },
      },
    },
  };

  return {
    openapi: '3.1.0',
    info: {
      title: 'Agent connector service',
      version: '1',
      description:
        'Runs OAuth flows, stores and refreshes provider credentials, and lets a client proxy raw requests or execute named tools. Generated from specs/*.yaml.',
    },
    servers: [{ url: 'http://localhost:8080' }],
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        clientBasic: { type: 'http', scheme: 'basic' },
      },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message'],
              properties: {
                code: { type: 'string', examples: ['invalid_input', 'provider_error', 'account_expired', 'not_found'] },
                message: { type: 'string' },
                details: {
                  type: 'array',
                  items: { type: 'object', properties: { field: { type: 'string' }, message: { type: 'string' } } },
                },
                provider_status: {
                  type: 'integer',
                  description: 'For provider errors: the status the provider answered',
                },
                provider_body: { description: 'For provider errors: the body the provider answered' },
              },
            },
            execution_id: { type: 'string' },
            request_id: { type: 'string' },
          },
        },
        ConnectedAccount: account,
        Connection: connection,
        ConnectionInput: connectionInput,
        ExecuteToolRequest: {
          oneOf: executeVariants,
          discriminator: { propertyName: 'tool_name', mapping },
        },
        ExecuteToolResponse: {
          type: 'object',
          properties: {
            data: { description: "The provider's payload; for a dry run, {requests: [{method, url, headers, body}]}" },
            execution_id: { type: 'string' },
          },
        },
        ...toolSchemas,
      },
    },
    paths: {
      '/health': {
        get: { summary: 'Liveness and readiness', responses: { '200': ok('Healthy', { type: 'object' }) } },
      },
      '/oauth/token': {
        post: {
          summary: 'Exchange an API credential for a short-lived bearer token (client_credentials)',
          security: [{ clientBasic: [] }, {}],
          requestBody: {
            content: {
              'application/x-www-form-urlencoded': {
                schema: {
                  type: 'object',
                  properties: {
                    grant_type: { const: 'client_credentials' },
                    client_id: { type: 'string' },
                    client_secret: { type: 'string' },
                  },
                },
              },
              'application/json': {
                schema: {
                  type: 'object',
                  properties: {
                    grant_type: { const: 'client_credentials' },
                    client_id: { type: 'string' },
                    client_secret: { type: 'string' },
                  },
                },
              },
            },
          },
          responses: {
            '200': ok('Token', {
              type: 'object',
              properties: {
                access_token: { type: 'string' },
                token_type: { const: 'Bearer' },
                expires_in: { type: 'integer' },
              },
            }),
            '400': { description: 'unsupported_grant_type or invalid_request' },
            '401': { description: 'invalid_client' },
            '429': { description: 'Too many failed attempts; retry after Retry-After seconds' },
          },
        },
      },
      '/v1/connectors': {
        get: {
          summary: 'List connectors',
          security: auth,
          responses: { '200': ok('Connectors', { type: 'object' }), '401': errors['401'] },
        },
      },
      '/v1/tools': {
        get: {
          summary: 'List tools with their input JSON Schemas',
          security: auth,
          parameters: [{ name: 'connector', in: 'query', schema: { type: 'string' } }],
          responses: { '200': ok('Tools', { type: 'object' }), '401': errors['401'] },
        },
      },
      '/v1/tools/{tool_name}': {
        get: {
          summary: 'One tool with its input JSON Schema',
          security: auth,
          parameters: [{ name: 'tool_name', in: 'path', required: true, schema: { type: 'string' } }],
          responses: { '200': ok('Tool', { type: 'object' }), ...errors },
        },
      },
      '/v1/tools/execute': {
        post: {
          summary: 'Execute a named tool for a connected account',
          security: auth,
          requestBody: { required: true, content: json(ref('ExecuteToolRequest')) },
          responses: {
            '200': ok('The provider payload in `data`', ref('ExecuteToolResponse')),
            ...errors,
            '409': {
              description: 'Account not ACTIVE (PENDING_AUTH, EXPIRED: send a new authorization link)',
              content: json(ref('Error')),
            },
            '502': { description: 'Provider unreachable or answered malformed data', content: json(ref('Error')) },
          },
        },
      },
      '/v1/connections': {
        get: {
          summary: 'List connections',
          security: auth,
          responses: { '200': ok('Connections', { type: 'object' }), '401': errors['401'] },
        },
        post: {
          summary: 'Create a connection',
          security: auth,
          requestBody: { required: true, content: json(ref('ConnectionInput')) },
          responses: { '201': ok('Created', ref('Connection')), ...errors, '409': { description: 'Name taken' } },
        },
      },
      '/v1/connections/{connection_name}': {
        parameters: [nameParam],
        get: {
          summary: 'Get a connection',
          security: auth,
          responses: { '200': ok('Connection', ref('Connection')), ...errors },
        },
        patch: {
          summary: 'Update a connection (only the fields given change)',
          security: auth,
          requestBody: { required: true, content: json(ref('ConnectionInput')) },
          responses: { '200': ok('Updated', ref('Connection')), ...errors },
        },
        delete: {
          summary: 'Delete a connection and its accounts',
          security: auth,
          responses: { '200': ok('Deleted', { type: 'object' }), ...errors },
        },
      },
      '/v1/connected-accounts': {
        get: {
          summary: 'List connected accounts',
          security: auth,
          parameters: ['connection_name', 'identifier', 'status', 'cursor']
            .map((n) => ({ name: n, in: 'query', schema: { type: 'string' } }))
            .concat([{ name: 'limit', in: 'query', schema: { type: 'integer' } as never }]),
          responses: { '200': ok('Accounts', { type: 'object' }), ...errors },
        },
        post: {
          summary: 'Get or create a connected account by (connection_name, identifier)',
          security: auth,
          requestBody: {
            required: true,
            content: json({
              type: 'object',
              required: ['connection_name', 'identifier'],
              properties: { connection_name: { type: 'string' }, identifier: { type: 'string' } },
            }),
          },
          responses: { '200': ok('Existing', { type: 'object' }), '201': ok('Created', { type: 'object' }), ...errors },
        },
        put: {
          summary: 'Upsert a connected account with credentials (key-type connectors)',
          security: auth,
          requestBody: {
            required: true,
            content: json({
              type: 'object',
              required: ['connection_name', 'identifier', 'credentials'],
              properties: {
                connection_name: { type: 'string' },
                identifier: { type: 'string' },
                credentials: { type: 'object' },
              },
            }),
          },
          responses: { '200': ok('Saved', { type: 'object' }), ...errors },
        },
      },
      '/v1/connected-accounts/{id}': {
        parameters: [idParam],
        get: {
          summary: 'Get a connected account',
          security: auth,
          responses: { '200': ok('Account', { type: 'object' }), ...errors },
        },
        delete: {
          summary: 'Delete a connected account',
          security: auth,
          responses: { '200': ok('Deleted', { type: 'object' }), ...errors },
        },
      },
      '/v1/connected-accounts/authorization-link': {
        post: {
          summary: 'Create an authorization link for (connection_name, identifier)',
          security: auth,
          requestBody: {
            required: true,
            content: json({
              type: 'object',
              required: ['connection_name', 'identifier'],
              properties: {
                connection_name: { type: 'string' },
                identifier: { type: 'string' },
                redirect_url: {
                  type: 'string',
                  description: 'Where the user lands after authorizing; its origin must be allowed',
                },
              },
            }),
          },
          responses: {
            '200': ok('Link', {
              type: 'object',
              properties: { link: { type: 'string' }, expires_at: { type: 'string' } },
            }),
            ...errors,
          },
        },
      },
      '/sso/v1/oauth/{connection_id}/callback': {
        get: {
          summary: "The provider's redirect target; exchanges the code and activates the account",
          parameters: [{ name: 'connection_id', in: 'path', required: true, schema: { type: 'string' } }],
          responses: {
            '200': { description: 'Success page' },
            '302': { description: 'Redirect to the client-given URL' },
            '400': { description: 'Forged, expired or replayed state' },
          },
        },
      },
      '/proxy/{path}': {
        parameters: [
          {
            name: 'path',
            in: 'path',
            required: true,
            schema: { type: 'string' },
            description: "Upstream path relative to the provider's API root",
          },
          { name: 'connection_name', in: 'header', required: true, schema: { type: 'string' } },
          {
            name: 'identifier',
            in: 'header',
            required: false,
            schema: { type: 'string' },
            description: 'The identifier, when it is printable ASCII; else x-identifier-encoded',
          },
          {
            name: 'x-identifier-encoded',
            in: 'header',
            required: false,
            schema: { type: 'string' },
            description: 'The identifier as percent-encoded UTF-8 (any text)',
          },
        ],
        get: {
          summary: 'Proxy a request with credentials injected',
          security: auth,
          responses: { default: { description: "The provider's response, streamed" } },
        },
        post: {
          summary: 'Proxy a request with credentials injected',
          security: auth,
          responses: { default: { description: "The provider's response, streamed" } },
        },
        put: {
          summary: 'Proxy a request with credentials injected',
          security: auth,
          responses: { default: { description: "The provider's response, streamed" } },
        },
        patch: {
          summary: 'Proxy a request with credentials injected',
          security: auth,
          responses: { default: { description: "The provider's response, streamed" } },
        },
        delete: {
          summary: 'Proxy a request with credentials injected',
          security: auth,
          responses: { default: { description: "The provider's response, streamed" } },
        },
      },
    },
  };
}
