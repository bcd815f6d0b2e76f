/**
 * A browserless dashboard user for HTTP-level tests: keeps cookies like a browser, reads CSRF tokens out
 * of the pages, and never follows redirects by itself so tests can see them.
 */
export interface Page {
  status: number;
  headers: Headers;
  html: string;
  location: string | null;
}

export class DashboardClient {
  readonly cookies = new Map<string, string>();

  constructor(readonly baseUrl: string) {}

  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  private async send(path: string, init: RequestInit): Promise<Page> {
    const res = await fetch(new URL(path, this.baseUrl), {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), cookie: this.cookieHeader() },
    });
    for (const line of res.headers.getSetCookie()) {
      const pair = line.split(';')[0]!;
      const i = pair.indexOf('=');
      const name = pair.slice(0, i);
      const value = pair.slice(i + 1);
      if (value && !/max-age=0/i.test(line)) this.cookies.set(name, value);
      else this.cookies.delete(name);
    }
    return { status: res.status, headers: res.headers, html: await res.text(), location: res.headers.get('location') };
  }

  get(path: string): Promise<Page> {
    return this.send(path, { method: 'GET' });
  }

  post(path: string, form: Record<string, string | string[]>): Promise<Page> {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(form)) for (const x of Array.isArray(v) ? v : [v]) body.append(k, x);
    return this.send(path, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
  }

  /** The CSRF token in a page's forms. */
  static csrf(html: string): string {
    const m = /name="_csrf" value="([^"]+)"/.exec(html);
    if (!m) throw new Error('no CSRF token on the page');
    return m[1]!;
  }

  /** Posts a form with the CSRF token of the page it is on (fetched first). */
  async submit(pagePath: string, action: string, form: Record<string, string | string[]>): Promise<Page> {
    const page = await this.get(pagePath);
    if (page.status !== 200) throw new Error(`${pagePath} answered ${page.status}`);
    return this.post(action, { _csrf: DashboardClient.csrf(page.html), ...form });
  }

  async signIn(password: string, username = 'admin'): Promise<Page> {
    const page = await this.get('/dashboard/sign-in');
    return this.post('/dashboard/sign-in', {
      _csrf: DashboardClient.csrf(page.html),
      username,
      password,
      next: '/dashboard/connections',
    });
  }
}
