/**
 * Checks of a page a browser test has open: axe-core's WCAG 2 A and AA rules, and the layout at a desktop and a
 * phone width (nothing wider than the viewport), with a screenshot of each under test-output/screenshots.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';

export const SCREENSHOTS = join(process.cwd(), 'test-output', 'screenshots');
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's WCAG 2 A and AA rules, run in the page as it stands. */
export async function axeViolations(p: Page): Promise<string[]> {
  // Through the DevTools protocol: the page's own CSP (no script at all) stays in force for the page.
  await p.evaluate(AXE);
  return p.evaluate(async () => {
    const axe = (
      globalThis as unknown as {
        axe: { run(o: unknown): Promise<{ violations: Array<{ id: string; nodes: unknown[] }> }> };
      }
    ).axe;
    const r = await axe.run({ runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
    return r.violations.map((v) => `${v.id} (${v.nodes.length})`);
  });
}

/** The page at 1280 and 390 px: no axe violation, nothing wider than the viewport; screenshots `${shot}-${width}.png`. */
export async function checkLayout(page: Page, name: string, shot: string): Promise<void> {
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 844 });
    expect(await axeViolations(page), `${name} at ${width} px`).toEqual([]);
    const overflow = await page.evaluate(
      () =>
        (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement
          .scrollWidth,
    );
    expect(overflow).toBeLessThanOrEqual(width);
    await page.screenshot({ path: join(SCREENSHOTS, `${shot}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 860 });
}
