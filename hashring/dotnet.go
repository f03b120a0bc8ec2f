package hashring

import "unicode/utf16"

// The .NET Framework's legacy (non-randomized) String.GetHashCode, which
// the .NET DocumentDB SDK used to seed its ring. Both variants walk the
// string's UTF-16 code units as if it were NUL-terminated, as the original
// unsafe code did (so an embedded U+0000 ends the 64-bit walk early, as it
// did in .NET).

// dotnetHash64 is the 64-bit runtime's String.GetHashCode.
func dotnetHash64(s string) int32 {
	units := append(utf16.Encode([]rune(s)), 0)
	hash1 := int32(5381)
	hash2 := hash1
	for i := 0; ; i += 2 {
		c := int32(units[i])
		if c == 0 {
			break
		}
		hash1 = ((hash1 << 5) + hash1) ^ c
		c = int32(units[i+1])
		if c == 0 {
			break
		}
		hash2 = ((hash2 << 5) + hash2) ^ c
	}
	return hash1 + hash2*1566083941
}

// dotnetHash32 is the 32-bit runtime's String.GetHashCode: it reads the
// code units two at a time as little-endian int32 values.
func dotnetHash32(s string) int32 {
	units := utf16.Encode([]rune(s))
	n := len(units)
	// Room for the terminator and one more unit read by the last pair.
	padded := make([]uint16, n+2)
	copy(padded, units)
	word := func(i int) int32 { return int32(uint32(padded[i]) | uint32(padded[i+1])<<16) }
	hash1 := int32((5381 << 16) + 5381)
	hash2 := hash1
	p := 0
	for left := n; ; {
		if left <= 2 {
			if left > 0 {
				hash1 = ((hash1 << 5) + hash1 + (hash1 >> 27)) ^ word(p)
			}
			break
		}
		hash1 = ((hash1 << 5) + hash1 + (hash1 >> 27)) ^ word(p)
		hash2 = ((hash2 << 5) + hash2 + (hash2 >> 27)) ^ word(p+2)
		p += 4
		left -= 4
	}
	return hash1 + hash2*1566083941
}
