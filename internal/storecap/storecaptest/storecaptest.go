// Package storecaptest is the capability test of a wrapper of store.Store
// whose capabilities file package storecap writes: the retry layer's and
// the request-unit meter's tests run it.
package storecaptest

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/internal/storecap"
	"github.com/docshard/docshard/store"
)

// Wrapper describes a wrapper of store.Store for Check.
type Wrapper struct {
	// Package and Type name the wrapper, as storecap.Generate takes them.
	Package, Type string
	// Capabilities is the path of store/capabilities.go, Generated that
	// of the wrapper's generated file, both from the test's directory.
	Capabilities, Generated string
	// Names is the wrapper's capabilityNames (what it was generated for).
	Names []string
	// Wrap wraps a store.
	Wrap func(store.Store) store.Store
}

// Check is a wrapper's capability test: its generated file is what
// storecap.Generate writes from store/capabilities.go now, and the wrapper offers
// each optional capability exactly when the store it wraps does (full,
// the embedded store, offers them all), through one layer and through
// two. A capability added to package store and not wired here fails it.
func Check(t *testing.T, w Wrapper, full store.Store) {
	names, err := storecap.Names(w.Capabilities)
	require.NoError(t, err)
	require.NotEmpty(t, names)
	want, err := storecap.Generate(w.Package, w.Type, names)
	require.NoError(t, err)
	have, err := os.ReadFile(w.Generated)
	require.NoError(t, err)
	require.Equal(t, string(want), string(have), "%s is out of date: run go generate in package %s", w.Generated, w.Package)
	require.Equal(t, names, w.Names)

	// offers reports which capabilities st offers, by name.
	offers := func(st store.Store) map[string]bool {
		out := map[string]bool{}
		for _, n := range names {
			ok, known := offersCapability(st, n)
			require.True(t, known, "capability %s of store/capabilities.go has no check in package storecaptest: add it to offersCapability and only, and wire it in every wrapper", n)
			out[n] = ok
		}
		return out
	}
	cases := map[string]store.Store{"none": struct{ store.Store }{full}, "the embedded store": full}
	for _, n := range names {
		st := only(full, n)
		require.NotNil(t, st, "no store offering only %s in package storecaptest: add one to only", n)
		cases["only "+n] = st
	}
	for name, st := range cases {
		t.Run(name, func(t *testing.T) {
			wrapped := w.Wrap(st)
			assert.Equal(t, offers(st), offers(wrapped))
			assert.Equal(t, offers(st), offers(w.Wrap(wrapped)), "through two layers too")
		})
	}
	assert.Len(t, names, len(offers(full)))
	for n, ok := range offers(full) {
		assert.True(t, ok, "the embedded store offers %s", n)
	}
}

// offersCapability reports whether st offers the named capability; known
// is false for a name this package does not know.
func offersCapability(st store.Store, name string) (ok, known bool) {
	switch name {
	case "Batcher":
		_, ok = st.(store.Batcher)
	case "ChangeFeeder":
		_, ok = st.(store.ChangeFeeder)
	case "Fencer":
		_, ok = st.(store.Fencer)
	case "Replacer":
		_, ok = st.(store.Replacer)
	case "Patcher":
		_, ok = st.(store.Patcher)
	case "ManyReader":
		_, ok = st.(store.ManyReader)
	default:
		return false, false
	}
	return ok, true
}

// only returns full offering capability name alone; nil for a name this
// package does not know.
func only(full store.Store, name string) store.Store {
	switch name {
	case "Batcher":
		return struct {
			store.Store
			store.Batcher
		}{full, full.(store.Batcher)}
	case "ChangeFeeder":
		return struct {
			store.Store
			store.ChangeFeeder
		}{full, full.(store.ChangeFeeder)}
	case "Fencer":
		return struct {
			store.Store
			store.Fencer
		}{full, full.(store.Fencer)}
	case "Replacer":
		return struct {
			store.Store
			store.Replacer
		}{full, full.(store.Replacer)}
	case "Patcher":
		return struct {
			store.Store
			store.Patcher
		}{full, full.(store.Patcher)}
	case "ManyReader":
		return struct {
			store.Store
			store.ManyReader
		}{full, full.(store.ManyReader)}
	}
	return nil
}
