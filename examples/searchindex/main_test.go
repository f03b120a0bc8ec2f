package main

import (
	"testing"

	"github.com/docshard/docshard/internal/exampletest"
)

func TestSearchindex(t *testing.T) {
	exampletest.Expect(t, run, "indexed 500 products from 2 collections", "resharded to 3 collections", "the index saw none of them", "index in sync:")
}
