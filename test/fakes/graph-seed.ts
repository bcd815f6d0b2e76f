import type { FakeGraph } from './graph.ts';

/** Creates the objects an example's ids refer to, with those ids. */
export function seedFor(fake: FakeGraph, input: Record<string, unknown>): void {
  const s = fake.state;
  if (typeof input.event_id === 'string') {
    s.addEvent({
      id: input.event_id,
      subject: 'Seeded event',
      start: { dateTime: '2026-09-10T09:00:00', timeZone: 'UTC' },
      end: { dateTime: '2026-09-10T10:00:00', timeZone: 'UTC' },
      attendees: [{ emailAddress: { address: 'guest@x.com' }, type: 'required' }],
    });
  }
  const messageId = input.message_id ?? input.messageId;
  if (typeof messageId === 'string') {
    s.addMessage({
      id: messageId,
      subject: 'Seeded message',
      from: 'sender@fabrikam.example',
      body: '<p>Seeded</p>',
      attachments: [
        {
          ...(typeof input.attachment_id === 'string' ? { id: input.attachment_id } : {}),
          name: 'notes.txt',
          contentType: 'text/plain',
          contentBytes: Buffer.from('seeded attachment').toString('base64'),
        },
      ],
    });
  }
  if (typeof input.list_id === 'string') {
    s.addTodoList({ id: input.list_id, displayName: 'Seeded list' });
    if (typeof input.task_id === 'string') s.addTask(input.list_id, { id: input.task_id, title: 'Seeded task' });
  }
}
