// Package exampletest runs an example program's run function in a test and
// checks its output, so each example's test says only what it expects.
package exampletest

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// Expect calls run with a buffer for its output and fails the test if run
// fails or the output lacks any of want.
func Expect(t *testing.T, run func(context.Context, io.Writer) error, want ...string) {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
}
