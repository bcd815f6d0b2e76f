/**
 * A minimal fake of the scraping platform's (Apify API v2) synchronous Actor run for one Actor, the profile
 * scraper `harvestapi/linkedin-profile-scraper`: `POST /v2/acts/harvestapi~linkedin-profile-scraper/
 * run-sync-get-dataset-items` with `Authorization: Bearer <token>` and the Actor input as a JSON body; it
 * answers 201 with the run's dataset items as a bare JSON array, and errors as `{error: {type, message}}`.
 *
 * The Actor input is checked strictly (`urls` required, `profileScraperMode` one of the Actor's modes, no
 * other keys) so a body mapping mistake fails a test.
 */
import express, { type Request, type Response } from 'express';
import { listen, type Listening } from './listen.ts';

export const PROFILE_SCRAPER = 'harvestapi~linkedin-profile-scraper';
export const MODE_NO_EMAIL = 'Profile details no email ($4 per 1k)';
export const MODE_EMAIL = 'Profile details + email search ($10 per 1k)';

export interface ApifyRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

export class FakeApifyProfileScraper {
  readonly requests: ApifyRequest[] = [];
  private listening!: Listening;

  constructor(readonly token: string) {}

  get url(): string {
    return this.listening.url;
  }

  async start(): Promise<this> {
    const app = express();
    app.disable('x-powered-by');
    app.use(express.json({ limit: '1mb', type: () => true }));
    app.post('/v2/acts/:actorId/run-sync-get-dataset-items', (req, res) => this.runSync(req, res));
    app.use((req: Request, res: Response) => {
      this.requests.push({ method: req.method, path: req.path, headers: req.headers, body: req.body });
      this.error(res, 404, 'page-not-found', 'We have bad news: there is no API endpoint at this URL.');
    });
    this.listening = await listen(app);
    return this;
  }

  close(): Promise<void> {
    return this.listening.close();
  }

  private error(res: Response, status: number, type: string, message: string) {
    res.status(status).json({ error: { type, message } });
  }

  private runSync(req: Request, res: Response) {
    this.requests.push({ method: req.method, path: req.path, headers: req.headers, body: req.body });
    if (req.headers.authorization !== `Bearer ${this.token}`) {
      return this.error(res, 401, 'user-or-token-not-found', 'User was not found or authentication token is not valid');
    }
    if (req.params.actorId !== PROFILE_SCRAPER) return this.error(res, 404, 'record-not-found', 'Actor was not found');
    const input = req.body as Record<string, unknown> | undefined;
    if (!input || typeof input !== 'object' || Array.isArray(input)) {
      return this.error(res, 400, 'invalid-input', 'Input is not valid: must be a JSON object');
    }
    const unknown = Object.keys(input).filter((k) => k !== 'urls' && k !== 'profileScraperMode');
    if (unknown.length)
      return this.error(res, 400, 'invalid-input', `Input is not valid: Property input.${unknown[0]} is not allowed.`);
    const urls = input.urls;
    if (!Array.isArray(urls) || urls.length === 0 || urls.some((u) => typeof u !== 'string' || !u)) {
      return this.error(
        res,
        400,
        'invalid-input',
        'Input is not valid: Field input.urls must be a non-empty array of strings',
      );
    }
    const mode = input.profileScraperMode;
    if (mode !== undefined && mode !== MODE_NO_EMAIL && mode !== MODE_EMAIL) {
      return this.error(
        res,
        400,
        'invalid-input',
        `Input is not valid: Field input.profileScraperMode must be one of the allowed values`,
      );
    }
    const withEmail = mode === MODE_EMAIL;
    const items = (urls as string[]).map((url) => {
      const publicIdentifier = /\/in\/([^/?]+)/.exec(url)?.[1] ?? url;
      return {
        linkedinUrl: url,
        publicIdentifier,
        firstName: publicIdentifier,
        headline: 'Profile headline',
        experience: [{ companyName: 'Acme', position: 'Engineer' }],
        emails: withEmail ? [{ email: `${publicIdentifier}@example.com` }] : [],
      };
    });
    res.status(201).json(items);
  }
}
