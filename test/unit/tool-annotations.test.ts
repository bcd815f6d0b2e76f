/**
 * Every tool's human title and MCP annotations, checked against what the tool really sends: the requests its
 * generated definition plans (the builder's, through the hook's plan when it has one) for each of its examples,
 * and the requests those examples list.
 */
import { describe, expect, it } from 'vitest';
import { connectors, tools } from '../../generated/registry.ts';
import type { ToolDefinition } from '../../core/tool-types.ts';

const base = (host?: string) => `https://${host ?? 'api'}.example.test`;

/** The HTTP methods a tool sends, over all its examples (an MCP tool call counts as its own "MCP" method). */
function methodsOf(tool: ToolDefinition): Set<string> {
  const methods = new Set<string>();
  for (const example of tool.examples) {
    const input = structuredClone(example.input);
    expect(tool.validate(input), `${tool.name}: example input validates`).toBe(true);
    const planned = tool.build(input, { base });
    const shown = tool.hook?.plan ? tool.hook.plan(input, planned, base) : planned;
    for (const r of [...planned, ...shown]) methods.add(r.mcp ? 'MCP' : r.method.toUpperCase());
    for (const r of example.requests) methods.add(r.method.toUpperCase());
  }
  return methods;
}

const all = [...tools.values()];

describe('tool titles and annotations', () => {
  it('covers all the tools of every connector', () => {
    expect(all.map((t) => t.name).sort()).toEqual([...connectors.values()].flatMap((c) => c.toolNames).sort());
  });

  it.each(all.map((t) => [t.name, t] as const))('%s has a human title and all four hints', (name, tool) => {
    expect(tool.title.trim().length).toBeGreaterThan(0);
    expect(tool.title).not.toBe(name);
    expect(tool.title.toLowerCase().replace(/\s+/g, '_')).not.toBe(name);
    expect(/\s/.test(tool.title), 'a title is words, not an identifier').toBe(true);
    const a = tool.annotations!;
    for (const hint of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const) {
      expect(typeof a[hint], `${name}.${hint}`).toBe('boolean');
    }
    expect(Object.keys(a).sort()).toEqual(['destructiveHint', 'idempotentHint', 'openWorldHint', 'readOnlyHint']);
    expect(tool.readOnly, 'readOnly comes from readOnlyHint').toBe(a.readOnlyHint);
    if (a.readOnlyHint) expect(a.destructiveHint, 'a read-only tool destroys nothing').toBe(false);
  });

  it('marks every tool that sends only GET requests read-only, and every tool that sends a DELETE destructive', () => {
    const getOnly: string[] = [];
    const deleting: string[] = [];
    for (const tool of all) {
      const methods = methodsOf(tool);
      if (methods.size === 0) {
        // Only a hook may send nothing (a tool the provider no longer offers, refused with an explanation).
        expect(tool.hook, `${tool.name} plans no request`).toBeDefined();
        continue;
      }
      if ([...methods].every((m) => m === 'GET')) {
        getOnly.push(tool.name);
        expect(tool.annotations!.readOnlyHint, `${tool.name} sends only GET`).toBe(true);
      }
      if (methods.has('DELETE')) {
        deleting.push(tool.name);
        expect(tool.annotations!.destructiveHint, `${tool.name} sends a DELETE`).toBe(true);
        expect(tool.annotations!.readOnlyHint, `${tool.name} sends a DELETE`).toBe(false);
      }
    }
    // The checks above ran on real sets: some tools only read, and some delete.
    expect(getOnly.length).toBeGreaterThan(0);
    expect(deleting.length).toBeGreaterThan(0);
  });

  it('keeps keywords to distinct words that are not already the tool name', () => {
    for (const tool of all) {
      const keywords = tool.keywords ?? [];
      expect(new Set(keywords).size, tool.name).toBe(keywords.length);
      for (const k of keywords) expect(k.trim(), tool.name).toBe(k);
    }
    expect(all.some((t) => t.keywords?.length)).toBe(true);
  });
});
