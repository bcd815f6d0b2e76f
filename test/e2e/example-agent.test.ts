/**
 * `npm run example:agent` (examples/agent/) runs as written, in both vendors' shapes: the scripted model finds the
 * ticket, replies on it, looks up the requester, sends a mail with a wrong field, reads the error result, sends it
 * again, and answers; the transcript's last lines are read from the fake providers, so they show what happened.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

function runExample(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', 'examples/agent/main.ts', ...args], {
      cwd: new URL('../..', import.meta.url).pathname,
      env: { ...process.env, LOG_LEVEL: 'warn' },
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const lines = (text: string) => text.split('\n').map((l) => l.trimEnd());

describe('npm run example:agent', () => {
  it.each([
    [
      'openai',
      [],
      'OpenAI strict-mode function format',
      /^tool +← call_\d+ \{"error":\{"code":"invalid_input".*toRecipients/,
    ],
    [
      'anthropic',
      ['anthropic'],
      'Anthropic tool format',
      /^tool +← toolu_\d+ \(error\) \{"error":\{"code":"invalid_input".*toRecipients/,
    ],
  ])(
    '%s: a complete agent loop against the scripted model and the fake providers',
    async (_vendor, args, format, error) => {
      const { code, stdout, stderr } = await runExample(args);
      expect(stderr).toBe('');
      expect(code).toBe(0);
      const out = lines(stdout);
      expect(out[0]).toMatch(new RegExp(`^setup +42 tools for jane-support, in ${format}$`));
      const called = out.filter((l) => l.startsWith('assistant  → ')).map((l) => l.split(' ')[3]);
      expect(called).toEqual([
        'helpdesk_search_tickets',
        'helpdesk_ticket_reply',
        'helpdesk_user_get',
        'mail_send_message',
        'mail_send_message',
      ]);
      expect(out.some((l) => error.test(l))).toBe(true);
      expect(out).toContain(
        'assistant  Done. I replied on ticket #1006 that the printer is fixed, and emailed Jane Customer (jane@customer.com) a summary.',
      );
      expect(out.filter((l) => l.startsWith('check'))).toEqual([
        expect.stringMatching(
          /^check +ticket #1006, last comment \(public\): Good news: the printer on the 3rd floor is fixed/,
        ),
        'check      mail sent to jane@customer.com: "Your ticket #1006: the printer is fixed"',
      ]);
    },
  );

  it('refuses an unknown vendor with its usage', async () => {
    const { code, stderr } = await runExample(['gemini']);
    expect(code).toBe(2);
    expect(stderr).toContain('usage: npm run example:agent [-- openai|anthropic]');
  });
});
