/** "Did you mean" for an unknown tool name: by the name's words as well as by its spelling (issue 13 point 8). */
import { describe, expect, it } from 'vitest';
import { tools } from '../../generated/registry.ts';
import { suggestNames, unknownToolError } from '../../runtime/tools/validation.ts';

const names = [...tools.keys()];

describe('suggestNames', () => {
  it('finds the tool made of the same words in another order or form first', () => {
    expect(suggestNames('mail_messages_list', names)[0]).toBe('mail_list_messages');
    expect(suggestNames('helpdesk_tickets_search', names)[0]).toBe('helpdesk_search_tickets');
    expect(suggestNames('send_mail_message', names)[0]).toBe('mail_send_message');
    expect(suggestNames('mailSendMessage', names)[0]).toBe('mail_send_message');
    expect(suggestNames('scraper_actor_call', names)[0]).toBe('scraper_call_actor');
    expect(suggestNames('crm_contact_list', names)[0]).toBe('crm_contacts_list');
  });

  it('still finds a misspelling, and offers at most three names sharing half their words', () => {
    expect(suggestNames('mail_list_mesages', names)[0]).toBe('mail_list_messages');
    expect(suggestNames('crm_deal_search', names)[0]).toBe('crm_deals_search');
    const some = suggestNames('helpdesk_list', names);
    expect(some.length).toBe(3);
    for (const n of some) expect(n).toMatch(/^helpdesk_\w+_list$/);
  });

  it('offers nothing when no name is close', () => {
    expect(suggestNames('zzz_qqq', names)).toEqual([]);
    expect(suggestNames('weather_forecast_get', names)).toEqual([]);
  });
});

describe('unknownToolError', () => {
  it('is a 404 naming tool_name, with the suggestions', () => {
    const e = unknownToolError('mail_messages_list', names);
    expect(e.status).toBe(404);
    expect(e.code).toBe('unknown_tool');
    expect(e.message).toMatch(/^No tool named "mail_messages_list"; did you mean mail_list_messages \(or /);
    expect(e.details).toEqual([{ field: 'tool_name', message: expect.stringContaining('mail_list_messages') }]);
    expect(unknownToolError('zzz', names).message).toBe('No tool named "zzz"');
  });
});
