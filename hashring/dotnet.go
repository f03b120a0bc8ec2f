package hashring

import "unicode/utf16"

// The .NET Framework's legacy (non-randomized) String.GetHashCode, which the
// .NET DocumentDB SDK's ring used to seed each collection's points: its
// first point is MD5(BitConverter.GetBytes(link.GetHashCode())), the 4
// little-endian bytes of the int32. The value differs between 64-bit and
// 32-bit processes, so the SDK placed keys differently in each; the
// flavours "dotnet-x64" and "dotnet-x86" reproduce one each.
//
// Both walk the string's UTF-16 code units (a Go string is converted from
// UTF-8; invalid bytes become U+FFFD, as .NET decodes them). The 64-bit code
// stops at the first U+0000, as the original pointer walk over the
// NUL-terminated buffer did; the 32-bit code reads the units two at a time as
// little-endian int32 words and uses the length, reading the terminator as
// the high half of the last word when the length is odd.

// utf16Units returns s as UTF-16 code units followed by two zero units (the
// terminator, and one more so a pairwise reader never runs off the end).
func utf16Units(s string) []uint16 {
	units := make([]uint16, 0, len(s)+2)
	for _, r := range s {
		units = utf16.AppendRune(units, r)
	}
	return append(units, 0, 0)
}

// dotnetHash64 is String.GetHashCode of the 64-bit .NET Framework runtime.
func dotnetHash64(s string) int32 {
	units := utf16Units(s)
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

// dotnetHash32 is String.GetHashCode of the 32-bit .NET Framework runtime.
func dotnetHash32(s string) int32 {
	units := utf16Units(s)
	word := func(i int) int32 { return int32(uint32(units[i]) | uint32(units[i+1])<<16) }
	hash1 := int32((5381 << 16) + 5381)
	hash2 := hash1
	p := 0
	left := len(units) - 2 // the string's length in code units
	for left > 2 {
		hash1 = ((hash1 << 5) + hash1 + (hash1 >> 27)) ^ word(p)
		hash2 = ((hash2 << 5) + hash2 + (hash2 >> 27)) ^ word(p+2)
		p += 4
		left -= 4
	}
	if left > 0 {
		hash1 = ((hash1 << 5) + hash1 + (hash1 >> 27)) ^ word(p)
	}
	return hash1 + hash2*1566083941
}
