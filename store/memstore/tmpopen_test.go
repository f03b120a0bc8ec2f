package memstore

import (
	"os"
	"testing"
)

func TestTmpOpen(t *testing.T) {
	dir := os.Getenv("OPENDIR")
	if dir == "" {
		t.Skip()
	}
	for i := 0; i < 3; i++ {
		s, err := Open(dir, &Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
}
