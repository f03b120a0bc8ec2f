package rangeresolver

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/docshard/docshard/partitionkey"
	"github.com/docshard/docshard/resolver"
)

// Bound is the type of range bounds and of the keys a resolver compares
// with them: strings (byte-wise order), numbers (float64) or times
// (instants).
type Bound interface {
	string | float64 | time.Time
}

// Range is an inclusive range of keys [Low, High]. It is also a read key:
// ResolveForRead(Range[time.Time]{jan1, jan31}) names every collection that
// may hold a key in it. A Range with Low above High is empty.
type Range[T Bound] struct {
	Low  T
	High T
}

// Contains reports whether Low <= v <= High, in the order of Compare. It
// costs two comparisons.
func (r Range[T]) Contains(v T) bool {
	o := opsOf[T]()
	return o.cmp(r.Low, v) <= 0 && o.cmp(v, r.High) <= 0
}

// Intersects reports whether the two ranges share a value (bounds are
// inclusive, so [1, 5] meets [5, 9]). Empty ranges meet nothing.
func (r Range[T]) Intersects(o Range[T]) bool {
	ops := opsOf[T]()
	return ops.cmp(r.Low, r.High) <= 0 && ops.cmp(o.Low, o.High) <= 0 &&
		ops.cmp(r.Low, o.High) <= 0 && ops.cmp(o.Low, r.High) <= 0
}

// Covers reports whether every value of o lies in r. An empty o is covered
// by any range.
func (r Range[T]) Covers(o Range[T]) bool {
	ops := opsOf[T]()
	return ops.cmp(o.Low, o.High) > 0 || (ops.cmp(r.Low, o.Low) <= 0 && ops.cmp(o.High, r.High) <= 0)
}

// Empty reports whether Low is above High.
func (r Range[T]) Empty() bool { return opsOf[T]().cmp(r.Low, r.High) > 0 }

// String writes the range as [low, high]: strings quoted, numbers in their
// RFC 8785 form, times in RFC 3339 with their offset.
func (r Range[T]) String() string {
	o := opsOf[T]()
	return "[" + o.format(r.Low) + ", " + o.format(r.High) + "]"
}

// Compare orders two keys as range resolvers do: -1 if a < b, 0 if equal,
// +1 if a > b. Strings compare byte by byte, numbers numerically (NaN below
// every number), times as instants.
func Compare[T Bound](a, b T) int { return opsOf[T]().cmp(a, b) }

// ops holds what the resolver needs of one bound type.
type ops[T Bound] struct {
	keyType string
	cmp     func(a, b T) int
	// adjacent reports whether lo is the value just above hi, so the two
	// ranges [.., hi] and [lo, ..] leave no gap.
	adjacent func(hi, lo T) bool
	// key converts a key of any accepted Go type; ok is false for a key of
	// another type, err set for a malformed one.
	key    func(k any) (v T, ok bool, err error)
	format func(v T) string
	// check validates a bound of a definition and puts it in the form its
	// JSON writes (a time in an offset RFC 3339 can write).
	check func(v T) (T, string)
	// encode writes a bound as JSON; decode reads one (reason on error).
	encode func(v T) ([]byte, error)
	decode func(raw []byte) (T, string)
}

var (
	stringOps = ops[string]{
		keyType: KeyString,
		cmp:     strings.Compare,
		adjacent: func(hi, lo string) bool {
			return len(lo) == len(hi)+1 && lo[len(hi)] == 0 && lo[:len(hi)] == hi
		},
		key: func(k any) (string, bool, error) {
			s, ok := k.(string)
			return s, ok, nil
		},
		format: strconv.Quote,
		check: func(v string) (string, string) {
			if !utf8.ValidString(v) {
				return v, "not valid UTF-8 (a JSON string cannot hold it)"
			}
			return v, ""
		},
		encode: encodeString,
		decode: decodeString,
	}
	numberOps = ops[float64]{
		keyType: KeyNumber,
		cmp:     compareFloat,
		adjacent: func(hi, lo float64) bool {
			return lo == math.Nextafter(hi, math.Inf(1))
		},
		key:    numberKey,
		format: formatNumber,
		check: func(v float64) (float64, string) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return v, "NaN and infinities are not bounds (JSON has no form for them)"
			}
			return v + 0, "" // -0 becomes 0, as JSON writes it
		},
		encode: func(v float64) ([]byte, error) { return partitionkey.AppendNumber(nil, v) },
		decode: decodeNumber,
	}
	timeOps = ops[time.Time]{
		keyType: KeyTime,
		cmp:     time.Time.Compare,
		adjacent: func(hi, lo time.Time) bool {
			return lo.Equal(hi.Add(time.Nanosecond))
		},
		key:    timeKey,
		format: func(v time.Time) string { return v.Format(time.RFC3339Nano) },
		check:  checkTime,
		encode: func(v time.Time) ([]byte, error) { return encodeString(v.Format(time.RFC3339Nano)) },
		decode: decodeTime,
	}
)

// opsOf returns the operations of T. The switch is on a nil pointer type,
// so it allocates nothing.
func opsOf[T Bound]() *ops[T] {
	switch any((*T)(nil)).(type) {
	case *string:
		return any(&stringOps).(*ops[T])
	case *float64:
		return any(&numberOps).(*ops[T])
	default:
		return any(&timeOps).(*ops[T])
	}
}

// compareFloat orders numbers, NaN below every number (NaN is never a bound
// or a key; this only keeps the order total).
func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	case math.IsNaN(a) && !math.IsNaN(b):
		return -1
	case !math.IsNaN(a) && math.IsNaN(b):
		return 1
	}
	return 0
}

func formatNumber(v float64) string {
	b, err := partitionkey.AppendNumber(nil, v)
	if err != nil {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return string(b)
}

func numberKey(k any) (float64, bool, error) {
	f, ok, err := partitionkey.Number(k)
	if ok && err == nil && math.IsNaN(f) {
		err = &resolver.KeyError{Key: k, Err: resolver.ErrKeyType, Reason: "NaN is not a key"}
	}
	return f, ok, err
}

func timeKey(k any) (time.Time, bool, error) {
	switch t := k.(type) {
	case time.Time:
		return t, true, nil
	case string:
		p, err := time.Parse(time.RFC3339Nano, t)
		if err != nil {
			return time.Time{}, true, &resolver.KeyError{Key: k, Err: resolver.ErrKeyType, Reason: "not an RFC 3339 time (2006-01-02T15:04:05Z07:00)"}
		}
		return p, true, nil
	}
	return time.Time{}, false, nil
}

// checkTime keeps a time bound in the form RFC 3339 writes back exactly:
// no monotonic reading, a year of four digits, an offset in whole minutes
// within ±23:59 (otherwise the same instant in UTC).
func checkTime(v time.Time) (time.Time, string) {
	v = v.Round(0)
	if y := v.Year(); y < 0 || y > 9999 {
		return v, "year outside 0000-9999: RFC 3339 cannot write it"
	}
	if _, off := v.Zone(); off%60 != 0 || off <= -24*3600 || off >= 24*3600 {
		v = v.UTC()
	}
	if y := v.Year(); y < 0 || y > 9999 {
		return v, "year outside 0000-9999 in UTC: RFC 3339 cannot write it"
	}
	return v, ""
}
