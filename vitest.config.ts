import { defineConfig } from 'vitest/config';

/**
 * The test projects and the folders each runs (`npm run test:<project>`; `npm test` runs them all).
 * test/unit/test-projects.test.ts checks that every test file is in exactly one.
 */
export const projectFolders = {
  /** No service, no database, no browser (fake providers on loopback at most): seconds. */
  unit: ['test/unit', 'test/contract', 'test/fakes'],
  /** The store contract, on SQLite and on PostgreSQL. */
  store: ['test/store'],
  /** The service end to end, through the client library, against fake providers. */
  e2e: ['test/e2e'],
  /** Faults, attacks, fuzzing, load and a crash test of several minutes. */
  reliability: ['test/reliability'],
  /** The dashboard in Debian's chromium. */
  browser: ['test/browser'],
} as const;

/**
 * How long a test or hook may run before it counts as hung. A guard only, never a performance assertion (no test
 * asserts a duration): each is many times what the slowest test of its project takes on a busy machine. A test that
 * needs longer says so itself (the crash test does).
 */
const hungAfterMs: Record<keyof typeof projectFolders, number> = {
  unit: 30_000,
  store: 60_000,
  e2e: 90_000,
  reliability: 120_000,
  browser: 90_000,
};

export default defineConfig({
  test: {
    pool: 'forks',
    reporters: ['default', './test/reliability/summary-reporter.ts'],
    projects: Object.entries(projectFolders).map(([name, folders]) => ({
      extends: true as const,
      test: {
        name,
        include: folders.map((f) => `${f}/**/*.test.ts`),
        testTimeout: hungAfterMs[name as keyof typeof projectFolders],
        hookTimeout: hungAfterMs[name as keyof typeof projectFolders],
      },
    })),
  },
});
