/**
 * Connector icons (`specs/icons/<connector>.svg`, compiled into the registry): served at `/icons/<connector>.svg`
 * without authentication (MCP clients and browsers fetch them as images), and named in MCP's `icons` of every tool.
 * The generator accepts only self-contained drawings; the answer also forbids scripts and any fetch.
 */
import type { Request, Response } from 'express';
import type { ConnectorDefinition } from '../../core/tool-types.ts';
import { connectors } from './catalog.ts';

const ICON_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox";

export function connectorIcon(req: Request, res: Response, next: () => void): void {
  const m = /^([a-z][a-z0-9]*)\.svg$/.exec(String(req.params.file));
  const svg = m ? connectors.get(m[1]!)?.icon : undefined;
  if (!svg) return next();
  res.setHeader('content-type', 'image/svg+xml; charset=utf-8');
  res.setHeader('content-security-policy', ICON_CSP);
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('cache-control', 'public, max-age=86400');
  res.end(svg);
}

/** The icon's path on the service, when the connector has one. */
export function iconPath(connector: ConnectorDefinition | undefined): string | undefined {
  return connector?.icon ? `/icons/${connector.name}.svg` : undefined;
}

/** MCP's `icons` of a connector's tools: its SVG, at the service's public URL. */
export function mcpIcons(
  connector: ConnectorDefinition | undefined,
  publicUrl: string,
): Array<{ src: string; mimeType: string; sizes: string[] }> | undefined {
  const path = iconPath(connector);
  return path
    ? [{ src: `${publicUrl.replace(/\/+$/, '')}${path}`, mimeType: 'image/svg+xml', sizes: ['any'] }]
    : undefined;
}
