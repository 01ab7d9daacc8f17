// The official TypeScript SDK client lists the tools of /mcp. Usage: node
// ts-list.mjs URL API_KEY. Prints one JSON line: the tool names, or the
// error listTools() threw.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, key] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
const client = new Client({ name: "mirobody-ts-list", version: "1.0.0" });
await client.connect(transport);
const out = { tools: [], error: "" };
try {
  out.tools = (await client.listTools()).tools.map((t) => t.name);
} catch (e) {
  out.error = String(e).slice(0, 500);
}
await client.close();
console.log(JSON.stringify(out));
