// Money values as the API takes them: integer cents (never floats, never
// beyond 2^53 − 1, where a JSON number stops being exact), lowercase ISO 4217
// currency codes (checked against the runtime's ISO 4217 list, as Stripe
// writes them), and the flat `metadata` objects of the contract (Metadata:
// 50 keys, 40-byte keys, 500-byte values, no nested objects or lists).

export const CURRENCIES: ReadonlySet<string> = new Set(Intl.supportedValuesOf('currency').map((c) => c.toLowerCase()));

export function isCurrency(value: string): boolean {
  return CURRENCIES.has(value);
}

export const METADATA_LIMITS = { keys: 50, keyBytes: 40, valueBytes: 500 } as const;

export type Metadata = Record<string, string>;

/**
 * Why a metadata object breaks the contract's rules, or null. Values may be
 * strings, numbers or booleans and are stored as strings (as Stripe does);
 * `null` or `""` remove a key on update.
 */
export function metadataProblem(value: unknown): string | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'metadata debe ser un objeto plano';
  const entries = Object.entries(value as Record<string, unknown>);
  // Keys set to null or "" remove what is stored: an update may name 50 new keys and the ones it drops.
  const setting = entries.filter(([, v]) => v !== null && v !== '').length;
  if (setting > METADATA_LIMITS.keys) return `metadata admite ${METADATA_LIMITS.keys} claves como máximo (recibió ${setting})`;
  for (const [key, v] of entries) {
    if (key === '' && v !== null && v !== '') return 'una clave vacía no nombra nada'; // null or "" removes one stored before this rule
    if (Buffer.byteLength(key) > METADATA_LIMITS.keyBytes) return `la clave "${key.slice(0, 50)}" pasa de ${METADATA_LIMITS.keyBytes} bytes`;
    if (v !== null && typeof v === 'object') return `el valor de "${key}" no puede ser un objeto ni una lista`;
    if (v !== null && typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') return `el valor de "${key}" debe ser texto, número o booleano`;
    // JSON reads 1e400 as Infinity: stored as text it would be "Infinity", not what was sent.
    if (typeof v === 'number' && !Number.isFinite(v)) return `el valor de "${key}" es un número fuera de rango; envíalo como texto`;
    // Past 2^53 a JSON number has already lost digits when it is read (12345678901234567890 reads as
    // 12345678901234567000): stored, it would not be what was sent. Such ids go as text.
    if (typeof v === 'number' && Number.isInteger(v) && !Number.isSafeInteger(v)) {
      return `el valor de "${key}" es un entero mayor que 9007199254740991, que un número JSON no guarda con exactitud; envíalo como texto`;
    }
    if (v !== null && Buffer.byteLength(String(v)) > METADATA_LIMITS.valueBytes) return `el valor de "${key}" pasa de ${METADATA_LIMITS.valueBytes} bytes`;
  }
  if ('external_ref' in value && (value as Record<string, unknown>).external_ref !== null && typeof (value as Record<string, unknown>).external_ref !== 'string') {
    return 'metadata.external_ref debe ser texto';
  }
  return null;
}

/** Metadata as stored: values as strings, removed keys (null or "") dropped; `base` is the stored metadata on update. */
export function mergeMetadata(base: Metadata, update: Record<string, unknown>): Metadata {
  const out: Metadata = { ...base };
  for (const [key, v] of Object.entries(update)) {
    if (v === null || v === '') delete out[key];
    else out[key] = String(v);
  }
  return out;
}
