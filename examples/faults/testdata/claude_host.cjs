// A Node CLI MCP host named claude, for the fault suite (examples/faults,
// row 30j). The suite copies this file to <dir>/claude and runs
// `node <dir>/claude` with NODE_PATH at the example TypeScript server's
// node_modules (the official MCP TypeScript SDK). Like Claude Code it
// titles itself "claude" (process.title) and stays up while it launches
// stdio servers with the SDK's StdioClientTransport (pipes, no shell).
//
// It speaks the suite's helper-host protocol (faults_helpers_test.go,
// helperMCPHost): it prints {"self": {"pid": N}}, then for each "launch"
// line on stdin launches the server (FAULTS_ARGV: a JSON array, program
// and arguments; the environment is this process's), asks session_info,
// recall and session_info again, closes it and prints {"result": ...}
// (launchResult's JSON); it exits at EOF. Nothing else goes to stdout; the
// servers' stderr is this process's stderr.
'use strict';
const readline = require('node:readline');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

process.title = 'claude';
const argv = JSON.parse(process.env.FAULTS_ARGV);

function out(msg) {
  process.stdout.write(JSON.stringify(msg) + '\n');
}

async function call(client, name) {
  const r = await client.callTool({ name, arguments: {} });
  return JSON.parse(r.content.map((c) => c.text || '').join(''));
}

async function launch() {
  const res = { session_id: '', resumed: false, notes: [], alive: false, non_json: [] };
  const transport = new StdioClientTransport({
    command: argv[0],
    args: argv.slice(1),
    env: process.env,
    stderr: 'inherit',
  });
  const client = new Client({ name: 'claude', version: '0.0.0' });
  // The SDK reports a stdout line that is not JSON-RPC as an error.
  client.onerror = (e) => res.non_json.push(String((e && e.message) || e));
  try {
    await client.connect(transport);
    const info = await call(client, 'session_info');
    const notes = await call(client, 'recall');
    const again = await call(client, 'session_info');
    res.session_id = info.session_id;
    res.resumed = info.resumed;
    res.notes = notes.notes;
    res.alive = info.session_id !== '' && again.session_id === info.session_id && again.resumed === info.resumed;
  } catch (e) {
    res.err = String((e && e.message) || e);
  }
  // Close ends the server (stdin closed, then signals) and waits for it, so
  // the next launch finds its lock free.
  await client.close().catch(() => {});
  return res;
}

async function main() {
  out({ self: { pid: process.pid } });
  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (line === 'launch') out({ result: await launch() });
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`claude host: ${e && e.stack}\n`);
    process.exit(1);
  },
);
