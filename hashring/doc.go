// Package hashring is docshard's consistent-hash partition resolver (kind
// "hash"): every collection link owns a number of points (virtual nodes) on
// a ring of hash values, and a key belongs to the collection owning the
// first point at or after the key's hash. Adding a collection moves only the
// keys its new points capture, about 1/(n+1) of them.
//
// The ring is exact, so every process and language places a key alike (see
// DESIGN.md): with flavour "md5" (the default, 16 virtual nodes) a link's
// first point is MD5 of its UTF-8 bytes, each next point MD5 of the previous
// digest; points sort as unsigned big-endian digests; a key's hash is MD5 of
// its canonical text (resolver.KeyString). Compatibility flavours reproduce
// the rings of the old SDKs: "dotnet-x64" and "dotnet-x86" (the .NET
// Framework DocumentDB SDK, seeded from the legacy String.GetHashCode, 128
// virtual nodes by default as that SDK had) and "murmur3" (the Node.js,
// Python and Java DocumentDB SDKs, MurmurHash3 x86 32-bit, 128 points by
// default). Other generators for the md5-style ring plug in through
// HashGenerator ("xxhash" is built in).
//
// Virtual nodes trade memory and build time for balance: with 16 points per
// collection the largest collection holds well above the mean (see the
// README for measured figures); 160 or more points smooth it. The "bounded"
// strategy, built on github.com/buraksezer/consistent, caps every
// collection's share of the ring's partitions at loadFactor times the mean,
// at the cost of moving a little more data when collections change.
//
// A Resolver is immutable and safe for concurrent use; lookups take no lock.
package hashring
