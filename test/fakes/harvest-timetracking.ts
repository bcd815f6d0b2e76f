/**
 * A minimal fake of the Harvest time-tracking API v2 (`https://api.harvestapp.com`) for one endpoint,
 * `GET /v2/company`: `Authorization: Bearer <access token>`, `Harvest-Account-Id: <account id>` and a
 * `User-Agent` naming the application and a contact (Harvest requires one; the fake wants the contact in
 * parentheses, `App (contact)`). The token must belong to the account. Errors follow Harvest's OAuth-style
 * bodies `{error, error_description}`.
 */
import express, { type Request, type Response } from 'express';
import { listen, type Listening } from './listen.ts';

export interface HarvestCompany {
  base_uri: string;
  full_domain: string;
  name: string;
  is_active: boolean;
  week_start_day: string;
  wants_timestamp_timers: boolean;
  time_format: string;
  date_format: string;
  plan_type: string;
  clock: '12h' | '24h';
  currency_code_display: string;
  currency_symbol_display: string;
  decimal_symbol: string;
  thousands_separator: string;
  color_scheme: string;
  weekly_capacity: number;
  expense_feature: boolean;
  invoice_feature: boolean;
  estimate_feature: boolean;
  approval_feature: boolean;
}

export interface TimeTrackingRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
}

export class FakeHarvestTimeTracking {
  readonly requests: TimeTrackingRequest[] = [];
  /** account id → its access token and company. */
  readonly accounts = new Map<string, { token: string; company: HarvestCompany }>();
  private listening!: Listening;

  get url(): string {
    return this.listening.url;
  }

  addAccount(accountId: string, token: string, name: string): HarvestCompany {
    const sub = name.toLowerCase().replace(/[^a-z0-9]+/g, '');
    const company: HarvestCompany = {
      base_uri: `https://${sub}.harvestapp.com`,
      full_domain: `${sub}.harvestapp.com`,
      name,
      is_active: true,
      week_start_day: 'Monday',
      wants_timestamp_timers: false,
      time_format: 'hours_minutes',
      date_format: '%Y-%m-%d',
      plan_type: 'sponsored',
      clock: '24h',
      currency_code_display: 'iso_code_none',
      currency_symbol_display: 'symbol_before',
      decimal_symbol: '.',
      thousands_separator: ',',
      color_scheme: 'orange',
      weekly_capacity: 126000,
      expense_feature: true,
      invoice_feature: true,
      estimate_feature: true,
      approval_feature: true,
    };
    this.accounts.set(accountId, { token, company });
    return company;
  }

  async start(): Promise<this> {
    const app = express();
    app.disable('x-powered-by');
    app.get('/v2/company', (req, res) => this.company(req, res));
    app.use((req: Request, res: Response) => {
      this.requests.push({ method: req.method, path: req.path, headers: req.headers });
      res.status(404).json({ status: 404, error: 'Not Found' });
    });
    this.listening = await listen(app);
    return this;
  }

  close(): Promise<void> {
    return this.listening.close();
  }

  private company(req: Request, res: Response) {
    this.requests.push({ method: req.method, path: req.path, headers: req.headers });
    const ua = req.headers['user-agent'];
    if (!ua || !/\S+ \(.+\)/.test(ua)) {
      res.status(400).json({
        error: 'invalid_request',
        error_description: 'A User-Agent naming the application and a contact is required',
      });
      return;
    }
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const accountId = req.headers['harvest-account-id'];
    const account = typeof accountId === 'string' ? this.accounts.get(accountId) : undefined;
    if (!bearer || !account || account.token !== bearer) {
      res.status(401).json({
        error: 'invalid_token',
        error_description: 'The access token provided is expired, revoked, malformed or invalid for other reasons.',
      });
      return;
    }
    res.json(account.company);
  }
}
