/**
 * An ordinary marketing newsletter as mail providers deliver it: a table layout with a style sheet in the head,
 * inline styles, tracking pixels, images, tracked links with campaign parameters and an unsubscribe footer. Used to
 * measure what an agent reads of a mailbox (issue 40 measured ten of these at 55,871 characters and 110 tags).
 */
const CSS = `body{margin:0;padding:0;background:#f4f4f4;font-family:Helvetica,Arial,sans-serif}
table{border-collapse:collapse}td{padding:0}img{border:0;display:block;outline:none}
.wrapper{width:100%;background:#f4f4f4}.container{width:600px;margin:0 auto;background:#ffffff}
.header{padding:24px 32px;background:#1a73e8;color:#ffffff}.header h1{font-size:24px;margin:0}
.article{padding:16px 32px;border-bottom:1px solid #eeeeee}.article h2{font-size:18px;color:#202124;margin:0 0 8px}
.article p{font-size:14px;line-height:22px;color:#5f6368;margin:0 0 12px}.button{background:#1a73e8;color:#fff;padding:8px 16px;border-radius:4px;text-decoration:none}
.footer{padding:24px 32px;font-size:12px;color:#9aa0a6}.footer a{color:#9aa0a6}
@media only screen and (max-width:600px){.container{width:100%!important}.article{padding:12px 16px!important}}`;

const TOPICS = [
  [
    'Quarterly results beat expectations',
    'Revenue grew 18% year over year, driven by the subscription business and a strong holiday quarter in Europe and Asia.',
  ],
  [
    'New office opens in Lisbon',
    'The Lisbon office will house 120 engineers working on the data platform, with hiring starting next month across all levels.',
  ],
  [
    'Security update: rotate your keys',
    'We are retiring the old signing keys on the 30th. Rotate any integration keys before then to avoid failed requests.',
  ],
  [
    'Customer story: Fabrikam saves 40 hours a week',
    'Fabrikam moved its support triage to automated routing and cut first-response time from six hours to forty minutes.',
  ],
  [
    'Webinar: planning for 2027',
    'Join the product team on Thursday for a walk through the roadmap, with time for questions from customers and partners.',
  ],
];

export function newsletter(issue: number): string {
  const utm = `utm_source=newsletter&amp;utm_medium=email&amp;utm_campaign=weekly-${issue}&amp;utm_content`;
  const articles = TOPICS.map(
    ([title, text], i) => `<tr><td class="article" style="padding:16px 32px;border-bottom:1px solid #eeeeee">
<img src="https://cdn.news.example/img/${issue}-${i}.jpg" width="536" height="200" alt="" style="display:block;width:100%;height:auto">
<h2 style="font-size:18px;color:#202124;margin:12px 0 8px">${title}</h2>
<p style="font-size:14px;line-height:22px;color:#5f6368;margin:0 0 12px">${text} Issue ${issue} covers the details, the numbers and what it means for teams like yours.</p>
<a class="button" href="https://click.news.example/ls/click?upn=${issue}x${i}aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789&amp;${utm}=article-${i}" style="background:#1a73e8;color:#ffffff;padding:8px 16px;border-radius:4px;text-decoration:none">Read more</a>
</td></tr>`,
  ).join('\n');
  return `<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">
<html xmlns="http://www.w3.org/1999/xhtml"><head><meta http-equiv="Content-Type" content="text/html; charset=UTF-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0"><title>Weekly news ${issue}</title><style type="text/css">${CSS}</style></head>
<body style="margin:0;padding:0;background:#f4f4f4"><img src="https://track.news.example/open/${issue}/aBcDeFgHiJ.gif" width="1" height="1" alt="" style="display:none">
<table class="wrapper" width="100%" cellpadding="0" cellspacing="0" role="presentation"><tr><td align="center">
<table class="container" width="600" cellpadding="0" cellspacing="0" role="presentation" style="width:600px;background:#ffffff">
<tr><td class="header" style="padding:24px 32px;background:#1a73e8;color:#ffffff"><img src="https://cdn.news.example/logo.png" width="120" height="32" alt="News"><h1 style="font-size:24px;margin:8px 0 0">Weekly news, issue ${issue}</h1></td></tr>
${articles}
<tr><td class="footer" style="padding:24px 32px;font-size:12px;color:#9aa0a6">You receive this because you subscribed at news.example.
<a href="https://click.news.example/unsubscribe?u=${issue}aBcDeF&amp;${utm}=footer" style="color:#9aa0a6">Unsubscribe</a> ·
<a href="https://news.example/preferences?${utm}=prefs" style="color:#9aa0a6">Preferences</a><br>News Inc., 1 Market Street, San Francisco, CA 94105</td></tr>
</table></td></tr></table><img src="https://track.news.example/pixel/${issue}/2.gif" width="1" height="1" alt=""></body></html>`;
}
