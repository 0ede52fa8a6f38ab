/**
 * Requests go to the server only while one runs; one never sent is a `NotSent`, of which a result
 * may say "nothing was changed". A call made while the start had failed (a wrong Python) used to
 * wait for the server without end; stopped by the person, it was still sent, and landed, once they
 * fixed the setting. A start under way is waited for, a failed one and a cancellation are not.
 */
export interface Cancellation {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): { dispose(): void };
}

export class NotSent extends Error {
  constructor(readonly code: 'NO_SERVER' | 'CANCELLED', message: string, readonly hint: string) {
    super(message);
  }
}

export class ServerGate {
  private state: 'starting' | 'running' | 'failed' = 'starting';
  private readonly waiting = new Set<() => void>();

  set(state: 'starting' | 'running' | 'failed'): void {
    this.state = state;
    for (const wake of [...this.waiting]) wake();
  }

  async open(command: string, token?: Cancellation): Promise<void> {
    for (;;) {
      if (token?.isCancellationRequested) {
        throw new NotSent('CANCELLED', `${command} was cancelled before it was sent to the server; nothing was changed.`, 'Ask again if it is still wanted.');
      }
      if (this.state === 'running') return;
      if (this.state === 'failed') {
        throw new NotSent('NO_SERVER', `The Agent Edit server is not running, so ${command} was not sent; nothing was changed.`, 'See "Agent Edit: Show Log" and the agentEdit.server.python setting, then try again.');
      }
      await new Promise<void>((resolve) => {
        const wake = () => (this.waiting.delete(wake), sub?.dispose(), resolve());
        this.waiting.add(wake);
        const sub = token?.onCancellationRequested(wake);
      });
    }
  }
}

export type Run = (command: string, args: object, token?: Cancellation) => Promise<any>;

/** The token only decides whether a request is sent: once sent, its answer is awaited. */
export function makeRun(gate: ServerGate, send: (command: string, args: object) => Promise<any>, onError: (command: string, err: unknown) => void): Run {
  return async (command, args, token) => {
    await gate.open(command, token);
    return send(command, args).catch((err) => {
      onError(command, err);
      throw err;
    });
  };
}

/** Whether `err` proves the request changed nothing: never sent, or refused as a request
 * (parse error, invalid request, unknown method, invalid params) before any handler ran. */
export const changedNothing = (err: any): boolean => err instanceof NotSent || [-32700, -32600, -32601, -32602].includes(err?.code);
