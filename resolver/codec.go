package resolver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// DecodeFunc builds a resolver of one kind from its whole JSON object (the
// "kind" member included). It must reject unknown fields and out-of-range
// settings with a *ConfigError naming the field (see DecodeStrict, Invalid
// and InField).
type DecodeFunc func(data []byte) (Resolver, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]DecodeFunc{}
)

// Register makes a resolver kind known to Unmarshal. It is meant to be called
// from the init function of the package that implements the kind, and panics
// if kind is empty, decode is nil, or the kind is already registered (a
// programming error, as with database/sql.Register).
func Register(kind string, decode DecodeFunc) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if kind == "" || decode == nil {
		panic("resolver: Register with empty kind or nil decoder")
	}
	if _, dup := registry[kind]; dup {
		panic("resolver: Register called twice for kind " + kind)
	}
	registry[kind] = decode
}

// Kinds returns the registered kinds, sorted.
func Kinds() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]string, 0, len(registry))
	for k := range registry {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Unmarshal decodes a resolver tree from its JSON form. The "kind" member
// selects the decoder among the registered kinds. Malformed JSON, an unknown
// kind, an unknown field or a bad setting yields an error wrapping ErrInvalid
// (a *ConfigError naming the field).
func Unmarshal(data []byte) (Resolver, error) {
	var head struct {
		Kind *string `json:"kind"`
	}
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] != '{' {
		return nil, Invalid("", nil, "a resolver is a JSON object with a \"kind\"")
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, jsonError(err)
	}
	if head.Kind == nil {
		return nil, Invalid("kind", nil, "missing; known kinds: "+strings.Join(Kinds(), ", "))
	}
	registryMu.RLock()
	decode := registry[*head.Kind]
	registryMu.RUnlock()
	if decode == nil {
		return nil, Invalid("kind", *head.Kind, "unknown kind; known kinds: "+strings.Join(Kinds(), ", "))
	}
	r, err := decode(data)
	if err != nil {
		if errors.Is(err, ErrInvalid) {
			return nil, err
		}
		return nil, &ConfigError{Err: err}
	}
	return r, nil
}

// Marshal encodes a resolver tree to its JSON form: compact, "kind" first,
// every setting written out (defaults included), so Unmarshal(Marshal(r))
// places every key as r does. r must implement json.Marshaler, as every
// resolver in this module does.
func Marshal(r Resolver) ([]byte, error) {
	if r == nil {
		return nil, Invalid("", nil, "nil resolver")
	}
	m, ok := r.(json.Marshaler)
	if !ok {
		return nil, Invalid("", fmt.Sprintf("%T", r), "resolver type does not implement json.Marshaler")
	}
	data, err := m.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return nil, fmt.Errorf("resolver: %T produced invalid JSON: %w", r, err)
	}
	return buf.Bytes(), nil
}

// DecodeStrict decodes one JSON object into v (a pointer to a struct),
// rejecting unknown fields and trailing data. Errors are *ConfigError naming
// the field. Decoders registered with Register use it for their own shape.
func DecodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return Invalid("", nil, "trailing data after the JSON object")
	}
	if _, err := dec.Token(); err == nil {
		return Invalid("", nil, "trailing data after the JSON object")
	}
	return nil
}

// jsonError turns an encoding/json error into a *ConfigError naming the field.
func jsonError(err error) error {
	var ce *ConfigError
	if errors.As(err, &ce) {
		return err
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return &ConfigError{Field: typeErr.Field, Reason: fmt.Sprintf("want %s, got JSON %s", typeErr.Type, typeErr.Value)}
	}
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) {
		return &ConfigError{Reason: fmt.Sprintf("malformed JSON at byte %d", syntaxErr.Offset), Err: err}
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return &ConfigError{Field: strings.Trim(rest, `"`), Reason: "unknown field"}
	}
	if errors.Is(err, errUnexpectedEOF) || msg == "unexpected EOF" || msg == "EOF" {
		return &ConfigError{Reason: "malformed JSON: unexpected end of input"}
	}
	return &ConfigError{Reason: "malformed JSON", Err: err}
}

var errUnexpectedEOF = errors.New("unexpected EOF")

// Target is where a key goes: one collection link, or a nested resolver that
// chooses among its own collections. In JSON a target is a string (the link)
// or an object (a resolver of any registered kind).
type Target struct {
	Link     string   // the collection link, when the target is one collection
	Resolver Resolver // the nested resolver, when it is not a single link
}

// LinkTarget returns a target that is one collection.
func LinkTarget(link string) Target { return Target{Link: link} }

// ResolverTarget returns a target that delegates to a nested resolver.
func ResolverTarget(r Resolver) Target { return Target{Resolver: r} }

// IsZero reports whether the target is unset.
func (t Target) IsZero() bool { return t.Link == "" && t.Resolver == nil }

// ResolveForCreate returns the link itself, or the nested resolver's choice.
func (t Target) ResolveForCreate(key any) (string, error) {
	if t.Resolver != nil {
		return t.Resolver.ResolveForCreate(key)
	}
	if t.Link == "" {
		return "", &KeyError{Key: key, Err: ErrNoTarget}
	}
	return t.Link, nil
}

// ResolveForRead returns the link itself, or the nested resolver's links for
// the key (all of them for a nil key).
func (t Target) ResolveForRead(key any) ([]string, error) {
	if t.Resolver != nil {
		return t.Resolver.ResolveForRead(key)
	}
	if t.Link == "" {
		return nil, nil
	}
	return []string{t.Link}, nil
}

// Links returns every link the target can name: the link, or the nested
// resolver's ResolveForRead(nil).
func (t Target) Links() []string {
	links, err := t.ResolveForRead(nil)
	if err != nil {
		return nil
	}
	return links
}

// MarshalJSON writes a link as a JSON string and a resolver in its tagged
// object form.
func (t Target) MarshalJSON() ([]byte, error) {
	if t.Resolver != nil {
		return Marshal(t.Resolver)
	}
	return json.Marshal(t.Link)
}

// UnmarshalJSON reads a link (a JSON string, validated as a collection link)
// or a nested resolver (a JSON object).
func (t *Target) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '{' {
		r, err := Unmarshal(data)
		if err != nil {
			return err
		}
		*t = Target{Resolver: r}
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return Invalid("", string(data), "a target is a collection link (string) or a resolver (object)")
	}
	if err := ValidateLink(s); err != nil {
		return err
	}
	*t = Target{Link: s}
	return nil
}

// DecodeTarget reads an optional target field of a resolver's JSON form:
// absent or null gives the zero Target; a malformed one is a *ConfigError
// under field.
func DecodeTarget(field string, raw json.RawMessage) (Target, error) {
	var t Target
	if len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return t, nil
	}
	if err := t.UnmarshalJSON(raw); err != nil {
		return Target{}, InField(field, err)
	}
	return t, nil
}

// UnionLinks returns the links of all lists, each once, in first-seen order.
func UnionLinks(lists ...[]string) []string {
	var n int
	for _, l := range lists {
		n += len(l)
	}
	out := make([]string, 0, n)
	seen := make(map[string]struct{}, n)
	for _, l := range lists {
		for _, s := range l {
			if _, ok := seen[s]; ok {
				continue
			}
			seen[s] = struct{}{}
			out = append(out, s)
		}
	}
	return out
}

// CheckDistinctLinks reports the first link that appears twice in links, or
// an empty list, as a *ConfigError for field (e.g. "collections[3]").
func CheckDistinctLinks(field string, links []string) error {
	if len(links) == 0 {
		return Invalid(field, nil, "must name at least one collection")
	}
	seen := make(map[string]int, len(links))
	for i, l := range links {
		if err := ValidateLink(l); err != nil {
			return InField(fmt.Sprintf("%s[%d]", field, i), err)
		}
		if j, dup := seen[l]; dup {
			return Invalid(fmt.Sprintf("%s[%d]", field, i), l, fmt.Sprintf("duplicate link (also %s[%d])", field, j))
		}
		seen[l] = i
	}
	return nil
}
