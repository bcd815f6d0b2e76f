/** The sort-list transform (core) and the file-storage connector's own transforms (its hook file). */
import { describe, expect, it } from 'vitest';
import { transforms as core } from '../../core/transforms.ts';
import { transforms as drive } from '../../specs/hooks/drive.ts';

const T = { ...core, ...drive };

describe('order_by', () => {
  it('keeps the documented form: keys, each optionally followed by " desc"', () => {
    expect(T.order_by('modifiedTime desc')).toBe('modifiedTime desc');
    expect(T.order_by('folder,modifiedTime desc,name')).toBe('folder,modifiedTime desc,name');
  });

  it('drops an explicit " asc" (ascending is the default) and normalises spaces', () => {
    expect(T.order_by('name asc')).toBe('name');
    expect(T.order_by(' folder ,  name   asc, createdTime  desc ')).toBe('folder,name,createdTime desc');
    expect(T.order_by('name,,recency')).toBe('name,recency');
  });

  it('leaves a key that merely ends in "asc" alone', () => {
    expect(T.order_by('nameasc')).toBe('nameasc');
  });
});

describe('drive_q', () => {
  it('escapes backslashes first, then single quotes', () => {
    expect(T.drive_q("O'Brien")).toBe("O\\'Brien");
    expect(T.drive_q('a\\b')).toBe('a\\\\b');
    expect(T.drive_q("\\'")).toBe("\\\\\\'");
  });
});

describe('drive_list_fields', () => {
  it('wraps a bare file-field list and leaves full selections alone', () => {
    expect(T.drive_list_fields('id,name')).toBe('nextPageToken,incompleteSearch,files(id,name)');
    expect(T.drive_list_fields('nextPageToken,files(id)')).toBe('nextPageToken,files(id)');
    expect(T.drive_list_fields('*')).toBe('*');
  });
});
