/** Messages a client gets for a bad tool input: grammatical, and naming the field. */
import { describe, expect, it } from 'vitest';
import { tools } from '../../generated/registry.ts';
import { validateToolInput } from '../../runtime/tools/validation.ts';
import { mustBeType } from '../../core/errors.ts';

describe('tool input messages', () => {
  it('say "an array", "an object", "a string"', () => {
    expect(validateToolInput(tools.get('callintel_calls_get')!, { call_ids: 'x' })).toEqual([
      { field: 'call_ids', message: 'must be an array' },
    ]);
    expect(mustBeType('object')).toBe('must be an object');
    expect(mustBeType('integer')).toBe('must be an integer');
    expect(mustBeType('string')).toBe('must be a string');
    expect(mustBeType('string,number,boolean')).toBe('must be a string, a number or a boolean');
  });

  it('refuse a comma-separated value that holds only separators, naming the field', () => {
    const tool = tools.get('crm_company_get')!;
    expect(validateToolInput(tool, { company_id: '1', properties: ' , ,' })).toEqual([
      { field: 'properties', message: 'must list at least one value (it holds only commas and spaces)' },
    ]);
    expect(validateToolInput(tool, { company_id: '1', properties: '' })).toEqual([
      { field: 'properties', message: 'must list at least one comma-separated value' },
    ]);
    expect(validateToolInput(tool, { company_id: '1', properties: 'name, ,domain' })).toEqual([]);
  });
});
