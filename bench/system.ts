/**
 * What the bench reads from Linux and the tools it needs: CPU pinning (taskset), per-process CPU and memory
 * from /proc, per-core busy time, free ports, and the native tools (wrk, curl, taskset).
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';

/** Clock ticks per second of the times in /proc/<pid>/stat and /proc/stat. */
export const CLK_TCK = (() => {
  const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const n = Number(r.stdout?.trim());
  return Number.isInteger(n) && n > 0 ? n : 100;
})();

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A command-line option that must be a whole number ≥ 1, as `--name`'s value `raw`. */
export function wholeOption(name: string, raw: string | number | undefined): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a whole number ≥ 1, got "${raw}"`);
  return n;
}

export const median = (xs: number[]): number => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** The fields of /proc/<pid>/stat after the command name (which may contain spaces), from field 3 (state) on. */
function statFields(pid: number | 'self'): string[] {
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return s.slice(s.lastIndexOf(')') + 2).split(' ');
}

/** The pids whose parent is `pid` (from each process's /proc/<pid>/stat, field 4). */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (Number(statFields(Number(name))[1]) === pid) out.push(Number(name));
    } catch {
      // exited while the list was read
    }
  }
  return out;
}

/** User + system CPU of a process (all its threads), in µs: utime and stime, fields 14 and 15. */
export function processCpuMicros(pid: number): number {
  const f = statFields(pid);
  return ((Number(f[11]) + Number(f[12])) * 1e6) / CLK_TCK;
}

/**
 * CPU of this process's children that have exited and been reaped (cutime and cstime), in µs: read before and
 * after a wrk run, the difference is wrk's own CPU.
 */
export function reapedChildrenCpuMicros(): number {
  const f = statFields('self');
  return ((Number(f[13]) + Number(f[14])) * 1e6) / CLK_TCK;
}

/** Busy time of one core (everything but idle and iowait), in µs. */
export function coreBusyMicros(core: number): number {
  const line = readFileSync('/proc/stat', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`cpu${core} `));
  if (!line) throw new Error(`/proc/stat has no line for cpu${core}`);
  const [user, nice, system, , , irq, softirq, steal] = line.split(/\s+/).slice(1).map(Number);
  return ((user! + nice! + system! + irq! + softirq! + steal!) * 1e6) / CLK_TCK;
}

function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`/proc/${pid}/status has no ${field}`);
  return Number(m[1]);
}

export const rssMb = (pid: number) => statusKb(pid, 'VmRSS') / 1024;
/** Peak RSS since the process started or since the last resetPeakRss. */
export const peakRssMb = (pid: number) => statusKb(pid, 'VmHWM') / 1024;
/** Sets VmHWM back to the current RSS (Linux clear_refs, value 5), so the next peak is that of what follows. */
export function resetPeakRss(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

/** The bench's children still running: killed when the bench exits, however it exits. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Starts a command on one core (or a core list such as `0,1`): taskset execs it, so the child's pid is the
 * command's own. A bench script that fails half-way (a service that answers wrongly, say) leaves none of them
 * running: a fake upstream or a service left behind would take CPU from every later measurement on the machine.
 */
export function spawnOnCore(
  core: number | string,
  command: string,
  args: string[],
  opts: SpawnOptions = {},
): ChildProcess {
  const child = spawn('taskset', ['-c', String(core), command, ...args], opts);
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/** Moves this process (every thread) onto one core. */
export function pinSelf(core: number): void {
  pin(process.pid, core);
}

/** Moves a running process, every thread of it, onto a core or a core list (`0,1`); its later threads follow. */
export function pin(pid: number, cores: number | string): void {
  const r = spawnSync('taskset', ['-a', '-p', '-c', String(cores), String(pid)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`taskset could not pin process ${pid} to core ${cores}: ${r.stderr || r.error}`);
}

/**
 * Starts one of the bench's helper scripts (`bench/upstream.ts`, `bench/baseline.ts`) of the checkout at `root` on
 * a core, and waits for the message it sends over IPC once it listens; fails if it exits first. `launcher` and
 * `nodeFlags` as for startService (bench/service.ts).
 */
export async function startHelper(
  core: number | string,
  root: string,
  script: string,
  args: string[],
  launcher: string[] = [],
  nodeFlags: string[] = [],
): Promise<ChildProcess> {
  const [command, ...launcherArgs] = [...launcher, process.execPath];
  const child = spawnOnCore(
    core,
    command,
    [...launcherArgs, ...nodeFlags, '--import', 'tsx', join(root, script), ...args],
    {
      cwd: root,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`${script} exited (code ${code}) before it was ready`)));
  });
  return child;
}

export async function stop(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

function has(command: string, args: string[]): boolean {
  const r = spawnSync(command, args, { stdio: 'ignore' });
  return !r.error;
}

/**
 * The native tools the bench drives and pins with: wrk (load), curl (streaming), taskset (pinning), and the `extra`
 * ones a script needs besides. As root with apt-get, the missing ones are
 * installed; otherwise the bench stops and says how to get them.
 */
export function ensureTools(extra: ReadonlyArray<{ command: string; probe: string[]; pkg: string }> = []): void {
  const tools = [
    { command: 'wrk', probe: ['-v'], pkg: 'wrk' },
    { command: 'curl', probe: ['--version'], pkg: 'curl' },
    { command: 'taskset', probe: ['-V'], pkg: 'util-linux' },
    ...extra,
  ];
  let missing = tools.filter((t) => !has(t.command, t.probe));
  if (!missing.length) return;
  const pkgs = missing.map((t) => t.pkg);
  if (process.getuid?.() === 0 && has('apt-get', ['--version'])) {
    console.error(`missing ${missing.map((t) => t.command).join(', ')}; installing with apt-get: ${pkgs.join(' ')}`);
    const install = () => spawnSync('apt-get', ['install', '-y', '-q', ...pkgs], { stdio: 'inherit' }).status === 0;
    if (!install()) {
      spawnSync('apt-get', ['update', '-q'], { stdio: 'inherit' });
      install();
    }
    missing = missing.filter((t) => !has(t.command, t.probe));
    if (!missing.length) return;
  }
  throw new Error(
    `The bench needs ${missing.map((t) => t.command).join(', ')}: native tools (wrk so that the load generator does ` +
      `not compete in JavaScript for the cores it measures). Install them (Debian/Ubuntu: \`sudo apt-get install ` +
      `${missing.map((t) => t.pkg).join(' ')}\`) and run the bench again.`,
  );
}

export function machineDescription(): string {
  const cpu = readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.+)/)?.[1] ?? 'unknown CPU';
  const cores = readFileSync('/proc/cpuinfo', 'utf8').match(/^processor\s*:/gm)?.length ?? 0;
  const memGiB = Number(/MemTotal:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1] ?? 0) / 2 ** 20;
  const kernel = readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim();
  const wrk = spawnSync('wrk', ['-v'], { encoding: 'utf8' }).stdout.split('\n')[0]?.split(' Copyright')[0] ?? 'wrk';
  return `${cores} × ${cpu}, ${Math.round(memGiB)} GiB, Node ${process.version}, Linux ${kernel}, ${wrk.trim()}`;
}
