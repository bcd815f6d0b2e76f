/**
 * Tool descriptions as an agent reads them (issue 40, item 5): every tool tells when to use it, what it changes and
 * what it costs, within what function-calling vendors take, in every format agents get; tool search ranks on the
 * description alone (its recall floors are in tool-search.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { agentDescription } from '../../core/agent-description.ts';
import { tools } from '../../generated/registry.ts';
import { MAX_AGENT_DESCRIPTION } from '../../generator/guidance.ts';
import { anthropicTool, geminiFunctionDeclaration, mcpTool, openaiTool } from '../../runtime/tools/llm-formats.ts';
import { generatorError } from '../helpers/specs.ts';

const all = [...tools.values()];

describe('agent guidance in tool descriptions', () => {
  it('every tool says what it changes and what it costs, within the vendors’ description limit', () => {
    expect(all.length).toBeGreaterThan(0);
    for (const t of all) {
      const text = agentDescription(t);
      expect(text.startsWith(t.description.trim()), t.name).toBe(true);
      expect(text, t.name).toMatch(/\n\n(When to use: .+ )?Changes: .+\. Cost: .+\.$/s);
      expect(text.length, t.name).toBeLessThanOrEqual(MAX_AGENT_DESCRIPTION);
    }
  });

  it('derives the change sentence from the annotations unless the YAML says it', () => {
    for (const t of all) {
      const changes = /Changes: (.+?)\. Cost:/s.exec(t.guidance!)![1]!;
      if (t.annotations!.readOnlyHint) expect(changes, t.name).toMatch(/^nothing/);
      else expect(changes, t.name).not.toMatch(/^nothing \(read-only\)/);
    }
    // A destructive tool warns that it cannot be undone; a non-idempotent writer that a repeat acts again.
    const del = all.find((t) => t.name.endsWith('_delete') || t.name.includes('_delete_'))!;
    expect(del.guidance).toMatch(/cannot be undone/);
    const writers = all.filter((t) => !t.annotations!.readOnlyHint && !t.annotations!.idempotentHint);
    expect(writers.length).toBeGreaterThan(0);
    for (const t of writers) expect(t.guidance, t.name).toMatch(/again|another/);
  });

  it('list tools that continue say so in their cost', () => {
    const paged = all.filter((t) =>
      Object.hasOwn((t.inputSchema.properties ?? {}) as Record<string, unknown>, 'next_cursor'),
    );
    expect(paged.length).toBeGreaterThan(0);
    for (const t of paged) {
      const cost = /Cost: (.+)$/s.exec(t.guidance!)![1]!;
      // A tool's own `cost` replaces the sentence; otherwise the paging note is there.
      if (cost.includes('request') && !/^(no|one request to|requests to)/.test(cost))
        expect(cost, t.name).toMatch(/per page \(next_cursor reads the next\)/);
    }
  });

  it('is what MCP, OpenAI, Anthropic and Gemini get', () => {
    for (const t of all) {
      const text = agentDescription(t);
      expect(mcpTool(t).description).toBe(text);
      expect(openaiTool(t, { strict: false }).function.description).toBe(text);
      expect(anthropicTool(t).description).toBe(text);
      expect(geminiFunctionDeclaration(t).description).toBe(text);
    }
  });

  it('refuses a description that with its guidance outgrows the vendors’ limit, naming the field', async () => {
    const yaml = `name: demo
title: Demo
description: Demo connector
provider: Demo API
cost: 'Demo counts calls'
auth:
  - kind: api_key
    fields: [{ name: api_key, title: Key, secret: true }]
    apply: { headers: { X-API-Key: "{api_key}" } }
api:
  base_url: https://api.demo.example
tools:
  - name: demo_get
    title: Get an item
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }
    output: { shape: {} }
    description: '${'An item. '.repeat(110)}'
    use_when: you have its ID.
    input:
      id: { type: string, required: true }
    request: { method: GET, path: '/items/{id}' }
    examples: [{ input: { id: "1" }, requests: [{ method: GET, url: "https://api.demo.example/items/1" }] }]
`;
    const msg = await generatorError(yaml, 'demo');
    expect(msg).toMatch(/tool demo_get, field description: with the agent guidance .* at most 1024/);
  });
});
