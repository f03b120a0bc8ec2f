package rangeresolver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/docshard/docshard/resolver"
)

// rangeSpec is one range in JSON; its bounds are typed by keyType.
type rangeSpec struct {
	Low    json.RawMessage `json:"low"`
	High   json.RawMessage `json:"high"`
	Target resolver.Target `json:"target"`
}

// spec is the JSON form, fields in the order docs/design.md#resolver-json writes them.
type spec struct {
	Kind         string          `json:"kind"`
	PartitionKey resolver.KeyDef `json:"partitionKey,omitzero"`
	KeyType      string          `json:"keyType"`
	Ranges       []rangeSpec     `json:"ranges"`
	Default      resolver.Target `json:"default,omitzero"`
}

// MarshalJSON writes the resolver in its JSON form, ranges in definition
// order: strings as JSON strings, numbers in RFC 8785 form, times in RFC
// 3339 with their offset. resolver.Unmarshal reads it back to a resolver
// with the same settings and placement.
func (r *Resolver) MarshalJSON() ([]byte, error) {
	ranges, err := r.tab.specs()
	if err != nil {
		return nil, err
	}
	s := spec{Kind: Kind, PartitionKey: r.key, KeyType: r.tab.keyType(), Ranges: ranges, Default: r.def}
	return json.Marshal(s)
}

func (t *typed[T]) specs() ([]rangeSpec, error) {
	out := make([]rangeSpec, len(t.defs))
	for i, e := range t.defs {
		lo, err := t.o.encode(e.Range.Low)
		if err != nil {
			return nil, err
		}
		hi, err := t.o.encode(e.Range.High)
		if err != nil {
			return nil, err
		}
		out[i] = rangeSpec{Low: lo, High: hi, Target: e.Target}
	}
	return out, nil
}

func encodeString(s string) ([]byte, error) { return json.Marshal(s) }

func decodeString(raw []byte) (string, string) {
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", "want a JSON string"
	}
	return s, ""
}

func decodeNumber(raw []byte) (float64, string) {
	if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return 0, "want a JSON number"
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if errors.Is(err, strconv.ErrRange) {
		return 0, "beyond the float64 range"
	}
	if err != nil {
		return 0, "want a JSON number"
	}
	return f, ""
}

func decodeTime(raw []byte) (time.Time, string) {
	s, reason := decodeString(raw)
	if reason != "" {
		return time.Time{}, "want an RFC 3339 time string"
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, "not an RFC 3339 time (2006-01-02T15:04:05Z07:00)"
	}
	return t, ""
}

// decode is the DecodeFunc of kind "range".
func decode(data []byte) (resolver.Resolver, error) {
	var s struct {
		Kind         string            `json:"kind"`
		PartitionKey resolver.KeyDef   `json:"partitionKey"`
		KeyType      string            `json:"keyType"`
		Ranges       []json.RawMessage `json:"ranges"`
		Default      json.RawMessage   `json:"default"`
	}
	if err := resolver.DecodeStrict(data, &s); err != nil {
		return nil, err
	}
	key := s.PartitionKey
	var tab table
	var err error
	switch s.KeyType {
	case KeyString:
		tab, err = decodeRanges[string](s.Ranges)
	case KeyNumber:
		tab, err = decodeRanges[float64](s.Ranges)
	case KeyTime:
		tab, err = decodeRanges[time.Time](s.Ranges)
	case "":
		return nil, resolver.Invalid("keyType", nil, `missing: want "string", "number" or "time"`)
	default:
		return nil, resolver.Invalid("keyType", s.KeyType, `want "string", "number" or "time"`)
	}
	if err != nil {
		return nil, err
	}
	def, err := resolver.DecodeTarget("default", s.Default)
	if err != nil {
		return nil, err
	}
	return build(key, tab, def)
}

func decodeRanges[T Bound](raws []json.RawMessage) (table, error) {
	o := opsOf[T]()
	es := make([]Entry[T], len(raws))
	for i, raw := range raws {
		field := fmt.Sprintf("ranges[%d]", i)
		var rs struct {
			Low    json.RawMessage `json:"low"`
			High   json.RawMessage `json:"high"`
			Target json.RawMessage `json:"target"`
		}
		if err := resolver.DecodeStrict(raw, &rs); err != nil {
			return nil, resolver.InField(field, err)
		}
		for _, b := range []struct {
			name string
			raw  json.RawMessage
			dst  *T
		}{{"low", rs.Low, &es[i].Range.Low}, {"high", rs.High, &es[i].Range.High}} {
			raw := bytes.TrimSpace(b.raw)
			if len(raw) == 0 || string(raw) == "null" {
				return nil, resolver.Invalid(field+"."+b.name, nil, "missing")
			}
			v, reason := o.decode(raw)
			if reason != "" {
				var shown any = string(raw)
				if text, r := decodeString(raw); r == "" {
					shown = text // a string is named by its text, not its JSON
				}
				return nil, resolver.Invalid(field+"."+b.name, shown, reason+" for keyType "+o.keyType)
			}
			*b.dst = v
		}
		target, err := resolver.DecodeTarget(field+".target", rs.Target)
		if err != nil {
			return nil, err
		}
		es[i].Target = target
	}
	return newTyped(es)
}

func init() { resolver.Register(Kind, decode) }
