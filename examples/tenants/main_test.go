package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestTenants(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bigcorp  -> dbs/saas/colls/bigcorp", "bigcorp total: 60", "4 groups"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
