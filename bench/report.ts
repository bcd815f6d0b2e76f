/** The bench's figures, and their Markdown: medians with ratios to the baseline, every round, and the targets. */
import { median } from './system.ts';

export interface RoundResult {
  round: number;
  /** "baseline", or "<scenario>:<version>". */
  key: string;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  requests: number;
  /** CPU of the process under test per request, µs. */
  cpuUs: number;
  /** Share of one core the process under test used during the run. */
  busyPct: number;
  /** Share of the test core used by anything else (other work on the machine) during the run. */
  otherOnTestCorePct: number;
  /** Share of the load core used by wrk and the fake upstream during the run. */
  loadCorePct: number;
}

export interface Transfer {
  mbps: number;
  /** Peak RSS of the process under test during the transfer, minus its RSS before it. */
  rssGrowthMb: number;
  cpuUsPerMb: number;
}

export interface Report {
  date: string;
  machine: string;
  loadavg: number[];
  settings: {
    rounds: number;
    seconds: number;
    warmupSeconds: number;
    connections: number;
    loadCore: number;
    testCore: number;
    streamMb: number;
    streamRuns: number;
    starts: number;
  };
  /** Labels; the last is the working tree ("current"), the first the --compare ref if any. */
  versions: string[];
  rounds: RoundResult[];
  /** Per version, every start: spawn to the first successful /health (ms), and the CPU used until then (ms). */
  coldStarts: Record<string, Array<{ ms: number; cpuMs: number }>>;
  /** The same, started again on the data directory of the first start (absent from reports before 2026-11-24). */
  restarts?: Record<string, Array<{ ms: number; cpuMs: number }>>;
  idleRssMb: Record<string, number>;
  loadRssMb: Record<string, number>;
  baselineLoadRssMb: number;
  streams: Array<{ run: number; kind: 'download' | 'upload'; key: string } & Transfer>;
  /** Per version: µs per dry-run call of each tool, or why it could not be measured. */
  dryRun: Record<
    string,
    | {
        /** The median of the passes. */
        tools: Record<string, { cpu: number; wall: number }>;
        passes: Array<Record<string, { cpu: number; wall: number }>>;
      }
    | { error: string }
  >;
  seconds: number;
}

const SCENARIO: Record<string, string> = {
  baseline: 'bare pass-through (baseline)',
  proxy: 'proxy GET',
  tool: 'tool call helpdesk_ticket_get',
};

const f = (n: number | undefined, digits = 0) => (n === undefined || Number.isNaN(n) ? '—' : n.toFixed(digits));
const x = (n: number) => `${n.toFixed(2)}×`;

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(3, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(rows[0]!), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.slice(1).map(line)].join('\n');
}

export interface Medians {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  cpuUs: number;
  errors: number;
}

export function medians(report: Report, key: string): Medians {
  const rs = report.rounds.filter((r) => r.key === key);
  return {
    rps: median(rs.map((r) => r.rps)),
    p50Ms: median(rs.map((r) => r.p50Ms)),
    p99Ms: median(rs.map((r) => r.p99Ms)),
    cpuUs: median(rs.map((r) => r.cpuUs)),
    errors: rs.reduce((n, r) => n + r.errors, 0),
  };
}

/**
 * `key` ÷ `against`, per round, then the median of those: the two ran back to back in each round, so a change in
 * what else the machine was doing between rounds cancels out.
 */
export function ratios(report: Report, key: string, against: string): Omit<Medians, 'errors'> {
  const pairs = report.rounds
    .filter((r) => r.key === key)
    .map((r) => [r, report.rounds.find((o) => o.key === against && o.round === r.round)!] as const);
  const m = (field: 'rps' | 'p50Ms' | 'p99Ms' | 'cpuUs') => median(pairs.map(([a, b]) => a[field] / b[field]));
  return { rps: m('rps'), p50Ms: m('p50Ms'), p99Ms: m('p99Ms'), cpuUs: m('cpuUs') };
}

interface Check {
  target: string;
  figure: string;
  met: boolean;
}

/** The performance targets of the issue, for one version, from this run's figures. */
export function targets(report: Report, version: string): Check[] {
  const proxy = ratios(report, `proxy:${version}`, 'baseline');
  const tool = ratios(report, `tool:${version}`, 'baseline');
  const checks: Check[] = [
    { target: 'proxy GET throughput ≥ 0.6× baseline', figure: x(proxy.rps), met: proxy.rps >= 0.6 },
    { target: 'proxy GET CPU per request ≤ 1.6× baseline', figure: x(proxy.cpuUs), met: proxy.cpuUs <= 1.6 },
    { target: 'proxy GET p99 ≤ 2× baseline', figure: x(proxy.p99Ms), met: proxy.p99Ms <= 2 },
    { target: 'tool call throughput ≥ 0.3× baseline', figure: x(tool.rps), met: tool.rps >= 0.3 },
    { target: 'tool call CPU per request ≤ 3.5× baseline', figure: x(tool.cpuUs), met: tool.cpuUs <= 3.5 },
  ];
  const dry = report.dryRun[version];
  if (dry && 'tools' in dry) {
    for (const [tool, us] of Object.entries(dry.tools)) {
      checks.push({
        target: `dry run ${tool} ≤ 50 µs per call (CPU)`,
        figure: `${f(us.cpu, 1)} µs`,
        met: us.cpu <= 50,
      });
    }
  }
  const idle = report.idleRssMb[version]!;
  const loaded = report.loadRssMb[version]!;
  const cold = median(report.coldStarts[version]!.map((c) => c.ms));
  checks.push(
    { target: 'idle RSS ≤ 80 MB', figure: `${f(idle)} MB`, met: idle <= 80 },
    { target: 'RSS under load ≤ 150 MB', figure: `${f(loaded)} MB`, met: loaded <= 150 },
    {
      target: 'cold start to first /health ≤ 400 ms (median), first start on an empty store',
      figure: `${f(cold)} ms`,
      met: cold <= 400,
    },
  );
  const again = report.restarts?.[version];
  if (again?.length) {
    const ms = median(again.map((c) => c.ms));
    checks.push({
      target: 'cold start to first /health ≤ 400 ms (median), restart on the store it left',
      figure: `${f(ms)} ms`,
      met: ms <= 400,
    });
  }
  // Run 0 is the warm-up (bench/run.ts): listed, not judged.
  const runs = report.streams.filter((s) => s.key === version && s.run > 0);
  const speed = runs.map((s) => {
    const b = report.streams.find((o) => o.key === 'baseline' && o.run === s.run && o.kind === s.kind)!;
    return s.mbps / b.mbps;
  });
  const growth = runs.map((s) => s.rssGrowthMb);
  checks.push(
    {
      target: `streaming ${report.settings.streamMb} MB ≥ 0.8× baseline MB/s, every run`,
      figure: `${x(Math.min(...speed))} (lowest of ${runs.length})`,
      met: speed.every((r) => r >= 0.8),
    },
    {
      target: `streaming RSS growth < 50 MB, every run`,
      figure: `${f(Math.max(...growth), 1)} MB (highest of ${runs.length})`,
      met: growth.every((g) => g < 50),
    },
  );
  return checks;
}

export function markdown(report: Report): string {
  const s = report.settings;
  const out: string[] = [];
  const current = report.versions[report.versions.length - 1]!;
  const ref = report.versions.length > 1 ? report.versions[0] : undefined;
  out.push(
    `## ${report.date.slice(0, 16).replace('T', ' ')} UTC — ${report.versions.join(' vs ')}`,
    '',
    `Machine: ${report.machine}. Load average at the end: ${report.loadavg.map((l) => l.toFixed(2)).join(', ')}.`,
    `wrk and the fake upstream on core ${s.loadCore}, the process under test on core ${s.testCore}; ` +
      `${s.connections} connections, ${s.rounds} alternating rounds of ${s.seconds} s after a ${s.warmupSeconds} s warm-up; ` +
      `run took ${f(report.seconds)} s.`,
    '',
    `### Load: medians of ${s.rounds} rounds`,
    '',
    'Figures are the medians of the rounds; a ratio is the median of the per-round ratios (the scenarios of one ' +
      'round ran back to back, so a change in what else the machine was doing between rounds cancels out).',
    '',
  );
  const rows = [
    [
      'Scenario',
      'Version',
      'req/s',
      'p50 (ms)',
      'p99 (ms)',
      'CPU/request (µs)',
      'req/s ÷ baseline',
      'CPU ÷ baseline',
      'p99 ÷ baseline',
      'errors',
    ],
  ];
  const keys = ['baseline', ...['proxy', 'tool'].flatMap((sc) => report.versions.map((v) => `${sc}:${v}`))];
  for (const key of keys) {
    const m = medians(report, key);
    const q = ratios(report, key, 'baseline');
    const [scenario, version] = key.split(':');
    rows.push([
      SCENARIO[scenario!]!,
      version ?? '—',
      f(m.rps),
      f(m.p50Ms, 2),
      f(m.p99Ms, 2),
      f(m.cpuUs),
      x(q.rps),
      x(q.cpuUs),
      x(q.p99Ms),
      String(m.errors),
    ]);
  }
  out.push(table(rows), '');

  if (ref) {
    out.push(`### ${current} ÷ ${ref}`, '');
    const cmp = [['Scenario', 'req/s', 'p50', 'p99', 'CPU/request']];
    for (const sc of ['proxy', 'tool']) {
      const q = ratios(report, `${sc}:${current}`, `${sc}:${ref}`);
      cmp.push([SCENARIO[sc]!, x(q.rps), x(q.p50Ms), x(q.p99Ms), x(q.cpuUs)]);
    }
    out.push(table(cmp), '');
  }

  out.push(
    '### Every round',
    '',
    '"busy": share of its core the process under test used; "other": CPU time other processes took on the test ' +
      'core during the run (work outside the bench); "load core": wrk and the fake upstream together (at 100 % the ' +
      'load side, not the process under test, would be the limit).',
    '',
  );
  const every = [
    [
      'Round',
      'Scenario',
      'Version',
      'req/s',
      'p50 (ms)',
      'p99 (ms)',
      'CPU/request (µs)',
      'req/s ÷ baseline',
      'CPU ÷ baseline',
      'busy',
      'other',
      'load core',
      'errors',
    ],
  ];
  for (const r of report.rounds) {
    const [scenario, version] = r.key.split(':');
    const b = report.rounds.find((o) => o.key === 'baseline' && o.round === r.round)!;
    every.push([
      String(r.round),
      SCENARIO[scenario!]!,
      version ?? '—',
      f(r.rps),
      f(r.p50Ms, 2),
      f(r.p99Ms, 2),
      f(r.cpuUs),
      x(r.rps / b.rps),
      x(r.cpuUs / b.cpuUs),
      `${f(r.busyPct)} %`,
      `${f(r.otherOnTestCorePct)} %`,
      `${f(r.loadCorePct)} %`,
      String(r.errors),
    ]);
  }
  out.push(table(every), '');

  out.push('### Memory, start, dry run', '');
  const mem = [['Measure', ...report.versions]];
  mem.push(['idle RSS after setup (MB)', ...report.versions.map((v) => f(report.idleRssMb[v], 1))]);
  mem.push([
    `peak RSS during the load rounds (MB; baseline ${f(report.baselineLoadRssMb, 1)})`,
    ...report.versions.map((v) => f(report.loadRssMb[v], 1)),
  ]);
  mem.push([
    `first start (empty data directory) to first /health, median of ${s.starts} (ms)`,
    ...report.versions.map((v) => f(median(report.coldStarts[v]!.map((c) => c.ms)))),
  ]);
  mem.push([
    'cold starts, each (ms)',
    ...report.versions.map((v) => report.coldStarts[v]!.map((c) => f(c.ms)).join(', ')),
  ]);
  mem.push([
    'CPU used until the first /health, each (ms)',
    ...report.versions.map((v) => report.coldStarts[v]!.map((c) => f(c.cpuMs)).join(', ')),
  ]);
  if (report.restarts) {
    const restarts = report.restarts;
    mem.push([
      `restart (same data directory) to first /health, median of ${s.starts} (ms)`,
      ...report.versions.map((v) => f(median(restarts[v]!.map((c) => c.ms)))),
    ]);
    mem.push(['restarts, each (ms)', ...report.versions.map((v) => restarts[v]!.map((c) => f(c.ms)).join(', '))]);
    mem.push([
      'CPU used until the first /health on restart, each (ms)',
      ...report.versions.map((v) => restarts[v]!.map((c) => f(c.cpuMs)).join(', ')),
    ]);
  }
  const tools = [...new Set(Object.values(report.dryRun).flatMap((d) => ('tools' in d ? Object.keys(d.tools) : [])))];
  for (const tool of tools) {
    mem.push([
      `dry run ${tool}, in process, median of 2 passes (µs/call: CPU / wall)`,
      ...report.versions.map((v) => {
        const d = report.dryRun[v]!;
        return 'tools' in d && d.tools[tool] ? `${f(d.tools[tool].cpu, 1)} / ${f(d.tools[tool].wall, 1)}` : 'n/a';
      }),
    ]);
  }
  out.push(table(mem), '');
  for (const v of report.versions) {
    const d = report.dryRun[v]!;
    if ('error' in d) out.push(`Dry run of ${v} could not be measured: ${d.error}`, '');
  }

  out.push(`### Streaming ${s.streamMb} MB through the proxy, every run`, '');
  const st = [['Run', 'Direction', 'Through', 'MB/s', '÷ baseline', 'RSS growth (MB)', 'CPU (µs/MB)']];
  for (const t of report.streams) {
    const b = report.streams.find((o) => o.key === 'baseline' && o.run === t.run && o.kind === t.kind)!;
    st.push([
      t.run === 0 ? 'warm-up' : String(t.run),
      t.kind,
      t.key,
      f(t.mbps),
      x(t.mbps / b.mbps),
      f(t.rssGrowthMb, 1),
      f(t.cpuUsPerMb),
    ]);
  }
  out.push(table(st), '');

  for (const v of report.versions) {
    out.push(`### Targets: ${v}`, '');
    out.push(
      table([
        ['Target', 'Figure', 'Met'],
        ...targets(report, v).map((c) => [c.target, c.figure, c.met ? 'met' : 'NOT met']),
      ]),
      '',
    );
  }
  return out.join('\n');
}
