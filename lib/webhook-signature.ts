// The webhook signature (contract, Events: "Signature"): HMAC-SHA256 over
// `<t>.<raw body>` keyed with the endpoint's whole secret (`whsec_` prefix
// included, DESIGN.md), sent as `X-Service-Signature: t=<unix>,v1=<hex>`.
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString('base64url');
}

/** `t=<unix seconds>,v1=<hex>` for the exact bytes about to be sent. */
export function signatureHeader(secret: string, body: string | Buffer, unixSeconds: number = Math.floor(Date.now() / 1000)): string {
  const digest = createHmac('sha256', secret).update(`${unixSeconds}.`).update(body).digest('hex');
  return `t=${unixSeconds},v1=${digest}`;
}
