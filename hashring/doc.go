// Package hashring is docshard's consistent-hash partition resolver (kind
// "hash"): every collection link owns a number of points (virtual nodes) on
// a circle of hash values, and a key belongs to the collection owning the
// first point at or after the key's hash. Adding a collection moves only the
// keys its new points capture, about 1/(n+1) of them, and every one of them
// moves to the new collection.
//
// The ring is exact, so every process and language places a key alike (see
// docs/design.md#the-ring). With flavour "md5" (the default, 16 virtual nodes) a link's
// first point is MD5 of its UTF-8 bytes, each next point MD5 of the previous
// digest; points sort as unsigned big-endian digests, equal ones in link
// order; a key's hash is MD5 of its canonical text (a string as is, a number
// in RFC 8785 form, a composite key as its canonical JSON array). The
// compatibility flavours reproduce the rings of the old DocumentDB SDKs, so
// data they placed is found where they put it: "dotnet-x64" and "dotnet-x86"
// (the .NET Framework SDK: the md5 ring seeded from the legacy
// String.GetHashCode of a 64-bit or 32-bit process) and "murmur3" (the
// Node.js, Python and Java SDKs: MurmurHash3 x86 32-bit, the owner being the
// last point at or before the key). Both default to the SDKs' 128 points.
// Other generators for the md5-style ring plug in through HashGenerator and
// RegisterHashGenerator ("xxhash" is built in).
//
// Virtual nodes trade memory and build time for balance: with 16 points per
// collection the largest collection holds well above the mean (about 1.3×
// with 10 collections, 1.6× with 100); 160 or more points bring it near
// 1.1-1.2×. The "bounded" strategy, built on github.com/buraksezer/consistent,
// cuts the key space into partitions and caps every collection's share of
// them at loadFactor times the mean, at the cost of moving more keys than
// the ideal when collections change. The "balanced" strategy keeps every
// collection within 8% of the mean at any size and moves close to the
// ideal share when collections change: 256 points per collection, each arc
// between two points split between its two collections in proportion to
// weights tuned at build time; its table is packed into about 9 bytes a
// point (23 MB at 10,000 collections) and searched from an index on the
// top bits of a key's position, and it takes half a second of CPU to build
// at 10,000 collections. Ring.Shares and Moved compute a ring's balance and
// the keys a change moves exactly, without sampling.
//
// A Resolver and its Ring are immutable and safe for concurrent use; lookups
// take no lock and allocate nothing for string and number keys.
package hashring
