/**
 * The answer an agent gets (runtime/tools/answer.ts): the concise shape with HTML as text, the answer budget cut at
 * an item boundary with a next_cursor that goes on where the answer stopped, and cursors read back into the input.
 */
import { describe, expect, it } from 'vitest';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { tools } from '../../generated/registry.ts';
import type { ToolDefinition } from '../../core/tool-types.ts';
import {
  asObject,
  conciseAnswer,
  continuedInput,
  shapeAnswer,
  splitAnswerParams,
  type AnswerContext,
} from '../../runtime/tools/answer.ts';
import { validateToolInput } from '../../runtime/tools/validation.ts';
import { missingFields } from '../helpers/answer-check.ts';

const tool = (name: string): ToolDefinition => tools.get(name)!;
const tokens = (v: unknown) => countTokens(JSON.stringify(v), { disallowedSpecial: new Set() });

function context(t: ToolDefinition, input: Record<string, unknown>, budget = 8000, within = 0): AnswerContext {
  return {
    tool: t,
    input,
    request: { format: 'concise', within },
    budget,
    accepts: (next) => validateToolInput(t, structuredClone(next)).length === 0,
  };
}

const NEWSLETTER = `<html><head><style>.x{color:red} td{padding:0}</style></head><body>
<table><tr><td><img src="https://track.example/p.gif?u=1" width="1" height="1"><h1>Weekly news</h1>
<p>Read <a href="https://news.example/a?utm=1">the full story</a> &amp; more.</p>
<ul><li>First</li><li>Second</li></ul></td></tr></table></body></html>`;

function graphMessage(i: number, body = NEWSLETTER) {
  return {
    '@odata.etag': `W/"CQAAABYAAAA${i}"`,
    id: `AAMkAGI2TH${i}`,
    createdDateTime: '2026-09-02T08:15:00Z',
    receivedDateTime: '2026-09-02T08:15:00Z',
    subject: `Newsletter ${i}`,
    bodyPreview: 'Weekly news Read the full story & more.',
    importance: 'normal',
    isRead: false,
    hasAttachments: false,
    internetMessageId: `<${i}@news.example>`,
    parentFolderId: 'AQMkADAwATM0MDAAMS1',
    conversationId: `AAQkAGI2${i}`,
    body: { contentType: 'html', content: body },
    from: { emailAddress: { name: 'News', address: 'news@news.example' } },
    toRecipients: [{ emailAddress: { name: 'Megan', address: 'megan@contoso.example' } }],
    ccRecipients: [],
    flag: { flagStatus: 'notFlagged' },
    webLink: `https://outlook.office365.com/owa/?ItemID=${i}`,
  };
}

describe('the concise answer', () => {
  it('keeps the fields the shape names, in its order, and turns HTML into text with its links', async () => {
    const t = tool('mail_get_message');
    const concise = await conciseAnswer(t, graphMessage(1));
    expect(Object.keys(concise)).toEqual([
      'id',
      'subject',
      'from',
      'toRecipients',
      'ccRecipients',
      'receivedDateTime',
      'body',
      'hasAttachments',
      'importance',
      'isRead',
      'flag',
      'conversationId',
      'webLink',
    ]);
    const text = (concise.body as { content: string }).content;
    expect(text).toContain('Weekly news');
    expect(text).toContain('the full story [https://news.example/a?utm=1]');
    expect(text).toContain('& more.');
    expect(text).not.toMatch(/<|track\.example|color:red/);
    expect(concise.receivedDateTime).toBe('2026-09-02T08:15:00Z');
    expect(missingFields(t.output.shape, graphMessage(1), concise)).toEqual([]);
  });

  it('leaves text that only contains "<" as it is', async () => {
    const concise = await conciseAnswer(tool('mail_get_message'), graphMessage(2, 'if a < b then c'));
    expect((concise.body as { content: string }).content).toBe('if a < b then c');
  });

  it('keeps every field the caller chose with the selection parameter', async () => {
    const t = tool('mail_list_messages');
    const page = { value: [{ ...graphMessage(3), uniqueBody: { content: 'x' } }] };
    const chosen = await conciseAnswer(t, page, { $select: 'uniqueBody,subject' });
    expect((chosen.value as Array<Record<string, unknown>>)[0]).toHaveProperty('uniqueBody');
    const plain = await conciseAnswer(t, page, {});
    expect((plain.value as Array<Record<string, unknown>>)[0]).not.toHaveProperty('uniqueBody');
  });

  it('joins a Google document into its text', async () => {
    const doc = {
      documentId: 'd1',
      title: 'Plan',
      revisionId: 'r1',
      body: {
        content: [
          { sectionBreak: {} },
          {
            paragraph: {
              elements: [{ textRun: { content: 'Hello ', textStyle: {} } }, { textRun: { content: 'world\n' } }],
            },
          },
          {
            table: {
              tableRows: [
                { tableCells: [{ content: [{ paragraph: { elements: [{ textRun: { content: 'cell\n' } }] } }] }] },
              ],
            },
          },
        ],
      },
    };
    expect(await conciseAnswer(tool('docs_read_document'), doc)).toEqual({
      documentId: 'd1',
      title: 'Plan',
      revisionId: 'r1',
      text: 'Hello world\ncell\n',
    });
  });

  it('is always an object: a bare list as items, no content as {}', () => {
    expect(asObject([1, 2])).toEqual({ items: [1, 2] });
    expect(asObject(null)).toEqual({});
    expect(asObject('text')).toEqual({ text: 'text' });
  });
});

describe('the answer budget', () => {
  const t = tool('mail_list_messages');
  const page = {
    '@odata.nextLink': 'https://graph/next',
    value: Array.from({ length: 40 }, (_, i) => graphMessage(i)),
  };

  it('cuts a list at an item boundary, with a note and a cursor that goes on from there', async () => {
    const input = { $top: 40 };
    const shaped = await shapeAnswer(context(t, input, 1000), page);
    const data = shaped.data as { value: unknown[]; truncated: Record<string, unknown>; next_cursor: string };
    expect(tokens(data)).toBeLessThanOrEqual(1000);
    const kept = data.value.length;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(40);
    expect(data.truncated).toMatchObject({ budget_tokens: 1000, items_returned: kept, items_omitted: 40 - kept });
    // Graph pages by offset: the cursor asks the provider for the next item.
    const next = continuedInput(t, { next_cursor: data.next_cursor });
    expect(next.errors).toEqual([]);
    expect(next.input).toMatchObject({ $top: 40, $skip: kept });
    expect(next.within).toBe(0);
  });

  it('goes on within the same page for a provider that pages by token', async () => {
    const drive = tool('drive_search_files');
    const files = {
      nextPageToken: 'tok-2',
      files: Array.from({ length: 50 }, (_, i) => ({
        id: `f${i}`,
        name: `Report ${i} `.repeat(20),
        mimeType: 'text/plain',
      })),
    };
    const first = await shapeAnswer(context(drive, { query: "name contains 'r'" }, 1000), files);
    const data = first.data as { files: unknown[]; next_cursor: string };
    const kept = data.files.length;
    const next = continuedInput(drive, { next_cursor: data.next_cursor, query: "name contains 'r'" });
    expect(next).toMatchObject({ within: kept, errors: [] });
    expect((next.input as Record<string, unknown>).page_token).toBeUndefined();
    const second = await shapeAnswer(context(drive, splitAnswerParams(next.input as never).input, 1000, kept), files);
    expect((second.data as { files: Array<{ id: string }> }).files[0]!.id).toBe(`f${kept}`);
  });

  it('offers the provider’s next page when the whole page fits', async () => {
    const small = { '@odata.nextLink': 'https://graph/next', value: [graphMessage(1), graphMessage(2)] };
    const shaped = await shapeAnswer(context(t, { $skip: 10, $top: 2 }), small);
    expect((shaped.data as Record<string, unknown>).truncated).toBeUndefined();
    expect(continuedInput(t, { next_cursor: shaped.nextCursor }).input).toMatchObject({ $skip: 12, $top: 2 });
  });

  it('returns a detailed answer that fits unchanged, without a cursor', async () => {
    const small = { '@odata.nextLink': 'https://graph/next', value: [graphMessage(1)] };
    const shaped = await shapeAnswer({ ...context(t, {}), request: { format: 'detailed', within: 0 } }, small);
    expect(shaped.data).toBe(small);
  });

  it('shortens the longest text of an answer without a list, naming it', async () => {
    const m = tool('mail_get_message');
    const huge = graphMessage(1, `<p>${'A long paragraph of text. '.repeat(20000)}</p>`);
    const shaped = await shapeAnswer(context(m, {}, 2000), huge);
    const data = shaped.data as { body: { content: string }; truncated: { fields_cut: string[] } };
    expect(tokens(data)).toBeLessThanOrEqual(2000);
    expect(data.body.content).toMatch(/…\[cut\]$/);
    expect(data.truncated.fields_cut[0]).toMatch(/^body\.content: \d+ of \d+ characters left out$/);
    expect(shaped.nextCursor).toBeUndefined();
  });

  it('offers no cursor for a tool that runs a job (calling it again would run it again)', async () => {
    const run = tool('scraper_call_actor');
    const items = Array.from({ length: 200 }, (_, i) => ({ url: `https://x.example/${i}`, text: 'word '.repeat(100) }));
    const shaped = await shapeAnswer(context(run, { actor: 'a/b', input: {} }, 1000), { runId: 'r', items });
    expect(tokens(shaped.data)).toBeLessThanOrEqual(1000);
    expect(shaped.nextCursor).toBeUndefined();
    expect((shaped.data as Record<string, unknown>).next_cursor).toBeUndefined();
  });
});

describe('next_cursor', () => {
  const t = tool('helpdesk_tickets_list');

  it('refuses a cursor of another tool, or made for another query', async () => {
    const shaped = await shapeAnswer(context(t, { per_page: 2, sort_by: 'created_at' }), {
      tickets: [{ id: 1 }, { id: 2 }],
      next_page: 'https://desk/api/v2/tickets?page=2',
    });
    const cursor = shaped.nextCursor!;
    expect(continuedInput(t, { next_cursor: cursor }).input).toMatchObject({ page: 2, per_page: 2 });
    expect(continuedInput(t, { next_cursor: cursor, per_page: 2, page: 1 }).errors).toEqual([]);
    expect(continuedInput(t, { next_cursor: cursor, sort_by: 'updated_at' }).errors).toEqual([
      {
        field: 'next_cursor',
        message:
          'continues another query: sort_by differs from the input it was made for (leave sort_by out, or start again without next_cursor)',
      },
    ]);
    expect(continuedInput(tool('helpdesk_users_list'), { next_cursor: cursor }).errors[0]!.message).toBe(
      'was given by helpdesk_tickets_list, not by helpdesk_users_list: call helpdesk_tickets_list with it',
    );
    expect(continuedInput(t, { next_cursor: 'not-a-cursor' }).errors[0]!.field).toBe('next_cursor');
  });

  it('does not offer a page the tool would refuse (the search cap of 1000 results)', async () => {
    const search = tool('helpdesk_search_tickets');
    const shaped = await shapeAnswer(context(search, { query: 'type:ticket', page: 10, per_page: 100 }), {
      results: [{ id: 1 }],
      next_page: 'https://desk/api/v2/search?page=11',
    });
    expect(shaped.nextCursor).toBeUndefined();
  });

  it('keeps secrets out of the cursor', async () => {
    const bulk = tool('prodata_get_profile_comments');
    const shaped = await shapeAnswer(context(bulk, { profile: 'https://www.linkedin.com/in/x', page: 1 }), {
      elements: [{ id: 'c1' }],
      pagination: { paginationToken: 'tok-2', totalPages: 3 },
    });
    expect(continuedInput(bulk, { next_cursor: shaped.nextCursor }).input).toMatchObject({
      page: 2,
      pagination_token: 'tok-2',
    });
  });
});
