/**
 * A connector's icon: `specs/icons/<connector>.svg`, the connector's own file (like its hooks). The service serves it
 * (`GET /icons/<connector>.svg`), MCP lists it as every tool's `icons`, the dashboard and the generated docs show it.
 * An SVG is a document that can carry scripts and fetch other resources, so only a small, self-contained drawing is
 * accepted.
 */
import { existsSync, readFileSync } from 'node:fs';

export const MAX_ICON_BYTES = 8192;

/** The connector's SVG, or undefined when it has none; a problem is an error naming the file. */
export function connectorIcon(connector: string, dir = 'specs/icons'): string | undefined {
  const path = `${dir}/${connector}.svg`;
  if (!existsSync(path)) return undefined;
  const svg = readFileSync(path, 'utf8').trim();
  const problem = iconProblem(svg);
  if (problem) throw new Error(`${path}: ${problem}`);
  return svg;
}

export function iconProblem(svg: string): string | undefined {
  if (Buffer.byteLength(svg) > MAX_ICON_BYTES) return `is larger than ${MAX_ICON_BYTES} bytes`;
  if (!/^<svg\s[^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/.test(svg))
    return 'must be one <svg> element with xmlns="http://www.w3.org/2000/svg"';
  if (/<script|<foreignObject|<!ENTITY|<!DOCTYPE/i.test(svg)) return 'may hold no script, foreign object or DTD';
  if (/\son[a-z]+\s*=/i.test(svg)) return 'may hold no event handler attribute';
  if (/(?:href|src)\s*=\s*["'](?!#)/i.test(svg) || /url\(\s*["']?(?!#)/i.test(svg))
    return 'may refer to nothing outside itself (links and url() only to #fragments)';
  return undefined;
}
