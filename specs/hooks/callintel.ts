/**
 * Hooks of the call-intelligence connector (Gong), for what a request template cannot say:
 * - `registerCall`: Gong's required `primaryUser` comes from the parties, and the answer gains the upload URL;
 * - `listTasksByAssigneeEmail`: Gong lists tasks by user id, so the email is first resolved through the users list;
 * - `changeTaskStatusAsOwner`: Gong changes a task's status only with its owner's user id, which the spec's
 *   tools do not take; when the caller does not give it, the owner is found among the users' open tasks;
 * - `flowContentOverrideUnavailable`: Gong has no operation for it, so the tool refuses clearly and sends nothing;
 * - `coachingForManagers`: Gong's coaching read needs a workspace, a manager and a period, which the spec's tool
 *   does not take; those not given are resolved (the company's workspaces, the managers of active users, the last
 *   30 days).
 */
import type {
  CallintelCallsCreateInput,
  CallintelCoachingGetInput,
  CallintelEngageTaskCompleteInput,
  CallintelEngageTaskSkipInput,
  CallintelEngageFlowContentOverrideInput,
  CallintelEngageTasksListInput,
} from '../../generated/types.ts';
import { ServiceError, UpstreamFailure } from '../../core/errors.ts';
import { encodeQueryPart, url } from '../../core/template-runtime.ts';
import { FROM_PREVIOUS } from '../../core/tool-types.ts';
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

/** A planned request whose body's `filter.userId` (or `userId`) is the user id an earlier answer gives. */
function withUserFromPrevious(r: UpstreamRequest, where: 'filter' | 'root'): UpstreamRequest {
  const body = structuredClone((r.body ?? {}) as Record<string, unknown>);
  if (where === 'filter') (body.filter as Record<string, unknown>).userId = FROM_PREVIOUS;
  else body.userId = FROM_PREVIOUS;
  return { ...r, body };
}

export const listTasksByAssigneeEmail: ToolHook<CallintelEngageTasksListInput> = {
  // The users list (paged until the email matches), then the tasks of the user id it gives.
  plan: (_input, planned) => [planned[0]!, withUserFromPrevious(planned[1]!, 'filter')],
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

/** The open-task search of one user, when looking for a task's owner. */
function openTasksOf(base: string, userId: string): UpstreamRequest {
  return {
    method: 'POST',
    url: `${base}/v2/tasks`,
    headers: {},
    body: { filter: { userId, types: ['FLOW', 'MANUAL'], taskAction: ['CALL'], status: ['OPEN'] } },
    emptyOn: [{ status: 404, data: { tasks: [] } }],
  };
}

export const changeTaskStatusAsOwner: ToolHook<CallintelEngageTaskCompleteInput | CallintelEngageTaskSkipInput> = {
  // Without user_id: the users list, each user's open tasks (repeated per user until the task is found), then the
  // status change as the owner found.
  plan: (input, planned, base) =>
    input.user_id
      ? planned
      : [planned[0]!, openTasksOf(base(), FROM_PREVIOUS), withUserFromPrevious(planned.at(-1)!, 'root')],
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
      const answer = (await ctx.call(openTasksOf(ctx.base(), user.id))) as { tasks?: Array<{ id?: unknown }> };
      if ((answer?.tasks ?? []).some((t) => String(t.id) === ctx.input.task_id)) {
        return ctx.call({ ...patch, body: { ...(patch.body as Record<string, unknown>), userId: user.id } });
      }
    }
    throw new ServiceError(404, 'task_not_found', `Task ${ctx.input.task_id} is not open under any Gong user`, [
      { field: 'task_id', message: 'is not an open task of any user' },
    ]);
  },
};

/** The period of a coaching read when the caller gives none: this many days up to now. */
export const COACHING_DEFAULT_DAYS = 30;
/** At most this many coaching reads (workspaces × managers) per call; past it a warning says what was left out. */
export const COACHING_MAX_READS = 50;

/** An ISO 8601 instant without milliseconds, as Gong's examples write them. */
const isoSeconds = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** The period a coaching read covers: the one given, else the 30 days up to `to_date_time` (or now). */
export function coachingPeriod(input: CallintelCoachingGetInput, now = Date.now()): { from: string; to: string } {
  const to = input.to_date_time ?? isoSeconds(now);
  if (input.from_date_time !== undefined) return { from: input.from_date_time, to };
  // A given end that JavaScript's Date cannot place (a leap second, a far year) is sent as given; the period's start
  // then counts back from now, and Gong judges the pair.
  const period = COACHING_DEFAULT_DAYS * 86_400_000;
  const fromMs = Date.parse(to) - period;
  return { from: isoSeconds(Number.isFinite(new Date(fromMs).getTime()) ? fromMs : now - period), to };
}

/** The coaching read for one workspace and manager (a value from an earlier answer stays a placeholder). */
function coachingRead(base: string, workspace: string, manager: string, period: { from: string; to: string }) {
  const part = (v: string) => (v === FROM_PREVIOUS ? v : encodeQueryPart(v));
  return {
    method: 'GET',
    url:
      `${base}/v2/coaching?workspace-id=${part(workspace)}&manager-id=${part(manager)}` +
      `&from=${part(period.from)}&to=${part(period.to)}`,
    headers: {},
  } satisfies UpstreamRequest;
}

interface GongManagedUser extends GongUser {
  managerId?: string | null;
  active?: boolean;
}

export const coachingForManagers: ToolHook<CallintelCoachingGetInput> = {
  plan(input, planned, base) {
    const lookups = planned.slice(0, -1);
    const period = coachingPeriod(input);
    const read = coachingRead(base(), input.workspace_id ?? FROM_PREVIOUS, input.manager_id ?? FROM_PREVIOUS, period);
    return [...lookups, read];
  },
  async run(ctx) {
    const { input } = ctx;
    const period = coachingPeriod(input);
    let i = 0;
    let workspaceIds: string[];
    if (input.workspace_id) workspaceIds = [input.workspace_id];
    else {
      const answer = (await ctx.call(ctx.planned[i++]!)) as { workspaces?: Array<{ id?: unknown }> } | undefined;
      // eslint-disable-next-line @typescript-eslint/no-base-to-string -- Gong's workspace id, a string or number as the API sent it
      workspaceIds = (answer?.workspaces ?? []).map((w) => String(w.id ?? '')).filter(Boolean);
    }
    let managerIds: string[];
    if (input.manager_id) managerIds = [input.manager_id];
    else {
      const managers = new Set<string>();
      for await (const user of users(ctx, ctx.planned[i]!)) {
        const u = user as GongManagedUser;
        if (u.active !== false && u.managerId) managers.add(String(u.managerId));
      }
      managerIds = [...managers];
    }
    const pairs = workspaceIds.flatMap((w) => managerIds.map((m) => [w, m] as const));
    if (pairs.length > COACHING_MAX_READS) {
      ctx.warn({
        field: input.manager_id ? 'workspace_id' : 'manager_id',
        message:
          `covers ${pairs.length} workspace and manager pairs; only the first ${COACHING_MAX_READS} were read ` +
          '(give workspace_id and manager_id to read the others)',
      });
    }
    if (!pairs.length) {
      ctx.warn({
        field: workspaceIds.length ? 'manager_id' : 'workspace_id',
        message: workspaceIds.length
          ? 'was not given and no active user has a manager, so there was no team to read coaching for'
          : 'was not given and the company has no workspace, so there was no coaching to read',
      });
    }
    const coachingData: unknown[] = [];
    for (const [workspace, manager] of pairs.slice(0, COACHING_MAX_READS)) {
      const answer = (await ctx.call(coachingRead(ctx.base(), workspace, manager, period))) as
        { coachingData?: Array<Record<string, unknown>> } | undefined;
      for (const entry of answer?.coachingData ?? []) coachingData.push({ ...entry, workspaceId: workspace });
    }
    return { coachingData, resolved: { workspaceIds, managerIds, from: period.from, to: period.to } };
  },
};
