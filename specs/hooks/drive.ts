/**
 * The file-storage connector's own transforms (Google Drive API v3), used by specs/drive.yaml's request templates as
 * `{param|name}`: the escaping of its query language and its `fields` selection syntax, which no other provider has.
 */
import type { ConnectorTransforms } from '../../core/transforms.ts';

export const transforms = {
  /** Escapes a value for a single-quoted string in a Drive query (`name = '{v|drive_q}'`): `'` and `\` escaped. */
  drive_q: (v: unknown): string => String(v).replace(/\\/g, '\\\\').replace(/'/g, "\\'"),
  /** A bare list of file fields becomes a file-list selection; a full selection passes unchanged. */
  drive_list_fields: (v: unknown): string => {
    const s = String(v).trim();
    if (s === '*' || s.includes('files(') || s.includes('nextPageToken')) return s;
    return `nextPageToken,incompleteSearch,files(${s})`;
  },
} satisfies ConnectorTransforms;
