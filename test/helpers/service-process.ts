/** The service in a process of its own, as `npm start` runs it: for tests that kill it or measure it alone. */
import { spawn, type ChildProcess } from 'node:child_process';

export interface ServiceProcess {
  proc: ChildProcess;
  /** Where it listens, read from its startup log line. */
  url: string;
  /** Everything it wrote, stdout and stderr, as it came (stderr only when collected). */
  output: string[];
  exited: Promise<number | null>;
}

const STARTED = 'agent connector service started';
/** A guard against a start that hangs, not an expectation of how long a start takes. */
const START_GUARD_MS = 120_000;

/**
 * Starts `runtime/main.ts` with exactly `env`, and resolves once the service listens. With PORT=0 the system picks
 * the port, and the address comes from the startup log line, so LOG_LEVEL must let `info` through. A process that
 * exits first rejects, with its output.
 */
export function spawnService(
  env: NodeJS.ProcessEnv,
  opts: {
    stderr?: 'collect' | 'inherit';
    /** Node's arguments; the TypeScript sources through tsx by default. */ args?: string[];
  } = {},
): Promise<ServiceProcess> {
  const proc = spawn(process.execPath, opts.args ?? ['--import', 'tsx', 'runtime/main.ts'], {
    cwd: process.cwd(),
    env,
    stdio: ['ignore', 'pipe', opts.stderr === 'inherit' ? 'inherit' : 'pipe'],
  });
  const output: string[] = [];
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  proc.stdout!.setEncoding('utf8');
  proc.stderr?.setEncoding('utf8');
  proc.stderr?.on('data', (d: string) => output.push(d));
  return new Promise((resolve, reject) => {
    let started = false;
    let partial = '';
    const guard = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`the service did not start: ${output.join('')}`));
    }, START_GUARD_MS);
    proc.stdout!.on('data', (d: string) => {
      output.push(d);
      if (started) return;
      const lines = (partial + d).split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        const entry = parseLogLine(line);
        if (entry?.msg !== STARTED || typeof entry.listen !== 'string') continue;
        started = true;
        clearTimeout(guard);
        resolve({ proc, url: `http://${entry.listen}`, output, exited });
        return;
      }
    });
    void exited.then((code) => {
      clearTimeout(guard);
      if (!started) reject(new Error(`the service exited with ${code}: ${output.join('')}`));
    });
  });
}

function parseLogLine(line: string): { msg?: unknown; listen?: unknown } | undefined {
  try {
    return JSON.parse(line) as { msg?: unknown; listen?: unknown };
  } catch {
    return undefined;
  }
}
