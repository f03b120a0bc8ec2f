// Generates es6-numbers.txt (run: node es6-numbers.js > es6-numbers.txt):
// IEEE 754 bits in hex and ECMAScript Number.prototype.toString of the
// value, the number form RFC 8785 (JSON canonicalisation) prescribes.
let seed = 20261122n;
function next() { seed = (seed * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn; return seed; }
const buf = Buffer.alloc(8);
const out = [];
const seen = new Set();
function add(x) { buf.writeDoubleBE(x, 0); if (!isFinite(x)) return; const line = buf.toString('hex') + ' ' + String(x); if (!seen.has(line)) { seen.add(line); out.push(line); } }
for (let i = 0; i < 1500; i++) { buf.writeBigUInt64BE(next(), 0); add(buf.readDoubleBE(0)); }
for (let i = 0; i < 300; i++) { add(Number(next() >> 11n)); add(-Number(next() >> 30n)); add(Number(next() >> 1n)); }
for (let k = -9; k <= 24; k++) for (let i = 0; i < 12; i++) { const m = Number(next() % 100000n) / 10000; add(m * Math.pow(10, k)); add(Number((m * Math.pow(10, k)).toPrecision(1 + i % 17))); }
for (let k = -330; k <= 308; k += 7) add(Number('1e' + k));
for (let k = -1074; k <= 1023; k += 13) add(Math.pow(2, k));
console.log(out.join('\n'));
