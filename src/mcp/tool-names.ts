// Apart from server.ts so that the routes can check tool names without loading the MCP SDK.
export const BUILT_IN_TOOLS = ['whoami', 'list_api_keys'] as const;
