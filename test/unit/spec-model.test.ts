/** core/spec-model.ts is generated from the meta-schema: the schema is the one source of the YAML model. */
import { readFileSync } from 'node:fs';
import * as prettier from 'prettier';
import { describe, expect, it } from 'vitest';
import { emitSpecModel, SPEC_MODEL_PATH } from '../../generator/emit-model.ts';

const schemaText = readFileSync('specs/connector.schema.json', 'utf8');

async function formatted(text: string): Promise<string> {
  const config = (await prettier.resolveConfig('package.json')) ?? {};
  return prettier.format(text, { ...config, parser: 'typescript' });
}

describe('the spec model', () => {
  it('is exactly what the meta-schema produces', async () => {
    expect(readFileSync(SPEC_MODEL_PATH, 'utf8')).toBe(await formatted(await emitSpecModel(schemaText)));
  });

  it('follows a change to the schema: a new field becomes a typed property', async () => {
    const schema = JSON.parse(schemaText);
    schema.definitions.tool.properties.deprecated = { type: 'boolean', description: 'Hidden from listings.' };
    const model = await formatted(await emitSpecModel(JSON.stringify(schema)));
    const toolSpec = /export interface ToolSpec \{\n[\s\S]*?\n\}\n/.exec(model)![0];
    expect(toolSpec).toContain('  /**\n   * Hidden from listings.\n   */\n  deprecated?: boolean;\n');
  });

  it('turns the if/then chain on auth.kind into a discriminated union', async () => {
    const model = await formatted(await emitSpecModel(schemaText));
    expect(model).toContain('export type AuthSpec = OAuth2AuthSpec | OAuth2McpAuthSpec | KeyAuthSpec;');
    expect(model).toMatch(/export interface OAuth2AuthSpec \{\n\s*kind: 'oauth2';/);
    expect(model).toMatch(/export interface OAuth2McpAuthSpec \{\n\s*kind: 'oauth2_mcp';/);
    expect(model).toMatch(/export interface KeyAuthSpec \{\n\s*kind: 'api_key' \| 'bearer' \| 'basic';/);
  });

  it('declares each definition once (a documented $ref does not copy its type)', async () => {
    const model = await emitSpecModel(schemaText);
    expect(model).not.toMatch(/export (interface|type) \w+\d\b/);
  });
});
