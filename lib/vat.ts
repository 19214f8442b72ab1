// Sale line arithmetic (docs/money.md, "Taxes"): integer cents throughout,
// BigInt where a product could pass 2^53. Per line: quantity (up to three
// decimals) × unit price, rounded half away from zero to the cent, minus the
// discount; then VAT on that line, rounded half away from zero; the sale sums
// its lines. With `prices_include_vat` the line's amount is the total and the
// net is total × 100 / (100 + rate), rounded the same way, tax the rest.

/** A line's VAT treatment: a rate (16, 8 or 0 %), exempt, or none given (no tax, and no tax invoice: 422 sale_without_tax). */
export const VAT_RATES = ['16', '8', '0', 'exempt', 'none'] as const;
export type VatRate = (typeof VAT_RATES)[number];

export type LineInput = { quantity: number; unit_price_cents: number; discount_cents?: number; vat_rate: VatRate };
export type LineAmounts = { amount_cents: number; subtotal_cents: number; tax_cents: number; total_cents: number };

/** a / b rounded half away from zero, for integers (b > 0). */
function divRound(a: bigint, b: bigint): bigint {
  const negative = a < 0n;
  const abs = negative ? -a : a;
  const q = (abs * 2n + b) / (2n * b);
  return negative ? -q : q;
}

/** The percent a rate charges (exempt and none charge nothing). */
function ratePercent(rate: VatRate): bigint {
  return rate === 'exempt' || rate === 'none' ? 0n : BigInt(rate);
}

export function lineAmounts(line: LineInput, pricesIncludeVat: boolean): LineAmounts {
  const milli = BigInt(Math.round(line.quantity * 1000));
  const gross = divRound(milli * BigInt(line.unit_price_cents), 1000n) - BigInt(line.discount_cents ?? 0);
  const rate = ratePercent(line.vat_rate);
  let subtotal: bigint;
  let tax: bigint;
  if (pricesIncludeVat) {
    subtotal = divRound(gross * 100n, 100n + rate);
    tax = gross - subtotal;
  } else {
    subtotal = gross;
    tax = divRound(subtotal * rate, 100n);
  }
  return { amount_cents: Number(gross), subtotal_cents: Number(subtotal), tax_cents: Number(tax), total_cents: Number(subtotal + tax) };
}

export function saleAmounts(lines: LineInput[], pricesIncludeVat: boolean) {
  const each = lines.map((line) => lineAmounts(line, pricesIncludeVat));
  const sum = (k: keyof LineAmounts) => each.reduce((n, l) => n + l[k], 0);
  return { lines: each, subtotal_cents: sum('subtotal_cents'), tax_cents: sum('tax_cents'), total_cents: sum('total_cents') };
}
