/**
 * The push engine's verification schemes (runtime/triggers/push.ts), as the connectors' YAML declares them (read
 * from the generated registry): a signature over what the scheme signs, with the right secret, within the
 * timestamp window, and nothing else.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { triggers } from '../../generated/registry.ts';
import { checkSignature, timestampMs } from '../../runtime/triggers/push.ts';

const verifyOf = (name: string) => triggers.get(name)!.push!.verify;
const NOW = Date.parse('2026-11-29T01:00:00Z');
const req = (headers: Record<string, string>, url = 'https://acs.example.com/v1/ingress/tok') => ({
  method: 'POST',
  url,
  headers: (n: string) => headers[n],
});

describe('timestampMs', () => {
  it('reads epoch seconds, epoch milliseconds and ISO 8601; refuses the rest', () => {
    expect(timestampMs('1795914000')).toBe(1795914000_000);
    expect(timestampMs('1795914000123')).toBe(1795914000123);
    expect(timestampMs('2026-11-29T01:00:00Z')).toBe(NOW);
    expect(timestampMs('yesterday')).toBeUndefined();
    expect(timestampMs(undefined)).toBeUndefined();
    expect(timestampMs('9'.repeat(20))).toBeUndefined();
  });
});

describe('hmac_sha256 over timestamp and body (Zendesk)', () => {
  const verify = verifyOf('helpdesk_ticket_created');
  const body = Buffer.from('{"ticket":{"id":"1"}}');
  const sign = (ts: string, secret = 's3cret', b = body) =>
    createHmac('sha256', secret)
      .update(Buffer.concat([Buffer.from(ts), b]))
      .digest('base64');
  const headers = (ts: string, sig: string) => ({
    'x-zendesk-webhook-signature': sig,
    'x-zendesk-webhook-signature-timestamp': ts,
  });

  it('accepts the right signature within the window', () => {
    const ts = '2026-11-29T00:58:00Z';
    expect(checkSignature(verify, 's3cret', req(headers(ts, sign(ts))), body, NOW)).toBeUndefined();
  });
  it('refuses another secret, another body, a stale or missing timestamp, a missing signature', () => {
    const ts = '2026-11-29T00:58:00Z';
    expect(checkSignature(verify, 's3cret', req(headers(ts, sign(ts, 'other'))), body, NOW)).toMatch(/does not match/);
    expect(checkSignature(verify, 's3cret', req(headers(ts, sign(ts))), Buffer.from('{}'), NOW)).toMatch(
      /does not match/,
    );
    const stale = '2026-11-29T00:54:00Z';
    expect(checkSignature(verify, 's3cret', req(headers(stale, sign(stale))), body, NOW)).toMatch(/window/);
    expect(checkSignature(verify, 's3cret', req({ 'x-zendesk-webhook-signature': sign(ts) }), body, NOW)).toMatch(
      /timestamp/,
    );
    expect(checkSignature(verify, 's3cret', req({}), body, NOW)).toMatch(/no x-zendesk-webhook-signature header/);
  });
});

describe('hmac_sha256 over method, URL, body and timestamp (HubSpot v3)', () => {
  const verify = verifyOf('crm_contact_created');
  const body = Buffer.from('[{"portalId":1}]');
  const url = 'https://acs.example.com/v1/ingress/tok';
  const sign = (ts: string, u = url) =>
    createHmac('sha256', 'client-secret').update(`POST${u}${body.toString()}${ts}`).digest('base64');

  it('signs method, full URL, body and timestamp (milliseconds), within 5 minutes', () => {
    const ts = String(NOW - 60_000);
    const h = { 'x-hubspot-signature-v3': sign(ts), 'x-hubspot-request-timestamp': ts };
    expect(checkSignature(verify, 'client-secret', req(h, url), body, NOW)).toBeUndefined();
    // The same signature for another URL does not pass.
    expect(checkSignature(verify, 'client-secret', req(h, `${url}/x`), body, NOW)).toMatch(/does not match/);
    const old = String(NOW - 301_000);
    const stale = { 'x-hubspot-signature-v3': sign(old), 'x-hubspot-request-timestamp': old };
    expect(checkSignature(verify, 'client-secret', req(stale, url), body, NOW)).toMatch(/window/);
  });
});

describe('shared_secret_header (Apify) and client_state (Graph)', () => {
  it('compares the header with the secret', () => {
    const verify = verifyOf('scraper_run_finished');
    expect(checkSignature(verify, 'abc', req({ 'x-agent-connector-secret': 'abc' }), Buffer.from('{}'), NOW)).toBe(
      undefined,
    );
    expect(checkSignature(verify, 'abc', req({ 'x-agent-connector-secret': 'abd' }), Buffer.from('{}'), NOW)).toMatch(
      /does not match/,
    );
    expect(checkSignature(verify, 'abc', req({}), Buffer.from('{}'), NOW)).toMatch(/no x-agent-connector-secret/);
  });
  it('leaves client_state to each notification', () => {
    const verify = verifyOf('mail_message_received');
    expect(verify.scheme).toBe('client_state');
    expect(verify.clientStatePath).toEqual(['clientState']);
    expect(checkSignature(verify, 'abc', req({}), Buffer.from('{}'), NOW)).toBeUndefined();
  });
});
