// Progressive enhancement for the dashboard (every flow works without it): copy buttons, and the
// account-status filter submitting on change. Served as a file so the CSP can forbid inline scripts.
'use strict';

async function copyFrom(input, button) {
  const text = input.value;
  let ok = false;
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
  const result = document.getElementById('result');
  if (result) result.scrollIntoView({ block: 'nearest' });
});
