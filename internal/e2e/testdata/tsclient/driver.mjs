// A TypeScript-SDK MCP client run by the e2e tests against the real binary:
//
//   node driver.mjs v2|v1 stdio|http TARGET...
//
// v2 is @modelcontextprotocol/client 2.x (2026-07-28: server/discover first,
// falling back to initialize), v1 is @modelcontextprotocol/sdk 1.x
// (2025 only). TARGET is the server command line (stdio) or the endpoint
// URL (http), whose bearer token comes in $DRIVER_BEARER_TOKEN. It lists every page of tools, calls a tool, a call with bad
// arguments, and a tool that needs confirmation three times, answering the
// elicitation accept, decline and cancel, and prints what happened as one
// JSON object.
const [sdk, transport, ...target] = process.argv.slice(2);

let Client, StdioClientTransport, StreamableHTTPClientTransport, elicitMethod;
if (sdk === 'v2') {
  ({ Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client'));
  ({ StdioClientTransport } = await import('@modelcontextprotocol/client/stdio'));
  elicitMethod = 'elicitation/create';
} else {
  ({ Client } = await import('@modelcontextprotocol/sdk/client/index.js'));
  ({ StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js'));
  ({ StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js'));
  ({ ElicitRequestSchema: elicitMethod } = await import('@modelcontextprotocol/sdk/types.js'));
}

const options = { capabilities: { elicitation: { form: {} } } };
if (sdk === 'v2') options.versionNegotiation = { mode: 'auto' };
const client = new Client({ name: `toolhost-e2e-${sdk}`, version: '1.0.0' }, options);
const answers = ['accept', 'decline', 'cancel'];
const asked = [];
client.setRequestHandler(elicitMethod, async (req) => {
  asked.push(req.params.message);
  const action = answers.shift();
  return action === 'accept' ? { action, content: { confirm: true } } : { action };
});

const t = transport === 'stdio'
  ? new StdioClientTransport({ command: target[0], args: target.slice(1), stderr: 'ignore' })
  : new StreamableHTTPClientTransport(new URL(target[0]),
    { requestInit: { headers: { Authorization: `Bearer ${process.env.DRIVER_BEARER_TOKEN}` } } });
// v1 has no accessor for the negotiated revision; it hands it to the
// transport.
let negotiated;
const setVersion = t.setProtocolVersion;
t.setProtocolVersion = (v) => { negotiated = v; setVersion?.call(t, v); };
await client.connect(t);

const out = {
  version: client.getNegotiatedProtocolVersion ? client.getNegotiatedProtocolVersion() : negotiated,
  server: client.getServerVersion(),
  tools: [],
};
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  out.tools.push(...page.tools.map((x) => x.name));
  cursor = page.nextCursor;
} while (cursor);
const text = (r) => r.content.map((c) => c.text).join('\n');
const call = async (name, args) => {
  const r = await client.callTool({ name, arguments: args });
  return { isError: !!r.isError, text: text(r), structured: r.structuredContent };
};
out.list = await call('bug_list', {});
out.bad = await call('timeline_append', { kind: 5 });
out.confirm = [];
for (const a of ['accept', 'decline', 'cancel']) {
  out.confirm.push(await call('timeline_append', { kind: 'test.ts', message: `answered ${a}` }));
}
out.asked = asked.length;
await client.close();
console.log(JSON.stringify(out));
