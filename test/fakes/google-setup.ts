/**
 * Shared set-up of the drive and docs end-to-end tests: seed data for the fake Drive, and an authorization that
 * records the URL the service sent the user to (so tests can check Google's authorize parameters).
 */
import type { Harness } from '../helpers/harness.ts';
import { FOLDER, GOOGLE_DOC, GOOGLE_SHEET, type DriveFile, type FakeDrive } from './google-drive.ts';

export interface DriveSeed {
  reports: DriveFile;
  pdf: DriveFile;
  notes: DriveFile;
  sheet: DriveFile;
  nativeDoc: DriveFile;
  trashed: DriveFile;
  shared: DriveFile;
  quoted: DriveFile;
}

export function seedDrive(drive: FakeDrive): DriveSeed {
  const reports = drive.addFile({ name: 'Reports', mimeType: FOLDER });
  return {
    reports,
    pdf: drive.addFile({
      name: 'Q3 report.pdf',
      mimeType: 'application/pdf',
      parents: [reports.id],
      content: '%PDF-1.4 The quarterly plan: revenue grew 12%.',
    }),
    notes: drive.addFile({
      name: 'notes.txt',
      mimeType: 'text/plain',
      content: 'Meeting notes. The quarterly plan is ready for review.',
    }),
    sheet: drive.addFile({ name: 'Budget 2026', mimeType: GOOGLE_SHEET, text: 'budget quarterly totals' }),
    nativeDoc: drive.addFile({
      name: 'Roadmap',
      mimeType: GOOGLE_DOC,
      parents: [reports.id],
      text: 'plan for the year',
    }),
    trashed: drive.addFile({
      name: 'old report.txt',
      mimeType: 'text/plain',
      content: 'An old quarterly plan.',
      trashed: true,
    }),
    shared: drive.addFile({
      name: 'Team plan.txt',
      mimeType: 'text/plain',
      content: 'Shared drive: quarterly plan of the team.',
      driveId: 'sd-1',
      parents: ['sd-1'],
    }),
    quoted: drive.addFile({
      name: "O'Brien notes.txt",
      mimeType: 'text/plain',
      content: "O'Brien wrote the back\\slash guide.",
    }),
  };
}

/**
 * Connects an account through the authorization link like a browser would, and returns the provider authorize
 * URL the service redirected to.
 */
export async function authorizeCapturing(
  h: Harness,
  connectionName: string,
  identifier: string,
): Promise<{ accountId: string; authorize: URL }> {
  const { link, connected_account_id } = await h.client.getAuthorizationLink({ connectionName, identifier });
  const start = await fetch(link, { redirect: 'manual' });
  if (start.status !== 302) throw new Error(`link answered ${start.status}: ${await start.text()}`);
  const authorize = new URL(start.headers.get('location')!);
  const consentUrl = new URL(authorize);
  consentUrl.searchParams.set('fake_user', identifier);
  const consent = await fetch(consentUrl, { redirect: 'manual' });
  if (consent.status !== 302) throw new Error(`authorize answered ${consent.status}: ${await consent.text()}`);
  const callback = await fetch(consent.headers.get('location')!, { redirect: 'manual' });
  if (callback.status !== 200) throw new Error(`callback answered ${callback.status}: ${await callback.text()}`);
  return { accountId: connected_account_id, authorize };
}
