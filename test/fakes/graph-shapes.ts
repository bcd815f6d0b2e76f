import { asText } from '../helpers/text.ts';
/**
 * What the fake Microsoft Graph accepts in request bodies: the entity and complex types the mail tools send
 * (event, dateTimeTimeZone, patternedRecurrence, message, recipient, contact, mailboxSettings, todoTaskList,
 * todoTask), checked the way Graph checks them. Unknown properties and unconvertible literals fail with
 * `RequestBodyRead`, as Graph's OData reader does; values that parse but break a rule fail with
 * `ErrorInvalidProperty`; an unknown time zone fails with `TimeZoneNotSupportedException`.
 * Also the time-zone arithmetic Graph does when it stores a local time and answers in UTC.
 */

export type Json = Record<string, unknown>;

/** A Graph error: the status and `error.code` the fake answers with. */
export class GraphError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const unreadable = (message: string) => new GraphError(400, 'RequestBodyRead', message);
const invalid = (message: string) => new GraphError(400, 'ErrorInvalidProperty', message);

// ------------------------------------------------------------------------------------------------------------
// Time zones
// ------------------------------------------------------------------------------------------------------------

/** Windows time-zone names Graph accepts beside IANA names (the common ones; the fake knows no others). */
const WINDOWS_ZONES: Record<string, string> = {
  UTC: 'UTC',
  'GMT Standard Time': 'Europe/London',
  'Greenwich Standard Time': 'Atlantic/Reykjavik',
  'W. Europe Standard Time': 'Europe/Berlin',
  'Central Europe Standard Time': 'Europe/Budapest',
  'Central European Standard Time': 'Europe/Warsaw',
  'Romance Standard Time': 'Europe/Paris',
  'FLE Standard Time': 'Europe/Helsinki',
  'GTB Standard Time': 'Europe/Bucharest',
  'Eastern Standard Time': 'America/New_York',
  'Central Standard Time': 'America/Chicago',
  'Mountain Standard Time': 'America/Denver',
  'Pacific Standard Time': 'America/Los_Angeles',
  'Alaskan Standard Time': 'America/Anchorage',
  'Hawaiian Standard Time': 'Pacific/Honolulu',
  'India Standard Time': 'Asia/Kolkata',
  'China Standard Time': 'Asia/Shanghai',
  'Tokyo Standard Time': 'Asia/Tokyo',
  'AUS Eastern Standard Time': 'Australia/Sydney',
};

/** The IANA zone behind a Windows or IANA name, or undefined when Graph would not know it. */
export function ianaZone(name: string): string | undefined {
  if (WINDOWS_ZONES[name]) return WINDOWS_ZONES[name];
  if (!/^[A-Za-z]/.test(name)) return undefined;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

export function checkTimeZone(name: unknown, where: string): string {
  if (typeof name !== 'string')
    throw unreadable(`Cannot convert the value of '${where}' to the expected type 'Edm.String'.`);
  const zone = ianaZone(name);
  if (!zone) {
    throw new GraphError(
      400,
      'TimeZoneNotSupportedException',
      `A valid TimeZone value must be specified. The following TimeZone value is not supported: '${name}'.`,
    );
  }
  return zone;
}

/** A local date-time without offset, as dateTimeTimeZone.dateTime wants it. */
export const LOCAL_DATE_TIME = /^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,7}))?)?$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const TIME_OF_DAY = /^\d{2}:\d{2}(:\d{2}(\.\d{1,7})?)?$/;

/** Milliseconds the zone is ahead of UTC at an instant. */
function zoneOffsetMs(instant: number, zone: string): number {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
      .formatToParts(instant)
      .map((p) => [p.type, p.value]),
  );
  const asUtc = Date.UTC(+parts.year!, +parts.month! - 1, +parts.day!, +parts.hour!, +parts.minute!, +parts.second!);
  return asUtc - Math.floor(instant / 1000) * 1000;
}

function localParts(local: string): number {
  const m = LOCAL_DATE_TIME.exec(local)!;
  const [y, mo, d] = m[1]!.split('-').map(Number);
  return Date.UTC(y!, mo! - 1, d, +m[2]!, +m[3]!, +(m[4] ?? 0));
}

/** The instant a local time in a zone stands for. */
export function localToInstant(local: string, zone: string): number {
  const wall = localParts(local);
  const first = wall - zoneOffsetMs(wall, zone);
  return wall - zoneOffsetMs(first, zone);
}

/** Graph's rendering of an instant in a zone: `2026-09-07T08:00:00.0000000`. */
export function instantToLocal(instant: number, zone: string): string {
  const shifted = new Date(instant + zoneOffsetMs(instant, zone));
  return `${shifted.toISOString().slice(0, 19)}.0000000`;
}

/** `2026-09-07T10:00` → `2026-09-07T10:00:00.0000000` */
export function normalizeLocal(local: string): string {
  const m = LOCAL_DATE_TIME.exec(local)!;
  return `${m[1]}T${m[2]}:${m[3]}:${m[4] ?? '00'}.${(m[5] ?? '').padEnd(7, '0')}`;
}

// ------------------------------------------------------------------------------------------------------------
// Primitive readers
// ------------------------------------------------------------------------------------------------------------

export function object(v: unknown, type: string): Json {
  if (!v || typeof v !== 'object' || Array.isArray(v)) {
    throw unreadable(
      `An unexpected '${Array.isArray(v) ? 'StartArray' : 'PrimitiveValue'}' node was found when reading a value of type 'microsoft.graph.${type}'.`,
    );
  }
  return v as Json;
}

/** Graph's OData reader refuses properties its type does not declare. */
export function onlyKnown(o: Json, known: readonly string[], type: string): void {
  for (const key of Object.keys(o)) {
    if (key.startsWith('@odata.')) continue;
    if (!known.includes(key)) {
      throw unreadable(
        `The property '${key}' does not exist on type 'microsoft.graph.${type}'. Make sure to only use property names that are defined by the type or mark the type as open type.`,
      );
    }
  }
}

function primitive(v: unknown, kind: 'string' | 'boolean' | 'number', edm: string, prop: string): void {
  if (v === null) return;
  if (typeof v !== kind)
    throw unreadable(`Cannot convert the value of property '${prop}' to the expected type '${edm}'.`);
}
export const str = (v: unknown, prop: string) => primitive(v, 'string', 'Edm.String', prop);
export const bool = (v: unknown, prop: string) => primitive(v, 'boolean', 'Edm.Boolean', prop);
export function int(v: unknown, prop: string, min = -Infinity): void {
  if (typeof v !== 'number' || !Number.isInteger(v))
    throw unreadable(`Cannot convert the value of property '${prop}' to the expected type 'Edm.Int32'.`);
  if (v < min) throw invalid(`The value of '${prop}' must be at least ${min}.`);
}
export function strings(v: unknown, prop: string): void {
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
    throw unreadable(`Cannot convert the value of property '${prop}' to the expected type 'Collection(Edm.String)'.`);
  }
}

/** Graph enums compare case-insensitively when read; the stored value is the declared spelling. */
export function enumValue(v: unknown, values: readonly string[], enumType: string): string {
  const found = typeof v === 'string' ? values.find((x) => x.toLowerCase() === v.toLowerCase()) : undefined;
  if (!found)
    throw unreadable(`Cannot convert the literal '${String(v)}' to the expected type 'microsoft.graph.${enumType}'.`);
  return found;
}

export function date(v: unknown, prop: string): void {
  if (typeof v !== 'string' || !DATE.test(v))
    throw unreadable(`Cannot convert the literal '${String(v)}' of '${prop}' to the expected type 'Edm.Date'.`);
}

export function timeOfDay(v: unknown, prop: string): void {
  if (typeof v !== 'string' || !TIME_OF_DAY.test(v)) {
    throw unreadable(`Cannot convert the literal '${String(v)}' of '${prop}' to the expected type 'Edm.TimeOfDay'.`);
  }
}

// ------------------------------------------------------------------------------------------------------------
// Complex types
// ------------------------------------------------------------------------------------------------------------

export const DAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'] as const;
export const IMPORTANCE = ['low', 'normal', 'high'] as const;

/** dateTimeTimeZone: both parts required; the time is local, so an offset or Z is refused. */
export function dateTimeTimeZone(v: unknown, prop: string): { dateTime: string; timeZone: string; zone: string } {
  const o = object(v, 'dateTimeTimeZone');
  onlyKnown(o, ['dateTime', 'timeZone'], 'dateTimeTimeZone');
  if (typeof o.dateTime !== 'string' || !o.dateTime) throw invalid(`${prop}.dateTime is required.`);
  if (typeof o.timeZone !== 'string' || !o.timeZone) throw invalid(`${prop}.timeZone is required.`);
  if (!LOCAL_DATE_TIME.test(o.dateTime)) {
    throw invalid(
      `${prop}.dateTime '${o.dateTime}' is not a local date and time: give it without an offset or Z (for example 2026-09-07T10:00:00) and name the zone in timeZone.`,
    );
  }
  const zone = checkTimeZone(o.timeZone, `${prop}.timeZone`);
  return { dateTime: o.dateTime, timeZone: o.timeZone, zone };
}

export function itemBody(v: unknown, prop: string): Json {
  const o = object(v, 'itemBody');
  onlyKnown(o, ['contentType', 'content'], 'itemBody');
  if (o.content !== undefined) str(o.content, `${prop}.content`);
  const contentType = o.contentType === undefined ? 'text' : enumValue(o.contentType, ['text', 'html'], 'bodyType');
  return { contentType, content: o.content ?? '' };
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function emailAddress(v: unknown, prop: string, code = 'ErrorInvalidProperty'): Json {
  const o = object(v, 'emailAddress');
  onlyKnown(o, ['address', 'name'], 'emailAddress');
  if (o.name !== undefined) str(o.name, `${prop}.name`);
  if (typeof o.address !== 'string' || !EMAIL.test(o.address)) {
    throw new GraphError(400, code, `${prop}.address must be an email address, got ${JSON.stringify(o.address)}.`);
  }
  return { name: o.name ?? o.address, address: o.address };
}

/** A message recipient; Graph answers ErrorInvalidRecipients when the address is missing or malformed. */
export function recipients(v: unknown, prop: string): Json[] {
  if (!Array.isArray(v))
    throw unreadable(
      `Cannot convert the value of property '${prop}' to the expected type 'Collection(microsoft.graph.recipient)'.`,
    );
  return v.map((r, i) => {
    const o = object(r, 'recipient');
    onlyKnown(o, ['emailAddress'], 'recipient');
    if (o.emailAddress === undefined)
      throw new GraphError(400, 'ErrorInvalidRecipients', `${prop}[${i}].emailAddress is required.`);
    return { emailAddress: emailAddress(o.emailAddress, `${prop}[${i}].emailAddress`, 'ErrorInvalidRecipients') };
  });
}

export function attendees(v: unknown): Json[] {
  if (!Array.isArray(v))
    throw unreadable(
      "Cannot convert the value of property 'attendees' to the expected type 'Collection(microsoft.graph.attendee)'.",
    );
  return v.map((a, i) => {
    const o = object(a, 'attendee');
    onlyKnown(o, ['emailAddress', 'type', 'status', 'proposedNewTime'], 'attendee');
    if (o.emailAddress === undefined) throw invalid(`attendees[${i}].emailAddress is required.`);
    return {
      type: o.type === undefined ? 'required' : enumValue(o.type, ['required', 'optional', 'resource'], 'attendeeType'),
      status: { response: 'none', time: '0001-01-01T00:00:00Z' },
      emailAddress: emailAddress(o.emailAddress, `attendees[${i}].emailAddress`),
    };
  });
}

const ADDRESS_PROPS = ['street', 'city', 'state', 'countryOrRegion', 'postalCode'];
const COORDINATE_PROPS = ['latitude', 'longitude', 'accuracy', 'altitude', 'altitudeAccuracy'];

export function location(v: unknown, prop: string): Json {
  const o = object(v, 'location');
  onlyKnown(
    o,
    [
      'displayName',
      'address',
      'coordinates',
      'locationEmailAddress',
      'locationUri',
      'locationType',
      'uniqueId',
      'uniqueIdType',
    ],
    'location',
  );
  if (o.displayName !== undefined) str(o.displayName, `${prop}.displayName`);
  if (o.address !== undefined && o.address !== null) {
    const a = object(o.address, 'physicalAddress');
    onlyKnown(a, ADDRESS_PROPS, 'physicalAddress');
    for (const k of Object.keys(a)) str(a[k], `${prop}.address.${k}`);
  }
  if (o.coordinates !== undefined && o.coordinates !== null) {
    const c = object(o.coordinates, 'outlookGeoCoordinates');
    onlyKnown(c, COORDINATE_PROPS, 'outlookGeoCoordinates');
    for (const k of Object.keys(c))
      if (c[k] !== null && typeof c[k] !== 'number')
        throw unreadable(
          `Cannot convert the value of property '${prop}.coordinates.${k}' to the expected type 'Edm.Double'.`,
        );
  }
  return { displayName: '', locationType: 'default', uniqueIdType: 'unknown', address: {}, coordinates: {}, ...o };
}

const PATTERN_TYPES = [
  'daily',
  'weekly',
  'absoluteMonthly',
  'relativeMonthly',
  'absoluteYearly',
  'relativeYearly',
] as const;
/** Which pattern properties each type uses; the others may only carry their defaults. */
const PATTERN_USES: Record<(typeof PATTERN_TYPES)[number], string[]> = {
  daily: [],
  weekly: ['daysOfWeek', 'firstDayOfWeek'],
  absoluteMonthly: ['dayOfMonth'],
  relativeMonthly: ['daysOfWeek', 'index'],
  absoluteYearly: ['dayOfMonth', 'month'],
  relativeYearly: ['daysOfWeek', 'index', 'month'],
};
const PATTERN_REQUIRES: Record<(typeof PATTERN_TYPES)[number], string[]> = {
  daily: [],
  weekly: ['daysOfWeek'],
  absoluteMonthly: ['dayOfMonth'],
  relativeMonthly: ['daysOfWeek'],
  absoluteYearly: ['dayOfMonth', 'month'],
  relativeYearly: ['daysOfWeek', 'month'],
};
const PATTERN_DEFAULTS: Json = { month: 0, dayOfMonth: 0, daysOfWeek: [], firstDayOfWeek: 'sunday', index: 'first' };

/** patternedRecurrence: a full {pattern, range}; properties must fit the pattern type. */
export function recurrence(v: unknown): Json | null {
  if (v === null) return null;
  const o = object(v, 'patternedRecurrence');
  onlyKnown(o, ['pattern', 'range'], 'patternedRecurrence');
  if (o.pattern === undefined || o.range === undefined) throw invalid('recurrence needs both pattern and range.');

  const p = object(o.pattern, 'recurrencePattern');
  onlyKnown(
    p,
    ['type', 'interval', 'month', 'dayOfMonth', 'daysOfWeek', 'firstDayOfWeek', 'index'],
    'recurrencePattern',
  );
  if (p.type === undefined) throw invalid('recurrence.pattern.type is required.');
  const type = enumValue(p.type, PATTERN_TYPES, 'recurrencePatternType') as (typeof PATTERN_TYPES)[number];
  if (p.interval === undefined) throw invalid('recurrence.pattern.interval is required.');
  int(p.interval, 'recurrence.pattern.interval', 1);
  if (p.daysOfWeek !== undefined) {
    if (!Array.isArray(p.daysOfWeek))
      throw unreadable(
        "Cannot convert the value of property 'daysOfWeek' to the expected type 'Collection(microsoft.graph.dayOfWeek)'.",
      );
    p.daysOfWeek = p.daysOfWeek.map((d) => enumValue(d, DAYS, 'dayOfWeek'));
  }
  if (p.firstDayOfWeek !== undefined) p.firstDayOfWeek = enumValue(p.firstDayOfWeek, DAYS, 'dayOfWeek');
  if (p.index !== undefined) p.index = enumValue(p.index, ['first', 'second', 'third', 'fourth', 'last'], 'weekIndex');
  if (p.dayOfMonth !== undefined) int(p.dayOfMonth, 'recurrence.pattern.dayOfMonth', 0);
  if (p.month !== undefined) int(p.month, 'recurrence.pattern.month', 0);
  for (const [key, value] of Object.entries(p)) {
    if (key === 'type' || key === 'interval' || PATTERN_USES[type].includes(key)) continue;
    if (JSON.stringify(value) !== JSON.stringify(PATTERN_DEFAULTS[key])) {
      throw invalid(`recurrence.pattern.${key} is not supported for a ${type} pattern.`);
    }
  }
  for (const key of PATTERN_REQUIRES[type]) {
    const value = p[key];
    if (value === undefined || (Array.isArray(value) && !value.length) || value === 0) {
      throw invalid(`recurrence.pattern.${key} is required for a ${type} pattern.`);
    }
  }
  if (p.dayOfMonth !== undefined && (p.dayOfMonth as number) > 31)
    throw invalid('recurrence.pattern.dayOfMonth must be 1-31.');
  if (p.month !== undefined && (p.month as number) > 12) throw invalid('recurrence.pattern.month must be 1-12.');

  const r = object(o.range, 'recurrenceRange');
  onlyKnown(r, ['type', 'startDate', 'endDate', 'numberOfOccurrences', 'recurrenceTimeZone'], 'recurrenceRange');
  if (r.type === undefined) throw invalid('recurrence.range.type is required.');
  const rangeType = enumValue(r.type, ['endDate', 'noEnd', 'numbered'], 'recurrenceRangeType');
  if (r.startDate === undefined) throw invalid('recurrence.range.startDate is required.');
  date(r.startDate, 'recurrence.range.startDate');
  if (rangeType === 'endDate') {
    if (r.endDate === undefined) throw invalid('recurrence.range.endDate is required when range.type is endDate.');
    date(r.endDate, 'recurrence.range.endDate');
    if ((r.endDate as string) < (r.startDate as string)) throw invalid('recurrence.range.endDate is before startDate.');
  }
  if (rangeType === 'numbered') {
    if (r.numberOfOccurrences === undefined)
      throw invalid('recurrence.range.numberOfOccurrences is required when range.type is numbered.');
    int(r.numberOfOccurrences, 'recurrence.range.numberOfOccurrences', 1);
  }
  if (r.recurrenceTimeZone !== undefined && r.recurrenceTimeZone !== null)
    checkTimeZone(r.recurrenceTimeZone, 'recurrence.range.recurrenceTimeZone');
  return {
    pattern: { ...PATTERN_DEFAULTS, ...p, type },
    range: { endDate: '0001-01-01', recurrenceTimeZone: 'UTC', numberOfOccurrences: 0, ...r, type: rangeType },
  };
}

// ------------------------------------------------------------------------------------------------------------
// Entities
// ------------------------------------------------------------------------------------------------------------

export const EVENT_PROPS = [
  'subject',
  'body',
  'start',
  'end',
  'location',
  'locations',
  'attendees',
  'importance',
  'sensitivity',
  'showAs',
  'isAllDay',
  'isOnlineMeeting',
  'onlineMeetingProvider',
  'isReminderOn',
  'reminderMinutesBeforeStart',
  'recurrence',
  'categories',
  'hideAttendees',
  'responseRequested',
  'allowNewTimeProposals',
  'transactionId',
  'isCancelled',
  'originalStartTimeZone',
  'originalEndTimeZone',
] as const;

/**
 * The properties of an event body, checked and converted to what Graph stores. `create` also requires start
 * and end. Returns only the properties given; start and end are converted to UTC, their zones kept as
 * originalStartTimeZone / originalEndTimeZone.
 */
export function eventChanges(body: unknown, create: boolean): Json {
  const o = object(body, 'event');
  onlyKnown(o, EVENT_PROPS, 'event');
  const changes: Json = {};
  if (create && o.start === undefined)
    throw invalid('An event needs a start: start.dateTime and start.timeZone are required.');
  if (create && o.end === undefined)
    throw invalid('An event needs an end: end.dateTime and end.timeZone are required.');
  for (const [key, v] of Object.entries(o)) {
    if (key.startsWith('@odata.')) continue;
    switch (key) {
      case 'subject':
      case 'transactionId':
        str(v, key);
        changes[key] = v;
        break;
      case 'body':
        changes.body = itemBody(v, 'body');
        break;
      case 'start':
      case 'end': {
        const d = dateTimeTimeZone(v, key);
        changes[key] = { dateTime: instantToLocal(localToInstant(d.dateTime, d.zone), 'UTC'), timeZone: 'UTC' };
        changes[key === 'start' ? 'originalStartTimeZone' : 'originalEndTimeZone'] = d.timeZone;
        break;
      }
      case 'originalStartTimeZone':
      case 'originalEndTimeZone':
        checkTimeZone(v, key);
        changes[key] = v;
        break;
      case 'location':
        changes.location = location(v, 'location');
        break;
      case 'locations':
        if (!Array.isArray(v))
          throw unreadable(
            "Cannot convert the value of property 'locations' to the expected type 'Collection(microsoft.graph.location)'.",
          );
        changes.locations = v.map((l, i) => location(l, `locations[${i}]`));
        break;
      case 'attendees':
        changes.attendees = attendees(v);
        break;
      case 'importance':
        changes.importance = enumValue(v, IMPORTANCE, 'importance');
        break;
      case 'sensitivity':
        changes.sensitivity = enumValue(v, ['normal', 'personal', 'private', 'confidential'], 'sensitivity');
        break;
      case 'showAs':
        changes.showAs = enumValue(
          v,
          ['unknown', 'free', 'tentative', 'busy', 'oof', 'workingElsewhere'],
          'freeBusyStatus',
        );
        break;
      case 'onlineMeetingProvider':
        changes.onlineMeetingProvider = enumValue(
          v,
          ['unknown', 'skypeForBusiness', 'skypeForConsumer', 'teamsForBusiness'],
          'onlineMeetingProviderType',
        );
        break;
      case 'isAllDay':
      case 'isOnlineMeeting':
      case 'isReminderOn':
      case 'hideAttendees':
      case 'responseRequested':
      case 'allowNewTimeProposals':
      case 'isCancelled':
        bool(v, key);
        changes[key] = v;
        break;
      case 'reminderMinutesBeforeStart':
        int(v, key, 0);
        changes[key] = v;
        break;
      case 'recurrence':
        changes.recurrence = recurrence(v);
        break;
      case 'categories':
        strings(v, key);
        changes[key] = v;
        break;
    }
  }
  return changes;
}

export const MESSAGE_PROPS = [
  'subject',
  'body',
  'toRecipients',
  'ccRecipients',
  'bccRecipients',
  'replyTo',
  'from',
  'importance',
  'categories',
  'isDeliveryReceiptRequested',
  'isReadReceiptRequested',
  'internetMessageHeaders',
  'flag',
  'attachments',
  'isRead',
] as const;

/** A message as sendMail, reply or PATCH /messages gives it. */
export function messageFields(body: unknown, prop: string): Json {
  const o = object(body, 'message');
  onlyKnown(o, MESSAGE_PROPS, 'message');
  const out: Json = {};
  for (const [key, v] of Object.entries(o)) {
    if (key.startsWith('@odata.')) continue;
    switch (key) {
      case 'subject':
        str(v, `${prop}.subject`);
        out.subject = v;
        break;
      case 'body':
        out.body = itemBody(v, `${prop}.body`);
        break;
      case 'toRecipients':
      case 'ccRecipients':
      case 'bccRecipients':
      case 'replyTo':
        out[key] = recipients(v, `${prop}.${key}`);
        break;
      case 'from':
        out.from = recipients([v], `${prop}.from`)[0];
        break;
      case 'importance':
        out.importance = enumValue(v, IMPORTANCE, 'importance');
        break;
      case 'categories':
        strings(v, `${prop}.categories`);
        out.categories = v;
        break;
      case 'isDeliveryReceiptRequested':
      case 'isReadReceiptRequested':
      case 'isRead':
        bool(v, `${prop}.${key}`);
        out[key] = v;
        break;
      default:
        out[key] = v;
    }
  }
  return out;
}

export const CONTACT_PROPS = [
  'givenName',
  'surname',
  'middleName',
  'nickName',
  'displayName',
  'title',
  'initials',
  'generation',
  'companyName',
  'department',
  'jobTitle',
  'officeLocation',
  'profession',
  'businessPhones',
  'homePhones',
  'mobilePhone',
  'emailAddresses',
  'imAddresses',
  'businessAddress',
  'homeAddress',
  'otherAddress',
  'birthday',
  'personalNotes',
  'categories',
  'spouseName',
  'children',
  'manager',
  'assistantName',
  'businessHomePage',
  'fileAs',
] as const;

export function contactFields(body: unknown): Json {
  const o = object(body, 'contact');
  onlyKnown(o, CONTACT_PROPS, 'contact');
  const out: Json = {};
  for (const [key, v] of Object.entries(o)) {
    if (key.startsWith('@odata.')) continue;
    if (['businessPhones', 'homePhones', 'imAddresses', 'categories', 'children'].includes(key)) strings(v, key);
    else if (key === 'emailAddresses') {
      if (!Array.isArray(v))
        throw unreadable(
          "Cannot convert the value of property 'emailAddresses' to the expected type 'Collection(microsoft.graph.emailAddress)'.",
        );
      out.emailAddresses = v.map((e, i) => emailAddress(e, `emailAddresses[${i}]`));
      continue;
    } else if (['businessAddress', 'homeAddress', 'otherAddress'].includes(key)) {
      const a = object(v, 'physicalAddress');
      onlyKnown(a, ADDRESS_PROPS, 'physicalAddress');
    } else str(v, key);
    out[key] = v;
  }
  return out;
}

const AUTO_REPLY_PROPS = [
  'status',
  'externalAudience',
  'internalReplyMessage',
  'externalReplyMessage',
  'scheduledStartDateTime',
  'scheduledEndDateTime',
];

/** A PATCH of mailboxSettings; nested settings objects are merged into the current ones. */
export function mailboxSettingsChanges(body: unknown): Json {
  const o = object(body, 'mailboxSettings');
  onlyKnown(
    o,
    [
      'automaticRepliesSetting',
      'archiveFolder',
      'timeZone',
      'language',
      'workingHours',
      'dateFormat',
      'timeFormat',
      'delegateMeetingMessageDeliveryOptions',
    ],
    'mailboxSettings',
  );
  const out: Json = {};
  for (const [key, v] of Object.entries(o)) {
    if (key.startsWith('@odata.')) continue;
    switch (key) {
      case 'automaticRepliesSetting': {
        const a = object(v, 'automaticRepliesSetting');
        onlyKnown(a, AUTO_REPLY_PROPS, 'automaticRepliesSetting');
        const c: Json = { ...a };
        if (a.status !== undefined)
          c.status = enumValue(a.status, ['disabled', 'alwaysEnabled', 'scheduled'], 'automaticRepliesStatus');
        if (a.externalAudience !== undefined)
          c.externalAudience = enumValue(a.externalAudience, ['none', 'contactsOnly', 'all'], 'externalAudienceScope');
        for (const k of ['internalReplyMessage', 'externalReplyMessage'])
          if (a[k] !== undefined) str(a[k], `automaticRepliesSetting.${k}`);
        for (const k of ['scheduledStartDateTime', 'scheduledEndDateTime']) {
          if (a[k] !== undefined) {
            const d = dateTimeTimeZone(a[k], `automaticRepliesSetting.${k}`);
            c[k] = { dateTime: normalizeLocal(d.dateTime), timeZone: d.timeZone };
          }
        }
        out.automaticRepliesSetting = c;
        break;
      }
      case 'timeZone':
        checkTimeZone(v, 'timeZone');
        out.timeZone = v;
        break;
      case 'language': {
        const l = object(v, 'localeInfo');
        onlyKnown(l, ['locale', 'displayName'], 'localeInfo');
        if (l.locale !== undefined) {
          str(l.locale, 'language.locale');
          try {
            Intl.getCanonicalLocales(l.locale as string);
          } catch {
            throw invalid(`language.locale '${asText(l.locale)}' is not a valid locale.`);
          }
        }
        out.language = l;
        break;
      }
      case 'workingHours': {
        const w = object(v, 'workingHours');
        onlyKnown(w, ['daysOfWeek', 'startTime', 'endTime', 'timeZone'], 'workingHours');
        const c: Json = { ...w };
        if (w.daysOfWeek !== undefined) {
          if (!Array.isArray(w.daysOfWeek))
            throw unreadable(
              "Cannot convert the value of property 'daysOfWeek' to the expected type 'Collection(microsoft.graph.dayOfWeek)'.",
            );
          c.daysOfWeek = w.daysOfWeek.map((d) => enumValue(d, DAYS, 'dayOfWeek'));
        }
        if (w.startTime !== undefined) timeOfDay(w.startTime, 'workingHours.startTime');
        if (w.endTime !== undefined) timeOfDay(w.endTime, 'workingHours.endTime');
        if (w.timeZone !== undefined) {
          const z = object(w.timeZone, 'timeZoneBase');
          onlyKnown(z, ['name', 'bias', 'standardOffset', 'daylightOffset'], 'timeZoneBase');
          if (z.name !== undefined) checkTimeZone(z.name, 'workingHours.timeZone.name');
        }
        out.workingHours = c;
        break;
      }
      case 'delegateMeetingMessageDeliveryOptions':
        out[key] = enumValue(
          v,
          ['sendToDelegateAndInformationToPrincipal', 'sendToDelegateAndPrincipal', 'sendToDelegateOnly'],
          'delegateMeetingMessageDeliveryOptions',
        );
        break;
      default:
        str(v, key);
        out[key] = v;
    }
  }
  return out;
}

export function todoListFields(body: unknown, create: boolean): Json {
  const o = object(body, 'todoTaskList');
  onlyKnown(o, ['displayName'], 'todoTaskList');
  if (create && (typeof o.displayName !== 'string' || !o.displayName.trim())) throw invalid('displayName is required.');
  if (o.displayName !== undefined) {
    str(o.displayName, 'displayName');
    if (!asText(o.displayName).trim()) throw invalid('displayName must not be empty.');
  }
  return { ...o };
}

export const TASK_STATUS = ['notStarted', 'inProgress', 'completed', 'waitingOnOthers', 'deferred'] as const;

export function todoTaskFields(body: unknown): Json {
  const o = object(body, 'todoTask');
  onlyKnown(
    o,
    [
      'title',
      'body',
      'categories',
      'importance',
      'status',
      'dueDateTime',
      'reminderDateTime',
      'isReminderOn',
      'startDateTime',
      'completedDateTime',
      'recurrence',
    ],
    'todoTask',
  );
  const out: Json = {};
  for (const [key, v] of Object.entries(o)) {
    if (key.startsWith('@odata.')) continue;
    switch (key) {
      case 'title':
        str(v, key);
        out.title = v;
        break;
      case 'body':
        out.body = itemBody(v, 'body');
        break;
      case 'categories':
        strings(v, key);
        out.categories = v;
        break;
      case 'importance':
        out.importance = enumValue(v, IMPORTANCE, 'importance');
        break;
      case 'status':
        out.status = enumValue(v, TASK_STATUS, 'taskStatus');
        break;
      case 'isReminderOn':
        bool(v, key);
        out.isReminderOn = v;
        break;
      case 'recurrence':
        out.recurrence = recurrence(v);
        break;
      default: {
        if (v === null) {
          out[key] = null;
          break;
        }
        const d = dateTimeTimeZone(v, key);
        out[key] = { dateTime: normalizeLocal(d.dateTime), timeZone: d.timeZone };
      }
    }
  }
  return out;
}
