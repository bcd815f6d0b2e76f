/**
 * runtime/stdout.ts, the writer of the service's stdout: a full pipe keeps lines in a bounded backlog, written
 * once the reader reads again, in order; a reader that has gone makes every later write a no-op; neither blocks
 * the process's exit. Each case runs in a child process whose stdout is a pipe this test holds.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const writer = fileURLToPath(new URL('../../runtime/stdout.ts', import.meta.url));

/** Runs `body` (with `stdout`, the writer of fd 1) in a child; resolves with its exit code, stdout and stderr. */
function child(
  body: string,
  readStdout: (stdout: NodeJS.ReadableStream, kill: () => void) => void,
): Promise<{ code: number | null; stderr: string }> {
  const script = `import { processStdout } from ${JSON.stringify(writer)};\nconst stdout = processStdout();\n${body}`;
  const p = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  p.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  readStdout(p.stdout, () => p.kill('SIGKILL'));
  return new Promise((resolve) => p.once('exit', (code) => resolve({ code, stderr })));
}

it('writes every line in order through a pipe that fills, and exits once they are out', async () => {
  let out = '';
  const { code, stderr } = await child(
    // 4 MB in lines of 1 KB, far more than a pipe holds (64 KB): most of it waits in the backlog.
    `const line = 'x'.repeat(1000);\nfor (let i = 0; i < 4000; i++) stdout.write(i + ' ' + line + '\\n');\nprocess.stderr.write('written\\n');`,
    (stdout) => {
      stdout.pause();
      // The reader starts reading only after the child has written everything.
      setTimeout(() => {
        stdout.setEncoding('utf8');
        stdout.on('data', (d: string) => (out += d));
        stdout.resume();
      }, 300);
    },
  );
  expect(stderr).toBe('written\n');
  expect(code).toBe(0);
  const lines = out.trimEnd().split('\n');
  expect(lines).toHaveLength(4000);
  expect(lines.every((l, i) => l.startsWith(`${i} `))).toBe(true);
});

it('drops lines past its bound while the pipe stays full, and says how many once it can', async () => {
  let out = '';
  const { code } = await child(
    // 12 MB against an 8 MB backlog; then a timer keeps the child alive until the reader reads.
    `const line = 'y'.repeat(1023) + '\\n';\nfor (let i = 0; i < 12 * 1024; i++) stdout.write(line);\nsetTimeout(() => {}, 1500);`,
    (stdout) => {
      stdout.pause();
      setTimeout(() => {
        stdout.setEncoding('utf8');
        stdout.on('data', (d: string) => (out += d));
        stdout.resume();
      }, 500);
    },
  );
  expect(code).toBe(0);
  const written = out.split('\n').filter((l) => l.startsWith('y')).length;
  expect(written).toBeLessThan(12 * 1024);
  expect(written).toBeGreaterThan(7 * 1024);
  expect(out).toMatch(/stdout was full: (\d+) line\(s\) dropped/);
  const dropped = Number(/stdout was full: (\d+) line/.exec(out)![1]);
  expect(written + dropped).toBe(12 * 1024);
});

it('goes quiet once the reader has gone, and the process still exits', async () => {
  const { code, stderr } = await child(
    `setTimeout(() => {\n  for (let i = 0; i < 1000; i++) stdout.write('after the reader left ' + i + '\\n');\n  process.stderr.write('gone=' + stdout.gone + '\\n');\n}, 300);`,
    (stdout) => {
      (stdout as NodeJS.ReadableStream & { destroy(): void }).destroy();
    },
  );
  expect(stderr).toBe('gone=true\n');
  expect(code).toBe(0);
});
