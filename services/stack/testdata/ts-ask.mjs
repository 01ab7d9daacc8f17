// The official TypeScript SDK client answering a Python tool's
// elicitation and receiving its log records. Usage: node ts-ask.mjs URL
// API_KEY. Prints one JSON line.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, key] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
const client = new Client({ name: "mirobody-ts-ask", version: "1.0.0" }, { capabilities: { elicitation: {} } });
const out = { text: "", logs: [], asked: "" };
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  out.asked = req.params.message;
  return { action: "accept", content: { colour: "green" } };
});
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
  out.logs.push({ level: n.params.level, logger: n.params.logger ?? "", data: n.params.data });
});
await client.connect(transport);
await client.setLoggingLevel("info");
const r = await client.callTool({ name: "favourite_colour", arguments: {} });
out.text = r.content[0].text;
await client.close();
console.log(JSON.stringify(out));
