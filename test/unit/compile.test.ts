/** Request templates compile to TypeScript expressions that give the values the templates describe. */
import { describe, expect, it } from 'vitest';
import type { ParamSpec } from '../../core/spec-model.ts';
import { evaluateTemplate as evaluate } from './evaluate-template.ts';

describe('$each', () => {
  it('maps each element to an object template (not read as a function body)', () => {
    const params: Record<string, ParamSpec> = { to: { type: 'array', items: { type: 'string' } } };
    const template = { $in: 'to', $each: { emailAddress: { address: { $item: true } }, type: 'required' } };
    expect(evaluate(template, params, { to: ['a@x.com', 'b@x.com'] })).toEqual([
      { emailAddress: { address: 'a@x.com' }, type: 'required' },
      { emailAddress: { address: 'b@x.com' }, type: 'required' },
    ]);
    expect(evaluate({ list: template }, params, {})).toBeUndefined();
  });

  it('concatenates several piped and mapped lists, leaving out the absent ones', () => {
    const params: Record<string, ParamSpec> = { req: { type: 'string' }, opt: { type: 'string' } };
    const template = {
      $concat: [
        { $in: 'req', $pipe: ['list'], $each: { address: { $item: true }, type: 'required' } },
        { $in: 'opt', $pipe: ['list'], $each: { address: { $item: true }, type: 'optional' } },
      ],
    };
    expect(evaluate(template, params, { req: '["a@x.com"]', opt: 'b@x.com, c@x.com' })).toEqual([
      { address: 'a@x.com', type: 'required' },
      { address: 'b@x.com', type: 'optional' },
      { address: 'c@x.com', type: 'optional' },
    ]);
    expect(evaluate(template, params, { opt: 'b@x.com' })).toEqual([{ address: 'b@x.com', type: 'optional' }]);
    expect(evaluate({ attendees: template }, params, {})).toBeUndefined();
  });
});

describe('bare strings: one meaning everywhere', () => {
  const params: Record<string, ParamSpec> = {
    count: { type: 'number' },
    name: { type: 'string' },
    tags: { type: 'string' },
    ids: { type: 'array', items: { type: 'string' } },
  };

  it('are literal text', () => {
    expect(evaluate('json', params, {})).toBe('json');
    expect(evaluate({ format: 'json', nested: ['a', 'b'] }, params, {})).toEqual({
      format: 'json',
      nested: ['a', 'b'],
    });
  });

  it('one placeholder alone is the value itself, its type kept, absent when not given', () => {
    expect(evaluate('{count}', params, { count: 5 })).toBe(5);
    expect(evaluate('{ids}', params, { ids: ['a'] })).toEqual(['a']);
    expect(evaluate({ n: '{count}', kind: 'x' }, params, { count: 0 })).toEqual({ n: 0, kind: 'x' });
    expect(evaluate({ n: '{count}', kind: 'x' }, params, {})).toBeUndefined();
    expect(evaluate('{tags|csv}', params, { tags: 'a, b' })).toEqual(['a', 'b']);
    expect(evaluate('{tags|csv}', params, {})).toBeUndefined();
  });

  it('placeholders inside longer text are text; the text is absent when one of them is absent', () => {
    expect(evaluate('Bearer {name}', params, { name: 'x' })).toBe('Bearer x');
    expect(evaluate('n={count}', params, { count: 5 })).toBe('n=5');
    expect(evaluate('{name} and {count}', params, { name: 'a' })).toBeUndefined();
    expect(evaluate('{name|upper}!', params, { name: 'a' })).toBe('A!');
  });

  it('{$item} and {$item.field} name the element of $each, alone or inside text', () => {
    const template = { $in: 'ids', $each: { id: '{$item}', label: 'item {$item}' } };
    expect(evaluate(template, params, { ids: ['a', 'b'] })).toEqual([
      { id: 'a', label: 'item a' },
      { id: 'b', label: 'item b' },
    ]);
    const objects = { $in: 'ids', $each: '{$item.user.id}' };
    expect(evaluate(objects, params, { ids: [{ user: { id: 7 } }, {}] })).toEqual([7]);
  });

  it('the long forms mean the same as the short ones', () => {
    const input = { count: 3, name: 'n' };
    expect(evaluate({ $in: 'count' }, params, input)).toBe(evaluate('{count}', params, input));
    expect(evaluate({ $template: 'a {name}' }, params, input)).toBe(evaluate('a {name}', params, input));
    expect(evaluate({ $in: 'tags', $pipe: ['csv'] }, params, { tags: 'x,y' })).toEqual(
      evaluate('{tags|csv}', params, { tags: 'x,y' }),
    );
  });

  it('refuses a bare parameter name (the old way to refer to one in query), saying how to write it now', () => {
    expect(() => evaluate({ q: 'name' }, params, {})).toThrow(
      `q: "name" is text, not the input parameter name: a bare string is always literal text. Write '{name}' (quoted) for the parameter's value, or {$const: name} if you mean the text`,
    );
    expect(evaluate({ q: { $const: 'name' } }, params, {})).toEqual({ q: 'name' });
  });

  it('refuses an unquoted placeholder, which YAML reads as a mapping', () => {
    expect(() => evaluate({ q: { name: null } }, params, {})).toThrow(
      `q: {name} without quotes is a YAML mapping, not a placeholder: write '{name}' (quoted)`,
    );
  });

  it('refuses a placeholder naming no parameter, pointing to $const for literal braces', () => {
    expect(() => evaluate('{"a": 1}', params, {})).toThrow(/not an input parameter.*\{\$const: '\.\.\.'\}/);
    expect(evaluate({ $const: '{"a": 1}' }, params, {})).toBe('{"a": 1}');
  });
});
