"""The doors into robotmem: CLI, MCP server, REST API and web page. Each only translates."""
