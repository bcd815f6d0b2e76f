/**
 * What `npm start` says when the service cannot start: one line naming the setting and what is wrong with it,
 * instead of a stack trace. Errors it does not recognise are left to the caller (a stack trace is then the most
 * useful thing to show).
 */
import { ConfigError } from './config.ts';

/** `postgres://user:secret@host:5432/db` without its password, for a message. */
export function withoutPassword(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(an unparseable URL)';
  }
}

const CONNECTION_CODES: Record<string, string> = {
  ECONNREFUSED: 'nothing is listening there',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name could not be resolved (DNS)',
  ETIMEDOUT: 'the connection timed out',
  EHOSTUNREACH: 'the host is unreachable',
  ECONNRESET: 'the server closed the connection',
};

/** PostgreSQL's own refusals (SQLSTATE), as an operator would fix them. */
const POSTGRES_CODES: Record<string, string> = {
  '28P01': 'the password was refused',
  '28000': 'the user may not connect (pg_hba.conf)',
  '3D000': 'the database does not exist',
  '42501': 'the user lacks a privilege the service needs (CREATE on the database or schema)',
  '57P03': 'the server is starting up or shutting down',
};

/** One line for a start-up failure the operator can fix, or undefined. */
export function describeStartupError(e: unknown, env: NodeJS.ProcessEnv): string | undefined {
  if (e instanceof ConfigError) return e.message;
  const err = (e ?? {}) as {
    code?: string;
    message?: string;
    syscall?: string;
    port?: number;
    address?: string;
    hostname?: string;
  };
  const host = env.HOST || '127.0.0.1';
  if (err.syscall === 'getaddrinfo' && err.hostname === host) {
    return `HOST "${host}" does not resolve to an address (${err.code}): set it to an address of this machine, such as 127.0.0.1 or 0.0.0.0`;
  }
  if (err.code === 'EADDRNOTAVAIL' && err.syscall === 'listen') {
    return `HOST "${host}" is not an address of this machine (EADDRNOTAVAIL): use one of its addresses, or 0.0.0.0 for all`;
  }
  if (err.code === 'EADDRINUSE') {
    return `PORT ${err.port ?? env.PORT ?? ''} is already in use on ${err.address ?? env.HOST ?? '127.0.0.1'}: stop what uses it, or set PORT to another port`;
  }
  if (err.code === 'EACCES' && err.syscall === 'listen') {
    return `PORT ${err.port ?? env.PORT ?? ''} needs privileges this process does not have: use a port above 1023`;
  }
  if (env.DATABASE_URL) {
    const reason = (err.code && (CONNECTION_CODES[err.code] ?? POSTGRES_CODES[err.code])) || undefined;
    if (reason)
      return `DATABASE_URL: cannot use PostgreSQL at ${withoutPassword(env.DATABASE_URL)}: ${reason} (${err.code})`;
  }
  if (
    err.code &&
    ['EACCES', 'EROFS', 'ENOSPC', 'EPERM', 'ENOTDIR', 'EISDIR'].includes(err.code) &&
    (!env.DATABASE_URL || !env.ENCRYPTION_KEYS)
  ) {
    return `DATA_DIR: cannot write under ${env.DATA_DIR || './data'} (${err.code}: ${err.message ?? ''})`;
  }
  return undefined;
}
