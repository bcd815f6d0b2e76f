import { describe, expect, it } from 'vitest';
import { transforms as T } from '../../core/transforms.ts';

describe('list', () => {
  it('reads a JSON array string, comma- or semicolon-separated text, and an array', () => {
    expect(T.list('["a@x.com", "b@x.com"]')).toEqual(['a@x.com', 'b@x.com']);
    expect(T.list('a@x.com, b@x.com;c@x.com')).toEqual(['a@x.com', 'b@x.com', 'c@x.com']);
    expect(T.list(['a@x.com'])).toEqual(['a@x.com']);
    expect(T.list('[]')).toEqual([]);
  });

  it('reads text that only looks like a JSON array as a list instead of throwing', () => {
    expect(T.list('["a@x.com", "b@x.com"')).toEqual(['a@x.com', 'b@x.com']);
    expect(T.list('[a@x.com, b@x.com]')).toEqual(['a@x.com', 'b@x.com']);
  });
});

describe('day_of_month and month_of_year', () => {
  it('take the calendar day and month as written, from a date or a date-time with an offset', () => {
    expect(T.day_of_month('2026-09-07')).toBe(7);
    expect(T.month_of_year('2026-09-07')).toBe(9);
    expect(T.day_of_month('2026-12-31T23:30:00-05:00')).toBe(31);
    expect(T.month_of_year('2026-12-31T23:30:00-05:00')).toBe(12);
  });
});
