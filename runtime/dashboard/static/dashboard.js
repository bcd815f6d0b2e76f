// Progressive enhancement for the dashboard (every flow works without it): copy buttons, the account-status
// filter submitting on change, and the tool search filtering as you type. Served as a file so the CSP can
// forbid inline scripts.
'use strict';

async function copyFrom(input, button) {
  const text = input.value;
  let ok;
  try {
    await navigator.clipboard.writeText(text);
    ok = true;
  } catch {
    input.focus();
    input.select();
    try {
      ok = document.execCommand('copy');
    } catch {
      ok = false;
    }
  }
  const label = button.textContent;
  button.textContent = ok ? 'Copied' : 'Select and copy';
  setTimeout(() => (button.textContent = label), 1500);
}

// Asks the server for the page the form would load and swaps in the regions named by data-live-search, so
// the results come from the same search as without JavaScript.
function liveSearch(form) {
  const ids = form.dataset.liveSearch.split(/\s+/);
  let timer;
  let latest = 0;
  const run = async () => {
    const params = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (v) params.append(k, v);
    const query = params.toString();
    const url = query ? `${form.action}?${query}` : form.action;
    const mine = ++latest;
    let res;
    try {
      res = await fetch(url, { credentials: 'same-origin' });
    } catch {
      return;
    }
    if (res.redirected || !res.ok) {
      window.location.assign(url);
      return;
    }
    const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
    if (mine !== latest) return;
    for (const id of ids) {
      const now = document.getElementById(id);
      const next = doc.getElementById(id);
      if (!now || !next) continue;
      now.replaceChildren(...[...next.childNodes].map((n) => document.adoptNode(n)));
      now.hidden = next.hidden;
    }
    history.replaceState(null, '', url);
  };
  form.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(run, 200);
  });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    clearTimeout(timer);
    run();
  });
}

document.addEventListener('DOMContentLoaded', () => {
  for (const button of document.querySelectorAll('button[data-copy]')) {
    const input = document.getElementById(button.dataset.copy);
    if (!input) continue;
    button.hidden = false;
    button.addEventListener('click', () => copyFrom(input, button));
  }
  for (const select of document.querySelectorAll('select[data-autosubmit]')) {
    select.addEventListener('change', () => select.form && select.form.requestSubmit());
  }
  for (const form of document.querySelectorAll('form[data-live-search]')) liveSearch(form);
  const result = document.getElementById('result');
  if (result) result.scrollIntoView({ block: 'nearest' });
});
