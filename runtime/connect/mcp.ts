/**
 * `authorization_required` over MCP, for every protocol era the endpoint speaks: the one place that turns the error
 * into what an MCP client gets (today, a tool error whose text carries the link; URL-mode elicitation builds on it).
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { AuthorizationRequiredError } from '../../core/errors.ts';

export function authorizationText(err: AuthorizationRequiredError): CallToolResult {
  const why = err.message.replace(/ Send the user to the link.*$/, '');
  return {
    content: [
      {
        type: 'text',
        text: `${why} Ask the user to open this link to connect it, then try again: ${err.info.link}`,
      },
    ],
    isError: true,
  };
}
