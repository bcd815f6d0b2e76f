import pino, { type Logger } from 'pino';
import { processStdout } from './stdout.ts';

/**
 * Paths pino replaces with "[REDACTED]". Log calls never pass credentials on purpose; this is the second
 * line of defence for objects that might carry them (request headers, provider bodies, errors).
 */
export const REDACT_PATHS = [
  'authorization',
  'headers.authorization',
  'headers.cookie',
  'headers["x-api-key"]',
  'headers["set-cookie"]',
  'req.headers.authorization',
  'req.headers.cookie',
  '*.access_token',
  '*.refresh_token',
  '*.client_secret',
  '*.api_token',
  '*.api_key',
  '*.password',
  '*.token',
  'access_token',
  'refresh_token',
  'client_secret',
  'password',
  'code_verifier',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      formatters: { level: (label) => ({ level: label }) },
    },
    // stdout through our writer, not pino's default: see runtime/stdout.ts (SIGTERM once stdout's reader is gone).
    destination ?? processStdout(),
  );
}

export type { Logger };
