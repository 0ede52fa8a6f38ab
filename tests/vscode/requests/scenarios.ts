// Scenarios of tests/clients/test_vscode_requests.py: src/tools.ts over src/requests.ts with a
// stand-in `send`; each scenario prints what it observed as one JSON line, all run at once. No
// timers: a call that never settles leaves nothing for node to wait on, and its line is missing.
import { makeRun, ServerGate } from '../../../editor_clients/vscode/src/requests';
import { registerTools } from '../../../editor_clients/vscode/src/tools';
const vscode = require('vscode');

class Token {
  isCancellationRequested = false;
  private listeners: (() => void)[] = [];
  onCancellationRequested(listener: () => void) {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  }
  cancel() {
    this.isCancellationRequested = true;
    for (const l of this.listeners) l();
  }
}

function setup(answer: (command: string) => Promise<any>) {
  const gate = new ServerGate();
  const sent: string[] = [];
  const run = makeRun(gate, (command) => (sent.push(command), answer(command)), () => {});
  registerTools(run);
  const tools = { ...vscode.tools }; // this scenario's: the next one registers its own
  const call = async (verb: string, input: object, token = new Token()) => {
    const result = await tools[`agentEdit_${verb}`].invoke({ input }, token);
    return JSON.parse(result.content[0].value);
  };
  return { gate, sent, call };
}

const tick = () => new Promise((r) => setImmediate(r));
const WRITE = { path: 'a.txt', text: 'x\n' };
const say = (name: string, value: unknown) => console.log(JSON.stringify({ [name]: value }));

const scenarios: Record<string, () => Promise<unknown>> = {
  failedStart: async () => {
    const s = setup(async () => ({ ok: true, status: 'dry-run' }));
    s.gate.set('failed');
    return { result: await s.call('write', WRITE), sent: s.sent.length };
  },
  cancelledWhileStarting: async () => {
    const s = setup(async () => ({ ok: true, status: 'dry-run' }));
    const token = new Token();
    const pending = s.call('write', WRITE, token);
    await tick();
    token.cancel();
    const result = await pending;
    s.gate.set('running'); // the person fixes the setting afterwards
    await tick();
    return { result, sent: s.sent.length };
  },
  waitsForAStartUnderWay: async () => {
    const s = setup(async () => ({ ok: true, status: 'dry-run', editId: 'e1' }));
    const pending = s.call('write', WRITE);
    await tick();
    const before = s.sent.length;
    s.gate.set('running');
    return { sentBefore: before, result: await pending, sent: s.sent };
  },
  aNewStartAfterAFailedOne: async () => {
    const s = setup(async () => ({ ok: true, status: 'dry-run' }));
    s.gate.set('failed');
    s.gate.set('starting'); // "Select interpreter": a new start
    const pending = s.call('read', { path: 'a.txt' });
    await tick();
    s.gate.set('running');
    return { result: await pending, sent: s.sent.length };
  },
  noAnswer_write: () => failing(new Error('Connection got disposed.'), 'write', WRITE),
  noAnswer_read: () => failing(new Error('Connection got disposed.'), 'read', { path: 'a.txt' }),
  invalidParams: () => failing({ code: -32602, message: 'Invalid params: path' }, 'write', WRITE),
};

async function failing(err: unknown, verb: string, input: object) {
  const s = setup(async () => Promise.reject(err));
  s.gate.set('running');
  return s.call(verb, input);
}

for (const [name, run] of Object.entries(scenarios)) void run().then((value) => say(name, value));
