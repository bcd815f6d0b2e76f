/**
 * The professional-network data connector end to end: client library → service → fakes of the data API
 * (HarvestAPI), the scraping platform's synchronous Actor run (Apify) and the time-tracking API (Harvest),
 * for every tool; every 400 rule; dry runs; and where each credential may and may not go.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeHarvestApi } from '../fakes/harvestapi.ts';
import { FakeApifyProfileScraper, MODE_EMAIL, MODE_NO_EMAIL, PROFILE_SCRAPER } from '../fakes/apify-profile-scraper.ts';
import { FakeHarvestTimeTracking } from '../fakes/harvest-timetracking.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { AnswerLog } from '../helpers/answer-check.ts';
import { failure, toolRunner } from '../helpers/tools.ts';
import { tools } from '../../generated/registry.ts';

let h: Harness;
let data: FakeHarvestApi;
let apify: FakeApifyProfileScraper;
let time: FakeHarvestTimeTracking;

const API_KEY = 'hvapi-key-7c41e0b9d2a35f86';
const SCRAPER_TOKEN = 'apify_api_ScraperToken0x5e1f2d3c4b';
const TIME_ACCOUNT = '1234567';
/** The time-tracking token: a credential field of its own, never the data API key. */
const TIME_TOKEN = 'harvest-pat-4e1b77c2a9d05f13';
const who = { connectionName: 'prodata', identifier: 'user-1' };
const prodataTools = [...tools.values()].filter((t) => t.connector === 'prodata');
/** Tools that completed successfully against a fake. */
const executed = new Set<string>();

type Data = Record<string, any>;

// The upstream mapping is checked against the provider's own answer (response_format detailed); the concise
// answers are checked against the tool's declared output (test/helpers/answer-check.ts).
const answers = new AnswerLog('prodata', () => h);
const run = toolRunner<Data>({ harness: () => h, who, executed, responseFormat: 'detailed', answers });

/** The query the data API received last, for one path. */
function lastQuery(path: string): Record<string, string> {
  const r = data.received(path).at(-1);
  expect(r, `a request reached ${path}`).toBeDefined();
  return r!.query;
}

const upstreamCount = () => data.requests.length + apify.requests.length + time.requests.length;
const list = (n: number, prefix = 'v') => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`).join(',');

beforeAll(async () => {
  h = await startHarness();
  data = await new FakeHarvestApi(API_KEY).start();
  apify = await new FakeApifyProfileScraper(SCRAPER_TOKEN).start();
  time = await new FakeHarvestTimeTracking().start();
  time.addAccount(TIME_ACCOUNT, TIME_TOKEN, 'Acme Corp');
  await h.client.createConnection({
    connection_name: 'prodata',
    connector: 'prodata',
    api_base_url: data.url,
    api_hosts: { apify: apify.url, timetracking: time.url },
  });
  await h.client.upsertConnectedAccount({ ...who, credentials: { api_key: API_KEY } });
});
afterAll(async () => {
  answers.write();
  await data?.close();
  await apify?.close();
  await time?.close();
  await h?.close();
});

describe('profiles, companies, jobs, ads and groups', () => {
  it('scrapes a profile by each identifier, sending flags only when true', async () => {
    const full = await run('prodata_scrape_profile', {
      public_identifier: 'williamhgates',
      main: true,
      find_email: true,
      skip_smtp: false,
    });
    expect(lastQuery('/linkedin/profile')).toEqual({
      publicIdentifier: 'williamhgates',
      main: 'true',
      findEmail: 'true',
    });
    expect(full.status).toBe(200);
    expect(full.element).toMatchObject({
      publicIdentifier: 'williamhgates',
      emails: [{ email: 'williamhgates@example.com', verified: true }],
    });
    expect(full.element.experience).toBeUndefined();

    const byUrl = await run('prodata_scrape_profile', {
      profile_url: 'https://www.linkedin.com/in/satyanadella',
      include_about_profile: true,
      find_email: true,
      skip_smtp: true,
    });
    expect(lastQuery('/linkedin/profile')).toEqual({
      url: 'https://www.linkedin.com/in/satyanadella',
      findEmail: 'true',
      includeAboutProfile: 'true',
      skipSmtp: 'true',
    });
    expect(byUrl.element).toMatchObject({
      publicIdentifier: 'satyanadella',
      about: 'About text',
      emails: [{ verified: false }],
    });

    const byId = await run('prodata_scrape_profile', { profile_id: 'ACoAAA8BYqEB' });
    expect(lastQuery('/linkedin/profile')).toEqual({ profileId: 'ACoAAA8BYqEB' });
    expect(byId.element.id).toBe('ACoAAA8BYqEB');
    expect(byId.element.emails).toEqual([]);
  });

  it('scrapes a company by URL, universal name or name', async () => {
    const a = await run('prodata_scrape_company', { company_url: 'https://www.linkedin.com/company/microsoft/' });
    expect(lastQuery('/linkedin/company')).toEqual({ url: 'https://www.linkedin.com/company/microsoft/' });
    expect(a.element).toMatchObject({ universalName: 'microsoft', employeeCount: 228000 });
    await run('prodata_scrape_company', { universal_name: 'microsoft' });
    expect(lastQuery('/linkedin/company')).toEqual({ universalName: 'microsoft' });
    const c = await run('prodata_scrape_company', { search: 'Microsoft' });
    expect(lastQuery('/linkedin/company')).toEqual({ search: 'Microsoft' });
    expect(c.element.name).toBe('Microsoft');
  });

  it('scrapes a job by ID or URL', async () => {
    expect((await run('prodata_scrape_job', { job_id: '4012345678' })).element.id).toBe('4012345678');
    expect(lastQuery('/linkedin/job')).toEqual({ jobId: '4012345678' });
    expect((await run('prodata_scrape_job', { job_url: 'https://www.linkedin.com/jobs/view/4099/' })).element.id).toBe(
      '4099',
    );
    expect(lastQuery('/linkedin/job')).toEqual({ url: 'https://www.linkedin.com/jobs/view/4099/' });
  });

  it('gets an ad and a group by ID or URL', async () => {
    expect((await run('prodata_get_ad', { ad_id: '658401503' })).element.id).toBe('658401503');
    expect(lastQuery('/linkedin/ad')).toEqual({ adId: '658401503' });
    expect((await run('prodata_get_ad', { url: 'https://www.linkedin.com/ad-library/detail/777' })).element.id).toBe(
      '777',
    );
    expect(lastQuery('/linkedin/ad')).toEqual({ url: 'https://www.linkedin.com/ad-library/detail/777' });
    expect((await run('prodata_get_group', { group_id: '9806731' })).element.memberCount).toBe(120345);
    expect(lastQuery('/linkedin/group')).toEqual({ groupId: '9806731' });
    await run('prodata_get_group', { url: 'https://www.linkedin.com/groups/9806731/' });
    expect(lastQuery('/linkedin/group')).toEqual({ url: 'https://www.linkedin.com/groups/9806731/' });
  });
});

describe('posts, comments and reactions', () => {
  const POST = 'https://www.linkedin.com/feed/update/urn:li:activity:7300000000000000000/';

  it('gets a post, its comments and its reactions', async () => {
    const post = await run('prodata_get_post', { url: POST });
    expect(lastQuery('/linkedin/post')).toEqual({ url: POST });
    expect(post.element.linkedinUrl).toBe(POST);

    const comments = await run('prodata_get_post_comments', { post: POST });
    expect(lastQuery('/linkedin/post-comments')).toEqual({ post: POST });
    expect(comments.elements).toHaveLength(100);
    expect(comments.pagination).toMatchObject({ totalElements: 130, totalPages: 2, pageNumber: 1 });

    const reactions = await run('prodata_get_post_reactions', { post: POST });
    expect(lastQuery('/linkedin/post-reactions')).toEqual({ post: POST });
    expect(reactions.elements[0]).toMatchObject({ reactionType: 'PRAISE', postUrl: POST });
  });

  it('pages comment reactions with page (default 1)', async () => {
    const url =
      'https://www.linkedin.com/feed/update/urn:li:activity:7300?commentUrn=urn:li:comment:(activity:7300,7301)';
    const first = await run('prodata_get_comment_reactions', { url });
    expect(lastQuery('/linkedin/comment-reactions')).toEqual({ url, page: '1' });
    expect(first.elements).toHaveLength(100);
    const second = await run('prodata_get_comment_reactions', { url, page: 2 });
    expect(second.elements).toHaveLength(20);
    expect(second.pagination.pageNumber).toBe(2);
  });

  it('gets company posts and profile posts', async () => {
    const cp = await run('prodata_get_company_posts', { company_universal_name: 'microsoft', page: 2 });
    expect(lastQuery('/linkedin/company-posts')).toEqual({ companyUniversalName: 'microsoft', page: '2' });
    expect(cp.elements).toHaveLength(10);
    await run('prodata_get_company_posts', { company: 'https://www.linkedin.com/company/microsoft/' });
    expect(lastQuery('/linkedin/company-posts')).toEqual({
      company: 'https://www.linkedin.com/company/microsoft/',
      page: '1',
    });

    const pp = await run('prodata_get_profile_posts', {
      profile: 'https://www.linkedin.com/in/williamhgates',
      profile_id: 'ACo1',
      profile_public_identifier: 'williamhgates',
      page: 3,
    });
    expect(lastQuery('/linkedin/profile-posts')).toEqual({
      profile: 'https://www.linkedin.com/in/williamhgates',
      profileId: 'ACo1',
      profilePublicIdentifier: 'williamhgates',
      page: '3',
    });
    expect(pp.elements).toHaveLength(40);
  });

  it('pages profile comments and reactions with the token of the previous page', async () => {
    for (const [tool, path, extra] of [
      ['prodata_get_profile_comments', '/linkedin/profile-comments', { posted_limit: 'month' }],
      ['prodata_get_profile_reactions', '/linkedin/profile-reactions', {}],
    ] as const) {
      const p1 = await run(tool, { profile_id: 'ACoAAA8BYqEB', ...extra });
      expect(lastQuery(path)).toEqual({
        profileId: 'ACoAAA8BYqEB',
        page: '1',
        ...('posted_limit' in extra ? { postedLimit: 'month' } : {}),
      });
      const token1 = p1.pagination.paginationToken as string;
      expect(token1).toMatch(/^tok_/);

      const p2 = await run(tool, {
        profile: 'https://www.linkedin.com/in/williamhgates',
        page: 2,
        pagination_token: token1,
      });
      expect(lastQuery(path)).toEqual({
        profile: 'https://www.linkedin.com/in/williamhgates',
        page: '2',
        paginationToken: token1,
      });
      expect(p2.pagination.pageNumber).toBe(2);
      const p3 = await run(tool, {
        profile_id: 'ACoAAA8BYqEB',
        page: 3,
        pagination_token: p2.pagination.paginationToken,
      });
      expect(p3.elements).toHaveLength(50);
      expect(p3.pagination.paginationToken).toBeNull();

      // A token of another page is the provider's 400, passed through with its body.
      const e = await failure(run(tool, { profile_id: 'ACoAAA8BYqEB', page: 3, pagination_token: token1 }));
      expect(e.status).toBe(400);
      expect(e.isProviderError).toBe(true);
      expect(e.providerBody).toEqual({ error: 'paginationToken does not belong to this page' });
    }
  });
});

describe('searches', () => {
  it('searches ads with every filter', async () => {
    const ads = await run('prodata_search_ads', {
      keyword: 'cloud',
      account_owner: 'https://www.linkedin.com/company/microsoft/',
      countries: 'US,GB',
      date_option: 'custom-date-range',
      startdate: '2026-01-01',
      enddate: '2026-03-31',
    });
    expect(lastQuery('/linkedin/ad-search')).toEqual({
      keyword: 'cloud',
      accountOwner: 'https://www.linkedin.com/company/microsoft/',
      countries: 'US,GB',
      dateOption: 'custom-date-range',
      startdate: '2026-01-01',
      enddate: '2026-03-31',
    });
    expect(ads.elements).toHaveLength(25);
  });

  it('searches companies, geo IDs, groups and services', async () => {
    const companies = await run('prodata_search_companies', {
      search: 'software',
      location: 'Berlin',
      company_size: '11-50,10001+',
    });
    expect(lastQuery('/linkedin/company-search')).toEqual({
      search: 'software',
      location: 'Berlin',
      companySize: '11-50,10001+',
      page: '1',
    });
    expect(companies.pagination.totalElements).toBe(42);

    const geo = await run('prodata_search_geo', { search: 'San Francisco' });
    expect(lastQuery('/linkedin/geo-id-search')).toEqual({ search: 'San Francisco' });
    expect(geo.elements).toEqual([
      { id: '101', title: 'San Francisco, place 1' },
      { id: '102', title: 'San Francisco, place 2' },
    ]);

    const groups = await run('prodata_search_groups', { search: 'machine learning', page: 3 });
    expect(lastQuery('/linkedin/group-search')).toEqual({ search: 'machine learning', page: '3' });
    expect(groups.elements).toHaveLength(5);

    const services = await run('prodata_search_services', {
      search: 'web design',
      location: 'London',
      geo_id: '90009496',
    });
    expect(lastQuery('/linkedin/service-search')).toEqual({
      search: 'web design',
      location: 'London',
      geoId: '90009496',
      page: '1',
    });
    expect(services.elements).toHaveLength(10);
  });

  it('searches jobs with every filter', async () => {
    const jobs = await run('prodata_search_jobs', {
      search: 'engineer',
      location: 'Berlin',
      company_id: '1035,1441',
      easy_apply: true,
      employment_type: 'full-time,temporary',
      experience_level: 'mid-senior,director',
      workplace_type: 'hybrid,remote',
      posted_limit: '24h',
      salary: '100k+',
      sort_by: 'date',
      page: 3,
    });
    expect(lastQuery('/linkedin/job-search')).toEqual({
      search: 'engineer',
      location: 'Berlin',
      companyId: '1035,1441',
      easyApply: 'true',
      employmentType: 'full-time,temporary',
      experienceLevel: 'mid-senior,director',
      workplaceType: 'hybrid,remote',
      postedLimit: '24h',
      salary: '100k+',
      sortBy: 'date',
      page: '3',
    });
    expect(jobs.elements).toHaveLength(10);
    await run('prodata_search_jobs', { search: 'engineer', easy_apply: false });
    expect(lastQuery('/linkedin/job-search')).toEqual({ search: 'engineer', page: '1' });
  });

  it('searches leads with every filter, up to the limits', async () => {
    const leads = await run('prodata_search_leads', {
      search: 'founder OR ceo',
      sales_nav_url: 'https://www.linkedin.com/sales/search/people?query=(keywords:cto)',
      company_headcount: 'self-employed,11-50',
      current_companies: list(50, 'c'),
      current_job_titles: list(70, 'title '),
      first_names: list(70, 'first'),
      last_names: list(70, 'last'),
      geo_ids: '103644278',
      industry_ids: list(70, ''),
      locations: list(70, 'city'),
      past_companies: list(50, 'p'),
      past_job_titles: list(70, 'old title '),
      recently_changed_jobs: true,
      seniority_level_ids: '220,310',
      years_of_experience_ids: '3,4',
      page: 100,
    });
    expect(lastQuery('/linkedin/lead-search')).toEqual({
      search: 'founder OR ceo',
      salesNavUrl: 'https://www.linkedin.com/sales/search/people?query=(keywords:cto)',
      companyHeadcount: 'self-employed,11-50',
      currentCompanies: list(50, 'c'),
      currentJobTitles: list(70, 'title '),
      firstNames: list(70, 'first'),
      lastNames: list(70, 'last'),
      geoIds: '103644278',
      industryIds: list(70, ''),
      locations: list(70, 'city'),
      pastCompanies: list(50, 'p'),
      pastJobTitles: list(70, 'old title '),
      recentlyChangedJobs: 'true',
      seniorityLevelIds: '220,310',
      yearsOfExperienceIds: '3,4',
      page: '100',
    });
    expect(leads.pagination.pageNumber).toBe(100);
    await run('prodata_search_leads', {});
    expect(lastQuery('/linkedin/lead-search')).toEqual({ page: '1' });
  });

  it('searches people through the lead search', async () => {
    const people = await run('prodata_search_people', {
      search: 'data engineer',
      company_headcount: '51-200',
      current_companies: list(50, 'c'),
      current_job_titles: 'Data Engineer,ML Engineer',
      first_names: 'Ann',
      last_names: 'Lee,Kim',
      industry_ids: '4',
      locations: list(70, 'city'),
      seniority_level_ids: '120',
      page: 2,
    });
    expect(lastQuery('/linkedin/lead-search')).toEqual({
      search: 'data engineer',
      companyHeadcount: '51-200',
      currentCompanies: list(50, 'c'),
      currentJobTitles: 'Data Engineer,ML Engineer',
      firstNames: 'Ann',
      lastNames: 'Lee,Kim',
      industryIds: '4',
      locations: list(70, 'city'),
      seniorityLevelIds: '120',
      page: '2',
    });
    expect(people.elements).toHaveLength(25);
  });

  it('searches posts, translating posted_limit past-24h / past-week / past-month', async () => {
    const posts = await run('prodata_search_posts', {
      search: 'generative ai',
      authors_company: 'https://www.linkedin.com/company/microsoft/',
      company: 'https://www.linkedin.com/company/openai/',
      company_id: '1035',
      group: 'https://www.linkedin.com/groups/9806731/',
      profile: 'https://www.linkedin.com/in/williamhgates',
      profile_id: 'ACo1',
      posted_limit: 'past-24h',
      sort_by: 'relevance',
      page: 2,
    });
    expect(lastQuery('/linkedin/post-search')).toEqual({
      search: 'generative ai',
      authorsCompany: 'https://www.linkedin.com/company/microsoft/',
      company: 'https://www.linkedin.com/company/openai/',
      companyId: '1035',
      group: 'https://www.linkedin.com/groups/9806731/',
      profile: 'https://www.linkedin.com/in/williamhgates',
      profileId: 'ACo1',
      postedLimit: '24h',
      sortBy: 'relevance',
      page: '2',
    });
    expect(posts.elements).toHaveLength(25);
    for (const [given, sent] of [
      ['past-week', 'week'],
      ['past-month', 'month'],
      ['week', 'week'],
    ]) {
      await run('prodata_search_posts', { search: 'x', posted_limit: given });
      expect(lastQuery('/linkedin/post-search').postedLimit).toBe(sent);
    }
  });
});

describe('bulk profile scraping on the scraping platform', () => {
  const urls = ['https://www.linkedin.com/in/williamhgates', 'https://www.linkedin.com/in/satyanadella'];

  it('runs the Actor synchronously with the scraper token only, in the mode find_email selects', async () => {
    const items = (await run('prodata_bulk_scrape_profiles', {
      scraper_token: SCRAPER_TOKEN,
      profile_urls: urls,
      find_email: true,
    })) as unknown as Data[];
    expect(items.map((i) => i.publicIdentifier)).toEqual(['williamhgates', 'satyanadella']);
    expect(items[0]!.emails).toEqual([{ email: 'williamhgates@example.com' }]);
    const req = apify.requests.at(-1)!;
    expect(req.method).toBe('POST');
    expect(req.path).toBe(`/v2/acts/${PROFILE_SCRAPER}/run-sync-get-dataset-items`);
    expect(req.headers.authorization).toBe(`Bearer ${SCRAPER_TOKEN}`);
    expect(req.headers['x-api-key']).toBeUndefined();
    expect(req.body).toEqual({ urls, profileScraperMode: MODE_EMAIL });

    const plain = (await run('prodata_bulk_scrape_profiles', {
      scraper_token: SCRAPER_TOKEN,
      profile_urls: urls.slice(0, 1),
    })) as unknown as Data[];
    expect(plain[0]!.emails).toEqual([]);
    expect(apify.requests.at(-1)!.body).toEqual({ urls: urls.slice(0, 1), profileScraperMode: MODE_NO_EMAIL });
    await run('prodata_bulk_scrape_profiles', { scraper_token: SCRAPER_TOKEN, profile_urls: urls, find_email: false });
    expect(apify.requests.at(-1)!.body).toEqual({ urls, profileScraperMode: MODE_NO_EMAIL });
  });

  it("returns the platform's 401 for a wrong scraper token as a provider error", async () => {
    const wrong = 'apify_api_WrongToken0000';
    const e = await failure(run('prodata_bulk_scrape_profiles', { scraper_token: wrong, profile_urls: urls }));
    expect(e.status).toBe(401);
    expect(e.isProviderError).toBe(true);
    expect(e.providerBody).toEqual({
      error: { type: 'user-or-token-not-found', message: 'User was not found or authentication token is not valid' },
    });
    expect(h.logs.join('\n')).not.toContain(wrong);
  });
});

describe('time-tracking account information', () => {
  it('without a timetracking_token, says what is missing and sends nothing (the data key never goes there)', async () => {
    const before = time.requests.length;
    const e = await failure(run('prodata_get_company', { account_id: TIME_ACCOUNT }));
    expect(e.status).toBe(409);
    expect(e.code).toBe('account_incomplete');
    expect(e.message).toContain('"timetracking_token"');
    expect(time.requests.length).toBe(before);
    await h.client.upsertConnectedAccount({
      ...who,
      credentials: { api_key: API_KEY, timetracking_token: TIME_TOKEN },
    });
  });

  it('reads the company with its own token as Bearer, the account ID header and a User-Agent', async () => {
    const company = await run('prodata_get_company', { account_id: TIME_ACCOUNT });
    expect(company).toMatchObject({
      name: 'Acme Corp',
      base_uri: 'https://acmecorp.harvestapp.com',
      plan_type: 'sponsored',
      clock: '24h',
      weekly_capacity: 126000,
    });
    const req = time.requests.at(-1)!;
    expect(req).toMatchObject({ method: 'GET', path: '/v2/company' });
    expect(req.headers.authorization).toBe(`Bearer ${TIME_TOKEN}`);
    expect(JSON.stringify(time.requests)).not.toContain(API_KEY);
    expect(req.headers['harvest-account-id']).toBe(TIME_ACCOUNT);
    expect(req.headers['user-agent']).toBe('agent-connector-service (prodata connector)');
    expect(req.headers['x-api-key']).toBeUndefined();
  });

  it('passes the 401 through when the token is not one of that account', async () => {
    const e = await failure(run('prodata_get_company', { account_id: '7654321' }));
    expect(e.status).toBe(401);
    expect(e.isProviderError).toBe(true);
    expect(e.providerBody).toMatchObject({ error: 'invalid_token' });
  });
});

describe('bad input is a 400 naming the field, before any upstream call', () => {
  const cases: Array<[tool: string, input: Record<string, unknown>, field: string, message: string]> = [
    // One-of groups.
    [
      'prodata_scrape_profile',
      { main: true },
      'profile_url',
      'one of profile_url, public_identifier, profile_id is required',
    ],
    ['prodata_scrape_company', {}, 'company_url', 'one of company_url, universal_name, search is required'],
    ['prodata_scrape_job', {}, 'job_url', 'one of job_url, job_id is required'],
    ['prodata_get_group', {}, 'group_id', 'one of group_id, url is required'],
    ['prodata_get_ad', { url: '' }, 'ad_id', 'one of ad_id, url is required'],
    ['prodata_get_company_posts', { page: 2 }, 'company', 'one of company, company_universal_name is required'],
    ['prodata_get_profile_comments', { posted_limit: 'week' }, 'profile', 'one of profile, profile_id is required'],
    ['prodata_get_profile_posts', {}, 'profile', 'one of profile, profile_id, profile_public_identifier is required'],
    ['prodata_get_profile_reactions', {}, 'profile', 'one of profile, profile_id is required'],
    // Pagination tokens for pages above 1.
    [
      'prodata_get_profile_comments',
      { profile_id: 'x', page: 2 },
      'pagination_token',
      "is required for pages above 1 (the paginationToken of the previous page's response)",
    ],
    [
      'prodata_get_profile_reactions',
      { profile: 'x', page: 5 },
      'pagination_token',
      "is required for pages above 1 (the paginationToken of the previous page's response)",
    ],
    // Page bounds.
    ['prodata_search_leads', { page: 101 }, 'page', 'must be at most 100'],
    ['prodata_search_people', { page: 101 }, 'page', 'must be at most 100'],
    ['prodata_search_groups', { search: 'x', page: 0 }, 'page', 'must be at least 1'],
    ['prodata_search_services', { search: 'x', page: 1.5 }, 'page', 'must be an integer'],
    // Comma-separated value limits.
    [
      'prodata_search_leads',
      { current_companies: list(51) },
      'current_companies',
      'has 51 comma-separated values; at most 50 are allowed',
    ],
    [
      'prodata_search_leads',
      { past_companies: list(51) },
      'past_companies',
      'has 51 comma-separated values; at most 50 are allowed',
    ],
    [
      'prodata_search_leads',
      { current_job_titles: list(71) },
      'current_job_titles',
      'has 71 comma-separated values; at most 70 are allowed',
    ],
    [
      'prodata_search_leads',
      { past_job_titles: list(71) },
      'past_job_titles',
      'has 71 comma-separated values; at most 70 are allowed',
    ],
    [
      'prodata_search_leads',
      { first_names: list(71) },
      'first_names',
      'has 71 comma-separated values; at most 70 are allowed',
    ],
    [
      'prodata_search_leads',
      { last_names: list(71) },
      'last_names',
      'has 71 comma-separated values; at most 70 are allowed',
    ],
    [
      'prodata_search_leads',
      { industry_ids: list(71) },
      'industry_ids',
      'has 71 comma-separated values; at most 70 are allowed',
    ],
    [
      'prodata_search_leads',
      { locations: list(71) },
      'locations',
      'has 71 comma-separated values; at most 70 are allowed',
    ],
    [
      'prodata_search_people',
      { current_companies: list(51) },
      'current_companies',
      'has 51 comma-separated values; at most 50 are allowed',
    ],
    [
      'prodata_search_people',
      { current_job_titles: list(71) },
      'current_job_titles',
      'has 71 comma-separated values; at most 70 are allowed',
    ],
    [
      'prodata_search_people',
      { first_names: list(71) },
      'first_names',
      'has 71 comma-separated values; at most 70 are allowed',
    ],
    [
      'prodata_search_people',
      { last_names: list(71) },
      'last_names',
      'has 71 comma-separated values; at most 70 are allowed',
    ],
    [
      'prodata_search_people',
      { industry_ids: list(71) },
      'industry_ids',
      'has 71 comma-separated values; at most 70 are allowed',
    ],
    [
      'prodata_search_people',
      { locations: list(71) },
      'locations',
      'has 71 comma-separated values; at most 70 are allowed',
    ],
    // Value sets.
    ['prodata_search_leads', { seniority_level_ids: '220,999' }, 'seniority_level_ids', 'value "999" does not match'],
    ['prodata_search_leads', { years_of_experience_ids: '6' }, 'years_of_experience_ids', 'value "6" does not match'],
    ['prodata_search_people', { company_headcount: '11-49' }, 'company_headcount', 'value "11-49" does not match'],
    [
      'prodata_search_jobs',
      { employment_type: 'full-time,freelance' },
      'employment_type',
      'value "freelance" does not match',
    ],
    ['prodata_search_jobs', { experience_level: 'senior' }, 'experience_level', 'value "senior" does not match'],
    ['prodata_search_jobs', { workplace_type: 'onsite' }, 'workplace_type', 'value "onsite" does not match'],
    ['prodata_search_jobs', { company_id: 'microsoft' }, 'company_id', 'value "microsoft" does not match'],
    [
      'prodata_search_jobs',
      { salary: '30k+' },
      'salary',
      'must be one of: 40k+, 60k+, 80k+, 100k+, 120k+, 140k+, 160k+, 180k+, 200k+',
    ],
    ['prodata_search_jobs', { posted_limit: 'past-24h' }, 'posted_limit', 'must be one of: 24h, week, month'],
    ['prodata_search_jobs', { sort_by: 'newest' }, 'sort_by', 'must be one of: relevance, date'],
    [
      'prodata_search_posts',
      { posted_limit: 'yesterday' },
      'posted_limit',
      'must be one of: past-24h, past-week, past-month, 24h, week, month',
    ],
    [
      'prodata_get_profile_comments',
      { profile_id: 'x', posted_limit: 'year' },
      'posted_limit',
      'must be one of: 24h, week, month',
    ],
    ['prodata_search_companies', { company_size: '1-9' }, 'company_size', 'value "1-9" does not match'],
    ['prodata_search_ads', { countries: 'USA' }, 'countries', 'value "USA" does not match'],
    [
      'prodata_search_ads',
      { date_option: 'yesterday' },
      'date_option',
      'must be one of: last-30-days, current-month, current-year, last-year, custom-date-range',
    ],
    ['prodata_search_ads', { startdate: '01/02/2026' }, 'startdate', 'must be a date in the form YYYY-MM-DD'],
    ['prodata_scrape_job', { job_id: 'abc' }, 'job_id', 'must match the pattern ^[0-9]+$'],
    ['prodata_get_company', { account_id: '12\r\nX-Evil: 1' }, 'account_id', 'must match the pattern ^[0-9]+$'],
    // Required parameters and types.
    ['prodata_get_company', {}, 'account_id', 'is required'],
    ['prodata_get_post', {}, 'url', 'is required'],
    ['prodata_get_post_comments', {}, 'post', 'is required'],
    ['prodata_get_post_reactions', { post: '' }, 'post', 'must not be empty'],
    ['prodata_get_comment_reactions', { page: 1 }, 'url', 'is required'],
    ['prodata_search_geo', {}, 'search', 'is required'],
    ['prodata_search_groups', {}, 'search', 'is required'],
    ['prodata_search_services', { location: 'x' }, 'search', 'is required'],
    [
      'prodata_bulk_scrape_profiles',
      { profile_urls: ['https://www.linkedin.com/in/x'] },
      'scraper_token',
      'is required',
    ],
    [
      'prodata_bulk_scrape_profiles',
      { scraper_token: SCRAPER_TOKEN, profile_urls: [] },
      'profile_urls',
      'must have at least 1 item(s)',
    ],
    [
      'prodata_bulk_scrape_profiles',
      { scraper_token: SCRAPER_TOKEN, profile_urls: 'https://www.linkedin.com/in/x' },
      'profile_urls',
      'must be an array',
    ],
    ['prodata_scrape_profile', { public_identifier: 'x', find_email: 'yes' }, 'find_email', 'must be a boolean'],
    // The service's own names only: the provider's camelCase names are refused with a hint.
    [
      'prodata_search_leads',
      { firstNames: 'Ann' },
      'firstNames',
      'is not a parameter of prodata_search_leads (did you mean first_names?)',
    ],
  ];

  it.each(cases.map((c) => [`${c[0]} ${c[2]}`, ...c] as const))('%s', async (_label, tool, input, field, message) => {
    const before = upstreamCount();
    const e = await failure(run(tool, input));
    expect(e.status).toBe(400);
    expect(e.code).toBe('invalid_input');
    expect(e.isProviderError).toBe(false);
    const detail = e.details.find((d) => d.field === field);
    expect(detail, `${tool}: details ${JSON.stringify(e.details)}`).toBeDefined();
    expect(detail!.message).toContain(message);
    expect(upstreamCount()).toBe(before);
  });

  it('accepts the boundary values (50 companies, 70 titles, page 100) and sends them', async () => {
    const before = data.received('/linkedin/lead-search').length;
    await run('prodata_search_people', { current_companies: list(50), first_names: list(70), page: 100 });
    expect(data.received('/linkedin/lead-search').length).toBe(before + 1);
    expect(lastQuery('/linkedin/lead-search')).toEqual({
      currentCompanies: list(50),
      firstNames: list(70),
      page: '100',
    });
  });
});

describe('provider errors stay provider errors', () => {
  it('keeps the data API status and {error} body', async () => {
    const e = await failure(run('prodata_scrape_profile', { public_identifier: 'missing-person' }));
    expect(e.status).toBe(404);
    expect(e.isProviderError).toBe(true);
    expect(e.providerBody).toMatchObject({ element: null, status: 404, error: 'Not found' });
  });

  it("reports a wrong API key as the provider's 401", async () => {
    await h.client.upsertConnectedAccount({
      connectionName: 'prodata',
      identifier: 'wrong-key',
      credentials: { api_key: 'not-the-key' },
    });
    const e = await failure(run('prodata_search_geo', { search: 'Berlin' }, { ...who, identifier: 'wrong-key' }));
    expect(e.status).toBe(401);
    expect(e.isProviderError).toBe(true);
    expect(e.providerBody).toEqual({ error: 'Invalid or missing API key' });
  });
});

describe('proxy', () => {
  it('injects the key; the data API refuses snake_case names, so a missed rename cannot pass', async () => {
    const bad = await h.client.request({ ...who, path: '/linkedin/lead-search', queryParams: { first_names: 'Ann' } });
    expect(bad.status).toBe(400);
    expect((bad.data as { error: string }).error).toContain('Unknown query parameter "first_names"');
    const ok = await h.client.request({ ...who, path: '/linkedin/lead-search', queryParams: { firstNames: 'Ann' } });
    expect(ok.status).toBe(200);
    expect(data.requests.at(-1)!.apiKey).toBe(API_KEY);
  });
});

describe('dry run', () => {
  const hosts = () =>
    [
      ['https://api.harvest-api.com', data.url],
      ['https://api.apify.com', apify.url],
      ['https://api.harvestapp.com', time.url],
    ] as const;

  it('shows the exact upstream request of every example of every tool, with credentials redacted, sending nothing', async () => {
    const before = upstreamCount();
    expect(prodataTools).toHaveLength(24);
    for (const t of prodataTools) {
      for (const example of t.examples) {
        const { data: shown } = await h.client.executeTool({
          toolName: t.name as never,
          toolInput: structuredClone(example.input) as never,
          ...who,
          dryRun: true,
        });
        const { requests } = shown as {
          requests: Array<{ method: string; url: string; headers: Record<string, string>; body?: unknown }>;
        };
        expect(requests).toHaveLength(example.requests.length);
        example.requests.forEach((want, i) => {
          const got = requests[i]!;
          const [real, fake] = hosts().find(([r]) => want.url.startsWith(r))!;
          expect(got.method).toBe(want.method);
          expect(got.url, t.name).toBe(fake + want.url.slice(real.length));
          expect(got.body).toEqual(want.body);
          for (const [k, v] of Object.entries(want.headers ?? {}))
            expect(got.headers[k.toLowerCase()], `${t.name} header ${k}`).toBe(v);
          if (real === 'https://api.harvest-api.com') {
            expect(got.headers['x-api-key']).toBe('[REDACTED]');
            expect(got.headers.authorization).toBeUndefined();
          } else {
            expect(got.headers.authorization).toBe('Bearer [REDACTED]');
            expect(got.headers['x-api-key'], `${t.name} sends no data-API key to ${real}`).toBeUndefined();
          }
        });
        expect(JSON.stringify(shown)).not.toContain(API_KEY);
      }
    }
    expect(upstreamCount()).toBe(before);
  });

  it('never shows the scraper token', async () => {
    const { data: shown } = await h.client.executeTool({
      toolName: 'prodata_bulk_scrape_profiles',
      toolInput: { scraper_token: SCRAPER_TOKEN, profile_urls: ['https://www.linkedin.com/in/x'], find_email: true },
      ...who,
      dryRun: true,
    });
    const text = JSON.stringify(shown);
    expect(text).not.toContain(SCRAPER_TOKEN);
    expect(text).toContain('Bearer [REDACTED]');
    expect((shown as { requests: Array<{ url: string }> }).requests[0]!.url).toBe(
      `${apify.url}/v2/acts/${PROFILE_SCRAPER}/run-sync-get-dataset-items`,
    );
  });
});

describe('where credentials go', () => {
  it('executed every prodata tool against a fake', () => {
    expect([...executed].filter((n) => n.startsWith('prodata_')).sort()).toEqual(
      prodataTools.map((t) => t.name).sort(),
    );
  });

  it('sends the data-API key only to the data API, and the scraper token only to the scraping platform', () => {
    expect(apify.requests.length).toBeGreaterThan(0);
    for (const r of apify.requests) {
      expect(r.headers['x-api-key']).toBeUndefined();
      expect(JSON.stringify(r.headers)).not.toContain(API_KEY);
    }
    for (const r of data.requests) expect(JSON.stringify(r)).not.toContain(SCRAPER_TOKEN);
    for (const r of time.requests) expect(JSON.stringify(r.headers)).not.toContain(SCRAPER_TOKEN);
    expect(data.requests.filter((r) => r.apiKey === API_KEY).length).toBeGreaterThan(20);
  });

  it('never writes the scraper token or the API key to the log', () => {
    expect(h.logs.length).toBeGreaterThan(0);
    const all = h.logs.join('\n');
    expect(all).not.toContain(SCRAPER_TOKEN);
    expect(all).not.toContain(API_KEY);
  });
});
