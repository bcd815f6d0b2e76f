/**
 * Loaded into a service by bench/survivors.ts (`node --import bench/survivors-preload.mjs …`). The first SIGUSR2
 * starts V8's sampling heap profiler told to leave out what young-generation collections (scavenges) free, so that
 * what it keeps is what outlived them: objects still alive, and objects that were moved to the old generation and
 * died there. The second SIGUSR2 stops it and writes the profile as JSON to ACS_SURVIVORS_FILE.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import process from 'node:process';

const file = process.env.ACS_SURVIVORS_FILE;
const interval = Number(process.env.ACS_SURVIVORS_INTERVAL ?? 4096);
if (file) {
  const session = new Session();
  session.connect();
  let sampling = false;
  const fail = (error) => {
    if (error) writeFileSync(file, JSON.stringify({ error: String(error.message ?? error) }));
    return Boolean(error);
  };
  process.on('SIGUSR2', () => {
    if (!sampling) {
      sampling = true;
      session.post('HeapProfiler.enable', (error) => {
        if (fail(error)) return;
        session.post(
          'HeapProfiler.startSampling',
          {
            samplingInterval: interval,
            includeObjectsCollectedByMinorGC: false,
            includeObjectsCollectedByMajorGC: true,
          },
          fail,
        );
      });
    } else {
      session.post('HeapProfiler.stopSampling', (error, result) => {
        if (!fail(error)) writeFileSync(file, JSON.stringify(result.profile));
      });
    }
  });
}
