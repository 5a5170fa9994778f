/**
 * `{ ...source, ...fields }` for objects made on hot paths (history blocks, events). On Node 20's V8
 * an object literal that spreads an object and then adds properties gets a hidden class of its own
 * almost every time: measured, 3–5 µs to make one (a plain literal: 0.02 µs), a new map held in
 * memory per object, and every later property read on such objects (the renderer's, JSON.stringify's)
 * misses its inline caches. `Object.assign` onto a fresh literal walks the same cached transitions for
 * objects of one shape, so they share one hidden class (docs/decisions.md #16). Same result as the
 * spread — `source`'s own enumerable properties in order, then `fields`, which win on a clash — but for
 * an own `__proto__` key (JSON.parse makes one): `Object.assign` would set the new object's prototype
 * through it, so such a source is spread instead.
 */
export function withFields<Source extends object, Fields extends object>(
  source: Source,
  fields: Fields,
): Omit<Source, keyof Fields> & Fields {
  if (Object.hasOwn(source, "__proto__")) return { ...source, ...fields };
  return Object.assign({}, source, fields);
}
