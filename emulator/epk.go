package emulator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/spaolacci/murmur3"

	"github.com/docshard/docshard/partitionkey"
)

// The bounds of the one partition-key range, as effective partition keys.
const (
	epkMin = ""
	epkMax = "FF"
)

// epkRange is a range of effective partition keys, [min, max): what the
// SDKs send as x-ms-start-epk and x-ms-end-epk to read part of a range
// (the Node.js SDK does for a change feed under a prefix of a
// hierarchical key).
type epkRange struct{ min, max string }

// narrowed reports whether r is less than the whole collection.
func (r epkRange) narrowed() bool { return r.min != epkMin || r.max != epkMax }

// contains reports whether an effective partition key is in r.
func (r epkRange) contains(epk string) bool { return epk >= r.min && epk < r.max }

// epkRange reads x-ms-start-epk and x-ms-end-epk (both or neither: the
// whole range): upper-case hexadecimal, the start below the end.
func (c *call) epkRange() (epkRange, *apiError) {
	start, end := c.r.Header["X-Ms-Start-Epk"], c.r.Header["X-Ms-End-Epk"]
	if start == nil && end == nil {
		return epkRange{epkMin, epkMax}, nil
	}
	if len(start) != 1 || len(end) != 1 {
		return epkRange{}, errorf(http.StatusBadRequest, "x-ms-start-epk and x-ms-end-epk go together, once each: got %q and %q", start, end)
	}
	r := epkRange{strings.TrimSpace(start[0]), strings.TrimSpace(end[0])}
	for _, v := range []string{r.min, r.max} {
		if strings.Trim(v, "0123456789ABCDEF") != "" {
			return epkRange{}, errorf(http.StatusBadRequest, "effective partition key %q (x-ms-start-epk, x-ms-end-epk): want upper-case hexadecimal", v)
		}
	}
	if r.min >= r.max {
		return epkRange{}, errorf(http.StatusBadRequest, "x-ms-start-epk %q is not below x-ms-end-epk %q", r.min, r.max)
	}
	return r, nil
}

// effectiveKey returns the effective partition key of a stored document
// under the collection's key paths, as Cosmos DB computes it for a key of
// version 2 (the SDKs' hashV2PartitionKey; a hierarchical key's is its
// values' keys one after another): each value encoded by type, hashed
// with MurmurHash3 x64 128, in upper-case hexadecimal. A missing value is
// the undefined key.
func effectiveKey(paths partitionkey.Paths, doc []byte) (string, error) {
	var b strings.Builder
	for _, p := range paths {
		v, err := p.Lookup(doc)
		if errors.Is(err, partitionkey.ErrNoPartitionKey) {
			writeEPK(&b, []byte{0x00})
			continue
		}
		if err != nil {
			return "", err
		}
		enc, err := encodeEPKValue(v)
		if err != nil {
			return "", err
		}
		writeEPK(&b, enc)
	}
	return b.String(), nil
}

// encodeEPKValue is a key value's bytes as the service hashes them: a type
// prefix, then a number's IEEE 754 bits (little-endian) or a string's
// UTF-8 and 0xFF.
func encodeEPKValue(v partitionkey.RawValue) ([]byte, error) {
	switch v.Kind() {
	case partitionkey.ValueNull:
		return []byte{0x01}, nil
	case partitionkey.ValueBool:
		if t, _ := v.Bool(); t {
			return []byte{0x03}, nil
		}
		return []byte{0x02}, nil
	case partitionkey.ValueNumber:
		f, err := v.Float()
		if err != nil {
			return nil, err
		}
		return binary.LittleEndian.AppendUint64([]byte{0x05}, math.Float64bits(f)), nil
	case partitionkey.ValueString:
		s, err := v.Value()
		if err != nil {
			return nil, err
		}
		str, _ := s.(string)
		if !utf8.ValidString(str) {
			return nil, fmt.Errorf("the key %q is not valid UTF-8", str)
		}
		return append(append([]byte{0x08}, str...), 0xFF), nil
	}
	return nil, fmt.Errorf("a partition-key value of kind %s", v.Kind())
}

// writeEPK writes the effective partition key of one encoded value: its
// MurmurHash3 x64 128 with seed 0 (as the SDKs hash keys of version 2),
// the second half first, big-endian, with the top two bits cleared.
func writeEPK(b *strings.Builder, enc []byte) {
	h1, h2 := murmur3.Sum128(enc)
	fmt.Fprintf(b, "%016X%016X", h2&^(3<<62), h1)
}
