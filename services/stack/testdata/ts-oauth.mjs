// The official TypeScript SDK client with no API key: it discovers the
// authorization server from /mcp's 401, registers itself (RFC 7591), runs
// the authorization code flow with PKCE through its OAuthClientProvider,
// calls a tool as the signed-in user, and then refreshes a dead access
// token on its own. The login and consent pages are driven as a browser
// would: follow the URL, post the forms, read the redirect.
// Usage: node ts-oauth.mjs MCP_URL EMAIL PASSWORD. Prints one JSON line.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const [mcpURL, email, password] = process.argv.slice(2);
const redirectUrl = "http://127.0.0.1:33418/callback";

class MemoryProvider {
  constructor() { this.authURL = undefined; this.saved = {}; }
  get redirectUrl() { return redirectUrl; }
  get clientMetadata() {
    return { client_name: "Mirobody TS SDK test", redirect_uris: [redirectUrl], grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"], token_endpoint_auth_method: "none" };
  }
  clientInformation() { return this.saved.client; }
  saveClientInformation(c) { this.saved.client = c; }
  tokens() { return this.saved.tokens; }
  saveTokens(t) { this.saved.tokens = t; }
  redirectToAuthorization(u) { this.authURL = u; }
  saveCodeVerifier(v) { this.saved.verifier = v; }
  codeVerifier() { return this.saved.verifier; }
}

// A minimal user agent: cookies kept by name, redirects not followed.
const jar = new Map();
async function browse(url, init = {}) {
  const headers = { ...(init.headers || {}) };
  if (jar.size) headers.cookie = [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
  const res = await fetch(url, { ...init, headers, redirect: "manual" });
  for (const c of res.headers.getSetCookie()) {
    const [kv] = c.split(";");
    const i = kv.indexOf("=");
    jar.set(kv.slice(0, i), kv.slice(i + 1));
  }
  return res;
}
function hidden(page) {
  const f = {};
  for (const m of page.matchAll(/<input type="hidden" name="([a-z]+)" value="([^"]*)">/g)) f[m[1]] = m[2];
  return f;
}
async function postForm(url, fields) {
  return browse(url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(fields) });
}

async function signIn(authURL) {
  const origin = new URL(authURL).origin;
  let res = await browse(authURL);
  if (res.status !== 200) throw new Error(`authorize: ${res.status} ${await res.text()}`);
  res = await postForm(origin + "/oauth/login", { ...hidden(await res.text()), email, password });
  if (res.status !== 200) throw new Error(`login: ${res.status} ${await res.text()}`);
  res = await postForm(origin + "/oauth/consent", { ...hidden(await res.text()), action: "allow" });
  if (res.status !== 303) throw new Error(`consent: ${res.status} ${await res.text()}`);
  const back = new URL(res.headers.get("location"));
  if (back.origin + back.pathname !== redirectUrl) throw new Error(`redirected to ${back}`);
  return back.searchParams.get("code");
}

const provider = new MemoryProvider();
const out = { unauthorized: false, account: "", refreshed: "", tools: 0 };
let transport = new StreamableHTTPClientTransport(new URL(mcpURL), { authProvider: provider });
let client = new Client({ name: "mirobody-ts-oauth", version: "1.0.0" });
try {
  await client.connect(transport);
  await client.callTool({ name: "my_account", arguments: {} });
} catch (e) {
  if (!(e instanceof UnauthorizedError)) throw e;
  out.unauthorized = true;
}
if (!provider.authURL) throw new Error("the SDK never asked for authorization");
await transport.finishAuth(await signIn(provider.authURL.toString()));
await client.close();

transport = new StreamableHTTPClientTransport(new URL(mcpURL), { authProvider: provider });
client = new Client({ name: "mirobody-ts-oauth", version: "1.0.0" });
await client.connect(transport);
out.tools = (await client.listTools()).tools.length;
out.account = (await client.callTool({ name: "my_account", arguments: {} })).content[0].text;
await client.close();

// A dead access token: the SDK refreshes with its refresh token by itself.
provider.saved.tokens = { ...provider.saved.tokens, access_token: "x.y.z" };
transport = new StreamableHTTPClientTransport(new URL(mcpURL), { authProvider: provider });
client = new Client({ name: "mirobody-ts-oauth", version: "1.0.0" });
await client.connect(transport);
out.refreshed = (await client.callTool({ name: "my_account", arguments: {} })).content[0].text;
await client.close();
console.log(JSON.stringify(out));
