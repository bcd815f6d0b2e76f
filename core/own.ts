/**
 * Objects built from what a client sent. A key such as `__proto__` is a plain own property of what JSON.parse
 * returns, but `out[key] = value` on an ordinary object would call the prototype setter instead (dropping the
 * field, or swapping the object's prototype), and `table[key]` finds `constructor` or `toString` on
 * Object.prototype. Copy with `setOwn` and look up with `ownValue`.
 */

/** Sets `key` as an own, enumerable property, whatever its name (`__proto__` included). */
export function setOwn<T>(target: Record<string, T>, key: string, value: T): void {
  if (key === '__proto__')
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/** `table[key]` if `table` has it as its own property; undefined for inherited names such as `constructor`. */
export function ownValue<T>(table: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return table !== undefined && Object.hasOwn(table, key) ? table[key] : undefined;
}
