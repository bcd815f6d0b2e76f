/**
 * Hooks of the call-intelligence connector (Gong), for what a request template cannot say:
 * - `registerCall`: Gong's required `primaryUser` comes from the parties, and the answer gains the upload URL;
 * - `listTasksByAssigneeEmail`: Gong lists tasks by user id, so the email is first resolved through the users list;
 * - `changeTaskStatusAsOwner`: Gong changes a task's status only with its owner's user id, which the spec's
 *   tools do not take; when the caller does not give it, the owner is found among the users' open tasks;
 * - `flowContentOverrideUnavailable`: Gong has no operation for it, so the tool refuses clearly and sends nothing.
 */
import type {
  CallintelCallsCreateInput,
  CallintelEngageTaskCompleteInput,
  CallintelEngageTaskSkipInput,
  CallintelEngageFlowContentOverrideInput,
  CallintelEngageTasksListInput,
} from '../../generated/types.ts';
import { ServiceError, UpstreamFailure } from '../../core/errors.ts';
import { url } from '../../core/template-runtime.ts';
import type { ToolHook, UpstreamRequest } from '../../core/tool-types.ts';

/** Gong requires the host of the call as `primaryUser`; the spec's tool has only the parties. */
function withPrimaryUser(input: CallintelCallsCreateInput, request: UpstreamRequest): UpstreamRequest {
  const host = input.parties?.find((p) => typeof p.userId === 'string' && p.userId !== '')?.userId;
  if (host === undefined) return request;
  return { ...request, body: { ...(request.body as Record<string, unknown>), primaryUser: host } };
}

export const registerCall: ToolHook<CallintelCallsCreateInput> = {
  plan: (input, planned) => planned.map((r) => withPrimaryUser(input, r)),
  async run(ctx) {
    const answer = (await ctx.call(withPrimaryUser(ctx.input, ctx.planned[0]!))) as Record<string, unknown> | undefined;
    const callId = answer?.callId;
    if (typeof callId !== 'string' && typeof callId !== 'number') {
      throw new UpstreamFailure(
        'provider_malformed_response',
        'Gong registered the call but its answer carries no callId',
      );
    }
    const mediaUploadPath = `/v2/calls/${encodeURIComponent(String(callId))}/media`;
    return { ...answer, mediaUploadUrl: `${ctx.base()}${mediaUploadPath}`, mediaUploadPath };
  },
};

interface GongUser {
  id?: string;
  emailAddress?: string;
  emailAliases?: string[];
}
interface UsersPage {
  users?: GongUser[];
  records?: { cursor?: string };
}
interface GongTask {
  dueDate?: string;
  [key: string]: unknown;
}

/** Bounds of an ISO 8601 date or date-time filter: a bare date covers its whole day (UTC). */
function instant(value: string, end: boolean): number {
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) return Date.parse(`${value}T${end ? '23:59:59.999' : '00:00:00'}Z`);
  return Date.parse(/(Z|[+-]\d{2}:?\d{2})$/.test(value) ? value : `${value}Z`);
}

function dueWithin(task: GongTask, from: number | undefined, to: number | undefined): boolean {
  if (from === undefined && to === undefined) return true;
  const due = typeof task.dueDate === 'string' ? Date.parse(task.dueDate) : NaN;
  if (Number.isNaN(due)) return false;
  return (from === undefined || due >= from) && (to === undefined || due <= to);
}

export const listTasksByAssigneeEmail: ToolHook<CallintelEngageTasksListInput> = {
  async run(ctx) {
    const [lookup, list] = ctx.planned as [UpstreamRequest, UpstreamRequest];
    const wanted = ctx.input.assignee_email.trim().toLowerCase();
    const matches = (u: GongUser) =>
      u.emailAddress?.toLowerCase() === wanted || (u.emailAliases ?? []).some((a) => a.toLowerCase() === wanted);
    let user: GongUser | undefined;
    let cursor: string | undefined;
    const seen = new Set<string>();
    do {
      const page = (await ctx.call(
        cursor ? { ...lookup, url: url(lookup.url, '', [['cursor', cursor]]) } : lookup,
      )) as UsersPage;
      user = page?.users?.find(matches);
      cursor = page?.records?.cursor;
      // A provider that repeated a cursor would otherwise be paged forever.
      if (cursor !== undefined && seen.has(cursor)) cursor = undefined;
      if (cursor !== undefined) seen.add(cursor);
    } while (!user && cursor);
    if (!user?.id) {
      throw new ServiceError(
        404,
        'assignee_not_found',
        `No Gong user has the email address ${ctx.input.assignee_email}`,
        [{ field: 'assignee_email', message: 'matches no Gong user (email address or alias)' }],
      );
    }
    const body = structuredClone(list.body) as { filter: Record<string, unknown> };
    body.filter.userId = user.id;
    const answer = (await ctx.call({ ...list, body })) as { tasks?: GongTask[] } & Record<string, unknown>;
    const from = ctx.input.from_date ? instant(ctx.input.from_date, false) : undefined;
    const to = ctx.input.to_date ? instant(ctx.input.to_date, true) : undefined;
    return {
      ...answer,
      tasks: (answer?.tasks ?? []).filter((t) => dueWithin(t, from, to)),
      assignee: { userId: user.id, emailAddress: user.emailAddress },
    };
  },
};

export const flowContentOverrideUnavailable: ToolHook<CallintelEngageFlowContentOverrideInput> = {
  plan: () => [],
  // Refuses every input, as the promise the hook interface returns.
  run(ctx) {
    return Promise.reject(
      new ServiceError(
        501,
        'not_supported_by_provider',
        `Gong's API cannot change the placeholder values of an existing flow instance (${ctx.input.flow_instance_id}): ` +
          'placeholder values can only be set when prospects are assigned to a flow (callintel_engage_prospects_assign). Nothing was sent.',
        [
          {
            field: 'flow_instance_id',
            message: 'Gong offers no operation that overrides the placeholder values of a flow instance',
          },
        ],
      ),
    );
  },
};

/** How many users' open tasks are searched for a task's owner before the caller is asked for user_id. */
export const OWNER_SEARCH_LIMIT = 200;

async function* users(
  ctx: { call(r: UpstreamRequest): Promise<unknown> },
  lookup: UpstreamRequest,
): AsyncGenerator<GongUser> {
  let cursor: string | undefined;
  const seen = new Set<string>();
  do {
    const page = (await ctx.call(
      cursor ? { ...lookup, url: url(lookup.url, '', [['cursor', cursor]]) } : lookup,
    )) as UsersPage;
    for (const u of page?.users ?? []) yield u;
    cursor = page?.records?.cursor;
    if (cursor !== undefined && seen.has(cursor)) cursor = undefined;
    if (cursor !== undefined) seen.add(cursor);
  } while (cursor);
}

export const changeTaskStatusAsOwner: ToolHook<CallintelEngageTaskCompleteInput | CallintelEngageTaskSkipInput> = {
  async run(ctx) {
    const patch = ctx.planned.at(-1)!;
    if (ctx.input.user_id) return ctx.call(patch);
    const lookup = ctx.planned[0]!;
    let searched = 0;
    for await (const user of users(ctx, lookup)) {
      if (!user.id) continue;
      if (++searched > OWNER_SEARCH_LIMIT) {
        throw new ServiceError(
          400,
          'invalid_input',
          `The owner of task ${ctx.input.task_id} was not among the first ${OWNER_SEARCH_LIMIT} users' open tasks; give user_id`,
          [
            {
              field: 'user_id',
              message: `is required for this task: its owner was not found among ${OWNER_SEARCH_LIMIT} users`,
            },
          ],
        );
      }
      const answer = (await ctx.call({
        method: 'POST',
        url: `${ctx.base()}/v2/tasks`,
        headers: {},
        body: { filter: { userId: user.id, types: ['FLOW', 'MANUAL'], taskAction: ['CALL'], status: ['OPEN'] } },
        emptyOn: [{ status: 404, data: { tasks: [] } }],
      })) as { tasks?: Array<{ id?: unknown }> };
      if ((answer?.tasks ?? []).some((t) => String(t.id) === ctx.input.task_id)) {
        return ctx.call({ ...patch, body: { ...(patch.body as Record<string, unknown>), userId: user.id } });
      }
    }
    throw new ServiceError(404, 'task_not_found', `Task ${ctx.input.task_id} is not open under any Gong user`, [
      { field: 'task_id', message: 'is not an open task of any user' },
    ]);
  },
};
