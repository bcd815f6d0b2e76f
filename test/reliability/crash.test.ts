/** The crash test on SQLite (the embedded default); the scenario is in crash-scenario.ts. */
import { describeCrashSuite } from './crash-scenario.ts';

describeCrashSuite('sqlite');
