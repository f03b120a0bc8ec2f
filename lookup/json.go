package lookup

import (
	"bytes"
	"encoding/json"

	"github.com/docshard/docshard/resolver"
)

// spec is the JSON form, fields in the order docs/design.md#resolver-json writes them.
type spec struct {
	Kind         string                     `json:"kind"`
	PartitionKey resolver.KeyDef            `json:"partitionKey,omitzero"`
	Entries      map[string]resolver.Target `json:"entries"`
	Default      resolver.Target            `json:"default,omitzero"`
}

// MarshalJSON writes the resolver in its JSON form, entries sorted by name
// (an empty lookup writes "entries":{}). resolver.Unmarshal reads it back
// to a resolver with the same settings and placement.
func (r *Resolver) MarshalJSON() ([]byte, error) {
	s := spec{Kind: Kind, PartitionKey: r.key, Entries: r.entries, Default: r.def}
	return json.Marshal(s)
}

// decode is the DecodeFunc of kind "lookup".
func decode(data []byte) (resolver.Resolver, error) {
	var s struct {
		Kind         string          `json:"kind"`
		PartitionKey resolver.KeyDef `json:"partitionKey"`
		Entries      json.RawMessage `json:"entries"`
		Default      json.RawMessage `json:"default"`
	}
	if err := resolver.DecodeStrict(data, &s); err != nil {
		return nil, err
	}
	key := s.PartitionKey
	entries, err := decodeEntries(s.Entries)
	if err != nil {
		return nil, err
	}
	def, err := resolver.DecodeTarget("default", s.Default)
	if err != nil {
		return nil, err
	}
	return New(key, entries, def)
}

// decodeEntries reads the "entries" object member by member, so a name
// written twice is an error rather than an entry silently lost. Absent or
// null means no entries.
func decodeEntries(raw json.RawMessage) (map[string]resolver.Target, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, resolver.Invalid("entries", nil, "want a JSON object of value → target")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, resolver.InField("entries", err)
	}
	out := map[string]resolver.Target{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, resolver.InField("entries", err)
		}
		name, _ := tok.(string) // the outer decode checked the syntax
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, resolver.InField(field(name), err)
		}
		if _, dup := out[name]; dup {
			return nil, resolver.Invalid(field(name), nil, "written twice: a value has one entry")
		}
		t, err := resolver.DecodeTarget(field(name), value)
		if err != nil {
			return nil, err
		}
		out[name] = t
	}
	return out, nil
}

func init() { resolver.Register(Kind, decode) }
