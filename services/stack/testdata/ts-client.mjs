// The official TypeScript SDK client against /mcp: initialize, list, call
// a Python tool, then a tool that needs a user. Usage: node ts-client.mjs
// URL [API_KEY]. Prints one JSON line.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, key] = process.argv.slice(2);
const headers = key ? { Authorization: `Bearer ${key}` } : {};
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const client = new Client({ name: "mirobody-ts-test", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const simple = await client.callTool({ name: "test_simple_text", arguments: {} });
const out = { tools: tools.map((t) => t.name), text: simple.content[0].text, account: "", anonErr: "" };
try {
  const r = await client.callTool({ name: "my_account", arguments: {} });
  out.account = r.content[0].text;
} catch (e) {
  out.anonErr = String(e);
}
await client.close();
console.log(JSON.stringify(out));
