package jsontext

import "strconv"

// HasLoneSurrogate reports whether the body of a JSON string (as written,
// escapes included) holds a \uXXXX escape of a surrogate that is not half
// of a high-low pair. Decoders replace such an escape with U+FFFD, so two
// different texts would decode to one string. It costs one pass.
func HasLoneSurrogate(body []byte) bool {
	hex4 := func(i int) (rune, bool) {
		if i+6 > len(body) || body[i] != '\\' || body[i+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(body[i+2:i+6]), 16, 32)
		return rune(v), err == nil
	}
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		if i+1 < len(body) && body[i+1] != 'u' {
			i++ // any other escape, \\ included
			continue
		}
		r, ok := hex4(i)
		if !ok {
			continue
		}
		switch {
		case r >= 0xD800 && r < 0xDC00:
			if lo, ok := hex4(i + 6); ok && lo >= 0xDC00 && lo < 0xE000 {
				i += 11
				continue
			}
			return true
		case r >= 0xDC00 && r < 0xE000:
			return true
		}
		i += 5
	}
	return false
}
