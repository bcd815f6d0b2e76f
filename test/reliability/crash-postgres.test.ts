/**
 * The crash test on PostgreSQL (issue 12): the same scenario as on SQLite (crash-scenario.ts), the service killed
 * with SIGKILL mid-load on a fresh schema of the test database; no acknowledged write may be lost.
 */
import { describeCrashSuite } from './crash-scenario.ts';

describeCrashSuite('postgres');
