// The worker's mail (form post-actions, booking emails): SMTP through nodemailer
// when SMTP_URL is set, otherwise each message is written as an .eml file under
// DATA_DIR/outbox (DESIGN.md), so development needs no mail server.
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import nodemailer from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { Config } from '../../lib/config.ts';

/**
 * A recipient the server refused while it took the message for the others (a refusal of every
 * recipient is an error of the send instead). `code` is the SMTP reply code: 4xx is temporary (the
 * server may take it later), 5xx permanent; null when the server gave none.
 */
export type Refusal = { address: string; code: number | null; response: string };
export type Sent = { messageId: string; refused: Refusal[] };

export type Mailer = { send: (message: Mail.Options) => Promise<Sent>; close: () => void };

/** Whether a refused recipient may take the message later (4xx, or no code): sent to again on a retry. */
export function isTemporaryRefusal(refusal: Refusal): boolean {
  return refusal.code === null || refusal.code < 500;
}

type SmtpInfo = { messageId: string; rejected?: Array<string | { address: string }>; rejectedErrors?: Array<{ recipient?: string; responseCode?: number; response?: string; message: string }> };

/** nodemailer resolves a send that some recipients refused: who, and with what answer. */
function refusalsOf(info: SmtpInfo): Refusal[] {
  const errors = info.rejectedErrors ?? [];
  const refused = (info.rejected ?? []).map((r) => (typeof r === 'string' ? r : r.address));
  return refused.map((address) => {
    const error = errors.find((e) => e.recipient === address);
    return { address, code: error?.responseCode ?? null, response: String(error?.response ?? error?.message ?? '').slice(0, 300) };
  });
}

/** How long a send waits for the server: to connect, for its greeting, and for any answer after that. */
export const SMTP_TIMEOUTS = { connectionTimeout: 30_000, greetingTimeout: 30_000, socketTimeout: 60_000 } as const;

export function createMailer(config: Pick<Config, 'smtpUrl' | 'dataDir'>): Mailer {
  if (config.smtpUrl) {
    // Bounded waits (nodemailer's default socket timeout is 10 minutes): a mail server that stalls
    // fails the send, which is retried with backoff, instead of holding a worker slot.
    const transport = nodemailer.createTransport({ url: config.smtpUrl, ...SMTP_TIMEOUTS });
    return {
      send: async (message) => {
        const info = (await transport.sendMail(message)) as SmtpInfo;
        return { messageId: info.messageId, refused: refusalsOf(info) };
      },
      close: () => transport.close(),
    };
  }
  const outbox = path.join(config.dataDir, 'outbox');
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: false, newline: 'windows' });
  return {
    send: async (message) => {
      await mkdir(outbox, { recursive: true });
      const info = await transport.sendMail(message);
      const name = `${new Date().toISOString().replace(/[:.]/g, '-')}-${info.messageId.replace(/[^A-Za-z0-9.-]/g, '_')}.eml`;
      await pipeline(info.message, createWriteStream(path.join(outbox, name)));
      return { messageId: info.messageId, refused: [] };
    },
    close: () => transport.close(),
  };
}

/**
 * Permanent failures (the server refused the message for good: 5xx) are not
 * retried; everything else (4xx, connection refused, timeouts) is transient.
 */
export function isTransientMailError(error: unknown): boolean {
  const code = (error as { responseCode?: number })?.responseCode;
  return !(typeof code === 'number' && code >= 500 && code < 600);
}

/**
 * The sender of the service's own emails: `<name> <no-reply@<site host>>`, with the name (a company's
 * or a form's, which tenants choose) given to nodemailer as a name to encode, never spliced into the
 * address text: a name ending in `\` once escaped its closing quote and turned the whole From into
 * another mailbox at our domain.
 */
export function noReplyFrom(name: string, config: Pick<Config, 'siteUrl'>): Mail.Address {
  return { name: name.replace(/[\r\n]+/g, ' '), address: `no-reply@${new URL(config.siteUrl).hostname}` };
}

const mailers = new Map<string, Mailer>();
/** One mailer (one pooled SMTP transport) per configuration, shared by every job that sends mail. */
export function mailerFor(config: Pick<Config, 'smtpUrl' | 'dataDir'>): Mailer {
  const key = `${config.smtpUrl ?? ''}|${config.dataDir}`;
  let mailer = mailers.get(key);
  if (!mailer) mailers.set(key, (mailer = createMailer(config)));
  return mailer;
}
