/**
 * The description an agent sees for a tool: the YAML's description, then its guidance (when to use it, what it
 * changes, what it costs; generator/guidance.ts composes it). Tool search indexes the description alone.
 */
export function agentDescription(tool: { readonly description: string; readonly guidance?: string }): string {
  return tool.guidance ? `${tool.description.trim()}\n\n${tool.guidance}` : tool.description;
}
