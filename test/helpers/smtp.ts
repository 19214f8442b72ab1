// A real SMTP server (smtp-server) on a random port, for tests of email:
// every accepted message parsed (mailparser); `state.failNext` answers 451 to
// the next messages, `state.reject` refuses chosen recipients (each refusal is
// kept in `refused`, so a test can count the attempts), `state.stall`
// leaves chosen messages unanswered until `release()` (a server that hangs).
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export type Received = { to: string[]; mail: ParsedMail };

/** A real SMTP server on a random port; `reject` decides per recipient. */
export async function startSmtp() {
  const received: Received[] = [];
  /** Every recipient refused at RCPT TO, once per attempt, with the code answered. */
  const refused: Array<{ to: string; code: number }> = [];
  const state = { failNext: 0, reject: (_to: string): number | null => null, stall: (_to: string[]): boolean => false };
  const stalled: Array<() => void> = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    size: 60 * 1024 * 1024,
    onRcptTo(address, _session, callback) {
      const code = state.reject(address.address);
      if (code) refused.push({ to: address.address, code });
      if (code) return callback(Object.assign(new Error(`rechazado ${code}`), { responseCode: code }));
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', async () => {
        const to = session.envelope.rcptTo.map((r) => r.address);
        if (state.stall(to)) {
          stalled.push(() => callback(Object.assign(new Error('Intenta más tarde'), { responseCode: 451 })));
          return;
        }
        if (state.failNext > 0) {
          state.failNext--;
          return callback(Object.assign(new Error('Intenta más tarde'), { responseCode: 451 }));
        }
        received.push({ to: session.envelope.rcptTo.map((r) => r.address), mail: await simpleParser(Buffer.concat(chunks)) });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  /** Answers every stalled message with a 451 (the sender retries it later). */
  const release = () => {
    for (const answer of stalled.splice(0)) answer();
  };
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    refused,
    state,
    stalled,
    release,
    close: () => {
      release();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}
